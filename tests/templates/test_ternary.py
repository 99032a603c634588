"""Ternary template family under Triton's interpreter, against PyTorch's complex128 results on the same rounded
inputs (and the same Python scalars).

Tolerance: rounding each part once is off by at most 0.5 ulp of |result| in assert_close_16bit's measure;
ulps=1 leaves the rest for fp32 evaluation error. where only selects, so it must be exact.
"""

import json

import pytest
import torch

from conftest import DTYPE_NAMES, random_rounded
from conftest import elementwise_params as params
from conftest import assert_close_16bit as assert_close
from jitdtypes import dtypes
from kernels_templates import common, elementwise, ternary

# numpy reports overflow and division by zero in the lanes that the kernels' tl.where calls discard.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter")





def as_run_args(value, layout):
    """One operand as `run` takes it: a tensor (bool ones as they are), its (re, im) parts, or two floats."""
    if isinstance(value, torch.Tensor):
        planar = layout == "planar" and value.is_complex()
        return list(torch.view_as_real(value).unbind(-1)) if planar else [value]
    return [complex(value).real, complex(value).imag]


def as_complex(result, layout):
    return result if layout == "interleaved" else torch.complex(result[0].double(), result[1].double())


# -- values ------------------------------------------------------------------------------------------------

VALUE = 0.5 - 2j


def cases(dtype):
    """name -> (op, scalars, operands for run, operands for the complex128 reference), the operands broadcasting
    (3, 1), (1, 5) and (5,) against each other; lerp's weights straddle |w| = 1/2, where ATen switches formula."""
    a, a_exact = random_rounded(dtype, (3, 1), seed=1)
    b, b_exact = random_rounded(dtype, (1, 5), seed=2)
    c, c_exact = random_rounded(dtype, (5,), seed=3)
    weights = torch.tensor([0.2 + 0.1j, -0.3j, 0.45, 0.6 - 0.2j, 1.5 + 1j], dtype=torch.complex128).to(a.dtype)
    condition = torch.tensor([[True], [False], [True]]) ^ torch.tensor([True, False, False, True, False])
    return {
        "addcmul": ("addcmul", [], [a, b, c, VALUE], [a_exact, b_exact, c_exact, VALUE]),
        "addcdiv": ("addcdiv", [], [a, b, c, VALUE], [a_exact, b_exact, c_exact, VALUE]),
        "where": ("where", [], [condition, a, b], [condition, a_exact, b_exact]),
        "where_scalar_self": ("where", ["self"], [condition, -1.5j, b], [condition, -1.5j, b_exact]),
        "where_scalar_other": ("where", ["other"], [condition, a, 2.25], [condition, a_exact, 2.25]),
        "lerp_tensor_weight": ("lerp", [], [a, b, weights], [a_exact, b_exact, weights.to(torch.complex128)]),
        "lerp_small_weight": ("lerp", ["weight"], [a, b, 0.3 + 0.2j], [a_exact, b_exact, 0.3 + 0.2j]),
        "lerp_large_weight": ("lerp", ["weight"], [a, b, 0.75], [a_exact, b_exact, 0.75]),
    }


def reference(op, operands):
    if op == "addcmul":
        return torch.addcmul(*operands[:3], value=operands[3])
    if op == "addcdiv":
        return torch.addcdiv(*operands[:3], value=operands[3])
    if op == "where":
        return torch.where(*(torch.as_tensor(v, dtype=torch.complex128) if i else v for i, v in enumerate(operands)))
    return torch.lerp(*operands[:2], torch.as_tensor(operands[2]))


