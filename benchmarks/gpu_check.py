"""GPU check: validate every template family on CUDA against complex64, time each family at realistic sizes, and
measure the first import (discovery) and the first calls (kernel compiles); prints one table.

    python -m benchmarks.gpu_check [--out DIR]            # needs CUDA; about 5 minutes on an H200
    python -m benchmarks.gpu_check --cpu-interpreter      # the validation part only, tiny, in Triton's interpreter

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
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from jitdtypes.selftest import rounded, target_dtypes, validate

COPY_BYTES = 2  # copy_ reads and writes each byte once


def _bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def _row(metric, dtype, ours_label, ours, baseline_label, baseline, lower_is_better=False) -> dict:
    ratio = baseline / ours if lower_is_better else ours / baseline
    return {"kind": "time", "metric": metric, "dtype": dtype, "ours": f"{ours_label} {ours:.3g}",
            "baseline": f"{baseline_label} {baseline:.3g}", "ratio": round(ratio, 3)}


def _bandwidth_rows(metric, name, label, run, reference, bytes_moved, copy_gbs) -> list[dict]:
    """GB/s of `run` against copy_'s, and its time against the complex64 `reference`."""
    seconds, reference_seconds = _bench(run), _bench(reference)
    return [_row(f"{metric} GB/s", name, label, bytes_moved / seconds / 1e9, "copy_", copy_gbs),
            _row(f"{metric} ms", name, label, seconds * 1e3, "complex64", reference_seconds * 1e3,
                 lower_is_better=True)]


