"""Unary template family under Triton's interpreter, against PyTorch's complex128 results on the same rounded
inputs.

Tolerance: rounding each part once to nearest is off by at most 0.5 ulp of |result| in assert_close_16bit's
measure; ulps=1 leaves the other half for fp32 evaluation error, which the formulas keep near 1e-6 relative.
"""

import json
import math

import pytest
import torch

from conftest import DTYPE_NAMES
from conftest import assert_close_16bit as assert_close
from jitdtypes import dtypes
from kernels_templates import common, elementwise, unary

# numpy reports overflow and division by zero in the lanes that the kernels' tl.where calls discard.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter")



LAYOUTS = elementwise.LAYOUTS
# Smallest normal and largest finite part value: where the relative measure means something.
NORMAL_RANGE = {"complex32": (2.0**-14, 65504.0), "bcomplex32": (2.0**-126, 3.3895e38)}


def params(op, dtype, layout="interleaved", out=False):
    return {"op": op, "dtype": dtype, "layout": layout, "out": out, "scalars": []}


def rounded(values, dtype):
    """complex values -> the 16-bit complex tensor, and the complex128 tensor of exactly its values."""
    x = torch.as_tensor(values, dtype=torch.complex128).to(torch.complex64).to(dtypes.COMPLEX_BY_NAME[dtype])
    return x, x.to(torch.complex128)


