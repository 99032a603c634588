"""Backward passes in 32 bits (jitdtypes/upcast/wide_gradients.py): formulas that reject the 16-bit complex dtypes, and
formulas that overflow float16 in an intermediate, give complex64's gradients on the same rounded inputs."""

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from jitdtypes.upcast import wide_gradients
from tests.conftest import IDS, TARGETS, TOLERANCE

pytestmark = pytest.mark.filterwarnings("ignore:.*support is experimental")


def _relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.to(torch.complex128), b.to(torch.complex128)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def _leaves(values, dtype):
    """16-bit leaves rounded from complex64, and complex64 leaves holding the same rounded values."""
    low = [v.to(dtype).requires_grad_() for v in values]
    wide = [v.detach().to(torch.complex64).requires_grad_() for v in low]
    return low, wide


def _real_loss(out):
    # fixed complex weights, applied in 32 bits: the op's own backward is all that runs in 16 bits
    out = out.to(torch.complex64)
    n = out.numel()
    weights = torch.complex(torch.cos(torch.arange(n) * 0.7), torch.sin(torch.arange(n) * 1.3)).reshape(out.shape)
    return (out * weights).real.sum()


def _gradients(fn, leaves, create_graph=False):
    return torch.autograd.grad(_real_loss(fn(*leaves)), leaves, create_graph=create_graph)


def _randn(*shape, scale=1.0):
    return torch.randn(*shape, dtype=torch.complex64) * scale


# (name, function, inputs): each runs with complex64 and each of jitdtypes' table ops is here
CASES = [
    ("det", torch.linalg.det, lambda: [_randn(3, 3)]),
    ("logcumsumexp", lambda x: torch.logcumsumexp(x, 0), lambda: [_randn(4, 5)]),
    ("renorm", lambda x: torch.renorm(x, 2, 0, 0.5), lambda: [_randn(4, 5)]),
    # near 2600 float16's spacing is 2: a 16-bit saved result puts exp(self - result) off by up to e
    ("logsumexp", lambda x: torch.logsumexp(x, 1), lambda: [_randn(3, 8) * 4 + 2600]),
    ("logaddexp", torch.logaddexp, lambda: [_randn(6, scale=4), _randn(6, scale=4)]),
    ("sinc", torch.sinc, lambda: [_randn(6, scale=2)]),
    ("pow scalar", lambda x: x ** 3, lambda: [_randn(6)]),
    ("pow tensor", torch.pow, lambda: [_randn(6) + 2, _randn(6)]),
    ("rpow", lambda x: 2 ** x, lambda: [_randn(6)]),
    ("matrix_exp", torch.linalg.matrix_exp, lambda: [_randn(3, 3)]),
    ("householder_product", torch.linalg.householder_product, lambda: [_randn(5, 4), _randn(3)]),
]


def test_every_table_op_has_a_case():
    called = set()

    class Seen(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            called.add(func._schema.name + (f".{func._overloadname}" if func._overloadname != "default" else ""))
            return func(*args, **(kwargs or {}))

    for _, fn, inputs in CASES:
        with Seen():
            fn(*inputs())
    assert set(wide_gradients.BY_OVERLOAD) <= called


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name,fn,inputs", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_complex64(dtype, name, fn, inputs):
    torch.manual_seed(0)
    low, wide = _leaves(inputs(), dtype)
    for got, expected in zip(_gradients(fn, low), _gradients(fn, wide)):
        assert got.dtype == dtype
        assert torch.isfinite(torch.view_as_real(got.to(torch.complex64))).all()
        assert _relative_error(got, expected) < TOLERANCE[dtype], name


def test_issue_repros_are_finite_and_close():
    # logaddexp: exp(other - self) reaches 1.6e5; sinc: pi*x*cos(pi*x) reaches 1.7e5 (NaN in 16-bit formulas)
    for fn, values, expected in [
        (torch.logaddexp, [torch.tensor([-8 + 1j]), torch.tensor([4 + 0j])], [3.3e-6 - 5.2e-6j, 1 + 6.5e-6j]),
        (torch.sinc, [torch.tensor([-3.97 + 3.27j])], [-2163 + 1626j]),
    ]:
        low, wide = _leaves(values, torch.complex32)
        loss = (lambda *xs: fn(*xs).real.sum()) if fn is torch.sinc else (lambda *xs: fn(*xs).abs().sum())
        got, reference = torch.autograd.grad(loss(*low), low), torch.autograd.grad(loss(*wide), wide)
        for g, r, e in zip(got, reference, expected):
            assert torch.isfinite(torch.view_as_real(g.to(torch.complex64))).all()
            assert _relative_error(g, r) < TOLERANCE[torch.complex32]
            assert abs(complex(r.item()) - e) < 0.01 * abs(e)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_saved_tensors_are_16_bit(dtype):
    packed = []

    def pack(tensor):
        packed.append(tensor.dtype)
        return tensor

    a, b = (_randn(64).to(dtype).requires_grad_() for _ in range(2))
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = torch.logaddexp(a, b)
        det = torch.linalg.det(_randn(4, 4).to(dtype).requires_grad_())
    assert packed and set(packed) <= {dtype, dtypes.REAL_OF[dtype], torch.int32}, packed
    # the caller's hooks unpack what they packed: the gradients are those of complex64
    low, wide = [a, b], [t.detach().to(torch.complex64).requires_grad_() for t in (a, b)]
    expected = torch.autograd.grad(_real_loss(torch.logaddexp(*wide)), wide)
    for got, reference in zip(torch.autograd.grad(_real_loss(out), low), expected):
        assert _relative_error(got, reference) < TOLERANCE[dtype]
    det.abs().backward()


def test_saved_inputs_and_result_are_the_callers_tensors():
    # what the 32-bit node saves is the 16-bit input and result themselves, not copies: no extra memory
    x = _randn(4, 4).to(torch.complex32).requires_grad_()
    pointers = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: pointers.append(t.data_ptr()) or t, lambda t: t):
        det, lu, pivots = torch.ops.aten._linalg_det(x)
    assert sorted(pointers) == sorted([x.data_ptr(), lu.data_ptr(), pivots.data_ptr(), det.data_ptr()])


