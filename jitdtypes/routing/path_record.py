"""Which path each (op, dtype, device) took: native kernel, generated template kernel, or the upcast path.

A routed call counts itself with one increment of a counter cell it was handed when its path was
specialized (`counter`); calls the compiled guard upcasts in C++ count themselves in a cell of C memory
(`native_counter`); `calls()` sums both. Python's increments are not locked: they are diagnostics, and two
threads routing the same (op, dtype, path) in the same instant may lose one.
"""

from __future__ import annotations

import ctypes
import threading

NATIVE, TEMPLATE, UPCAST = "native", "template", "upcast"
GENERATED = "generated"  # a generated CPU kernel (cpu_kernels) is installed or cached: it serves the calls it fits

_cells: dict[tuple[str, str, str, str], list[int]] = {}
# kept for the life of the process: a guard may write to its cell until its library is freed
_native_cells: dict[tuple[str, str, str, str], ctypes.c_uint64] = {}
_lock = threading.Lock()


def counter(op: str, dtype: str, device: str, path: str) -> list[int]:
    """The cell counting calls of (op, dtype, device) that took `path`: `cell[0] += 1` per call."""
    key = (op, dtype, device, path)
    cell = _cells.get(key)
    if cell is None:
        with _lock:
            cell = _cells.setdefault(key, [0])
    return cell


def native_counter(op: str, dtype: str, device: str, path: str) -> ctypes.c_uint64:
    """The cell in which the compiled guard counts calls of (op, dtype, device) that took `path` in C++."""
    key = (op, dtype, device, path)
    with _lock:
        return _native_cells.setdefault(key, ctypes.c_uint64(0))


def calls() -> dict[tuple[str, str, str], dict[str, int]]:
    """(op, dtype, device) -> {path: number of calls} for everything routed in this process."""
    with _lock:
        items = [(key, cell[0]) for key, cell in _cells.items()]
        items += [(key, cell.value) for key, cell in _native_cells.items()]
    by_op: dict[tuple[str, str, str], dict[str, int]] = {}
    for (op, dtype, device, path), count in items:
        if count:
            paths = by_op.setdefault((op, dtype, device), {})
            paths[path] = paths.get(path, 0) + count
    return by_op


def reset() -> None:
    # cells stay (specialized calls and compiled guards hold them); their counts restart
    with _lock:
        for cell in _cells.values():
            cell[0] = 0
        for native in _native_cells.values():
            native.value = 0