def family_timings(name, dtype, device: str) -> list[dict]:
    from jitdtypes import dtypes

    adapter = adapters_on(device)
    count = 1 << 25
    x, _ = rounded((count,), dtype, device)
    y, _ = rounded((count,), dtype, device, seed=1)
    item = x.element_size()
    destination = torch.empty_like(x)
    copy_gbs = COPY_BYTES * count * item / _bench(lambda: destination.copy_(x)) / 1e9
    wide, wide_y = x.to(torch.complex64), y.to(torch.complex64)
    rows = []
    rows += _bandwidth_rows("elementwise exp", name, "exp", lambda: adapter("aten::exp")((x,), {}),
                            lambda: torch.exp(wide), 2 * count * item, copy_gbs)
    rows += _bandwidth_rows("elementwise mul", name, "mul", lambda: adapter("aten::mul.Tensor")((x, y), {}),
                            lambda: torch.mul(wide, wide_y), 3 * count * item, copy_gbs)

    square = x.view(8192, 4096)
    wide_square = square.to(torch.complex64)
    sum_dims = adapter("aten::sum.dim_IntList")
    for label, dims in (("full", [0, 1]), ("inner dim", [1]), ("outer dim", [0])):
        rows += _bandwidth_rows(f"sum {label} 8192x4096", name, "sum", lambda: sum_dims((square, dims), {}),
                                lambda: torch.sum(wide_square, dims), count * item, copy_gbs)
    cumsum = adapter("aten::cumsum")
    for label, view, wide_view, dim in (("1-D 32M", x, wide, 0), ("dim 0 8192x4096", square, wide_square, 0),
                                        ("inner dim 8192x4096", square, wide_square, 1)):
        rows += _bandwidth_rows(f"cumsum {label}", name, "cumsum", lambda: cumsum((view, dim), {}),
                                lambda: torch.cumsum(wide_view, dim), 2 * count * item, copy_gbs)

    real = dtypes.REAL_OF[dtype]
    mm = adapter("aten::mm")
    for size in (4096, 8192):
        a, _ = rounded((size, size), dtype, device)
        b, _ = rounded((size, size), dtype, device, seed=1)
        ours = 8 * size**3 / _bench(lambda: mm((a, b), {})) / 1e12
        ar, br = torch.view_as_real(a)[..., 0].contiguous(), torch.view_as_real(b)[..., 0].contiguous()
        real_tflops = 2 * size**3 / _bench(lambda: torch.mm(ar, br)) / 1e12
        a64, b64 = a.to(torch.complex64), b.to(torch.complex64)
        c64_tflops = 8 * size**3 / _bench(lambda: torch.matmul(a64, b64)) / 1e12
        rows += [_row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, f"{real} torch.mm", real_tflops),
                 _row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, "complex64 matmul", c64_tflops)]

    fft = adapter("aten::_fft_c2c")
    for n in (256, 1024, 4096):
        signal = x.view(-1, n)[: (1 << 24) // n]
        ours_s = _bench(lambda: fft((signal, [1], 0, True), {}))
        wide_signal = signal.to(torch.complex64)
        ref_s = _bench(lambda: torch.fft.fft(wide_signal))
        rows.append(_row(f"FFT ms n={n} x{signal.shape[0]}", name, "template fft", ours_s * 1e3, "complex64 fft",
                         ref_s * 1e3, lower_is_better=True))
    return rows


def adapters_on(device: str):
    """adapter(overload): the template adapter for `device`; an overload without one is an error."""
    from jitdtypes import engine

    def adapter(overload):
        found = engine.adapter_for(overload, device)
        if found is None:
            raise RuntimeError(f"no template adapter for {overload} on {device}")
        return found

    return adapter


def timings(device: str) -> list[dict]:
    return [row for name, dtype in target_dtypes().items() for row in family_timings(name, dtype, device)]


# -- first import and first calls, each in a fresh process ---------------------------------------------------

# Discovery as a first import runs it: both devices side by side (benchmarks.gpu_discovery reports it in full).
_DISCOVER = """
import json, time
import jitdtypes
from jitdtypes import discovery
start = time.perf_counter()
found = discovery.load_or_discover_all(["cpu", "cuda"])
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
import torch, jitdtypes
compiled = []
try:
    from triton import knobs
    knobs.compilation.listener = lambda **event: compiled.append(not event.get("cache_hit", False))
except (ImportError, AttributeError):
    compiled = None
x = torch.randn(256, 256, device="cuda", dtype=torch.complex64).to(torch.complex32)
calls = {
    "exp": lambda: torch.exp(x), "add": lambda: x + x, "sum": lambda: x.sum(), "cumsum": lambda: x.cumsum(0),
    "mm (autotunes)": lambda: x @ x, "fft": lambda: torch.fft.fft(x), "where": lambda: torch.where(x.real > 0, x, x),
}
seconds, compiles = {}, {}
for label, call in calls.items():
    before = sum(compiled) if compiled is not None else 0
    torch.cuda.synchronize()
    start = time.perf_counter()
    call()
    torch.cuda.synchronize()
    seconds[label] = time.perf_counter() - start
    compiles[label] = sum(compiled) - before if compiled is not None else None
print(json.dumps({"seconds": seconds, "compiled": compiles}))
"""
# The template ops those calls use: what `jitdtypes warm` compiles for the imported-cache rows.
FIRST_CALL_OPS = "exp,add,sum,cumsum,matmul,fft_c2c,where"

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


def latency_rows() -> list[dict]:
    rows = []

    def latency(metric, seconds, note=""):
        rows.append({"kind": "latency", "metric": metric, "dtype": "-", "ours": f"{seconds:.3g} s",
                     "baseline": note, "ratio": ""})

    def first_calls(note, cache, triton_cache):
        report = _child(_FIRST_CALLS, cache, TRITON_CACHE_DIR=triton_cache)
        for label, seconds in report["seconds"].items():
            count = report["compiled"][label]
            latency(f"first call {label}", seconds,
                    note + ("" if count is None else f", {count} Triton compilation{'s' * (count != 1)}"))

    with tempfile.TemporaryDirectory() as scratch:
        cache, paths = os.path.join(scratch, "cache"), {name: os.path.join(scratch, name) for name in (
            "triton-empty", "warm", "triton-warm", "imported", "triton-imported")}
        first = _child(_DISCOVER, cache, JITDTYPES_DISABLE="1")
        for part, seconds in first["seconds"].items():
            latency(f"first import: {part}" if part == "guard and install" else f"first import: discovery {part}",
                    seconds, first["notes"].get(part, "empty cache"))
        latency("import, warm cache", _child(_IMPORT, cache)["import"], "fresh process")
        first_calls("empty kernel and Triton caches", cache, paths["triton-empty"])
        # A cache warmed for this GPU elsewhere (here: another directory), exported, imported into an empty one.
        archive = os.path.join(scratch, "warm.tar.gz")
        _cli(_seeded(cache, paths["warm"]), "warm", "--dtype", "complex32", "--device", "cuda", "--ops", FIRST_CALL_OPS,
             TRITON_CACHE_DIR=paths["triton-warm"])
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
    args = parser.parse_args(argv)
    if args.cpu_interpreter:
        os.environ.setdefault("TRITON_INTERPRET", "1")
        import jitdtypes

        jitdtypes.set_cpu_backend("triton-interpret")
        device = "cpu"
    elif not torch.cuda.is_available():
        print("gpu_check needs a CUDA device; none is available here (try --cpu-interpreter to run the "
              "validation in Triton's interpreter)")
        return 0
    else:
        device = "cuda"
    import jitdtypes  # noqa: F401 - installs the overrides

    started = time.perf_counter()
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if device == 'cuda' else 'cpu (interpreter)'}")
    rows = validate(device, small=args.cpu_interpreter)
    if device == "cuda":
        rows += timings(device)
        rows += latency_rows()
    _print(rows, sys.stdout)
    failures = [r for r in rows if r["kind"] == "validate" and r["status"] != "ok"]
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
