"""Scans of 16-bit complex tensors along one dim: cumsum and cumprod.

Layout, handled by the host code rendered into every module: the dims other than the scanned one (kept
dims) are merged where neighbours are contiguous in both input and output; the kernel indexes up to three of
them with explicit strides for each, so transposed and sliced inputs and outputs (including in-place scans of
non-contiguous tensors) are used in place. A layout that stays above three kept dims is scanned from a
contiguous copy into a contiguous temporary that is then copied into the output: the only copies made.
One program scans KEPT_BLOCK rows, walking the scanned dim in chunks of a [KEPT_BLOCK, SCAN_BLOCK] tile that
is wide along whichever side is faster in memory.

Numerics: parts are loaded as fp32, each chunk is scanned in fp32 (tl.cumsum; for cumprod a complex-multiply
tl.associative_scan over (re, im) pairs, which both the interpreter and compiled Triton support) and the
running value carried to the next chunk is fp32 too; every output element is rounded once on store. An
in-place scan is safe because each program reads a chunk of its own rows before writing that chunk.
"""

from __future__ import annotations

import inspect
import textwrap

import torch

from . import common
from .reductions import prepare_outs

FAMILY = "scans"

OPS = ("cumsum", "cumprod")

# ---------------------------------------------------------------------------------------------------------
# Template: module skeleton; $scan turns one loaded chunk (re, im) plus the carried (carry_re, carry_im) into
# the running values (run_re, run_im).

_MODULE = '''"""Rendered by kernels_templates.scans: $op along one dim of a $dtype tensor."""
import math

import torch
import triton
import triton.language as tl
from torch.library import wrap_triton

MUTATES = ("out",)

# Kept dims the kernel indexes after merging; unused ones get size 1, which Triton specializes to a
# constant, so their index arithmetic folds away.
KEPT_DIMS = 3
TILE = 1024
OUTER_KEPT_BLOCK = 64
$helpers

@triton.jit
def _scan_kernel(parts_ptr, out_ptr, n_kept, n_scanned, kept_size1, kept_size2,
                 x_kept_stride0, x_kept_stride1, x_kept_stride2, out_kept_stride0, out_kept_stride1, out_kept_stride2,
                 x_scan_stride, out_scan_stride, KEPT_BLOCK: tl.constexpr, SCAN_BLOCK: tl.constexpr):
    kept = tl.program_id(0).to(tl.int64) * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
    index0 = kept // (kept_size2 * kept_size1)
    index1 = kept // kept_size2 % kept_size1
    index2 = kept % kept_size2
    x_row = index0 * x_kept_stride0 + index1 * x_kept_stride1 + index2 * x_kept_stride2
    out_row = index0 * out_kept_stride0 + index1 * out_kept_stride1 + index2 * out_kept_stride2
    carry_re = tl.full([KEPT_BLOCK], $identity_re, tl.float32)
    carry_im = tl.zeros([KEPT_BLOCK], tl.float32)
    is_last = (tl.arange(0, SCAN_BLOCK) == SCAN_BLOCK - 1)[None, :]
    for start in range(0, n_scanned, SCAN_BLOCK):
        position = (start + tl.arange(0, SCAN_BLOCK)).to(tl.int64)
        mask = kept_mask[:, None] & (position < n_scanned)[None, :]
        x_pointers = parts_ptr + x_row[:, None] + (position * x_scan_stride)[None, :]
        # lanes past the end read the identity, so the last lane holds the chunk's final running value
        re = tl.load(x_pointers, mask=mask, other=$identity_re).to(tl.float32)
        im = tl.load(x_pointers + 1, mask=mask, other=0.0).to(tl.float32)
$scan
        out_pointers = out_ptr + out_row[:, None] + (position * out_scan_stride)[None, :]
        tl.store(out_pointers, run_re.to($part), mask=mask)
        tl.store(out_pointers + 1, run_im.to($part), mask=mask)
        carry_re = tl.sum(tl.where(is_last, run_re, 0.0), 1)
        carry_im = tl.sum(tl.where(is_last, run_im, 0.0), 1)


$collapse_dims


def _fastest(strides):
    return min((abs(s) for s in strides if s), default=math.inf)


def _launch(x, dim, out):
    parts, out_parts = torch.view_as_real(x), torch.view_as_real(out)
    sizes = list(x.shape) or [1]
    x_strides, out_strides = list(parts.stride())[:-1] or [0], list(out_parts.stride())[:-1] or [0]
    kept = [d for d in range(len(sizes)) if d != dim]
    kept_sizes, (x_kept, out_kept) = collapse_dims(
        [sizes[d] for d in kept], [x_strides[d] for d in kept], [out_strides[d] for d in kept])
    if len(kept_sizes) > KEPT_DIMS:
        contiguous = torch.empty(x.shape, dtype=out.dtype, device=out.device)
        _launch(x.contiguous(), dim, contiguous)
        out.copy_(contiguous)
        return
    n_kept, n_scanned = math.prod(kept_sizes), sizes[dim]
    scan_block_cap = triton.next_power_of_2(n_scanned)
    if abs(x_strides[dim]) <= _fastest(x_kept):
        scan_block = min(scan_block_cap, TILE)
        kept_block = min(triton.next_power_of_2(n_kept), TILE // scan_block)
    else:
        kept_block = min(triton.next_power_of_2(n_kept), OUTER_KEPT_BLOCK)
        scan_block = min(scan_block_cap, TILE // kept_block)
    padding = KEPT_DIMS - len(kept_sizes)
    kept_sizes, x_kept, out_kept = kept_sizes + [1] * padding, x_kept + [0] * padding, out_kept + [0] * padding
    wrap_triton(_scan_kernel)[(triton.cdiv(n_kept, kept_block),)](
        parts, out_parts, n_kept, n_scanned, *kept_sizes[1:], *x_kept, *out_kept,
        x_strides[dim], out_strides[dim], KEPT_BLOCK=kept_block, SCAN_BLOCK=scan_block)


def run(x: torch.Tensor, dim: int, out: torch.Tensor) -> None:
    """Scan x along `dim` (non-negative; 0 for a 0-d tensor) into `out`, which has x's shape and any strides
    (out may be x itself)."""
    if x.numel():
        _launch(x, dim, out)
'''

