"""Latency of 16-bit complex calls.

    python -m benchmarks.latency [--only per-call|first-call] [--rounds N] [--calls N] [--dtypes complex32,bcomplex32]

Per call (small tensors, where Python around the kernel is the whole cost): one call per op family on
8-element tensors (4x4 for the matmul family and linalg.solve), timed three ways in interleaved rounds in one
process: the 16-bit call with jitdtypes, the same call in complex64, and the hand-written upcast
(`z.to(torch.complex64).exp().to(torch.complex32)`); medians, with p20/p80 in the CSV rows. On CPU the
16-bit calls take the upcast path. Targets (2-core CPU): elementwise, reductions, scans and the matmul family
at most 10 us per call and at most 4x complex64; FFT and linalg composites at most 25 us above complex64. With
CUDA, the same calls are timed on the GPU too (per-call time of a loop ended by one synchronize).

First call of a templated op on CPU (Triton interpreter backend): with an empty kernel cache (render + write
+ import + register + run) and in a fresh process with a warm cache (read + verify + import + register +
run), and warm with triton and torch._inductor already imported, as under torch.compile (registering a
triton_op imports torch._inductor, about a second the first time in a process). Each in its own process; the
discovery cache is warmed first so it is not counted.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import tempfile
import time

import torch

from benchmarks.common import device_name, percentiles, write_rows

ELEMENTWISE, REDUCTION, MATMUL, COMPOSITE = "elementwise", "reduction", "matmul", "composite"
TARGETS = {  # kind -> (most us per call, most times complex64, most us above complex64)
    ELEMENTWISE: (10.0, 4.0, None), REDUCTION: (10.0, 4.0, None), MATMUL: (10.0, 4.0, None),
    COMPOSITE: (None, None, 25.0),
}

# (family, label, kind, call, the shapes of its tensor arguments)
VECTOR, MATRIX = (8,), (4, 4)
CASES = [
    ("unary", "z.exp()", ELEMENTWISE, lambda z: z.exp(), (VECTOR,)),
    ("unary", "z.abs()", ELEMENTWISE, lambda z: z.abs(), (VECTOR,)),
    ("binary", "z * w", ELEMENTWISE, lambda z, w: z * w, (VECTOR, VECTOR)),
    ("binary", "z + w", ELEMENTWISE, lambda z, w: z + w, (VECTOR, VECTOR)),
    ("binary, number", "z / 2", ELEMENTWISE, lambda z: z / 2, (VECTOR,)),
    ("binary, number", "z * 0.5j", ELEMENTWISE, lambda z: z * 0.5j, (VECTOR,)),
    ("ternary", "addcmul(z, w, v)", ELEMENTWISE, lambda z, w, v: torch.addcmul(z, w, v), (VECTOR,) * 3),
    ("reductions", "z.sum()", REDUCTION, lambda z: z.sum(), (VECTOR,)),
    ("reductions", "z.mean()", REDUCTION, lambda z: z.mean(), (VECTOR,)),
    ("reductions", "vector_norm(z)", REDUCTION, lambda z: torch.linalg.vector_norm(z), (VECTOR,)),
    ("scans", "cumsum(z, 0)", ELEMENTWISE, lambda z: torch.cumsum(z, 0), (VECTOR,)),
    ("matmul", "m @ m", MATMUL, lambda m: m @ m, (MATRIX,)),
    ("matmul", "addmm(m, m, m)", MATMUL, lambda m: torch.addmm(m, m, m), (MATRIX,)),
    ("matmul", "m @ v", MATMUL, lambda m, v: m @ v, (MATRIX, (4,))),
    ("fft", "fft.fft(z)", COMPOSITE, lambda z: torch.fft.fft(z), (VECTOR,)),
    ("composite", "linalg.solve(m, b)", COMPOSITE, lambda m, b: torch.linalg.solve(m, b), (MATRIX, MATRIX)),
]
VARIANTS = ("jitdtypes", "complex64", "manual")


def _inputs(shapes, dtype: torch.dtype, device: str, seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    wide = [torch.randn(shape, dtype=torch.complex64, generator=g) for shape in shapes]
    if len(shapes) == 2 and shapes == (MATRIX, MATRIX):  # well conditioned for solve
        wide[0] = wide[0] + 4 * torch.eye(4)
    return [t.to(device).to(dtype) for t in wide]


def _calls(op, shapes, dtype: torch.dtype, device: str, seed: int) -> dict:
    """The three zero-argument callables of one case."""
    from jitdtypes.dtypes import FAMILY_OF

    narrow_args = _inputs(shapes, dtype, device, seed)
    wide_args = _inputs(shapes, torch.complex64, device, seed)
    complex_dtype, real_dtype = FAMILY_OF[dtype]
    back = complex_dtype if op(*wide_args).is_complex() else real_dtype
    wide = torch.complex64
    if len(narrow_args) == 1:  # spelled out per arity, as a user would write it
        (a,) = narrow_args
        manual = lambda: op(a.to(wide)).to(back)  # noqa: E731
    elif len(narrow_args) == 2:
        a, b = narrow_args
        manual = lambda: op(a.to(wide), b.to(wide)).to(back)  # noqa: E731
    else:
        a, b, c = narrow_args
        manual = lambda: op(a.to(wide), b.to(wide), c.to(wide)).to(back)  # noqa: E731
    return {"jitdtypes": lambda: op(*narrow_args), "complex64": lambda: op(*wide_args), "manual": manual}


def _per_call_us(fn, calls: int, device: str) -> float:
    for _ in range(10):
        fn()
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    sync()
    return (time.perf_counter() - start) / calls * 1e6


def measure_per_call(dtypes: list[torch.dtype], device: str, rounds: int, calls: int) -> list[dict]:
    """Interleaved rounds: every case and variant once per round, the variant order rotating per round."""
    cases = [(family, label, kind, dtype, _calls(op, shapes, dtype, device, seed))
             for seed, (family, label, kind, op, shapes) in enumerate(CASES) for dtype in dtypes]
    samples = {(i, v): [] for i in range(len(cases)) for v in VARIANTS}
    gc.disable()
    try:
        for round_index in range(rounds):
            order = VARIANTS[round_index % 3:] + VARIANTS[:round_index % 3]
            for i, (*_, fns) in enumerate(cases):
                for variant in order:
                    samples[(i, variant)].append(_per_call_us(fns[variant], calls, device))
    finally:
        gc.enable()
    rows = []
    for i, (family, label, kind, dtype, _) in enumerate(cases):
        stats = {v: percentiles(samples[(i, v)]) for v in VARIANTS}
        ours, wide = stats["jitdtypes"][1], stats["complex64"][1]
        most_us, most_ratio, most_above = TARGETS[kind]
        met = ((most_us is None or ours <= most_us) and (most_ratio is None or ours <= most_ratio * wide)
               and (most_above is None or ours - wide <= most_above))
        row = {"device_type": device, "family": family, "case": label, "dtype": str(dtype).removeprefix("torch."),
               "kind": kind}
        for v in VARIANTS:
            p20, p50, p80 = stats[v]
            row.update({f"{v}_p50_us": round(p50, 2), f"{v}_p20_us": round(p20, 2), f"{v}_p80_us": round(p80, 2)})
        row.update({"ratio_to_complex64": round(ours / wide, 2), "above_complex64_us": round(ours - wide, 2),
                    "ratio_to_manual": round(ours / stats["manual"][1], 2),
                    "target": "met" if met else "missed", "device_name": device_name(device),
                    "triton": _triton_version(), "rounds": rounds, "calls": calls})
        rows.append(row)
    return rows


def _triton_version() -> str:
    try:
        import triton
    except ImportError:
        return "-"
    return triton.__version__


def print_per_call(rows: list[dict]) -> None:
    print(f"{'device':6} {'family':15} {'case':20} {'dtype':10} {'16-bit':>8} {'c64':>7} {'manual':>7} "
          f"{'x c64':>6} {'+c64':>7} {'x man':>6}  target")
    for r in rows:
        print(f"{r['device_type']:6} {r['family']:15} {r['case']:20} {r['dtype']:10} {r['jitdtypes_p50_us']:8.1f} "
              f"{r['complex64_p50_us']:7.1f} {r['manual_p50_us']:7.1f} {r['ratio_to_complex64']:6.1f} "
              f"{r['above_complex64_us']:7.1f} {r['ratio_to_manual']:6.2f}  {r['target']}")


_CHILD = """
import json, time
import torch, jitdtypes
if {preload}:
    import triton, torch._inductor  # what a torch.compile user has loaded already
