"""FFT family: batched power-of-two 1-D FFTs over (re, im) pairs (c2c, r2c, c2r), fp32 inside, one rounding.

The kernels and their host launcher are real Triton and Python code in fft_kernels.py (the algorithm is told
there); what varies per variant, the op, the length and the direction, is rendered here as the few lines that bind
fft_kernels.Transform to them, with the torch-facing `run` whose annotations torch.library.triton_op reads. The
ATen adapters below express "any dims of a tensor" as 1-D passes over [outer, inner, length] views: multi-dim
transforms chain passes through complex64 temporaries and round once, on the last pass, which also applies the
normalization. r2c goes up to n = MAX_FFT_LENGTH, c2r up to 2 * MAX_FFT_LENGTH (fft_kernels.py says why).
"""

from __future__ import annotations

import math

import torch

from jitdtypes import dtypes
from jitdtypes.schema import resize_output

from . import common, launcher
from . import fft_kernels  # what rendered modules import (render names it): part of this family's kernel key

FAMILY = "fft"
MAX_LOG2_FFT_LENGTH = 13
MAX_FFT_LENGTH = 1 << MAX_LOG2_FFT_LENGTH
OPS = ("fft_c2c", "fft_r2c", "fft_c2r")

TEMPLATE = '''\
"""Rendered by kernels_templates/fft.py: $op of n = $n points (inverse = $inverse) on $dtype tensors, computed by
kernels_templates/fft_kernels.py."""
import torch

from $kernels import Transform
from $kernels import ${op}_kernel  # noqa: F401 - the kernel it launches (adapters look it up here)

MUTATES = ("out",)
transform = Transform("$op", n=$n, inverse=$inverse)
# what the adapters' plans launch by themselves
prepared_rows = transform.prepared_rows


def run(x: torch.Tensor, out: torch.Tensor, scale: float) -> None:
    """$run_doc
    x and out are [outer, inner, length] views with any strides; 16-bit or 32-bit parts (Transform.run)."""
    transform.run(x, out, scale)
'''

_RUN_DOCS = {
    "fft_c2c": "out[b, c] = scale * DFT(x[b, c]), n points (exp(-+2 pi i jk / n)).",
    "fft_r2c": "out[b, c] = scale * DFT(x[b, c])[:out.shape[2]] for real x, n points, out.shape[2] in (n // 2 + 1, n).",
    "fft_c2r": "out[b, c] = scale * n * IDFT(X) (real, n points) of the Hermitian X whose first n // 2 + 1 are x[b, c].",
}


def render(params: dict) -> str:
    op = params["op"]
    return common.render(TEMPLATE, kernels=fft_kernels.__name__, op=op, dtype=params["dtype"], n=params["n"],
                         inverse=bool(params["inverse"]), run_doc=_RUN_DOCS[op])


def _params(op: str, dtype: str, n: int, inverse: bool) -> dict:
    return {"op": op, "dtype": dtype, "n": n, "inverse": inverse}


def variants(dtype: str) -> list[dict]:
    c2c = [_params("fft_c2c", dtype, 1 << b, inverse) for b in range(1, MAX_LOG2_FFT_LENGTH + 1)
           for inverse in (False, True)]
    r2c = [_params("fft_r2c", dtype, 1 << b, False) for b in range(1, MAX_LOG2_FFT_LENGTH + 1)]
    c2r = [_params("fft_c2r", dtype, 1 << b, True) for b in range(1, MAX_LOG2_FFT_LENGTH + 2)]
    return [{**p, "interpret": False} for p in c2c + r2c + c2r]


# -- ATen adapters ----------------------------------------------------------------------------------------


def _is_power_of_two(n: int, limit: int) -> bool:
    return isinstance(n, int) and 2 <= n <= limit and n & (n - 1) == 0


def _plain(t) -> bool:
    return isinstance(t, torch.Tensor) and not t.is_conj() and not t.is_neg()


def _normalized_dims(x: torch.Tensor, dims) -> list[int] | None:
    if not dims or not all(isinstance(d, int) and -x.dim() <= d < x.dim() for d in dims):
        return None
    dims = [d % x.dim() for d in dims]
    return dims if len(set(dims)) == len(dims) else None


