"""The reductions family's kernels and their launcher, as real Triton code: sum, mean, prod (complex results), var,
std, var_mean, std_mean and linalg.vector_norm (real results) of 16-bit complex tensors over any dims.
reductions.py renders, per (op, ord, dtype), the few lines that bind a `Reduction` of this module to those params
and the torch-facing `run` (its arguments differ per op), and holds the ATen adapters.

Layout, handled by the host launcher (Reduction):
  * Kept and reduced dims are each merged where neighbours are contiguous with each other (reduced dims are
    first sorted by stride: a reduction may visit its elements in any order). The kernel indexes up to three
    kept and three reduced dims with explicit strides, so transposed, sliced and expanded inputs are read in
    place. A layout that stays above three of either is permuted (reduced dims last) and copied to a
    contiguous tensor first: the only place an input is copied.
  * A program reduces KEPT_BLOCK outputs over a range of the reduced length, in chunks of a
    [KEPT_BLOCK, REDUCED_BLOCK] tile that is wide along whichever side is faster in memory, so loads coalesce
    both for innermost reductions and for reductions over outer dims. When that side is one merged dim of
    adjacent (re, im) pairs, each tile row is loaded as one contiguous run of parts and split in registers:
    128-bit loads, where separate re and im loads compile to 16-bit ones.
  * Split reductions: when the outputs alone give fewer programs than FILL_PER_SM per SM (a full reduction has
    one output), the reduced length is cut into `splits` ranges. Each program writes fp32 partial values and a
    finish kernel combines them per output in a fixed order, so results are the same every run (no atomics).
    Ops that need a statistic of the whole row first (var, std and the rescaled norms, below) run in two
    steps; each program of the second step combines the first step's partials of its outputs itself.
  * Outputs are written contiguous; an out= tensor that is not is filled through a contiguous temporary.

Numerics: parts are loaded as fp32 and accumulated per tile lane in fp32; the result is rounded once on
store. For complex32 fp32 cannot overflow: |z|^2 <= 2 * 65504^2 ~ 8.6e9, so even a sum of squares overflows
only past ~4e28 elements, and a sum or 2-norm is inf exactly when the true result is outside fp16's range.
bfloat16 shares fp32's exponent range, so for bcomplex32 any intermediate that can exceed the final value is
rescaled: mean accumulates z / n, var and std accumulate ((z - mean) / peak)^2 with peak the row's largest
|re| or |im|, and p-norms (including the bcomplex32 2-norm) sum (|z| / max|z|)^p over an overflow-safe |z|.
For bcomplex32, partial sums in different tile lanes (or splits) can still overflow where huge terms of
opposite sign would cancel.

What an op computes is told by constexprs, one kernel for every op (the `if` on them is resolved when Triton
compiles, so each op compiles to its own code as if written alone):
  KIND       "sum", "mean", "prod"; "variance" (var, std and their _mean forms: step 1 the mean and the row's
             largest part, step 2 the squared deviations); "norm" (one step); "scaled_norm" (step 1 max |z|,
             step 2 the sum of (|z| / max |z|)^p: p-norms, and the 2-norm of bcomplex32)
  RESULT     variance: "var" or "std"; norms: the order ("2", "1", "0", "inf", "-inf", "p"); else ""
  WITH_MEAN  var_mean and std_mean store the mean too
  BF16       bf16 parts: |z| factors out the larger part (fp16 parts square without leaving fp32)
A step keeps up to three values per output (v0, v1, v2: sum's real and imaginary sums, variance's mean and peak);
a step that keeps fewer leaves the others untouched, and Triton drops them.
"""

import functools
import math

import torch
import triton
import triton.language as tl

from . import launcher
# the inf-norms must return NaN for a row holding one: tl.max / tl.min would drop it
from .complex_math import cmul, nan_maximum, nan_minimum
from .common import cdiv, collapse_dims, next_power_of_2

