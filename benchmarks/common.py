"""Shared by the benchmarks: timing medians/percentiles and CSV rows (Liger-Kernel style)."""

from __future__ import annotations

import csv
import gc
import platform
import statistics
import time
from pathlib import Path

import torch

import jitdtypes

RESULTS = Path(__file__).parent / "results"


def device_name(device: str = "cpu") -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return platform.processor() or platform.machine()


def percentiles(samples: list[float]) -> tuple[float, float, float]:
    """(p20, p50, p80)."""
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return pick(0.2), statistics.median(ordered), pick(0.8)


def per_call_us(fn, calls: int = 20000) -> float:
    """Mean microseconds per call over one tight loop of `calls` calls (after a short warm-up, no GC)."""
    for _ in range(100):
        fn()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        return (time.perf_counter() - start) / calls * 1e6
    finally:
        gc.enable()


def write_rows(name: str, rows: list[dict]) -> Path:
    """Append rows to benchmarks/results/<name>.csv with machine and version columns (benchmarks.charts reads
    them). A row's own columns stay as they are: a `device` column names the device the row ran on."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.csv"
    extra = {"machine": device_name(), "torch": torch.__version__, "jitdtypes": jitdtypes.__version__}
    rows = [{**row, **extra} for row in rows]
    fields = list(dict.fromkeys(key for row in rows for key in row))
    header: list[str] = []
    if path.exists():
        with path.open(newline="") as f:
            header = next(csv.reader(f), [])
    if header and not set(fields) <= set(header):
        # a run with columns the file lacks: rewrite it under one header, or its new cells would sit under
        # other columns' names
        with path.open(newline="") as f:
            rows = [*csv.DictReader(f), *rows]
        header = list(dict.fromkeys([*header, *fields]))
        mode = "w"
    else:
        mode = "a" if header else "w"
    with path.open(mode, newline="") as f:
        writer = csv.DictWriter(f, fieldnames=header or fields, restval="")
        if mode == "w":
            writer.writeheader()
        writer.writerows(rows)
    return path
