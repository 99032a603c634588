"""Conjugate and negative-bit tensors reaching the compile path's decompositions, forward and backward:
Python complex numbers next to real 16-bit tensors (the backward of `x * 1j` holds `aten._conj(1j)`),
conj/neg-flagged inputs, resolve_conj/resolve_neg inside the graph, conjugated constants. Values, dtypes
and gradients against eager jitdtypes."""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _complex(dtype, *shape):
    return torch.randn(*shape, dtype=torch.complex64).to(dtype)


def _real(dtype, *shape):
    return torch.randn(*shape).to(dtypes.REAL_OF[dtype])


def _plain(t):
    return t


def _conjugated(t):
    return t.conj()


def _negative_bit(t):
    return torch._neg_view(t)


# name: (program, arguments for a dtype, how each argument is passed: a function of its leaf tensor)
CASES = {
    "real times 1j": (lambda x: ((x * 1j).exp() + x).abs().sum(), lambda d: (_real(d, 8),), (_plain,)),
    "real times a complex number": (lambda x: (x * (1 + 2j) - 0.5j).abs(), lambda d: (_real(d, 8),), (_plain,)),
    "real divided by a complex number": (lambda x: (x / (2 - 1j)).exp(), lambda d: (_real(d, 8),), (_plain,)),
    "16-bit complex times 1j": (lambda z: (z * 1j + 1).exp(), lambda d: (_complex(d, 8),), (_plain,)),
    "conjugated input": (lambda z, w: (z * w + 1).exp(), lambda d: (_complex(d, 6, 5), _complex(d, 6, 5)),
                         (_conjugated, _plain)),
    "negative-bit input": (lambda z: (z * 2 + 1j).abs(), lambda d: (_complex(d, 8),), (_negative_bit,)),
    "imaginary part of a conjugated input": (lambda z: z.imag * 2, lambda d: (_complex(d, 8),), (_conjugated,)),
    "complex64 conjugate times 16-bit": (lambda z, w: w.conj() * z,
                                         lambda d: (_complex(d, 8), torch.randn(8, dtype=torch.complex64)),
                                         (_plain, _plain)),
    "resolve_conj and resolve_neg": (
        lambda z: torch.resolve_conj(z.conj()) * 2 + torch._neg_view(z).resolve_neg() + torch.resolve_neg(z.imag),
        lambda d: (_complex(d, 8),), (_plain,)),
    "conjugated constant": (lambda z: z * torch.tensor(1 + 2j).conj(), lambda d: (_complex(d, 8),), (_plain,)),
    "vdot": (lambda z, w: torch.vdot(z, w) * w.conj(), lambda d: (_complex(d, 8), _complex(d, 8)), (_plain, _plain)),
}


def _relative_error(a, b) -> float:
    wide = torch.complex128 if b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def _run(program, leaves, passes):
    leaves = [t.detach().clone().requires_grad_() for t in leaves]
    out = program(*(how(t) for how, t in zip(passes, leaves)))
    (out.abs() if out.is_complex() else out).float().pow(2).sum().backward()
    return out.detach(), [t.grad for t in leaves]


def _assert_same_as_eager(name, dtype, backend):
    program, make_args, passes = CASES[name]
    torch.manual_seed(0)
    leaves = make_args(dtype)
    torch._dynamo.reset()
    got, got_grads = _run(torch.compile(program, backend=backend, fullgraph=True), leaves, passes)
    want, want_grads = _run(program, leaves, passes)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert _relative_error(got, want) <= TOLERANCE[dtype], name
    for got_grad, want_grad in zip(got_grads, want_grads):
        assert got_grad.dtype == want_grad.dtype
        assert _relative_error(got_grad, want_grad) <= TOLERANCE[dtype], f"{name} gradient"


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", CASES)
def test_conjugates_match_eager_forward_and_backward(name, dtype):
    _assert_same_as_eager(name, dtype, "aot_eager_decomp_partition")


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_real_times_1j_compiles_with_inductor(dtype):
    """Issue 21's third repro, on Inductor itself (its C++ kernels read the conjugated constant)."""
    _assert_same_as_eager("real times 1j", dtype, "inductor")