# Dims the kernel indexes after merging; unused ones get size 1, which Triton specializes to a constant,
# so their index arithmetic folds away.
KEPT_DIMS = 3
REDUCED_DIMS = 3
NUM_WARPS = 4
# The finish kernel's work is small; over 2 warps each thread stores 4 of an outer reduction's 256 outputs
# (64 bits and more).
FINISH_WARPS = 2
FILL_PER_SM = 2  # programs per SM below which a reduction is split
INTERPRETER_FILL = 4  # a few, so that the tests' small reductions take the split path too
# Splits come in multiples of this on GPUs, so that partials load as vectors (ranges past the end give
# identities); 4 keeps the interpreter's programs few while some ranges still fall past the end.
SPLIT_MULTIPLES = {False: 16, True: 4}
# (TILE, OUTER_KEPT_BLOCK): elements per tile (1024 over 4 warps is 8 per thread, two 128-bit loads of pairs), and
# the outputs an outer reduction takes per program (256: with 4 warps each thread then stores 2 or more values,
# 64-bit stores at least). The interpreter's are small, so that the tests' small tensors take several chunks and
# splits.
TILES = {False: (1024, 256), True: (64, 8)}

# -- kernels -------------------------------------------------------------------------------------------------


@triton.jit
def _load_chunk(parts_ptr, row, kept0, kept_mask, start, end, n_kept, size1, size2, stride0, stride1, stride2,
                KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr, ORDER: tl.constexpr):
    # ORDER: rows of adjacent pairs along the reduced side ("reduced pairs") or along the kept side ("kept
    # pairs"), or through the strides of every dim ("strided").
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


@triton.jit
def _magnitude(re, im, BF16: tl.constexpr):
    # fp16 parts square without leaving fp32; bf16 parts can reach ~3.4e38, so the larger part is factored out.
    if BF16:
        big = tl.maximum(tl.abs(re), tl.abs(im), propagate_nan=tl.PropagateNan.ALL)
        small = tl.minimum(tl.abs(re), tl.abs(im), propagate_nan=tl.PropagateNan.ALL)
        # equal parts (0 and 0, inf and inf) would make the ratio 0/0 or inf/inf
        ratio = tl.where(small == big, 1.0, small / big)
        return big * tl.sqrt(1.0 + ratio * ratio)
    else:
        return tl.sqrt(re * re + im * im)


@triton.jit
def _scale(peak):
    # deviations divided by the row's largest part (or |z|) keep their squares (powers) inside fp32 for any bf16
    # input; an all-zero row keeps scale 1, and so does a non-finite one (its deviations are NaN anyway, and
    # inf / inf would turn a norm into NaN)
    return tl.where((peak > 0) & (peak < float("inf")), peak, 1.0)


@triton.jit
def _identities(ROWS: tl.constexpr, COLS: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr):
    """[ROWS, COLS] tiles of a step's values at their identity, which is also the value of an empty range: 1 for a
    product's real part, inf for the -inf norm's minimum, else 0."""
    FIRST: tl.constexpr = 1.0 if KIND == "prod" else float("inf") if KIND == "norm" and RESULT == "-inf" else 0.0
    return (tl.full([ROWS, COLS], FIRST, tl.float32), tl.full([ROWS, COLS], 0.0, tl.float32),
            tl.full([ROWS, COLS], 0.0, tl.float32))


