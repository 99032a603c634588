"""Binary template family under Triton's interpreter, against PyTorch's complex128 results on the same rounded
inputs (and the same Python scalars).

Tolerance: rounding each part once is off by at most 0.5 ulp of |result| in assert_close_16bit's measure;
ulps=1 leaves the rest for fp32 evaluation error (scalars are kept in fp32, not rounded to 16 bits).
"""

import json

import pytest
import torch

from conftest import DTYPE_NAMES, random_rounded
from conftest import elementwise_params as params
from conftest import assert_close_16bit as assert_close
from jitdtypes import dtypes
from kernels_templates import binary, common, elementwise

# numpy reports overflow and division by zero in the lanes that the kernels' tl.where calls discard.
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning:triton.runtime.interpreter")



COMPLEX_SCALAR, FLOAT_SCALAR, INT_SCALAR = 0.75 - 1.25j, -1.5, 3
REFERENCE = {
    "add": lambda a, b, alpha: torch.add(a, b, alpha=alpha),
    "sub": lambda a, b, alpha: torch.sub(a, b, alpha=alpha),
    "mul": lambda a, b, alpha: torch.mul(a, b),
    "div": lambda a, b, alpha: torch.div(a, b),
    "pow": lambda a, b, alpha: torch.pow(a, b),
}
ALPHA = {"add": 0.5 + 2j, "sub": -2.0}  # complex and real alpha




def as_run_args(value, layout):
    """One operand as `run` takes it: a tensor, its (re, im) parts, or a number's two floats."""
    if isinstance(value, torch.Tensor):
        return [value] if layout == "interleaved" else list(torch.view_as_real(value).unbind(-1))
    return [complex(value).real, complex(value).imag]


def as_complex(result, layout):
    return result if layout == "interleaved" else torch.complex(result[0].double(), result[1].double())


# -- values ------------------------------------------------------------------------------------------------

FORMS = {
    # form -> (first operand, second operand), with tensors broadcasting (3, 1) against (1, 5)
    "tensors": ("tensor", "tensor"),
    "scalar_second": ("tensor", COMPLEX_SCALAR),
    "scalar_first": (FLOAT_SCALAR, "tensor"),
}


