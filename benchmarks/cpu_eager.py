"""16-bit complex eager calls on CPU against complex64 (issue 23's benchmark; so far the calls of its first table).

    python -m benchmarks.cpu_eager [--rounds N] [--sizes 4194304,...] [--dtypes complex32,bcomplex32]
                                   [--conversions aten,auto]

Each call is timed in interleaved rounds in one process: in complex64, and in each 16-bit dtype with jitdtypes
under each conversion between 16-bit complex and complex64 (native_guard.set_conversion: "aten", ATen's own
scalar copy; "auto", the vectorized one where the CPU allows it); medians, with p20/p80 in the CSV rows, and a
table of 16-bit time against complex64's (above 1: slower). Needs the compiled guard (the conversion lives
there).
"""

from __future__ import annotations

import argparse
import time

import torch

import jitdtypes
from benchmarks.common import percentiles, write_rows
from jitdtypes import dtypes, native_guard

MATMUL_SIDE, FFT_ROWS = 512, 64


def calls(x: torch.Tensor, m: torch.Tensor, wide: torch.dtype):
    """(name, call): the table's calls on a flat tensor `x` and a square `m` of one dtype; complex64's
    conversions are copies of as many elements."""
    low = x.dtype
    yield "x.to(complex64)", (lambda: x.to(wide)) if low != wide else x.clone
    yield "complex64 -> x.dtype", (lambda w=x.to(wide): w.to(low)) if low != wide else x.clone
    yield "x.sum()", lambda: x.sum()
    yield "x.abs()", lambda: x.abs()
    yield "x.exp()", lambda: x.exp()
    yield f"m @ m {MATMUL_SIDE}^2", lambda: m @ m
    yield f"fft {FFT_ROWS}xN", (lambda f=x.reshape(FFT_ROWS, -1): torch.fft.fft(f))


def median_ms(samples: list[float]) -> float:
    return percentiles(samples)[1] * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", default=str(1 << 22))
    parser.add_argument("--dtypes", default="complex32,bcomplex32")
    parser.add_argument("--conversions", default="aten,auto")
    options = parser.parse_args()
    jitdtypes.enable("compiled")
    best = native_guard.conversion()
    conversions = {name: best if name == "auto" else name for name in options.conversions.split(",")}
    targets = [dtypes.BY_NAME[name] for name in options.dtypes.split(",")]
    rows = []
    for size in (int(s) for s in options.sizes.split(",")):
        wide_x = torch.randn(size, dtype=torch.complex64)
        wide_m = torch.randn(MATMUL_SIDE, MATMUL_SIDE, dtype=torch.complex64)
        variants = {("complex64", "-"): (best, dict(calls(wide_x, wide_m, torch.complex64)))}
        for target in targets:
            for label, mode in conversions.items():
                variants[dtypes.NAMES[target], label] = (mode, dict(calls(wide_x.to(target), wide_m.to(target),
                                                                            torch.complex64)))
        samples: dict = {key: {} for key in variants}
        for _ in range(options.rounds):
            for key, (mode, table) in variants.items():
                native_guard.set_conversion(mode)
                for name, call in table.items():
                    call()  # a first call per registration goes to the Python router
                    start = time.perf_counter()
                    call()
                    samples[key].setdefault(name, []).append(time.perf_counter() - start)
        native_guard.set_conversion(best)
        reference = samples["complex64", "-"]
        print(f"\n{size} elements, {torch.get_num_threads()} threads, milliseconds (16-bit / complex64)")
        columns = list(samples)
        print(" | ".join(["call", *(f"{d} {c}" for d, c in columns)]))
        for name in reference:
            cells = []
            for key in columns:
                ms = median_ms(samples[key][name])
                ratio = ms / median_ms(reference[name])
                cells.append(f"{ms:.2f}" if key == ("complex64", "-") else f"{ms:.2f} ({ratio:.2f}x)")
                p20, p50, p80 = percentiles(samples[key][name])
                rows.append({"size": size, "call": name, "dtype": key[0], "conversion": key[1],
                             "p20_ms": p20 * 1e3, "p50_ms": p50 * 1e3, "p80_ms": p80 * 1e3, "ratio": ratio})
            print(" | ".join([name, *cells]))
    print("\nwrote", write_rows("cpu_eager", rows))


if __name__ == "__main__":
    main()