@triton.jit
def _fold(v0, v1, v2, re, im, mask, inverse_n, mean_re, mean_im, scale, scalar,
          STEP: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr, BF16: tl.constexpr):
    """One chunk (re and im tiles; mask: the lanes holding elements) folded into step STEP's per-lane values."""
    if KIND == "sum":
        v0 += re
        v1 += im
    elif KIND == "mean" or (KIND == "variance" and STEP == 1):
        v0 += re * inverse_n
        v1 += im * inverse_n
        if KIND == "variance":
            v2 = tl.maximum(v2, tl.maximum(tl.abs(re), tl.abs(im)))
    elif KIND == "prod":
        v0, v1 = cmul(v0, v1, tl.where(mask, re, 1.0), im)
    elif KIND == "variance":
        # two steps (mean, then squared deviations) rather than a one-pass update: exact enough to need no care
        deviation_re = tl.where(mask, (re - mean_re[:, None]) / scale[:, None], 0.0)
        deviation_im = tl.where(mask, (im - mean_im[:, None]) / scale[:, None], 0.0)
        v0 += deviation_re * deviation_re + deviation_im * deviation_im
    elif KIND == "scaled_norm" and STEP == 1:
        v0 = tl.maximum(v0, _magnitude(re, im, BF16))
    elif KIND == "scaled_norm":
        # |z| / max|z| lies in [0, 1], so its powers neither overflow nor lose the largest terms
        ratio = _magnitude(re, im, BF16) / scale[:, None]
        if RESULT == "p":
            v0 += tl.exp2(scalar * tl.log2(ratio))
        else:
            v0 += ratio * ratio
    elif RESULT == "2":
        v0 += re * re + im * im
    elif RESULT == "1":
        v0 += _magnitude(re, im, BF16)
    elif RESULT == "0":
        v0 += tl.where((re != 0) | (im != 0), 1.0, 0.0)
    elif RESULT == "inf":
        v0 = tl.maximum(v0, _magnitude(re, im, BF16), propagate_nan=tl.PropagateNan.ALL)
    else:
        v0 = tl.minimum(v0, tl.where(mask, _magnitude(re, im, BF16), float("inf")),
                        propagate_nan=tl.PropagateNan.ALL)
    return v0, v1, v2


@triton.jit
def _combine_lanes(v0, v1, v2, AXIS: tl.constexpr, STEP: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr):
    """Step STEP's values reduced along AXIS (a tile's lanes, or the splits' partials), each as it combines:
    sums, maxima (NaN dropped, like tl.max; or kept, for the inf-norms), complex products."""
    if KIND == "prod":
        v0, v1 = tl.reduce((v0, v1), AXIS, cmul)
    elif KIND == "norm" and RESULT == "inf":
        v0 = tl.reduce(v0, AXIS, nan_maximum)
    elif KIND == "norm" and RESULT == "-inf":
        v0 = tl.reduce(v0, AXIS, nan_minimum)
    elif KIND == "scaled_norm" and STEP == 1:
        v0 = tl.max(v0, AXIS)
    else:
        v0 = tl.sum(v0, AXIS)
        if KIND == "sum" or KIND == "mean" or (KIND == "variance" and STEP == 1):
            v1 = tl.sum(v1, AXIS)
        if KIND == "variance" and STEP == 1:
            v2 = tl.max(v2, AXIS)
    return v0, v1, v2


@triton.jit
def _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, size1, size2, stride0, stride1, stride2,
                inverse_n, mean_re, mean_im, scale, scalar, KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr,
                ORDER: tl.constexpr, STEP: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr,
                BF16: tl.constexpr):
    """Step STEP over this program's range [begin, end) of the reduced length: its values per output."""
    v0, v1, v2 = _identities(KEPT_BLOCK, REDUCED_BLOCK, KIND, RESULT)
    for start in range(begin, end, REDUCED_BLOCK):
        re, im, mask = _load_chunk(parts_ptr, row, kept0, kept_mask, start, end, n_kept, size1, size2, stride0,
                                   stride1, stride2, KEPT_BLOCK, REDUCED_BLOCK, ORDER)
        v0, v1, v2 = _fold(v0, v1, v2, re, im, mask, inverse_n, mean_re, mean_im, scale, scalar, STEP, KIND, RESULT,
                           BF16)
    return _combine_lanes(v0, v1, v2, 1, STEP, KIND, RESULT)


@triton.jit
def _store_partials(partials_ptr, v0, v1, v2, split, splits, FIRST: tl.constexpr, VALUES: tl.constexpr,
                    KEPT_BLOCK: tl.constexpr):
    # values FIRST.. of [value, output block, split, KEPT_BLOCK]: all KEPT_BLOCK lanes, past n_kept too (the finish
    # drops those): unmasked, contiguous stores
    tl.store(partials_ptr + ((FIRST * tl.num_programs(0) + tl.program_id(0)) * splits + split).to(tl.int64)
             * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK), v0)
    if VALUES > 1:
        tl.store(partials_ptr + (((FIRST + 1) * tl.num_programs(0) + tl.program_id(0)) * splits + split).to(tl.int64)
                 * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK), v1)
    if VALUES > 2:
        tl.store(partials_ptr + (((FIRST + 2) * tl.num_programs(0) + tl.program_id(0)) * splits + split).to(tl.int64)
                 * KEPT_BLOCK + tl.arange(0, KEPT_BLOCK), v2)


