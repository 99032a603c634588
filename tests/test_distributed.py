"""Distributed training on 16-bit complex tensors (CPU, gloo, 2 processes): collectives, DDP (averaged
gradients, micro-steps under no_sync), FSDP2 with a mixed-precision policy, DTensor. Each against the same run
in complex64 on the same rounded values (tests/distributed_ranks.py runs the ranks); collectives of 16-bit
values are exact."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from jitdtypes import dtypes

from . import distributed_ranks as ranks
from .conftest import IDS, TARGETS, TOLERANCE

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(), reason="no gloo backend")


@pytest.fixture(scope="module")
def seen(tmp_path_factory):
    """What rank 0 saw, per dtype name and scenario."""
    folder = tmp_path_factory.mktemp("distributed")
    mp.spawn(ranks.main, args=(str(folder / "rendezvous"), str(folder / "seen.pt"), IDS), nprocs=ranks.WORLD)
    return torch.load(folder / "seen.pt")


def _wide(t: torch.Tensor) -> torch.Tensor:
    return t.to(torch.complex64)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and torch.equal(torch.view_as_real(_wide(a)), torch.view_as_real(_wide(b)))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_collectives_are_exact(seen, dtype):
    got = seen[dtypes.NAMES[dtype]]["collectives"]
    inputs = [ranks.rounded((2 * ranks.FEATURES,), 10 + rank, dtype) for rank in range(ranks.WORLD)]
    # the sum of two 16-bit values, rounded once, is what complex64's sum rounds to
    assert _same_bits(got["all_reduce"], (_wide(inputs[0]) + _wide(inputs[1])).to(dtype))
    assert _same_bits(got["all_gather"], torch.stack(inputs))
    half = ranks.FEATURES
    assert _same_bits(got["reduce_scatter"], (_wide(inputs[0][:half]) + _wide(inputs[1][:half])).to(dtype))
    assert _same_bits(got["broadcast"], inputs[0])


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_ddp_gradients_match_complex64(seen, dtype):
    runs = seen[dtypes.NAMES[dtype]]
    ours, wide = runs["ddp"], runs["ddp_complex64"]
    tolerance = 4 * TOLERANCE[dtype]
    for name in ("grad", "accumulated"):
        assert ours[name].dtype == dtype
        torch.testing.assert_close(_wide(ours[name]), wide[name], rtol=tolerance, atol=tolerance, msg=name)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_fsdp2_mixed_precision_matches_complex64(seen, dtype):
    runs = seen[dtypes.NAMES[dtype]]
    ours, wide = runs["fsdp"], runs["fsdp_complex64"]
    assert ours["sharded"] == (ranks.FEATURES // ranks.WORLD, ranks.FEATURES)
    tolerance = 4 * TOLERANCE[dtype]
    for name in ("grad", "stepped"):
        assert ours[name].dtype == torch.complex64  # complex64 master weights, gradients reduced in complex64
        torch.testing.assert_close(ours[name], wide[name], rtol=tolerance, atol=tolerance, msg=name)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_dtensor_sharded_matmul_and_exp_match_complex64(seen, dtype):
    runs = seen[dtypes.NAMES[dtype]]
    ours, wide = runs["dtensor"], runs["dtensor_complex64"]
    assert ours["local_rows"] == ranks.FEATURES and ours["result"].dtype == dtype
    tolerance = 4 * TOLERANCE[dtype]
    torch.testing.assert_close(_wide(ours["result"]), wide["result"], rtol=tolerance, atol=tolerance)
