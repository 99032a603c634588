"""Autograd through 16-bit complex code gives the complex64 gradients within 16-bit tolerance."""

import pytest
import torch

pytestmark = pytest.mark.filterwarnings("ignore:Complex modules are a new feature")

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE
from tests.programs import spectral_conv_1d


def _relative_error(a: torch.Tensor, b: torch.Tensor) -> float:
    wide = torch.complex128 if b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


def _train_linear(dtype, compute_dtype, steps=5):
    """Train nn.Linear in compute_dtype from weights and data rounded to the 16-bit `dtype`."""
    torch.manual_seed(0)
    layer = torch.nn.Linear(16, 8, dtype=torch.complex64)
    x = torch.randn(32, 16, dtype=torch.complex64).to(dtype).to(compute_dtype)
    target = torch.randn(32, 8, dtype=torch.complex64).to(dtype).to(compute_dtype)
    with torch.no_grad():
        for p in layer.parameters():
            p.copy_(p.to(dtype).to(torch.complex64))
    layer = layer.to(compute_dtype)
    # Adam keeps its moments in the parameters' dtype: in fp16, squared gradients of ~1e-2 underflow and
    # eps=1e-8 is zero. The usual fp16 remedies, loss scaling and a larger eps, apply to both runs alike.
    optimizer = torch.optim.Adam(layer.parameters(), lr=1e-2, eps=1e-3)
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = (layer(x) - target).abs().pow(2).mean()
        (loss * 1024).backward()
        optimizer.step()
        losses.append(loss.item())
    return layer, losses


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_complex_linear_layer_trains_like_complex64(dtype):
    layer, losses = _train_linear(dtype, dtype)
    assert layer.weight.dtype == dtype and layer.weight.grad.dtype == dtype
    assert losses[-1] < losses[0]  # it learns
    reference, reference_losses = _train_linear(dtype, torch.complex64)
    for got, want in zip(losses, reference_losses):
        assert abs(got - want) <= TOLERANCE[dtype] * want
    assert _relative_error(layer.weight.detach(), reference.weight.detach()) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_fft_spectral_convolution_backward(dtype):
    """A Fourier-neural-operator layer: rfft -> multiply low modes by complex weights -> irfft."""
    real = dtypes.REAL_OF[dtype]
    torch.manual_seed(0)
    x = torch.randn(4, 2, 30).to(real)
    weights = (torch.randn(2, 2, 8, dtype=torch.complex64) * 0.5).to(dtype)

    x_low, w_low = x.clone().requires_grad_(), weights.clone().requires_grad_()
    out = spectral_conv_1d(x_low, w_low)
    assert out.dtype == real
    out.pow(2).sum().backward()
    x_ref, w_ref = x.float().requires_grad_(), weights.to(torch.complex64).requires_grad_()
    spectral_conv_1d(x_ref, w_ref).pow(2).sum().backward()
    assert x_low.grad.dtype == real and w_low.grad.dtype == dtype
    assert _relative_error(x_low.grad, x_ref.grad) <= TOLERANCE[dtype]
    assert _relative_error(w_low.grad, w_ref.grad) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize(
    "fn",
    [torch.exp, torch.sqrt, torch.reciprocal, lambda z: z / (z + 2), lambda z: torch.cumsum(z, 0),
     lambda z: z @ z.mH, lambda z: torch.linalg.vector_norm(z, dim=1), lambda z: torch.fft.fft(z, dim=1)],
    ids=["exp", "sqrt", "reciprocal", "div", "cumsum", "matmul", "norm", "fft"],
)
def test_gradients_of_single_ops(fn, dtype):
    torch.manual_seed(0)
    z = (torch.randn(5, 6, dtype=torch.complex64) + 1.5).to(dtype)
    low = z.clone().requires_grad_()
    fn(low).abs().pow(2).sum().backward()
    wide = z.to(torch.complex64).requires_grad_()
    fn(wide).abs().pow(2).sum().backward()
    assert low.grad.dtype == dtype
    assert _relative_error(low.grad, wide.grad) <= TOLERANCE[dtype]