@triton.jit
def _combine_partials(partials_ptr, splits, FIRST: tl.constexpr, STEP: tl.constexpr, KIND: tl.constexpr,
                      RESULT: tl.constexpr, KEPT_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr):
    """Step STEP's values per output from its partials (values FIRST..), combined over the splits in order (lanes
    of SPLIT_CHUNK splits, then a tree across lanes: the same order every run). Partials are laid out [value,
    output block, split, KEPT_BLOCK], so each program's are one contiguous run: vector accesses whatever
    KEPT_BLOCK is."""
    VALUES: tl.constexpr = 3 if KIND == "variance" and STEP == 1 else 2 if KIND == "sum" or KIND == "mean" else 1
    IDENTITY: tl.constexpr = float("inf") if KIND == "norm" and RESULT == "-inf" else 0.0
    v0, v1, v2 = _identities(SPLIT_CHUNK, KEPT_BLOCK, KIND, RESULT)
    block = tl.program_id(0).to(tl.int64) * splits * KEPT_BLOCK
    value_stride = tl.num_programs(0).to(tl.int64) * splits * KEPT_BLOCK
    for first in range(0, splits, SPLIT_CHUNK):
        split = first + tl.arange(0, SPLIT_CHUNK)
        offsets = block + (split * KEPT_BLOCK)[:, None] + tl.arange(0, KEPT_BLOCK)[None, :]
        mask = (split < splits)[:, None]
        if KIND == "prod":
            v0_partial = tl.load(partials_ptr + FIRST * value_stride + offsets, mask=mask, other=1.0)
            v1_partial = tl.load(partials_ptr + (FIRST + 1) * value_stride + offsets, mask=mask, other=0.0)
            v0, v1 = cmul(v0, v1, v0_partial, v1_partial)
        else:
            v0_partial = tl.load(partials_ptr + FIRST * value_stride + offsets, mask=mask, other=IDENTITY)
            if KIND == "norm" and RESULT == "inf":
                v0 = nan_maximum(v0, v0_partial)
            elif KIND == "norm" and RESULT == "-inf":
                v0 = nan_minimum(v0, v0_partial)
            elif KIND == "scaled_norm" and STEP == 1:
                v0 = tl.maximum(v0, v0_partial)
            else:
                v0 = v0 + v0_partial
            if VALUES > 1:
                v1_partial = tl.load(partials_ptr + (FIRST + 1) * value_stride + offsets, mask=mask, other=0.0)
                v1 = v1 + v1_partial
            if VALUES > 2:
                v2_partial = tl.load(partials_ptr + (FIRST + 2) * value_stride + offsets, mask=mask, other=0.0)
                v2 = tl.maximum(v2, v2_partial)
    return _combine_lanes(v0, v1, v2, 0, STEP, KIND, RESULT)


@triton.jit
def _store_one_step(out_ptr, kept0, kept, kept_mask, n_kept, n_reduced, v0, v1, KIND: tl.constexpr,
                    RESULT: tl.constexpr, KEPT_BLOCK: tl.constexpr):
    """The output of a one-step reduction (sum, mean, prod, norm) from its values."""
    if KIND == "sum" or KIND == "prod":
        _store_pair(out_ptr, kept0, n_kept, v0, v1, KEPT_BLOCK)
    elif KIND == "mean":
        v0 = tl.where(n_reduced == 0, float("nan"), v0)
        v1 = tl.where(n_reduced == 0, float("nan"), v1)
        _store_pair(out_ptr, kept0, n_kept, v0, v1, KEPT_BLOCK)
    elif RESULT == "2":
        _store_real(out_ptr, kept, kept_mask, tl.sqrt(v0))
    else:
        _store_real(out_ptr, kept, kept_mask, v0)


