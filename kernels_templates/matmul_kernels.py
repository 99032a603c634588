"""The complex matmul family's kernels and their launcher, as real Triton code: out = alpha * op(A) @ op(B) + beta * C
for 16-bit complex operands, op = identity or conj. matmul.py renders, per (dtype, conj_a, conj_b), the few lines
that bind a `Matmul` of this module to those params, and the ATen adapters are in matmul_calls.py.

One batched kernel serves mm, bmm, addmm, baddbmm, mv, addmv, dot and vdot: vectors become 1-wide matrices and
2-D operands a batch of one. Products of two wide sides use the real-2x2-block form of complex multiplication:
op(a) @ op(b) = a_parts [M, 2K] @ [[re, s_b im], [-s_a s_b im, s_a re]] [2K, 2N], with a's interleaved parts read
as a real matrix (pairs adjacent along K: a^T b^T order or a copy makes them so) and b expanded once per call
into that 16-bit block matrix (exact: it only moves and negates parts). The K loop is then one real tl.dot per
step on tiles that go from memory to shared memory untouched, so Triton pipelines them with async copies and
keeps wgmma in flight on Hopper; the output tile comes out interleaved. Thin products (matrix-vector shapes)
are bound by reading the long operand: their tiles are loaded in place through any strides and split into
(re, im) in registers for four real products. Accumulators are fp32, the result is rounded once on store.

What differs between the modules matmul.py renders is passed as constexprs and Python arguments: the
conjugations (the kernel's MIXED_CONJ and CONJ_RESULT), and INTERPRETED_BF16, Triton's CPU interpreter on
bcomplex32, whose tl.dot multiplies bf16 tiles as raw 16-bit integers (fp32 tiles hold their products exactly)
and whose fp32 -> bf16 casts truncate (rounded to nearest even by hand instead, as the GPU's cvt.rn does). The
part dtype comes from the pointers.
"""

import functools
import inspect

import torch
import triton
import triton.language as tl

from . import launcher
from .common import cdiv

# -- kernels -------------------------------------------------------------------------------------------------


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
def dot_operand(tile, INTERPRETED_BF16: tl.constexpr):
    # A tile as tl.dot takes it: as loaded (16-bit parts), or in fp32 for the interpreter's bf16 (see the module
    # docstring); fp32 holds products of 16-bit values exactly.
    if INTERPRETED_BF16:
        tile = tile.to(tl.float32)
    return tile


@triton.jit
def load_operand(ptr, stride_rows, stride_cols, rows_left, cols_left,
                 ROWS: tl.constexpr, COLS: tl.constexpr, COLS_INNER: tl.constexpr, INNER_UNIT: tl.constexpr,
                 INTERPRETED_BF16: tl.constexpr):
    # A transposed operand is read along its memory order and transposed in registers, not copied.
    if COLS_INNER:
        parts = load_parts(ptr, stride_rows, stride_cols, rows_left, cols_left, ROWS, COLS, INNER_UNIT)
        re, im = split_pairs(parts)
    else:
        parts = load_parts(ptr, stride_cols, stride_rows, cols_left, rows_left, COLS, ROWS, INNER_UNIT)
        re_t, im_t = split_pairs(parts)
        re = tl.trans(re_t)
        im = tl.trans(im_t)
    return dot_operand(re, INTERPRETED_BF16), dot_operand(im, INTERPRETED_BF16)


@triton.jit
def round_to(x, part_type: tl.constexpr, INTERPRETED_BF16: tl.constexpr):
    if INTERPRETED_BF16:
        # the interpreter truncates fp32 -> bf16 casts; rounding the bits to nearest even matches the GPU's cvt.rn
        bits = x.to(tl.uint32, bitcast=True)
        bits += 0x7FFF + ((bits >> 16) & 1)
        return (bits >> 16).to(tl.uint16).to(part_type, bitcast=True)
    else:
        return x.to(part_type)


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
def tile_origin(pid, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    # (batch, m0, n0) of a program. Within a batch entry tiles go in groups of GROUP_M rows, so that programs
    # running together share B tiles in L2.
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
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
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, INTERPRETED_BF16: tl.constexpr):
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
    out = round_to(out, out_ptr.dtype.element_ty, INTERPRETED_BF16)
    store_parts(out_ptr, stride_out_m, stride_out_n, m_left, n_left, out, BLOCK_M, BLOCK_N, OUT_UNIT)


