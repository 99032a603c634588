"""GPU check: validate every template family on CUDA against complex64, then time it; prints one table.

    python -m benchmarks.gpu_check [--out DIR]            # needs CUDA; about 3-6 minutes on an H200
    python -m benchmarks.gpu_check --cpu-interpreter      # the validation part only, tiny, in Triton's interpreter

Validation calls each template adapter directly (so kernels PyTorch happens to have natively are checked
too) on inputs rounded to the 16-bit dtype and compares with complex64 on the same values. Timing uses
triton.testing.do_bench medians: elementwise GB/s against a same-size copy_, complex GEMM TFLOP/s
(8*M*N*K flops) against real fp16/bf16 torch.mm and complex64 torch.matmul, FFT against complex64
torch.fft.fft. Rows are also appended to benchmarks/results/gpu_check.csv.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import torch

from jitdtypes.selftest import rounded, target_dtypes, validate


def _bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def timings(device: str) -> list[dict]:
    from jitdtypes import dtypes, engine

    rows = []
    for name, dtype in target_dtypes().items():
        real = dtypes.REAL_OF[dtype]
        count = 1 << 25
        x, _ = rounded((count,), dtype, device)
        y, _ = rounded((count,), dtype, device, seed=1)
        destination = torch.empty_like(x)
        copy_s = _bench(lambda: destination.copy_(x))
        exp_adapter = engine.adapter_for("aten::exp", device)
        mul_adapter = engine.adapter_for("aten::mul.Tensor", device)
        exp_s = _bench(lambda: exp_adapter((x,), {}))
        mul_s = _bench(lambda: mul_adapter((x, y), {}))
        wide = x.to(torch.complex64)
        exp64_s = _bench(lambda: torch.exp(wide))
        item = x.element_size()
        rows += [
            _row("elementwise GB/s", name, "exp", 2 * count * item / exp_s / 1e9, "copy_", 2 * count * item / copy_s / 1e9),
            _row("elementwise GB/s", name, "mul", 3 * count * item / mul_s / 1e9, "copy_", 2 * count * item / copy_s / 1e9),
            _row("elementwise time", name, "exp", exp_s * 1e3, "complex64 exp", exp64_s * 1e3, lower_is_better=True),
        ]
        for size in (4096, 8192):
            a, _ = rounded((size, size), dtype, device)
            b, _ = rounded((size, size), dtype, device, seed=1)
            mm = engine.adapter_for("aten::mm", device)
            ours = 8 * size**3 / _bench(lambda: mm((a, b), {})) / 1e12
            ar, br = torch.view_as_real(a)[..., 0].contiguous(), torch.view_as_real(b)[..., 0].contiguous()
            real_tflops = 2 * size**3 / _bench(lambda: torch.mm(ar, br)) / 1e12
            a64, b64 = a.to(torch.complex64), b.to(torch.complex64)
            c64_tflops = 8 * size**3 / _bench(lambda: torch.matmul(a64, b64)) / 1e12
            rows += [_row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, f"{real} torch.mm", real_tflops),
                     _row(f"GEMM TFLOP/s {size}^3", name, "template mm", ours, "complex64 matmul", c64_tflops)]
        fft = engine.adapter_for("aten::_fft_c2c", device)
        for n in (256, 1024, 4096):
            signal, _ = rounded(((1 << 24) // n, n), dtype, device)
            ours_s = _bench(lambda: fft((signal, [1], 0, True), {}))
            wide = signal.to(torch.complex64)
            ref_s = _bench(lambda: torch.fft.fft(wide))
            rows.append(_row(f"FFT ms n={n} x{(1 << 24) // n}", name, "template fft", ours_s * 1e3, "complex64 fft",
                             ref_s * 1e3, lower_is_better=True))
    return rows


def _row(metric, dtype, ours_label, ours, baseline_label, baseline, lower_is_better=False) -> dict:
    ratio = baseline / ours if lower_is_better else ours / baseline
    return {"kind": "time", "metric": metric, "dtype": dtype, "ours": f"{ours_label} {ours:.3g}",
            "baseline": f"{baseline_label} {baseline:.3g}", "ratio": round(ratio, 3)}


def _print(rows: list[dict], out) -> None:
    for row in rows:
        if row["kind"] == "validate":
            print(f"validate  {row['family']:10} {row['case']:16} {row['dtype']:10} {row['status']}  ({row['seconds']} s)", file=out)
        else:
            print(f"time      {row['metric']:28} {row['dtype']:10} {row['ours']:26} vs {row['baseline']:28} "
                  f"x{row['ratio']}  (>1: ours better)", file=out)


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
    _print(rows, sys.stdout)
    if device == "cuda":
        timed = timings(device)
        _print(timed, sys.stdout)
        rows += timed
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