@triton.jit
def _store_variance(out_ptr, mean_ptr, kept0, kept, kept_mask, n_kept, n_reduced, mean_re, mean_im, scale, squares,
                    correction, RESULT: tl.constexpr, WITH_MEAN: tl.constexpr, KEPT_BLOCK: tl.constexpr):
    ratio = squares / tl.maximum(n_reduced - correction, 0.0)
    if RESULT == "var":
        _store_real(out_ptr, kept, kept_mask, ratio * scale * scale)
    else:
        _store_real(out_ptr, kept, kept_mask, tl.sqrt(ratio) * scale)
    if WITH_MEAN:
        mean_re = tl.where(n_reduced == 0, float("nan"), mean_re)
        mean_im = tl.where(n_reduced == 0, float("nan"), mean_im)
        _store_pair(mean_ptr, kept0, n_kept, mean_re, mean_im, KEPT_BLOCK)


@triton.jit
def _store_scaled_norm(out_ptr, kept, kept_mask, scale, total, order, RESULT: tl.constexpr):
    if RESULT == "p":
        _store_real(out_ptr, kept, kept_mask, scale * tl.exp2(tl.log2(total) / order))
    else:
        _store_real(out_ptr, kept, kept_mask, scale * tl.sqrt(total))


@triton.jit
def _reduce_kernel(parts_ptr, out_ptr, mean_ptr, scalar, partials_ptr, n_kept, n_reduced, splits, per_split,
                   kept_size1, kept_size2, kept_stride0, kept_stride1, kept_stride2,
                   reduced_size1, reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2,
                   KEPT_BLOCK: tl.constexpr, REDUCED_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr,
                   ORDER: tl.constexpr, PHASE: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr,
                   WITH_MEAN: tl.constexpr, BF16: tl.constexpr):
    # PHASE 0: the whole reduction of KEPT_BLOCK outputs; PHASE p > 0: step p of a split reduction over this
    # program's range of the reduced length, written as partials. mean_ptr: where var_mean and std_mean store the
    # mean (other ops pass out_ptr and never write it); scalar: var's correction, the p-norm's order, or unused.
    # values step 1 keeps per output (its partials come first): sum's, mean's and prod's (re, im), variance's
    # (mean_re, mean_im, peak), the norms' one
    STEP1_VALUES: tl.constexpr = (3 if KIND == "variance" else
                                  2 if KIND == "sum" or KIND == "mean" or KIND == "prod" else 1)
    kept0 = tl.program_id(0).to(tl.int64) * KEPT_BLOCK
    kept = kept0 + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
    row = ((kept % kept_size2) * kept_stride2 + (kept // kept_size2 % kept_size1) * kept_stride1
           + kept // (kept_size2 * kept_size1) * kept_stride0)
    inverse_n = 1.0 / n_reduced
    if PHASE == 0:
        begin = 0
        end = n_reduced
        v0, v1, v2 = _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, reduced_size1, reduced_size2,
                                 reduced_stride0, reduced_stride1, reduced_stride2, inverse_n, 0.0, 0.0, 0.0, scalar,
                                 KEPT_BLOCK, REDUCED_BLOCK, ORDER, 1, KIND, RESULT, BF16)
        if KIND == "variance":
            scale = _scale(v2)
            squares, _, _ = _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, reduced_size1,
                                        reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2, inverse_n, v0,
                                        v1, scale, scalar, KEPT_BLOCK, REDUCED_BLOCK, ORDER, 2, KIND, RESULT, BF16)
            _store_variance(out_ptr, mean_ptr, kept0, kept, kept_mask, n_kept, n_reduced, v0, v1, scale, squares,
                            scalar, RESULT, WITH_MEAN, KEPT_BLOCK)
        elif KIND == "scaled_norm":
            scale = _scale(v0)
            total, _, _ = _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, reduced_size1,
                                      reduced_size2, reduced_stride0, reduced_stride1, reduced_stride2, inverse_n, 0.0,
                                      0.0, scale, scalar, KEPT_BLOCK, REDUCED_BLOCK, ORDER, 2, KIND, RESULT, BF16)
            _store_scaled_norm(out_ptr, kept, kept_mask, scale, total, scalar, RESULT)
        else:
            _store_one_step(out_ptr, kept0, kept, kept_mask, n_kept, n_reduced, v0, v1, KIND, RESULT, KEPT_BLOCK)
    elif PHASE == 1:
        split = tl.program_id(1)
        begin = split.to(tl.int64) * per_split
        end = tl.minimum(n_reduced, begin + per_split)
        v0, v1, v2 = _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, reduced_size1, reduced_size2,
                                 reduced_stride0, reduced_stride1, reduced_stride2, inverse_n, 0.0, 0.0, 0.0, scalar,
                                 KEPT_BLOCK, REDUCED_BLOCK, ORDER, 1, KIND, RESULT, BF16)
        _store_partials(partials_ptr, v0, v1, v2, split, splits, 0, STEP1_VALUES, KEPT_BLOCK)
    else:
        # step 2 starts from step 1's values, combined from all its partials
        v0, v1, v2 = _combine_partials(partials_ptr, splits, 0, 1, KIND, RESULT, KEPT_BLOCK, SPLIT_CHUNK)
        scale = _scale(v2 if KIND == "variance" else v0)
        split = tl.program_id(1)
        begin = split.to(tl.int64) * per_split
        end = tl.minimum(n_reduced, begin + per_split)
        total, _, _ = _accumulate(parts_ptr, row, kept0, kept_mask, begin, end, n_kept, reduced_size1, reduced_size2,
                                  reduced_stride0, reduced_stride1, reduced_stride2, inverse_n, v0, v1, scale, scalar,
                                  KEPT_BLOCK, REDUCED_BLOCK, ORDER, 2, KIND, RESULT, BF16)
        _store_partials(partials_ptr, total, total, total, split, splits, STEP1_VALUES, 1, KEPT_BLOCK)


