"""Bad inputs raise in the 16-bit dtypes what they raise in complex64, with the dtype names mapped down:
errors raised inside the upcast path's 32-bit call name the caller's dtypes, not the compute dtypes."""

import re

import pytest
import torch

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS


def data(*shape, dtype):
    return torch.randn(*shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(0)).to(dtype)


# (case, call given the complex dtype and its real counterpart): each raises in complex64 too
BAD_INPUTS = {
    "mm shape mismatch": lambda c, r: torch.mm(data(2, 3, dtype=c), data(4, 5, dtype=c)),
    "div shape mismatch": lambda c, r: data(3, dtype=c) / data(4, dtype=c),
    "vdot shape mismatch": lambda c, r: torch.vdot(data(3, dtype=c), data(4, dtype=c)),
    "bmm shape mismatch": lambda c, r: torch.bmm(data(2, 2, 3, dtype=c), data(2, 4, 2, dtype=c)),
    "cumsum bad dim": lambda c, r: torch.cumsum(data(2, 3, dtype=c), dim=5),
    "mean bad dim": lambda c, r: data(2, 3, dtype=c).mean(dim=-3),
    "fft bad dim": lambda c, r: torch.fft.fft(data(2, 3, dtype=c), dim=2),
    "div out= real": lambda c, r: torch.div(data(3, dtype=c), data(3, dtype=c), out=torch.empty(3, dtype=r)),
    "exp out= real": lambda c, r: torch.exp(data(3, dtype=c), out=torch.empty(3, dtype=r)),
    "exp out= int64": lambda c, r: torch.exp(data(3, dtype=c), out=torch.empty(3, dtype=torch.int64)),
    "pow out= real": lambda c, r: torch.pow(data(3, dtype=c), 2, out=torch.empty(3, dtype=r)),
    "outer out= real": lambda c, r: torch.outer(data(3, dtype=c), data(3, dtype=c), out=torch.empty(3, 3, dtype=r)),
    "mm out= real": lambda c, r: torch.mm(data(2, 2, dtype=c), data(2, 2, dtype=c), out=torch.empty(2, 2, dtype=r)),
    "addmm out= real": lambda c, r: torch.addmm(data(2, 2, dtype=c), data(2, 2, dtype=c), data(2, 2, dtype=c),
                                                out=torch.empty(2, 2, dtype=r)),
    "abs out= int32": lambda c, r: torch.abs(data(2, dtype=c), out=torch.empty(2, dtype=torch.int32)),
    "angle out= int64": lambda c, r: torch.angle(data(3, dtype=c), out=torch.empty(3, dtype=torch.int64)),
    "vector_norm out= complex": lambda c, r: torch.linalg.vector_norm(data(3, dtype=c), out=torch.empty((), dtype=c)),
    "svdvals out= int64": lambda c, r: torch.linalg.svdvals(data(2, 2, dtype=c), out=torch.empty(2, dtype=torch.int64)),
    "mm complex @ real": lambda c, r: torch.mm(data(2, 2, dtype=c), torch.ones(2, 2, dtype=r)),
    "dot complex . real": lambda c, r: torch.dot(data(3, dtype=c), torch.ones(3, dtype=r)),
    "index_select out of range": lambda c, r: torch.index_select(data(3, dtype=c), 0, torch.tensor([5])),
    "take out of range": lambda c, r: torch.take(data(3, dtype=c), torch.tensor([5])),
    "index_add_ out of range": lambda c, r: data(3, dtype=c).index_add_(0, torch.tensor([5]), data(1, dtype=c)),
    "scatter_ out of range": lambda c, r: data(3, dtype=c).scatter_(0, torch.tensor([5]), data(1, dtype=c)),
    "getitem out of range": lambda c, r: data(3, dtype=c)[torch.tensor([5])],
    "inv non-square": lambda c, r: torch.linalg.inv(data(2, 3, dtype=c)),
    "det non-square": lambda c, r: torch.linalg.det(data(2, 3, dtype=c)),
    "solve shape mismatch": lambda c, r: torch.linalg.solve(data(3, 3, dtype=c), data(4, dtype=c)),
    "inv singular": lambda c, r: torch.linalg.inv(torch.zeros(2, 2, dtype=c)),
    # a float32 argument of the caller's own: its name stays
    "vector_norm dtype=float32": lambda c, r: torch.linalg.vector_norm(data(3, dtype=c), dtype=torch.float32),
    "cov float32 fweights": lambda c, r: torch.cov(data(2, 3, dtype=c), fweights=torch.ones(3)),
}

# How each spelling of the 32-bit names reads for each 16-bit family: ScalarType, C++ type, Python repr.
NAMES_MAPPED = {
    torch.complex32: [("ComplexFloat", "ComplexHalf"), ("Float", "Half"),
                      ("c10::complex<float>", "c10::complex<c10::Half>"), ("float", "c10::Half"),
                      ("torch.complex64", "torch.complex32"), ("torch.float32", "torch.float16")],
}
if dtypes.BCOMPLEX32:
    NAMES_MAPPED[dtypes.BCOMPLEX32] = [
        ("ComplexFloat", "BComplex32"), ("Float", "BFloat16"),
        ("c10::complex<float>", "c10::complex<c10::BFloat16>"), ("float", "c10::BFloat16"),
        ("torch.complex64", "torch.bcomplex32"), ("torch.float32", "torch.bfloat16"),
    ]
KEEPS_32_BIT_NAMES = {"vector_norm dtype=float32", "cov float32 fweights"}


def raised(call, *dtype_args):
    with pytest.raises(Exception) as info:
        call(*dtype_args)
    return type(info.value), str(info.value)


def mapped_down(message: str, target) -> str:
    for wide, narrow in NAMES_MAPPED[target]:
        message = re.sub(rf"(?<![\w.:<]){re.escape(wide)}(?![\w>])", narrow, message)
    return message


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_raises_what_complex64_raises_in_the_callers_dtypes(case, target):
    call = BAD_INPUTS[case]
    wide_type, wide_message = raised(call, torch.complex64, torch.float32)
    low_type, low_message = raised(call, target, dtypes.REAL_OF[target])
    expected = wide_message if case in KEEPS_32_BIT_NAMES else mapped_down(wide_message, target)
    assert (low_type, low_message) == (wide_type, expected)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_the_issue_example_names_the_16_bit_dtypes(target):
    a = data(3, dtype=target)
    with pytest.raises(RuntimeError) as info:
        torch.div(a, a, out=torch.empty(3, dtype=dtypes.REAL_OF[target]))
    complex_name, real_name = (dtypes.SCALAR_TYPE_NAMES[d] for d in dtypes.FAMILY_OF[target])
    assert str(info.value) == f"result type {complex_name} can't be cast to the desired output type {real_name}"


def test_mixed_families_keep_the_32_bit_names():
    # complex32 with bfloat16 promotes to complex64: ComplexFloat may be the real result type, so it stays
    if dtypes.BCOMPLEX32 is None:
        pytest.skip("torch without bcomplex32")
    with pytest.raises(RuntimeError, match=re.escape("c10::complex<float> != float")):
        torch.mm(data(2, 2, dtype=torch.complex32), torch.ones(2, 2, dtype=torch.bfloat16))
