"""bfloat16 ways into bcomplex32: view_as_complex views, torch.complex builds."""

import pytest
import torch

from jitdtypes import dtypes

pytestmark = pytest.mark.skipif(dtypes.BCOMPLEX32 is None, reason="torch without bcomplex32")


def test_view_as_complex_bf16_is_a_view_that_writes_through():
    pairs = torch.tensor([[1.0, 2.0], [3.0, -4.0], [0.5, 0.25]], dtype=torch.bfloat16)
    z = torch.view_as_complex(pairs)
    assert z.dtype == dtypes.BCOMPLEX32 and z.shape == (3,)
    assert z._base is pairs and z.data_ptr() == pairs.data_ptr()
    assert z.to(torch.complex64).tolist() == [1 + 2j, 3 - 4j, 0.5 + 0.25j]
    z[1] = 7 + 8j
    assert pairs[1].tolist() == [7.0, 8.0]
    assert torch.equal(torch.view_as_real(z), pairs)


def test_view_as_complex_bf16_rotary_embedding():
    """The rotary-embedding idiom: pairs of a bf16 activation rotated by complex frequencies."""
    x = torch.randn(2, 5, 8).to(torch.bfloat16)
    angles = torch.outer(torch.arange(5.0), 1.0 / 10000 ** (torch.arange(0, 8, 2.0) / 8))
    freqs = torch.polar(torch.ones_like(angles), angles).to(dtypes.BCOMPLEX32)
    rotated = torch.view_as_real(torch.view_as_complex(x.unflatten(-1, (4, 2))) * freqs).flatten(-2)
    assert rotated.dtype == torch.bfloat16
    reference = torch.view_as_real(
        torch.view_as_complex(x.float().unflatten(-1, (4, 2))) * freqs.to(torch.complex64)
    ).flatten(-2)
    torch.testing.assert_close(rotated.float(), reference, atol=3e-2, rtol=2e-2)


def test_view_as_complex_bf16_rejects_what_aten_rejects():
    with pytest.raises(RuntimeError, match="last dimension of size 2"):
        torch.view_as_complex(torch.zeros(3, 3, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match="last dimension with stride 1"):
        torch.view_as_complex(torch.zeros(2, 3, dtype=torch.bfloat16).T)
    with pytest.raises(RuntimeError, match="storage_offset divisible by 2"):
        torch.view_as_complex(torch.zeros(7, dtype=torch.bfloat16)[1:].view(3, 2))


def test_view_as_complex_bf16_autograd():
    pairs = torch.tensor([[3.0, 4.0], [0.0, 1.0]], dtype=torch.bfloat16, requires_grad=True)
    torch.view_as_complex(pairs).abs().sum().backward()
    assert pairs.grad.tolist() == [[0.6015625, 0.80078125], [0.0, 1.0]]


def test_view_as_complex_other_dtypes_unchanged():
    pairs = torch.randn(4, 2)
    assert torch.view_as_complex(pairs).dtype == torch.complex64
    assert torch.view_as_complex(pairs.half()).dtype == torch.complex32


def test_complex_from_bf16_parts():
    real = torch.tensor([1.0, -2.5], dtype=torch.bfloat16)
    imag = torch.tensor([0.5, 3.0], dtype=torch.bfloat16)
    z = torch.complex(real, imag)
    assert z.dtype == dtypes.BCOMPLEX32
    assert z.to(torch.complex64).tolist() == [1 + 0.5j, -2.5 + 3j]
    assert torch.complex(real.half(), imag.half()).dtype == torch.complex32
