"""Whole programs in complex32/bcomplex32 under torch.compile(fullgraph=True): no graph breaks, values and
gradients of eager jitdtypes, one fused float32 kernel with 16-bit loads and stores for an elementwise chain,
and compiled training steps (forward, backward, optimizer) that track a complex64 run."""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch._inductor.utils import run_and_get_code

from jitdtypes import dtypes
from tests import torch_bugs
from tests.conftest import IDS, TARGETS, TOLERANCE
from tests.programs import spectral_conv_1d
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def elementwise_chain(a, b):
    return (a * b + a).exp() / (b + 2)


def reduction_chain(a, b):
    z = elementwise_chain(a, b)
    return z.sum(-1).mean(), z.abs().var(), torch.linalg.vector_norm(z, dim=0), z.cumsum(1)


def spectral_conv_2d(x, weights):
    spectrum = torch.fft.rfft2(x)
    mixed = torch.einsum("bixy,ioxy->boxy", spectrum[..., :4, :4], weights)
    return torch.fft.irfft2(mixed, s=x.shape[-2:])


def rotary(x, frequencies):
    """Rotary embedding: pairs of real features as complex numbers, rotated."""
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(z * frequencies).flatten(-2)


def linear_layer(x, weight, bias):
    return x @ weight.mT + bias


def in_place_updates(z, w):
    z.mul_(w)  # mutates the input
    z[..., :2] = 0
    z.add_(1j)
    return z.abs()


def real_ops_mixed(z, x):
    return z.abs() * x + z.real - (z * x).imag.sum()


def views_and_indexing(a, b, index):
    return (a[::2, 1:].t() * b[index][:, 1:].t()).cumsum(0), torch.cat([a, b]).roll(1, 0)[index]


def _complex(dtype, *shape):
    return torch.randn(*shape, dtype=torch.complex64).to(dtype)


def _real(dtype, *shape):
    return torch.randn(*shape).to(dtypes.REAL_OF[dtype])


PROGRAMS = {
    "elementwise_chain": (elementwise_chain, lambda d: (_complex(d, 16, 32), _complex(d, 16, 32))),
    "reduction_chain": (reduction_chain, lambda d: (_complex(d, 16, 32), _complex(d, 16, 32))),
    "spectral_conv_1d": (spectral_conv_1d, lambda d: (_real(d, 4, 2, 30), _complex(d, 2, 2, 8) * 0.5)),
    "spectral_conv_2d": (spectral_conv_2d, lambda d: (_real(d, 2, 2, 8, 8), _complex(d, 2, 2, 4, 4) * 0.5)),
    "rotary": (rotary, lambda d: (_real(d, 3, 8), _complex(d, 4))),
    "linear_layer": (linear_layer, lambda d: (_complex(d, 5, 6), _complex(d, 3, 6), _complex(d, 3))),
    "in_place_updates": (in_place_updates, lambda d: (_complex(d, 4, 6), _complex(d, 4, 6))),
    "real_ops_mixed": (real_ops_mixed, lambda d: (_complex(d, 4, 6), _real(d, 4, 6))),
    "views_and_indexing": (views_and_indexing, lambda d: (_complex(d, 6, 5), _complex(d, 6, 5), torch.tensor([0, 2, 1]))),
}


def _arguments(name, dtype):
    torch.manual_seed(0)
    return PROGRAMS[name][1](dtype)


def _relative_error(a, b) -> float:
    wide = torch.complex128 if b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def _differentiable(args):
    return [a.clone().requires_grad_() if a.is_floating_point() or a.is_complex() else a for a in args]


def _loss(outputs):
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    return sum((o.abs() if o.is_complex() else o).float().pow(2).sum() for o in outputs)


def _run(program, args, backward):
    args = _differentiable(args) if backward else [a.clone() for a in args]
    outputs = program(*args)
    if backward:
        _loss(outputs).backward()
    flat = list(outputs) if isinstance(outputs, tuple) else [outputs]
    return flat, args


