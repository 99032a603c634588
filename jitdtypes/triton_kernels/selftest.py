"""Representative calls of every template family, each with its complex64 reference: used to validate
templates on a device (benchmarks/gpu_check.py), and by `jitdtypes warm` to compile kernels on CUDA. On a GPU
the sizes (64 x 1000, a 96 x 200 x 80 product) take the split paths of reductions and scans (full sum, mean and
cumsum along dim 0: too few outputs or rows to fill the SMs), the real-2x2-block GEMM (mm, bmm, addmm) and
the thin one (mv, vdot)."""

from __future__ import annotations

import time

import torch



def target_dtypes():
    from .. import dtypes

    return {dtypes.NAMES[d]: d for d in dtypes.COMPLEX_TARGETS}


def rounded(shape, dtype, device, scale=1.0, shift=0.0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    wide = (torch.randn(shape, dtype=torch.complex64, generator=gen) * scale + shift).to(dtype)
    return wide.to(device), wide.to(torch.complex64).to(device)


def representative_calls(device: str, small: bool):
    """(family, label, aten overload, args builder(dtype) -> (args16, kwargs16, args64, kwargs64), reference)."""
    from kernels_templates import unary

    rows, cols = (5, 37) if small else (64, 1000)
    m, k, n = (5, 7, 3) if small else (96, 200, 80)
    fft_n = 16 if small else 1024

    def tensors(dtype, *specs):
        low, wide = zip(*(rounded(shape, dtype, device, scale, shift, seed) for seed, (shape, scale, shift)
                          in enumerate(specs)))
        return list(low), list(wide)

    def same(*specs, extra=(), kwargs=None):
        def build(dtype):
            low, wide = tensors(dtype, *specs)
            return (*low, *extra), dict(kwargs or {}), (*wide, *extra), dict(kwargs or {})
        return build

    def real_signal(*extra):
        def build(dtype):
            from .. import dtypes

            low, wide = rounded((rows, fft_n), dtype, device)
            low, wide = low.real.to(dtypes.REAL_OF[dtype]).contiguous(), wide.real.contiguous()
            return (low, *extra), {}, (wide, *extra), {}
        return build

    def half_spectrum(*extra):
        def build(dtype):
            low, wide = rounded((rows, fft_n // 2 + 1), dtype, device)
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
        ("reductions", "sum all", "aten::sum", same(plain), torch.sum),
        ("reductions", "mean", "aten::mean.dim", same(plain, extra=([0],)), torch.mean),
        ("reductions", "prod", "aten::prod.dim_int", same(near_one, extra=(1,)), torch.prod),
        ("reductions", "var", "aten::var.correction", same(plain, extra=([1],)), torch.var),
        ("reductions", "std", "aten::std.correction", same(plain, extra=([1],)), torch.std),
        ("reductions", "norm", "aten::linalg_vector_norm", same(plain, extra=(2, [1])), torch.linalg.vector_norm),
        ("scans", "cumsum", "aten::cumsum", same(plain, extra=(1,)), torch.cumsum),
        ("scans", "cumsum dim 0", "aten::cumsum", same(plain, extra=(0,)), torch.cumsum),
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


def _launched(actual: torch.Tensor, expected: torch.Tensor, launches: int) -> str:
    from .. import dtypes

    family = dtypes.FAMILY_OF.get(actual.dtype)  # the 16-bit (complex, real) pair of complex64's (complex, real)
    if family is None or actual.dtype != family[0 if expected.is_complex() else 1] or actual.shape != expected.shape:
        return f"MISMATCH {actual.dtype} {tuple(actual.shape)}, complex64 gives {expected.dtype} {tuple(expected.shape)}"
    return f"launched {launches}" if launches else "MISMATCH no kernel launched"


def _close(actual: torch.Tensor, expected: torch.Tensor, eps: float, ulps: float = 8) -> tuple[bool, float]:
    wide = torch.complex128 if expected.is_complex() else torch.float64
    a, e = actual.to(wide), expected.to(wide)
    scale = e.abs().max().item() if e.numel() else 0.0
    error = (a - e).abs().max().item() if e.numel() else 0.0
    return error <= ulps * eps * max(scale, 1e-30), error / max(scale, 1e-30)


def validate(device: str, small: bool, launches: list | None = None) -> list[dict]:
    """One row per representative call and dtype: its result against complex64 on the same rounded values.
    `launches`: a list the (simulated) kernel launcher appends to; given, results hold no values (nothing
    ran), so a row checks the result's dtype and shape and that the call launched at least one kernel."""
    from .. import dtypes
    from . import engine

    rows = []
    for name, dtype in target_dtypes().items():
        for family, label, overload, build, reference in representative_calls(device, small):
            args, kwargs, wide_args, wide_kwargs = build(dtype)
            adapter = engine.adapter_for(overload, device)
            started = time.perf_counter()
            try:
                launched = len(launches) if launches is not None else 0
                result = adapter(tuple(args), kwargs)
                if result is NotImplemented:
                    raise RuntimeError("the adapter declined")
                expected = reference(*wide_args, **wide_kwargs)
                if launches is None:
                    ok, error = _close(result, expected, dtypes.EPS[dtype])
                    status = "ok" if ok else f"MISMATCH rel {error:.2e}"
                else:
                    status = _launched(result, expected, len(launches) - launched)
            except Exception as exc:  # noqa: BLE001 - a failing template is a row, not the end of the check
                status = f"ERROR {type(exc).__name__}: {str(exc).splitlines()[0][:60]}"
            rows.append({"kind": "validate", "family": family, "case": label, "dtype": name, "status": status,
                         "seconds": round(time.perf_counter() - started, 2)})
    return rows


