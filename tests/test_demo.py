"""`jitdtypes demo`, read back from its output: every op and dtype has a path and an error within tolerance,
plain PyTorch's column says what PyTorch lacks, and the Fourier neural operator needs less memory in 16 bits."""

import contextlib
import io
import re

import pytest
import torch

import jitdtypes
from jitdtypes.cli import demo
from jitdtypes.cli.demo.main import MIN_SIZE
from jitdtypes import dtypes
from jitdtypes.cli.demo import fno, measure, ops
from tests.conftest import TARGETS, TOLERANCE

SIZE = 16
PATHS = {"native", "upcast", "template", "entry point"}


def _run(**arguments) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = demo.run(**arguments)
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def demo_output() -> str:
    status, out, _ = _run(device="cpu", size=SIZE)
    assert status == 0, out
    return out


def _table(text: str, first_title: str) -> list[dict[str, str]]:
    """The rows under the header line that starts with `first_title`, by column title, up to a blank line."""
    lines = text.splitlines()
    start = next(i for i, row in enumerate(lines) if row.startswith(first_title + "  "))
    titles = re.split(r"\s{2,}", lines[start])
    rows = []
    for row in lines[start + 1:]:
        if not row.strip():
            break
        cells = re.split(r"\s{2,}", row)
        assert len(cells) == len(titles), row
        rows.append(dict(zip(titles, cells)))
    return rows


def _mebibytes(cell: str) -> float:
    number, unit = cell.split()
    assert unit == "MiB"
    return float(number)


@pytest.fixture(scope="module")
def op_rows(demo_output):
    return {(row["op"], row["dtype"]): row for row in _table(demo_output, "op")}


@pytest.fixture(scope="module")
def memory_rows(demo_output):
    return {row["dtype"]: row for row in _table(demo_output, "dtype")}


def test_every_op_and_dtype_has_a_row_with_its_shape(op_rows):
    assert set(op_rows) == {(case.label, dtypes.NAMES[d]) for case in ops.CASES for d in TARGETS}
    assert op_rows["torch.exp(z)", "complex32"]["shape"] == f"{SIZE}x{SIZE}"
    assert op_rows["torch.fft.fft(z)", "complex32"]["shape"] == f"{SIZE // 8}x{3 * SIZE}"
    assert op_rows["torch.view_as_complex(x)", "complex32"]["shape"] == f"{SIZE}x{SIZE}x2"


@pytest.mark.parametrize("dtype", TARGETS, ids=[dtypes.NAMES[d] for d in TARGETS])
def test_every_row_has_a_path_and_its_error_is_within_tolerance(op_rows, dtype):
    for (_, name), row in op_rows.items():
        if name == dtypes.NAMES[dtype]:
            assert set(row["jitdtypes path"].split("+")) <= PATHS, row
            assert 0 <= float(row["max error"]) <= TOLERANCE[dtype], row
            assert row["time"].endswith(("µs", "ms", " s")) and float(row["vs complex64"].rstrip("x")) > 0, row


def test_plain_pytorch_shows_what_it_lacks(op_rows):
    exp = op_rows["torch.exp(z)", "complex32"]
    assert exp["plain PyTorch"] == """NotImplementedError: "exp_vml_cpu" not implemented for 'ComplexHalf'"""
    assert exp["jitdtypes path"] == "upcast"
    multiply = op_rows["z * w", "complex32"]  # PyTorch has this one on CPU
    assert (multiply["plain PyTorch"], multiply["jitdtypes path"]) == ("works", "native")
    for row in op_rows.values():
        if row["plain PyTorch"] != "works":
            assert row["jitdtypes path"] != "native", row
    if dtypes.BCOMPLEX32:
        view = op_rows["torch.view_as_complex(x)", "bcomplex32"]
        assert view["plain PyTorch"].startswith("RuntimeError: view_as_complex is only")
        assert view["plain PyTorch"].endswith("scalar type: BFloat16") and " … " in view["plain PyTorch"]
        assert len(view["plain PyTorch"]) == measure.ERROR_WIDTH
        assert view["jitdtypes path"] == "entry point"


