"""The complex matmul family under Triton's interpreter, against complex128 products of the same 16-bit inputs.

Tolerance: the kernel accumulates exact products of 16-bit parts in fp32 and rounds once, so each part of a
result is within half a 16-bit ulp of the exact value (at most eps/2 relative to its magnitude) plus the fp32
summation error (about K * 2**-24 relative to S = |alpha| * sum_k |a_ik| |b_kj| + |beta| |c_ij|). With K <= 70
that is below 0.51 eps * S per part, below 0.73 eps * S for the complex error the fixture measures: ulps=1 with
scale=S leaves a margin without hiding an error of a whole ulp.
"""

import functools
import json
import types

import pytest
import torch

from conftest import DTYPE_NAMES, assert_close_16bit
from jitdtypes import dtypes
from kernels_templates import common, matmul, matmul_kernels

dtype_names = pytest.mark.parametrize("dtype_name", DTYPE_NAMES)


@pytest.fixture
def call(load):
    """call("aten::mm", *args, **kwargs): the adapter's result, as the dispatcher would hand it the call."""
    loader = load("matmul")

    def call_adapter(overload, *args, **kwargs):
        return matmul.ATEN[overload](loader, args, kwargs, "cpu")

    return call_adapter


def rand(*shape, dtype_name, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=torch.complex64, generator=generator).to(dtypes.COMPLEX_BY_NAME[dtype_name])


def wide(t):
    """The complex128 value of a 16-bit complex tensor, honouring a conj bit (bcomplex32 has no conj kernel)."""
    if t.is_conj():
        return t.conj().to(torch.complex128).conj()
    return t.to(torch.complex128)


def expected(a, b, bias=None, alpha=1, beta=1, conj_a=False):
    """(value, scale): alpha * a @ b + beta * bias in complex128, and the magnitude the error is measured against."""
    wa = wide(a).conj() if conj_a else wide(a)
    value = alpha * torch.matmul(wa, wide(b))
    scale = abs(alpha) * torch.matmul(wa.abs(), wide(b).abs())
    if bias is not None and beta != 0:
        value = value + beta * wide(bias)
        scale = scale + abs(beta) * wide(bias).abs()
    return value, scale


def check(actual, dtype_name, reference):
    value, scale = reference
    assert actual.dtype == dtypes.COMPLEX_BY_NAME[dtype_name]
    assert_close_16bit(actual, value, dtype_name, ulps=1.0, scale=scale)


# -- mm: shapes not multiple of the interpreter's 16x16x16 tiles, and operand layouts ------------------------


@dtype_names
@pytest.mark.parametrize("m, n, k", [(1, 1, 1), (5, 7, 3), (33, 17, 65)])
def test_mm_shapes(call, dtype_name, m, n, k):
    a, b = rand(m, k, dtype_name=dtype_name), rand(k, n, dtype_name=dtype_name, seed=1)
    check(call("aten::mm", a, b), dtype_name, expected(a, b))


STRIDED_OPERANDS = {
    # name: r -> (a [19, 18], b [18, 17]), views of random tensors made by r(*shape, seed=...)
    "a_transposed": lambda r: (r(18, 19).t(), r(18, 17, seed=1)),
    "b_transposed": lambda r: (r(19, 18), r(17, 18, seed=1).t()),
    "both_transposed": lambda r: (r(18, 19).t(), r(17, 18, seed=1).t()),
    "sliced": lambda r: (r(38, 40)[::2, 1:37:2], r(54, 40, seed=1)[::3, 2:19]),  # no unit stride in a
    "sliced_transposed": lambda r: (r(40, 38)[1:37:2, ::2].t(), r(17, 40, seed=1)[:, :36:2].t()),
    "broadcast_rows": lambda r: (r(1, 18).expand(19, 18), r(18, 17, seed=1)),
}