@triton.jit
def _finish_kernel(partials_ptr, out_ptr, mean_ptr, scalar, n_kept, n_reduced, splits,
                   KEPT_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr, KIND: tl.constexpr, RESULT: tl.constexpr,
                   WITH_MEAN: tl.constexpr):
    STEP1_VALUES: tl.constexpr = (3 if KIND == "variance" else
                                  2 if KIND == "sum" or KIND == "mean" or KIND == "prod" else 1)
    kept0 = tl.program_id(0).to(tl.int64) * KEPT_BLOCK
    kept = kept0 + tl.arange(0, KEPT_BLOCK)
    kept_mask = kept < n_kept
    v0, v1, v2 = _combine_partials(partials_ptr, splits, 0, 1, KIND, RESULT, KEPT_BLOCK, SPLIT_CHUNK)
    if KIND == "variance":
        scale = _scale(v2)
        squares, _, _ = _combine_partials(partials_ptr, splits, STEP1_VALUES, 2, KIND, RESULT, KEPT_BLOCK,
                                          SPLIT_CHUNK)
        _store_variance(out_ptr, mean_ptr, kept0, kept, kept_mask, n_kept, n_reduced, v0, v1, scale, squares, scalar,
                        RESULT, WITH_MEAN, KEPT_BLOCK)
    elif KIND == "scaled_norm":
        scale = _scale(v0)
        total, _, _ = _combine_partials(partials_ptr, splits, STEP1_VALUES, 2, KIND, RESULT, KEPT_BLOCK, SPLIT_CHUNK)
        _store_scaled_norm(out_ptr, kept, kept_mask, scale, total, scalar, RESULT)
    else:
        _store_one_step(out_ptr, kept0, kept, kept_mask, n_kept, n_reduced, v0, v1, KIND, RESULT, KEPT_BLOCK)


# -- host launcher -------------------------------------------------------------------------------------------


def _fastest(strides):
    return min((abs(s) for s in strides if s), default=math.inf)


def _padded(sizes, strides, count):
    return sizes + [1] * (count - len(sizes)), strides + [0] * (count - len(strides))


_reduce_launcher = launcher.launcher(_reduce_kernel)
_finish_launcher = launcher.launcher(_finish_kernel)


