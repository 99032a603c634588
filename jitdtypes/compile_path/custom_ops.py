"""jitdtypes custom ops for the 16-bit complex ops that have no planar formula: matrix products and FFTs.

Compiled graphs call them as single nodes (the decompositions route aten.mm/bmm/addmm/baddbmm/addbmm and
aten._fft_* here), and they are usable directly, eager or compiled, forward and backward:

    torch.ops.jitdtypes.complex_matmul(a, b)                         # mm (2-D) or bmm (3-D)
    torch.ops.jitdtypes.fft_r2c(x, dim, normalization, onesided)     # same arguments as aten._fft_*
    torch.ops.jitdtypes.fft_c2c(x, dim, normalization, forward)
    torch.ops.jitdtypes.fft_c2r(x, dim, normalization, last_dim_size)

Each runs what eager jitdtypes runs for the matching ATen op, by calling it: jitdtypes' guard routes it to the
template kernel where the device has one (CUDA, or CPU with JITDTYPES_CPU_BACKEND=triton-interpret), else to
the upcast path. Outputs are contiguous,
as the fake kernels say. Mixed dtypes follow eager jitdtypes, which widens 16-bit operands to 32 bits:
complex32 with bcomplex32 or complex64 gives complex64, and operands that widen to different dtypes (a real
matrix times a complex one) are an error, as in PyTorch. The backward formulas are ATen's
(tools/autograd/derivatives.yaml) written with these ops, so gradients stay in the 16-bit dtype like eager
ones.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .. import dtypes

aten = torch.ops.aten


def _run_like_eager(overload: torch._ops.OpOverload, args: tuple) -> Tensor:
    # Through the dispatcher, below autograd: jitdtypes' guard for the overload routes the 16-bit call as in
    # eager mode (a template kernel where the device has one, else the upcast path).
    return overload(*args).contiguous()


# -- matrix products ----------------------------------------------------------------------------------------


@torch.library.custom_op("jitdtypes::complex_matmul", mutates_args=(), schema="(Tensor a, Tensor b) -> Tensor")
def complex_matmul(a: Tensor, b: Tensor) -> Tensor:
    """a @ b for matrices (2-D) or batches of them (3-D), at least one complex32/bcomplex32."""
    return _run_like_eager(aten.mm.default if a.dim() == 2 else aten.bmm.default, (a, b))


def _widened(dtype: torch.dtype) -> torch.dtype:
    return dtypes.COMPUTE_DTYPE.get(dtype, dtype)


@complex_matmul.register_fake
def _complex_matmul_fake(a: Tensor, b: Tensor) -> Tensor:
    torch._check(a.dim() == b.dim() and a.dim() in (2, 3), lambda: "complex_matmul takes two 2-D or 3-D tensors")
    torch._check(_widened(a.dtype) == _widened(b.dtype), lambda: (
        f"complex_matmul: {a.dtype} @ {b.dtype}: expected m1 and m2 to have the same dtype once widened to "
        f"32 bits, but got {_widened(a.dtype)} and {_widened(b.dtype)}"))
    torch._check(a.shape[-1] == b.shape[-2], lambda: f"complex_matmul: shapes {a.shape} and {b.shape}")
    return a.new_empty((*a.shape[:-1], b.shape[-1]), dtype=dtypes.result_dtype([a, b]))


def _save_operands(ctx, inputs, output) -> None:
    ctx.save_for_backward(*inputs)


def _complex_matmul_backward(ctx, grad: Tensor):
    a, b = ctx.saved_tensors
    grad_a = complex_matmul(grad, b.mH) if ctx.needs_input_grad[0] else None
    grad_b = complex_matmul(a.mH, grad) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


complex_matmul.register_autograd(_complex_matmul_backward, setup_context=_save_operands)


# -- FFTs ---------------------------------------------------------------------------------------------------------


# Schemas given rather than inferred from the annotations: inferring them was a third of what registering
# these ops costs `import jitdtypes` (they are registered at enable, so that a compiled artifact finds them).
_FFT_SCHEMA = "(Tensor x, SymInt[] dim, SymInt normalization, {}) -> Tensor"


def _last_dim(x: Tensor, dim: list[int]) -> int:
    return dim[-1] % x.dim()


@torch.library.custom_op("jitdtypes::fft_r2c", mutates_args=(), schema=_FFT_SCHEMA.format("bool onesided"))
def fft_r2c(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> Tensor:
    """aten._fft_r2c: a complex32/bcomplex32 spectrum of float16/bfloat16 input (complex64 of float32)."""
    return _run_like_eager(aten._fft_r2c.default, (x, dim, normalization, onesided))


@fft_r2c.register_fake
def _fft_r2c_fake(x: Tensor, dim: list[int], normalization: int, onesided: bool) -> Tensor:
    shape = list(x.shape)
    if onesided:
        last = _last_dim(x, dim)
        shape[last] = shape[last] // 2 + 1
    return x.new_empty(shape, dtype=dtypes.complex_of(x.dtype))


@torch.library.custom_op("jitdtypes::fft_c2c", mutates_args=(), schema=_FFT_SCHEMA.format("bool forward"))
def fft_c2c(x: Tensor, dim: list[int], normalization: int, forward: bool) -> Tensor:
    """aten._fft_c2c, for complex32/bcomplex32 input (any complex dtype runs)."""
    return _run_like_eager(aten._fft_c2c.default, (x, dim, normalization, forward))


@fft_c2c.register_fake
def _fft_c2c_fake(x: Tensor, dim: list[int], normalization: int, forward: bool) -> Tensor:
    return x.new_empty(x.shape)


@torch.library.custom_op("jitdtypes::fft_c2r", mutates_args=(), schema=_FFT_SCHEMA.format("SymInt last_dim_size"))
def fft_c2r(x: Tensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    """aten._fft_c2r: a float16/bfloat16 signal of last_dim_size samples from complex32/bcomplex32 input
    (float32 from complex64)."""
    return _run_like_eager(aten._fft_c2r.default, (x, dim, normalization, last_dim_size))


@fft_c2r.register_fake
def _fft_c2r_fake(x: Tensor, dim: list[int], normalization: int, last_dim_size: int) -> Tensor:
    shape = list(x.shape)
    shape[_last_dim(x, dim)] = last_dim_size
    return x.new_empty(shape, dtype=dtypes.part_dtype(x.dtype))


def _save_fft_arguments(ctx, inputs, output) -> None:
    x, dim, normalization, option = inputs
    ctx.dim, ctx.normalization, ctx.option = dim, normalization, option
    ctx.signal_length = x.shape[_last_dim(x, dim)]


def _fft_c2c_backward(ctx, grad: Tensor):
    return fft_c2c(grad, ctx.dim, ctx.normalization, not ctx.option), None, None, None


def _fft_r2c_backward(ctx, grad: Tensor):
    """real(c2c_backward(grad zero-padded to the full spectrum)), as ATen's fft_r2c_backward."""
    if ctx.option:  # onesided: the dropped half of the spectrum had zero gradient
        last = _last_dim(grad, ctx.dim)
        missing = ctx.signal_length - grad.shape[last]
        if missing > 0:
            shape = list(grad.shape)
            shape[last] = missing
            grad = torch.cat([grad, grad.new_zeros(shape)], last)
    return torch.real(fft_c2c(grad, ctx.dim, ctx.normalization, False)), None, None, None


def _fft_c2r_backward(ctx, grad: Tensor):
    """r2c of the gradient with the bins that stand for two conjugate bins doubled, as ATen's fft_c2r_backward."""
    spectrum = fft_r2c(grad, ctx.dim, ctx.normalization, True)
    last = _last_dim(grad, ctx.dim)
    doubled = grad.shape[last] - spectrum.shape[last]
    if doubled > 0:
        first, middle, rest = spectrum.split([1, doubled, spectrum.shape[last] - 1 - doubled], last)
        spectrum = torch.cat([first, middle * 2, rest], last)
    return spectrum, None, None, None


fft_c2c.register_autograd(_fft_c2c_backward, setup_context=_save_fft_arguments)
fft_r2c.register_autograd(_fft_r2c_backward, setup_context=_save_fft_arguments)
fft_c2r.register_autograd(_fft_c2r_backward, setup_context=_save_fft_arguments)
