"""torch.compile on complex64 and complex128 with jitdtypes' opt-in (jitdtypes.set_compile_complex) against
eager, torch.compile without it, and the same math written by hand on real parts and compiled.

Programs: a chain of elementwise ops (product with a conjugate, sigmoid, exp of -abs, division, tanh) with and
without its reductions (sum, mean) over 512x2048 elements, as the issue measured it; LLaMA's rotary embedding
(view_as_complex, a product with torch.polar frequencies, view_as_real) against the same rotation in real
arithmetic; a training step (two complex matmuls, an abs gate, an FFT, a real loss, forward and backward over
1024x512); and the compile time of a 50-op elementwise graph. Ways are timed in interleaved rounds (fastest and
median call); ratios are of fastest calls in the same run. The error column is the largest difference from
the same program in complex128 (from complex256-less numpy, complex128 is the reference for complex64 only).

    python -m benchmarks.compile_wide [--rounds 7] [--calls 3] [--dtypes complex64,complex128]
                                                            # CSV in benchmarks/results/compile_wide.csv
"""

from __future__ import annotations

import argparse
import statistics
import time
import types
import warnings

import torch

import jitdtypes
from benchmarks.common import write_rows

CHAIN_SIZE, STEP_SIZE = (512, 2048), (1024, 512)
WAYS = ("eager", "torch.compile", "compiled jitdtypes", "by hand on parts")


# -- the programs ---------------------------------------------------------------------------------------------


def elementwise_chain(x, y):
    z = x * y.conj()
    z = torch.sigmoid(z) * torch.exp(-z.abs())
    return torch.tanh(z / (y + 2))


def reduction_chain(x, y):
    return elementwise_chain(x, y).sum(-1).mean()


def _by_hand_elementwise(x, y):
    """The chain on real parts with textbook formulas (exp-based tanh, no special cases); the split counted."""
    xr, xi, yr, yi = x.real, x.imag, y.real, y.imag
    zr, zi = xr * yr + xi * yi, xi * yr - xr * yi
    e = torch.exp(-zr)
    er, ei = 1 + e * torch.cos(zi), -e * torch.sin(zi)  # 1 + e^-z
    size = er * er + ei * ei
    damp = torch.exp(-torch.sqrt(zr * zr + zi * zi))
    zr, zi = er / size * damp, -ei / size * damp
    dr = yr + 2
    size = dr * dr + yi * yi
    zr, zi = (zr * dr + zi * yi) / size, (zi * dr - zr * yi) / size
    up, down = torch.exp(2 * zr), torch.exp(-2 * zr)
    den = 0.5 * (up + down) + torch.cos(2 * zi)
    return 0.5 * (up - down) / den, torch.sin(2 * zi) / den


def by_hand_elementwise(x, y):
    return torch.complex(*_by_hand_elementwise(x, y))


def by_hand_reduction(x, y):
    re, im = _by_hand_elementwise(x, y)
    return torch.complex(re.sum(-1).mean(), im.sum(-1).mean())


def rotary(x, freqs):
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs).flatten(-2)


def rotary_by_hand(x, freqs):
    pairs = x.reshape(*x.shape[:-1], -1, 2)
    a, b = pairs[..., 0], pairs[..., 1]
    c, s = freqs.real, freqs.imag
    return torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2)


def training_step(x, w1, w2, target):
    hidden = x @ w1
    gate = hidden * torch.sigmoid(hidden.abs())
    spectrum = torch.fft.fft(gate @ w2, dim=-1)
    loss = (spectrum.abs() - target).pow(2).mean()
    loss.backward()
    return loss


def fifty_ops(x, y):
    z = x
    for step in range(10):  # 5 ops per step
        z = torch.tanh(z * y + 0.1 * step) / (z.abs() + 1)
    return z


# -- the ways ------------------------------------------------------------------------------------------------