def test_modified_saved_input_raises():
    x = _randn(8).to(torch.complex32).requires_grad_()
    base = x * 1
    out = torch.sinc(base)
    base.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.real.sum().backward()


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_double_backward(dtype):
    low, wide = _leaves([_randn(6, scale=2), _randn(6, scale=2)], dtype)
    results = []
    for leaves in (low, wide):
        first = _gradients(torch.logaddexp, leaves, create_graph=True)
        results.append(torch.autograd.grad(sum(g.abs().sum() for g in first), leaves))
    for got, expected in zip(*results):
        assert got.dtype == dtype
        assert _relative_error(got, expected) < 2 * TOLERANCE[dtype]


def test_forward_without_gradient_is_the_usual_path():
    a, b = _randn(16).to(torch.complex32), _randn(16).to(torch.complex32)
    plain = torch.logaddexp(a, b)
    with_grad = torch.logaddexp(a.requires_grad_(), b)
    with torch.no_grad():
        no_grad = torch.logaddexp(a, b)
    assert torch.equal(torch.view_as_real(plain), torch.view_as_real(with_grad.detach()))
    assert torch.equal(torch.view_as_real(plain), torch.view_as_real(no_grad))
    assert no_grad.grad_fn is None and with_grad.grad_fn is not None


def _32_bit_values(name, inputs, wide):
    torch.manual_seed(0)
    values = inputs()
    if wide == torch.float32:
        values = [v.real.contiguous() for v in values]
        if name in ("pow tensor", "rpow", "logcumsumexp", "logaddexp"):
            values = [v.abs() + 0.5 for v in values]
    return values


def test_32_bit_gradients_unchanged(guard):
    """complex64 and float32 results and gradients are bit-identical with and without jitdtypes."""

    def results(fn, values):
        leaves = [v.clone().requires_grad_() for v in values]
        out = fn(*leaves)
        loss = (out.real if out.is_complex() else out).sum() + (out.abs() ** 2).sum()
        return [out.detach()] + list(torch.autograd.grad(loss, leaves))

    cases = [(name, fn, _32_bit_values(name, inputs, wide)) for name, fn, inputs in CASES
             for wide in (torch.complex64, torch.float32)]
    with_jitdtypes = [results(fn, values) for _, fn, values in cases]
    with jitdtypes.disabled():
        without = [results(fn, values) for _, fn, values in cases]
    for (name, _, _), got, expected in zip(cases, with_jitdtypes, without):
        for a, b in zip(got, expected):
            assert a.dtype == b.dtype
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True, msg=name)


def test_results_computed_again_where_their_rounding_breaks_the_gradient():
    # logcumsumexp of inputs near 1e4: its saved result rounded to float16 (spacing 8) would put exp(self -
    # result) off by e^4; computed again from the saved input the gradient is complex64's
    x = (torch.full((3, 5), 10000.0) + _randn(3, 5)).to(torch.complex64)
    low, wide = _leaves([x], torch.complex32)
    pointers = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: pointers.append(t.dtype) or t, lambda t: t):
        out = torch.logcumsumexp(low[0], 1)
    assert pointers == [torch.complex32]  # the input only
    got, = torch.autograd.grad(_real_loss(out), low)
    expected, = _gradients(lambda t: torch.logcumsumexp(t, 1), wide)
    assert _relative_error(got, expected) < TOLERANCE[torch.complex32]
