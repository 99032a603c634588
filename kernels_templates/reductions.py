"""Reductions of 16-bit complex tensors over any dims: sum, mean, prod (complex results), var, std, var_mean,
std_mean and linalg.vector_norm (real results: float16 for complex32, bfloat16 for bcomplex32).

Layout, handled by the host code rendered into every module:
  * Kept and reduced dims are each merged where neighbours are contiguous with each other (reduced dims are
    first sorted by stride: a reduction may visit its elements in any order). The kernel indexes up to three
    kept and three reduced dims with explicit strides, so transposed, sliced and expanded inputs are read in
    place. A layout that stays above three of either is permuted (reduced dims last) and copied to a
    contiguous tensor first: the only place an input is copied.
  * One program reduces KEPT_BLOCK outputs, looping over the reduced length in chunks of a
    [KEPT_BLOCK, REDUCED_BLOCK] tile that is wide along whichever side is faster in memory, so loads coalesce
    both for innermost reductions and for reductions over outer dims.
  * Outputs are written contiguous; an out= tensor that is not is filled through a contiguous temporary.

Numerics: parts are loaded as fp32 and accumulated per tile lane in fp32; the result is rounded once on
store. For complex32 fp32 cannot overflow: |z|^2 <= 2 * 65504^2 ~ 8.6e9, so even a sum of squares overflows
only past ~4e28 elements, and a sum or 2-norm is inf exactly when the true result is outside fp16's range.
bfloat16 shares fp32's exponent range, so for bcomplex32 any intermediate that can exceed the final value is
rescaled: mean accumulates z / n, var and std accumulate ((z - mean) / peak)^2 with peak the row's largest
|re| or |im|, and p-norms (including the bcomplex32 2-norm) sum (|z| / max|z|)^p over an overflow-safe |z|.
For bcomplex32, partial sums in different tile lanes can still overflow where huge terms of opposite sign
would cancel.
"""

from __future__ import annotations

import inspect
import math
import textwrap

import torch

from . import common

FAMILY = "reductions"

COMPLEX_RESULT_OPS = ("sum", "mean", "prod")
VARIANCE_OPS = ("var", "std", "var_mean", "std_mean")
NORM_ORDS = ("2", "1", "inf", "-inf", "0", "p")  # "p": any other positive finite order, passed at run time
REAL_DTYPES = {"complex32": torch.float16, "bcomplex32": torch.bfloat16}

# ---------------------------------------------------------------------------------------------------------
# Template: module skeleton, then per-op helpers and kernel bodies ($chunk loads one tile of (re, im)).