@triton.jit
def expand_kernel(b_ptr, blocks_ptr, K, N, stride_batch, stride_k, stride_n, stride_blocks_batch,
                  LEFT_SIGN: tl.constexpr, RIGHT_SIGN: tl.constexpr, N_UNIT: tl.constexpr,
                  BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr, INTERPRETED_BF16: tl.constexpr):
    # A [BLOCK_K, BLOCK_N] tile of the right operand (strides in parts) -> rows 2k and 2k + 1 of its real-2x2-block
    # form [batch, 2K, 2N]: (re, s_r im) and (-s_l s_r im, s_l re) per element, s = -1 for a conjugated operand,
    # so that [a_re, a_im] @ [[re, s_r im], [-s_l s_r im, s_l re]] is op(a) op(b). Negation is exact in 16 bits.
    k_tiles = tl.cdiv(K, BLOCK_K)
    batch = (tl.program_id(0) // k_tiles).to(tl.int64)
    k0 = (tl.program_id(0) % k_tiles) * BLOCK_K
    n0 = tl.program_id(1) * BLOCK_N
    b_ptr += batch * stride_batch + k0.to(tl.int64) * stride_k + n0.to(tl.int64) * stride_n
    re, im = split_pairs(load_parts(b_ptr, stride_k, stride_n, K - k0, N - n0, BLOCK_K, BLOCK_N, N_UNIT).to(tl.float32))
    even_rows = join_pairs(re, RIGHT_SIGN * im)
    odd_rows = join_pairs(-(LEFT_SIGN * RIGHT_SIGN) * im, LEFT_SIGN * re)
    rows = tl.reshape(tl.permute(tl.join(even_rows, odd_rows), 0, 2, 1), (2 * BLOCK_K, 2 * BLOCK_N))
    blocks_ptr += batch * stride_blocks_batch + (2 * k0).to(tl.int64) * (2 * N) + 2 * n0
    store_parts(blocks_ptr, 2 * N, 2, 2 * (K - k0), N - n0,
                round_to(rows, blocks_ptr.dtype.element_ty, INTERPRETED_BF16), 2 * BLOCK_K, BLOCK_N, True)


@triton.jit
def complex_matmul_kernel(
    a_ptr, b_ptr, c_ptr, out_ptr, partials_ptr,
    M, N, K, k_per_split, shape_class,
    stride_a_batch, stride_am, stride_ak,
    stride_b_batch, stride_bk, stride_bn,
    stride_c_batch, stride_cm, stride_cn,
    stride_out_batch, stride_out_m, stride_out_n,
    stride_partials_split, stride_partials_batch, stride_partials_m,
    alpha_re, alpha_im, beta_re, beta_im,
    FORM: tl.constexpr, MIXED_CONJ: tl.constexpr, CONJ_RESULT: tl.constexpr,
    A_K_INNER: tl.constexpr, A_UNIT: tl.constexpr, B_N_INNER: tl.constexpr, B_UNIT: tl.constexpr,
    SPLIT_K: tl.constexpr,
    REAL_SCALARS: tl.constexpr, HAS_C: tl.constexpr, C_UNIT: tl.constexpr, OUT_UNIT: tl.constexpr,
    INTERPRETED_BF16: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
):
    # Strides count 16-bit parts (fp32 ones for partials); offsets are 64-bit because an operand may span more
    # than 2**31 parts while each stride fits in 32 bits. BLOCK_N and BLOCK_K count complex elements.
    # FORM "blocks": a has adjacent pairs along K and is read as the real [M, 2K] matrix of its parts; b is the
    # real-2x2-block form [2K, 2N] (expand_kernel), with the conjugations in it: one real product per K step,
    # whose tiles go from memory to shared memory untouched (async copies feeding tensor cores, no de-interleave).
    # FORM "pairs" (thin products, read in place with any strides): tiles split into (re, im) in registers,
    # four real products. With SPLIT_K, program (tile, s) sums the K range [s * k_per_split, (s + 1) *
    # k_per_split) into fp32 partials, and finish_split_kernel completes the tile. shape_class only keys
    # autotuning.
    batch, m0, n0 = tile_origin(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    split = tl.program_id(1)
    k_start = split * k_per_split
    k_end = tl.minimum(K, k_start + k_per_split)
    a_ptr += batch * stride_a_batch + m0.to(tl.int64) * stride_am + k_start.to(tl.int64) * stride_ak
    if FORM == "blocks":
        b_ptr += batch * stride_b_batch + (2 * k_start).to(tl.int64) * stride_bk + 2 * n0
        acc = tl.zeros((BLOCK_M, 2 * BLOCK_N), tl.float32)
        for k0 in range(k_start, k_end, BLOCK_K):
            a = load_parts(a_ptr, stride_am, stride_ak, M - m0, K - k0, BLOCK_M, BLOCK_K, True)
            b = load_parts(b_ptr, stride_bk, 2, 2 * (K - k0), N - n0, 2 * BLOCK_K, BLOCK_N, True)
            acc = tl.dot(dot_operand(a, INTERPRETED_BF16), dot_operand(b, INTERPRETED_BF16), acc)
            a_ptr += BLOCK_K * stride_ak.to(tl.int64)
            b_ptr += 2 * BLOCK_K * stride_bk.to(tl.int64)
    else:
        b_ptr += batch * stride_b_batch + n0.to(tl.int64) * stride_bn + k_start.to(tl.int64) * stride_bk
        acc_re = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        acc_im = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(k_start, k_end, BLOCK_K):
            ar, ai = load_operand(a_ptr, stride_am, stride_ak, M - m0, K - k0, BLOCK_M, BLOCK_K, A_K_INNER, A_UNIT,
                                  INTERPRETED_BF16)
            br, bi = load_operand(b_ptr, stride_bk, stride_bn, K - k0, N - n0, BLOCK_K, BLOCK_N, B_N_INNER, B_UNIT,
                                  INTERPRETED_BF16)
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
            acc_im = acc_im * -1.0  # not -acc_im: Triton before 3.8 compiles that as 0 - acc_im (+0 for -0)
        acc = join_pairs(acc_re, acc_im)

    if SPLIT_K:
        partials_ptr += split.to(tl.int64) * stride_partials_split + batch * stride_partials_batch
        partials_ptr += m0.to(tl.int64) * stride_partials_m + 2 * n0
        store_parts(partials_ptr, stride_partials_m, 2, M - m0, N - n0, acc, BLOCK_M, BLOCK_N, True)
    else:
        c_ptr += batch * stride_c_batch + m0.to(tl.int64) * stride_cm + n0.to(tl.int64) * stride_cn
        out_ptr += batch * stride_out_batch + m0.to(tl.int64) * stride_out_m + n0.to(tl.int64) * stride_out_n
        finish_tile(acc, c_ptr, out_ptr, M - m0, N - n0, stride_cm, stride_cn, stride_out_m, stride_out_n,
                    alpha_re, alpha_im, beta_re, beta_im, REAL_SCALARS, HAS_C, C_UNIT, OUT_UNIT, BLOCK_M, BLOCK_N,
                    INTERPRETED_BF16)


@triton.jit
def finish_split_kernel(
    partials_ptr, c_ptr, out_ptr,
    M, N, splits,
    stride_partials_split, stride_partials_batch, stride_partials_m,
    stride_c_batch, stride_cm, stride_cn,
    stride_out_batch, stride_out_m, stride_out_n,
    alpha_re, alpha_im, beta_re, beta_im,
    REAL_SCALARS: tl.constexpr, HAS_C: tl.constexpr, C_UNIT: tl.constexpr, OUT_UNIT: tl.constexpr,
    INTERPRETED_BF16: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr,
):
    batch, m0, n0 = tile_origin(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)
    partials_ptr += batch * stride_partials_batch + m0.to(tl.int64) * stride_partials_m + 2 * n0
    acc = tl.full((BLOCK_M, 2 * BLOCK_N), 0.0, tl.float32)
    for _ in range(splits):
        acc += load_parts(partials_ptr, stride_partials_m, 2, M - m0, N - n0, BLOCK_M, BLOCK_N, True)
        partials_ptr += stride_partials_split
    c_ptr += batch * stride_c_batch + m0.to(tl.int64) * stride_cm + n0.to(tl.int64) * stride_cn
    out_ptr += batch * stride_out_batch + m0.to(tl.int64) * stride_out_m + n0.to(tl.int64) * stride_out_n
    finish_tile(acc, c_ptr, out_ptr, M - m0, N - n0, stride_cm, stride_cn, stride_out_m, stride_out_n,
                alpha_re, alpha_im, beta_re, beta_im, REAL_SCALARS, HAS_C, C_UNIT, OUT_UNIT, BLOCK_M, BLOCK_N,
                INTERPRETED_BF16)


# -- launch configurations -----------------------------------------------------------------------------------

# Products with more than THIN rows and columns run the real-2x2-block form with one of a few configs per arch,
# tuned by triton.autotune on first use per shape class and cached on disk with the compiled kernels
# (cache_results). Sizes count complex elements: the real tile is [BLOCK_M, 2 * BLOCK_N] over K steps of
# 2 * BLOCK_K parts. Hopper: 8 warps (two warpgroups) hold a 128 x 256 fp32 accumulator in 128 registers per
# thread, and a 128 x 64 + 64 x 256 stage is 48 KiB of shared memory, so 3 stages fit. Ampere: the same
# accumulator over 8 warps with 32-part K steps, 4 stages of 24 KiB in A100's 164 KiB, and registers capped at
# 240. Thin products (matrix-vector shapes) are bound by reading the long operand: the short
# side gets tl.dot's minimum of 16, the long side the widest block that still gives every SM a program. When
# the output tiles leave most SMs idle (dot, short mv, small GEMMs with a long K), K is split across programs
# that keep at least 8 K blocks each, and a second kernel sums their fp32 partials.

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages) per compute capability major
GEMM_CONFIGS = {
    9: [(128, 128, 32, 8, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4)],
    8: [(128, 128, 16, 8, 4), (256, 64, 32, 8, 3), (128, 64, 32, 8, 3)],
}
# Ampere's register cap: ptxas would take 244-250 for the two larger configs; at 240 they do not spill.
MAX_REGISTERS = {8: 240}


def tuned_gemm(device):
    """A new autotuned real-2x2-block product for `device`'s arch (each Matmul keeps one per device)."""
    major = 9 if torch.cuda.get_device_capability(device)[0] >= 9 else 8
    configs = [triton.Config(dict(BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8), num_warps=warps, num_stages=stages,
                             maxnreg=MAX_REGISTERS.get(major))
               for bm, bn, bk, warps, stages in GEMM_CONFIGS[major]]
    cache = {"cache_results": True} if "cache_results" in inspect.signature(triton.autotune).parameters else {}
    return triton.autotune(configs, key=["shape_class"], restore_value=["out_ptr"], **cache)(complex_matmul_kernel)


class GpuConfig:
    """Launch choices on GPUs."""

    THIN = 16
    EXPAND_BLOCK_K = 32
    EXPAND_BLOCK_N = 64

    @staticmethod
    def tuned_gemm(device):
        return tuned_gemm(device)

    @staticmethod
    def choose_config(batch, m, n, k, device):
        sm_count = torch.cuda.get_device_properties(device).multi_processor_count
        if m <= GpuConfig.THIN or n <= GpuConfig.THIN:
            long_side = max(m, n)
            block = next((b for b in (64, 32) if batch * cdiv(long_side, b) >= sm_count), 16)
            return dict(BLOCK_M=16 if m <= 16 else block, BLOCK_N=16 if n <= 16 else block, BLOCK_K=64, GROUP_M=8,
                        num_warps=4, num_stages=4)
        return dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, GROUP_M=8, num_warps=4, num_stages=4)

    @staticmethod
    def choose_k_split(programs, k, block_k, device):
        sm_count = torch.cuda.get_device_properties(device).multi_processor_count
        splits = min(cdiv(2 * sm_count, programs), k // (8 * block_k))
        if 4 * programs > sm_count or splits < 2:
            return k
        return cdiv(cdiv(k, splits), block_k) * block_k


class InterpreterConfig:
    """Launch choices in Triton's CPU interpreter, which runs each program in numpy: small tiles keep tests fast and
    exercise the block masks, a low THIN sends the tests' small products through the real-2x2-block form too, and
    single-tile products with more than two K blocks are split so that the tests cover the split-K path."""

    THIN = 8
    EXPAND_BLOCK_K = 16
    EXPAND_BLOCK_N = 16

    @staticmethod
    def tuned_gemm(device):
        return None

    @staticmethod
    def choose_config(batch, m, n, k, device):
        return dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=2)

    @staticmethod
    def choose_k_split(programs, k, block_k, device):
        return 2 * block_k if programs == 1 else k


