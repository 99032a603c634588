"""GPU check: validate every template family on CUDA against complex64, time each family at realistic sizes, and
measure the first import (discovery) and the first calls (kernel compiles); prints one table.

    python -m benchmarks.gpu_check [--out DIR]            # needs CUDA; about 5 minutes on an H200
    python -m benchmarks.gpu_check --seeded-first-import  # latency rows from this cache's discovery and guard
    python -m benchmarks.gpu_check --cpu-interpreter      # the validation part only, tiny, in Triton's interpreter
    python -m benchmarks.gpu_check --simulate sm_90       # every part, no GPU: up to the kernel launch

`--simulate` runs the whole check on this machine's CPU against a simulated GPU (benchmarks.host_time:
Triton compiles every kernel for the arch, the C launcher launches nothing): validation rows check the
result's dtype and shape and that kernels were launched, timing rows run each call once at small sizes and time
nothing, latency rows run their processes and commands. What it proves is that the host code of every part runs
on this torch and Triton, up to the launch; not values, not speed.

Validation calls each template adapter directly (so kernels PyTorch happens to have natively are checked
too) on inputs rounded to the 16-bit dtype and compares with complex64 on the same values. Timing uses
triton.testing.do_bench medians: elementwise, reduction (full, inner dim, outer dim) and scan (1-D, dim 0,
inner dim) GB/s against a same-size copy_ and times against complex64, complex GEMM TFLOP/s (8*M*N*K flops)
against real fp16/bf16 torch.mm and complex64 torch.matmul, FFT against complex64 torch.fft.fft. Latency rows:
discovery (both device types side by side, and each one's time, overrides and crashed overloads) and the rest
of a first import with an empty cache, a warm import, and the first call of one op per family (render, compile,
autotune, run) with its Triton compilations counted, each in a fresh process: once with empty kernel and Triton
caches, once with a cache that `jitdtypes warm` filled for this GPU, exported and imported into an empty one
(Triton's cache empty too).
Rows are also appended to benchmarks/results/gpu_check.csv.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

import torch

from jitdtypes.triton_kernels.selftest import rounded, target_dtypes, validate

COPY_BYTES = 2  # copy_ reads and writes each byte once
# set in the check's child processes to the arch of a simulated GPU (--simulate)
SIMULATE_ENV = "JITDTYPES_GPU_CHECK_SIMULATE"


class Sizes(NamedTuple):
    count: int       # elements of the elementwise, reduction, scan and FFT operands
    square: tuple    # the same elements as a matrix, for reductions and scans along either dim
    gemm: tuple      # square GEMM sizes
    fft: tuple       # transform lengths (rows: half the elements)


FULL = Sizes(1 << 25, (8192, 4096), (4096, 8192), (256, 1024, 4096))
SIMULATED = Sizes(1 << 14, (128, 128), (64, 128), (256, 1024))  # the CPU computes the complex64 references


def _bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def _launch_once(fn) -> float:
    """The simulated GPU's timer: one call, no time (NaN)."""
    fn()
    return math.nan


def _row(metric, dtype, ours_label, ours, baseline_label, baseline, lower_is_better=False) -> dict:
    if math.isnan(ours) or math.isnan(baseline):
        return {"kind": "time", "metric": metric, "dtype": dtype, "ours": f"{ours_label} (simulated)",
                "baseline": baseline_label, "ratio": ""}
    ratio = baseline / ours if lower_is_better else ours / baseline
    return {"kind": "time", "metric": metric, "dtype": dtype, "ours": f"{ours_label} {ours:.3g}",
            "baseline": f"{baseline_label} {baseline:.3g}", "ratio": round(ratio, 3)}


def _bandwidth_rows(metric, name, label, run, reference, bytes_moved, copy_gbs, bench) -> list[dict]:
    """GB/s of `run` against copy_'s, and its time against the complex64 `reference`."""
    seconds, reference_seconds = bench(run), bench(reference)
    return [_row(f"{metric} GB/s", name, label, bytes_moved / seconds / 1e9, "copy_", copy_gbs),
            _row(f"{metric} ms", name, label, seconds * 1e3, "complex64", reference_seconds * 1e3,
                 lower_is_better=True)]