@pytest.mark.parametrize("layout", elementwise.LAYOUTS)
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("case", sorted(cases("complex32")))
def test_matches_complex128(load, case, dtype, layout):
    op, scalars, operands, exact = cases(dtype)[case]
    run = load("ternary")(params(op, dtype, layout, scalars=scalars))
    actual = as_complex(run(*[arg for value in operands for arg in as_run_args(value, layout)]), layout)
    expected = reference(op, exact)
    assert actual.shape == expected.shape == (3, 5)
    assert_close(actual, expected, dtype, ulps=0 if op == "where" else 1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_lerp_is_exact_at_both_ends(load, dtype):
    start, _ = random_rounded(dtype, (9,), seed=4)
    end, _ = random_rounded(dtype, (9,), seed=5)
    run = load("ternary")(params("lerp", dtype, scalars=["weight"]))
    assert torch.equal(torch.view_as_real(run(start, end, 0.0, 0.0)), torch.view_as_real(start))
    assert torch.equal(torch.view_as_real(run(start, end, 1.0, 0.0)), torch.view_as_real(end))


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_strides_sizes_and_degenerate_shapes(load, dtype):
    run = load("ternary")(params("addcdiv", dtype))
    a, a_exact = random_rounded(dtype, (30, 11), seed=6)  # 330 elements: three programs, the last one partial
    b, b_exact = random_rounded(dtype, (11, 30), seed=7)
    c, c_exact = random_rounded(dtype, (60, 11), seed=8)
    expected = torch.addcdiv(a_exact, b_exact.T, c_exact[::2], value=VALUE)
    assert_close(run(a, b.T, c[::2], VALUE.real, VALUE.imag), expected, dtype, ulps=1)
    assert run(a[:0], b.T[:1], c[:1], 1.0, 0.0).shape == (0, 11)
    zero_dim, zero_dim_exact = random_rounded(dtype, (), seed=9)
    result = run(zero_dim, zero_dim, zero_dim, 1.0, 0.0)
    assert result.shape == ()
    assert_close(result, torch.addcdiv(zero_dim_exact, zero_dim_exact, zero_dim_exact), dtype, ulps=1)


def test_where_takes_a_strided_condition(load):
    a, a_exact = random_rounded("complex32", (4, 6), seed=10)
    condition = torch.rand(6, 8, generator=torch.Generator().manual_seed(0)).T[::2] > 0.5
    actual = load("ternary")(params("where", "complex32", scalars=["other"]))(condition, a, 0.0, 0.0)
    assert_close(actual, torch.where(condition, a_exact, 0), "complex32", ulps=0)


# -- rendering and variants --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_variant_renders_a_custom_op_module(dtype):
    found = ternary.variants(dtype)
    assert len(found) == 7 * 4
    for p in found:
        assert json.loads(json.dumps(p)) == p and p["interpret"] is False
        module = common.exec_source(ternary.render({**p, "interpret": True}), "variant")
        torch.library.infer_schema(module.run, mutates_args=module.MUTATES)


# -- ATen adapters -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_functional_inplace_out(load, dtype):
    loader, aten = load("ternary"), ternary.ATEN
    a, a_exact = random_rounded(dtype, (3, 4), seed=11)
    b, b_exact = random_rounded(dtype, (4,), seed=12)
    c, c_exact = random_rounded(dtype, (3, 1), seed=13)
    condition = torch.tensor([True, False, False, True])

    def call(name, *args, **kwargs):
        return aten[name](loader, args, kwargs, "cpu")

    assert_close(call("aten::addcmul", a, b, c, value=2j), a_exact + 2j * b_exact * c_exact, dtype)
    assert_close(call("aten::addcdiv", a, b, c), a_exact + b_exact / c_exact, dtype)
    assert_close(call("aten::where.self", condition, a, b), torch.where(condition, a_exact, b_exact), dtype, 0)
    assert_close(call("aten::where.ScalarSelf", condition, 1j, b), torch.where(condition, 1j, b_exact), dtype, 0)
    assert_close(call("aten::where.self", condition, a, 3), torch.where(condition, a_exact, 3), dtype, 0)  # wrapped
    assert_close(call("aten::lerp.Scalar", a, b, 0.25), torch.lerp(a_exact, b_exact, 0.25), dtype)

    d = a.clone()
    assert aten["aten::lerp_.Tensor"](loader, (d, b, c), {}, "cpu") is d
    assert_close(d, torch.lerp(a_exact, b_exact, c_exact), dtype)
    d = a.clone()
    assert aten["aten::addcmul_"](loader, (d, b, c), {"value": -1}, "cpu") is d
    assert_close(d, a_exact - b_exact * c_exact, dtype)

    out = torch.empty(0, dtype=a.dtype)
    assert aten["aten::where.self_out"](loader, (condition, a, b), {"out": out}, "cpu") is out
    assert_close(out, torch.where(condition, a_exact, b_exact), dtype, 0)
    assert aten["aten::lerp.Scalar_out"](loader, (a, b, 0.9), {"out": out}, "cpu") is out
    assert_close(out, torch.lerp(a_exact, b_exact, 0.9), dtype)


def test_adapters_decline_calls_they_do_not_cover(load):
    loader, aten = load("ternary"), ternary.ATEN
    a, _ = random_rounded("complex32", (3, 4), seed=14)
    condition = torch.ones(3, 4, dtype=torch.bool)
    where = aten["aten::where.self"]
    assert where(loader, (condition, a, torch.zeros(3, 4, dtype=torch.float16)), {}, "cpu") is NotImplemented
    assert where(loader, (condition.to(torch.uint8), a, a), {}, "cpu") is NotImplemented
    for other_dtype in (torch.complex64, *dtypes.COMPLEX_BY_NAME.values()):
        if other_dtype != a.dtype:
            assert where(loader, (condition, a, a.to(torch.complex64).to(other_dtype)), {}, "cpu") is NotImplemented
    assert where(loader, (condition, a, torch._neg_view(a)), {}, "cpu") is NotImplemented
    weight = torch.full((3, 4), 0.5, dtype=torch.complex64)
    assert aten["aten::lerp.Tensor"](loader, (a, a, weight), {}, "cpu") is NotImplemented
    assert aten["aten::addcmul_"](loader, (a[:, :1], a, a), {}, "cpu") is NotImplemented  # result wider than self
