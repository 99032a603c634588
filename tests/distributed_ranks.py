"""What each rank of tests/test_distributed.py runs (torch.multiprocessing.spawn imports this module in fresh
processes): collectives, DDP, FSDP2 and DTensor on every 16-bit complex dtype and, for comparison, on complex64
over the same rounded values. Rank 0 writes what it saw to a file (torch.save) for the test to check."""

from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist

WORLD = 2
ROWS, FEATURES = 3, 4


def rounded(shape, seed: int, dtype: torch.dtype) -> torch.Tensor:
    """complex64 values rounded to `dtype` (and back to complex64 for dtype complex64's runs of them)."""
    return torch.randn(shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(seed)).to(dtype)


def collectives(rank: int, dtype: torch.dtype) -> dict:
    mine = rounded((2 * FEATURES,), 10 + rank, dtype)
    summed = mine.clone()
    dist.all_reduce(summed)
    gathered = [torch.empty_like(mine) for _ in range(WORLD)]
    dist.all_gather(gathered, mine)
    scattered = torch.empty(FEATURES, dtype=dtype)
    dist.reduce_scatter(scattered, [mine[:FEATURES].clone(), mine[FEATURES:].clone()])
    broadcast = mine.clone()
    dist.broadcast(broadcast, 0)
    return {"all_reduce": summed, "all_gather": torch.stack(gathered), "reduce_scatter": scattered,
            "broadcast": broadcast}


class ComplexLayer(torch.nn.Module):
    """|x W|, summed: a complex matmul and abs (both routed for 16-bit dtypes), a real loss."""

    def __init__(self, weight: torch.Tensor) -> None:
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.weight).abs().sum()


def ddp(rank: int, dtype: torch.dtype, wide: torch.dtype) -> dict:
    """Gradients through DDP (all-reduced and averaged), then two micro-steps of which the first under
    no_sync; computed in `wide` from the values rounded to `dtype`."""
    from torch.nn.parallel import DistributedDataParallel

    model = DistributedDataParallel(ComplexLayer(rounded((FEATURES, FEATURES), 0, dtype).to(wide)))
    x = rounded((ROWS, FEATURES), 1 + rank, dtype).to(wide)
    model(x).backward()
    synced = model.module.weight.grad.clone()
    model.module.weight.grad = None
    with model.no_sync():
        model(x).backward()
    model(rounded((ROWS, FEATURES), 20 + rank, dtype).to(wide)).backward()
    return {"grad": synced, "accumulated": model.module.weight.grad.clone()}


def fsdp(rank: int, dtype: torch.dtype, wide: torch.dtype) -> dict:
    """FSDP2: complex64 master weights sharded over the ranks, computed in `dtype` (MixedPrecisionPolicy's
    param_dtype; gradients reduced in complex64), then one SGD step. dtype == wide: no mixed precision."""
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

    layer = ComplexLayer(rounded((FEATURES, FEATURES), 0, dtype).to(torch.complex64))
    policy = MixedPrecisionPolicy(param_dtype=None if dtype == wide else dtype, reduce_dtype=torch.complex64)
    fully_shard(layer, mp_policy=policy)
    optimizer = torch.optim.SGD(layer.parameters(), lr=0.1)
    layer(rounded((ROWS, FEATURES), 1 + rank, dtype).to(wide)).backward()
    grad = layer.weight.grad.full_tensor()
    optimizer.step()
    return {"grad": grad, "stepped": layer.weight.full_tensor().detach(),
            "sharded": tuple(layer.weight.to_local().shape)}


def dtensor(rank: int, dtype: torch.dtype, wide: torch.dtype) -> dict:
    """A row-sharded matrix times a replicated one, then exp, gathered whole."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (WORLD,))
    a = distribute_tensor(rounded((2 * FEATURES, FEATURES), 2, dtype).to(wide), mesh, [Shard(0)])
    b = distribute_tensor(rounded((FEATURES, FEATURES), 3, dtype).to(wide), mesh, [Replicate()])
    product = (a @ b).exp()
    return {"result": product.full_tensor(), "local_rows": product.to_local().shape[0]}


def main(rank: int, rendezvous: str, out: str, dtype_names: list[str]) -> None:
    import jitdtypes  # noqa: F401 - the 16-bit complex dtypes work in every rank

    from jitdtypes import dtypes

    dist.init_process_group("gloo", init_method=f"file://{rendezvous}", rank=rank, world_size=WORLD)
    seen = {}
    try:
        for name in dtype_names:
            dtype = dtypes.COMPLEX_BY_NAME[name]
            seen[name] = {"collectives": collectives(rank, dtype)}
            for scenario in (ddp, fsdp, dtensor):
                seen[name][scenario.__name__] = scenario(rank, dtype, dtype)
                seen[name][f"{scenario.__name__}_complex64"] = scenario(rank, dtype, torch.complex64)
    finally:
        with contextlib.suppress(Exception):
            dist.destroy_process_group()
    if rank == 0:
        torch.save(seen, out)
