"""Third-party libraries built on complex tensors, run in complex32/bcomplex32 as a user would convert them:
torch-harmonics' spherical harmonic transforms and spectral convolution, and a small CNN of torchcvnn's complex
layers and activations. Forward and backward, eager and compiled with Inductor, against complex64 (float32 for
real tensors) on the same rounded inputs and parameters: values, gradients and result dtypes.

Inductor's compile dominates the time (C++ for every kernel, forward and backward): all programs of one dtype
form one module compiled once (fullgraph, static shapes), each test checks its program's part of that one run,
and the compiled module holds the spherical transforms on one grid (eager runs all three)."""

import copy
import functools
import importlib

import pytest
import torch
from torch import nn

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _import_or_skip(name):
    """The module, or a skip that says why it cannot be had: not installed, or its binary does not load under
    this torch (an ImportError or OSError from the extension)."""
    try:
        return importlib.import_module(name)
    except (ImportError, OSError) as exc:
        pytest.skip(f"{name} cannot be imported under torch {torch.__version__}: {exc}", allow_module_level=True)


th = _import_or_skip("torch_harmonics")
cvnn = _import_or_skip("torchcvnn.nn")

# Grids of the spherical transforms, run eagerly; the compiled run takes the last: 32x64 is the size whose
# compiled complex32 transform once gave NaN (issue 21, point 1). Each grid adds its own kernels to compile.
SPHERE_GRIDS = {"eager": ((8, 16), (16, 32), (32, 64)), "compiled": ((32, 64),)}


class SphericalRoundTrips(nn.Module):
    """RealSHT then InverseRealSHT on each grid; returns the (complex) coefficients and the (real) signals.
    Both transforms cast their Legendre weights to the input's dtype, so a 16-bit signal stays 16-bit."""

    def __init__(self, grids):
        super().__init__()
        self.forward_transforms = nn.ModuleList(th.RealSHT(nlat, nlon) for nlat, nlon in grids)
        self.inverse_transforms = nn.ModuleList(th.InverseRealSHT(nlat, nlon) for nlat, nlon in grids)

    def forward(self, *signals):
        coefficients = [sht(x) for sht, x in zip(self.forward_transforms, signals)]
        return (*coefficients, *(isht(c) for isht, c in zip(self.inverse_transforms, coefficients)))


class ComplexCNN(nn.Module):
    """Complex convolutions and a linear head (torch's layers in a complex dtype, as torchcvnn's models build
    them) with torchcvnn's modReLU, CGELU and Mod: a real-valued classifier output."""

    def __init__(self, grids):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(1, 4, 3, padding=1, dtype=torch.complex64), cvnn.modReLU(),
            nn.Conv2d(4, 4, 3, stride=2, dtype=torch.complex64), cvnn.CGELU(),
            nn.Flatten(), nn.Linear(4 * 3 * 3, 3, dtype=torch.complex64), cvnn.Mod())

    def forward(self, z):
        return (self.layers(z),)


class SpectralConvolution(nn.Module):
    """torch-harmonics' SpectralConvS2. The library casts its input to float32 for the transforms
    (torch_harmonics/spectral_convolution.py, SpectralConvS2.forward: `x = x.to(torch.float32)`), so only its
    weight is 16-bit: the contraction multiplies complex64 coefficients by a complex32/bcomplex32 weight (the
    mixed product of issue 21, point 2), and the output is cast back to the input's dtype."""

    def __init__(self, grids):
        super().__init__()
        self.convolution = th.SpectralConvS2((8, 16), (8, 16), in_channels=2, out_channels=2)

    def forward(self, x):
        return (self.convolution(x),)


PROGRAMS = {"spherical_harmonic_transforms": SphericalRoundTrips, "spectral_conv_s2": SpectralConvolution,
            "torchcvnn_cnn": ComplexCNN}


def _inputs(dtype, mode):
    """Per program, its inputs in `dtype`'s precision (real 16-bit signals, complex 16-bit images)."""
    real = dtypes.REAL_OF[dtype]
    torch.manual_seed(0)
    return {"spherical_harmonic_transforms": [torch.randn(2, *grid).to(real) for grid in SPHERE_GRIDS[mode]],
            "spectral_conv_s2": [torch.randn(2, 2, 8, 16).to(real)],
            "torchcvnn_cnn": [torch.randn(2, 1, 8, 8, dtype=torch.complex64).to(dtype)]}


class Clients(nn.Module):
    """Every program as one module, so that one compile per dtype serves all tests."""

    def __init__(self, mode):
        super().__init__()
        self.programs = nn.ModuleDict({name: make(SPHERE_GRIDS[mode]) for name, make in PROGRAMS.items()})

    def forward(self, inputs):
        return {name: program(*inputs[name]) for name, program in self.programs.items()}


