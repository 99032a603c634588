"""The scans family's kernels and their launcher, as real Triton code: cumsum and cumprod of 16-bit complex
tensors along one dim. scans.py renders, per (op, dtype), the few lines that bind a `Scan` of this module to
those params, and holds the ATen adapters.

Layout, handled by the host launcher (Scan): the dims other than the scanned one (kept
dims) are merged where neighbours are contiguous in both input and output; the kernel indexes up to three of
them with explicit strides for each, so transposed and sliced inputs and outputs (including in-place scans of
non-contiguous tensors) are used in place. A layout that stays above three kept dims is scanned from a
contiguous copy into a contiguous temporary that is then copied into the output: the only copies made.
A program scans KEPT_BLOCK rows over a range of the scanned dim, in chunks of a [KEPT_BLOCK, SCAN_BLOCK] tile
that is wide along whichever side is faster in memory. When that side holds adjacent (re, im) pairs in both
input and output, tile rows move as contiguous runs of parts split or joined in registers (128-bit accesses).

Long scans over few rows are split into ranges of the scanned dim (block scan, then propagate): a first
kernel writes each range's total (sum, or complex product) per row as fp32; the scan kernel then starts each
range from the combination of the totals of the ranges before it, taken in a fixed order, so results are
the same every run (no atomics, no look-back races).

Numerics: parts are loaded as fp32, each chunk is scanned in fp32 (tl.cumsum; for cumprod a complex-multiply
tl.associative_scan over (re, im) pairs, which both the interpreter and compiled Triton support) and the
running value carried to the next chunk is fp32 too; every output element is rounded once on store. An
in-place scan is safe because the totals are computed before any write and each program reads a chunk of its
own range before writing that chunk.

What differs between the modules scans.py renders is the constexpr OP ("cumsum" or "cumprod"): the identity
(0 or 1), and how a chunk is scanned and two (re, im) values combine (sum, or complex product).
"""

import functools
import math

import torch
import triton
import triton.language as tl

from . import launcher
from .complex_math import cmul
from .common import cdiv, collapse_dims, next_power_of_2

# Kept dims the kernel indexes after merging; unused ones get size 1, which Triton specializes to a
# constant, so their index arithmetic folds away.
KEPT_DIMS = 3
NUM_WARPS = 4
FILL_PER_SM = 2  # programs per SM below which a scan is split into ranges
INTERPRETER_FILL = 4  # a few, so that the tests' small scans take the split path too
# Ranges come in multiples of this on GPUs, so that totals load as vectors (ranges past the end hold identities);
# 4 keeps the interpreter's programs few while some ranges still fall past the end.
SPLIT_MULTIPLES = {False: 16, True: 4}
# (TILE, OUTER_KEPT_BLOCK): elements per tile (1024 over 4 warps is 8 per thread, two 128-bit accesses of pairs),
# and the rows an outer scan takes per program (256: over 4 warps every thread then moves 4 parts or more of a
# chunk row). The interpreter's are small, so that the tests' small tensors take several chunks and ranges.
TILES = {False: (1024, 256), True: (64, 8)}

# -- kernels -------------------------------------------------------------------------------------------------


@triton.jit
def cadd(a_re, a_im, b_re, b_im):
    return a_re + b_re, a_im + b_im


@triton.jit
def _chunk_offsets(row, kept_mask, start, end, scan_stride, kept0, n_kept, KEPT_BLOCK: tl.constexpr,
                   SCAN_BLOCK: tl.constexpr, ORDER: tl.constexpr):
    """Part offsets of the chunk at `start` and their mask: [KEPT_BLOCK, 2 * SCAN_BLOCK] runs along the scanned
    dim ("scan pairs"), [SCAN_BLOCK, 2 * KEPT_BLOCK] runs along the kept dim ("kept pairs"), or the
    [KEPT_BLOCK, SCAN_BLOCK] offsets of the real parts ("strided")."""
    if ORDER == "scan pairs":
        parts = 2 * start + tl.arange(0, 2 * SCAN_BLOCK)
        offsets = row[:, None] + parts[None, :]
        mask = kept_mask[:, None] & (parts < 2 * end)[None, :]
    else:
        position = (start + tl.arange(0, SCAN_BLOCK)).to(tl.int64)
        if ORDER == "kept pairs":
            parts = 2 * kept0 + tl.arange(0, 2 * KEPT_BLOCK)
            offsets = (position * scan_stride)[:, None] + parts[None, :]
            mask = (position < end)[:, None] & (parts < 2 * n_kept)[None, :]
        else:
            offsets = row[:, None] + (position * scan_stride)[None, :]
            mask = kept_mask[:, None] & (position < end)[None, :]
    return offsets, mask


