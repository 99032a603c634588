"""Complex matmul family: out = alpha * op(A) @ op(B) + beta * C for 16-bit complex operands, op = identity or conj.

One batched kernel serves mm, bmm, addmm, baddbmm, mv, addmv, dot and vdot: vectors become 1-wide matrices and
2-D operands a batch of one. Tiles are loaded as interleaved (re, im) parts and split in registers, so
transposed, sliced and broadcast operands are read in place through their strides; the four real products go
to tl.dot on 16-bit tiles (tensor cores) with fp32 accumulators, and the result is rounded once on store.
"""

from __future__ import annotations


import torch

from . import common

FAMILY = "matmul"

TEMPLATE = '''\
"""out = alpha * op(a) @ op(b) + beta * c on $dtype pairs (conj_a=$conj_a, conj_b=$conj_b)."""

from typing import Optional

import torch
import triton
import triton.language as tl

MUTATES = ("out",)
CONJ_A = $conj_a
CONJ_B = $conj_b


@triton.jit
def load_parts(ptr, stride_outer, stride_inner, outer_left, inner_left,
               OUTER: tl.constexpr, INNER: tl.constexpr, INNER_UNIT: tl.constexpr):
    # One [OUTER, 2 * INNER] load of interleaved parts. When pairs are adjacent in memory (INNER_UNIT) each row
    # is one contiguous run of parts, which the compiler turns into wide vector loads.
    rows = tl.arange(0, OUTER)[:, None]
    parts = tl.arange(0, 2 * INNER)[None, :]
    if INNER_UNIT:
        part_offsets = parts
    else:
        part_offsets = (parts // 2).to(tl.int64) * stride_inner + parts % 2
    mask = (rows < outer_left) & (parts < 2 * inner_left)
    return tl.load(ptr + rows.to(tl.int64) * stride_outer + part_offsets, mask=mask, other=0.0)


@triton.jit
def split_pairs(parts):
    return tl.split(tl.reshape(parts, (parts.shape[0], parts.shape[1] // 2, 2)))


@triton.jit
def join_pairs(re, im):
    return tl.reshape(tl.join(re, im), (re.shape[0], 2 * re.shape[1]))


@triton.jit
def load_operand(ptr, stride_rows, stride_cols, rows_left, cols_left,
                 ROWS: tl.constexpr, COLS: tl.constexpr, COLS_INNER: tl.constexpr, INNER_UNIT: tl.constexpr):
    # A transposed operand is read along its memory order and transposed in registers, not copied.
    if COLS_INNER:
        parts = load_parts(ptr, stride_rows, stride_cols, rows_left, cols_left, ROWS, COLS, INNER_UNIT)
        re, im = split_pairs(parts)
    else:
        parts = load_parts(ptr, stride_cols, stride_rows, cols_left, rows_left, COLS, ROWS, INNER_UNIT)
        re_t, im_t = split_pairs(parts)
        re = tl.trans(re_t)
        im = tl.trans(im_t)
    return re.to($dot_dtype), im.to($dot_dtype)


@triton.jit
def round_to(x, part_type: tl.constexpr):
$round_to_body


@triton.jit
def store_parts(ptr, stride_rows, stride_cols, rows_left, cols_left, values,
                ROWS: tl.constexpr, COLS: tl.constexpr, COLS_UNIT: tl.constexpr):
    rows = tl.arange(0, ROWS)[:, None]
    parts = tl.arange(0, 2 * COLS)[None, :]
    if COLS_UNIT:
        part_offsets = parts
    else:
        part_offsets = (parts // 2).to(tl.int64) * stride_cols + parts % 2
    mask = (rows < rows_left) & (parts < 2 * cols_left)
    tl.store(ptr + rows.to(tl.int64) * stride_rows + part_offsets, values, mask=mask)


@triton.jit
def tile_origin(pid, tiles_m, tiles_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # (batch, m0, n0) of a program. Within a batch entry tiles go in groups of GROUP_M rows, so that programs
    # running together share B tiles in L2.
    tiles = tiles_m * tiles_n
    tile = pid % tiles
    group_tiles = GROUP_M * tiles_n
    first_m = (tile // group_tiles) * GROUP_M
    group_rows = tl.minimum(tiles_m - first_m, GROUP_M)
    m0 = (first_m + (tile % group_tiles) % group_rows) * BLOCK_M
    n0 = ((tile % group_tiles) // group_rows) * BLOCK_N
    return (pid // tiles).to(tl.int64), m0, n0


@triton.jit
def finish_tile(acc, c_ptr, out_ptr, m_left, n_left, stride_cm, stride_cn, stride_out_m, stride_out_n,
                alpha_re, alpha_im, beta_re, beta_im,
                REAL_SCALARS: tl.constexpr, HAS_C: tl.constexpr, C_UNIT: tl.constexpr, OUT_UNIT: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # acc: the interleaved fp32 [BLOCK_M, 2 * BLOCK_N] product tile; stores alpha * acc + beta * c, rounded once.
    if REAL_SCALARS:
        # Real alpha and beta scale both parts alike, so the tile stays interleaved: no shuffles, fewer registers.
        out = alpha_re * acc
        if HAS_C:
            c = load_parts(c_ptr, stride_cm, stride_cn, m_left, n_left, BLOCK_M, BLOCK_N, C_UNIT)
            out += beta_re * c.to(tl.float32)
    else:
        acc_re, acc_im = split_pairs(acc)
        out_re = alpha_re * acc_re - alpha_im * acc_im
        out_im = alpha_re * acc_im + alpha_im * acc_re
        if HAS_C:
            c_re, c_im = split_pairs(load_parts(c_ptr, stride_cm, stride_cn, m_left, n_left, BLOCK_M, BLOCK_N, C_UNIT))
            out_re += beta_re * c_re.to(tl.float32) - beta_im * c_im.to(tl.float32)
            out_im += beta_re * c_im.to(tl.float32) + beta_im * c_re.to(tl.float32)
        out = join_pairs(out_re, out_im)
    out = round_to(out, out_ptr.dtype.element_ty)
    store_parts(out_ptr, stride_out_m, stride_out_n, m_left, n_left, out, BLOCK_M, BLOCK_N, OUT_UNIT)


@triton.jit
def complex_matmul_kernel(
    a_ptr, b_ptr, c_ptr, out_ptr, partials_ptr,
    M, N, K, tiles_m, tiles_n, k_per_split,
    stride_a_batch, stride_am, stride_ak,
    stride_b_batch, stride_bk, stride_bn,
    stride_c_batch, stride_cm, stride_cn,
    stride_out_batch, stride_out_m, stride_out_n,
    stride_partials_split, stride_partials_batch, stride_partials_m,
    alpha_re, alpha_im, beta_re, beta_im,
    MIXED_CONJ: tl.constexpr, CONJ_RESULT: tl.constexpr,
    A_K_INNER: tl.constexpr, A_UNIT: tl.constexpr, B_N_INNER: tl.constexpr, B_UNIT: tl.constexpr,
    SPLIT_K: tl.constexpr,
    REAL_SCALARS: tl.constexpr, HAS_C: tl.constexpr, C_UNIT: tl.constexpr, OUT_UNIT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # Strides count 16-bit parts (fp32 ones for partials); offsets are 64-bit because an operand may span more
    # than 2**31 parts while each stride fits in 32 bits. With SPLIT_K, program (tile, s) sums the K range
    # [s * k_per_split, (s + 1) * k_per_split) into fp32 partials, and finish_split_kernel completes the tile.
    batch, m0, n0 = tile_origin(tl.program_id(0), tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
    split = tl.program_id(1)
    k_start = split * k_per_split
    k_end = tl.minimum(K, k_start + k_per_split)
    a_ptr += batch * stride_a_batch + m0.to(tl.int64) * stride_am + k_start.to(tl.int64) * stride_ak
    b_ptr += batch * stride_b_batch + n0.to(tl.int64) * stride_bn + k_start.to(tl.int64) * stride_bk
    acc_re = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
    acc_im = tl.full((BLOCK_M, BLOCK_N), 0.0, tl.float32)
    for k0 in range(k_start, k_end, BLOCK_K):
        ar, ai = load_operand(a_ptr, stride_am, stride_ak, M - m0, K - k0, BLOCK_M, BLOCK_K, A_K_INNER, A_UNIT)
        br, bi = load_operand(b_ptr, stride_bk, stride_bn, K - k0, N - n0, BLOCK_K, BLOCK_N, B_N_INNER, B_UNIT)
        acc_re = tl.dot(ar, br, acc_re)
        acc_im = tl.dot(ar, bi, acc_im)
        # conj(A) B and A conj(B) = conj(conj(A) B) share the signs (re + ai bi, im - ai br); A B and
        # conj(A) conj(B) = conj(A B) share the plain ones. Negating a 16-bit tile is exact.
        if MIXED_CONJ:
            acc_re = tl.dot(ai, bi, acc_re)
            acc_im = tl.dot(-ai, br, acc_im)
        else:
            acc_re = tl.dot(-ai, bi, acc_re)
            acc_im = tl.dot(ai, br, acc_im)
        a_ptr += BLOCK_K * stride_ak.to(tl.int64)
        b_ptr += BLOCK_K * stride_bk.to(tl.int64)
    if CONJ_RESULT:
        acc_im = -acc_im
    acc = join_pairs(acc_re, acc_im)

    if SPLIT_K:
        partials_ptr += split.to(tl.int64) * stride_partials_split + batch * stride_partials_batch
        partials_ptr += m0.to(tl.int64) * stride_partials_m + 2 * n0
        store_parts(partials_ptr, stride_partials_m, 2, M - m0, N - n0, acc, BLOCK_M, BLOCK_N, True)
    else:
        c_ptr += batch * stride_c_batch + m0.to(tl.int64) * stride_cm + n0.to(tl.int64) * stride_cn
        out_ptr += batch * stride_out_batch + m0.to(tl.int64) * stride_out_m + n0.to(tl.int64) * stride_out_n
        finish_tile(acc, c_ptr, out_ptr, M - m0, N - n0, stride_cm, stride_cn, stride_out_m, stride_out_n,
                    alpha_re, alpha_im, beta_re, beta_im, REAL_SCALARS, HAS_C, C_UNIT, OUT_UNIT, BLOCK_M, BLOCK_N)


@triton.jit
def finish_split_kernel(
    partials_ptr, c_ptr, out_ptr,
    M, N, tiles_m, tiles_n, splits,
    stride_partials_split, stride_partials_batch, stride_partials_m,
    stride_c_batch, stride_cm, stride_cn,
    stride_out_batch, stride_out_m, stride_out_n,
    alpha_re, alpha_im, beta_re, beta_im,
    REAL_SCALARS: tl.constexpr, HAS_C: tl.constexpr, C_UNIT: tl.constexpr, OUT_UNIT: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
):
    batch, m0, n0 = tile_origin(tl.program_id(0), tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
    partials_ptr += batch * stride_partials_batch + m0.to(tl.int64) * stride_partials_m + 2 * n0
    acc = tl.full((BLOCK_M, 2 * BLOCK_N), 0.0, tl.float32)
    for _ in range(splits):
        acc += load_parts(partials_ptr, stride_partials_m, 2, M - m0, N - n0, BLOCK_M, BLOCK_N, True)
        partials_ptr += stride_partials_split
    c_ptr += batch * stride_c_batch + m0.to(tl.int64) * stride_cm + n0.to(tl.int64) * stride_cn
    out_ptr += batch * stride_out_batch + m0.to(tl.int64) * stride_out_m + n0.to(tl.int64) * stride_out_n
    finish_tile(acc, c_ptr, out_ptr, M - m0, N - n0, stride_cm, stride_cn, stride_out_m, stride_out_n,
                alpha_re, alpha_im, beta_re, beta_im, REAL_SCALARS, HAS_C, C_UNIT, OUT_UNIT, BLOCK_M, BLOCK_N)


$config_source


def read_order(rows, cols, stride_rows, stride_cols):
    """(cols_inner, inner_unit) for reading a [rows, cols] operand (strides in parts): along the dimension whose
    pairs are adjacent if there is one; a dimension of size 1 adds no offset, so it counts as adjacent."""
    if cols > 1 and stride_cols == 2:
        return True, True
    if rows > 1 and stride_rows == 2:
        return False, True
    if cols == 1:
        return True, True
    if rows == 1:
        return False, True
    return stride_cols <= stride_rows, False


def launch(a, b, out, c, alpha, beta):
    """Real [batch, rows, cols, 2] views: out = alpha * op(a) @ op(b) (+ beta * c unless c is None)."""
    batch, m, k = a.shape[:3]
    n = out.shape[2]
    config = choose_config(batch, m, n, k, out.device)
    tiles_m = triton.cdiv(m, config["BLOCK_M"])
    tiles_n = triton.cdiv(n, config["BLOCK_N"])
    programs = batch * tiles_m * tiles_n
    k_per_split = choose_k_split(programs, k, config["BLOCK_K"], out.device)
    splits = triton.cdiv(k, k_per_split) if k_per_split < k else 1
    has_c = c is not None
    c = out if c is None else c
    epilogue = dict(
        REAL_SCALARS=alpha.imag == 0 and beta.imag == 0,
        HAS_C=has_c, C_UNIT=n == 1 or c.stride(2) == 2, OUT_UNIT=n == 1 or out.stride(2) == 2,
    )
    scalars = (alpha.real, alpha.imag, beta.real, beta.imag)
    partials = out
    if splits > 1:
        partials = torch.empty((splits, batch, m, 2 * n), dtype=torch.float32, device=out.device)
    a_k_inner, a_unit = read_order(m, k, a.stride(1), a.stride(2))
    b_n_inner, b_unit = read_order(k, n, b.stride(1), b.stride(2))
    torch.library.wrap_triton(complex_matmul_kernel)[(programs, splits)](
        a, b, c, out, partials,
        m, n, k, tiles_m, tiles_n, k_per_split,
        a.stride(0), a.stride(1), a.stride(2),
        b.stride(0), b.stride(1), b.stride(2),
        c.stride(0), c.stride(1), c.stride(2),
        out.stride(0), out.stride(1), out.stride(2),
        partials.stride(0), partials.stride(1), partials.stride(2),
        *scalars,
        MIXED_CONJ=CONJ_A != CONJ_B, CONJ_RESULT=CONJ_B,
        A_K_INNER=a_k_inner, A_UNIT=a_unit, B_N_INNER=b_n_inner, B_UNIT=b_unit,
        SPLIT_K=splits > 1, **epilogue, **config,
    )
    if splits > 1:
        torch.library.wrap_triton(finish_split_kernel)[(programs,)](
            partials, c, out,
            m, n, tiles_m, tiles_n, splits,
            partials.stride(0), partials.stride(1), partials.stride(2),
            c.stride(0), c.stride(1), c.stride(2),
            out.stride(0), out.stride(1), out.stride(2),
            *scalars,
            **epilogue, BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], GROUP_M=config["GROUP_M"],
        )


def run(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor, bias: Optional[torch.Tensor],
        alpha_re: float, alpha_im: float, beta_re: float, beta_im: float) -> None:
    """out = alpha * op(a) @ op(b) + beta * (bias, or out's own values when bias is None), batched over dim 0.

    a [B, M, K], b [B, K, N], out and bias [B, M, N] hold raw data (no conj bit; op comes from CONJ_A/CONJ_B)
    and may have any strides, 0 included. beta == 0 reads no addend, so NaN/inf there do not propagate.
    """
    if out.numel() == 0:
        return
    beta = complex(beta_re, beta_im)
    addend = None
    if beta != 0:
        addend = torch.view_as_real(out if bias is None else bias)
    launch(torch.view_as_real(a), torch.view_as_real(b), torch.view_as_real(out), addend,
           complex(alpha_re, alpha_im), beta)
'''

