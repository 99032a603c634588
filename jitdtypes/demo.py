"""`jitdtypes demo`: on the default device, ops that plain PyTorch rejects, working, with their path and time."""

from __future__ import annotations

import time

import torch

import jitdtypes

from . import dtypes


def _cases(device: str, size: int):
    def complex_input(dtype):
        return torch.randn(size, size, dtype=torch.complex64, device=device).to(dtype)

    def real_input(dtype):
        return torch.randn(8, 1000, device=device).to(dtypes.REAL_OF[dtype])

    return [
        ("torch.exp(z)", complex_input, torch.exp),
        ("z / 3", complex_input, lambda z: z / 3),
        ("z @ z.mH", complex_input, lambda z: z @ z.mH),
        ("torch.cumsum(z, 1)", complex_input, lambda z: torch.cumsum(z, 1)),
        ("z.mean()", complex_input, lambda z: z.mean()),
        ("z.var()", complex_input, lambda z: z.var()),
        ("torch.fft.fft(z)", complex_input, torch.fft.fft),
        ("torch.fft.rfft(x) n=1000", real_input, torch.fft.rfft),
        ("view_as_complex(bf16)", lambda d: torch.randn(256, 2, device=device).to(torch.bfloat16),
         torch.view_as_complex),
    ]


def _paths(before, after) -> str:
    seen = {}
    for key, row in after.items():
        grown = row["calls"] - before.get(key, {}).get("calls", 0)
        if grown > 0:
            for path, count in row["calls_by_path"].items():
                if count - before.get(key, {}).get("calls_by_path", {}).get(path, 0) > 0:
                    seen[path] = seen.get(path, 0) + 1
    return "+".join(sorted(seen)) or "native"


def run(device: str | None = None, size: int | None = None) -> int:
    """device: default cuda when available; size: the side of the square complex inputs (default 256)."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    size = size or 256
    print(f"jitdtypes {jitdtypes.__version__} demo on {device} (torch {torch.__version__})")
    print(f"{'call':28} {'dtype':11} {'plain PyTorch':24} {'jitdtypes':10} {'first call':>11} {'then':>10}")
    failures = 0
    for name in sorted(n for n, d in dtypes.BY_NAME.items() if d.is_complex):
        dtype = dtypes.BY_NAME[name]
        for label, make, fn in _cases(device, size):
            if label.startswith("view_as_complex") and name != "bcomplex32":
                continue
            x = make(dtype)
            with jitdtypes.disabled():
                try:
                    fn(x)
                    plain = "works"
                except Exception as exc:  # noqa: BLE001 - what plain PyTorch says is the point
                    plain = f"{type(exc).__name__}"
            before = {(r["op"], r["dtype"], r["device"]): r for r in jitdtypes.stats()}
            try:
                start = time.perf_counter()
                result = fn(x)
                first = time.perf_counter() - start
                start = time.perf_counter()
                for _ in range(10):
                    fn(x)
                if device == "cuda":
                    torch.cuda.synchronize()
                steady = (time.perf_counter() - start) / 10
            except Exception as exc:  # noqa: BLE001
                failures += 1
                print(f"{label:28} {name:11} {plain:24} FAILED {type(exc).__name__}: {exc}")
                continue
            after = {(r["op"], r["dtype"], r["device"]): r for r in jitdtypes.stats()}
            path = _paths(before, after) if not label.startswith("view_as_complex") else "entry point"
            print(f"{label:28} {str(result.dtype).removeprefix('torch.'):11} {plain:24} {path:10} "
                  f"{first * 1e3:8.1f} ms {steady * 1e3:7.2f} ms")
    return 1 if failures else 0
