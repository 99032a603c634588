"""Every OpInfo op with complex64 autograd on CPU (random and conversion ops aside) gives, in complex32 and
bcomplex32, the gradient complex64 gives on the same rounded inputs (method: tests/opinfo_backward.py). And
the discovery self-check: no ATen kernel raises "not implemented for 'ComplexHalf'/'BComplex32'" beneath an
overload jitdtypes does not override, i.e. discovery missed no backward kernel the sweep reaches.

Tolerance (opinfo_backward.GRAD_ULPS = 32 eps of the 16-bit dtype, relative to |reference| + the gradient's
largest magnitude), from the error distribution of `python -m benchmarks.backward_sweep --errors` (torch 2.14.1,
every sample that does not raise or give NaN/inf, 3 and 20 per op, with jitdtypes.wide_gradients):

  | samples, dtype | median | p90 | p99 | largest, op by op |
  | 3, complex32 | 0 | 0.41 | 0.81 | householder_product 4.6, dist 3.7, vector_norm 1.3 |
  | 3, bcomplex32 | 0 | 0.40 | 0.82 | householder_product 5.9, polar 1.9, ormqr 1.0 |
  | 20, complex32 | 0 | 0.45 | 1.00 | householder_product 19.9, dist 5.8, ormqr 3.9 |
  | 20, bcomplex32 | 0 | 0.44 | 0.92 | householder_product 35.3, masked.normalize 16.8, ormqr 2.8 |

Nearly every gradient is within a rounding or two of its last step. The ops whose formulas run op by op in 16
bits and chain products (householder_product's reflectors, normalize's division by a norm) reach 17-35 eps on a
few ill-conditioned samples; 32 eps admits those chains and nothing of the failing class (NaN/inf where
complex64 is finite, 70 eps and more before wide_gradients: logsumexp's inputs near 2600, where fp16's spacing
is 2). The one remaining failure of the 20-sample sweep, bcomplex32 householder_product's sample 7 at 35.3 eps,
is not reached by this test's samples.

CI time: each op runs one sample per dtype (complex32 its first, bcomplex32 its second where it has one), so every
op is checked in both dtypes on two different samples (about 45 s for both on 2 busy cores);
benchmarks/backward_sweep.py runs 3 and 20.
"""

import functools

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from tests import opinfo_backward as bwd
from tests import opinfo_samples as db
from tests.opinfo_exclusions import EXCLUDED

TARGETS = list(dtypes.COMPLEX_TARGETS)
OPS = bwd.backward_ops()
SAMPLE_BY_DTYPE = {"complex32": 0, "bcomplex32": 1}


@functools.lru_cache(maxsize=None)
def _overridden(dtype_name: str) -> frozenset:
    """The overloads jitdtypes routes for `dtype_name` on CPU."""
    return frozenset(row["op"] for row in jitdtypes.stats() if row["device"] == "cpu" and row["dtype"] == dtype_name
                     and row["support"] in ("missing", "partial"))


@pytest.mark.parametrize("target", TARGETS, ids=[dtypes.NAMES[d] for d in TARGETS])
@pytest.mark.parametrize("op", OPS, ids=db.op_id)
def test_gradients_match_complex64(op, target):
    assert jitdtypes.is_enabled()
    name, op_id = dtypes.NAMES[target], db.op_id(op)
    if op_id in EXCLUDED[name]:  # its forward is excused already
        pytest.skip(EXCLUDED[name][op_id])
    index = SAMPLE_BY_DTYPE[name]
    results = bwd.check_samples(op, target, [index]) or bwd.check_samples(op, target, [0])
    if not results:
        pytest.skip("complex64 cannot differentiate this sample on CPU")
    result = results[0]
    if result.raised and bwd.NOT_IMPLEMENTED.search(result.raised):
        raising = bwd.raising_overload(op, result.index, target)
        assert raising is None or raising in _overridden(name), (
            f"discovery self-check: {raising} raised {result.raised!r} in {op_id}'s backward, and jitdtypes does "
            f"not override it for {name}")
    assert result.error <= bwd.GRAD_ULPS, (f"{op_id} sample {result.index} in {name}: "
                                           f"{result.raised or f'gradient error {result.error:.3g} eps > {bwd.GRAD_ULPS}'}")


def test_repros_of_issue_22():
    """The backward-only and shape-dependent gaps discovery missed: values, in both dtypes."""
    for target in TARGETS:
        cases = [
            (lambda x: torch.nn.functional.pad(x, (1, 2), mode="reflect"), (1, 3)),
            (lambda x: torch.nn.functional.pad(x, (1, 2), mode="replicate"), (1, 3)),
            (lambda x: torch.nn.functional.pad(x, (1, 2, 2, 1), mode="replicate"), (1, 3, 4)),
            (lambda x: torch.nn.functional.unfold(x, kernel_size=2), (1, 1, 5, 5)),
            (lambda x: x.unfold(0, 3, 1), (6,)),  # overlapping windows: unfold_backward_cpu
        ]
        for fn, shape in cases:
            gen = torch.Generator().manual_seed(0)
            wide = torch.randn(shape, dtype=torch.complex64, generator=gen).to(target).to(torch.complex64)
            want = torch.autograd.grad(fn(wide.requires_grad_()).abs().sum(), wide)[0]
            low = wide.detach().to(target).requires_grad_()
            got = torch.autograd.grad(fn(low).abs().sum(), low)[0]
            assert got.dtype == target
            assert bwd.grad_error(got, want, target) <= bwd.GRAD_ULPS, (target, shape)