from jitdtypes.triton_kernels import engine
x = torch.randn(1024, dtype=torch.complex64).to(torch.complex32)
start = time.perf_counter(); torch.exp(x); first = time.perf_counter() - start
start = time.perf_counter(); torch.exp(x); second = time.perf_counter() - start
print(json.dumps({"first_s": first, "second_s": second, **engine.counters}))
"""


def _child(cache: str, preload: bool = False) -> dict:
    env = {**os.environ, "JITDTYPES_CACHE_DIR": cache, "JITDTYPES_CPU_BACKEND": "triton-interpret"}
    code = _CHILD.replace("{preload}", str(preload))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def measure_first_call(repeats: int = 5) -> list[dict]:
    discovery = os.environ.get("JITDTYPES_CACHE_DIR")
    cold, warm, preloaded = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as cache:
            if discovery:  # reuse the discovery results and compiled guard, start with no kernels
                for part in ("discovery", "guard"):
                    os.symlink(os.path.join(discovery, part), os.path.join(cache, part))
            cold.append(_child(cache))
            warm.append(_child(cache))
            preloaded.append(_child(cache, preload=True))
    assert all(r.get("generated") == 1 for r in cold) and all(r.get("generated", 0) == 0 for r in warm)
    rows = []
    for label, runs in (("empty cache", cold), ("warm cache, fresh process", warm),
                        ("warm cache, triton+inductor imported", preloaded)):
        p20, p50, p80 = percentiles([r["first_s"] * 1e3 for r in runs])
        second = percentiles([r["second_s"] * 1e3 for r in runs])[1]
        rows.append({"case": f"torch.exp complex32, {label}", "first_call_p50_ms": round(p50, 1),
                     "first_call_p20_ms": round(p20, 1), "first_call_p80_ms": round(p80, 1),
                     "second_call_p50_ms": round(second, 2),
                     "generated": runs[0].get("generated", 0), "read_from_cache": runs[0].get("read_from_cache", 0)})
    print(f"{'case':58} {'first call':>11} {'second call':>12}  generated  read")
    for r in rows:
        print(f"{r['case']:58} {r['first_call_p50_ms']:8.1f} ms {r['second_call_p50_ms']:9.2f} ms  "
              f"{r['generated']:9}  {r['read_from_cache']:4}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", choices=("per-call", "first-call"))
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--dtypes", default="complex32,bcomplex32")
    options = parser.parse_args()
    if options.only != "first-call":
        import jitdtypes  # noqa: F401  (the 16-bit calls go through it)

        torch.set_num_threads(1)
        dtypes = [getattr(torch, name) for name in options.dtypes.split(",") if hasattr(torch, name)]
        rows = []
        for device in ("cpu", "cuda") if torch.cuda.is_available() else ("cpu",):
            rows += measure_per_call(dtypes, device, options.rounds, options.calls)
        print_per_call(rows)
        print(f"per-call rows: {write_rows('latency_per_call', rows)}")
    if options.only != "per-call":
        rows = measure_first_call()
        print(json.dumps(rows))
        write_rows("latency", rows)


if __name__ == "__main__":
    main()