def random_rounded(dtype, shape, scale=1.5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return rounded(torch.randn(shape, dtype=torch.complex64, generator=g) * scale, dtype)


def reference(op, z):
    return getattr(torch, op)(z)


def run_layout(run, x, layout, op):
    """Call run in either layout; the result as a complex (or real) tensor for comparison."""
    if layout == "interleaved":
        return run(x)
    re, im = torch.view_as_real(x).unbind(-1)  # strided views: planar operands need not be contiguous
    result = run(re, im)
    return result if op in unary.REAL_RESULT else torch.complex(result[0].double(), result[1].double())


def in_normal_range(expected, dtype):
    """Points whose exact result rounds to a finite 16-bit value with a normal magnitude (subnormal parts of
    such a result still meet the relative tolerance)."""
    lo, hi = NORMAL_RANGE[dtype]
    parts = torch.view_as_real(expected) if expected.is_complex() else expected[..., None]
    return torch.isfinite(parts).all(-1) & (parts.abs() <= hi).all(-1) & (expected.abs() >= lo)


# -- values ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", sorted(unary.OPS))
def test_matches_complex128(load, op, dtype, layout):
    x, exact = random_rounded(dtype, (5, 9))
    actual = run_layout(load("unary")(params(op, dtype, layout)), x, layout, op)
    if layout == "interleaved":
        assert actual.dtype == (dtypes.PART_BY_NAME[dtype] if op in unary.REAL_RESULT else x.dtype)
    assert_close(actual, reference(op, exact), dtype, ulps=1)


def wide_range_samples(dtype, count=128, seed=1):
    """Magnitudes spread log-uniformly over most of the dtype's range, plus points just off 0, +-1 and +-i
    (where naive formulas cancel or sit on branch points)."""
    g = torch.Generator().manual_seed(seed)
    top = 15 if dtype == "complex32" else 120
    magnitude = torch.exp2(torch.rand(count, generator=g, dtype=torch.float64) * (2 * top) - top)
    angle = (torch.rand(count, generator=g, dtype=torch.float64) * 2 - 1) * math.pi
    centers = torch.tensor([0, 1, -1, 1j, -1j], dtype=torch.complex128)[torch.randint(0, 5, (count,), generator=g)]
    offset = torch.polar(torch.exp2(-torch.rand(count, generator=g, dtype=torch.float64) * 12), angle.flip(0))
    return torch.cat([torch.polar(magnitude, angle), centers + offset])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", sorted(unary.OPS))
def test_wide_range_and_near_special_points(load, op, dtype):
    x, exact = rounded(wide_range_samples(dtype), dtype)
    actual = load("unary")(params(op, dtype))(x)
    expected = reference(op, exact)
    keep = in_normal_range(expected, dtype)
    assert keep.sum() >= 50, "too few comparable points to mean anything"
    assert_close(actual[keep], expected[keep], dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_sine_and_cosine_reduce_large_arguments_exactly(load, dtype):
    """exp(iy) = cos y + i sin y out to the dtype's largest y: past |y| = 800 the kernels reduce y on its integer
    bits, in blocks that mix such arguments with small ones."""
    top = 38.5 if dtype == "bcomplex32" else 4.8
    y = torch.logspace(-3, top, 300, dtype=torch.float64)
    y = torch.cat([y, -y, torch.tensor([0.0, -0.0, 799.5, 800.5, 804.0, 1e4])])
    x, exact = rounded(1j * y, dtype)
    assert_close(load("unary")(params("exp", dtype))(x), torch.exp(exact), dtype, ulps=1)
    special, _ = rounded([complex(0, float("inf")), complex(0, float("nan"))], dtype)
    assert torch.isnan(torch.view_as_real(load("unary")(params("exp", dtype))(special))).all()


# Points on every branch cut, approached from both sides through the sign of a zero part.
CUT_POINTS = [complex(r, z) for r in (-2.0, -0.5, 0.5, 2.0) for z in (0.0, -0.0)]
CUT_POINTS += [complex(z, i) for i in (-2.0, -0.5, 0.5, 2.0) for z in (0.0, -0.0)]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize(
    "op", ["log", "log1p", "log2", "sqrt", "rsqrt", "angle", "asin", "acos", "atan", "asinh", "acosh", "atanh"]
)
def test_branch_cuts_follow_the_sign_of_zero(load, op, dtype):
    x, exact = rounded(CUT_POINTS, dtype)
    actual = load("unary")(params(op, dtype))(x)
    assert_close(actual, reference(op, exact), dtype, ulps=1)


def test_real_and_imaginary_axes_stay_exact(load):
    """exp/sinh/cosh of a real number have an exactly zero imaginary part, sin of an imaginary one a zero real
    part, even where the other part overflows."""
    x, _ = rounded([100.0, -3.0, 20.0], "complex32")
    for op in ("exp", "sinh", "cosh"):
        imaginary = torch.view_as_real(load("unary")(params(op, "complex32"))(x))[:, 1]
        assert torch.equal(imaginary, torch.zeros(3, dtype=torch.float16))
    y, _ = rounded([100j, -3j], "complex32")
    real = torch.view_as_real(load("unary")(params("sin", "complex32"))(y))[:, 0]
    assert torch.equal(real, torch.zeros(2, dtype=torch.float16))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_negation_flips_the_sign_of_zero(load, dtype):
    """neg and conj flip exactly the sign bits IEEE negation flips, zeros included (Triton before 3.8 compiles a
    float's unary minus as 0 - v: +0 for both zeros, so conj(1 + 0j) was 1 + 0j)."""
    x, _ = rounded([complex(a, b) for a in (0.0, -0.0, 1.5) for b in (0.0, -0.0, -2.0)], dtype)
    bits = torch.view_as_real(x).view(torch.int16)
    sign = torch.tensor(-0x8000, dtype=torch.int16)
    for op, flipped in (("neg", torch.tensor([True, True])), ("conj_physical", torch.tensor([False, True]))):
        actual = torch.view_as_real(load("unary")(params(op, dtype))(x)).view(torch.int16)
        assert torch.equal(actual, torch.where(flipped, bits ^ sign, bits)), op


LARGE = {
    # near the fp16 edge: |z| < 65504, but fp16 arithmetic on the parts would overflow
    "complex32": [4.0e4 + 4.5e4j, -3.0e4 + 3.0e4j, 3.0e4 - 2.5e4j, -6.0e4 - 1.0e3j, -1.2e4 + 9.0e3j],
    # near the fp32 / bf16 edge: squares of the parts overflow fp32, so only scaled formulas survive
    "bcomplex32": [2.0e38 + 2.2e38j, -1.5e38 + 1.0e38j, 3.0e37 - 2.5e38j, -3.3e38 - 1.0e36j, -5.0e37 + 2.0e37j],
}
LARGE_OPS = [
    "abs", "angle", "sgn", "sqrt", "rsqrt", "log", "log10", "log1p", "reciprocal", "neg", "conj_physical",
    "asin", "acos", "atan", "asinh", "acosh", "atanh", "tanh", "tan",
]


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", LARGE_OPS)
def test_large_magnitudes_do_not_overflow(load, op, dtype):
    x, exact = rounded(LARGE[dtype], dtype)
    expected = reference(op, exact)
    keep = in_normal_range(expected, dtype)
    assert keep.any()
    actual = load("unary")(params(op, dtype))(x)
    assert_close(actual[keep], expected[keep], dtype, ulps=1)


# -- shapes, strides and layouts ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_strided_inputs_and_several_programs(load, dtype):
    base, exact = random_rounded(dtype, (37, 21), seed=3)  # 777 elements: 7 programs, the last one partial
    run = load("unary")(params("sin", dtype))
    views = ((base, exact), (base.T, exact.T), (base[::2, 1::3], exact[::2, 1::3]), (base[5], exact[5]))
    for view, exact_view in views:  # dense (contiguous runs of parts), then strided
        assert_close(run(view), torch.sin(exact_view), dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_planar_parts_with_different_strides(load, dtype):
    x, exact = random_rounded(dtype, (6, 10), seed=4)
    re = torch.view_as_real(x)[..., 0].T.contiguous().T  # column-major
    im = torch.view_as_real(x)[..., 1]  # stride 2 within rows
    out_re, out_im = load("unary")(params("exp", dtype, "planar"))(re, im)
    assert out_re.is_contiguous() and out_im.is_contiguous()
    assert_close(torch.complex(out_re.double(), out_im.double()), torch.exp(exact), dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_more_dims_than_the_kernel_indexes(load, dtype):
    """A permuted 5-d tensor keeps 5 dims after collapsing: inputs are copied dense, and an out that cannot
    collapse either is written through a temporary."""
    x, exact = random_rounded(dtype, (2, 3, 2, 3, 2), seed=5)
    x, exact = x.permute(4, 2, 0, 3, 1), exact.permute(4, 2, 0, 3, 1)
    assert len(common.collapse_dims(x.shape, x.stride())[0]) > elementwise.MAX_RANK
    assert_close(load("unary")(params("tanh", dtype))(x), torch.tanh(exact), dtype, ulps=1)
    out = torch.empty((3, 2, 3, 2, 2), dtype=x.dtype).permute(1, 4, 3, 0, 2)
    assert out.shape == x.shape and len(common.collapse_dims(out.shape, out.stride())[0]) > elementwise.MAX_RANK
    load("unary")(params("tanh", dtype, out=True))(x, out)
    assert_close(out, torch.tanh(exact), dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_empty_and_zero_dim(load, dtype):
    run = load("unary")(params("sqrt", dtype))
    empty = torch.empty(0, 3, dtype=dtypes.COMPLEX_BY_NAME[dtype])
    assert run(empty).shape == (0, 3)
    x, exact = rounded(-4.0 + 0.0j, dtype)
    assert x.dim() == 0
    result = run(x)
    assert result.shape == () and result.dtype == x.dtype
    assert_close(result, torch.sqrt(exact), dtype)


def test_empty_launches_nothing():
    class NoLaunch:
        def __getitem__(self, grid):
            raise AssertionError("launched for an empty tensor")

    out = torch.empty(4, 0, dtype=torch.complex32)
    elementwise.launch(NoLaunch(), 128, torch.float16, (out,), (out,), ())


def test_64_bit_indexing(load, monkeypatch):
    """Offsets past 2^31 switch the kernel to int64 indices; a lowered limit runs that path on small data."""
    monkeypatch.setattr(elementwise, "INT32_LIMIT", 16)
    x, exact = random_rounded("complex32", (5, 7), seed=6)
    run = load("unary")(params("log", "complex32"))
    assert_close(run(x.T), torch.log(exact.T), "complex32", ulps=1)
    assert_close(run(x), torch.log(exact), "complex32", ulps=1)  # dense operands index their runs in int64 too


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_out_variant_writes_given_tensors(load, dtype, layout):
    x, exact = random_rounded(dtype, (4, 6), seed=7)
    part = dtypes.PART_BY_NAME[dtype]
    run = load("unary")(params("cos", dtype, layout, out=True))
    if layout == "interleaved":
        out = torch.empty(6, 4, dtype=x.dtype).T
        assert run(x, out) is None
    else:
        out_re, out_im = torch.empty(6, 4, dtype=part).T, torch.empty(4, 6, dtype=part)
        assert run(*torch.view_as_real(x).unbind(-1), out_re, out_im) is None
        out = torch.complex(out_re.double(), out_im.double())
    assert_close(out, torch.cos(exact), dtype, ulps=1)


def test_rejects_tensors_of_another_dtype(load):
    with pytest.raises(TypeError, match="float16 parts"):
        load("unary")(params("exp", "complex32"))(torch.zeros(3, dtype=torch.complex64))


# -- rendering and variants --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_variant_renders_a_custom_op_module(dtype):
    found = unary.variants(dtype)
    assert len(found) == len(unary.OPS) * 4
    for p in found:
        assert json.loads(json.dumps(p)) == p and p["interpret"] is False
        module = common.exec_source(unary.render({**p, "interpret": True}), "variant")
        outputs = ["out"] if p["layout"] == "interleaved" or p["op"] in unary.REAL_RESULT else ["out_re", "out_im"]
        assert module.MUTATES == (tuple(outputs) if p["out"] else ())
        schema = torch.library.infer_schema(module.run, mutates_args=module.MUTATES)
        assert schema.endswith("-> ()" if p["out"] else "Tensor" if len(outputs) == 1 else "(Tensor, Tensor)")


def test_module_imports_only_its_own_formula():
    source = unary.render({**params("exp", "complex32"), "interpret": False})
    assert "from kernels_templates.complex_math import cexp\n" in source
    assert "casin" not in source and "csqrt" not in source
    assert "BLOCK = 1024" in source


def test_rejects_bad_params():
    with pytest.raises(ValueError, match="unknown op"):
        unary.render({**params("cbrt", "complex32"), "interpret": True})
    with pytest.raises(ValueError, match="scalars"):
        unary.render({**params("exp", "complex32"), "scalars": ["self"], "interpret": True})


# -- ATen adapters -----------------------------------------------------------------------------------------

def test_no_in_place_adapters_for_real_results():
    assert "aten::abs_" not in unary.ATEN and "aten::angle_" not in unary.ATEN


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_functional_inplace_out(load, dtype):
    loader = load("unary")
    x, exact = random_rounded(dtype, (3, 4), seed=8)

    result = unary.ATEN["aten::exp"](loader, (x,), {}, "cpu")
    assert result.dtype == x.dtype
    assert_close(result, torch.exp(exact), dtype, ulps=1)

    magnitude = unary.ATEN["aten::abs"](loader, (x,), {}, "cpu")
    assert magnitude.dtype == dtypes.PART_BY_NAME[dtype]
    assert_close(magnitude, exact.abs(), dtype, ulps=1)

    y = x.clone()
    assert unary.ATEN["aten::sqrt_"](loader, (y,), {}, "cpu") is y
    assert_close(y, torch.sqrt(exact), dtype, ulps=1)

    out = torch.empty(0, dtype=x.dtype)
    assert unary.ATEN["aten::tanh.out"](loader, (x,), {"out": out}, "cpu") is out
    assert out.shape == x.shape
    assert_close(out, torch.tanh(exact), dtype, ulps=1)

    used = torch.empty(7, dtype=dtypes.PART_BY_NAME[dtype])
    with pytest.warns(UserWarning, match="was resized"):
        unary.ATEN["aten::angle.out"](loader, (x,), {"out": used}, "cpu")
    assert_close(used, exact.angle(), dtype, ulps=1)


def test_adapters_decline_calls_they_do_not_cover(load):
    loader = load("unary")
    x, _ = random_rounded("complex32", (3, 4), seed=9)
    exp, exp_, exp_out = unary.ATEN["aten::exp"], unary.ATEN["aten::exp_"], unary.ATEN["aten::exp.out"]
    assert exp(loader, (x.conj(),), {}, "cpu") is NotImplemented
    assert exp(loader, (torch._neg_view(x),), {}, "cpu") is NotImplemented
    assert exp(loader, (x.to(torch.complex64),), {}, "cpu") is NotImplemented
    assert exp(loader, (x,), {}, "mps") is NotImplemented
    assert exp(loader, (x,), {}, "cuda") is NotImplemented  # the tensor is on the CPU
    assert exp_(loader, (x[:1].expand(3, 4),), {}, "cpu") is NotImplemented  # writes an element twice
    assert exp_out(loader, (x,), {"out": torch.empty(3, 4, dtype=torch.complex64)}, "cpu") is NotImplemented
    assert exp_out(loader, (x,), {"out": torch.empty(3, 4, dtype=x.dtype).conj()}, "cpu") is NotImplemented
    overlapping = torch.empty(20, dtype=x.dtype)
    source = overlapping[:12].view(3, 4)
    assert exp_out(loader, (source,), {"out": overlapping[4:16].view(3, 4)}, "cpu") is NotImplemented
    assert unary.ATEN["aten::abs.out"](loader, (x,), {"out": torch.empty(3, 4, dtype=x.dtype)}, "cpu") is NotImplemented

