"""Mixed dtypes through the compile path's custom ops follow eager jitdtypes' promotion: the matrix-product
family (mm, bmm, matmul, @, einsum, addmm, baddbmm, addbmm) over every pair of complex dtypes eager accepts,
biases of every complex dtype included, and the FFTs of real 16-bit, 16-bit complex and complex64 made from
them. Dtypes, values and gradients against eager."""

import itertools

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

COMPLEX = [*TARGETS, torch.complex64]
# every ordered pair eager multiplies (a real matrix times a complex one is an error there, as in PyTorch)
PAIRS = [(a, b) for a, b in itertools.product(COMPLEX, COMPLEX) if torch.complex64 not in (a, b) or a != b]
PAIR_IDS = [f"{dtypes.NAMES.get(a, 'complex64')}-{dtypes.NAMES.get(b, 'complex64')}" for a, b in PAIRS]


def _complex(dtype, *shape):
    return torch.randn(*shape, dtype=torch.complex64).to(dtype)


def _tolerance(*operands) -> float:
    return max(TOLERANCE.get(t.dtype, 1e-5) for t in operands)


def _relative_error(a, b) -> float:
    wide = torch.complex128 if b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def products(a, b, *biases):
    """Every member of the matrix-product family on a (2, 3, 4) and b (2, 4, 5), with each bias."""
    out = [torch.mm(a[0], b[0]), torch.bmm(a, b), torch.matmul(a, b[0]), a[1] @ b[1],
           torch.einsum("bij,bjk->bik", a, b)]
    for bias in biases:
        out += [torch.addmm(bias[0], a[0], b[0], beta=0.5, alpha=2), torch.baddbmm(bias, a, b),
                torch.addbmm(bias[1], a, b, alpha=1j), torch.addmm(bias[0], a[0], b[0], beta=0)]
    return tuple(out)


def _run(program, leaves):
    leaves = [t.detach().clone().requires_grad_() for t in leaves]
    outputs = program(*leaves)
    sum(o.abs().float().pow(2).sum() for o in outputs).backward()
    return [o.detach() for o in outputs], [t.grad for t in leaves]


def _assert_same_as_eager(program, leaves, backend):
    torch._dynamo.reset()
    got, got_grads = _run(torch.compile(program, backend=backend, fullgraph=True), leaves)
    want, want_grads = _run(program, leaves)
    tolerance = _tolerance(*leaves)
    assert [(g.dtype, g.shape) for g in got] == [(w.dtype, w.shape) for w in want]
    for i, (g, w) in enumerate(zip(got, want)):
        assert _relative_error(g, w) <= tolerance, f"output {i}"
    for i, (g, w) in enumerate(zip(got_grads, want_grads)):
        assert g.dtype == w.dtype and _relative_error(g, w) <= tolerance, f"gradient {i}"


def _product_operands(a_dtype, b_dtype):
    torch.manual_seed(0)
    return (_complex(a_dtype, 2, 3, 4), _complex(b_dtype, 2, 4, 5),
            *(_complex(d, 2, 3, 5) for d in COMPLEX))


@pytest.mark.parametrize("a_dtype, b_dtype", PAIRS, ids=PAIR_IDS)
def test_matrix_products_promote_as_eager(a_dtype, b_dtype):
    operands = _product_operands(a_dtype, b_dtype)
    want = products(*(t.detach() for t in operands))
    promoted = torch.promote_types(a_dtype, b_dtype)
    assert want[0].dtype == promoted  # eager's rule, which the compiled dtypes are held to below
    _assert_same_as_eager(products, operands, "aot_eager_decomp_partition")


def test_complex64_times_complex32_under_inductor():
    """Issue 21's second repro: complex64 @ complex32 is complex64, compiled by Inductor as in eager."""
    torch.manual_seed(0)
    a, b = torch.randn(3, 4, dtype=torch.complex64), _complex(torch.complex32, 4, 5)
    torch._dynamo.reset()
    got = torch.compile(lambda a, b: a @ b)(a, b)
    assert got.dtype == torch.complex64
    assert _relative_error(got, a @ b) <= 1e-6


def test_real_times_complex_product_is_an_error_as_in_eager():
    a, b = torch.randn(3, 4).half(), _complex(torch.complex32, 4, 5)
    with pytest.raises(RuntimeError, match="same dtype"):
        a @ b
    torch._dynamo.reset()
    with pytest.raises(Exception, match="same dtype"):
        torch.compile(lambda a, b: a @ b, backend="aot_eager_decomp_partition")(a, b)


def test_custom_op_fake_kernels_give_eager_dtypes():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        for a_dtype, b_dtype in PAIRS:
            got = torch.ops.jitdtypes.complex_matmul(torch.empty(3, 4, dtype=a_dtype), torch.empty(4, 5, dtype=b_dtype))
            assert got.dtype == torch.promote_types(a_dtype, b_dtype)
        for real in (torch.float16, torch.bfloat16, torch.float32):
            spectrum = torch.ops.jitdtypes.fft_r2c(torch.empty(4, 8, dtype=real), [1], 0, True)
            assert (spectrum.dtype, spectrum.shape) == (dtypes.complex_of(real), (4, 5))
            signal = torch.ops.jitdtypes.fft_c2r(spectrum, [1], 0, 8)
            # eager's irfft gives the parts' dtype of the spectrum (bfloat16's is complex64 before torch 2.14)
            assert (signal.dtype, signal.shape) == (dtypes.part_dtype(spectrum.dtype), (4, 8))


