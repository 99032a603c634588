"""16-bit complex eager calls on CPU against complex64 and against the hand-written upcast (issue 23).

    python -m benchmarks.cpu_eager [--rounds N] [--sizes 8,4096,65536,1048576,4194304]
                                   [--dtypes complex32,bcomplex32] [--calls "x.exp(),x * w"] [--chart]

Per size and dtype, each call is timed in interleaved rounds in one process three ways: complex64 on the same
values; jitdtypes on the 16-bit tensors (its generated CPU kernel where it has one: the benchmark first makes
one call of each with JITDTYPES_CPU_KERNELS=eager, so the packages are built or found in the cache and
installed before timing); and the hand-written upcast (`f(x.to(complex64)).to(x.dtype)`). Medians; the
table gives complex64's time over the 16-bit one (above 1: the 16-bit call is faster), and the CSV rows hold
every median with p20/p80. --chart then draws docs/charts/cpu_eager.png from those rows (benchmarks.charts).
"""

from __future__ import annotations

import argparse
import os
import time

import torch

import jitdtypes
from benchmarks import charts
from benchmarks.common import percentiles, write_rows
from jitdtypes import cpu_kernels, dtypes

MATMUL_SIDE = 512
WARM_SIZE = 1 << 18  # cpu_kernels.table.min_numel's largest

CALLS = {  # name -> f(x, w): x, w flat tensors of one dtype
    "x.sum()": lambda x, w: x.sum(),
    "x.abs()": lambda x, w: x.abs(),
    "x.angle()": lambda x, w: x.angle(),
    "x.cumsum(0)": lambda x, w: x.cumsum(0),
    "x * w": lambda x, w: x * w,
    "x + w": lambda x, w: x + w,
    "x * w + x": lambda x, w: x * w + x,
    "x / w": lambda x, w: x / w,
    "x.exp()": lambda x, w: x.exp(),
    "x.sin()": lambda x, w: x.sin(),
    "x.sigmoid()": lambda x, w: x.sigmoid(),
    "x.log()": lambda x, w: x.log(),
    "x.sqrt()": lambda x, w: x.sqrt(),
    "x * w row bcast": lambda x, w: _rows(x) * _rows(w)[0],
    "x / w row bcast": lambda x, w: _rows(x) / _rows(w)[0],
    "x + w column bcast": lambda x, w: _rows(x) + _rows(w)[:, :1].contiguous(),
    "x.var()": lambda x, w: x.var(),
    "x.var(-1) rows": lambda x, w: _rows(x).var(-1),
    "x.mean(-1) rows": lambda x, w: _rows(x).mean(-1),
    "x.sum(0) columns": lambda x, w: _rows(x).sum(0),
    "x.prod()": lambda x, w: x.prod(),
    "x.cumprod(0)": lambda x, w: x.cumprod(0),
    "where(x.real>0)": lambda x, w: torch.where(x.real > 0, x, w),
    "x.addcmul(x w)": lambda x, w: torch.addcmul(x, x, w),
    "x.add_(w)": lambda x, w: x.add_(w),
    "mul(out=)": lambda x, w: torch.mul(x, w, out=_out(x)),
    "x.T.exp()": lambda x, w: _rows(x).T.exp(),
    "m @ m 512^2": lambda x, w: x @ x,
    "fft 64xN": lambda x, w: torch.fft.fft(x.reshape(64, -1) if x.numel() % 64 == 0 else x),
}

FAMILIES = {  # the chart's groups (benchmarks.charts), in its order
    "elementwise": ["x.abs()", "x.angle()", "x.exp()", "x.sin()", "x.sigmoid()", "x.log()", "x.sqrt()", "x.T.exp()"],
    "binary": ["x * w", "x + w", "x * w + x", "x / w", "x.addcmul(x w)", "where(x.real>0)"],
    "broadcast": ["x * w row bcast", "x / w row bcast", "x + w column bcast"],
    "in place, out=": ["x.add_(w)", "mul(out=)"],
    "reductions": ["x.sum()", "x.var()", "x.var(-1) rows", "x.mean(-1) rows", "x.sum(0) columns", "x.prod()"],
    "scans": ["x.cumsum(0)", "x.cumprod(0)"],
    "matmul, FFT": ["m @ m 512^2", "fft 64xN"],
}
FAMILY_OF = {call: family for family, calls in FAMILIES.items() for call in calls}


def _rows(x: torch.Tensor) -> torch.Tensor:
    """A flat tensor as rows of 64 elements (fewer for a tiny one): broadcasting, reductions over a dim."""
    return x.reshape(-1, min(64, x.numel()))


_outs: dict = {}


def _out(x: torch.Tensor) -> torch.Tensor:
    """The same result tensor for every call of one shape and dtype (an out= call writes, never allocates)."""
    key = (x.shape, x.dtype)
    if key not in _outs:
        _outs[key] = torch.empty_like(x)
    return _outs[key]