@triton.jit
def _load_chunk(ptr, offsets, mask, KEPT_BLOCK: tl.constexpr, SCAN_BLOCK: tl.constexpr, ORDER: tl.constexpr,
                OP: tl.constexpr):
    # lanes past the end read the identity, so the last lane holds the chunk's final running value
    IDENTITY: tl.constexpr = 1.0 if OP == "cumprod" else 0.0
    if ORDER == "scan pairs":
        identity = tl.where((tl.arange(0, 2 * SCAN_BLOCK) % 2 == 0)[None, :], IDENTITY, 0.0)
        values = tl.load(ptr + offsets, mask=mask, other=identity).to(tl.float32)
        re, im = tl.split(tl.reshape(values, [KEPT_BLOCK, SCAN_BLOCK, 2]))
    elif ORDER == "kept pairs":
        identity = tl.where((tl.arange(0, 2 * KEPT_BLOCK) % 2 == 0)[None, :], IDENTITY, 0.0)
        values = tl.load(ptr + offsets, mask=mask, other=identity).to(tl.float32)
        re_t, im_t = tl.split(tl.reshape(values, [SCAN_BLOCK, KEPT_BLOCK, 2]))
        re = tl.trans(re_t)
        im = tl.trans(im_t)
    else:
        re = tl.load(ptr + offsets, mask=mask, other=IDENTITY).to(tl.float32)
        im = tl.load(ptr + offsets + 1, mask=mask, other=0.0).to(tl.float32)
    return re, im


@triton.jit
def _store_chunk(ptr, offsets, mask, re, im, KEPT_BLOCK: tl.constexpr, SCAN_BLOCK: tl.constexpr,
                 ORDER: tl.constexpr):
    re = re.to(ptr.dtype.element_ty)
    im = im.to(ptr.dtype.element_ty)
    if ORDER == "scan pairs":
        tl.store(ptr + offsets, tl.reshape(tl.join(re, im), [KEPT_BLOCK, 2 * SCAN_BLOCK]), mask=mask)
    elif ORDER == "kept pairs":
        pairs = tl.join(tl.trans(re), tl.trans(im))
        tl.store(ptr + offsets, tl.reshape(pairs, [SCAN_BLOCK, 2 * KEPT_BLOCK]), mask=mask)
    else:
        tl.store(ptr + offsets, re, mask=mask)
        tl.store(ptr + offsets + 1, im, mask=mask)


