"""Programs more than one test module runs."""

import torch


def spectral_conv_1d(x, weights):
    """A Fourier-neural-operator layer: rfft, mix the low modes, write them into a zero spectrum, irfft."""
    spectrum = torch.fft.rfft(x)
    mixed = torch.einsum("bim,iom->bom", spectrum[..., :8], weights)
    out = torch.zeros(x.shape[0], weights.shape[1], x.shape[-1] // 2 + 1, dtype=mixed.dtype)
    out[..., :8] = mixed
    return torch.fft.irfft(out, n=x.shape[-1])
