"""The FFT family's kernels and their launcher, as real Triton code: batched power-of-two 1-D FFTs over (re, im)
pairs (c2c, r2c, c2r), fp32 inside, one rounding. fft.py renders, per (op, dtype, n, inverse), the few lines that
bind a `Transform` of this module to those params, and holds the ATen adapters.

Each program holds ROWS whole rows in registers and runs log2(L) radix-2 Stockham stages on them. A stage is
reshape/permute/split/join on register tensors: the row, seen as [P, Q] (P sub-transforms already done, Q
columns), splits its columns in halves E | O, combines them as E + w^p O and E - w^p O (w = exp(-+i pi / P)),
and stacks the two results as the rows of a [2P, Q/2] view. After log2(L) stages the view is [L, 1], in natural
order: no bit reversal and no scratch memory, so the same code runs in Triton's interpreter (numpy) and
compiles on GPU to register relabelings plus a few shared-memory layout conversions, with no barriers to get
right. Twiddles w^p = exp(-+i pi p / P) come from _cospi_sinpi: p / P is exact in fp32, so it reduces exactly to
a quarter turn plus |r| <= 1/4, where short polynomials are within an fp32 ulp. libdevice's sin/cos would
bring their slow path for huge arguments (fp64 instructions and a table in local memory) into every stage, and
a host table would need a per-call tensor. Their error, ~2^-23 relative, is far below the one 16-bit rounding
on store. Rows whose elements are adjacent are loaded and stored as one run of parts each (128-bit accesses);
r2c's one-sided output rows and c2r's input rows hold n/2 + 1 elements, so from the second row on they start
at addresses aligned to one element only, and move at 32 bits per access.

The longest complex transform one program holds is MAX_FFT_LENGTH = 8192: 8192 complex fp32 values over 16
warps is 32 registers of data per thread (compiled for sm_90 with triton 3.6 and 3.8: ~120 registers, no
spills); at 16384 the 64 registers per thread that 32 warps leave are too few and it spills.

r2c is a full complex FFT of length n with a zero imaginary part (2x the work of the n/2 packing trick, and
onesided=False comes free): packing needs Z[-k] across the row, and tl.gather lowers that to per-element warp
shuffles which at n = 4096 spilled 2 KB per thread on sm_90 and compiled slowly. c2r does use packing,
since its mirror X[n/2 - k] is just another load:
  Z[k] = (X[k] + conj X[n/2-k]) + i w^-k (X[k] - conj X[n/2-k]), w = exp(-2 pi i / n), k < n/2, then
  x[2j] + i x[2j+1] = IFFT_{n/2}(Z) unnormalized, which is n times the inverse, i.e. ATen's unnormalized c2r.
So r2c goes up to n = MAX_FFT_LENGTH, c2r up to 2 * MAX_FFT_LENGTH.

A Transform transforms the last dim of 3-D views [outer, inner, length] with any strides, which is how
adapters express "any dim of a tensor whose other dims collapse to two strided groups". Kernels only cast on
load and store, so a Transform also reads or writes complex64/float32: multi-dim transforms chain 1-D passes
through complex64 temporaries and round once, on the last pass, which also applies the normalization.

What differs between the modules fft.py renders is passed as constexprs and Python arguments: the op (its
kernel), the length (LOG2_LENGTH, and the rows per program and warps that follow from it) and the direction of a
c2c transform (SIGN).
"""

import functools

import triton
import triton.language as tl

from . import launcher
from .common import cdiv

# Small transforms batch rows so each program still has ~1024 values to keep its warps busy.
VALUES_PER_PROGRAM = 1024

# -- kernels -------------------------------------------------------------------------------------------------