def _scale(normalization: int, signal_numel: int) -> float | None:
    return {0: 1.0, 1: 1.0 / math.sqrt(signal_numel), 2: 1.0 / signal_numel}.get(normalization)


def _row_views(x: torch.Tensor, out: torch.Tensor, dim: int):
    """x and out as [outer, inner, length] views transforming along `dim`, or None when the other dims do not
    collapse into two strided groups (both tensors walk their rows in the same order)."""
    batch = [d for d in range(x.dim()) if d != dim]
    shape, (x_strides, out_strides) = common.collapse_dims(
        [x.shape[d] for d in batch], [x.stride(d) for d in batch], [out.stride(d) for d in batch])
    if len(shape) > 2:
        return None
    if len(shape) == 1:
        shape, x_strides, out_strides = [1, *shape], [0, *x_strides], [0, *out_strides]
    return (
        x.as_strided([*shape, x.shape[dim]], [*x_strides, x.stride(dim)]),
        out.as_strided([*shape, out.shape[dim]], [*out_strides, out.stride(dim)]),
    )


def _run_passes(load, x: torch.Tensor, out: torch.Tensor, passes, scale: float) -> torch.Tensor:
    """passes: [(params, dim, shape after the pass)] applied in order; all but the last write complex64
    temporaries, so the result is rounded once, and only the last pass scales."""
    source = x
    for index, (params, dim, shape) in enumerate(passes):
        last = index == len(passes) - 1
        target = out if last else torch.empty(shape, dtype=torch.complex64, device=x.device)
        views = _row_views(source, target, dim)
        if views is None:
            # only x can be this scattered (out and temporaries are contiguous): an exact widening copy in
            # x's dim order keeps the single rounding
            wide = torch.complex64 if source.is_complex() else torch.float32
            source = source.to(wide, memory_format=torch.contiguous_format)
            views = _row_views(source, target, dim)
        load(params, tuple(params.values()))(*views, scale if last else 1.0)
        source = target
    return out


def _output(kwargs: dict, shape, dtype: torch.dtype, like: torch.Tensor):
    """The tensor to write: a fresh contiguous one, or out= (resized as ATen does) when it is usable as is."""
    out = kwargs.get("out")
    if out is None:
        return torch.empty(shape, dtype=dtype, device=like.device)
    if not _plain(out) or out.dtype != dtype or out.device != like.device:
        return None
    resize_output(out, shape)
    return out if out.is_contiguous() else None


def _c2c(x: torch.Tensor, dims, normalization: int, forward: bool):
    """(result shape, result dtype, passes, scale) of an _fft_c2c call, or None where the upcast path takes it."""
    if x.dtype not in dtypes.REAL_OF:
        return None
    dims = _normalized_dims(x, dims)
    if dims is None or not all(_is_power_of_two(x.shape[d], MAX_FFT_LENGTH) for d in dims):
        return None
    scale = _scale(normalization, math.prod(x.shape[d] for d in dims))
    dtype = common.dtype_name(x)
    passes = [(_params("fft_c2c", dtype, x.shape[d], not forward), d, x.shape) for d in dims]
    return x.shape, x.dtype, passes, scale


def _r2c(x: torch.Tensor, dims, normalization: int, onesided: bool):
    if x.dtype not in dtypes.COMPLEX_OF:
        return None
    dims = _normalized_dims(x, dims)
    if dims is None or not all(_is_power_of_two(x.shape[d], MAX_FFT_LENGTH) for d in dims):
        return None
    shape = list(x.shape)
    n = shape[dims[-1]]
    shape[dims[-1]] = n // 2 + 1 if onesided else n
    scale = _scale(normalization, math.prod(x.shape[d] for d in dims))
    dtype = dtypes.NAMES[dtypes.COMPLEX_OF[x.dtype]]
    passes = [(_params("fft_r2c", dtype, n, False), dims[-1], shape)]
    passes += [(_params("fft_c2c", dtype, shape[d], False), d, shape) for d in dims[:-1]]
    return shape, dtypes.COMPLEX_OF[x.dtype], passes, scale


