"""What jitdtypes costs everyone else: per-call overhead in other dtypes, for both dispatch guards, and import.

    python -m benchmarks.overhead [--rounds N] [--calls N] [--guards compiled,python] [--first-import]

1. Everyday calls (tensor and Python-number arithmetic, in-place ops, reductions with and without dims, the
   matmul family, indexing, cat, where, clone, fill_, comparisons, activations, softmax, layer_norm) on
   8-element float32, float16, bfloat16, int64 and complex64 tensors.
2. Every overridden overload that PyTorch's OpInfo samples reach in float32, called through torch.ops with
   the first arguments a sample gave it.

Each is timed without and with the overrides in interleaved rounds in one process (the order alternates so
drift favours neither state); medians. Tables sorted by added time, per guard, and CSV rows in
benchmarks/results/overhead_*.csv. Targets (2-core CPU): compiled guard, every everyday call at most +0.5 us,
median at most +0.3 us, no overridden overload above +1 us; Python guard, every everyday call at most +2 us;
import adds at most 0.15 s once discovery is cached.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_map

import jitdtypes
from benchmarks.common import percentiles, write_rows

TARGETS = {"compiled": {"worst": 0.5, "median": 0.3, "overload": 1.0}, "python": {"worst": 2.0}}


def everyday_calls() -> list[tuple[str, str, object]]:
    """(label, dtype, zero-argument callable) for calls a model in another dtype makes all the time."""
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(8, generator=g), torch.randn(8, generator=g)
    m, w = torch.randn(4, 2, generator=g), torch.randn(3, 2, generator=g)
    b = torch.randn(2, 2, 2, generator=g)
    acc, buf = torch.zeros(8), torch.ones(8)
    idx, mask = torch.tensor([0, 2, 5]), x > 0
    h, h2 = x.half(), y.half()
    bf, bm = x.bfloat16(), m.bfloat16()
    i, j = torch.arange(8), torch.arange(8).flip(0)
    c, cm = torch.randn(8, dtype=torch.complex64, generator=g), torch.randn(2, 2, dtype=torch.complex64, generator=g)
    pairs = torch.randn(4, 2, generator=g)
    calls = [
        ("x + y", "float32", lambda: x + y), ("x * 2", "float32", lambda: x * 2),
        ("x + 1", "float32", lambda: x + 1), ("1 - x", "float32", lambda: 1 - x),
        ("x / 2", "float32", lambda: x / 2), ("x * 2.5", "float32", lambda: x * 2.5),
        ("x ** 2", "float32", lambda: x ** 2), ("buf.mul_(1.0)", "float32", lambda: buf.mul_(1.0)),
        ("acc.add_(x)", "float32", lambda: acc.add_(x)), ("x.sum()", "float32", lambda: x.sum()),
        ("m.sum(1)", "float32", lambda: m.sum(1)), ("x.mean()", "float32", lambda: x.mean()),
        ("m.mean(0)", "float32", lambda: m.mean(0)), ("x.var()", "float32", lambda: x.var()),
        ("m.var(1)", "float32", lambda: m.var(1)), ("x.norm()", "float32", lambda: x.norm()),
        ("vector_norm(m, dim=1)", "float32", lambda: torch.linalg.vector_norm(m, dim=1)),
        ("x.max()", "float32", lambda: x.max()), ("x.sum() * 0.5", "float32", lambda: x.sum() * 0.5),
        ("m @ m.T", "float32", lambda: m @ m.T), ("bmm", "float32", lambda: torch.bmm(b, b)),
        ("linear", "float32", lambda: F.linear(m, w)), ("x.dot(y)", "float32", lambda: x.dot(y)),
        ("x[idx]", "float32", lambda: x[idx]), ("x[mask]", "float32", lambda: x[mask]),
        ("x[2:5]", "float32", lambda: x[2:5]), ("cat", "float32", lambda: torch.cat([x, y])),
        ("stack", "float32", lambda: torch.stack([x, y])),
        ("where(c, x, y)", "float32", lambda: torch.where(mask, x, y)),
        ("where(c, x, 0.)", "float32", lambda: torch.where(mask, x, 0.0)),
        ("x.clone()", "float32", lambda: x.clone()), ("buf.fill_(0.5)", "float32", lambda: buf.fill_(0.5)),
        ("x == y", "float32", lambda: x == y), ("x < 0.5", "float32", lambda: x < 0.5),
        ("relu", "float32", lambda: torch.relu(x)), ("sigmoid", "float32", lambda: torch.sigmoid(x)),
        ("tanh", "float32", lambda: torch.tanh(x)), ("gelu", "float32", lambda: F.gelu(x)),
        ("exp", "float32", lambda: torch.exp(x)), ("abs", "float32", lambda: x.abs()),
        ("softmax", "float32", lambda: torch.softmax(m, 1)),
        ("layer_norm", "float32", lambda: F.layer_norm(m, (2,))),
        ("cumsum", "float32", lambda: torch.cumsum(x, 0)), ("x.to(float16)", "float32", lambda: x.to(torch.float16)),
        ("view_as_complex", "float32", lambda: torch.view_as_complex(pairs)),
        ("h + h2", "float16", lambda: h + h2), ("h * 2", "float16", lambda: h * 2),
        ("h / 2", "float16", lambda: h / 2), ("h.sum()", "float16", lambda: h.sum()),
        ("h.mean()", "float16", lambda: h.mean()), ("exp", "float16", lambda: torch.exp(h)),
        ("bf * 2", "bfloat16", lambda: bf * 2), ("bf + bf", "bfloat16", lambda: bf + bf),
        ("bf.mean()", "bfloat16", lambda: bf.mean()), ("bm @ bm.T", "bfloat16", lambda: bm @ bm.T),
        ("i + 1", "int64", lambda: i + 1), ("i * j", "int64", lambda: i * j), ("i.sum()", "int64", lambda: i.sum()),
        ("i // 2", "int64", lambda: i // 2), ("i[idx]", "int64", lambda: i[idx]), ("i.float()", "int64", lambda: i.float()),
        ("c * c", "complex64", lambda: c * c), ("c * 2", "complex64", lambda: c * 2),
        ("c.abs()", "complex64", lambda: c.abs()), ("c.sum()", "complex64", lambda: c.sum()),
        ("c.mean()", "complex64", lambda: c.mean()), ("fft", "complex64", lambda: torch.fft.fft(c)),
        ("cm @ cm", "complex64", lambda: cm @ cm), ("c.conj() * c", "complex64", lambda: c.conj() * c),
        ("view_as_real", "complex64", lambda: torch.view_as_real(c)),
    ]
    return calls


class _FirstCalls(TorchDispatchMode):
    """Records the first (OpOverload, args, kwargs) seen for each of the `wanted` overload names."""

    def __init__(self, wanted: set[str]) -> None:
        super().__init__()
        self.wanted, self.calls = wanted, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.name()
        if name.endswith(".default"):
            name = name[: -len(".default")]
        if name in self.wanted and name not in self.calls:
            clone = lambda v: v.clone() if isinstance(v, torch.Tensor) else v  # noqa: E731
            self.calls[name] = (func, tree_map(clone, args), tree_map(clone, kwargs))
        return func(*args, **kwargs)


def overridden_overload_calls() -> list[tuple[str, str, object]]:
    """One call per overridden overload that the float32 OpInfo samples reach (through torch.ops)."""
    from tests import opinfo_samples as db

    wanted = {name for name, _ in jitdtypes.installer.registration().keys}
    recorder = _FirstCalls(wanted)
    for op in db.ops_supporting(torch.float32):
        for sample in db.samples(op, torch.float32, limit=2):
            try:
                with recorder:
                    db.call(op, sample)
            except Exception:  # noqa: BLE001 - a sample that fails fails the same way in both states
                continue
    calls = []
    for name, (func, args, kwargs) in sorted(recorder.calls.items()):
        try:
            func(*args, **kwargs)
        except Exception:  # noqa: BLE001
            continue
        calls.append((name, "float32", lambda func=func, args=args, kwargs=kwargs: func(*args, **kwargs)))
    return calls


def _per_call_us(fn, calls: int) -> float:
    for _ in range(20):
        fn()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - start) / calls * 1e6


def measure(cases, guard: str, rounds: int, calls: int) -> list[dict]:
    """Interleaved rounds over all cases: with `guard`, then without (the order alternates per round)."""
    import gc

    samples = {index: ([], []) for index in range(len(cases))}
    gc.disable()
    try:
        for round_index in range(rounds):
            for enabled in (True, False) if round_index % 2 else (False, True):
                if enabled:
                    jitdtypes.enable(guard)
                else:
                    jitdtypes.disable()
                for index, (_, _, fn) in enumerate(cases):
                    samples[index][0 if enabled else 1].append(_per_call_us(fn, calls))
    finally:
        gc.enable()
        jitdtypes.enable(guard)
    rows = []
    for index, (label, dtype, _) in enumerate(cases):
        with_us, without_us = (percentiles(s) for s in samples[index])
        rows.append({
            "guard": guard, "case": label, "dtype": dtype, "without_p50_us": round(without_us[1], 3),
            "with_p50_us": round(with_us[1], 3), "added_us": round(with_us[1] - without_us[1], 3),
            "with_p20_us": round(with_us[0], 3), "with_p80_us": round(with_us[2], 3),
            "without_p20_us": round(without_us[0], 3), "without_p80_us": round(without_us[2], 3),
        })
    return sorted(rows, key=lambda r: -r["added_us"])


def print_table(title: str, rows: list[dict], limit: int | None = None) -> None:
    print(f"\n{title}")
    print(f"{'call':44} {'dtype':9} {'without':>8} {'with':>8} {'added':>7}")
    for r in rows[:limit] if limit else rows:
        print(f"{r['case'][:44]:44} {r['dtype']:9} {r['without_p50_us']:8.2f} {r['with_p50_us']:8.2f} "
              f"{r['added_us']:+7.2f}")
    added = [r["added_us"] for r in rows]
    print(f"{len(rows)} calls: worst {max(added):+.2f} us, median {statistics.median(added):+.2f} us")


_IMPORT_TIMER = """
import time
start = time.perf_counter(); import torch; torch_s = time.perf_counter() - start
start = time.perf_counter(); import jitdtypes; extra_s = time.perf_counter() - start
print(torch_s, extra_s, jitdtypes.guard())
"""


def import_time(guard: str, repeats: int = 7) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "JITDTYPES_DISABLE"}
    env["JITDTYPES_GUARD"] = guard
    subprocess.run([sys.executable, "-c", "import jitdtypes"], env=env, check=True)  # warm caches
    samples = [subprocess.run([sys.executable, "-c", _IMPORT_TIMER], env=env, capture_output=True, text=True,
                              check=True).stdout.split() for _ in range(repeats)]
    torch_p, jit_p = percentiles([float(s[0]) for s in samples]), percentiles([float(s[1]) for s in samples])
    return {"case": "import jitdtypes after import torch", "guard": samples[0][2], "torch_p50_s": round(torch_p[1], 3),
            "added_p50_s": round(jit_p[1], 3), "added_p80_s": round(jit_p[2], 3)}


def first_import_time() -> dict:
    """`import jitdtypes` on an empty cache: probing plus building the compiled guard."""
    with tempfile.TemporaryDirectory(prefix="jitdtypes-first-import-") as cache:
        env = {k: v for k, v in os.environ.items() if k not in ("JITDTYPES_DISABLE", "JITDTYPES_GUARD")}
        env["JITDTYPES_CACHE_DIR"] = cache
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", "import jitdtypes; print(jitdtypes.guard())"], env=env,
                              capture_output=True, text=True, check=True)
        seconds = time.perf_counter() - start
    notes = [line for line in done.stderr.splitlines() if line.startswith("jitdtypes:")]
    return {"case": "first import, empty cache", "seconds": round(seconds, 1), "guard": done.stdout.strip(),
            "stderr_notes": " | ".join(notes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--guards", default="compiled,python")
    parser.add_argument("--first-import", action="store_true", help="also time an import on an empty cache")
    options = parser.parse_args()
    torch.set_num_threads(1)  # per-call overhead: intra-op threads only add scheduling noise on 8 elements
    everyday = everyday_calls()
    overloads = overridden_overload_calls()
    print(f"{len(everyday)} everyday calls; {len(overloads)} of {len(jitdtypes.installer.registration().keys)} overridden "
          f"(overload, key) pairs reached by float32 OpInfo samples; {options.rounds} interleaved rounds of "
          f"{options.calls} calls, medians (us), one intra-op thread, torch {torch.__version__}")
    summary = []
    for guard in options.guards.split(","):
        everyday_rows = measure(everyday, guard, options.rounds, options.calls)
        overload_rows = measure(overloads, guard, options.rounds, max(200, options.calls // 4))
        print_table(f"everyday calls, {guard} guard (sorted by added time)", everyday_rows)
        print_table(f"overridden overloads reached by OpInfo float32 samples, {guard} guard (20 worst)",
                    overload_rows, limit=20)
        added, per_overload = [r["added_us"] for r in everyday_rows], [r["added_us"] for r in overload_rows]
        summary.append({"guard": guard, "everyday_worst_us": max(added), "everyday_median_us": statistics.median(added),
                        "overload_worst_us": max(per_overload), "overload_median_us": statistics.median(per_overload),
                        "overloads_over_1us": sum(a > 1 for a in per_overload), "targets": TARGETS.get(guard)})
        write_rows("overhead_everyday", everyday_rows)
        write_rows("overhead_overloads", overload_rows)
    print("\nsummary")
    for s in summary:
        print(f"{s['guard']:9} everyday worst {s['everyday_worst_us']:+.2f} us, median {s['everyday_median_us']:+.2f} us;"
              f" overloads worst {s['overload_worst_us']:+.2f} us, median {s['overload_median_us']:+.2f} us, "
              f"{s['overloads_over_1us']} above +1 us; targets {s['targets']}")
    imports = [import_time(guard) for guard in options.guards.split(",")]
    for imp in imports:
        print(f"import jitdtypes ({imp['guard']} guard) adds {imp['added_p50_s']:.3f} s to import torch "
              f"({imp['torch_p50_s']:.3f} s); p80 {imp['added_p80_s']:.3f} s")
    if options.first_import:
        first = first_import_time()
        imports.append(first)
        print(f"first import on an empty cache: {first['seconds']} s ({first['guard']} guard); "
              f"notes: {first['stderr_notes']}")
    print(f"\nrows appended to {write_rows('overhead_import', imports)} and benchmarks/results/overhead_*.csv")


if __name__ == "__main__":
    main()