_MODULE = '''"""Rendered by kernels_templates.reductions: $title of a $dtype tensor over any dims."""
import math

import torch
import triton
import triton.language as tl
from torch.library import wrap_triton

MUTATES = $mutates

# Dims the kernel indexes after merging; unused ones get size 1, which Triton specializes to a constant,
# so their index arithmetic folds away.
KEPT_DIMS = 3
REDUCED_DIMS = 3
TILE = 1024
OUTER_KEPT_BLOCK = 64

$helpers

@triton.jit
def _load_chunk(parts_ptr, row, kept_mask, start, n_reduced, size1, size2, stride0, stride1, stride2,
                REDUCED_BLOCK: tl.constexpr):
    r = start + tl.arange(0, REDUCED_BLOCK)
    # index arithmetic in the loop counter's width, addresses in int64
    offset = ((r % size2).to(tl.int64) * stride2 + (r // size2 % size1).to(tl.int64) * stride1
              + (r // (size2 * size1)).to(tl.int64) * stride0)
    mask = kept_mask[:, None] & (r < n_reduced)[None, :]
    pointers = parts_ptr + row[:, None] + offset[None, :]
    re = tl.load(pointers, mask=mask, other=0.0).to(tl.float32)
    im = tl.load(pointers + 1, mask=mask, other=0.0).to(tl.float32)
    return re, im, mask


@triton.jit
def _reduce_kernel(parts_ptr, $kernel_arguments, n_kept, n_reduced,
                   kept_size1, kept_size2, kept_stride0, kept_stride1, kept_stride2,
                   reduced_size1, reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2,
                   KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr):
    kept = tl.program_id(0).to(tl.int64) * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
    row = ((kept % kept_size2) * kept_stride2 + (kept // kept_size2 % kept_size1) * kept_stride1
           + kept // (kept_size2 * kept_size1) * kept_stride0)
$body


$collapse_dims


def _fastest(strides):
    return min((abs(s) for s in strides if s), default=math.inf)


def _padded(sizes, strides, count):
    return sizes + [1] * (count - len(sizes)), strides + [0] * (count - len(strides))


def _launch(x, dims, outputs, scalars):
    parts = torch.view_as_real(x)
    sizes, strides = list(x.shape), list(parts.stride())[:-1]
    kept = [d for d in range(x.dim()) if d not in dims]
    reduced = sorted(dims, key=lambda d: -abs(strides[d]))
    kept_sizes, (kept_strides,) = collapse_dims([sizes[d] for d in kept], [strides[d] for d in kept])
    reduced_sizes, (reduced_strides,) = collapse_dims([sizes[d] for d in reduced], [strides[d] for d in reduced])
    if len(kept_sizes) > KEPT_DIMS or len(reduced_sizes) > REDUCED_DIMS:
        flat = x.permute(kept + reduced).contiguous()
        return _launch(flat, list(range(len(kept), x.dim())), outputs, scalars)
    n_kept, n_reduced = math.prod(kept_sizes), math.prod(reduced_sizes)
    reduced_block_cap = triton.next_power_of_2(max(n_reduced, 1))
    if _fastest(reduced_strides) <= _fastest(kept_strides):
        reduced_block = min(reduced_block_cap, TILE)
        kept_block = min(triton.next_power_of_2(n_kept), TILE // reduced_block)
    else:
        kept_block = min(triton.next_power_of_2(n_kept), OUTER_KEPT_BLOCK)
        reduced_block = min(reduced_block_cap, TILE // kept_block)
    kept_sizes, kept_strides = _padded(kept_sizes, kept_strides, KEPT_DIMS)
    reduced_sizes, reduced_strides = _padded(reduced_sizes, reduced_strides, REDUCED_DIMS)
    pointers = [torch.view_as_real(out) if out.is_complex() else out for out in outputs]
    wrap_triton(_reduce_kernel)[(triton.cdiv(n_kept, kept_block),)](
        parts, *pointers, *scalars, n_kept, n_reduced, *kept_sizes[1:], *kept_strides,
        *reduced_sizes[1:], *reduced_strides, KEPT_BLOCK=kept_block, REDUCED_BLOCK=reduced_block)


def run(x: torch.Tensor, dims: list[int], $run_scalars$run_outputs) -> None:
    """Reduce x over `dims` (ascending, non-negative; every dim of x for a full reduction) into the output
    tensor(s), which already have the result's shape (with or without the kept size-1 dims)."""
    outputs = [$output_names]
    targets = [t if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in outputs]
    if targets[0].numel():
        _launch(x, dims, targets, [$scalar_names])
    for target, output in zip(targets, outputs):
        if target is not output:
            output.copy_(target)
'''

_STORE_PAIR = '''
@triton.jit
def _store_pair(out_ptr, kept, kept_mask, re, im):
    tl.store(out_ptr + 2 * kept, re.to($part), mask=kept_mask)
    tl.store(out_ptr + 2 * kept + 1, im.to($part), mask=kept_mask)
'''

_STORE_REAL = '''
@triton.jit
def _store_real(out_ptr, kept, kept_mask, value):
    tl.store(out_ptr + kept, value.to($part), mask=kept_mask)
'''

_COMPLEX_MUL = '''
@triton.jit
def _complex_mul(a_re, a_im, b_re, b_im):
    return a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re
'''

# fp16 parts square without leaving fp32; bf16 parts can reach ~3.4e38, so the larger part is factored out.
_MAGNITUDE = {
    "complex32": '''
@triton.jit
def _magnitude(re, im):
    return tl.sqrt(re * re + im * im)
''',
    "bcomplex32": '''
@triton.jit
def _magnitude(re, im):
    big = tl.maximum(tl.abs(re), tl.abs(im), propagate_nan=tl.PropagateNan.ALL)
    small = tl.minimum(tl.abs(re), tl.abs(im), propagate_nan=tl.PropagateNan.ALL)
    # equal parts (0 and 0, inf and inf) would make the ratio 0/0 or inf/inf
    ratio = tl.where(small == big, 1.0, small / big)
    return big * tl.sqrt(1.0 + ratio * ratio)
''',
}

# tl.max / tl.min drop NaN (maxnum semantics); the inf-norms must return NaN for a row holding one.
_NAN_MAX = '''
@triton.jit
def _nan_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
'''

_NAN_MIN = '''
@triton.jit
def _nan_min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
'''

_TILE_ZEROS = "tl.zeros([KEPT_BLOCK, REDUCED_BLOCK], tl.float32)"

