"""The upcast fallback on CPU: values, dtypes, in-place/out= semantics, odd layouts and promotion."""

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS

EPS = {torch.complex32: 2.0**-10}
if dtypes.BCOMPLEX32:
    EPS[dtypes.BCOMPLEX32] = 2.0**-7


def rounded(shape, dtype, seed=0):
    """Random complex values already representable in `dtype`, and the same values in complex64."""
    gen = torch.Generator().manual_seed(seed)
    low = torch.randn(shape, dtype=torch.complex64, generator=gen).to(dtype)
    return low, low.to(torch.complex64)


def assert_close(actual, expected, dtype, ulps=2):
    complex_dtype, real_dtype = dtypes.FAMILY_OF[dtype]
    assert actual.dtype == (complex_dtype if expected.is_complex() else real_dtype)
    wide = actual.to(expected.dtype)
    scale = expected.abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(wide, expected, rtol=ulps * EPS[dtype], atol=ulps * EPS[dtype] * scale)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize(
    "fn",
    [torch.exp, torch.log, torch.sqrt, torch.tanh, torch.reciprocal, torch.sigmoid, torch.abs, torch.angle,
     lambda x: x / 2.5, lambda x: x / (x + 3), lambda x: x.sum(), lambda x: x.mean(dim=0),
     lambda x: torch.cumsum(x, 1), lambda x: torch.cumprod(x, 0), lambda x: x @ x.mT, lambda x: x.var(),
     lambda x: torch.linalg.vector_norm(x), lambda x: torch.fft.fft(x, dim=0)],
    ids=["exp", "log", "sqrt", "tanh", "reciprocal", "sigmoid", "abs", "angle", "div_scalar", "div", "sum",
         "mean", "cumsum", "cumprod", "matmul", "var", "norm", "fft_size5"],
)
def test_matches_complex64_on_rounded_inputs(fn, dtype):
    low, wide = rounded((5, 4), dtype)
    assert_close(fn(low), fn(wide), dtype, ulps=4)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_in_place_and_out_variants(dtype):
    low, wide = rounded((3, 4), dtype)
    original = low
    returned = low.exp_()
    assert returned is original
    assert_close(low, wide.exp(), dtype)

    out = torch.empty(0, dtype=dtype)
    result = torch.div(original, 3, out=out)
    assert result is out and out.shape == (3, 4)
    assert_close(out, wide.exp() / 3, dtype)

    real_out = torch.empty(3, 4, dtype=dtypes.REAL_OF[dtype])
    torch.abs(original, out=real_out)
    assert_close(real_out, (wide.exp()).abs(), dtype)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_views_noncontiguous_broadcast_zero_dim_and_empty(dtype):
    low, wide = rounded((6, 8), dtype)
    assert_close(torch.exp(low[::2, 1::3]), torch.exp(wide[::2, 1::3]), dtype)
    assert_close(torch.exp(low.T), torch.exp(wide.T), dtype)
    assert_close(low[:, :1] / low[:1, :], wide[:, :1] / wide[:1, :], dtype)
    assert_close(torch.exp(low[0, 0]), torch.exp(wide[0, 0]), dtype)
    empty = torch.exp(low[:0])
    assert empty.shape == (0, 8) and empty.dtype == dtype
    assert_close(low.conj().exp(), wide.conj().exp(), dtype)  # lazily conjugated input
    # a view's in-place update writes through to its base
    view = low[1]
    view.mul_(2j)
    assert_close(low[1], wide[1] * 2j, dtype)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_mixed_dtypes_promote_like_promote_types(dtype):
    low, wide = rounded((4,), dtype)
    assert (low / torch.ones(4)).dtype == torch.complex64
    assert (low / torch.ones(4, dtype=dtypes.REAL_OF[dtype])).dtype == dtype
    other = torch.complex32 if dtype != torch.complex32 else (dtypes.BCOMPLEX32 or torch.complex32)
    if other != dtype:
        assert torch.promote_types(dtype, other) == torch.complex64
        assert (low / low.to(other)).dtype == torch.complex64
    assert (low.real.to(dtypes.REAL_OF[dtype]) * 1j).dtype == dtype  # real 16-bit tensor * complex scalar
    assert torch.div(low, 2.0).dtype == dtype
    assert low.sum(dtype=torch.complex64).dtype == torch.complex64
    assert_close(low.sum(dtype=dtype), wide.sum(), dtype)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_factories_and_fills(dtype):
    assert torch.ones(3, dtype=dtype).to(torch.complex64).tolist() == [1 + 0j] * 3
    full = torch.full((2,), 1.5 - 2j, dtype=dtype)
    assert full.dtype == dtype and full.to(torch.complex64).tolist() == [1.5 - 2j] * 2
    z = torch.zeros(2, dtype=dtype)
    z.fill_(3j)
    assert z.to(torch.complex64).tolist() == [3j, 3j]


