"""docs/OPS.md and its generator (jitdtypes/ops_doc.py): the committed file is the generator's output on the
torch build it names, and what it says holds."""

import re
from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes import discovery, schema
from jitdtypes.reports import ops_doc
from jitdtypes.discovery import probe
from jitdtypes.findings import MISSING, PARTIAL, SUPPORTED, Finding

OPS_MD = Path(__file__).resolve().parent.parent / "docs" / "OPS.md"
GENERATED_ON = re.compile(r"^Generated on torch `([^`]+)` .*CPU backend `([^`]+)`, from discovery on ([a-z, ]+) \(",
                          re.MULTILINE)


@pytest.fixture
def default_cpu_backend():
    """The file describes the default CPU backend; a test elsewhere may have left the session on another."""
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend(jitdtypes.triton_kernels.engine.UPCAST)
    yield
    jitdtypes.set_cpu_backend(previous)


@pytest.fixture(scope="module")
def cpu_report():
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend(jitdtypes.triton_kernels.engine.UPCAST)
    try:
        yield ops_doc.render({"cpu": discovery.load_or_discover("cpu")})
    finally:
        jitdtypes.set_cpu_backend(previous)


def _sections(text: str) -> dict[str, list[dict[str, str]]]:
    """heading -> the rows of the table under it, as {column: cell}."""
    sections, heading, header = {}, None, None
    for line in text.splitlines():
        if line.startswith("## "):
            heading, header = line[3:], None
            sections[heading] = []
        elif line.startswith("| ") and heading is not None:
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
            elif set(cells) != {"---"}:
                sections[heading].append(dict(zip(header, cells)))
    return sections


def _op_rows(text: str) -> dict[str, dict[str, str]]:
    """overload -> its row, from every group's table."""
    rows = {}
    for heading, table in _sections(text).items():
        if heading.endswith(" overloads)"):
            for row in table:
                name = row["overload"].strip("`")
                assert name not in rows, f"{name} listed twice"
                rows[name] = row
    return rows


def test_committed_file_is_the_generators_output(default_cpu_backend):
    committed = OPS_MD.read_text()
    recorded = GENERATED_ON.search(committed)
    assert recorded, "docs/OPS.md lost its 'Generated on torch ...' line"
    version, backend, devices = recorded.group(1), recorded.group(2), recorded.group(3).split(", ")
    if version != torch.__version__:
        pytest.skip(f"docs/OPS.md was generated on torch {version}; this is torch {torch.__version__}")
    if not set(devices) <= set(jitdtypes.installer.device_types()):
        pytest.skip(f"docs/OPS.md holds discovery on {', '.join(devices)}; this machine has "
                    f"{', '.join(jitdtypes.installer.device_types())}")
    assert backend == jitdtypes.triton_kernels.engine.UPCAST
    current = ops_doc.render({d: discovery.load_or_discover(d) for d in devices})
    assert committed == current, "docs/OPS.md is stale: python -m jitdtypes.reports.ops_doc > docs/OPS.md"


def test_exp_in_complex32_on_cpu_takes_the_upcast_path_and_has_a_template(cpu_report):
    exp = _op_rows(cpu_report)["aten::exp"]
    assert exp["complex32"] == "upcast"
    assert exp["template"] == "unary"


def test_only_16_bit_dtypes_have_columns(cpu_report):
    names = {jitdtypes.dtypes.NAMES[d] for d in jitdtypes.dtypes.COMPLEX_TARGETS + jitdtypes.dtypes.REAL_TARGETS}
    summary = _sections(cpu_report)["Summary"]
    assert {row["dtype"] for row in summary} <= names
    assert "complex32" in {row["dtype"] for row in summary}
    columns = {column for row in _op_rows(cpu_report).values() for column in row}
    assert columns - {"overload", "template"} <= names
    assert "complex64" not in columns


def test_summary_counts_are_the_rows(cpu_report):
    rows = _op_rows(cpu_report)
    summary = _sections(cpu_report)["Summary"]
    assert summary
    for line in summary:
        dtype = line["dtype"]
        for kind in ops_doc.CELLS:
            assert int(line[kind]) == sum(row.get(dtype) == kind for row in rows.values()), (dtype, kind)
        assert int(line["rows"]) == sum(row.get(dtype, ops_doc.NO_VERDICT) != ops_doc.NO_VERDICT
                                        for row in rows.values())


def test_rows_are_what_discovery_found_and_every_template_overload(default_cpu_backend):
    found = discovery.load_or_discover("cpu")
    cells = ops_doc.cells(found)
    for finding in found.findings:
        for dtype, support in finding.status.items():
            assert cells[finding.overload, dtype] == ("partial" if support == PARTIAL else "upcast")
    for dtype, names in found.supported.items():
        overridden = {f.overload for f in found.findings if dtype in f.status}
        assert all(cells[name, dtype] == "native" for name in names if name not in overridden)
    report = _op_rows(ops_doc.render({"cpu": found}))
    assert set(ops_doc.template_families()) <= set(report)
    assert {name for name, _ in cells} <= set(report)


def test_composite_cells_fail_in_plain_pytorch_and_work_with_jitdtypes(default_cpu_backend):
    """What `composite` infers from the record, checked by probing: each such overload passes in those dtypes
    with the overrides installed, and fails without them."""
    composite = {}
    for (name, dtype), cell in ops_doc.cells(discovery.load_or_discover("cpu")).items():
        if cell == ops_doc.COMPOSITE:
            composite.setdefault(name, []).append(dtype)
    if not composite:
        pytest.skip("no overload of this torch build works only through other overloads' overrides")

    def supported(name, dtypes):
        outcome = probe.probe(schema.overload(name))
        return outcome is not None and all(outcome.status.get(d) == SUPPORTED for d in dtypes)

    assert [name for name, wanted in composite.items() if not supported(name, wanted)] == []
    with jitdtypes.disabled():
        assert [name for name, wanted in composite.items() if supported(name, wanted)] == []


def test_cuda_columns_come_only_from_cuda_discovery(default_cpu_backend):
    complex32 = "complex32"
    cpu = discovery.Discovery("cpu", [Finding("aten::exp", "backend", {complex32: MISSING}, {})], {})
    cuda = discovery.Discovery("cuda", [
        Finding("aten::exp", "backend", {complex32: MISSING}, {}),
        Finding("aten::linalg_inv_ex", "backend", {complex32: MISSING}, {}),
        Finding("aten::cumsum", "backend", {complex32: PARTIAL}, {}),
    ], {complex32: ["aten::sin"]}, crashed={"aten::cos": "killed after 60 s"})
    both = ops_doc.render({"cpu": cpu, "cuda": cuda})
    rows = _op_rows(both)
    assert rows["aten::exp"]["cpu complex32"] == "upcast"
    assert rows["aten::exp"]["cuda complex32"] == "template"
    assert rows["aten::linalg_inv_ex"]["cuda complex32"] == "upcast"
    assert rows["aten::cumsum"]["cuda complex32"] == "partial"
    assert rows["aten::sin"]["cuda complex32"] == "native"
    assert rows["aten::cos"]["cuda complex32"] == "crashed"
    assert rows["aten::sin"]["cpu complex32"] == ops_doc.NO_VERDICT
    assert "The `cuda` columns come from CUDA discovery" in both

    cpu_only = ops_doc.render({"cpu": cpu})
    assert "No CUDA discovery went into this file" in cpu_only
    assert not any(column.startswith("cuda") for row in _op_rows(cpu_only).values() for column in row)
