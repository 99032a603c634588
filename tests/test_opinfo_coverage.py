"""Every OpInfo op that supports complex64 on CPU gives, in complex32 and bcomplex32, the complex64 result
on the same rounded inputs, within 16-bit tolerance and with complex64's dtype mapped down."""

import pytest
import torch

import jitdtypes
import jitdtypes.triton_kernels.engine
from jitdtypes import dtypes
from tests import opinfo_samples as db
from tests.opinfo_exclusions import EXCLUDED, MIN_COVERAGE, RANDOM_OPS

TARGETS = [d for d in dtypes.COMPLEX_TARGETS]
OPS = db.ops_supporting(torch.complex64)
EPS = {torch.complex32: 2.0**-10, torch.float16: 2.0**-10, torch.bfloat16: 2.0**-7}
if dtypes.BCOMPLEX32:
    EPS[dtypes.BCOMPLEX32] = 2.0**-7
ULPS = 8  # a few roundings: the upcast path rounds once, composite ops may round per step


def _mapped_dtype(reference_dtype: torch.dtype, target: torch.dtype) -> torch.dtype:
    complex_dtype, real_dtype = dtypes.FAMILY_OF[target]
    return {torch.complex64: complex_dtype, torch.float32: real_dtype}.get(reference_dtype, reference_dtype)


def _rounded(sample, target):
    def one(value):
        if isinstance(value, torch.Tensor) and value.dtype == torch.complex64:
            return value.to(target).to(torch.complex64)
        return value

    return sample.transform(one)


def _meta_dtypes(op, sample):
    meta = sample.transform(lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v)
    return [t.dtype for t in db.flat_tensors(db.call(op, meta))]


def _declared_dtypes(op, reference_sample, target):
    """The output dtypes PyTorch declares for the 16-bit call, from its meta kernels; None when unknown.

    Meta kernels of torch 2.14 do not map bcomplex32 to bfloat16 yet, so they are asked about complex32:
    an output whose dtype follows the input (it differs between complex32 and complex64 inputs) is moved to
    the target's family, one that does not (x.half(), x.chalf()) is kept."""
    try:
        low = _meta_dtypes(op, db.convert(reference_sample, torch.complex64, torch.complex32))
        wide = _meta_dtypes(op, reference_sample)
    except Exception:
        return None
    complex_dtype, real_dtype = dtypes.FAMILY_OF[target]
    family = {torch.complex32: complex_dtype, torch.float16: real_dtype}
    return [family.get(d, d) if d != w else d for d, w in zip(low, wide)]


def assert_matches(actual, expected, target, where, declared=None):
    actual_flat, expected_flat = db.flat(actual), db.flat(expected)
    assert len(actual_flat) == len(expected_flat), where
    declared = iter(declared or ())
    for a, e in zip(actual_flat, expected_flat):
        if not isinstance(e, torch.Tensor):
            if isinstance(e, (float, complex)):
                assert a == pytest.approx(e, rel=ULPS * EPS[target], abs=ULPS * EPS[target]), where
            else:
                assert a == e, where
            continue
        want = next(declared, None) or _mapped_dtype(e.dtype, target)
        assert a.dtype == want, f"{where}: dtype {a.dtype}, expected {want}"
        assert a.shape == e.shape, f"{where}: shape {a.shape}, expected {e.shape}"
        if not (e.is_floating_point() or e.is_complex()):
            assert torch.equal(a, e), where
            continue
        wide = torch.complex128 if e.is_complex() else torch.float64
        rounded = e.to(want).to(wide)  # values past the 16-bit range are inf in both
        got = a.to(wide)
        finite = torch.isfinite(rounded)
        assert torch.equal(torch.isfinite(got), finite), f"{where}: non-finite pattern differs"
        same_nonfinite = got[~finite].to(torch.complex128), rounded[~finite].to(torch.complex128)
        assert torch.equal(torch.isnan(same_nonfinite[0]), torch.isnan(same_nonfinite[1])), where
        if finite.any():
            scale = rounded[finite].abs().max().item()
            err = (got[finite] - rounded[finite]).abs()
            tol = ULPS * EPS[target] * (rounded[finite].abs() + scale)
            assert bool((err <= tol).all()), f"{where}: max error {err.max().item():.3g} (scale {scale:.3g})"


def check_op(op, target) -> int:
    """Compare every usable sample of `op` in `target` with complex64; returns how many were compared
    (0: complex64 itself fails on every sample). Raises AssertionError on a mismatch or an error."""
    name = db.op_id(op)
    checked = 0
    for index, sample in enumerate(db.samples(op, torch.complex64)):
        reference_input = _rounded(sample, target)
        try:
            expected = db.call(op, reference_input)
        except Exception:  # the sample is invalid for complex64 too
            continue
        low = db.convert(reference_input, torch.complex64, target)
        where = f"{name} sample {index} in {dtypes.NAMES[target]}"
        try:
            actual = db.call(op, low)
        except Exception as exc:
            raise AssertionError(f"{where} raised {type(exc).__name__}: {exc}") from exc
        if name in RANDOM_OPS:  # values are random: dtype and shape only
            for a, e in zip(db.flat_tensors(actual), db.flat_tensors(expected)):
                assert (a.dtype, a.shape) == (_mapped_dtype(e.dtype, target), e.shape), where
        else:
            declared = _declared_dtypes(op, reference_input, target)
            assert_matches(actual, expected, target, where, declared)
        checked += 1
    return checked


@pytest.fixture(params=["upcast", "triton-interpret"])
def cpu_backend(request):
    """Both CPU paths: the upcast path, and template kernels run in Triton's interpreter."""
    previous = jitdtypes.triton_kernels.engine.cpu_backend()
    jitdtypes.set_cpu_backend(request.param)
    yield request.param
    jitdtypes.set_cpu_backend(previous)


@pytest.mark.parametrize("target", TARGETS, ids=[dtypes.NAMES[d] for d in TARGETS])
@pytest.mark.parametrize("op", OPS, ids=db.op_id)
def test_matches_complex64(op, target, cpu_backend, request):
    reason = EXCLUDED.get(dtypes.NAMES[target], {}).get(db.op_id(op))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    assert jitdtypes.is_enabled()
    if check_op(op, target) == 0:
        pytest.skip("complex64 itself fails on every sample on CPU")


@pytest.mark.parametrize("target", TARGETS, ids=[dtypes.NAMES[d] for d in TARGETS])
def test_exclusions_stay_under_two_percent(target):
    excluded = EXCLUDED.get(dtypes.NAMES[target], {})
    known = {db.op_id(op) for op in OPS}
    assert set(excluded) <= known, f"stale exclusions: {set(excluded) - known}"
    assert 1 - len(excluded) / len(OPS) >= MIN_COVERAGE
