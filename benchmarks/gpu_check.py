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

EPS = {"complex32": 2.0**-10, "bcomplex32": 2.0**-7}


def _dtypes():
    from jitdtypes import dtypes

    return {dtypes.NAMES[d]: d for d in dtypes.COMPLEX_TARGETS}


def _rounded(shape, dtype, device, scale=1.0, shift=0.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    wide = (torch.randn(shape, dtype=torch.complex64, generator=gen) * scale + shift).to(dtype)
    return wide.to(device), wide.to(torch.complex64).to(device)


def _checks(device: str, small: bool):
    """(family, label, aten overload, args builder(dtype) -> (args16, kwargs16, args64, kwargs64), reference)."""
    from kernels_templates import unary

    rows, cols = (5, 37) if small else (64, 1000)
    m, k, n = (5, 7, 3) if small else (96, 200, 80)
    fft_n = 16 if small else 1024

    def tensors(dtype, *specs):
        low, wide = zip(*(_rounded(shape, dtype, device, scale, shift, seed) for seed, (shape, scale, shift)
                          in enumerate(specs)))
        return list(low), list(wide)

    def same(*specs, extra=(), kwargs=None):
        def build(dtype):
            low, wide = tensors(dtype, *specs)
            return (*low, *extra), dict(kwargs or {}), (*wide, *extra), dict(kwargs or {})
        return build

    def real_signal(*extra):
        def build(dtype):
            from jitdtypes import dtypes

            low, wide = _rounded((rows, fft_n), dtype, device)
            low, wide = low.real.to(dtypes.REAL_OF[dtype]).contiguous(), wide.real.contiguous()
            return (low, *extra), {}, (wide, *extra), {}
        return build

    def half_spectrum(*extra):
        def build(dtype):
            low, wide = _rounded((rows, fft_n // 2 + 1), dtype, device)
            return (low, *extra), {}, (wide, *extra), {}
        return build

    plain = ((rows, cols), 0.7, 0.0)
    near_one = ((rows, cols), 0.05, 1.0)  # prod/cumprod stay finite
    checks = []
    for op in unary.OPS:
        checks.append(("unary", op, f"aten::{op}", same(plain), getattr(torch, op)))
    checks += [
        ("binary", "add alpha", "aten::add.Tensor", same(plain, plain, kwargs={"alpha": 0.5 - 1j}), torch.add),
        ("binary", "sub", "aten::sub.Tensor", same(plain, plain), torch.sub),
        ("binary", "mul", "aten::mul.Tensor", same(plain, plain), torch.mul),
        ("binary", "mul scalar", "aten::mul.Tensor", same(plain, extra=(1.5 - 2j,)), torch.mul),
        ("binary", "div", "aten::div.Tensor", same(plain, plain), torch.div),
        ("binary", "pow", "aten::pow.Tensor_Tensor", same(near_one, ((rows, cols), 0.3, 0.0)), torch.pow),
        ("ternary", "addcmul", "aten::addcmul", same(plain, plain, plain, kwargs={"value": 0.5}), torch.addcmul),
        ("ternary", "addcdiv", "aten::addcdiv", same(plain, plain, near_one, kwargs={"value": 2}), torch.addcdiv),
        ("ternary", "lerp", "aten::lerp.Scalar", same(plain, plain, extra=(0.3,)), torch.lerp),
        ("reductions", "sum", "aten::sum.dim_IntList", same(plain, extra=([1],)), torch.sum),
        ("reductions", "mean", "aten::mean.dim", same(plain, extra=([0],)), torch.mean),
        ("reductions", "prod", "aten::prod.dim_int", same(near_one, extra=(1,)), torch.prod),
        ("reductions", "var", "aten::var.correction", same(plain, extra=([1],)), torch.var),
        ("reductions", "std", "aten::std.correction", same(plain, extra=([1],)), torch.std),
        ("reductions", "norm", "aten::linalg_vector_norm", same(plain, extra=(2, [1])), torch.linalg.vector_norm),
        ("scans", "cumsum", "aten::cumsum", same(plain, extra=(1,)), torch.cumsum),
        ("scans", "cumprod", "aten::cumprod", same(near_one, extra=(1,)), torch.cumprod),
        ("matmul", "mm", "aten::mm", same(((m, k), 1, 0), ((k, n), 1, 0)), torch.mm),
        ("matmul", "bmm", "aten::bmm", same(((3, m, k), 1, 0), ((3, k, n), 1, 0)), torch.bmm),
        ("matmul", "addmm", "aten::addmm", same(((m, n), 1, 0), ((m, k), 1, 0), ((k, n), 1, 0),
                                                 kwargs={"beta": 0.5, "alpha": 2}), torch.addmm),
        ("matmul", "mv", "aten::mv", same(((m, k), 1, 0), ((k,), 1, 0)), torch.mv),
        ("matmul", "vdot", "aten::vdot", same(((k * 50,), 1, 0), ((k * 50,), 1, 0)), torch.vdot),
        ("fft", "fft c2c", "aten::_fft_c2c", same(((rows, fft_n), 1, 0), extra=([1], 0, True)),
         torch.ops.aten._fft_c2c),
        ("fft", "ifft c2c", "aten::_fft_c2c", same(((rows, fft_n), 1, 0), extra=([1], 2, False)),
         torch.ops.aten._fft_c2c),
        ("fft", "rfft r2c", "aten::_fft_r2c", real_signal([1], 0, True), torch.ops.aten._fft_r2c),
        ("fft", "irfft c2r", "aten::_fft_c2r", half_spectrum([1], 2, fft_n), torch.ops.aten._fft_c2r),
    ]
    return checks


def _close(actual: torch.Tensor, expected: torch.Tensor, eps: float, ulps: float = 8) -> tuple[bool, float]:
    wide = torch.complex128 if expected.is_complex() else torch.float64
    a, e = actual.to(wide), expected.to(wide)
    scale = e.abs().max().item() if e.numel() else 0.0
    error = (a - e).abs().max().item() if e.numel() else 0.0
    return error <= ulps * eps * max(scale, 1e-30), error / max(scale, 1e-30)


def validate(device: str, small: bool) -> list[dict]:
    from jitdtypes import engine

    rows = []
    for name, dtype in _dtypes().items():
        for family, label, overload, build, reference in _checks(device, small):
            args, kwargs, wide_args, wide_kwargs = build(dtype)
            adapter = engine.adapter_for(overload, device)
            started = time.perf_counter()
            try:
                result = adapter(tuple(args), kwargs)
                if result is NotImplemented:
                    raise RuntimeError("the adapter declined")
                expected = reference(*wide_args, **wide_kwargs)
                ok, error = _close(result, expected, EPS[name])
                status = "ok" if ok else f"MISMATCH rel {error:.2e}"
            except Exception as exc:  # noqa: BLE001 - a failing template is a row, not the end of the check
                status = f"ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
            rows.append({"kind": "validate", "family": family, "case": label, "dtype": name, "status": status,
                         "seconds": round(time.perf_counter() - started, 2)})
    return rows


def _bench(fn) -> float:
    import triton.testing

    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def timings(device: str) -> list[dict]:
    from jitdtypes import dtypes, engine

    rows = []
    for name, dtype in _dtypes().items():
        real = dtypes.REAL_OF[dtype]
        count = 1 << 25
        x, _ = _rounded((count,), dtype, device)
        y, _ = _rounded((count,), dtype, device, seed=1)
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
            a, _ = _rounded((size, size), dtype, device)
            b, _ = _rounded((size, size), dtype, device, seed=1)
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
            signal, _ = _rounded(((1 << 24) // n, n), dtype, device)
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
