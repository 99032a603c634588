"""docs/OPS.md: the path each ATen overload takes per 16-bit dtype and device, written from discovery results.

`python -m jitdtypes.reports.ops_doc > docs/OPS.md` renders this machine's discovery (probing first when nothing is
cached) as a fresh process would route calls before any was made, and which overloads have a template kernel
(kernels_templates' ATEN tables). Without a GPU there is no CUDA discovery and so no CUDA columns: what CUDA's
PyTorch lacks is only known by probing it. tests/test_ops_report.py compares the committed file with this
module's output on the torch build the file names.
"""

from __future__ import annotations

import importlib
import os
import sys

import torch

from .._version import __version__
from .. import discovery, dtypes, schema
from ..triton_kernels import engine
from ..interop import complex_views
from ..routing import path_record
from ..findings import PARTIAL
from ..routing import registrar

CRASHED, COMPOSITE, NO_VERDICT = "crashed", "composite", "-"
CELLS = (path_record.NATIVE, COMPOSITE, PARTIAL, path_record.UPCAST, path_record.TEMPLATE, CRASHED)

# (group, heading); an overload falls in the group `group_of` picks, by the first rule that takes it
GROUPS = (
    ("elementwise", "Elementwise"),
    ("reductions", "Reductions"),
    ("scans", "Scans"),
    ("matmul", "Matrix products"),
    ("fft", "FFT"),
    ("linalg", "Linear algebra"),
    ("foreach", "Foreach (lists of tensors)"),
    ("random", "Random sampling and dropout"),
    ("view_copy", "Copies of views"),
    ("other", "Other"),
)
TEMPLATE_GROUP = {"unary": "elementwise", "binary": "elementwise", "ternary": "elementwise",
                  "reductions": "reductions", "scans": "scans", "matmul": "matmul", "fft": "fft"}
# names that neither an ATen tag nor a prefix places: LAPACK-style solvers and factorizations, and products
# without a template
LINALG_NAMES = frozenset({"_cholesky_solve_helper", "cholesky", "cholesky_inverse", "cholesky_solve", "geqrf",
                          "logdet", "lu_unpack", "matrix_exp_backward", "ormqr", "triangular_solve"})
PRODUCT_NAMES = frozenset({"_trilinear", "addr", "ger", "inner", "kron", "outer"})


def template_families() -> dict[str, str]:
    """overload -> the template family whose kernel serves it where templates run (CUDA)."""
    return {name: family for family in engine.FAMILIES
            for name in importlib.import_module(f"kernels_templates.{family}").ATEN}


def group_of(overload: str, templates: dict[str, str]) -> str:
    if overload in templates:
        return TEMPLATE_GROUP[templates[overload]]
    tags = {tag.name for tag in schema.overload(overload).op.tags}  # by name: torch 2.9 has no `reduction`
    base = schema.split_name(overload)[0].removeprefix("aten::")
    if "pointwise" in tags:
        return "elementwise"
    if "reduction" in tags:
        return "reductions"
    if base.startswith("cum") or "logcumsumexp" in base:
        return "scans"
    if base in PRODUCT_NAMES:
        return "matmul"
    if base.startswith(("fft_", "_fft_")):
        return "fft"
    if base.startswith(("linalg_", "_linalg_")) or base in LINALG_NAMES:
        return "linalg"
    if base.startswith("_foreach_"):
        return "foreach"
    if "nondeterministic_seeded" in tags:
        return "random"
    if "view_copy" in tags:
        return "view_copy"
    return "other"


def _probed_together() -> list[list[str]]:
    """Dtype names a probe always tries together: a complex64 reference is repeated in every 16-bit complex
    dtype, a real one that gives complex output in float16 and bfloat16 (probe.probe)."""
    return [[dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS], [dtypes.NAMES[d] for d in dtypes.REAL_TARGETS]]