# The interpreter runs each program in numpy: small tiles keep tests fast and exercise the block masks, and
# single-tile products with more than two K blocks are split so that the tests cover the split-K path.
INTERPRETER_CONFIG_SOURCE = '''\
def choose_config(batch, m, n, k, device):
    return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)


def choose_k_split(programs, k, block_k, device):
    return 2 * block_k if programs == 1 else k'''

# Hopper: two fp32 [128, 128] accumulators take 128 of a thread's registers at 8 warps, and a 128x128x32 stage is
# 32 KiB of shared memory, so 3 stages fit (compiled for sm_90: about 250 registers, no spills with real alpha and
# beta). Grids that would leave SMs idle with 128x128 tiles use 64x64. Matrix-vector shapes are bound by reading
# the long operand: the short side gets tl.dot's minimum of 16, the long side the widest block that still gives
# every SM a program. When the output tiles leave most SMs idle (dot, short mv, small GEMMs with a long K), K is
# split across programs that keep at least 8 K blocks each, and a second kernel sums their fp32 partials.
GPU_CONFIG_SOURCE = '''\
def choose_config(batch, m, n, k, device):
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    if m <= 16 or n <= 16:
        long_side = max(m, n)
        block = next((b for b in (64, 32) if batch * triton.cdiv(long_side, b) >= sm_count), 16)
        return dict(BLOCK_M=16 if m <= 16 else block, BLOCK_N=16 if n <= 16 else block, BLOCK_K=64, GROUP_M=8,
                    num_warps=4, num_stages=4)
    if batch * triton.cdiv(m, 128) * triton.cdiv(n, 128) >= sm_count:
        return dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=32, GROUP_M=8, num_warps=8, num_stages=3)
    return dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4)


def choose_k_split(programs, k, block_k, device):
    sm_count = torch.cuda.get_device_properties(device).multi_processor_count
    splits = min(triton.cdiv(2 * sm_count, programs), k // (8 * block_k))
    if 4 * programs > sm_count or splits < 2:
        return k
    return triton.cdiv(triton.cdiv(k, splits), block_k) * block_k'''