@pytest.mark.parametrize("layout", elementwise.LAYOUTS)
@pytest.mark.parametrize("form", sorted(FORMS))
@pytest.mark.parametrize("dtype", DTYPE_NAMES)
@pytest.mark.parametrize("op", sorted(binary.OPS))
def test_matches_complex128(load, op, dtype, form, layout):
    first, second = FORMS[form]
    a, a_exact = random_rounded(dtype, (3, 1), scale=1.5, seed=1)
    b, b_exact = random_rounded(dtype, (1, 5), scale=1.5, seed=2)
    operands = [a if first == "tensor" else first, b if second == "tensor" else second]
    exact = [a_exact if first == "tensor" else first, b_exact if second == "tensor" else second]
    names = [name for name, kind in binary.OPS[op][0] if kind == elementwise.COMPLEX]
    scalars = [name for name, value in zip(names, operands) if not isinstance(value, torch.Tensor)]
    alpha = ALPHA.get(op)

    run = load("binary")(params(op, dtype, layout, scalars=scalars))
    args = [arg for value in operands for arg in as_run_args(value, layout)]
    args += as_run_args(alpha, layout) if alpha is not None else []
    actual = as_complex(run(*args), layout)
    expected = REFERENCE[op](torch.as_tensor(exact[0]), torch.as_tensor(exact[1]), alpha)
    assert actual.shape == expected.shape
    assert_close(actual, expected, dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_int_and_bool_scalars(load, dtype):
    a, exact = random_rounded(dtype, (7,), seed=3)
    mul = load("binary")(params("mul", dtype, scalars=["other"]))
    assert_close(mul(a, *as_run_args(INT_SCALAR, "interleaved")), exact * INT_SCALAR, dtype, ulps=1)
    add = load("binary")(params("add", dtype, scalars=["other"]))
    assert_close(add(a, 1.0, 0.0, 1.0, 0.0), exact + True, dtype, ulps=1)


LARGE = {
    # parts near the fp16 edge: fp16 arithmetic on them would overflow, the quotients are moderate
    "complex32": ([3.0e4 + 2.0e4j, -6.0e4 + 5.0e4j, 1.0e4 - 6.5e4j], [2.0e4 - 3.0e4j, 6.0e4 + 6.0e4j, -3.0e4 + 1.0e4j]),
    # bf16 parts whose squares overflow float32: Smith's algorithm forms no square
    "bcomplex32": (
        [2.0e37 + 1.0e37j, -3.0e37 + 3.0e37j, 1.0e30 - 2.0e37j],
        [3.0e37 - 1.0e37j, 2.0e37 + 3.0e37j, -1.0e37 + 1.0e-5j],
    ),
}


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_division_of_large_operands(load, dtype):
    numerators, denominators = (torch.tensor(v, dtype=torch.complex128).to(dtypes.COMPLEX_BY_NAME[dtype]) for v in LARGE[dtype])
    actual = load("binary")(params("div", dtype))(numerators, denominators)
    assert_close(actual, numerators.to(torch.complex128) / denominators.to(torch.complex128), dtype, ulps=1)


@pytest.mark.skipif("bcomplex32" not in DTYPE_NAMES, reason="no torch.bcomplex32 in this torch")
def test_division_whose_sums_pass_float32_is_complex64s(load):
    # bf16 parts past 1.7e38: Smith's sums c + d r overflow float32 as they do in complex64's (c10's) division,
    # which the template computes, inf and NaN included (docs/COMPILE.md: division is not scaled)
    numerators = torch.tensor([2.0e38 + 1.0e38j, -3.0e38 + 3.0e38j, 3e38 + 3e38j], dtype=torch.complex64)
    denominators = torch.tensor([3.0e38 - 1.0e38j, 2.0e38 + 3.0e38j, 3e38 - 1e38j], dtype=torch.complex64)
    a, b = numerators.to(dtypes.BCOMPLEX32), denominators.to(dtypes.BCOMPLEX32)
    actual = torch.view_as_real(load("binary")(params("div", "bcomplex32"))(a, b).to(torch.complex64))
    expected = torch.view_as_real((a.to(torch.complex64) / b.to(torch.complex64)).to(dtypes.BCOMPLEX32).to(torch.complex64))
    assert not expected.isfinite().all()  # the case this test is about
    assert torch.equal(actual.isnan(), expected.isnan())
    assert torch.equal(actual[~expected.isnan()], expected[~expected.isnan()])


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_division_by_zero_matches_c10(load, dtype):
    a = torch.tensor([1 + 1j, 1 + 0j, 0j, -2 + 0j], dtype=torch.complex128).to(dtypes.COMPLEX_BY_NAME[dtype])
    zero = torch.zeros(4, dtype=a.dtype)
    actual = torch.view_as_real(load("binary")(params("div", dtype))(a, zero)).double()
    expected = torch.view_as_real(a.to(torch.complex128) / zero.to(torch.complex128))
    assert torch.equal(actual.isnan(), expected.isnan())
    assert torch.equal(actual[~expected.isnan()], expected[~expected.isnan()])


def test_pow_special_cases(load):
    base = torch.tensor([0j, 0j, 2 + 0j, -1.5 + 0.5j], dtype=torch.complex32)
    exponent = torch.tensor([2 + 1j, 0j, 0j, 0j], dtype=torch.complex32)
    by_tensor = load("binary")(params("pow", "complex32"))(base, exponent).to(torch.complex128)
    expected = torch.pow(base.to(torch.complex128), exponent.to(torch.complex128))
    assert by_tensor[0] == 0 and by_tensor[1].isnan() and torch.equal(by_tensor[2:], expected[2:])  # 0^0 is nan
    by_scalar = load("binary")(params("pow", "complex32", scalars=["exponent"]))(base, 0.0, 0.0)
    assert torch.equal(by_scalar.to(torch.complex128), torch.ones(4, dtype=torch.complex128))  # ATen's pow(Tensor, 0)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_strides_sizes_and_degenerate_shapes(load, dtype):
    run = load("binary")(params("mul", dtype))
    a, a_exact = random_rounded(dtype, (40, 9), seed=4)  # 360 elements: three programs, the last one partial
    b, b_exact = random_rounded(dtype, (9, 40), seed=5)
    assert_close(run(a, b.T), a_exact * b_exact.T, dtype, ulps=1)
    assert_close(run(a[::3, ::2], b.T[::3, ::2]), a_exact[::3, ::2] * b_exact.T[::3, ::2], dtype, ulps=1)
    assert run(a[:0], b.T[:1]).shape == (0, 9)
    zero_dim, zero_dim_exact = random_rounded(dtype, (), seed=6)
    assert_close(run(zero_dim, zero_dim), zero_dim_exact * zero_dim_exact, dtype, ulps=1)
    assert_close(run(zero_dim, a), zero_dim_exact * a_exact, dtype, ulps=1)


@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_out_variant_in_place(load, dtype):
    a, a_exact = random_rounded(dtype, (4, 5), seed=7)
    b, b_exact = random_rounded(dtype, (5,), seed=8)
    load("binary")(params("sub", dtype, out=True))(a, b, 1.0, 0.5, a)
    assert_close(a, a_exact - (1 + 0.5j) * b_exact, dtype, ulps=1)


# -- rendering and variants --------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_every_variant_renders_a_custom_op_module(dtype):
    found = binary.variants(dtype)
    assert len(found) == len(binary.OPS) * 3 * 4
    for p in found:
        assert json.loads(json.dumps(p)) == p and p["interpret"] is False
        module = common.exec_source(binary.render({**p, "interpret": True}), "variant")
        schema = torch.library.infer_schema(module.run, mutates_args=module.MUTATES)
        for name in p["scalars"]:
            assert f"float {name}_re, float {name}_im" in schema


def test_rejects_all_scalar_operands():
    with pytest.raises(ValueError, match="scalars"):
        binary.render({**params("mul", "complex32", scalars=["self", "other"]), "interpret": True})


# -- ATen adapters -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPE_NAMES)
def test_adapters_functional_inplace_out(load, dtype):
    loader, aten = load("binary"), binary.ATEN
    a, a_exact = random_rounded(dtype, (3, 4), seed=9)
    b, b_exact = random_rounded(dtype, (4,), seed=10)

    assert_close(aten["aten::add.Tensor"](loader, (a, b), {"alpha": 2j}, "cpu"), a_exact + 2j * b_exact, dtype, ulps=1)
    assert_close(aten["aten::add.Scalar"](loader, (a, 1.5, -1), {}, "cpu"), a_exact - 1.5, dtype, ulps=1)
    assert_close(aten["aten::mul.Tensor"](loader, (a, 2.5), {}, "cpu"), a_exact * 2.5, dtype, ulps=1)  # wrapped number
    assert_close(aten["aten::rsub.Scalar"](loader, (a, 1j), {}, "cpu"), 1j - a_exact, dtype, ulps=1)
    assert_close(aten["aten::rsub.Tensor"](loader, (b, a), {"alpha": 3}, "cpu"), a_exact - 3 * b_exact, dtype, ulps=1)
    true_division = aten["aten::div.Tensor_mode"](loader, (a, b), {"rounding_mode": None}, "cpu")
    assert_close(true_division, a_exact / b_exact, dtype, ulps=1)
    assert_close(aten["aten::pow.Scalar"](loader, (2, b), {}, "cpu"), torch.pow(2, b_exact), dtype, ulps=1)
    assert_close(aten["aten::pow.Tensor_Scalar"](loader, (a, 0.5), {}, "cpu"), a_exact**0.5, dtype, ulps=1)

    c = a.clone()
    assert aten["aten::mul_.Tensor"](loader, (c, b), {}, "cpu") is c
    assert_close(c, a_exact * b_exact, dtype, ulps=1)
    assert aten["aten::div_.Scalar"](loader, (c, 2j), {}, "cpu") is c
    assert_close(c, a_exact * b_exact / 2j, dtype, ulps=1)

    out = torch.empty(0, dtype=a.dtype)
    assert aten["aten::sub.out"](loader, (a, b), {"out": out}, "cpu") is out
    assert_close(out, a_exact - b_exact, dtype, ulps=1)
    assert aten["aten::pow.Tensor_Tensor_out"](loader, (a, b), {"out": out}, "cpu") is out
    assert_close(out, torch.pow(a_exact, b_exact), dtype, ulps=1)


def test_adapters_decline_calls_they_do_not_cover(load):
    loader, aten = load("binary"), binary.ATEN
    a, _ = random_rounded("complex32", (3, 4), seed=11)
    add, add_, div = aten["aten::add.Tensor"], aten["aten::add_.Tensor"], aten["aten::div.Tensor_mode"]
    for other_dtype in (torch.complex64, *dtypes.COMPLEX_BY_NAME.values()):
        if other_dtype != a.dtype:  # complex32 with bcomplex32 promotes to complex64, like complex64 itself
            assert add(loader, (a, a.to(torch.complex64).to(other_dtype)), {}, "cpu") is NotImplemented
    assert add(loader, (a, torch.ones(4, dtype=torch.float16)), {}, "cpu") is NotImplemented  # real tensor operand
    assert add(loader, (a, a.conj()), {}, "cpu") is NotImplemented
    assert add(loader, (a, torch.ones(3, 4, dtype=a.dtype, device="meta")), {}, "cpu") is NotImplemented
    assert add(loader, (a, torch.ones(2, 4, dtype=a.dtype)), {}, "cpu") is NotImplemented  # shapes do not broadcast
    assert add(loader, (a, 2**2000), {}, "cpu") is NotImplemented  # beyond any float
    assert div(loader, (a, a), {"rounding_mode": "floor"}, "cpu") is NotImplemented
    assert add_(loader, (a[:1], a), {}, "cpu") is NotImplemented  # the result would not fit self
    assert add_(loader, (a[:, 1:], a[:, :-1]), {}, "cpu") is NotImplemented  # partial overlap
    out = torch.empty(3, 4, dtype=torch.complex64)
    assert aten["aten::mul.out"](loader, (a, a), {"out": out}, "cpu") is NotImplemented