_SUM = f'''
    acc_re = {_TILE_ZEROS}
    acc_im = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, _ = $chunk
        acc_re += re
        acc_im += im
    _store_pair(out_ptr, kept, kept_mask, tl.sum(acc_re, 1), tl.sum(acc_im, 1))
'''

_MEAN = f'''
    inverse_n = 1.0 / n_reduced
    acc_re = {_TILE_ZEROS}
    acc_im = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, _ = $chunk
        acc_re += re * inverse_n
        acc_im += im * inverse_n
    mean_re = tl.where(n_reduced == 0, float("nan"), tl.sum(acc_re, 1))
    mean_im = tl.where(n_reduced == 0, float("nan"), tl.sum(acc_im, 1))
    _store_pair(out_ptr, kept, kept_mask, mean_re, mean_im)
'''

_PROD = f'''
    acc_re = tl.full([KEPT_BLOCK, REDUCED_BLOCK], 1.0, tl.float32)
    acc_im = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, mask = $chunk
        acc_re, acc_im = _complex_mul(acc_re, acc_im, tl.where(mask, re, 1.0), im)
    prod_re, prod_im = tl.reduce((acc_re, acc_im), 1, _complex_mul)
    _store_pair(out_ptr, kept, kept_mask, prod_re, prod_im)
'''

# Two passes (mean, then squared deviations) rather than a one-pass update: exact enough to need no care.
_VARIANCE = f'''
    inverse_n = 1.0 / n_reduced
    acc_re = {_TILE_ZEROS}
    acc_im = {_TILE_ZEROS}
    peak = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, _ = $chunk
        acc_re += re * inverse_n
        acc_im += im * inverse_n
        peak = tl.maximum(peak, tl.maximum(tl.abs(re), tl.abs(im)))
    mean_re = tl.sum(acc_re, 1)
    mean_im = tl.sum(acc_im, 1)
    # deviations divided by the row's largest part keep their squares inside fp32 for any bf16 input;
    # an all-zero or non-finite row keeps scale 1 (its deviations are 0 or NaN anyway)
    scale = tl.max(peak, 1)
    scale = tl.where((scale > 0) & (scale < float("inf")), scale, 1.0)
    squares = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, mask = $chunk
        deviation_re = tl.where(mask, (re - mean_re[:, None]) / scale[:, None], 0.0)
        deviation_im = tl.where(mask, (im - mean_im[:, None]) / scale[:, None], 0.0)
        squares += deviation_re * deviation_re + deviation_im * deviation_im
    ratio = tl.sum(squares, 1) / tl.maximum(n_reduced - correction, 0.0)
'''

_VARIANCE_STORES = {
    "var": "    _store_real(out_ptr, kept, kept_mask, ratio * scale * scale)\n",
    "std": "    _store_real(out_ptr, kept, kept_mask, tl.sqrt(ratio) * scale)\n",
}
_MEAN_STORE = '''    empty = n_reduced == 0
    mean_re = tl.where(empty, float("nan"), mean_re)
    mean_im = tl.where(empty, float("nan"), mean_im)
    _store_pair(mean_ptr, kept, kept_mask, mean_re, mean_im)
'''


def _accumulating_norm(update: str, finish: str, initial: str = _TILE_ZEROS) -> str:
    return f'''
    acc = {initial}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, mask = $chunk
        acc = {update}
    _store_real(out_ptr, kept, kept_mask, {finish})
'''


def _scaled_norm(power_of_ratio: str, root_of_total: str) -> str:
    return f'''
    peak = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, _ = $chunk
        peak = tl.maximum(peak, _magnitude(re, im))
    # |z| / max|z| lies in [0, 1], so its powers neither overflow nor lose the largest terms; an all-zero
    # row keeps scale 1, and a row with inf keeps it so that inf / inf does not turn the norm into NaN
    scale = tl.max(peak, 1)
    scale = tl.where((scale > 0) & (scale < float("inf")), scale, 1.0)
    acc = {_TILE_ZEROS}
    for start in range(0, n_reduced, REDUCED_BLOCK):
        re, im, _ = $chunk
        ratio = _magnitude(re, im) / scale[:, None]
        acc += {power_of_ratio}
    total = tl.sum(acc, 1)
    _store_real(out_ptr, kept, kept_mask, scale * {root_of_total})
'''


