"""Which path each (op, dtype, device) took: native kernel, generated template kernel, or the upcast path."""

from __future__ import annotations

import threading
from collections import Counter

NATIVE, TEMPLATE, UPCAST = "native", "template", "upcast"

_calls: Counter = Counter()
_lock = threading.Lock()


def record(op: str, dtype: str, device: str, path: str) -> None:
    with _lock:
        _calls[(op, dtype, device, path)] += 1


def calls() -> dict[tuple[str, str, str], dict[str, int]]:
    """(op, dtype, device) -> {path: number of calls} for everything routed in this process."""
    with _lock:
        items = list(_calls.items())
    by_op: dict[tuple[str, str, str], dict[str, int]] = {}
    for (op, dtype, device, path), count in items:
        by_op.setdefault((op, dtype, device), {})[path] = count
    return by_op


def reset() -> None:
    with _lock:
        _calls.clear()
