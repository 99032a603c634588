"""The universal fallback: run the op on complex64/float32 copies with the original kernels, round once.

Results follow complex64's rules mapped down: a complex result comes back in the inputs' 16-bit complex
dtype, a real floating one in float16/bfloat16; integer and bool results are left alone. Inputs that
promote past 16 bits (complex32 with float32, complex32 with bcomplex32) keep the wide result; weights are
not inputs in that sense (cov's float32 aweights leave its result in the data's dtype). Errors of the 32-bit
call name the caller's dtypes.
"""

from __future__ import annotations

import torch
from torch.utils._pytree import tree_flatten, tree_map

from jitdtypes.kernels_templates.common import resize_output

from . import dtypes, error_messages
from .schema import OTHER, Overload


# Arguments that weigh the data: PyTorch's arithmetic lets float32 weights promote 16-bit data to complex64,
# where the caller asked for statistics of the data.
WEIGHTS = {"aten::cov": frozenset({"fweights", "aweights"})}


def widen(t: torch.Tensor) -> torch.Tensor:
    """A 32-bit copy with the same logical values; lazy conj/neg flags are resolved on the 16-bit side
    by stripping them first (bcomplex32 has no conj kernel to resolve them with)."""
    compute = dtypes.COMPUTE_DTYPE.get(t.dtype)
    if compute is None:
        return t
    conj, neg = t.is_conj(), t.is_neg()
    raw = t.conj() if conj else t
    raw = torch._neg_view(raw) if neg else raw
    wide = raw.to(compute)
    wide = wide.neg() if neg else wide
    return wide.conj() if conj else wide


def write_back(dst: torch.Tensor, src: torch.Tensor) -> None:
    """dst[...] = src for a 16-bit dst (possibly an out= tensor to resize, possibly conj/neg flagged)."""
    resize_output(dst, src.shape)
    raw, value = dst, src
    if raw.is_conj():
        raw, value = raw.conj(), value.conj()
    if raw.is_neg():
        raw, value = torch._neg_view(raw), value.neg()
    raw.copy_(value)


def _round_back(family):
    complex_dtype, real_dtype = family

    def round_one(value):
        if isinstance(value, torch.Tensor):
            if value.dtype == torch.complex64:
                return value.to(complex_dtype)
            if value.dtype == torch.float32:
                return value.to(real_dtype)
        return value

    return round_one


def _widen_value(value):
    if isinstance(value, torch.Tensor):
        return widen(value)
    if isinstance(value, torch.dtype):
        return dtypes.COMPUTE_DTYPE.get(value, value)
    return value


def run(info: Overload, args: tuple, kwargs: dict):
    """info.op(*args, **kwargs) computed in 32 bits; mutated arguments are written back in place."""
    inputs, mutated = [], []
    weights = WEIGHTS.get(info.full_name, ())
    for arg, value in _named_values(info, args, kwargs):
        if arg.is_write:
            mutated.append(value)
        elif arg.kind != OTHER and arg.name not in weights:
            inputs.extend(t for t in tree_flatten(value)[0] if isinstance(t, torch.Tensor))
    requested = kwargs.get("dtype")
    if isinstance(requested, torch.dtype):
        family = dtypes.FAMILY_OF.get(requested)
    else:
        family = dtypes.round_back_family(inputs or [t for t in mutated if isinstance(t, torch.Tensor)])

    wide_args = tree_map(_widen_value, args)
    wide_kwargs = tree_map(_widen_value, kwargs)
    try:
        result = info.op(*wide_args, **wide_kwargs)
    except Exception as exc:
        error_messages.name_callers_dtypes(exc, tree_flatten((args, kwargs))[0])
        raise

    if mutated:
        originals = {}
        wide_values = [v for _, v in _named_values(info, wide_args, wide_kwargs, only_written=True)]
        for dst, src in zip(mutated, wide_values):
            for d, s in zip(tree_flatten(dst)[0], tree_flatten(src)[0]):
                if isinstance(d, torch.Tensor) and d is not s:
                    write_back(d, s)
                    originals[id(s)] = d
        if info.returns_alias_input:
            return tree_map(lambda v: originals.get(id(v), v), result)
    return tree_map(_round_back(family), result) if family else result


def _named_values(info: Overload, args, kwargs, only_written: bool = False):
    positional = info.positional
    for arg, value in zip(positional, args):
        if not only_written or arg.is_write:
            yield arg, value
    for arg in info.keyword:
        if arg.name in kwargs and (not only_written or arg.is_write):
            yield arg, kwargs[arg.name]