@dtype_names
@pytest.mark.parametrize("layout", sorted(STRIDED_OPERANDS))
def test_mm_strided_operands(call, dtype_name, layout):
    a, b = STRIDED_OPERANDS[layout](functools.partial(rand, dtype_name=dtype_name))
    assert a.shape == (19, 18) and b.shape == (18, 17)
    check(call("aten::mm", a, b), dtype_name, expected(a, b))


@dtype_names
@pytest.mark.parametrize("conj_a, conj_b", [(True, False), (False, True), (True, True)])
def test_mm_conj_bit_operands(call, dtype_name, conj_a, conj_b):
    # .mH is the common way a conj bit arrives: conjugate and transposed, read in place through the flags.
    x, y = rand(20, 21, dtype_name=dtype_name), rand(22, 20, dtype_name=dtype_name, seed=1)
    a = x.mH if conj_a else x.t()
    b = y.mH if conj_b else y.t()
    assert a.is_conj() == conj_a and b.is_conj() == conj_b
    check(call("aten::mm", a, b), dtype_name, expected(a, b))


# -- addmm: scalars, broadcast bias, beta == 0, out= and in-place ----------------------------------------------


@dtype_names
@pytest.mark.parametrize(
    "alpha, beta, bias_shape",
    [(1, 1, (17, 9)), (0.5, -2, (9,)), (1j, 0.5 - 1j, (1, 9)), (2 - 1j, 1, (17, 1)), (1, 0.25j, ())],
)
def test_addmm_scalars_and_broadcast_bias(call, dtype_name, alpha, beta, bias_shape):
    a, b = rand(17, 20, dtype_name=dtype_name), rand(20, 9, dtype_name=dtype_name, seed=1)
    bias = rand(*bias_shape, dtype_name=dtype_name, seed=2)
    result = call("aten::addmm", bias, a, b, beta=beta, alpha=alpha)
    check(result, dtype_name, expected(a, b, bias, alpha, beta))


@dtype_names
def test_addmm_defaults_when_scalars_are_missing(call, dtype_name):
    a, b, bias = (rand(6, 5, dtype_name=dtype_name), rand(5, 4, dtype_name=dtype_name, seed=1),
                  rand(6, 4, dtype_name=dtype_name, seed=2))
    check(call("aten::addmm", bias, a, b), dtype_name, expected(a, b, bias))


@dtype_names
@pytest.mark.parametrize("alpha", [1, 1 + 1j])
def test_addmm_beta_zero_ignores_nan_bias(call, dtype_name, alpha):
    a, b = rand(7, 6, dtype_name=dtype_name), rand(6, 5, dtype_name=dtype_name, seed=1)
    bias = torch.full((7, 5), complex(float("nan"), float("inf")), dtype=torch.complex64).to(a.dtype)
    result = call("aten::addmm", bias, a, b, beta=0, alpha=alpha)
    assert torch.isfinite(torch.view_as_real(result)).all()
    check(result, dtype_name, expected(a, b, alpha=alpha))


@dtype_names
def test_addmm_out_and_in_place(call, dtype_name):
    a, b = rand(12, 10, dtype_name=dtype_name), rand(10, 11, dtype_name=dtype_name, seed=1)
    bias = rand(12, 11, dtype_name=dtype_name, seed=2)
    reference = expected(a, b, bias, alpha=0.5, beta=2j)

    out = torch.empty(0, dtype=a.dtype)
    assert call("aten::addmm.out", bias, a, b, beta=2j, alpha=0.5, out=out) is out
    check(out, dtype_name, reference)

    # out aliasing the bias exactly: the kernel reads the addend from out itself
    aliased = bias.clone()
    assert call("aten::addmm.out", aliased, a, b, beta=2j, alpha=0.5, out=aliased) is aliased
    check(aliased, dtype_name, reference)

    in_place = bias.clone()
    assert call("aten::addmm_", in_place, a, b, beta=2j, alpha=0.5) is in_place
    check(in_place, dtype_name, reference)

    # an in-place result in a transposed (column-major) tensor keeps its strides
    column_major = bias.t().contiguous().t()
    assert call("aten::addmm_", column_major, a, b, beta=2j, alpha=0.5).stride() == (1, 12)
    check(column_major, dtype_name, reference)


