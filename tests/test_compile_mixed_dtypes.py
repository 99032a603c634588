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
