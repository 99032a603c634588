"""Which path each (op, dtype, device) took: native kernel, generated template kernel, or the upcast path.

A routed call counts itself with one increment of a counter cell it was handed when its path was
specialized (`counter`); `calls()` sums the cells. Increments are not locked: they are diagnostics, and two
threads routing the same (op, dtype, path) in the same instant may lose one.
"""

from __future__ import annotations

import threading

NATIVE, TEMPLATE, UPCAST = "native", "template", "upcast"

_cells: dict[tuple[str, str, str, str], list[int]] = {}
_lock = threading.Lock()


def counter(op: str, dtype: str, device: str, path: str) -> list[int]:
    """The cell counting calls of (op, dtype, device) that took `path`: `cell[0] += 1` per call."""
    key = (op, dtype, device, path)
    cell = _cells.get(key)
    if cell is None:
        with _lock:
            cell = _cells.setdefault(key, [0])
    return cell


def calls() -> dict[tuple[str, str, str], dict[str, int]]:
    """(op, dtype, device) -> {path: number of calls} for everything routed in this process."""
    with _lock:
        items = [(key, cell[0]) for key, cell in _cells.items()]
    by_op: dict[tuple[str, str, str], dict[str, int]] = {}
    for (op, dtype, device, path), count in items:
        if count:
            by_op.setdefault((op, dtype, device), {})[path] = count
    return by_op


def reset() -> None:
    # cells stay (specialized calls hold them); their counts restart
    with _lock:
        for cell in _cells.values():
            cell[0] = 0
