"""The source of a rendered reduction module (see reductions.py): kernels, host launcher and `run`, with $name
placeholders for what differs between ops, and the @jit helpers ops pick from."""

MODULE = '''"""Rendered by kernels_templates.reductions: $title of a $dtype tensor over any dims."""
import functools
import math

import torch
import triton
import triton.language as tl
from kernels_templates.common import cdiv, next_power_of_2
from kernels_templates.launcher import launcher, on_device_of, traced

MUTATES = $mutates

# Dims the kernel indexes after merging; unused ones get size 1, which Triton specializes to a constant,
# so their index arithmetic folds away.
KEPT_DIMS = 3
REDUCED_DIMS = 3
# Elements per tile: 1024 over 4 warps is 8 per thread, two 128-bit loads of pairs.
TILE = $tile
OUTER_KEPT_BLOCK = $outer_kept_block
NUM_WARPS = 4
# The finish kernel's work is small; over 2 warps each thread stores 4 of an outer reduction's 256 outputs
# (64 bits and more).
FINISH_WARPS = 2
# How _load_chunk reads a tile (ORDER): rows of adjacent pairs along the reduced side ("reduced pairs") or
# along the kept side ("kept pairs"), or through the strides of every dim ("strided").
PHASES = $phases
PARTIAL_VALUES = $partial_values
# Splits come in multiples of this, so that partials load as vectors (ranges past the end give identities).
SPLIT_MULTIPLE = $split_multiple
$helpers

@triton.jit
def _load_chunk(parts_ptr, row, kept0, kept_mask, start, end, n_kept, size1, size2, stride0, stride1, stride2,
                KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr, ORDER: tl.constexpr):
    r = start + tl.arange(0, REDUCED_BLOCK)
    mask = kept_mask[:, None] & (r < end)[None, :]
    if ORDER == "reduced pairs":
        parts = 2 * start + tl.arange(0, 2 * REDUCED_BLOCK)
        pair_mask = kept_mask[:, None] & (parts < 2 * end)[None, :]
        values = tl.load(parts_ptr + row[:, None] + parts[None, :], mask=pair_mask, other=0.0)
        re, im = tl.split(tl.reshape(values, [KEPT_BLOCK, REDUCED_BLOCK, 2]))
    else:
        # index arithmetic in the loop counter's width, addresses in int64
        offset = ((r % size2).to(tl.int64) * stride2 + (r // size2 % size1).to(tl.int64) * stride1
                  + (r // (size2 * size1)).to(tl.int64) * stride0)
        if ORDER == "kept pairs":
            parts = 2 * kept0 + tl.arange(0, 2 * KEPT_BLOCK)
            pair_mask = (r < end)[:, None] & (parts < 2 * n_kept)[None, :]
            values = tl.load(parts_ptr + offset[:, None] + parts[None, :], mask=pair_mask, other=0.0)
            re_t, im_t = tl.split(tl.reshape(values, [REDUCED_BLOCK, KEPT_BLOCK, 2]))
            re = tl.trans(re_t)
            im = tl.trans(im_t)
        else:
            pointers = parts_ptr + row[:, None] + offset[None, :]
            re = tl.load(pointers, mask=mask, other=0.0)
            im = tl.load(pointers + 1, mask=mask, other=0.0)
    return re.to(tl.float32), im.to(tl.float32), mask


@triton.jit
def _store_pair(out_ptr, kept0, n_kept, re, im, KEPT_BLOCK: tl.constexpr):
    # outputs are contiguous: the pairs of KEPT_BLOCK outputs are one run of parts
    parts = 2 * kept0 + tl.arange(0, 2 * KEPT_BLOCK)
    pairs = tl.join(re.to(out_ptr.dtype.element_ty), im.to(out_ptr.dtype.element_ty))
    tl.store(out_ptr + parts, tl.reshape(pairs, [2 * KEPT_BLOCK]), mask=parts < 2 * n_kept)


@triton.jit
def _store_real(out_ptr, kept, kept_mask, value):
    tl.store(out_ptr + kept, value.to(out_ptr.dtype.element_ty), mask=kept_mask)


$combine_helpers


@triton.jit
def _reduce_kernel(parts_ptr, $kernel_arguments, partials_ptr, n_kept, n_reduced, splits, per_split,
                   kept_size1, kept_size2, kept_stride0, kept_stride1, kept_stride2,
                   reduced_size1, reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2,
                   KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr,
                   ORDER: tl.constexpr, PHASE: tl.constexpr):
    # PHASE 0: the whole reduction of KEPT_BLOCK outputs; PHASE p > 0: phase p of a split reduction over this
    # program's range of the reduced length, written as partials
    kept0 = tl.program_id(0).to(tl.int64) * KEPT_BLOCK
    kept = kept0 + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
    row = ((kept % kept_size2) * kept_stride2 + (kept // kept_size2 % kept_size1) * kept_stride1
           + kept // (kept_size2 * kept_size1) * kept_stride0)
    inverse_n = 1.0 / n_reduced
$reduce_body


@triton.jit
def _finish_kernel(partials_ptr, $kernel_arguments, n_kept, n_reduced, splits,
                   KEPT_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr):
    kept0 = tl.program_id(0).to(tl.int64) * KEPT_BLOCK
    kept = kept0 + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
$finish_body


$collapse_dims


def _fastest(strides):
    return min((abs(s) for s in strides if s), default=math.inf)


def _padded(sizes, strides, count):
    return sizes + [1] * (count - len(sizes)), strides + [0] * (count - len(strides))


@functools.lru_cache(maxsize=None)
def _fill(device):
    """Programs that fill the device."""
    return $fill


def _splits(kept_programs, chunks, device):
    """Ranges the reduced length is cut into: 1 when the outputs alone fill the device, else enough for twice
    the fill (one chunk each at least)."""
    fill = _fill(device)
    if kept_programs >= fill or chunks < 2:
        return 1
    return cdiv(min(cdiv(2 * fill, kept_programs), chunks), SPLIT_MULTIPLE) * SPLIT_MULTIPLE


@functools.lru_cache(maxsize=512)
def _geometry(sizes, strides, dims, device):
    """What a launch over x (sizes, strides in complex elements) reducing `dims` takes besides pointers and
    scalars: (grid programs, splits, the geometry arguments, the reduce kernel's constexprs per launch, the finish
    kernel's), or None when more dims survive collapsing than the kernel indexes. Computed once per shape, layout and device."""
    strides = [2 * stride for stride in strides]  # in parts
    kept = [d for d in range(len(sizes)) if d not in dims]
    reduced = sorted(dims, key=lambda d: -abs(strides[d]))
    kept_sizes, (kept_strides,) = collapse_dims([sizes[d] for d in kept], [strides[d] for d in kept])
    reduced_sizes, (reduced_strides,) = collapse_dims([sizes[d] for d in reduced], [strides[d] for d in reduced])
    if len(kept_sizes) > KEPT_DIMS or len(reduced_sizes) > REDUCED_DIMS:
        return None
    n_kept, n_reduced = math.prod(kept_sizes), math.prod(reduced_sizes)
    reduced_block_cap = next_power_of_2(max(n_reduced, 1))
    if _fastest(reduced_strides) <= _fastest(kept_strides):
        reduced_block = min(reduced_block_cap, TILE)
        kept_block = min(next_power_of_2(n_kept), TILE // reduced_block)
        order = "reduced pairs" if reduced_strides == [2] else "strided"
    else:
        kept_block = min(next_power_of_2(n_kept), OUTER_KEPT_BLOCK)
        reduced_block = min(reduced_block_cap, TILE // kept_block)
        order = "kept pairs" if kept_strides == [2] else "strided"
    kept_programs = cdiv(n_kept, kept_block)
    chunks = cdiv(n_reduced, reduced_block)
    splits = _splits(kept_programs, chunks, device)
    kept_sizes, kept_strides = _padded(kept_sizes, kept_strides, KEPT_DIMS)
    reduced_sizes, reduced_strides = _padded(reduced_sizes, reduced_strides, REDUCED_DIMS)
    geometry = (n_kept, n_reduced, splits, reduced_block * cdiv(chunks, splits), *kept_sizes[1:],
                *kept_strides, *reduced_sizes[1:], *reduced_strides)
    blocks = dict(KEPT_BLOCK=kept_block, REDUCED_BLOCK=reduced_block, ORDER=order, num_warps=NUM_WARPS)
    split_chunk = min(next_power_of_2(splits), max(1, TILE // kept_block))
    # shared by every launch of this geometry: launches only read them
    phases = range(1, PHASES + 1) if splits > 1 else [0]
    constexprs = [dict(SPLIT_CHUNK=split_chunk if phase else 1, PHASE=phase, **blocks) for phase in phases]
    finish_constexprs = dict(KEPT_BLOCK=kept_block, SPLIT_CHUNK=split_chunk, num_warps=FINISH_WARPS)
    return kept_programs, splits, geometry, constexprs, finish_constexprs


def launch(x, dims, outputs, scalars, eager=False):
    """The launches reducing x over `dims` into contiguous `outputs`, on the current device. Complex tensors go
    to the launcher as they are: it reads them through view_as_real (launcher.Launcher.launch_pointers). eager:
    the caller holds real tensors outside any tracing, whatever wrap_triton's switch says."""
    key = (x.shape, x.stride(), tuple(dims), x.device)
    # traced sizes may be symbolic
    found = _geometry(*key) if eager or not traced() else _geometry.__wrapped__(*key)
    if found is None:
        kept = [d for d in range(x.dim()) if d not in dims]
        reduced = sorted(dims, key=lambda d: -abs(x.stride(d)))
        flat = x.permute(kept + reduced).contiguous()
        return launch(flat, list(range(len(kept), x.dim())), outputs, scalars, eager)
    _launch_geometry(found, key + tuple(map(type, scalars)), x, outputs, scalars, eager)


def prepared_launch(x, dims, scalars):
    """For an adapter's plan: (x, outputs, scalars) -> launch(x, dims, outputs, scalars, eager=True) for tensors
    of this x's shape, strides and device and scalars of these types, with launch's geometry looked up now;
    None where launch would first copy x (more dims than the kernel indexes)."""
    key = (x.shape, x.stride(), tuple(dims), x.device)
    found = _geometry(*key)
    if found is None:
        return None
    return functools.partial(_launch_geometry, found, key + tuple(map(type, scalars)), eager=True)


def _launch_geometry(found, key, x, outputs, scalars, eager):
    """The launches of _geometry's `found`, kept under `key` (which determines it and the scalars' types)."""
    kept_programs, splits, geometry, constexprs, finish_constexprs = found
    if splits == 1:
        # x is passed twice: the key says so, one alignment covers both
        launcher(_reduce_kernel).launch_pointers(
            key, (kept_programs, 1), (x, *outputs, *scalars, x, *geometry), constexprs[0], (x, *outputs), eager)
        return
    partials = torch.empty((PARTIAL_VALUES, kept_programs, splits, finish_constexprs["KEPT_BLOCK"]),
                           dtype=torch.float32, device=x.device)
    for phase in range(1, PHASES + 1):
        launcher(_reduce_kernel).launch_pointers(
            (key, phase), (kept_programs, splits), (x, *outputs, *scalars, partials, *geometry), constexprs[phase - 1],
            (x, *outputs, partials), eager)
    launcher(_finish_kernel).launch_pointers(
        key, (kept_programs,), (partials, *outputs, *scalars, *geometry[:3]), finish_constexprs, (partials, *outputs),
        eager)


def run(x: torch.Tensor, dims: list[int], $run_scalars$run_outputs) -> None:
    """Reduce x over `dims` (ascending, non-negative; every dim of x for a full reduction) into the output
    tensor(s), which already have the result's shape (with or without the kept size-1 dims)."""
    outputs = [$output_names]
    targets = [t if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in outputs]
    if targets[0].numel():
        with on_device_of(x):
            launch(x, dims, targets, [$scalar_names])
    for target, output in zip(targets, outputs):
        if target is not output:
            output.copy_(target)
'''

COMPLEX_MUL = '''
@triton.jit
def _complex_mul(a_re, a_im, b_re, b_im):
    return a_re * b_re - a_im * b_im, a_re * b_im + a_im * b_re
'''

# fp16 parts square without leaving fp32; bf16 parts can reach ~3.4e38, so the larger part is factored out.
MAGNITUDE = {
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
NAN_MAX = '''
@triton.jit
def _nan_max(a, b):
    return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)
'''

NAN_MIN = '''
@triton.jit
def _nan_min(a, b):
    return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)
'''