def _assert_same_as_eager(name, dtype, backend, backward=True):
    program = PROGRAMS[name][0]
    args = _arguments(name, dtype)
    torch._dynamo.reset()
    compiled = torch.compile(program, backend=backend, fullgraph=True)
    backward = backward and name != "in_place_updates"  # in-place on leaves that require grad is an error
    got, got_args = _run(compiled, args, backward)
    want, want_args = _run(program, args, backward)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert _relative_error(g, w) <= TOLERANCE[dtype], name
    for g, w in zip(got_args, want_args):  # gradients, and inputs mutated in place
        assert _relative_error(g.detach(), w.detach()) <= TOLERANCE[dtype], name
        if backward and w.grad is not None:
            assert g.grad.dtype == w.grad.dtype
            assert _relative_error(g.grad, w.grad) <= TOLERANCE[dtype], f"{name} gradient"


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_has_no_graph_break(name, dtype):
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(PROGRAMS[name][0])(*_arguments(name, dtype))
    assert explanation.graph_break_count == 0 and explanation.graph_count == 1, explanation.break_reasons


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_program_matches_eager_forward_and_backward(name, dtype):
    _assert_same_as_eager(name, dtype, "aot_eager_decomp_partition")


EDGE_CASES = {
    "conjugated input": (lambda a, b: a * b + 1, lambda d: (_complex(d, 6, 5).conj(), _complex(d, 6, 5)), False),
    "transposed inputs": (lambda a, b: (a * b).exp(), lambda d: (_complex(d, 6, 5).t(), _complex(d, 6, 5).t()), False),
    "zero-dim input": (lambda a, b: a * b.sum(), lambda d: (_complex(d, 6, 5)[0, 0], _complex(d, 6, 5)), False),
    "outputs aliasing inputs": (lambda a: (a.t(), a * 2, a[1]), lambda d: (_complex(d, 6, 5),), False),
    "dynamic shapes": (lambda a, b: (a * b + a).exp().sum(0), lambda d: (_complex(d, 6, 5), _complex(d, 6, 5)), True),
    "complex64 made from it": (lambda a, b: (a * b.to(torch.complex64)).sum(), lambda d: (_complex(d, 6, 5),) * 2, False),
    "float32 promotes to complex64": (lambda a: a * torch.ones(5), lambda d: (_complex(d, 6, 5),), False),
    "complex Python numbers": (lambda a: a * (2 + 3j) + 1j, lambda d: (_complex(d, 6, 5),), False),
}


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", EDGE_CASES)
def test_edge_case_matches_eager(name, dtype):
    program, make_args, dynamic = EDGE_CASES[name]
    torch.manual_seed(0)
    args = make_args(dtype)
    torch._dynamo.reset()
    got = torch.compile(program, backend="aot_eager_decomp_partition", fullgraph=True, dynamic=dynamic)(*args)
    want = program(*args)
    got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
    for g, w in zip(got, want):
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        assert _relative_error(g, w) <= TOLERANCE[dtype], name


def _positive_definite(dtype):
    m = torch.randn(4, 4, dtype=torch.complex64)
    return (m @ m.mH + 4 * torch.eye(4)).to(dtype)


# Linear algebra stays an ATen node in the graph, run by jitdtypes' eager kernels; fake tensors must agree.
LINALG = {
    "inv": (lambda a: torch.linalg.inv(a) * 2, lambda d: (_positive_definite(d),)),
    "solve": (lambda a, b: torch.linalg.solve(a, b).exp(), lambda d: (_positive_definite(d), _complex(d, 4, 4))),
    "det": (lambda a: torch.linalg.det(a) + 1, lambda d: (_positive_definite(d),)),
    "svdvals": (lambda a: torch.linalg.svdvals(a) * 2, lambda d: (_complex(d, 4, 4),)),
    "eigh": (lambda a: torch.linalg.eigh(a)[0] + 1, lambda d: (_positive_definite(d),)),
    "cholesky": (lambda a: torch.linalg.cholesky(a) @ a, lambda d: (_positive_definite(d),)),
    "matrix_norm": (lambda a: torch.linalg.matrix_norm(a) * a, lambda d: (_complex(d, 4, 4),)),
}


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", LINALG)
def test_linear_algebra_compiles_without_graph_break(name, dtype):
    program, make_args = LINALG[name]
    torch.manual_seed(0)
    args = make_args(dtype)
    torch._dynamo.reset()
    got = torch.compile(program, backend="aot_eager_decomp_partition", fullgraph=True)(*args)
    want = program(*args)
    assert (got.dtype, got.shape) == (want.dtype, want.shape)
    assert _relative_error(got, want) <= TOLERANCE[dtype], name


