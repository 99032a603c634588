"""Scans of 16-bit complex tensors along one dim: cumsum and cumprod.

The kernels and their host launcher are real Triton and Python code in scan_kernels.py (layout and numerics are
told there); what varies per variant, the op, is rendered here as the few lines that bind scan_kernels.Scan to it,
with the torch-facing `run` whose annotations torch.library.triton_op reads. The ATen adapters follow.
"""

from __future__ import annotations

import torch

from . import common, launcher
from . import scan_kernels  # what rendered modules import (render names it): part of this family's kernel key
from .reductions import prepare_outs

FAMILY = "scans"

OPS = ("cumsum", "cumprod")

TEMPLATE = '''\
"""Rendered by kernels_templates/scans.py: $op along one dim of a $dtype tensor, computed by
kernels_templates/scan_kernels.py."""
import torch

from $kernels import Scan
# the kernels this module launches (adapters look them up here)
from $kernels import _range_totals_kernel, _scan_kernel  # noqa: F401

MUTATES = ("out",)
scan = Scan("$op", interpret=$interpret)
# what the adapters' plans launch by themselves
prepared_launch = scan.prepared_launch


def run(x: torch.Tensor, dim: int, out: torch.Tensor) -> None:
    """Scan x along `dim` (non-negative; 0 for a 0-d tensor) into `out`, which has x's shape and any strides
    (out may be x itself): Scan.run."""
    scan.run(x, dim, out)
'''


def render(params: dict) -> str:
    return common.render(TEMPLATE, kernels=scan_kernels.__name__, op=params["op"], dtype=params["dtype"],
                         interpret=bool(params["interpret"]))


def variants(dtype: str) -> list[dict]:
    return [{"op": op, "dtype": dtype, "interpret": False} for op in OPS]


# ---------------------------------------------------------------------------------------------------------
# ATen adapters


def _scan_dim(x: torch.Tensor, dim: int) -> int | None:
    rank = max(x.dim(), 1)
    return dim % rank if -rank <= dim < rank else None


def _same_view(a: torch.Tensor, b: torch.Tensor) -> bool:
    return (a.shape, a.stride(), a.storage_offset()) == (b.shape, b.stride(), b.storage_offset())


class _Scan(common.Planned):
    """The adapter of one scan overload. Its plan (kernels_templates/common.py) checks self's kind once and keeps,
    per signature of values (self's shape, strides and device, dim), the dim scanned and the kernel; functional
    and in-place calls then launch the module's kernels themselves, out= calls check out and go through `run`."""

    def __init__(self, op: str, name: str) -> None:
        self.op, self.name = op, name
        self.in_place, self.with_out = name.endswith("_"), name.endswith(".out")
        self.__name__ = self.__qualname__ = common.adapter_name(name)

    def plan(self, load, args, kwargs, device_type):
        plain = common.plain_self_call(self.name, args, kwargs)  # self's dtype and flags, and dtype=: kinds
        if plain is None:
            return None
        read = common.signature_reader(self.name, args, kwargs, ("self", "dim"))
        read_out = common.argument_reader(self.name, args, kwargs, ("out",)) if self.with_out else None
        return _ScanPlan(self, load, plain[2], read, read_out)

    def prepare(self, load, x: torch.Tensor, dtype: str, dim: int):
        """(dim, the module's `run`, its prepared_launch when the plan may launch the kernels itself), or None
        where the upcast path takes the call."""
        dim = _scan_dim(x, dim)
        if dim is None:
            return None
        if self.in_place and torch._debug_has_internal_overlap(x) == 1:
            return None  # elements sharing memory: ATen refuses to write them
        run = load({"op": self.op, "dtype": dtype}, (self.op, dtype))
        module = getattr(run, "module", None)  # what engine.load_kernel returns carries its module
        launch = None
        # interpreted kernels run one at a time through `run` (engine._one_at_a_time); out= tensors vary
        if module is not None and launcher.launcher(module._scan_kernel).direct and not self.with_out:
            launch = module.prepared_launch(x, dim, x if self.in_place else _fresh_output(x))
        return dim, run, launch


def _fresh_output(x: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x, memory_format=torch.contiguous_format)  # no shape to parse, as torch.empty would


class _ScanPlan:
    def __init__(self, scan: _Scan, load, dtype: str, read, read_out) -> None:
        self.scan, self.load, self.dtype, self.read, self.read_out = scan, load, dtype, read, read_out
        self.in_place, self.with_out = scan.in_place, scan.with_out
        self.memo = common.Memo()

    def __call__(self, args, kwargs):
        x, key = self.read(args, kwargs)  # key: x's shape, strides and device, then dim
        prepared = self.memo.get(key)
        if prepared is None:
            prepared = self.memo.keep(key, self.scan.prepare(self.load, x, self.dtype, key[3]))
        if prepared is common.DECLINED:
            return NotImplemented
        dim, run, launch = prepared
        if self.with_out:
            (out,) = self.read_out(args, kwargs)
            if isinstance(out, torch.Tensor) and common.shares_memory(out, x) and not _same_view(out, x):
                return NotImplemented  # a partial overlap would read values already overwritten
            if not prepare_outs([out], [(x.shape, x.dtype)], x, may_alias=True):
                return NotImplemented
        else:
            out = x if self.in_place else _fresh_output(x)
        if launch is not None and launcher.on_current_device(x):
            if x.numel():
                launch(x, out)
        else:
            run(x, dim, out)
        return out


ATEN = {
    name: _Scan(op, name)
    for op in OPS
    for name in (f"aten::{op}", f"aten::{op}_", f"aten::{op}.out")
}