ROUND_TO_BODY = "    return x.to(part_type)"

# The interpreter truncates fp32 -> bf16 casts; rounding the bits to nearest even matches the GPU's cvt.rn.
INTERPRETER_BF16_ROUND_TO_BODY = """\
    bits = x.to(tl.uint32, bitcast=True)
    bits += 0x7FFF + ((bits >> 16) & 1)
    return (bits >> 16).to(tl.uint16).to(part_type, bitcast=True)"""


def render(params: dict) -> str:
    dtype = params["dtype"]
    part_dtype = common.TL_PART_DTYPE[dtype]
    # The interpreter's tl.dot multiplies bf16 tiles as raw 16-bit integers; fp32 holds their products exactly.
    interpret_bf16 = params["interpret"] and part_dtype == "tl.bfloat16"
    return common.render(
        TEMPLATE,
        dtype=dtype,
        conj_a=bool(params["conj_a"]),
        conj_b=bool(params["conj_b"]),
        dot_dtype="tl.float32" if interpret_bf16 else part_dtype,
        round_to_body=INTERPRETER_BF16_ROUND_TO_BODY if interpret_bf16 else ROUND_TO_BODY,
        config_source=INTERPRETER_CONFIG_SOURCE if params["interpret"] else GPU_CONFIG_SOURCE,
    )


