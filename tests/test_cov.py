"""torch.cov of 16-bit complex data returns the data's dtype whatever the weights: float32 (or other-family)
weights would promote the result to complex64 in PyTorch's arithmetic. Other dtypes keep PyTorch's rules."""

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from tests.test_fallback import IDS, TARGETS, assert_close, rounded


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_cov_weights_leave_the_result_in_the_data_dtype(dtype):
    low, wide = rounded((3, 6), dtype)
    aweights = torch.rand(6, generator=torch.Generator().manual_seed(1))
    fweights = torch.tensor([1, 2, 1, 3, 1, 1])
    other_real = torch.bfloat16 if dtypes.REAL_OF[dtype] == torch.float16 else torch.float16
    for kwargs in ({}, {"aweights": aweights}, {"aweights": aweights.to(other_real)},
                   {"fweights": fweights, "aweights": aweights, "correction": 0}):
        wide_kwargs = {k: v.float() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in kwargs.items()}
        assert_close(torch.cov(low, **kwargs), torch.cov(wide, **wide_kwargs), dtype, ulps=4)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_cov_with_weights_has_gradients_in_the_data_dtype(dtype):
    low, wide = rounded((3, 6), dtype)
    aweights = torch.rand(6, generator=torch.Generator().manual_seed(1))
    low.requires_grad_(), wide.requires_grad_()
    torch.cov(low, aweights=aweights).abs().sum().backward()
    torch.cov(wide, aweights=aweights).abs().sum().backward()
    assert_close(low.grad, wide.grad, dtype, ulps=8)


def test_cov_of_other_dtypes_promotes_as_in_pytorch():
    x, aweights = torch.randn(3, 6), torch.rand(6)
    for data, weights in ((x.half(), aweights), (x.to(torch.complex64), aweights.double()), (x, aweights.half())):
        result = torch.cov(data, aweights=weights)
        with jitdtypes.disabled():
            expected = torch.cov(data, aweights=weights)
        assert result.dtype == expected.dtype and torch.equal(result, expected)