def test_plain_pytorch_column_is_what_plain_pytorch_does(op_rows):
    for case in ops.CASES:
        for dtype in TARGETS:
            inputs = case.inputs(dtype, SIZE, "cpu")
            with jitdtypes.disabled():
                try:
                    case.call(*inputs)
                    said = "works"
                except Exception as exc:  # noqa: BLE001 - compared with the table
                    said = f"{type(exc).__name__}: "
            assert op_rows[case.label, dtypes.NAMES[dtype]]["plain PyTorch"].startswith(said)


def test_the_fourier_neural_operator_needs_less_memory_in_16_bits(memory_rows, demo_output):
    assert f"{SIZE}x{SIZE} grid" in demo_output
    assert set(memory_rows) == {"complex64"} | {dtypes.NAMES[d] for d in TARGETS}
    wide = memory_rows["complex64"]
    assert _mebibytes(wide["of it 32-bit"]) == _mebibytes(wide["saved for backward"])
    for dtype in TARGETS:
        row = memory_rows[dtypes.NAMES[dtype]]
        peak = _mebibytes(row["peak memory"]) / _mebibytes(wide["peak memory"])
        saved = _mebibytes(row["saved for backward"]) / _mebibytes(wide["saved for backward"])
        assert float(row["peak vs complex64"]) == pytest.approx(peak, abs=0.01)
        assert float(row["saved vs complex64"]) == pytest.approx(saved, abs=0.01)
        # on CPU the upcast path's 32-bit temporaries inside an op, and the float32 input autograd keeps for
        # rfft2's backward, keep both above one half
        assert 0.5 <= saved <= 0.75, row
        assert 0.5 <= peak <= 0.85, row
        assert float(row["loss error"]) <= TOLERANCE[dtype], row
        assert float(row["gradient error"]) <= TOLERANCE[dtype], row
        assert row["jitdtypes path"] == "upcast"


def test_peak_memory_counts_the_temporaries_inside_an_op():
    z = torch.randn(1 << 16, dtype=torch.complex64)
    low = z.to(torch.complex32)
    _, wide_peak = fno._cpu_peak(lambda: torch.exp(z))
    assert wide_peak == z.nbytes  # the result
    torch.exp(low)  # specializes its path
    _, low_peak = fno._cpu_peak(lambda: torch.exp(low))
    # the upcast path: the input widened to complex64, complex64's result, and the result rounded to complex32
    assert low_peak == 2 * z.nbytes + low.nbytes


def test_saved_tensors_count_each_storage_once_and_their_32_bit_part():
    x = torch.randn(1000, requires_grad=True)
    half = x.detach().half().requires_grad_()

    def step():
        y = x.exp()  # saves its result
        return (y * y).sum() + (half * half).sum()  # y twice, one storage; half twice

    _, saved, saved_32bit = fno._saved_tensors(step)
    assert (saved, saved_32bit) == (x.nbytes + half.nbytes, x.nbytes)


def test_cuda_asked_without_cuda_exits_2_with_a_message(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    status, out, err = _run(device="cuda", size=SIZE)
    assert (status, out) == (2, "")
    assert "no CUDA device is available" in err and "run it on cpu" in err


@pytest.mark.parametrize("arguments, message", [
    ({"device": "tpu"}, "device 'tpu': choose cpu or cuda"),
    ({"device": "cpu", "size": MIN_SIZE - 1}, f"size {MIN_SIZE - 1}: at least {MIN_SIZE}"),
])
def test_what_cannot_be_had_exits_2(arguments, message):
    status, out, err = _run(**arguments)
    assert (status, out) == (2, "") and message in err


def test_disabled_jitdtypes_exits_2():
    with jitdtypes.disabled():
        status, out, err = _run(device="cpu", size=SIZE)
    assert (status, out) == (2, "") and "jitdtypes is disabled" in err