_SCALED_2_NORM = _scaled_norm("ratio * ratio", "tl.sqrt(total)")
_NORM_BODIES = {
    ("2", "complex32"): _accumulating_norm("acc + re * re + im * im", "tl.sqrt(tl.sum(acc, 1))"),
    ("2", "bcomplex32"): _SCALED_2_NORM,
    "1": _accumulating_norm("acc + _magnitude(re, im)", "tl.sum(acc, 1)"),
    "0": _accumulating_norm("acc + tl.where((re != 0) | (im != 0), 1.0, 0.0)", "tl.sum(acc, 1)"),
    "inf": _accumulating_norm(
        "tl.maximum(acc, _magnitude(re, im), propagate_nan=tl.PropagateNan.ALL)", "tl.reduce(acc, 1, _nan_max)"
    ),
    "-inf": _accumulating_norm(
        'tl.minimum(acc, tl.where(mask, _magnitude(re, im), float("inf")), propagate_nan=tl.PropagateNan.ALL)',
        "tl.reduce(acc, 1, _nan_min)",
        initial='tl.full([KEPT_BLOCK, REDUCED_BLOCK], float("inf"), tl.float32)',
    ),
    "p": _scaled_norm("tl.exp2(ord * tl.log2(ratio))", "tl.exp2(tl.log2(total) / ord)"),
}

_POINTER_NAMES = {"out": "out_ptr", "mean_out": "mean_ptr"}
_CHUNK = ("_load_chunk(parts_ptr, row, kept_mask, start, n_reduced, reduced_size1, reduced_size2,\n"
          "            reduced_stride0, reduced_stride1, reduced_stride2, REDUCED_BLOCK)")


def _op_parts(params: dict) -> dict:
    """What differs between ops: kernel body, helpers, outputs and run-time scalars."""
    op, dtype = params["op"], params["dtype"]
    if op == "sum":
        return dict(body=_SUM, helpers=[_STORE_PAIR], outputs=["out"], scalars=[])
    if op == "mean":
        return dict(body=_MEAN, helpers=[_STORE_PAIR], outputs=["out"], scalars=[])
    if op == "prod":
        return dict(body=_PROD, helpers=[_COMPLEX_MUL, _STORE_PAIR], outputs=["out"], scalars=[])
    if op in VARIANCE_OPS:
        statistic = op.removesuffix("_mean")
        with_mean = op.endswith("_mean")
        return dict(
            body=_VARIANCE + _VARIANCE_STORES[statistic] + (_MEAN_STORE if with_mean else ""),
            helpers=[_STORE_REAL] + ([_STORE_PAIR] if with_mean else []),
            outputs=["out", "mean_out"] if with_mean else ["out"],
            scalars=["correction"],
        )
    if op == "vector_norm":
        order = params["ord"]
        body = _NORM_BODIES.get((order, dtype)) or _NORM_BODIES[order]
        helpers = [_MAGNITUDE[dtype]] if "_magnitude" in body else []
        helpers += [_NAN_MAX] if "_nan_max" in body else []
        helpers += [_NAN_MIN] if "_nan_min" in body else []
        return dict(body=body, helpers=helpers + [_STORE_REAL], outputs=["out"],
                    scalars=["ord"] if order == "p" else [])
    raise ValueError(f"unknown reduction {op!r}")


def render(params: dict) -> str:
    parts = _op_parts(params)
    part_dtype = common.TL_PART_DTYPE[params["dtype"]]
    helpers = "\n".join(common.render(h, part=part_dtype) for h in parts["helpers"])
    title = params["op"] + (f" (ord {params['ord']})" if params["op"] == "vector_norm" else "")
    return common.render(
        _MODULE,
        title=title,
        dtype=params["dtype"],
        mutates=repr(tuple(parts["outputs"])),
        helpers=helpers,
        kernel_arguments=", ".join([_POINTER_NAMES[name] for name in parts["outputs"]] + parts["scalars"]),
        body=common.render(parts["body"], chunk=_CHUNK).rstrip("\n"),
        collapse_dims=textwrap.dedent(inspect.getsource(common.collapse_dims)).rstrip("\n"),
        run_scalars="".join(f"{name}: float, " for name in parts["scalars"]),
        run_outputs=", ".join(f"{name}: torch.Tensor" for name in parts["outputs"]),
        output_names=", ".join(parts["outputs"]),
        scalar_names=", ".join(parts["scalars"]),
    )


def variants(dtype: str) -> list[dict]:
    ops = [{"op": op} for op in COMPLEX_RESULT_OPS + VARIANCE_OPS]
    ops += [{"op": "vector_norm", "ord": order} for order in NORM_ORDS]
    return [{**op, "dtype": dtype, "interpret": False} for op in ops]


# ---------------------------------------------------------------------------------------------------------
# ATen adapters


