"""What both parts of the demo measure and how they print it: errors against complex64, eager times, the paths
jitdtypes took, table lines."""

from __future__ import annotations

import statistics
import time

import torch

from ... import dtypes
from ...routing import path_record

TIMED_CALLS = 5
ERROR_WIDTH = 72  # what is shown of an error message


def relative_error(result: torch.Tensor, reference: torch.Tensor) -> float:
    """max |result - reference| / max |reference|, in double precision."""
    wide = torch.complex128 if reference.is_complex() else torch.float64
    result, reference = result.to(wide), reference.to(wide)
    return ((result - reference).abs().max() / reference.abs().max().clamp_min(1e-12)).item()


def widened(tensors) -> tuple[torch.Tensor, ...]:
    """The same (rounded) values in the 32-bit dtypes jitdtypes computes in: complex64 for complex, float32 for
    real."""
    return tuple(t.to(dtypes.COMPUTE_DTYPE[t.dtype]) for t in tensors)


def synchronize(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def median_seconds(calls, device: str, count: int = TIMED_CALLS, warm_up: bool = True) -> list[float]:
    """Per callable, the median time of `count` eager calls (after one more, unless it was warmed up already);
    the callables take turns, so that a machine busy with other work slows each alike."""
    times = [[] for _ in calls]
    for round_ in range(0 if warm_up else 1, count + 1):
        for call, taken in zip(calls, times):
            synchronize(device)
            start = time.perf_counter()
            call()
            synchronize(device)
            if round_:
                taken.append(time.perf_counter() - start)
    return [statistics.median(taken) for taken in times]


class PathWatch:
    """The paths (native, template, upcast) of the calls jitdtypes routed between its creation and `paths()`."""

    def __init__(self):
        self._before = path_record.calls()

    def paths(self) -> set[str]:
        return {path for key, counts in path_record.calls().items() for path, count in counts.items()
                if count > self._before.get(key, {}).get(path, 0)}


def error_summary(exc: BaseException) -> str:
    """The exception's type and first line; past ERROR_WIDTH, its middle gives way to an ellipsis (the end of
    PyTorch's messages names the dtype)."""
    message = str(exc).strip()
    text = " ".join(f"{type(exc).__name__}: {message.splitlines()[0] if message else ''}".split())
    if len(text) <= ERROR_WIDTH:
        return text
    tail = ERROR_WIDTH // 3
    return f"{text[:ERROR_WIDTH - tail - 3]} … {text[-tail:]}"


def duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def mebibytes(count: int) -> str:
    return f"{count / 2**20:.2f} MiB"


def shape(tensor: torch.Tensor) -> str:
    return "x".join(map(str, tensor.shape))


def line(cells, widths) -> str:
    """Cells left-aligned in columns of `widths`, at least two spaces apart (what tests split on); the last
    cell, which has no width, as it is."""
    padded = [cell.ljust(width) for cell, width in zip(cells, widths)] + list(cells[len(widths):])
    return "  ".join(padded).rstrip()