def variants(dtype: str) -> list[dict]:
    return [
        {"op": "matmul", "dtype": dtype, "conj_a": conj_a, "conj_b": conj_b, "interpret": False}
        for conj_a in (False, True)
        for conj_b in (False, True)
    ]


# -- ATen adapters ------------------------------------------------------------------------------------------

class _Form:
    """How one overload's operands map onto the kernel's [batch, rows, cols] matrices."""

    def __init__(self, a_dims: int, b_dims: int, lift_a: tuple, lift_b: tuple, result_dims: tuple[int, ...]):
        self.a_dims, self.b_dims = a_dims, b_dims
        self.lift_a, self.lift_b = lift_a, lift_b  # indexing that views an operand as 3-D
        self.result_dims = result_dims  # which of (batch, m, n) the result keeps
        self.lift_result = tuple(slice(None) if d in result_dims else None for d in range(3))


_ROW = (None, None, slice(None))  # a vector as a [1, 1, K] left operand
_COLUMN = (None, slice(None), None)  # a vector as a [1, K, 1] right operand, or an [M] result as [1, M, 1]
_FORMS = {
    "mm": _Form(2, 2, (None,), (None,), (1, 2)),
    "bmm": _Form(3, 3, (), (), (0, 1, 2)),
    "mv": _Form(2, 1, (None,), _COLUMN, (1,)),
    "dot": _Form(1, 1, _ROW, _COLUMN, ()),
}


