"""The demo's table of ops: per op and 16-bit complex dtype, what plain PyTorch does, the path jitdtypes takes,
the error against complex64 and the eager time against complex64's."""

from __future__ import annotations

import math
import operator
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

import jitdtypes

from ... import dtypes
from .measure import (TIMED_CALLS, PathWatch, duration, error_summary, line, median_seconds, relative_error, shape,
                      synchronize, widened)


@dataclass(frozen=True)
class Case:
    """One call a user of these dtypes makes. `inputs(dtype, n, device)` gives its 16-bit arguments, rounded from
    random complex64/float32 values, for tensors of side `n` (`default_size` when the demo is given none)."""
    label: str
    inputs: Callable
    call: Callable
    default_size: int


def _square(n):
    return (n, n)


def _signals(n):
    # 3n is never a power of two: sizes that half-precision FFT libraries refuse
    return (max(n // 8, 1), 3 * n)


def _complex(shape_of):
    return lambda dtype, n, device: torch.randn(*shape_of(n), dtype=torch.complex64, device=device).to(dtype)


def _real(shape_of):
    return lambda dtype, n, device: torch.randn(*shape_of(n), device=device).to(dtypes.REAL_OF[dtype])


def _denominator(dtype, n, device):
    # magnitudes in [0.5, 1.5], so that quotients stay well inside float16's range
    magnitude = 0.5 + torch.rand(*_square(n), device=device)
    return torch.polar(magnitude, 2 * math.pi * torch.rand(*_square(n), device=device)).to(dtype)


def _arguments(*makers):
    return lambda dtype, n, device: tuple(make(dtype, n, device) for make in makers)


CASES = (
    Case("torch.exp(z)", _arguments(_complex(_square)), torch.exp, 512),
    Case("z * w", _arguments(_complex(_square), _complex(_square)), operator.mul, 512),
    Case("z / w", _arguments(_complex(_square), _denominator), operator.truediv, 512),
    Case("z @ w", _arguments(_complex(_square), _complex(_square)), operator.matmul, 256),
    Case("torch.cumsum(z, 1)", _arguments(_complex(_square)), lambda z: torch.cumsum(z, 1), 512),
    Case("z.mean()", _arguments(_complex(_square)), torch.Tensor.mean, 512),
    Case("z.var()", _arguments(_complex(_square)), torch.Tensor.var, 512),
    Case("z.abs()", _arguments(_complex(_square)), torch.Tensor.abs, 512),
    Case("torch.fft.fft(z)", _arguments(_complex(_signals)), torch.fft.fft, 512),
    Case("torch.fft.rfft(x)", _arguments(_real(_signals)), torch.fft.rfft, 512),
    Case("torch.view_as_complex(x)", _arguments(_real(lambda n: (n, n, 2))), torch.view_as_complex, 512),
)

COLUMNS = ("op", "dtype", "shape", "jitdtypes path", "max error", "first call", "time", "vs complex64",
           "plain PyTorch")
WIDTHS = (24, 10, 9, 14, 9, 10, 9, 12)
LEGEND = (
    "Ops, eager. z, w: complex inputs in the dtype; x: a real one in its parts' dtype (float16 / bfloat16).\n"
    "  plain PyTorch: the same call with jitdtypes disabled. jitdtypes path: the path its calls took (native: "
    "PyTorch's\n  kernel; upcast: computed in complex64/float32, rounded once; template: a generated Triton kernel; "
    "entry point: a view).\n"
    "  max error: max|result - complex64| / max|complex64|, complex64 computing from the same rounded inputs.\n"
    f"  time: median of {TIMED_CALLS} calls after a warm-up, taking turns with complex64's; first call: the "
    "first one alone.")


def _plain_pytorch(call, inputs) -> str:
    try:
        call(*inputs)
    except Exception as exc:  # noqa: BLE001 - what plain PyTorch says is the point
        return error_summary(exc)
    return "works"


def _cells(case, inputs, plain, device) -> tuple[list[str], float]:
    """The row's cells after op, dtype and shape, and the error."""
    watch = PathWatch()
    start = time.perf_counter()
    result = case.call(*inputs)
    synchronize(device)
    first = time.perf_counter() - start
    wide = widened(inputs)
    seconds, wide_seconds = median_seconds([lambda: case.call(*inputs), lambda: case.call(*wide)], device)
    # nothing routed, yet it works where plain PyTorch fails: one of jitdtypes' entry points served it
    path = "+".join(sorted(watch.paths())) or ("native" if plain == "works" else "entry point")
    error = relative_error(result, case.call(*wide))
    return [path, f"{error:.1e}", duration(first), duration(seconds), f"{seconds / wide_seconds:.2f}x", plain], error


def report(device: str, size: int | None) -> int:
    """Prints the table; returns how many calls failed with jitdtypes (raised, or gave a non-finite error)."""
    torch.manual_seed(0)
    planned = [(case, dtype, case.inputs(dtype, size or case.default_size, device))
               for case in CASES for dtype in dtypes.COMPLEX_TARGETS]
    # off and on once for all of them: enabling installs every override again
    with jitdtypes.disabled(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's "support is experimental", which jitdtypes hides
        plain = [_plain_pytorch(case.call, inputs) for case, _, inputs in planned]
    print(LEGEND)
    print(line(COLUMNS, WIDTHS))
    failures = 0
    for (case, dtype, inputs), plain_says in zip(planned, plain):
        try:
            cells, error = _cells(case, inputs, plain_says, device)
        except Exception as exc:  # noqa: BLE001 - reported in its row; the other rows still run
            cells, error = ["FAILED", "-", "-", "-", "-", error_summary(exc)], math.nan
        failures += not math.isfinite(error)
        print(line([case.label, dtypes.NAMES[dtype], shape(inputs[0])] + cells, WIDTHS))
    return failures