@dtype_names
def test_out_overlapping_an_operand_is_computed_before_it_is_written(call, dtype_name):
    a, b = rand(9, 9, dtype_name=dtype_name), rand(9, 9, dtype_name=dtype_name, seed=1)
    reference = expected(a, b)
    a_copy = a.clone()
    assert call("aten::mm.out", a_copy, b, out=a_copy) is a_copy
    check(a_copy, dtype_name, reference)

    square = a.clone()
    reference = expected(a, a, a, alpha=1, beta=1)
    assert call("aten::addmm_", square, square, square) is square
    check(square, dtype_name, reference)


@dtype_names
def test_out_of_another_shape_is_resized_like_aten(call, dtype_name):
    a, b = rand(4, 3, dtype_name=dtype_name), rand(3, 5, dtype_name=dtype_name, seed=1)
    out = torch.empty(2, 2, dtype=a.dtype)
    with pytest.warns(UserWarning, match="was resized"):
        call("aten::mm.out", a, b, out=out)
    assert out.shape == (4, 5)
    check(out, dtype_name, expected(a, b))


# -- split K: the interpreter splits single-tile products into 32-deep partial sums -----------------------------


@dtype_names
@pytest.mark.parametrize("alpha, beta", [(1, 1), (0.5 + 1j, -1j)])
def test_split_k_partial_sums(call, dtype_name, alpha, beta):
    a = rand(7, 70, dtype_name=dtype_name).conj()  # 70 = 32 + 32 + 6: the last split is partial
    b = rand(70, 5, dtype_name=dtype_name, seed=1)
    bias = rand(7, 5, dtype_name=dtype_name, seed=2)
    check(call("aten::addmm", bias, a, b, beta=beta, alpha=alpha), dtype_name, expected(a, b, bias, alpha, beta))
    check(call("aten::mv", a, b[:, 0]), dtype_name, expected(a, b[:, 0]))
    # wide enough for the real-2x2-block form (THIN is 8 in the interpreter), still one tile: split too
    a, b = rand(12, 70, dtype_name=dtype_name, seed=3), rand(70, 11, dtype_name=dtype_name, seed=4).conj()
    bias = rand(12, 11, dtype_name=dtype_name, seed=5)
    check(call("aten::addmm", bias, a, b, beta=beta, alpha=alpha), dtype_name, expected(a, b, bias, alpha, beta))


# -- bmm / baddbmm -----------------------------------------------------------------------------------------


@dtype_names
def test_bmm_with_a_broadcast_batch(call, dtype_name):
    # 3x2 tiles per batch entry, so the program id carries both the batch and the tile
    a = rand(1, 33, 17, dtype_name=dtype_name).expand(3, 33, 17)  # batch stride 0
    b = rand(3, 20, 17, dtype_name=dtype_name, seed=1).transpose(1, 2)
    assert a.stride(0) == 0 and b.stride(1) == 1
    check(call("aten::bmm", a, b), dtype_name, expected(a, b))


@dtype_names
def test_bmm_out_and_conj_bit(call, dtype_name):
    a = rand(2, 6, 5, dtype_name=dtype_name).conj()
    b = rand(2, 7, 5, dtype_name=dtype_name, seed=1).mH
    out = torch.empty(2, 6, 7, dtype=a.dtype)
    assert call("aten::bmm.out", a, b, out=out) is out
    check(out, dtype_name, expected(a, b))