@triton.jit
def _row_offsets(rows, inner_rows, stride_outer, stride_inner, ROWS: tl.constexpr):
    """Element offsets of this program's rows, and which exist. int64: a batch of 16-bit rows can exceed 2**31
    elements."""
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)
    return (row // inner_rows) * stride_outer + (row % inner_rows) * stride_inner, row < rows


@triton.jit
def _load_rows(ptr, row, row_mask, rows, index, step, ROWS: tl.constexpr, WIDTH: tl.constexpr,
               PARTS: tl.constexpr, LAYOUT: tl.constexpr):
    """fp32 [ROWS, WIDTH, PARTS] of each row's elements `index` (PARTS = 2: (re, im) pairs of complex elements,
    1: reals). LAYOUT "dense" (rows of WIDTH adjacent elements, one after another): the program's rows are a
    single run of memory, loaded flat; "unit" (adjacent elements): a run per row; "strided": an offset per part.
    Runs compile to wide vector loads."""
    if LAYOUT == "dense":
        flat = tl.program_id(0).to(tl.int64) * ROWS * WIDTH * PARTS + tl.arange(0, ROWS * WIDTH * PARTS)
        values = tl.load(ptr + flat, mask=flat < rows * WIDTH * PARTS)
    else:
        offsets = _part_offsets(row, index, step, ROWS, WIDTH, PARTS, LAYOUT)
        values = tl.load(ptr + offsets, mask=row_mask[:, None])
    return tl.reshape(values.to(tl.float32), [ROWS, WIDTH, PARTS])


@triton.jit
def _store_rows(ptr, row, mask, rows, index, step, values, ROWS: tl.constexpr, WIDTH: tl.constexpr,
                PARTS: tl.constexpr, LAYOUT: tl.constexpr):
    """Store [ROWS, WIDTH, PARTS] values as _load_rows loads them; `mask` [ROWS, WIDTH * PARTS] (unused when
    dense: a dense output is written whole)."""
    values = values.to(ptr.dtype.element_ty)
    if LAYOUT == "dense":
        flat = tl.program_id(0).to(tl.int64) * ROWS * WIDTH * PARTS + tl.arange(0, ROWS * WIDTH * PARTS)
        tl.store(ptr + flat, tl.reshape(values, [ROWS * WIDTH * PARTS]), mask=flat < rows * WIDTH * PARTS)
    else:
        offsets = _part_offsets(row, index, step, ROWS, WIDTH, PARTS, LAYOUT)
        tl.store(ptr + offsets, tl.reshape(values, [ROWS, WIDTH * PARTS]), mask=mask)


@triton.jit
def _part_offsets(row, index, step, ROWS: tl.constexpr, WIDTH: tl.constexpr, PARTS: tl.constexpr,
                  LAYOUT: tl.constexpr):
    """[ROWS, WIDTH * PARTS] offsets of the parts of elements `index` (element offsets row + index * step)."""
    if LAYOUT == "unit":
        offsets = PARTS * row[:, None] + tl.arange(0, WIDTH * PARTS)[None, :]
    else:
        parts = PARTS * (row[:, None, None] + index[None, :, None] * step) + tl.arange(0, PARTS)[None, None, :]
        offsets = tl.reshape(parts, [ROWS, WIDTH * PARTS])
    return offsets


@triton.jit
def _cospi_sinpi(t):
    """(cos(pi t), sin(pi t)) for t = p / 2^k in [0, 1]: t is reduced exactly to r in [-1/4, 1/4] around the
    nearest half turn q / 2, where Taylor polynomials of degree 10 and 9 are within an fp32 ulp. No libdevice
    sin/cos: their reduction of huge arguments brings fp64 code and a local-memory table."""
    q = tl.floor(2.0 * t + 0.5)
    r = t - 0.5 * q
    x = r * r
    sin = r * (3.141592653589793 + x * (-5.16771278004997 + x * (2.5501640398773455 + x * (
        -0.5992645293207921 + x * 0.08214588661112823))))
    cos = 1.0 + x * (-4.934802200544679 + x * (4.058712126416768 + x * (-1.3352627688545893 + x * (
        0.2353306303588932 - x * 0.025806891390014061))))
    quadrant = q.to(tl.int32) & 3
    odd = (quadrant & 1) != 0
    cos_t = tl.where(odd, sin, cos)
    sin_t = tl.where(odd, cos, sin)
    return tl.where((quadrant == 1) | (quadrant == 2), -cos_t, cos_t), tl.where(quadrant >= 2, -sin_t, sin_t)


@triton.jit
def _radix2_stage(re, im, ROWS: tl.constexpr, P: tl.constexpr, HALF: tl.constexpr, SIGN: tl.constexpr):
    """[ROWS, P, 2 * HALF] -> [ROWS, 2 * P, HALF]: merge pairs of P-point transforms into 2P-point ones."""
    even_re, odd_re = tl.split(tl.permute(tl.reshape(re, [ROWS, P, 2, HALF]), 0, 1, 3, 2))
    even_im, odd_im = tl.split(tl.permute(tl.reshape(im, [ROWS, P, 2, HALF]), 0, 1, 3, 2))
    cos, sin = _cospi_sinpi(tl.arange(0, P).to(tl.float32) * (1.0 / P))
    cos = tl.reshape(cos, [1, P, 1])
    sin = tl.reshape(SIGN * sin, [1, P, 1])
    turned_re = cos * odd_re - sin * odd_im
    turned_im = cos * odd_im + sin * odd_re
    # join puts the +/- half last; moving it before P makes it the high bit of the new row index
    re = tl.reshape(tl.permute(tl.join(even_re + turned_re, even_re - turned_re), 0, 3, 1, 2), [ROWS, 2 * P, HALF])
    im = tl.reshape(tl.permute(tl.join(even_im + turned_im, even_im - turned_im), 0, 3, 1, 2), [ROWS, 2 * P, HALF])
    return re, im


@triton.jit
def _fft_rows(re, im, ROWS: tl.constexpr, LOG2_LENGTH: tl.constexpr, SIGN: tl.constexpr):
    """Unnormalized DFT (exp(SIGN 2 pi i jk / L)) of each row of [ROWS, L] tensors, natural order in and out."""
    re = tl.reshape(re, [ROWS, 1, 1 << LOG2_LENGTH])
    im = tl.reshape(im, [ROWS, 1, 1 << LOG2_LENGTH])
    for stage in tl.static_range(LOG2_LENGTH):
        re, im = _radix2_stage(re, im, ROWS, 1 << stage, (1 << LOG2_LENGTH) >> (stage + 1), SIGN)
    return tl.reshape(re, [ROWS, 1 << LOG2_LENGTH]), tl.reshape(im, [ROWS, 1 << LOG2_LENGTH])


@triton.jit
def fft_c2c_kernel(
    x_ptr, out_ptr, rows, inner_rows,
    x_outer, x_inner, x_step, out_outer, out_inner, out_step,
    scale, ROWS: tl.constexpr, LOG2_LENGTH: tl.constexpr, X_LAYOUT: tl.constexpr, OUT_LAYOUT: tl.constexpr,
    SIGN: tl.constexpr,
):
    LENGTH: tl.constexpr = 1 << LOG2_LENGTH
    k = tl.arange(0, LENGTH)
    x_row, row_mask = _row_offsets(rows, inner_rows, x_outer, x_inner, ROWS)
    re, im = tl.split(_load_rows(x_ptr, x_row, row_mask, rows, k, x_step, ROWS, LENGTH, 2, X_LAYOUT))
    re, im = _fft_rows(re, im, ROWS, LOG2_LENGTH, SIGN)
    out_row, _ = _row_offsets(rows, inner_rows, out_outer, out_inner, ROWS)
    mask = tl.broadcast_to(row_mask[:, None], [ROWS, 2 * LENGTH])
    _store_rows(out_ptr, out_row, mask, rows, k, out_step, tl.join(re * scale, im * scale), ROWS, LENGTH, 2,
                OUT_LAYOUT)


@triton.jit
def fft_r2c_kernel(
    x_ptr, out_ptr, rows, inner_rows, out_length,
    x_outer, x_inner, x_step, out_outer, out_inner, out_step,
    scale, ROWS: tl.constexpr, LOG2_LENGTH: tl.constexpr, X_LAYOUT: tl.constexpr, OUT_LAYOUT: tl.constexpr,
):
    LENGTH: tl.constexpr = 1 << LOG2_LENGTH
    k = tl.arange(0, LENGTH)
    x_row, row_mask = _row_offsets(rows, inner_rows, x_outer, x_inner, ROWS)
    re = tl.reshape(_load_rows(x_ptr, x_row, row_mask, rows, k, x_step, ROWS, LENGTH, 1, X_LAYOUT), [ROWS, LENGTH])
    # tl.full, not tl.zeros: standard-library @jit helpers fail in the interpreter if triton was imported first
    re, im = _fft_rows(re, tl.full([ROWS, LENGTH], 0.0, tl.float32), ROWS, LOG2_LENGTH, -1.0)
    out_row, _ = _row_offsets(rows, inner_rows, out_outer, out_inner, ROWS)
    mask = row_mask[:, None] & (tl.arange(0, 2 * LENGTH) < 2 * out_length)[None, :]
    _store_rows(out_ptr, out_row, mask, rows, k, out_step, tl.join(re * scale, im * scale), ROWS, LENGTH, 2,
                OUT_LAYOUT)


@triton.jit
def fft_c2r_kernel(
    x_ptr, out_ptr, rows, inner_rows,
    x_outer, x_inner, x_step, out_outer, out_inner, out_step,
    scale, ROWS: tl.constexpr, LOG2_LENGTH: tl.constexpr, X_LAYOUT: tl.constexpr, OUT_LAYOUT: tl.constexpr,
):
    HALF: tl.constexpr = 1 << LOG2_LENGTH
    k = tl.arange(0, HALF)
    x_row, row_mask = _row_offsets(rows, inner_rows, x_outer, x_inner, ROWS)
    a_re, a_im = tl.split(_load_rows(x_ptr, x_row, row_mask, rows, k, x_step, ROWS, HALF, 2, X_LAYOUT))
    b_re, b_im = tl.split(_load_rows(x_ptr, x_row, row_mask, rows, HALF - k, x_step, ROWS, HALF, 2, "strided"))
    # a real output cannot carry the imaginary parts of X[0] and X[n/2]: ignored, as by ATen
    a_im = tl.where(k[None, :] == 0, 0.0, a_im)
    b_im = tl.where(k[None, :] == 0, 0.0, b_im)
    # Z = (A + conj B) + i w^-k (A - conj B), with A = X[k], B = X[n/2 - k]
    diff_re = a_re - b_re
    diff_im = a_im + b_im
    cos, sin = _cospi_sinpi(k.to(tl.float32) * (1.0 / HALF))
    cos = cos[None, :]
    sin = sin[None, :]
    z_re = (a_re + b_re) - (cos * diff_im + sin * diff_re)
    z_im = (a_im - b_im) + (cos * diff_re - sin * diff_im)
    z_re, z_im = _fft_rows(z_re, z_im, ROWS, LOG2_LENGTH, 1.0)
    out_row, _ = _row_offsets(rows, inner_rows, out_outer, out_inner, ROWS)
    mask = tl.broadcast_to(row_mask[:, None], [ROWS, 2 * HALF])
    # (re, im) of z[j] are the real samples 2j and 2j + 1
    samples = tl.reshape(tl.join(z_re * scale, z_im * scale), [ROWS, 2 * HALF, 1])
    _store_rows(out_ptr, out_row, mask, rows, tl.arange(0, 2 * HALF), out_step, samples, ROWS, 2 * HALF, 1,
                OUT_LAYOUT)


# -- host launcher -------------------------------------------------------------------------------------------

_KERNELS = {"fft_c2c": fft_c2c_kernel, "fft_r2c": fft_r2c_kernel, "fft_c2r": fft_c2r_kernel}


def _layout(shape, stride, width):
    """How the rows of an [outer, inner, length] view lie in memory (see _load_rows): "dense" needs rows of
    the kernel's `width` one after another."""
    outer, inner, length = shape
    if length > 1 and stride[2] != 1:
        return "strided"
    consecutive = (inner == 1 or stride[1] == length) and (outer == 1 or stride[0] == inner * length)
    return "dense" if consecutive and length == width else "unit"


class Transform:
    """One rendered module's transform: op "fft_c2c" (inverse: exp(+2 pi i jk / n), else exp(-2 pi i jk / n)),
    "fft_r2c" or "fft_c2r", of n points, applied to the last dim of [outer, inner, length] views."""

    def __init__(self, op: str, n: int, inverse: bool) -> None:
        self.op, self.kernel = op, _KERNELS[op]
        self.log2_length = n.bit_length() - 1 - (op == "fft_c2r")
        length = 1 << self.log2_length
        self.rows = max(1, VALUES_PER_PROGRAM // length)
        self.num_warps = max(4, self.rows * length // 512)
        # Row lengths, in elements, the kernel reads from x and writes to out (0: never one whole run; c2r reads
        # n/2 + 1 elements per row, n/2 of them as a run: its rows are never one flat run). See _layout.
        self.x_width = 0 if op == "fft_c2r" else length
        self.out_width = n
        self.extra_constexprs = {"SIGN": 1.0 if inverse else -1.0} if op == "fft_c2c" else {}
        # in the launcher's keys: the kernels are every module's, and the direction sets a constexpr of c2c's
        self.tag = f"{op} n={n} inverse={inverse}"
        self._launcher = launcher.launcher(self.kernel)
        self._constexprs = functools.lru_cache(maxsize=512)(self._constexprs_of)

    def run(self, x, out, scale):
        """x and out: [outer, inner, length] views with any strides; 16-bit or 32-bit parts. c2c: out[b, c] =
        scale * DFT(x[b, c]); r2c: the first out.shape[2] elements of it for real x (n // 2 + 1 or n); c2r:
        out[b, c] = scale * n * IDFT(X), real, for the Hermitian X whose first n // 2 + 1 elements are x[b, c]."""
        with launcher.on_device_of(out):
            if self.op == "fft_r2c":
                self.launch(x, out, scale, out.shape[2])
            else:
                self.launch(x, out, scale)

    def launch(self, x, out, scale, *extra, eager=False):
        """Transform the rows of x into out, on the current device (views: launch_rows)."""
        self.launch_rows((x.shape, x.stride(), out.shape, out.stride()), x, out, scale, *extra, eager=eager)

    def launch_rows(self, views, x, out, scale, *extra, eager=False):
        """views: (x's shape, x's strides, out's shape, out's strides) as [outer, inner, length] views; x, out: those
        views, or any tensors with their data pointers and dtypes (an adapter's plan passes the ATen tensors). They
        go to the launcher as they are: it reads complex ones through view_as_real (launcher.Launcher.launch_pointers).
        eager: the caller holds real tensors outside any tracing, whatever wrap_triton's switch says."""
        key, grid, arguments, constexprs = self._rows_launch(views, scale, extra, eager or not launcher.traced())
        self._launcher.launch_pointers(key, grid, (x, out, *arguments), constexprs, (x, out), eager)

    def prepared_rows(self, views, scale, *extra):
        """For an adapter's plan: (x, out) -> launch_rows(views, x, out, scale, *extra, eager=True), with everything
        but the pointers computed now."""
        key, grid, arguments, constexprs = self._rows_launch(views, scale, extra, True)
        kernel = self._launcher

        def launch_prepared(x, out):
            kernel.launch_pointers(key, grid, (x, out, *arguments), constexprs, (x, out), True)

        return launch_prepared

    def _constexprs_of(self, x_shape, x_stride, out_shape, out_stride):
        return dict(ROWS=self.rows, LOG2_LENGTH=self.log2_length, X_LAYOUT=_layout(x_shape, x_stride, self.x_width),
                    OUT_LAYOUT=_layout(out_shape, out_stride, self.out_width), **self.extra_constexprs,
                    num_warps=self.num_warps)

    def _rows_launch(self, views, scale, extra, concrete):
        """(the launcher's key, grid, the arguments after the pointers, constexprs); concrete: sizes are not
        symbolic."""
        x_shape, x_stride, _, out_stride = views
        rows, inner_rows = x_shape[0] * x_shape[1], x_shape[1]
        constexprs = self._constexprs(*views) if concrete else self._constexprs_of(*views)
        return ((*views, *extra, type(scale), self.tag), (cdiv(rows, self.rows),),
                (rows, inner_rows, *extra, *x_stride, *out_stride, scale), constexprs)