@functools.cache
def _dynamo_traces_check_messages() -> bool:
    """Whether Dynamo traces torch._check with a message closure over a local (torch-harmonics' RealSHT.forward
    has one). torch 2.11's raises Unsupported ("Can't extract message from torch._check()"), in complex64 too:
    there the programs compile with graph breaks instead of as one graph."""
    def check(x):
        n = x.dim()
        torch._check(n >= 1, lambda: f"got {n} dimensions")
        return x + 1

    try:
        torch.compile(check, fullgraph=True, backend="eager")(torch.ones(2))
    except torch._dynamo.exc.Unsupported:
        return False
    finally:
        torch._dynamo.reset()
    return True


def _loss(outputs):
    return sum((o.abs() if o.is_complex() else o).float().pow(2).sum() for parts in outputs.values() for o in parts)


def _run(module, inputs, compiled):
    """Outputs, input gradients and parameter gradients per program, after one backward of a float32 loss."""
    inputs = {name: [x.clone().requires_grad_() for x in xs] for name, xs in inputs.items()}
    run = torch.compile(module, fullgraph=_dynamo_traces_check_messages(), dynamic=False) if compiled else module
    outputs = run(inputs)
    _loss(outputs).backward()
    return {name: ([o.detach() for o in outputs[name]], [x.grad for x in inputs[name]],
                   {p: w.grad for p, w in module.programs[name].named_parameters()}) for name in PROGRAMS}


@functools.cache
def _modules(dtype, mode):
    """The module with its complex parameters in `dtype`, and its complex64 twin holding the same rounded values.
    Real parameters (modReLU's bias) stay the float32 the library makes them in both."""
    torch.manual_seed(0)
    reference = Clients(mode)
    narrow = copy.deepcopy(reference)
    with torch.no_grad():
        for (_, wide), (_, low) in zip(reference.named_parameters(), narrow.named_parameters()):
            if wide.is_complex():
                low.data = wide.to(dtype)
                wide.copy_(low.to(torch.complex64))
    return narrow, reference


@functools.cache
def _results(dtype, mode):
    narrow, _ = _modules(dtype, mode)
    torch._dynamo.reset()
    return _run(narrow, _inputs(dtype, mode), compiled=mode == "compiled")


@functools.cache
def _reference(dtype, mode):
    _, reference = _modules(dtype, mode)
    widened = {name: [x.to(torch.complex64 if x.is_complex() else torch.float32) for x in xs]
               for name, xs in _inputs(dtype, mode).items()}
    return _run(reference, widened, compiled=False)


def _relative_error(got, want) -> float:
    wide = torch.complex128 if want.is_complex() else torch.float64
    got, want = got.to(wide), want.to(wide)
    return ((got - want).abs().max() / want.abs().max().clamp_min(1e-12)).item()


def _narrowed(dtype, wide_dtype):
    """The dtype a 16-bit program gives where its complex64 twin gives `wide_dtype`."""
    return {torch.complex64: dtype, torch.float32: dtypes.REAL_OF[dtype]}[wide_dtype]


# Tolerance: conftest's bound for a 16-bit result computed through float32 (relative to the largest magnitude),
# as every operator here rounds its float32 result once; the programs are a few operators deep and their sums
# (FFT, Legendre quadrature, convolutions) accumulate in float32, so the error stays near a few roundings of
# the 16-bit format (measured: below 1e-3 for complex32 and 1e-2 for bcomplex32).
@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", PROGRAMS)
def test_client_program_matches_complex64(name, dtype, mode):
    outputs, input_gradients, parameter_gradients = _results(dtype, mode)[name]
    want_outputs, want_input_gradients, want_parameter_gradients = _reference(dtype, mode)[name]
    for index, (got, want) in enumerate(zip(outputs, want_outputs)):
        assert (got.dtype, got.shape) == (_narrowed(dtype, want.dtype), want.shape), f"output {index}"
        assert torch.isfinite(torch.view_as_real(got.to(want.dtype)) if got.is_complex() else got).all()
        assert _relative_error(got, want) <= TOLERANCE[dtype], f"output {index}"
    for index, (got, want) in enumerate(zip(input_gradients, want_input_gradients)):
        assert got.dtype == _narrowed(dtype, want.dtype), f"input gradient {index}"
        assert _relative_error(got, want) <= TOLERANCE[dtype], f"input gradient {index}"
    parameters = dict(_modules(dtype, mode)[0].programs[name].named_parameters())
    assert parameter_gradients.keys() == want_parameter_gradients.keys() == parameters.keys()
    for parameter, want in want_parameter_gradients.items():
        got = parameter_gradients[parameter]
        assert got.dtype == parameters[parameter].dtype, parameter
        assert _relative_error(got, want) <= TOLERANCE[dtype], parameter