_COMPLEX_MUL = '''
@triton.jit
def _complex_mul(a_re, a_im, b_re, b_im):
    return a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re
'''

_OPS = {
    "cumsum": dict(
        identity_re="0.0",
        helpers="",
        scan='''
        run_re = tl.cumsum(re, 1) + carry_re[:, None]
        run_im = tl.cumsum(im, 1) + carry_im[:, None]''',
    ),
    "cumprod": dict(
        identity_re="1.0",
        helpers=_COMPLEX_MUL,
        scan='''
        scan_re, scan_im = tl.associative_scan((re, im), 1, _complex_mul)
        run_re, run_im = _complex_mul(carry_re[:, None], carry_im[:, None], scan_re, scan_im)''',
    ),
}


def render(params: dict) -> str:
    op = _OPS[params["op"]]
    return common.render(
        _MODULE,
        op=params["op"],
        dtype=params["dtype"],
        part=common.TL_PART_DTYPE[params["dtype"]],
        helpers=op["helpers"],
        identity_re=op["identity_re"],
        scan=op["scan"].lstrip("\n"),
        collapse_dims=textwrap.dedent(inspect.getsource(common.collapse_dims)).rstrip("\n"),
    )


def variants(dtype: str) -> list[dict]:
    return [{"op": op, "dtype": dtype, "interpret": False} for op in OPS]


# ---------------------------------------------------------------------------------------------------------
# ATen adapters


def _scan_dim(x: torch.Tensor, dim: int) -> int | None:
    rank = max(x.dim(), 1)
    return dim % rank if -rank <= dim < rank else None


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.shape, a.stride(), a.storage_offset()) == (b.shape, b.stride(), b.storage_offset())


def _scan_adapter(op: str, name: str):
    in_place = name.endswith("_")
    with_out = name.endswith(".out")

    def adapter(load, args, kwargs, device_type):
        plain = common.plain_self_call(name, args, kwargs)
        if plain is None:
            return NotImplemented
        call, x, dtype = plain
        dim = _scan_dim(x, call["dim"])
        if dim is None:
            return NotImplemented
        if in_place:
            if torch._debug_has_internal_overlap(x) == 1:
                return NotImplemented  # elements sharing memory: ATen refuses to write them
            out = x
        elif with_out:
            out = call["out"]
            if isinstance(out, torch.Tensor) and common.shares_memory(out, x) and not _same_view(out, x):
                return NotImplemented  # a partial overlap would read values already overwritten
            if not prepare_outs([out], [(x.shape, x.dtype)], x, may_alias=True):
                return NotImplemented
        else:
            out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
        load({"op": op, "dtype": dtype})(x, dim, out)
        return out

    adapter.__name__ = adapter.__qualname__ = f"adapt_{name.removeprefix('aten::').replace('.', '_')}"
    return adapter


ATEN = {
    name: _scan_adapter(op, name)
    for op in OPS
    for name in (f"aten::{op}", f"aten::{op}_", f"aten::{op}.out")
}
