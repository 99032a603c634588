"""Reductions of 16-bit complex tensors over any dims: sum, mean, prod (complex results), var, std, var_mean,
std_mean and linalg.vector_norm (real results: float16 for complex32, bfloat16 for bcomplex32).

The kernels and their host launcher are real Triton and Python code in reduction_kernels.py (layout and numerics
are told there); what varies per variant, the op, the norm's order and the dtype, is rendered here as the few
lines that bind reduction_kernels.Reduction to them, with the torch-facing `run`, whose arguments differ per op
(torch.library.triton_op reads them from its annotations). The ATen adapters follow.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from jitdtypes import dtypes
from jitdtypes.schema import resize_output

from . import common, launcher
from . import reduction_kernels  # what rendered modules import (render names it): part of this family's kernel key

FAMILY = "reductions"

COMPLEX_RESULT_OPS = ("sum", "mean", "prod")
VARIANCE_OPS = ("var", "std", "var_mean", "std_mean")
NORM_ORDS = ("2", "1", "0", "inf", "-inf", "p")  # "p": any other positive finite order, passed at run time

TEMPLATE = '''\
"""Rendered by kernels_templates/reductions.py: $title of a $dtype tensor over any dims, computed by
kernels_templates/reduction_kernels.py."""
import torch

from $kernels import Reduction
# the kernels this module launches (adapters look them up here)
from $kernels import _finish_kernel, _reduce_kernel  # noqa: F401

MUTATES = $mutates
reduction = Reduction("$op", bf16=$bf16, interpret=$interpret, ord=$ord)
# what the adapters' plans launch by themselves
prepared_launch = reduction.prepared_launch


def run(x: torch.Tensor, dims: list[int], $arguments) -> None:
    """Reduce x over `dims` (ascending, non-negative; every dim of x for a full reduction) into the output
    tensor(s), which already have the result's shape (with or without the kept size-1 dims): Reduction.run."""
    reduction.run(x, dims, [$scalars], [$outputs])