def _raw(t: torch.Tensor) -> tuple[torch.Tensor, bool]:
    """The data view without the lazy conj bit, and whether the bit was set (it becomes a kernel flag)."""
    return (t.conj(), True) if t.is_conj() else (t, False)


def _same_view(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.data_ptr() == y.data_ptr() and x.shape == y.shape and x.stride() == y.stride()


def _complex_product(load, form: _Form, a, b, *, bias=None, beta=0, alpha=1, out=None, in_place=False,
                     conj_a=False):
    """alpha * a @ b + beta * bias into out (or into bias itself when in_place, or a new tensor); NotImplemented
    when the call is not exactly covered, so that ATen (through the upcast path) decides what it means."""
    if not isinstance(a, torch.Tensor) or common.dtype_name(a) is None:
        return NotImplemented
    others = [t for t in (bias, out) if t is not None]
    for t in [a, b, *others]:
        if not isinstance(t, torch.Tensor) or t.dtype != a.dtype or t.device != a.device or t.is_neg():
            return NotImplemented
    if any(t.is_conj() for t in others) or a.dim() != form.a_dims or b.dim() != form.b_dims:
        return NotImplemented
    try:
        alpha, beta = complex(alpha), complex(beta)
    except TypeError:
        return NotImplemented

    raw_a, a_conj = _raw(a)
    raw_b, b_conj = _raw(b)
    a3, b3 = raw_a[form.lift_a], raw_b[form.lift_b]
    batch, m, k = a3.shape
    if b3.shape[0] != batch or b3.shape[1] != k:
        return NotImplemented
    result_shape = tuple((batch, m, b3.shape[2])[d] for d in form.result_dims)
    addend = None
    if bias is not None:
        if in_place and bias.shape != result_shape:
            return NotImplemented
        try:
            if torch.broadcast_shapes(bias.shape, result_shape) != result_shape:
                return NotImplemented
        except RuntimeError:
            return NotImplemented
        addend = bias.expand(result_shape)

    target = bias if in_place else out
    if target is None:
        written = target = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    else:
        if any(size > 1 and stride == 0 for size, stride in zip(target.shape, target.stride())):
            return NotImplemented  # several result elements would land on one memory location
        common.resize_output(target, result_shape)
        written = target
        read = [raw_a, raw_b] + ([addend] if addend is not None and not _same_view(addend, target) else [])
        if any(common.shares_memory(target, t) for t in read):
            # Tiles written early would change operands other tiles still read: compute aside, then copy.
            written = torch.empty(result_shape, dtype=a.dtype, device=a.device)
    if addend is not None and _same_view(addend, written):
        addend = None  # the kernel reads the addend from out itself, which is safe tile by tile

    run = load({"op": "matmul", "dtype": common.dtype_name(a), "conj_a": a_conj != conj_a, "conj_b": b_conj})
    run(a3, b3, written[form.lift_result], None if addend is None else addend[form.lift_result],
        alpha.real, alpha.imag, beta.real, beta.imag)
    if written is not target:
        target.copy_(written)
    return target


def _adapter(form_name: str, *, with_bias=False, out=False, in_place=False, conj_a=False):
    form = _FORMS[form_name]

    def adapter(load, args, kwargs, device_type):
        if with_bias:
            bias, a, b = args[:3]
            scalars = {"beta": kwargs.get("beta", 1), "alpha": kwargs.get("alpha", 1)}
        else:
            a, b = args[:2]
            bias, scalars = None, {}
        return _complex_product(load, form, a, b, bias=bias, out=kwargs.get("out") if out else None,
                                in_place=in_place, conj_a=conj_a, **scalars)

    return adapter


ATEN = {
    "aten::mm": _adapter("mm"),
    "aten::mm.out": _adapter("mm", out=True),
    "aten::bmm": _adapter("bmm"),
    "aten::bmm.out": _adapter("bmm", out=True),
    "aten::addmm": _adapter("mm", with_bias=True),
    "aten::addmm.out": _adapter("mm", with_bias=True, out=True),
    "aten::addmm_": _adapter("mm", with_bias=True, in_place=True),
    "aten::baddbmm": _adapter("bmm", with_bias=True),
    "aten::baddbmm_": _adapter("bmm", with_bias=True, in_place=True),
    "aten::baddbmm.out": _adapter("bmm", with_bias=True, out=True),
    "aten::addmv": _adapter("mv", with_bias=True),
    "aten::addmv.out": _adapter("mv", with_bias=True, out=True),
    "aten::addmv_": _adapter("mv", with_bias=True, in_place=True),
    "aten::mv": _adapter("mv"),
    "aten::mv.out": _adapter("mv", out=True),
    "aten::dot": _adapter("dot"),
    "aten::dot.out": _adapter("dot", out=True),
    "aten::vdot": _adapter("dot", conj_a=True),
    "aten::vdot.out": _adapter("dot", out=True, conj_a=True),
}