def cells(found: discovery.Discovery) -> dict[tuple[str, str], str]:
    """(overload, dtype name) -> its cell on this device: the rows `jitdtypes ops` lists, with the paths planned
    before any call (jitdtypes.stats() reports the paths calls took), plus `composite` ones."""
    table = {}
    for dtype, names in found.supported.items():
        table.update(((name, dtype), path_record.NATIVE) for name in names)
    for finding in found.findings:  # after `supported`: what is overridden is routed
        for dtype, support in finding.status.items():
            table[finding.overload, dtype] = (
                PARTIAL if support == PARTIAL
                else registrar.planned_path(finding.overload, found.device_type, support))
    for name in found.crashed:
        table.update(((name, dtypes.NAMES[d]), CRASHED) for d in dtypes.COMPLEX_TARGETS)
    # A dtype without a verdict beside one probed with it failed in plain PyTorch and passed when probed again
    # with the other overrides installed: a composite op that works through them, which discovery drops.
    for name in {name for name, _ in table}:
        for together in _probed_together():
            if any((name, dtype) in table for dtype in together):
                table.update(((name, dtype), COMPOSITE) for dtype in together if (name, dtype) not in table)
    return table


def _dtype_order(names) -> list[str]:
    order = [dtype for together in _probed_together() for dtype in together]
    return sorted(names, key=order.index)


def _table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def _build() -> str:
    git = (torch.version.git_version or "unknown")[:10]
    return f"torch `{torch.__version__}` (git `{git}`, " + (
        f"CUDA {torch.version.cuda} build)" if torch.version.cuda else "no CUDA in the build)")