'''


def render(params: dict) -> str:
    op, order = params["op"], params.get("ord")
    outputs = ["out", "mean_out"] if op in ("var_mean", "std_mean") else ["out"]
    scalars = ["correction"] if op in VARIANCE_OPS else ["ord"] if order == "p" else []
    return common.render(
        TEMPLATE, kernels=reduction_kernels.__name__,
        title=op + (f" (ord {order})" if op == "vector_norm" else ""),
        dtype=params["dtype"],
        mutates=repr(tuple(outputs)),
        op=op,
        bf16=dtypes.PART_BY_NAME[params["dtype"]] == torch.bfloat16,
        interpret=bool(params["interpret"]),
        ord=repr(order),
        arguments=", ".join([f"{name}: float" for name in scalars] + [f"{name}: torch.Tensor" for name in outputs]),
        scalars=", ".join(scalars),
        outputs=", ".join(outputs),
    )


def variants(dtype: str) -> list[dict]:
    ops = [{"op": op} for op in COMPLEX_RESULT_OPS + VARIANCE_OPS]
    ops += [{"op": "vector_norm", "ord": order} for order in NORM_ORDS]
    return [{**op, "dtype": dtype, "interpret": False} for op in ops]


# ---------------------------------------------------------------------------------------------------------
# ATen adapters


def prepare_outs(outs, specs, like: torch.Tensor, *, may_alias: bool = False) -> bool:
    """Check out= tensors against (shape, dtype) specs and resize them like ATen; False if any does not fit
    (nothing is resized then)."""
    for out, (_, dtype) in zip(outs, specs):
        if not isinstance(out, torch.Tensor) or out.dtype != dtype or out.device != like.device:
            return False
        if out.is_conj() or out.is_neg() or (not may_alias and common.shares_memory(out, like)):
            return False
    for out, (shape, _) in zip(outs, specs):
        resize_output(out, shape)
    return True


def _reduced_dims(x: torch.Tensor, dim) -> list[int] | None:
    """ATen's dims in ascending non-negative form: None or [] is every dim; None where ATen would raise."""
    if dim is None or (dim.__class__ in (list, tuple) and not dim):  # the common full reduction, quickly
        return list(range(x.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    rank = max(x.dim(), 1)
    if any(not -rank <= d < rank for d in dims):
        return None
    wrapped = sorted(d % rank for d in dims)
    if len(set(wrapped)) != len(wrapped):
        return None
    if x.dim() == 0:
        return []
    return wrapped or list(range(x.dim()))


def _result_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> tuple[int, ...]:
    """A tuple: torch.empty parses one faster than a list."""
    if keepdim:
        return tuple(1 if d in dims else size for d, size in enumerate(x.shape))
    return tuple(size for d, size in enumerate(x.shape) if d not in dims)


def _norm_order(order) -> str | None:
    """The rendered order for a vector_norm `ord`, or None for orders left to the upcast path (negative)."""
    if isinstance(order, complex) or math.isnan(order):
        return None
    order = float(order)
    names = {2.0: "2", 1.0: "1", 0.0: "0", math.inf: "inf", -math.inf: "-inf"}
    return names.get(order) or ("p" if order > 0 else None)


def _correction(call: dict) -> float:
    if "unbiased" in call:
        return 1.0 if call["unbiased"] else 0.0
    return 1.0 if call.get("correction") is None else float(call["correction"])


class _Reduction(common.Planned):
    """The adapter of one reduction overload. Its plan (kernels_templates/common.py) checks self's kind once and
    keeps, per signature of values (self's shape, strides and device, dims, keepdim, correction, ord), what a call
    with them computes: outputs, kernel, scalars."""

    def __init__(self, op: str, name: str) -> None:
        self.op, self.name = op, name
        arguments = common.schema_arguments(name)
        self.output_names = tuple(a for a, kwarg_only, _ in arguments if kwarg_only and a.startswith("out"))
        # what the result depends on besides self
        self.value_names = tuple(a for a, _, _ in arguments if a in ("dim", "keepdim", "correction", "unbiased", "ord"))
        self.__name__ = self.__qualname__ = common.adapter_name(name)

    def plan(self, load, args, kwargs, device_type):
        plain = common.plain_self_call(self.name, args, kwargs)  # self's dtype and flags, and dtype=: kinds
        if plain is None:
            return None
        read = common.signature_reader(self.name, args, kwargs, ("self", *self.value_names))
        read_outs = common.argument_reader(self.name, args, kwargs, self.output_names) if self.output_names else None
        return _ReductionPlan(self, load, plain[2], read, read_outs)

    def prepare(self, load, x: torch.Tensor, dtype: str, values: tuple):
        """What a call with these values computes, as a _Prepared, or None where the upcast path takes it."""
        call = dict(zip(self.value_names, values))
        dims = _reduced_dims(x, call.get("dim"))
        if dims is None:
            return None
        op = self.op
        params, scalars = {"op": op, "dtype": dtype}, []
        if op in VARIANCE_OPS:
            scalars.append(_correction(call))
        if op == "vector_norm":
            params["ord"] = _norm_order(call["ord"])
            if params["ord"] is None:
                return None
            if params["ord"] == "p":
                scalars.append(float(call["ord"]))
            if params["ord"] in ("inf", "-inf") and any(x.shape[d] == 0 for d in dims):
                return None  # ATen raises: these norms have no identity
        shape = _result_shape(x, dims, bool(call.get("keepdim")))
        specs = [(shape, x.dtype if op in COMPLEX_RESULT_OPS else dtypes.PART_BY_NAME[dtype])]
        if op.endswith("_mean"):
            specs.append((shape, x.dtype))
        run = load(params, (op, dtype, params.get("ord")))
        module = getattr(run, "module", None)  # what engine.load_kernel returns carries its module
        launch = None
        # interpreted kernels run one at a time through `run` (engine._one_at_a_time)
        if module is not None and launcher.launcher(module._reduce_kernel).direct:
            launch = module.prepared_launch(x, dims, scalars)
        return _Prepared(specs, tuple(dims), tuple(scalars), run, launch)


class _Prepared(NamedTuple):
    """A reduction for one signature of values: its outputs' (shape, dtype), the dims reduced, the kernel's
    scalars, the module's `run`, and its prepared_launch where the plan may launch the kernels itself (else None)."""

    specs: list
    dims: tuple
    scalars: tuple
    run: object
    launch: object


class _ReductionPlan:
    """A reduction's calls of one kind: functional ones allocate their outputs and launch the module's kernels
    themselves; out= ones check their outputs per call and go through the module's `run`."""

    def __init__(self, reduction: _Reduction, load, dtype: str, read, read_outs) -> None:
        self.reduction, self.load, self.dtype, self.read, self.read_outs = reduction, load, dtype, read, read_outs
        self.memo = common.Memo()

    def __call__(self, args, kwargs):
        x, key = self.read(args, kwargs)  # key: x's shape, strides and device, then dim, keepdim...
        prepared = self.memo.get(key)
        if prepared is None:
            prepared = self.memo.keep(key, self.reduction.prepare(self.load, x, self.dtype, key[3:]))
        if prepared is common.DECLINED:
            return NotImplemented
        if self.read_outs is not None:
            outs = self.read_outs(args, kwargs)
            if not prepare_outs(outs, prepared.specs, x):
                return NotImplemented
            prepared.run(x, list(prepared.dims), *prepared.scalars, *outs)
        else:
            device = x.device
            outs = [torch.empty(shape, dtype=dtype, device=device) for shape, dtype in prepared.specs]
            if prepared.launch is not None and launcher.on_current_device(x):
                if outs[0].numel():
                    prepared.launch(x, outs, prepared.scalars)
            else:
                prepared.run(x, list(prepared.dims), *prepared.scalars, *outs)
        return tuple(outs) if len(outs) > 1 else outs[0]


_OVERLOADS = {
    "sum": ("aten::sum", "aten::sum.out", "aten::sum.dim_IntList", "aten::sum.IntList_out"),
    "mean": ("aten::mean", "aten::mean.dtype_out", "aten::mean.dim", "aten::mean.out"),
    "prod": ("aten::prod", "aten::prod.out", "aten::prod.dim_int", "aten::prod.int_out"),
    **{
        op: tuple(f"aten::{op}{suffix}" for suffix in ("", ".dim", ".correction", ".correction_out"))
        + ((f"aten::{op}.out",) if op in ("var", "std") else ())
        for op in VARIANCE_OPS
    },
    "vector_norm": ("aten::linalg_vector_norm", "aten::linalg_vector_norm.out"),
}

ATEN = {name: _Reduction(op, name) for op, names in _OVERLOADS.items() for name in names}