# -- host launcher -------------------------------------------------------------------------------------------


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


def pairs_along_k(x):
    """Whether the [batch, rows, K, 2] parts view x holds each row's pairs adjacent along K."""
    return x.shape[2] == 1 or x.stride(2) == 2


def _finish_constexprs(flags, config) -> dict:
    return dict(**{name: flags[name] for name in ("REAL_SCALARS", "HAS_C", "C_UNIT", "OUT_UNIT", "INTERPRETED_BF16")},
                BLOCK_M=config["BLOCK_M"], BLOCK_N=config["BLOCK_N"], GROUP_M=config["GROUP_M"])


class Matmul:
    """out = alpha * op(a) @ op(b) + beta * c for one rendered module's params: op(a) conjugates a when conj_a,
    op(b) b when conj_b; interpret: launched in Triton's CPU interpreter (InterpreterConfig, else GpuConfig);
    bf16: bcomplex32 operands (the interpreter then computes as INTERPRETED_BF16 says)."""

    def __init__(self, conj_a: bool, conj_b: bool, interpret: bool, bf16: bool) -> None:
        self.conj_a, self.conj_b = conj_a, conj_b
        self.config = InterpreterConfig if interpret else GpuConfig
        self.THIN = self.config.THIN
        self.interpreted_bf16 = interpret and bf16
        # in the launcher's keys: the kernels are every module's, and these params set some of their constexprs
        self.tag = f"matmul conj_a={conj_a} conj_b={conj_b} interpreted_bf16={self.interpreted_bf16}"
        self._pairs_geometry = functools.lru_cache(maxsize=512)(self._pairs_geometry_of)
        # per module and device, as before kernels were real code: a process that compiles for several arches
        # (`jitdtypes warm --arch`, benchmarks/aot_check.py) renders a module per arch, each tuning its own configs
        self.tuned_gemm = functools.lru_cache(maxsize=None)(self.config.tuned_gemm)

    def run(self, a, b, out, bias, alpha_re, alpha_im, beta_re, beta_im):
        """out = alpha * op(a) @ op(b) + beta * (bias, or out's own values when bias is None), batched over dim 0.

        a [B, M, K], b [B, K, N], out and bias [B, M, N] hold raw data (no conj bit; op comes from conj_a/conj_b)
        and may have any strides, 0 included. beta == 0 reads no addend, so NaN/inf there do not propagate.
        """
        if out.numel() == 0:
            return
        beta = complex(beta_re, beta_im)
        addend = None
        if beta != 0:
            addend = out if bias is None else bias
        with launcher.on_device_of(out):
            self.launch(a, b, out, addend, complex(alpha_re, alpha_im), beta)

    def launch(self, a, b, out, c, alpha, beta):
        """[batch, rows, cols] complex tensors: out = alpha * op(a) @ op(b) (+ beta * c unless c is None)."""
        batch, m, k = a.shape
        n = out.shape[2]
        scalars = (alpha.real, alpha.imag, beta.real, beta.imag)
        if min(m, n) <= self.THIN:
            return self.launch_thin(self.thin_key(a, b, out, c, scalars), a, b, out, c, scalars)
        a, b, out = torch.view_as_real(a), torch.view_as_real(b), torch.view_as_real(out)
        c = None if c is None else torch.view_as_real(c)
        conj_a, conj_b = self.conj_a, self.conj_b
        if not pairs_along_k(a) and pairs_along_k(b.transpose(1, 2)):
            # out^T = op(b)^T op(a)^T: b^T has its pairs along K, a^T becomes the expanded right operand
            a, b, out = b.transpose(1, 2), a.transpose(1, 2), out.transpose(1, 2)
            c = None if c is None else c.transpose(1, 2)
            m, n, conj_a, conj_b = n, m, conj_b, conj_a
        if not pairs_along_k(a):
            a = a.contiguous()
        b = self.real_blocks(b, conj_a, conj_b)
        has_c = c is not None
        c = out if c is None else c
        flags = self._flags("blocks", conj_a, conj_b, m, n, k, a.stride(), b.stride(), c.stride(), out.stride(),
                            has_c, alpha.imag == 0 and beta.imag == 0)
        strides = (*a.stride()[:3], *b.stride()[:3], *c.stride()[:3], *out.stride()[:3])
        shape_class = (m.bit_length() << 24) | (n.bit_length() << 16) | (k.bit_length() << 8) | min(batch, 255)
        config = self.config
        tuned = self.tuned_gemm(out.device)
        chosen = config.choose_config(batch, m, n, k, out.device)
        programs = batch * cdiv(m, chosen["BLOCK_M"]) * cdiv(n, chosen["BLOCK_N"])
        k_per_split = config.choose_k_split(programs, k, chosen["BLOCK_K"], out.device)
        if tuned is not None and k_per_split >= k:
            grid = lambda meta: (batch * cdiv(m, meta["BLOCK_M"]) * cdiv(n, meta["BLOCK_N"]), 1)  # noqa: E731
            launcher.launcher(tuned)[grid](
                a, b, c, out, out, m, n, k, k, shape_class, *strides, 0, 0, 0, *scalars, SPLIT_K=False, **flags)
            return
        splits = cdiv(k, k_per_split) if k_per_split < k else 1
        partials = out
        if splits > 1:
            partials = torch.empty((splits, batch, m, 2 * n), dtype=torch.float32, device=out.device)
        launcher.launcher(complex_matmul_kernel)[(programs, splits)](
            a, b, c, out, partials, m, n, k, k_per_split, shape_class, *strides, *partials.stride()[:3], *scalars,
            SPLIT_K=splits > 1, **flags, **chosen,
        )
        if splits > 1:
            args = (partials, c, out, m, n, splits, *partials.stride()[:3], *c.stride()[:3], *out.stride()[:3],
                    *scalars)
            launcher.launcher(finish_split_kernel)[(programs,)](*args, **_finish_constexprs(flags, chosen))

    def real_blocks(self, right, left_conj, right_conj):
        """The [batch, 2K, 2N] real-2x2-block form of a [batch, K, N, 2] parts view (a broadcast batch once)."""
        batch, k, n = right.shape[:3]
        batch = 1 if right.stride(0) == 0 else batch
        blocks = torch.empty((batch, 2 * k, 2 * n), dtype=right.dtype, device=right.device)
        block_k, block_n = self.config.EXPAND_BLOCK_K, self.config.EXPAND_BLOCK_N
        grid = (batch * cdiv(k, block_k), cdiv(n, block_n))
        launcher.launcher(expand_kernel)[grid](
            right, blocks, k, n, right.stride(0), right.stride(1), right.stride(2), blocks.stride(0),
            LEFT_SIGN=-1 if left_conj else 1, RIGHT_SIGN=-1 if right_conj else 1, N_UNIT=n == 1 or right.stride(2) == 2,
            BLOCK_K=block_k, BLOCK_N=block_n, INTERPRETED_BF16=self.interpreted_bf16,
        )
        return blocks.expand(right.shape[0], 2 * k, 2 * n) if batch == 1 else blocks

    def _flags(self, form, conj_a, conj_b, m, n, k, a_strides, b_strides, c_strides, out_strides, has_c,
               real_scalars):
        flags = dict(
            FORM=form, MIXED_CONJ=conj_a != conj_b, CONJ_RESULT=conj_b, REAL_SCALARS=real_scalars,
            HAS_C=has_c, C_UNIT=n == 1 or c_strides[2] == 2, OUT_UNIT=n == 1 or out_strides[2] == 2,
            INTERPRETED_BF16=self.interpreted_bf16,
        )
        flags["A_K_INNER"], flags["A_UNIT"] = read_order(m, k, a_strides[1], a_strides[2])
        flags["B_N_INNER"], flags["B_UNIT"] = read_order(k, n, b_strides[1], b_strides[2])
        return flags

    def thin_key(self, a, b, out, c, scalars):
        """What determines a thin product's launches besides pointers and scalars' values (_pairs_geometry_of's
        argument), for [batch, rows, cols] complex tensors; c: the addend, or None."""
        batch, m, k = a.shape
        return (batch, m, out.shape[2], k, a.stride(), b.stride(), (out if c is None else c).stride(), out.stride(),
                c is not None, scalars[1] == 0 and scalars[3] == 0, out.device, self.tag)

    def _pairs_geometry_of(self, key):
        """Everything a thin product's launches take besides pointers and scalars, once per thin_key (shape, layout
        with strides in complex elements, device): (programs, splits, the product's integer arguments, its
        constexprs, the partials' shape, the finishing kernel's integer arguments and constexprs)."""
        batch, m, n, k, a_strides, b_strides, c_strides, out_strides, has_c, real_scalars, device, _ = key
        a_strides, b_strides, c_strides, out_strides = (tuple(2 * st for st in strides[:3])
                                                        for strides in (a_strides, b_strides, c_strides, out_strides))
        flags = self._flags("pairs", self.conj_a, self.conj_b, m, n, k, a_strides, b_strides, c_strides, out_strides,
                            has_c, real_scalars)
        shape_class = (m.bit_length() << 24) | (n.bit_length() << 16) | (k.bit_length() << 8) | min(batch, 255)
        config = self.config.choose_config(batch, m, n, k, device)
        programs = batch * cdiv(m, config["BLOCK_M"]) * cdiv(n, config["BLOCK_N"])
        k_per_split = self.config.choose_k_split(programs, k, config["BLOCK_K"], device)
        splits = cdiv(k, k_per_split) if k_per_split < k else 1
        partials_shape = (splits, batch, m, 2 * n) if splits > 1 else None
        partials_strides = (batch * m * 2 * n, m * 2 * n, 2 * n) if splits > 1 else out_strides
        integers = (m, n, k, k_per_split, shape_class, *a_strides, *b_strides, *c_strides, *out_strides,
                    *partials_strides)
        finish_integers = (m, n, splits, *partials_strides, *c_strides, *out_strides)
        return (programs, splits, integers, dict(SPLIT_K=splits > 1, **flags, **config), partials_shape,
                finish_integers, _finish_constexprs(flags, config))

    def launch_thin(self, key, a, b, out, c, scalars, eager=False):
        """A thin product (min(m, n) <= THIN), the small ones among them, on the complex tensors themselves:
        geometry from _pairs_geometry_of, launches kept under thin_key's `key` (launcher.Launcher.launch_pointers
        reads them as parts). a, b, out, c: the tensors key describes, or any with their data pointers and dtypes
        (an adapter's plan passes the ATen operands, before lifting them to three dims); c None: no addend. eager:
        the caller holds real tensors outside any tracing, whatever wrap_triton's switch says."""
        # traced sizes may be symbolic
        found = self._pairs_geometry(key) if eager or not launcher.traced() else self._pairs_geometry_of(key)
        _launch_thin_geometry(found, key, a, b, out, c, scalars, eager)

    def prepared_thin(self, key):
        """For an adapter's plan: (a, b, out, c, scalars) -> launch_thin(key, a, b, out, c, scalars, eager=True),
        with the geometry looked up now."""
        return functools.partial(_launch_thin_geometry, self._pairs_geometry(key), key, eager=True)


_product_launcher = launcher.launcher(complex_matmul_kernel)
_finish_launcher = launcher.launcher(finish_split_kernel)


def _launch_thin_geometry(found, key, a, b, out, c, scalars, eager):
    programs, splits, integers, constexprs, partials_shape, finish_integers, finish_constexprs = found
    # the key says which arguments are the same tensor (no addend: c is out; one split: partials are out)
    tensors = (a, b, out) if c is None else (a, b, out, c)
    c = out if c is None else c
    partials = out
    if splits > 1:
        partials = torch.empty(partials_shape, dtype=torch.float32, device=out.device)
        tensors += (partials,)
    _product_launcher.launch_pointers(
        key, (programs, splits), (a, b, c, out, partials, *integers, *scalars), constexprs, tensors, eager)
    if splits > 1:
        _finish_launcher.launch_pointers(
            key, (programs,), (partials, c, out, *finish_integers, *scalars), finish_constexprs, tensors[2:], eager)