def _compiled(fn, opted_in: bool, dtype, *args):
    """fn compiled, and called once, under the opt-in as asked. A copy of its code object, so that each way has
    its own entry in Dynamo's cache: the opt-in applies to what compiles after a change, and the ways compiled
    earlier keep their code while this one compiles."""
    jitdtypes.set_compile_complex(*([dtype] if opted_in else []))
    own = types.FunctionType(fn.__code__.replace(), fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    compiled = torch.compile(own)
    compiled(*args)
    return lambda: compiled(*args)


def _chain_builds(program, by_hand, dtype):
    torch.manual_seed(0)
    x, y = (torch.randn(*CHAIN_SIZE, dtype=dtype) for _ in range(2))
    builds = {
        "eager": lambda: (lambda: program(x, y)),
        "torch.compile": lambda: _compiled(program, False, dtype, x, y),
        "compiled jitdtypes": lambda: _compiled(program, True, dtype, x, y),
        "by hand on parts": lambda: _compiled(by_hand, False, dtype, x, y),
    }
    reference = program(x.to(torch.complex128), y.to(torch.complex128)) if dtype == torch.complex64 else None
    return builds, reference


def _rotary_builds(dtype):
    real = torch.float32 if dtype == torch.complex64 else torch.float64
    torch.manual_seed(0)
    x = torch.randn(8, 2048, 128, dtype=real)
    angles = torch.outer(torch.arange(2048, dtype=real), torch.rand(64, dtype=real))
    freqs = torch.polar(torch.ones_like(angles), angles)
    return {
        "eager": lambda: (lambda: rotary(x, freqs)),
        "torch.compile": lambda: _compiled(rotary, False, dtype, x, freqs),
        "compiled jitdtypes": lambda: _compiled(rotary, True, dtype, x, freqs),
        "by hand on parts": lambda: _compiled(rotary_by_hand, False, dtype, x, freqs),
    }, None


def _step_builds(dtype):
    torch.manual_seed(0)
    x = torch.randn(*STEP_SIZE, dtype=dtype)
    w1 = (torch.randn(STEP_SIZE[1], STEP_SIZE[1], dtype=dtype) / STEP_SIZE[1] ** 0.5).requires_grad_()
    w2 = (torch.randn(STEP_SIZE[1], STEP_SIZE[1], dtype=dtype) / STEP_SIZE[1] ** 0.5).requires_grad_()
    target = torch.rand(*STEP_SIZE, dtype=x.real.dtype)
    return {
        "eager": lambda: (lambda: training_step(x, w1, w2, target)),
        "torch.compile": lambda: _compiled(training_step, False, dtype, x, w1, w2, target),
        "compiled jitdtypes": lambda: _compiled(training_step, True, dtype, x, w1, w2, target),
    }, None


PROGRAMS = {
    "elementwise chain": lambda dtype: _chain_builds(elementwise_chain, by_hand_elementwise, dtype),
    "chain with reductions": lambda dtype: _chain_builds(reduction_chain, by_hand_reduction, dtype),
    "rotary embedding": _rotary_builds,
    "training step (matmul and fft)": _step_builds,
}


# -- timing -------------------------------------------------------------------------------------------------------


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(program: str, dtype, rounds: int, calls: int) -> list[dict]:
    builds, reference = PROGRAMS[program](dtype)
    runs, rows = {}, []
    torch._dynamo.reset()
    for way, build in builds.items():
        start = time.perf_counter()
        fn = build()  # compiles
        row = {"program": program, "dtype": str(dtype).removeprefix("torch."), "way": way,
               "first_call_s": round(time.perf_counter() - start, 2)}
        result = fn()
        if reference is not None:
            row["error_vs_complex128"] = float((result.to(torch.complex128) - reference).abs().max())
        runs[way] = (fn, [])
        rows.append(row)
    for _ in range(rounds):
        for fn, samples in runs.values():
            samples.extend(_timed(fn) for _ in range(calls))
    for row in rows:
        samples = runs[row["way"]][1]
        row["min_ms"] = round(min(samples) * 1e3, 3)
        row["median_ms"] = round(statistics.median(samples) * 1e3, 3)
    jitdtypes.set_compile_complex()
    return rows


def compile_time_rows(dtype) -> list[dict]:
    """First call of a 50-op elementwise graph, Inductor's caches off, without and with the opt-in."""
    import torch._inductor.config

    torch.manual_seed(0)
    x, y = (torch.randn(64, 64, dtype=dtype) for _ in range(2))
    rows = []
    with torch._inductor.config.patch(force_disable_caches=True):
        # the process's first compilation loads and builds what every later one reuses: paid before timing
        torch._dynamo.reset()
        torch.compile(lambda t: t * 2 + 1)(torch.ones(4))
        for way, opted_in in (("torch.compile", False), ("compiled jitdtypes", True)):
            torch._dynamo.reset()
            seconds = _timed(lambda: _compiled(fifty_ops, opted_in, dtype, x, y))
            rows.append({"program": "compile time, 50 ops", "dtype": str(dtype).removeprefix("torch."), "way": way,
                         "first_call_s": round(seconds, 2)})
    jitdtypes.set_compile_complex()
    return rows


def _print(rows: list[dict]) -> None:
    print("fastest and median call in ms; first call in s; ratios of fastest calls in this run")
    for program, dtype in dict.fromkeys((r["program"], r["dtype"]) for r in rows):
        found = {r["way"]: r for r in rows if (r["program"], r["dtype"]) == (program, dtype)}
        print(f"\n{program}, {dtype}")
        for way, row in found.items():
            timing = f"{row['min_ms']:9.3f} {row['median_ms']:9.3f}" if "min_ms" in row else " " * 19
            error = f"  error {row['error_vs_complex128']:.1e}" if "error_vs_complex128" in row else ""
            print(f"  {way:20} {timing} {row['first_call_s']:6.1f}s{error}")
        ours = found.get("compiled jitdtypes", {})
        ratios = [f"{found[w]['min_ms'] / ours['min_ms']:.2f}x vs {w}" for w in WAYS
                  if "min_ms" in ours and w != "compiled jitdtypes" and "min_ms" in found.get(w, {})]
        if ratios:
            print("  compiled jitdtypes: " + ", ".join(ratios) + " (above 1: faster)")
        if "min_ms" not in ours and len(found) == 2:
            base, opted = found["torch.compile"]["first_call_s"], found["compiled jitdtypes"]["first_call_s"]
            print(f"  compile time with the opt-in: {opted / base:.2f}x torch.compile's")


def main() -> None:
    warnings.filterwarnings("ignore")
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--dtypes", default="complex64,complex128")
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="comma-separated program names")
    args = parser.parse_args()
    assert jitdtypes.is_enabled(), "the benchmark measures jitdtypes: unset JITDTYPES_DISABLE"
    rows = []
    for name in args.dtypes.split(","):
        dtype = getattr(torch, name)
        for program in args.programs.split(","):
            rows += measure(program, dtype, args.rounds, args.calls)
        rows += compile_time_rows(dtype)
    _print(rows)
    print("\nrows appended to", write_rows("compile_wide", rows))


if __name__ == "__main__":
    main()