def _c2r(x: torch.Tensor, dims, normalization: int, last_dim_size: int):
    if x.dtype not in dtypes.REAL_OF:
        return None
    dims = _normalized_dims(x, dims)
    if dims is None or not _is_power_of_two(last_dim_size, 2 * MAX_FFT_LENGTH):
        return None
    if x.shape[dims[-1]] != last_dim_size // 2 + 1:  # ATen asserts this too
        return None
    if not all(_is_power_of_two(x.shape[d], MAX_FFT_LENGTH) for d in dims[:-1]):
        return None
    shape = list(x.shape)
    shape[dims[-1]] = last_dim_size
    scale = _scale(normalization, math.prod(shape[d] for d in dims))
    dtype = common.dtype_name(x)
    passes = [(_params("fft_c2c", dtype, x.shape[d], True), d, x.shape) for d in dims[:-1]]
    passes += [(_params("fft_c2r", dtype, last_dim_size, True), dims[-1], shape)]
    return shape, dtypes.REAL_OF[x.dtype], passes, scale


class _Transform(common.Planned):
    """The adapter of _fft_c2c, _fft_r2c or _fft_c2r (and their out= forms), from `describe`: (x, dims,
    normalization, the op's last argument) -> (result shape, result dtype, passes, scale) or None. Its plan
    (kernels_templates/common.py) keeps that per signature of values (x's shape, strides and device, and the
    op's arguments); a functional one-pass transform then launches the module's kernel itself."""

    def __init__(self, describe) -> None:
        self.describe = describe
        self.__name__ = self.__qualname__ = f"fft{describe.__name__}"

    def plan(self, load, args, kwargs, device_type):
        return _TransformPlan(self.describe, load) if _plain(args[0]) else None  # flags are the call's kind


class _TransformPlan:
    def __init__(self, describe, load) -> None:
        self.describe, self.load = describe, load
        self.memo = common.Memo()

    def __call__(self, args, kwargs):
        x, dims, normalization, last = args
        key = (x.shape, x.stride(), x.device, tuple(dims), normalization, last)
        prepared = self.memo.get(key)
        if prepared is None:
            prepared = self.memo.keep(key, self._prepare(x, dims, normalization, last))
        if prepared is common.DECLINED:
            return NotImplemented
        shape, dtype, passes, scale, direct = prepared
        if direct is not None and "out" not in kwargs and launcher.on_current_device(x):
            launch, like_x = direct
            # empty_like: no shape to parse
            out = torch.empty_like(x) if like_x else torch.empty(shape, dtype=dtype, device=x.device)
            launch(x, out)
            return out
        out = _output(kwargs, shape, dtype, x)
        if out is None:
            return NotImplemented
        return _run_passes(self.load, x, out, passes, scale)

    def _prepare(self, x, dims, normalization, last):
        """(shape, dtype, passes, scale, direct) for these values, or None where the upcast path takes them; direct
        (the module's prepared_rows, whether the result can be allocated like x) where a fresh output's transform
        is one pass the plan may launch itself, else None."""
        described = self.describe(x, dims, normalization, last)
        if described is None or described[3] is None:
            return None
        shape, dtype, passes, scale = described
        shape, direct = tuple(shape), None
        if len(passes) == 1:
            params, dim, _ = passes[0]
            module = getattr(self.load(params, tuple(params.values())), "module", None)
            views = _row_views(x, torch.empty(shape, dtype=dtype, device=x.device), dim)
            # interpreted kernels run one at a time through `run` (engine._one_at_a_time)
            if (views is not None and module is not None
                    and launcher.launcher(getattr(module, f"{params['op']}_kernel")).direct):
                x_view, out_view = views
                extra = (out_view.shape[2],) if params["op"] == "fft_r2c" else ()
                views = (x_view.shape, x_view.stride(), out_view.shape, out_view.stride())
                like_x = x.dtype == dtype and x.shape == shape and x.is_contiguous()
                direct = module.prepared_rows(views, scale, *extra), like_x
        return shape, dtype, passes, scale, direct


fft_c2c, fft_r2c, fft_c2r = _Transform(_c2c), _Transform(_r2c), _Transform(_c2r)

ATEN = {
    "aten::_fft_c2c": fft_c2c,
    "aten::_fft_c2c.out": fft_c2c,
    "aten::_fft_r2c": fft_r2c,
    "aten::_fft_r2c.out": fft_r2c,
    "aten::_fft_c2r": fft_c2r,
    "aten::_fft_c2r.out": fft_c2r,
}