@pytest.mark.parametrize("real", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("n", [6, 8, 7])
def test_fft_of_real_16bit_any_size(real, n):
    if real not in dtypes.COMPLEX_OF:
        pytest.skip("torch without bcomplex32")
    complex_dtype = dtypes.COMPLEX_OF[real]
    x = torch.randn(3, n).to(real)
    wide = x.float()
    cases = [
        (torch.fft.fft(x), torch.fft.fft(wide)),
        (torch.fft.rfft(x), torch.fft.rfft(wide)),
        (torch.fft.rfft2(x), torch.fft.rfft2(wide)),
        (torch.fft.rfftn(x), torch.fft.rfftn(wide)),
        (torch.fft.ihfft(x), torch.fft.ihfft(wide)),
    ]
    for got, want in cases:
        assert got.dtype == complex_dtype
        assert_close(got, want, complex_dtype, ulps=4)
    spectrum = torch.fft.rfft(wide)
    low_spectrum = spectrum.to(complex_dtype)
    back = torch.fft.irfft(low_spectrum, n=n)
    assert back.dtype == real
    assert_close(back, torch.fft.irfft(low_spectrum.to(torch.complex64), n=n), complex_dtype, ulps=4)
    assert torch.fft.hfft(low_spectrum, n=n).dtype == real


@pytest.mark.parametrize("real", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_stft_istft_round_trip(real):
    if real not in dtypes.COMPLEX_OF:
        pytest.skip("torch without bcomplex32")
    signal = torch.randn(1000).to(real)
    window = torch.hann_window(64).to(real)
    spec = torch.stft(signal, 64, hop_length=16, window=window, return_complex=True)
    assert spec.dtype == dtypes.COMPLEX_OF[real]
    wide = torch.stft(signal.float(), 64, hop_length=16, window=window.float(), return_complex=True)
    assert_close(spec, wide, dtypes.COMPLEX_OF[real], ulps=4)
    back = torch.istft(spec, 64, hop_length=16, window=window, length=1000)
    assert back.dtype == real
    torch.testing.assert_close(back.float(), signal.float(), atol=0.05, rtol=0.05)


# -- wrapped numbers: other dtypes must not notice the overrides ---------------------------------------------

OTHER_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32,
                torch.uint8, torch.bool, torch.complex64]
SCALARS = [2, 2.5, 0.1, 1e5, 1e300, 2**40 + 1, -3, 1j, True, -0.0, float("nan"), float("inf")]


def _outcome(fn, *args):
    try:
        result = fn(*args)
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return result.dtype, result.shape, result.reshape(-1).view(torch.uint8) if result.numel() else None


WRAPPED_NUMBER_OPS = [
    torch.mul, torch.div, torch.add, torch.sub, torch.rsub, torch.true_divide, torch.floor_divide,
    torch.remainder, torch.fmod, torch.pow, torch.eq, torch.lt,
    lambda a, s: torch.add(a, s, alpha=2), lambda a, s: torch.div(a, s, rounding_mode="floor"),
    lambda a, s: torch.where(a.abs() > 1, a, s), lambda a, s: torch.clamp(a, min=s),
    lambda a, s: a.mul_(s) if a.dtype.is_floating_point else a * s,
    lambda a, s: a.div_(s) if a.dtype.is_floating_point else a / s,
    lambda a, s: torch.mul(a, s, out=torch.empty(0, dtype=a.dtype)),
]


@pytest.mark.parametrize("shape", [(3,), ()], ids=["1d", "0d"])
@pytest.mark.parametrize("dtype", OTHER_DTYPES, ids=str)
def test_wrapped_numbers_bit_identical_for_other_dtypes(dtype, shape, guard):
    base = torch.tensor([0.7, -1.3, 2.1]) if shape else torch.tensor(0.7)
    x = base.to(dtype) if dtype != torch.bool else torch.ones(shape, dtype=torch.bool)
    ops = WRAPPED_NUMBER_OPS
    cases = [(op, scalar) for op in ops for scalar in SCALARS]
    with jitdtypes.disabled():
        expectations = [_outcome(op, x.clone(), scalar) for op, scalar in cases]
    for (op, scalar), expected in zip(cases, expectations):
        actual = _outcome(op, x.clone(), scalar)
        if isinstance(expected, str) and not isinstance(actual, str):
            # a real 16-bit tensor times a complex number used to fail; now it is 16-bit complex
            assert dtype in dtypes.COMPLEX_OF and actual[0] == dtypes.COMPLEX_OF[dtype], (op, scalar)
            continue
        assert type(actual) is type(expected)
        if isinstance(expected, str):
            assert actual == expected
        else:
            assert actual[:2] == expected[:2], (op, scalar)
            assert expected[2] is None or torch.equal(actual[2], expected[2]), (op, scalar)