@dtype_names
def test_baddbmm_variants(call, dtype_name):
    a, b = rand(3, 8, 18, dtype_name=dtype_name), rand(3, 18, 5, dtype_name=dtype_name, seed=1)
    bias = rand(8, 5, dtype_name=dtype_name, seed=2)  # broadcast over the batch
    check(call("aten::baddbmm", bias, a, b, beta=-1, alpha=2j), dtype_name, expected(a, b, bias, 2j, -1))

    out = torch.empty(3, 8, 5, dtype=a.dtype)
    assert call("aten::baddbmm.out", bias, a, b, out=out) is out
    check(out, dtype_name, expected(a, b, bias))

    full_bias = rand(3, 8, 5, dtype_name=dtype_name, seed=3)
    reference = expected(a, b, full_bias, alpha=0.5, beta=0.5)
    assert call("aten::baddbmm_", full_bias, a, b, beta=0.5, alpha=0.5) is full_bias
    check(full_bias, dtype_name, reference)


# -- mv / addmv / dot / vdot --------------------------------------------------------------------------------


@dtype_names
def test_mv_and_addmv(call, dtype_name):
    matrix = rand(21, 19, dtype_name=dtype_name).t()  # transposed 19x21
    vector = rand(42, dtype_name=dtype_name, seed=1)[::2]  # strided
    check(call("aten::mv", matrix, vector), dtype_name, expected(matrix, vector))

    out = torch.empty(19, dtype=matrix.dtype)
    assert call("aten::mv.out", matrix, vector, out=out) is out
    check(out, dtype_name, expected(matrix, vector))

    bias = rand(1, dtype_name=dtype_name, seed=2)  # broadcast to 19
    check(call("aten::addmv", bias, matrix, vector, beta=2, alpha=-1j), dtype_name,
          expected(matrix, vector, bias, -1j, 2))
    out = torch.empty(19, dtype=matrix.dtype)
    assert call("aten::addmv.out", bias, matrix, vector, beta=0, out=out) is out
    check(out, dtype_name, expected(matrix, vector))

    in_place = rand(19, dtype_name=dtype_name, seed=3)
    reference = expected(matrix, vector, in_place, alpha=1, beta=1j)
    assert call("aten::addmv_", in_place, matrix, vector, beta=1j) is in_place
    check(in_place, dtype_name, reference)


@dtype_names
@pytest.mark.parametrize("overload, conj_a", [("aten::dot", False), ("aten::vdot", True)])
def test_dot_and_vdot(call, dtype_name, overload, conj_a):
    x = rand(70, dtype_name=dtype_name)[::2]  # 35 elements: two K blocks and a partial one, strided
    y = rand(35, dtype_name=dtype_name, seed=1)
    result = call(overload, x, y)
    assert result.shape == ()
    check(result, dtype_name, expected(x, y, conj_a=conj_a))

    out = torch.empty((), dtype=x.dtype)
    assert call(overload + ".out", x.conj(), y, out=out) is out  # the conj bit cancels or adds to vdot's
    check(out, dtype_name, expected(x.conj(), y, conj_a=conj_a))


# -- empty shapes ---------------------------------------------------------------------------------------------


@dtype_names
def test_empty_reduction_gives_bias_or_zeros(call, dtype_name):
    a, b = rand(3, 0, dtype_name=dtype_name), rand(0, 4, dtype_name=dtype_name)
    assert torch.equal(torch.view_as_real(call("aten::mm", a, b)), torch.zeros(3, 4, 2))
    bias = rand(3, 4, dtype_name=dtype_name, seed=2)
    check(call("aten::addmm", bias, a, b, beta=2j), dtype_name, expected(a, b, bias, beta=2j))
    assert torch.equal(torch.view_as_real(call("aten::dot", a[0], b[:, 0])), torch.zeros(2))


@dtype_names
def test_empty_results(call, dtype_name):
    assert call("aten::mm", rand(0, 5, dtype_name=dtype_name), rand(5, 3, dtype_name=dtype_name)).shape == (0, 3)
    assert call("aten::bmm", rand(0, 2, 5, dtype_name=dtype_name), rand(0, 5, 3, dtype_name=dtype_name)).shape == (
        0, 2, 3)
    assert call("aten::mv", rand(0, 5, dtype_name=dtype_name), rand(5, dtype_name=dtype_name)).shape == (0,)


# -- calls the family does not cover -------------------------------------------------------------------------