def family_timings(name, dtype, device: str, sizes: Sizes = FULL, bench=_bench) -> list[dict]:
    from jitdtypes import dtypes

    adapter = adapters_on(device)
    count, (height, width) = sizes.count, sizes.square
    x, _ = rounded((count,), dtype, device)
    y, _ = rounded((count,), dtype, device, seed=1)
    item = x.element_size()
    destination = torch.empty_like(x)
    copy_gbs = COPY_BYTES * count * item / bench(lambda: destination.copy_(x)) / 1e9
    wide, wide_y = x.to(torch.complex64), y.to(torch.complex64)
    rows = []
    rows += _bandwidth_rows("elementwise exp", name, "exp", lambda: adapter("aten::exp")((x,), {}),
                            lambda: torch.exp(wide), 2 * count * item, copy_gbs, bench)
    rows += _bandwidth_rows("elementwise mul", name, "mul", lambda: adapter("aten::mul.Tensor")((x, y), {}),
                            lambda: torch.mul(wide, wide_y), 3 * count * item, copy_gbs, bench)

    square = x.view(height, width)
    wide_square = square.to(torch.complex64)
    shape = f"{height}x{width}"
    sum_dims = adapter("aten::sum.dim_IntList")
    for label, dims in (("full", [0, 1]), ("inner dim", [1]), ("outer dim", [0])):
        rows += _bandwidth_rows(f"sum {label} {shape}", name, "sum", lambda: sum_dims((square, dims), {}),
                                lambda: torch.sum(wide_square, dims), count * item, copy_gbs, bench)
    cumsum = adapter("aten::cumsum")
    for label, view, wide_view, dim in ((f"1-D {count >> 20}M" if count >= 1 << 20 else f"1-D {count}", x, wide, 0),
                                        (f"dim 0 {shape}", square, wide_square, 0),
                                        (f"inner dim {shape}", square, wide_square, 1)):
        rows += _bandwidth_rows(f"cumsum {label}", name, "cumsum", lambda: cumsum((view, dim), {}),
                                lambda: torch.cumsum(wide_view, dim), 2 * count * item, copy_gbs, bench)

    real = dtypes.REAL_OF[dtype]
    mm = adapter("aten::mm")
    for size in sizes.gemm:
        a, _ = rounded((size, size), dtype, device)
        b, _ = rounded((size, size), dtype, device, seed=1)
        ours = 8 * size**3 / bench(lambda: mm((a, b), {})) / 1e12
        ar, br = torch.view_as_real(a)[..., 0].contiguous(), torch.view_as_real(b)[..., 0].contiguous()
        real_tflops = 2 * size**3 / bench(lambda: torch.mm(ar, br)) / 1e12
        a64, b64 = a.to(torch.complex64), b.to(torch.complex64)
        c64_tflops = 8 * size**3 / bench(lambda: torch.matmul(a64, b64)) / 1e12
        rows += [_row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, f"{real} torch.mm", real_tflops),
                 _row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, "complex64 matmul", c64_tflops)]

    fft = adapter("aten::_fft_c2c")
    for n in sizes.fft:
        signal = x.view(-1, n)[: count // 2 // n]
        ours_s = bench(lambda: fft((signal, [1], 0, True), {}))
        wide_signal = signal.to(torch.complex64)
        ref_s = bench(lambda: torch.fft.fft(wide_signal))
        rows.append(_row(f"FFT ms n={n} x{signal.shape[0]}", name, "template fft", ours_s * 1e3, "complex64 fft",
                         ref_s * 1e3, lower_is_better=True))
    return rows


def adapters_on(device: str):
    """adapter(overload): the template adapter for `device`; an overload without one is an error."""
    from jitdtypes.triton_kernels import engine

    def adapter(overload):
        found = engine.adapter_for(overload, device)
        if found is None:
            raise RuntimeError(f"no template adapter for {overload} on {device}")
        return found

    return adapter


def timings(device: str, sizes: Sizes = FULL, bench=_bench) -> list[dict]:
    return [row for name, dtype in target_dtypes().items()
            for row in family_timings(name, dtype, device, sizes, bench)]


# -- first import and first calls, each in a fresh process ---------------------------------------------------

# Discovery as a first import runs it: both devices side by side (benchmarks.gpu_discovery reports it in full).
_DISCOVER = """
import json, os, time
import jitdtypes
from jitdtypes import discovery
start = time.perf_counter()
found = discovery.load_or_discover_all(["cpu"] if os.environ.get("JITDTYPES_GPU_CHECK_SIMULATE") else ["cpu", "cuda"])
seconds = {"cpu and cuda side by side": time.perf_counter() - start}
notes = {device: f"empty cache, {len(f.findings)} overrides, {len(f.crashed)} crashed" for device, f in found.items()}
seconds.update({device: f.stats["seconds"] for device, f in found.items()})
start = time.perf_counter()
jitdtypes.enable()
seconds["guard and install"] = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "notes": notes}))
"""

_IMPORT = """
import json, time
start = time.perf_counter()
import jitdtypes
print(json.dumps({"import": time.perf_counter() - start}))
"""

# One op per family, each the first call of its kernel in the process, and the Triton compilations it caused
# (Triton's compilation listener, where this triton has one).
_FIRST_CALLS = """
import json, time
from benchmarks.gpu_check import child_device
device = child_device()
import torch, jitdtypes
compiled = []
try:
    from triton import knobs
    knobs.compilation.listener = lambda **event: compiled.append(not event.get("cache_hit", False))
except (ImportError, AttributeError):
    compiled = None
sync = torch.cuda.synchronize if device == "cuda" else lambda: None
x = torch.randn(256, 256, device=device, dtype=torch.complex64).to(torch.complex32)
calls = {
    "exp": lambda: torch.exp(x), "add": lambda: x + x, "sum": lambda: x.sum(), "cumsum": lambda: x.cumsum(0),
    "mm (autotunes)": lambda: x @ x, "fft": lambda: torch.fft.fft(x), "where": lambda: torch.where(x.real > 0, x, x),
}
seconds, compiles = {}, {}
for label, call in calls.items():
    before = sum(compiled) if compiled is not None else 0
    sync()
    start = time.perf_counter()
    call()
    sync()
    seconds[label] = time.perf_counter() - start
    compiles[label] = sum(compiled) - before if compiled is not None else None
print(json.dumps({"seconds": seconds, "compiled": compiles}))
"""
# The template ops those calls use: what `jitdtypes warm` compiles for the imported-cache rows.
FIRST_CALL_OPS = "exp,add,sum,cumsum,matmul,fft_c2c,where"
_simulation = contextlib.ExitStack()  # a child's simulated GPU, entered for the rest of its life


def child_device() -> str:
    """In a child process of the check: "cuda", or, with SIMULATE_ENV set, "cpu" with the simulated GPU of that
    arch entered for the rest of the process."""
    arch = os.environ.get(SIMULATE_ENV)
    if not arch:
        return "cuda"
    from benchmarks.host_time import simulated_process

    _simulation.enter_context(simulated_process(arch))
    return "cpu"

def _child(code: str, cache: str, **env) -> dict:
    run = subprocess.run([sys.executable, "-c", code], env={**os.environ, "JITDTYPES_CACHE_DIR": cache, **env},
                         capture_output=True, text=True, check=True)
    return json.loads(run.stdout.strip().splitlines()[-1])


def _cli(cache: str, *args: str, **env) -> None:
    subprocess.run([sys.executable, "-m", "jitdtypes.cli", *args],
                   env={**os.environ, "JITDTYPES_CACHE_DIR": cache, **env}, capture_output=True, text=True, check=True)


def _seeded(source: str, target: str) -> str:
    """`target` as a cache holding `source`'s discovery results and compiled guard, no kernels."""
    for part in ("discovery", "guard"):
        if os.path.isdir(os.path.join(source, part)):
            shutil.copytree(os.path.join(source, part), os.path.join(target, part),
                            ignore=shutil.ignore_patterns("*.lock"))
    return target


def latency_rows(simulate: str | None = None, seeded: bool = False) -> list[dict]:
    """simulate: the arch of a simulated GPU for the child processes (SIMULATE_ENV). seeded: the caches start
    from this process's discovery results and compiled guard (measured elsewhere: benchmarks.gpu_discovery,
    a first import), so the first import measures the install only and no discovery row is written."""
    rows = []
    simulated = {SIMULATE_ENV: simulate} if simulate else {}

    def latency(metric, seconds, note=""):
        rows.append({"kind": "latency", "metric": metric, "dtype": "-", "ours": f"{seconds:.3g} s",
                     "baseline": note, "ratio": ""})

    def first_calls(note, cache, triton_cache):
        report = _child(_FIRST_CALLS, cache, TRITON_CACHE_DIR=triton_cache, **simulated)
        for label, seconds in report["seconds"].items():
            count = report["compiled"][label]
            latency(f"first call {label}", seconds,
                    note + ("" if count is None else f", {count} Triton compilation{'s' * (count != 1)}"))

    with tempfile.TemporaryDirectory() as scratch:
        cache, paths = os.path.join(scratch, "cache"), {name: os.path.join(scratch, name) for name in (
            "triton-empty", "warm", "triton-warm", "imported", "triton-imported")}
        if seeded:
            from cache_tools import locations

            os.makedirs(cache, mode=0o700)
            _seeded(str(locations.cache_root()), cache)
        first = _child(_DISCOVER, cache, JITDTYPES_DISABLE="1", **simulated)
        for part, seconds in first["seconds"].items():
            if part == "guard and install":
                latency("first import: install" if seeded else f"first import: {part}", seconds,
                        "discovery and guard cached" if seeded else "empty cache")
            elif not seeded:
                latency(f"first import: discovery {part}", seconds, first["notes"].get(part, "empty cache"))
        latency("import, warm cache", _child(_IMPORT, cache)["import"], "fresh process")
        first_calls("empty kernel and Triton caches", cache, paths["triton-empty"])
        # A cache warmed for this GPU elsewhere (here: another directory), exported, imported into an empty one.
        # Simulated, it is warmed ahead of time for the arch, which the CPU calls that stand for it do not use.
        archive = os.path.join(scratch, "warm.tar.gz")
        arch = ("--arch", simulate) if simulate else ()
        _cli(_seeded(cache, paths["warm"]), "warm", "--dtype", "complex32", "--device", "cuda", "--ops", FIRST_CALL_OPS,
             *arch, TRITON_CACHE_DIR=paths["triton-warm"])
        _cli(paths["warm"], "cache", "export", str(archive))
        _cli(_seeded(cache, paths["imported"]), "cache", "import", str(archive))
        first_calls("imported warm cache, empty Triton cache", paths["imported"], paths["triton-imported"])
    return rows


def _print(rows: list[dict], out) -> None:
    print(f"{'kind':9} {'check':36} {'dtype':10} {'ours':26} {'baseline':30} ratio (>1: ours better)", file=out)
    for row in rows:
        if row["kind"] == "validate":
            check, ours, baseline, ratio = f"{row['family']} {row['case']}", row["status"], f"{row['seconds']} s", ""
        else:
            check, ours, baseline, ratio = row["metric"], row["ours"], row["baseline"], row["ratio"]
        print(f"{row['kind']:9} {check:36} {row['dtype']:10} {ours:26} {baseline:30} {ratio}", file=out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the table to OUT/gpu_check.txt")
    parser.add_argument("--cpu-interpreter", action="store_true",
                        help="run the validation part on CPU in Triton's interpreter, with tiny shapes")
    parser.add_argument("--simulate", metavar="ARCH",
                        help="run every part on CPU against a simulated GPU of ARCH (sm_80, sm_90): host code only")
    parser.add_argument("--seeded-first-import", action="store_true",
                        help="latency rows start from this cache's discovery results and compiled guard (no "
                             "probing or guard build measured: gpu_discovery and a first import measure those)")
    args = parser.parse_args(argv)
    simulation, launches, sizes, bench = contextlib.nullcontext(), None, FULL, _bench
    if args.cpu_interpreter:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        import jitdtypes

        jitdtypes.set_cpu_backend("triton-interpret")
        device, label = "cpu", "cpu (interpreter)"
    elif args.simulate:
        from benchmarks.host_time import simulated_process

        launches, sizes, bench = [], SIMULATED, _launch_once
        simulation = simulated_process(args.simulate, launches)
        device, label = "cpu", f"simulated {args.simulate} (host code up to the launch; nothing runs)"
    elif not torch.cuda.is_available():
        print("gpu_check needs a CUDA device; none is available here (try --cpu-interpreter to run the "
              "validation in Triton's interpreter, or --simulate sm_90 to run its host code)")
        return 0
    else:
        device = "cuda"
        label = torch.cuda.get_device_name()
    import triton

    import jitdtypes  # noqa: F401 - installs the overrides

    started = time.perf_counter()
    print(f"torch {torch.__version__}, triton {triton.__version__}, device {label}")
    with simulation:
        rows = validate(device, small=args.cpu_interpreter, launches=launches)
        if not args.cpu_interpreter:
            rows += timings(device, sizes, bench)
    if not args.cpu_interpreter:
        rows += latency_rows(args.simulate, args.seeded_first_import)
    _print(rows, sys.stdout)
    failures = [r for r in rows if r["kind"] == "validate" and r["status"].startswith(("MISMATCH", "ERROR"))]
    print(f"{len(rows)} rows, {len(failures)} validation failures, {time.perf_counter() - started:.0f} s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        with (args.out / "gpu_check.txt").open("w") as f:
            _print(rows, f)
    from benchmarks.common import write_rows

    write_rows("gpu_check", rows)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