def prepare_outs(outs, specs, like: torch.Tensor, *, may_alias: bool = False) -> bool:
    """Check out= tensors against (shape, dtype) specs and resize them like ATen; False if any does not fit
    (nothing is resized then)."""
    for out, (_, dtype) in zip(outs, specs):
        if not isinstance(out, torch.Tensor) or out.dtype != dtype or out.device != like.device:
            return False
        if out.is_conj() or out.is_neg() or (not may_alias and common.shares_memory(out, like)):
            return False
    for out, (shape, _) in zip(outs, specs):
        common.resize_output(out, shape)
    return True


def _reduced_dims(x: torch.Tensor, dim) -> list[int] | None:
    """ATen's dims in ascending non-negative form: None or [] is every dim; None where ATen would raise."""
    dims = [] if dim is None else [dim] if isinstance(dim, int) else list(dim)
    rank = max(x.dim(), 1)
    if any(not -rank <= d < rank for d in dims):
        return None
    wrapped = sorted(d % rank for d in dims)
    if len(set(wrapped)) != len(wrapped):
        return None
    if x.dim() == 0:
        return []
    return wrapped or list(range(x.dim()))


def _result_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> list[int]:
    if keepdim:
        return [1 if d in dims else size for d, size in enumerate(x.shape)]
    return [size for d, size in enumerate(x.shape) if d not in dims]


def _norm_order(order) -> str | None:
    """The rendered order for a vector_norm `ord`, or None for orders left to the upcast path (negative)."""
    if isinstance(order, complex) or math.isnan(order):
        return None
    order = float(order)
    names = {2.0: "2", 1.0: "1", 0.0: "0", math.inf: "inf", -math.inf: "-inf"}
    return names.get(order) or ("p" if order > 0 else None)


def _correction(call: dict) -> float:
    if "unbiased" in call:
        return 1.0 if call["unbiased"] else 0.0
    return 1.0 if call.get("correction") is None else float(call["correction"])


def _reduction_adapter(op: str, name: str):
    def adapter(load, args, kwargs, device_type):
        plain = common.plain_self_call(name, args, kwargs)
        if plain is None:
            return NotImplemented
        call, x, dtype = plain
        dims = _reduced_dims(x, call.get("dim"))
        if dims is None:
            return NotImplemented
        params, scalars = {"op": op, "dtype": dtype}, []
        if op in VARIANCE_OPS:
            scalars.append(_correction(call))
        if op == "vector_norm":
            params["ord"] = _norm_order(call["ord"])
            if params["ord"] is None:
                return NotImplemented
            if params["ord"] == "p":
                scalars.append(float(call["ord"]))
            if params["ord"] in ("inf", "-inf") and any(x.shape[d] == 0 for d in dims):
                return NotImplemented  # ATen raises: these norms have no identity
        shape = _result_shape(x, dims, bool(call.get("keepdim")))
        real = REAL_DTYPES[dtype]
        specs = [(shape, x.dtype)] if op in COMPLEX_RESULT_OPS else [(shape, real)]
        if op.endswith("_mean"):
            specs.append((shape, x.dtype))
        output_names = [a for a, kwarg_only, _ in common.schema_arguments(name) if kwarg_only and a.startswith("out")]
        if output_names:
            outs = [call[o] for o in output_names]
            if not prepare_outs(outs, specs, x):
                return NotImplemented
        else:
            outs = [torch.empty(s, dtype=d, device=x.device) for s, d in specs]
        load(params)(x, dims, *scalars, *outs)
        return tuple(outs) if len(outs) > 1 else outs[0]

    adapter.__name__ = adapter.__qualname__ = f"adapt_{name.removeprefix('aten::').replace('.', '_')}"
    return adapter


_OVERLOADS = {
    "sum": ("aten::sum", "aten::sum.out", "aten::sum.dim_IntList", "aten::sum.IntList_out"),
    "mean": ("aten::mean", "aten::mean.dtype_out", "aten::mean.dim", "aten::mean.out"),
    "prod": ("aten::prod", "aten::prod.out", "aten::prod.dim_int", "aten::prod.int_out"),
    **{
        op: tuple(f"aten::{op}{suffix}" for suffix in ("", ".dim", ".correction", ".correction_out"))
        + ((f"aten::{op}.out",) if op in ("var", "std") else ())
        for op in VARIANCE_OPS
    },
    "vector_norm": ("aten::linalg_vector_norm", "aten::linalg_vector_norm.out"),
}

ATEN = {name: _reduction_adapter(op, name) for op, names in _OVERLOADS.items() for name in names}