def test_not_implemented_for_uncovered_calls(call):
    half = rand(4, 3, dtype_name="complex32")
    other = rand(3, 2, dtype_name="complex32")
    assert call("aten::mm", half, other.to(torch.complex64)) is NotImplemented  # mixed precision
    assert call("aten::mm", half, torch._neg_view(other)) is NotImplemented  # neg bit
    assert call("aten::mm", half, half) is NotImplemented  # shapes ATen rejects: its error message wins
    assert call("aten::mm", half.to(torch.complex64), other.to(torch.complex64)) is NotImplemented
    wrong_out = torch.empty(4, 2, dtype=torch.complex64)
    assert call("aten::mm.out", half, other, out=wrong_out) is NotImplemented
    assert call("aten::addmm", rand(4, 2, dtype_name="complex32").conj(), half, other) is NotImplemented
    assert call("aten::addmm", rand(3, 2, dtype_name="complex32"), half, other) is NotImplemented
    assert call("aten::addmm_", rand(1, 2, dtype_name="complex32"), half, other) is NotImplemented
    if "bcomplex32" in dtypes.COMPLEX_BY_NAME:
        assert call("aten::mm", half, other.to(dtypes.COMPLEX_BY_NAME["bcomplex32"])) is NotImplemented


# -- family contract ------------------------------------------------------------------------------------------


@dtype_names
def test_variants_render_to_python_modules(dtype_name):
    variants = matmul.variants(dtype_name)
    conj_flags = {(v["conj_a"], v["conj_b"]) for v in variants}
    assert conj_flags == {(False, False), (False, True), (True, False), (True, True)}
    for params in variants:
        assert params["interpret"] is False and json.loads(json.dumps(params)) == params
        source = matmul.render(params)
        compile(source, "<rendered>", "exec")
        assert "def run(" in source and "MUTATES" in source


def test_gpu_configs_fit_tensor_cores_and_split_only_idle_grids(monkeypatch):
    # The GPU variant's launch choices, without a GPU.
    params = matmul.variants("complex32")[0]
    module = common.exec_source(matmul.render(params), "jd_test_matmul_gpu")
    config = module.product.config
    assert config is matmul_kernels.GpuConfig
    h200 = types.SimpleNamespace(multi_processor_count=132)
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda device: h200)
    shapes = [(1, 4096, 4096, 4096), (8, 512, 512, 64), (1, 512, 512, 512), (1, 4096, 1, 4096), (1, 1, 1, 10**6),
              (1, 64, 1, 10**5), (1, 128, 128, 10**5), (1, 1, 4096, 64)]
    for batch, m, n, k in shapes:
        chosen = config.choose_config(batch, m, n, k, "cuda")
        assert min(chosen["BLOCK_M"], chosen["BLOCK_N"], chosen["BLOCK_K"]) >= 16  # tl.dot's minimum on GPUs
        programs = batch * -(-m // chosen["BLOCK_M"]) * -(-n // chosen["BLOCK_N"])
        k_per_split = config.choose_k_split(programs, k, chosen["BLOCK_K"], "cuda")
        if k_per_split < k:
            assert 4 * programs <= 132 and k_per_split % chosen["BLOCK_K"] == 0
            assert k_per_split >= 8 * chosen["BLOCK_K"]
    assert config.choose_k_split(1, 10**6, 64, "cuda") < 10**6  # dot: split across the SMs
    assert config.choose_k_split(4096, 4096, 32, "cuda") == 4096
    # the autotuned real-2x2-block configs: wgmma-sized on Hopper, stages that fit shared memory (H100, A100)
    for major, shared_bytes in ((9, 227 * 1024), (8, 163 * 1024)):
        for block_m, block_n, block_k, warps, stages in matmul_kernels.GEMM_CONFIGS[major]:
            assert min(block_m, 2 * block_n, 2 * block_k) >= 16 and (major < 9 or block_m >= 64 * (warps // 4))
            assert stages * (block_m * 2 * block_k + 2 * block_k * 2 * block_n) * 2 <= shared_bytes