@triton.jit
def _rows(n_kept, kept_size1, kept_size2, stride0, stride1, stride2, KEPT_BLOCK: tl.constexpr):
    """(first row, offsets of this program's KEPT_BLOCK rows, which of them exist)."""
    kept0 = tl.program_id(0).to(tl.int64) * KEPT_BLOCK
    kept = kept0 + tl.arange(0, KEPT_BLOCK)
    row = ((kept // (kept_size2 * kept_size1)) * stride0 + (kept // kept_size2 % kept_size1) * stride1
           + (kept % kept_size2) * stride2)
    return kept0, row, kept < n_kept


@triton.jit
def _range_totals_kernel(parts_ptr, totals_ptr, n_kept, n_scanned, per_split, kept_size1, kept_size2,
                         x_kept_stride0, x_kept_stride1, x_kept_stride2, x_scan_stride,
                         KEPT_BLOCK: tl.constexpr, SCAN_BLOCK: tl.constexpr, ORDER: tl.constexpr,
                         OP: tl.constexpr):
    # Program (block of rows, range): per row, the total of the range, stored as fp32 (re, im) pairs at
    # [block, range, row in block]: each program's totals are one contiguous run.
    IDENTITY: tl.constexpr = 1.0 if OP == "cumprod" else 0.0
    kept0, x_row, kept_mask = _rows(n_kept, kept_size1, kept_size2, x_kept_stride0, x_kept_stride1, x_kept_stride2,
                                    KEPT_BLOCK)
    split = tl.program_id(1)
    begin = split.to(tl.int64) * per_split
    end = tl.minimum(n_scanned, begin + per_split)
    total_re = tl.full([KEPT_BLOCK, SCAN_BLOCK], IDENTITY, tl.float32)
    total_im = tl.zeros([KEPT_BLOCK, SCAN_BLOCK], tl.float32)
    for start in range(begin, end, SCAN_BLOCK):
        offsets, mask = _chunk_offsets(x_row, kept_mask, start, end, x_scan_stride, kept0, n_kept, KEPT_BLOCK,
                                       SCAN_BLOCK, ORDER)
        re, im = _load_chunk(parts_ptr, offsets, mask, KEPT_BLOCK, SCAN_BLOCK, ORDER, OP)
        if OP == "cumprod":
            total_re, total_im = cmul(total_re, total_im, re, im)
        else:
            total_re += re
            total_im += im
    if OP == "cumprod":
        total_re, total_im = tl.reduce((total_re, total_im), 1, cmul)
    else:
        total_re = tl.sum(total_re, 1)
        total_im = tl.sum(total_im, 1)
    pairs = tl.reshape(tl.join(total_re, total_im), [2 * KEPT_BLOCK])
    first = (tl.program_id(0) * tl.num_programs(1) + split).to(tl.int64) * 2 * KEPT_BLOCK
    tl.store(totals_ptr + first + tl.arange(0, 2 * KEPT_BLOCK), pairs)


@triton.jit
def _carry_in(totals_ptr, split, splits, KEPT_BLOCK: tl.constexpr, SPLIT_CHUNK: tl.constexpr, OP: tl.constexpr):
    """The combined totals of the ranges before `split`, per row of this program's block: lanes of
    SPLIT_CHUNK ranges, then a tree across lanes, the same order every run. Whole chunks of totals are loaded
    (vector loads) and the later ranges' replaced by the identity in registers."""
    IDENTITY: tl.constexpr = 1.0 if OP == "cumprod" else 0.0
    carry_re = tl.full([SPLIT_CHUNK, KEPT_BLOCK], IDENTITY, tl.float32)
    carry_im = tl.zeros([SPLIT_CHUNK, KEPT_BLOCK], tl.float32)
    block = tl.program_id(0).to(tl.int64) * splits * 2 * KEPT_BLOCK
    for first in range(0, split, SPLIT_CHUNK):
        earlier = first + tl.arange(0, SPLIT_CHUNK)
        offsets = block + (earlier * 2 * KEPT_BLOCK)[:, None] + tl.arange(0, 2 * KEPT_BLOCK)[None, :]
        pairs = tl.load(totals_ptr + offsets, mask=(earlier < splits)[:, None], other=0.0)
        total_re, total_im = tl.split(tl.reshape(pairs, [SPLIT_CHUNK, KEPT_BLOCK, 2]))
        before = (earlier < split)[:, None]
        if OP == "cumprod":
            carry_re, carry_im = cmul(carry_re, carry_im, tl.where(before, total_re, IDENTITY),
                                      tl.where(before, total_im, 0.0))
        else:
            carry_re, carry_im = cadd(carry_re, carry_im, tl.where(before, total_re, IDENTITY),
                                      tl.where(before, total_im, 0.0))
    if OP == "cumprod":
        return tl.reduce((carry_re, carry_im), 0, cmul)
    else:
        return tl.reduce((carry_re, carry_im), 0, cadd)


@triton.jit
def _scan_kernel(parts_ptr, out_ptr, totals_ptr, n_kept, n_scanned, splits, per_split, kept_size1, kept_size2,
                 x_kept_stride0, x_kept_stride1, x_kept_stride2, out_kept_stride0, out_kept_stride1, out_kept_stride2,
                 x_scan_stride, out_scan_stride, KEPT_BLOCK: tl.constexpr, SCAN_BLOCK: tl.constexpr,
                 SPLIT_CHUNK: tl.constexpr, ORDER: tl.constexpr, SPLIT: tl.constexpr, OP: tl.constexpr):
    # Program (block of rows, range): scans the range, starting from the totals of the earlier ranges (SPLIT)
    # or from the identity (a single range).
    IDENTITY: tl.constexpr = 1.0 if OP == "cumprod" else 0.0
    kept0, x_row, kept_mask = _rows(n_kept, kept_size1, kept_size2, x_kept_stride0, x_kept_stride1, x_kept_stride2,
                                    KEPT_BLOCK)
    _, out_row, _ = _rows(n_kept, kept_size1, kept_size2, out_kept_stride0, out_kept_stride1, out_kept_stride2,
                          KEPT_BLOCK)
    split = tl.program_id(1)
    begin = split.to(tl.int64) * per_split
    end = tl.minimum(n_scanned, begin + per_split)
    if SPLIT:
        carry_re, carry_im = _carry_in(totals_ptr, split, splits, KEPT_BLOCK, SPLIT_CHUNK, OP)
    else:
        carry_re = tl.full([KEPT_BLOCK], IDENTITY, tl.float32)
        carry_im = tl.zeros([KEPT_BLOCK], tl.float32)
    is_last = (tl.arange(0, SCAN_BLOCK) == SCAN_BLOCK - 1)[None, :]
    for start in range(begin, end, SCAN_BLOCK):
        offsets, mask = _chunk_offsets(x_row, kept_mask, start, end, x_scan_stride, kept0, n_kept, KEPT_BLOCK,
                                       SCAN_BLOCK, ORDER)
        re, im = _load_chunk(parts_ptr, offsets, mask, KEPT_BLOCK, SCAN_BLOCK, ORDER, OP)
        if OP == "cumprod":
            scan_re, scan_im = tl.associative_scan((re, im), 1, cmul)
            run_re, run_im = cmul(carry_re[:, None], carry_im[:, None], scan_re, scan_im)
        else:
            run_re = tl.cumsum(re, 1) + carry_re[:, None]
            run_im = tl.cumsum(im, 1) + carry_im[:, None]
        offsets, mask = _chunk_offsets(out_row, kept_mask, start, end, out_scan_stride, kept0, n_kept, KEPT_BLOCK,
                                       SCAN_BLOCK, ORDER)
        _store_chunk(out_ptr, offsets, mask, run_re, run_im, KEPT_BLOCK, SCAN_BLOCK, ORDER)
        carry_re = tl.sum(tl.where(is_last, run_re, 0.0), 1)
        carry_im = tl.sum(tl.where(is_last, run_im, 0.0), 1)


# -- host launcher -------------------------------------------------------------------------------------------


def _fastest(strides):
    return min((abs(s) for s in strides if s), default=math.inf)


_totals_launcher = launcher.launcher(_range_totals_kernel)
_scan_launcher = launcher.launcher(_scan_kernel)


class Scan:
    """One rendered module's scan: op "cumsum" or "cumprod"; interpret: launched in Triton's CPU interpreter (small
    tiles, a fixed fill)."""

    def __init__(self, op: str, interpret: bool) -> None:
        self.op = op
        self.tile, self.outer_kept_block = TILES[interpret]
        self.split_multiple = SPLIT_MULTIPLES[interpret]
        self.interpret = interpret
        # in the launcher's keys: the kernels are every module's, and the op is one of their constexprs
        self.tag = f"{op} interpret={interpret}"
        self._geometry = functools.lru_cache(maxsize=512)(self._geometry_of)
        # per module and device: a process that compiles for several arches (`jitdtypes warm --arch`,
        # benchmarks/aot_check.py) renders a module per arch, whose device queries answer for that arch
        self._fill = functools.lru_cache(maxsize=None)(self._fill_of)

    def run(self, x, dim, out):
        """Scan x along `dim` (non-negative; 0 for a 0-d tensor) into `out`, which has x's shape and any strides
        (out may be x itself)."""
        if x.numel():
            with launcher.on_device_of(x):
                self.launch(x, dim, out)

    def _fill_of(self, device):
        """Programs that fill the device."""
        if self.interpret:
            return INTERPRETER_FILL
        return FILL_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count

    def _splits(self, kept_programs, chunks, device):
        """Ranges the scanned dim is cut into: 1 when the rows alone fill the device, else enough for twice the
        fill (one chunk each at least)."""
        fill = self._fill(device)
        if kept_programs >= fill or chunks < 2:
            return 1
        return cdiv(min(cdiv(2 * fill, kept_programs), chunks), self.split_multiple) * self.split_multiple

    def _geometry_of(self, sizes, x_strides, out_strides, dim, device):
        """What a scan of x into out along `dim` takes besides pointers (sizes and strides in complex elements):
        (grid programs, splits, the range totals' arguments, the scan's arguments, the range totals' constexprs,
        the scan's), or None when more kept dims survive collapsing than the kernel indexes. Kept per shape,
        layouts and device (self._geometry)."""
        sizes = list(sizes) or [1]
        x_strides, out_strides = [2 * st for st in x_strides] or [0], [2 * st for st in out_strides] or [0]
        kept = [d for d in range(len(sizes)) if d != dim]
        kept_sizes, (x_kept, out_kept) = collapse_dims(
            [sizes[d] for d in kept], [x_strides[d] for d in kept], [out_strides[d] for d in kept])
        if len(kept_sizes) > KEPT_DIMS:
            return None
        n_kept, n_scanned = math.prod(kept_sizes), sizes[dim]
        scan_block_cap = next_power_of_2(n_scanned)
        if abs(x_strides[dim]) <= _fastest(x_kept):
            scan_block = min(scan_block_cap, self.tile)
            kept_block = min(next_power_of_2(n_kept), self.tile // scan_block)
            order = "scan pairs" if x_strides[dim] == out_strides[dim] == 2 else "strided"
        else:
            kept_block = min(next_power_of_2(n_kept), self.outer_kept_block)
            scan_block = min(scan_block_cap, self.tile // kept_block)
            order = "kept pairs" if x_kept == out_kept == [2] else "strided"
        kept_programs = cdiv(n_kept, kept_block)
        chunks = cdiv(n_scanned, scan_block)
        splits = self._splits(kept_programs, chunks, device)
        per_split = scan_block * cdiv(chunks, splits)
        padding = KEPT_DIMS - len(kept_sizes)
        kept_sizes, x_kept, out_kept = kept_sizes + [1] * padding, x_kept + [0] * padding, out_kept + [0] * padding
        blocks = dict(KEPT_BLOCK=kept_block, SCAN_BLOCK=scan_block, ORDER=order, OP=self.op, num_warps=NUM_WARPS)
        totals_arguments = (n_kept, n_scanned, per_split, *kept_sizes[1:], *x_kept, x_strides[dim])
        scan_arguments = (n_kept, n_scanned, splits, per_split, *kept_sizes[1:], *x_kept, *out_kept, x_strides[dim],
                          out_strides[dim])
        split_chunk = min(next_power_of_2(splits), max(1, self.tile // kept_block))
        # shared by every launch of this geometry: launches only read them
        scan_constexprs = dict(SPLIT=splits > 1, SPLIT_CHUNK=split_chunk, **blocks)
        return kept_programs, splits, totals_arguments, scan_arguments, blocks, scan_constexprs

    def launch(self, x, dim, out, eager=False):
        """The launches scanning x along `dim` into out, on the current device. Complex tensors go to the launcher
        as they are: it reads them through view_as_real (launcher.Launcher.launch_pointers). eager: the caller holds
        real tensors outside any tracing, whatever wrap_triton's switch says."""
        key = (x.shape, x.stride(), out.stride(), dim, x.device)
        # traced sizes may be symbolic
        found = self._geometry(*key) if eager or not launcher.traced() else self._geometry_of(*key)
        if found is None:
            contiguous = torch.empty(x.shape, dtype=out.dtype, device=out.device)
            self.launch(x.contiguous(), dim, contiguous, eager)
            out.copy_(contiguous)
            return
        _launch_geometry(found, (*key, self.tag), x, out, eager)

    def prepared_launch(self, x, dim, out):
        """For an adapter's plan: (x, out) -> launch(x, dim, out, eager=True) for tensors of these x's and out's
        shape, strides and device, with launch's geometry looked up now; None where launch would first copy x."""
        key = (x.shape, x.stride(), out.stride(), dim, x.device)
        found = self._geometry(*key)
        return None if found is None else functools.partial(_launch_geometry, found, (*key, self.tag), eager=True)


def _launch_geometry(found, key, x, out, eager):
    """The launches of Scan._geometry_of's `found`, kept under `key` (which determines it)."""
    kept_programs, splits, totals_arguments, scan_arguments, blocks, scan_constexprs = found
    if splits == 1:
        # no totals: the key says x stands in for them
        _scan_launcher.launch_pointers(
            key, (kept_programs, 1), (x, out, x, *scan_arguments), scan_constexprs, (x, out), eager)
        return
    totals = torch.empty((kept_programs, splits, blocks["KEPT_BLOCK"], 2), dtype=torch.float32, device=x.device)
    _totals_launcher.launch_pointers(
        key, (kept_programs, splits), (x, totals, *totals_arguments), blocks, (x, totals), eager)
    _scan_launcher.launch_pointers(
        key, (kept_programs, splits), (x, out, totals, *scan_arguments), scan_constexprs, (x, out, totals), eager)