# Inductor's C++ compile takes seconds per program: each program runs once, in one of the dtypes.
INDUCTOR_CASES = [("spectral_conv_1d", torch.complex32), ("in_place_updates", dtypes.BCOMPLEX32 or torch.complex32)]


@pytest.mark.parametrize("name, dtype", INDUCTOR_CASES, ids=[f"{n}-{dtypes.NAMES[d]}" for n, d in INDUCTOR_CASES])
def test_program_matches_eager_under_inductor(name, dtype):
    if name == "in_place_updates" and not torch_bugs.inductor_cpp_compiles_masked_constants():
        pytest.skip("this torch's Inductor fails on a constant-filled slice in vectorized C++, without jitdtypes "
                    "too (tests/torch_bugs.py)")
    _assert_same_as_eager(name, dtype, "inductor")


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_elementwise_chain_is_one_float32_kernel_over_words(dtype):
    """Inductor fuses the chain into one C++ kernel that loads and stores 32-bit words (one complex value each)
    and computes in float32: no complex fallback, no 16-bit intermediate buffer. Its values are eager's."""
    args = _arguments("elementwise_chain", dtype)
    torch._dynamo.reset()
    result, (code,) = run_and_get_code(torch.compile(elementwise_chain, fullgraph=True), *args)
    kernels = [line for line in code.splitlines() if "async_compile.cpp_pybinding(" in line]
    assert len(kernels) == 1, kernels
    pointers = kernels[0].split("cpp_pybinding(")[1].split("]")[0]
    assert sorted(pointers.replace("'", "").strip("[").split(", ")) == ["const int32_t*", "const int32_t*", "int32_t*"]
    assert "at::vec::Vectorized<float>" in code  # vectorized float32 arithmetic
    calls = [line for line in code.splitlines() if "torch.ops.aten." in line and not line.lstrip().startswith(
        ("#", "assert_tensor_metadata"))]
    assert all("aten.view.dtype" in line for line in calls), calls  # only the word <-> complex views
    expected = elementwise_chain(*args)
    assert result.dtype == dtype and _relative_error(result, expected) <= TOLERANCE[dtype]


def _train(dtype, steps, backend=None):
    """An Adam step of a complex linear layer (forward, backward, update), compiled as one function."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 8, dtype=torch.complex64)
    x = torch.randn(32, 16, dtype=torch.complex64).to(dtype).to(layer.weight.dtype)
    target = torch.randn(32, 8, dtype=torch.complex64).to(dtype).to(layer.weight.dtype)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(p.to(dtype).to(torch.complex64))
    if dtype != torch.complex64:
        layer, x, target = layer.to(dtype), x.to(dtype), target.to(dtype)
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-2, eps=1e-3)

    def step():
        optimizer.zero_grad()
        loss = (layer(x) - target).abs().pow(2).mean()
        (loss * 1024).backward()  # loss scaling keeps float16 second moments out of the subnormal range
        optimizer.step()
        return loss

    run = torch.compile(step, backend=backend) if backend else step
    losses = [run().item() for _ in range(steps)]
    return layer.weight.detach(), losses


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_compiled_training_step_tracks_complex64(dtype):
    torch._dynamo.reset()
    weight, losses = _train(dtype, 3, backend="inductor")
    reference, reference_losses = _train(torch.complex64, 3)
    assert weight.dtype == dtype and losses[-1] < losses[0]
    for got, want in zip(losses, reference_losses):
        assert abs(got - want) <= TOLERANCE[dtype] * want
    assert _relative_error(weight, reference) <= TOLERANCE[dtype]