# -- FFTs ------------------------------------------------------------------------------------------------------


def ffts(x, z, w):
    """x real 16-bit (4, 8), z 16-bit complex (4, 8), w complex64 (4, 8)."""
    return (torch.fft.fft(z), torch.fft.ifft(z, norm="ortho"), torch.fft.fft(z, n=12, dim=0), torch.fft.rfft(x),
            torch.fft.irfft(z, n=8), torch.fft.fft2(z), torch.fft.rfftn(x, norm="forward"), torch.fft.hfft(z),
            torch.fft.ihfft(x), torch.fft.fft(x), torch.fft.fft(z.conj()), torch.fft.fft(z * w),
            torch.fft.irfft(torch.fft.rfft(x) * 1j))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_ffts_match_eager_forward_and_backward(dtype):
    torch.manual_seed(0)
    operands = (torch.randn(4, 8).to(dtypes.REAL_OF[dtype]), _complex(dtype, 4, 8),
                torch.randn(4, 8, dtype=torch.complex64))
    _assert_same_as_eager(ffts, operands, "aot_eager_decomp_partition")


# -- one rule for every op with two complex operands, eager = compiled, with the complex64/128 opt-in off and on --

ALL_COMPLEX = [*TARGETS, torch.complex64, torch.complex128]
TWO_OPERANDS = {
    "dot": torch.dot, "vdot": torch.vdot, "inner": torch.inner, "outer": torch.outer, "mm": torch.mm,
    "matmul": torch.matmul, "einsum": lambda a, b: torch.einsum("ij,jk->ik", a, b),
    "tensordot": lambda a, b: torch.tensordot(a, b, dims=1), "mul": torch.mul, "add": torch.add, "div": torch.div,
}
VECTOR_OPS = {"dot", "vdot", "inner", "outer"}


def _outcome(function, a, b):
    """(dtype, value) of function(a, b), or (None, the text of the error and of the errors it wraps)."""
    try:
        result = function(a, b)
    except Exception as exc:  # noqa: BLE001 - compared between eager and compiled
        texts, seen = [], exc
        while seen is not None:
            texts.append(str(seen))
            seen = seen.__cause__ or seen.__context__
        return None, "\n".join(texts)
    return result.dtype, result.to(torch.complex128)


@pytest.mark.parametrize("opt_in", ["off", "complex64,complex128"])
@pytest.mark.parametrize("name", TWO_OPERANDS)
def test_two_complex_operands_follow_one_rule_eager_and_compiled(name, opt_in):
    """The rule (docs/COMPILE.md): a 16-bit complex operand acts as complex64 would, promoted with the other
    operand: pairs of 16-bit dtypes and complex64 give the promoted dtype in every op here; with complex128,
    PyTorch's answer for complex64 (products raise, elementwise ops promote). Eager and compiled agree, the opt-in
    off or on. inner and tensordot refuse mixed dtypes as PyTorch does (they check before any kernel runs)."""
    import jitdtypes
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.decomposition import select_decomp_table

    jitdtypes.set_compile_complex(*([] if opt_in == "off" else opt_in.split(",")))
    backend = aot_autograd(fw_compiler=lambda gm, _: gm, decompositions=select_decomp_table)
    function, mismatches = TWO_OPERANDS[name], []
    try:
        for a_dtype, b_dtype in itertools.product(ALL_COMPLEX, ALL_COMPLEX):
            shape = (6,) if name in VECTOR_OPS else (3, 3)
            a, b = _complex(torch.complex64, *shape), _complex(torch.complex64, *shape)
            a, b = a.to(a_dtype), b.to(b_dtype)
            eager = _outcome(function, a, b)
            torch._dynamo.reset()
            compiled = _outcome(torch.compile(function, backend=backend, fullgraph=True), a, b)
            pair = f"{a_dtype} x {b_dtype}"
            if eager[0] is None or compiled[0] is None:  # both refuse (Dynamo rewords the error)
                if (eager[0], compiled[0]) != (None, None):
                    mismatches.append(f"{pair}: eager {eager[0] or eager[1].splitlines()[0]}, "
                                      f"compiled {compiled[0] or compiled[1].splitlines()[0]}")
                elif torch.complex128 not in (a_dtype, b_dtype) and name not in {"inner", "tensordot"}:
                    mismatches.append(f"{pair}: refused ({eager[1].splitlines()[0]})")
                continue
            sixteen_bit = {a_dtype, b_dtype} & set(TARGETS)
            if sixteen_bit and a_dtype != b_dtype and eager[0] != torch.promote_types(a_dtype, b_dtype):
                mismatches.append(f"{pair}: eager gives {eager[0]}, not the promoted dtype")
            tolerance = _tolerance(a, b) * 8
            if compiled[0] != eager[0] or not torch.allclose(compiled[1], eager[1], rtol=tolerance, atol=tolerance):
                mismatches.append(f"{pair}: eager {eager[0]}, compiled {compiled[0]} (values differ or dtypes)")
    finally:
        jitdtypes.set_compile_complex()
    assert not mismatches, "\n".join(mismatches)