class Reduction:
    """One rendered module's reduction: op "sum", "mean", "prod", "var", "std", "var_mean", "std_mean" or
    "vector_norm" (of order `ord`: "2", "1", "0", "inf", "-inf", "p"); bf16: bcomplex32 inputs; interpret: launched
    in Triton's CPU interpreter (small tiles, a fixed fill)."""

    def __init__(self, op: str, bf16: bool, interpret: bool, ord=None) -> None:
        if op in ("var", "std", "var_mean", "std_mean"):
            kind, result, with_mean = "variance", op.removesuffix("_mean"), op.endswith("_mean")
        elif op == "vector_norm":
            kind, result, with_mean = "scaled_norm" if ord == "p" or (ord == "2" and bf16) else "norm", ord, False
        else:
            kind, result, with_mean = op, "", False
        self.kind = kind
        self.phases = 2 if kind in ("variance", "scaled_norm") else 1
        step1_values = 3 if kind == "variance" else 2 if kind in ("sum", "mean", "prod") else 1
        self.partial_values = step1_values + self.phases - 1  # one value in step 2
        self.constexprs = dict(KIND=kind, RESULT=result, WITH_MEAN=with_mean, BF16=bf16)
        self.finish_constexprs = dict(KIND=kind, RESULT=result, WITH_MEAN=with_mean)
        self.tile, self.outer_kept_block = TILES[interpret]
        self.split_multiple = SPLIT_MULTIPLES[interpret]
        self.interpret = interpret
        # in the launcher's keys: the kernels are every module's, and these params set their constexprs
        self.tag = f"{op} ord={ord} bf16={bf16} interpret={interpret}"
        self._geometry = functools.lru_cache(maxsize=512)(self._geometry_of)
        # per module and device: a process that compiles for several arches (`jitdtypes warm --arch`,
        # benchmarks/aot_check.py) renders a module per arch, whose device queries answer for that arch
        self._fill = functools.lru_cache(maxsize=None)(self._fill_of)

    def run(self, x, dims, scalars, outputs):
        """Reduce x over `dims` (ascending, non-negative; every dim of x for a full reduction) into `outputs`
        (out, and mean_out for var_mean and std_mean), which already have the result's shape (with or without the
        kept size-1 dims); scalars: [correction] for variance ops, [ord] for p-norms, else []."""
        targets = [t if t.is_contiguous() else torch.empty(t.shape, dtype=t.dtype, device=t.device) for t in outputs]
        if targets[0].numel():
            with launcher.on_device_of(x):
                self.launch(x, dims, targets, scalars)
        for target, output in zip(targets, outputs):
            if target is not output:
                output.copy_(target)

    def _fill_of(self, device):
        """Programs that fill the device."""
        if self.interpret:
            return INTERPRETER_FILL
        return FILL_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count

    def _splits(self, kept_programs, chunks, device):
        """Ranges the reduced length is cut into: 1 when the outputs alone fill the device, else enough for twice
        the fill (one chunk each at least)."""
        fill = self._fill(device)
        if kept_programs >= fill or chunks < 2:
            return 1
        return cdiv(min(cdiv(2 * fill, kept_programs), chunks), self.split_multiple) * self.split_multiple

    def _geometry_of(self, sizes, strides, dims, device):
        """What a launch over x (sizes, strides in complex elements) reducing `dims` takes besides pointers and
        scalars: (grid programs, splits, the geometry arguments, the reduce kernel's constexprs per launch, the
        finish kernel's, the partials' shape), or None when more dims survive collapsing than the kernel indexes.
        Kept per shape, layout and device (self._geometry)."""
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
            reduced_block = min(reduced_block_cap, self.tile)
            kept_block = min(next_power_of_2(n_kept), self.tile // reduced_block)
            order = "reduced pairs" if reduced_strides == [2] else "strided"
        else:
            kept_block = min(next_power_of_2(n_kept), self.outer_kept_block)
            reduced_block = min(reduced_block_cap, self.tile // kept_block)
            order = "kept pairs" if kept_strides == [2] else "strided"
        kept_programs = cdiv(n_kept, kept_block)
        chunks = cdiv(n_reduced, reduced_block)
        splits = self._splits(kept_programs, chunks, device)
        kept_sizes, kept_strides = _padded(kept_sizes, kept_strides, KEPT_DIMS)
        reduced_sizes, reduced_strides = _padded(reduced_sizes, reduced_strides, REDUCED_DIMS)
        geometry = (n_kept, n_reduced, splits, reduced_block * cdiv(chunks, splits), *kept_sizes[1:],
                    *kept_strides, *reduced_sizes[1:], *reduced_strides)
        blocks = dict(KEPT_BLOCK=kept_block, REDUCED_BLOCK=reduced_block, ORDER=order, num_warps=NUM_WARPS)
        split_chunk = min(next_power_of_2(splits), max(1, self.tile // kept_block))
        # shared by every launch of this geometry: launches only read them
        phases = range(1, self.phases + 1) if splits > 1 else [0]
        constexprs = [dict(SPLIT_CHUNK=split_chunk if phase else 1, PHASE=phase, **blocks, **self.constexprs)
                      for phase in phases]
        finish_constexprs = dict(KEPT_BLOCK=kept_block, SPLIT_CHUNK=split_chunk, **self.finish_constexprs,
                                 num_warps=FINISH_WARPS)
        partials_shape = (self.partial_values, kept_programs, splits, kept_block)
        return kept_programs, splits, geometry, constexprs, finish_constexprs, partials_shape

    def launch(self, x, dims, outputs, scalars, eager=False):
        """The launches reducing x over `dims` into contiguous `outputs`, on the current device. Complex tensors go
        to the launcher as they are: it reads them through view_as_real (launcher.Launcher.launch_pointers). eager:
        the caller holds real tensors outside any tracing, whatever wrap_triton's switch says."""
        key = (x.shape, x.stride(), tuple(dims), x.device)
        # traced sizes may be symbolic
        found = self._geometry(*key) if eager or not launcher.traced() else self._geometry_of(*key)
        if found is None:
            kept = [d for d in range(x.dim()) if d not in dims]
            reduced = sorted(dims, key=lambda d: -abs(x.stride(d)))
            flat = x.permute(kept + reduced).contiguous()
            return self.launch(flat, list(range(len(kept), x.dim())), outputs, scalars, eager)
        _launch_geometry(found, (*key, self.tag, *map(type, scalars)), x, outputs, scalars, eager)

    def prepared_launch(self, x, dims, scalars):
        """For an adapter's plan: (x, outputs, scalars) -> launch(x, dims, outputs, scalars, eager=True) for tensors
        of this x's shape, strides and device and scalars of these types, with launch's geometry looked up now;
        None where launch would first copy x (more dims than the kernel indexes)."""
        key = (x.shape, x.stride(), tuple(dims), x.device)
        found = self._geometry(*key)
        if found is None:
            return None
        return functools.partial(_launch_geometry, found, (*key, self.tag, *map(type, scalars)), eager=True)


def _launch_geometry(found, key, x, outputs, scalars, eager):
    """The launches of Reduction._geometry_of's `found`, kept under `key` (which determines it and the scalars'
    types). The kernels take out and mean pointers and one scalar: an op without a mean passes out again, one
    without a scalar 0.0."""
    kept_programs, splits, geometry, constexprs, finish_constexprs, partials_shape = found
    out, mean, scalar = outputs[0], outputs[-1], scalars[0] if scalars else 0.0
    if splits == 1:
        # x is passed twice: the key says so, one alignment covers both
        _reduce_launcher.launch_pointers(
            key, (kept_programs, 1), (x, out, mean, scalar, x, *geometry), constexprs[0], (x, *outputs), eager)
        return
    partials = torch.empty(partials_shape, dtype=torch.float32, device=x.device)
    for phase in range(1, len(constexprs) + 1):
        _reduce_launcher.launch_pointers(
            (key, phase), (kept_programs, splits), (x, out, mean, scalar, partials, *geometry), constexprs[phase - 1],
            (x, *outputs, partials), eager)
    _finish_launcher.launch_pointers(
        key, (kept_programs,), (partials, out, mean, scalar, *geometry[:3]), finish_constexprs, (partials, *outputs),
        eager)