def render(found_by_device: dict[str, discovery.Discovery]) -> str:
    """The markdown of docs/OPS.md for these devices' discovery results."""
    devices = sorted(found_by_device)
    templates = template_families()
    by_device = {d: cells(found_by_device[d]) for d in devices}
    columns = [(d, dtype) for d in devices for dtype in _dtype_order({dtype for _, dtype in by_device[d]})]
    probed = ", ".join(f"{found_by_device[d].stats.get('probed')} ATen overloads probed on {d}" for d in devices)
    out = [
        "# Ops per dtype and device",
        "",
        "<!-- Generated by `python -m jitdtypes.reports.ops_doc > docs/OPS.md`; do not edit by hand. -->",
        "",
        f"Generated on {_build()}, jitdtypes {__version__}, CPU backend `{engine.cpu_backend()}`, from discovery "
        f"on {', '.join(devices)} ({probed}). tests/test_ops_report.py fails when this file differs from the "
        "generator's output on that torch build: after a change to torch, discovery or the templates, regenerate "
        "it with the command above. `jitdtypes ops` lists the same rows (but the `composite` ones) for the machine "
        "it runs on, with the calls its process made.",
        "",
        "Each row is one ATen overload, each column one dtype on one device: the 16-bit complex dtypes, and "
        "float16/bfloat16 input for the overloads that turn real input into complex output (FFTs of real input, "
        "`complex`, `polar`, ...). Other dtypes, complex64 included, always keep PyTorch's own kernels.",
        "",
        "## Summary",
        "",
    ]
    summary = []
    for device, dtype in columns:
        counts = [sum(cell == kind for (_, d), cell in by_device[device].items() if d == dtype) for kind in CELLS]
        summary.append([device, dtype, *counts, sum(counts)])
    out += _table(["device", "dtype", *CELLS, "rows"], summary)
    per_family = {family: sum(f == family for f in templates.values()) for family in engine.FAMILIES}
    out += [
        "",
        f"Template kernels exist for {len(templates)} overloads ("
        + ", ".join(f"{family} {n}" for family, n in per_family.items()) + "): the `template` column names the "
        "family, empty where there is none.",
        "",
        "## What a cell says",
        "",
        "- `native`: PyTorch has the kernel; jitdtypes leaves the call alone.",
        "- `composite`: plain PyTorch fails, but only inside other overloads: its composite kernel works through "
        "their overrides (discovery probed it again with them installed) and it needs none of its own.",
        "- `partial`: PyTorch's kernel works for some of the probed arguments only. It is tried first; a call it "
        "rejects with a dtype error takes the template or upcast path.",
        "- `upcast`: PyTorch lacks it; the call computes in complex64/float32 and rounds the results once.",
        "- `template`: PyTorch lacks it; the call runs a Triton kernel rendered from the overload's template and "
        "cached. A call the template does not cover (mixed dtypes, shapes or sizes it declines) takes the upcast "
        "path, and so does one that reaches an override at an Autograd key: overloads without a kernel of their "
        "own on the device (composite-implicit ones) are overridden there too, and take their template only in "
        "inference mode.",
        "- `crashed`: probing it crashed, hung or broke the device, so its support is unknown and it keeps "
        "PyTorch's kernel.",
        f"- `{NO_VERDICT}`: discovery recorded no verdict. Either no complex64 (or real-input) call of the "
        "overload could be made to work to compare against, or it is `composite` in every dtype (`aten::sum` "
        "works through `aten::sum.dim_IntList`), which discovery cannot tell apart.",
        "",
        "On CPU, calls PyTorch lacks take the upcast path by default; with `JITDTYPES_CPU_BACKEND=triton-interpret` "
        "(a validation mode) those with a template run it in Triton's interpreter instead.",
        "",
        "## CUDA",
        "",
    ]
    if "cuda" in devices:
        out.append("The `cuda` columns come from CUDA discovery on the machine that generated this file.")
    else:
        out.append(
            "No CUDA discovery went into this file: it was generated without a GPU, and what CUDA's PyTorch lacks "
            "is only known by probing a GPU. Running the generator on a GPU machine adds `cuda` columns. What is "
            "known without one: a CUDA call of an overload that CUDA discovery finds missing runs the template "
            "kernel the `template` column names, and takes the upcast path where that column is empty or the "
            "template declines the call; overloads that CUDA's PyTorch serves keep its kernel.")
    out += ["", "## Guarded beyond discovery", "",
            "Not in the tables (nor in `jitdtypes ops`): overloads jitdtypes guards on every device although probing "
            "finds PyTorch's kernel working or does not probe them, for "
            + " and ".join(dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS) + ":", ""]
    for name, support, compiled_only in registrar.GUARDED_BEYOND_PROBING:
        cell = PARTIAL if support == PARTIAL else path_record.UPCAST
        out.append(f"- `{name}`: `{cell}`" + (" (under the compiled guard only)" if compiled_only else ""))
    handled_by_entry_point = {name: handled for name, _, _, handled in complex_views.entries(devices)}
    for name, handled in handled_by_entry_point.items():
        out.append(f"- `{name}` of {', '.join(dtypes.NAMES[d] for d in handled)} input: served by jitdtypes "
                   "itself (PyTorch refuses it)")
    grouped = {group: [] for group, _ in GROUPS}
    for name in sorted({name for table in by_device.values() for name, _ in table} | set(templates)):
        grouped[group_of(name, templates)].append(name)
    for group, heading in GROUPS:
        names = grouped[group]
        if not names:
            continue
        shown = [(device, dtype) for device, dtype in columns if any((n, dtype) in by_device[device] for n in names)]
        header = ["overload", *(f"{device} {dtype}" if len(devices) > 1 else dtype for device, dtype in shown),
                  "template"]
        rows = [[f"`{name}`", *(by_device[device].get((name, dtype), NO_VERDICT) for device, dtype in shown),
                 templates.get(name, "")] for name in names]
        out += ["", f"## {heading} ({len(names)} overloads)", "", *_table(header, rows)]
    return "\n".join(out) + "\n"


def main() -> int:
    from .. import installer

    found = discovery.load_or_discover_all(installer.device_types())
    skipped = [device for device, result in found.items() if result.stats.get("skipped")]
    if skipped:
        print(f"jitdtypes.reports.ops_doc: no discovery results for {', '.join(skipped)} "
              f"({discovery.ENV}={os.environ.get(discovery.ENV)}): run `jitdtypes warm` first", file=sys.stderr)
        return 1
    sys.stdout.write(render(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