def _operands(name: str, size: int, dtype: torch.dtype):
    torch.manual_seed(0)
    if name.startswith("m @ m"):
        wide = [torch.randn(MATMUL_SIDE, MATMUL_SIDE, dtype=torch.complex64)] * 2
    else:
        wide = [torch.randn(size, dtype=torch.complex64), torch.randn(size, dtype=torch.complex64) + 2]
    narrow = [t.to(dtype) for t in wide]
    return narrow, [t.to(torch.complex64) for t in narrow]  # complex64 on the same (rounded) values


def _upcast(call, dtype):
    def run(x, w):
        out = call(x.to(torch.complex64), w.to(torch.complex64))
        return out.to(dtype if out.is_complex() else dtypes.part_dtype(dtype))

    return run


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--sizes", default="8,4096,65536,1048576,4194304")
    parser.add_argument("--dtypes", default="complex32,bcomplex32")
    parser.add_argument("--calls", default=",".join(CALLS))
    parser.add_argument("--chart", action="store_true",
                        help="then draw docs/charts/cpu_eager.png from the CSV rows (needs matplotlib)")
    options = parser.parse_args()
    if options.chart:
        charts.require_matplotlib()  # now, not after the run
    jitdtypes.enable("compiled")
    os.environ[cpu_kernels.ENV_VAR] = cpu_kernels.EAGER
    names = options.calls.split(",")
    targets = [dtypes.BY_NAME[name] for name in options.dtypes.split(",")]
    rows = []
    for dtype in targets:
        for name in names:  # first calls: build or load every package before anything is timed, at a size
            for size in (64, WARM_SIZE):  # past every min_numel, where ops PyTorch serves first ask for theirs
                CALLS[name](*_operands(name, size, dtype)[0])
        sizes = [int(s) for s in options.sizes.split(",")]
        for size in sizes:
            for name in names:
                if name.startswith("m @ m") and size != sizes[0]:
                    continue  # one size of its own
                narrow, wide = _operands(name, size, dtype)
                call = CALLS[name]
                ways = {"complex64": (call, wide), "jitdtypes": (call, narrow), "upcast": (_upcast(call, dtype), narrow)}
                samples = {way: [] for way in ways}
                for fn, args in ways.values():
                    fn(*args)
                for _ in range(options.rounds):
                    for way, (fn, args) in ways.items():
                        samples[way].append(_timed(lambda: fn(*args)))
                row = {"dtype": dtypes.NAMES[dtype], "call": name, "family": FAMILY_OF.get(name, ""),
                       "elements": MATMUL_SIDE ** 2 if name.startswith("m @ m") else size}
                for way, values in samples.items():
                    p20, p50, p80 = percentiles(values)
                    row.update({f"{way}_us": round(p50 * 1e6, 2), f"{way}_p20_us": round(p20 * 1e6, 2),
                                f"{way}_p80_us": round(p80 * 1e6, 2)})
                row["complex64_over_jitdtypes"] = round(row["complex64_us"] / row["jitdtypes_us"], 2)
                row["upcast_over_jitdtypes"] = round(row["upcast_us"] / row["jitdtypes_us"], 2)
                rows.append(row)
    _print_table(rows, names)
    generated = sorted(f"{o.removeprefix('aten::')}/{d}" for (o, d), s in cpu_kernels.status().items()
                       if s == "installed")
    print(f"\ngenerated kernels installed: {len(generated)} ({', '.join(generated)})")
    print("rows appended to", write_rows("cpu_eager", rows))
    if options.chart:
        print("chart:", charts.draw_eager())


def _print_table(rows: list[dict], names: list[str]) -> None:
    print("complex64 time / 16-bit jitdtypes time (above 1: faster than complex64); "
          "[jitdtypes median in us; upcast / jitdtypes]")
    sizes = list(dict.fromkeys(r["elements"] for r in rows if not r["call"].startswith("m @ m")))
    for dtype in dict.fromkeys(r["dtype"] for r in rows):
        print(f"\n{dtype:14}" + "".join(f"{s:>26}" for s in sizes))
        for name in names:
            cells = []
            for size in sizes:
                row = next((r for r in rows if (r["dtype"], r["call"]) == (dtype, name) and
                            (r["elements"] == size or name.startswith("m @ m"))), None)
                cells.append("" if row is None or (name.startswith("m @ m") and size != sizes[0]) else
                             f"{row['complex64_over_jitdtypes']:5.2f} [{row['jitdtypes_us']:9.1f}; "
                             f"{row['upcast_over_jitdtypes']:4.1f}]")
            print(f"{name:14}" + "".join(f"{c:>26}" for c in cells))


if __name__ == "__main__":
    main()
