"""The universal fallback: run the op on complex64/float32 copies with the original kernels, round once.

Results follow complex64's rules mapped down: a complex result comes back in the inputs' 16-bit complex
dtype, a real floating one in float16/bfloat16; integer and bool results are left alone. Inputs that
promote past 16 bits (complex32 with float32, complex32 with bcomplex32) keep the wide result; weights are
not inputs in that sense (cov's float32 aweights leave its result in the data's dtype). Errors of the 32-bit
call name the caller's dtypes.
"""

from __future__ import annotations

import functools

import torch
from torch.utils._pytree import tree_flatten, tree_map

from .. import dtypes
from . import error_messages, wrapped_numbers
from ..schema import OPTIONAL_TENSOR, OTHER, TENSOR, TENSOR_LIST, Overload, resize_output


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


def specialize(info: Overload, original, args: tuple, kwargs: dict, count: list[int]):
    """`run` for calls whose arguments are of the same kinds as these (the caller keys them: which positions
    hold tensors or Python numbers, the tensors' dtypes, dims and conj/neg flags, which keywords are given,
    dtype= values), as a callable (keyset, args, kwargs) -> result. The decisions `run` makes on every call
    are made here once, and the 32-bit call goes to `original`, the kernel underneath the override, with the
    keyset of its dispatch key: what `info.op` would reach through the dispatcher, without its cost.
    Overloads with tensor lists or results that are not tensors, and calls mixing 16-bit families or 16-bit
    with wider dtypes, take `run` itself. Each call adds one to `count[0]`."""

    def generic(keyset, args, kwargs):
        count[0] += 1
        return run(info, args, kwargs)

    returns = [str(r.type) for r in info.op._schema.returns]
    if any(a.kind == TENSOR_LIST for a in info.args) or not returns or any(r != "Tensor" for r in returns):
        return generic
    if any(a.kind in (TENSOR, OPTIONAL_TENSOR) and kwargs.get(a.name).__class__ in dtypes.WRAPPED_NUMBER_DTYPE
           for a in info.keyword):
        return generic  # a Python number in a keyword Tensor position: rare, and run lets the dispatcher wrap it
    weights = WEIGHTS.get(info.full_name, ())
    widen_args, widen_kwargs, written, inputs = [], [], [], []
    named = [(index, arg, value) for index, (arg, value) in enumerate(zip(info.positional, args))]
    named += [(arg.name, arg, kwargs[arg.name]) for arg in info.keyword if arg.name in kwargs]
    for where, arg, value in named:
        replacement = _widening(value)
        if replacement is not None:
            if arg.is_write:
                plain = replacement is not widen
                written.append((where, _write_plain if plain else write_back))
                if plain and arg.kwarg_only:  # an out= tensor: its values are never read, only its shape
                    replacement = functools.partial(torch.empty_like, dtype=dtypes.COMPUTE_DTYPE[value.dtype])
            (widen_args if where.__class__ is int else widen_kwargs).append((where, replacement))
        if isinstance(value, torch.Tensor) and not arg.is_write and arg.kind != OTHER and arg.name not in weights:
            inputs.append(where)
    value_at = lambda where, args, kwargs: args[where] if where.__class__ is int else kwargs[where]  # noqa: E731
    fixed, family = _fixed_family(kwargs, [value_at(w, args, kwargs) for w in inputs],
                                  [value_at(w, args, kwargs) for w, _ in written])
    if not fixed:
        return generic
    to_complex, to_real = (_CONVERT[family[0]], _CONVERT[family[1]]) if family else (None, None)
    call_boxed, number_operands = _with_numbers(info, original, args, kwargs, inputs,
                                                {w for w, _ in widen_args + widen_kwargs})
    written_places = {w for w, _ in written}
    # a tensor passed in several input positions (m @ m, z * z) is widened once per call
    converted = [(i, f) for i, f in widen_args if f in _CONVERTERS and i not in written_places]
    shared = len(converted) > 1
    others = [(i, f) for i, f in widen_args if (i, f) not in converted] + number_operands if shared else []
    widen_args += number_operands
    alias_written = bool(written) and info.returns_alias_input
    single = len(returns) == 1
    complex64, float32 = torch.complex64, torch.float32

    def round_back(value):
        dtype = value.dtype
        if dtype is complex64 and to_complex is not None:
            return to_complex(value)
        if dtype is float32 and to_real is not None:
            return to_real(value)
        return value

    def upcast_call(keyset, args, kwargs):
        count[0] += 1
        wide_args = list(args)
        if shared:
            done = {}
            for index, replace in converted:
                value = args[index]
                wide = done.get(id(value))
                if wide is None:
                    wide = done[id(value)] = replace(value)
                wide_args[index] = wide
            for index, replace in others:
                wide_args[index] = replace(args[index])
        else:
            for index, replace in widen_args:
                wide_args[index] = replace(args[index])
        if widen_kwargs:
            wide_kwargs = dict(kwargs)
            for name, replace in widen_kwargs:
                wide_kwargs[name] = replace(kwargs[name])
        else:
            wide_kwargs = kwargs
        try:
            result = call_boxed(keyset, *wide_args, **wide_kwargs)
        except Exception as exc:
            error_messages.name_callers_dtypes(exc, tree_flatten((args, kwargs))[0])
            raise
        if written:
            originals = {}
            for where, write in written:
                src = value_at(where, wide_args, wide_kwargs)
                dst = value_at(where, args, kwargs)
                write(dst, src)
                originals[id(src)] = dst
            if alias_written:
                return originals.get(id(result), result) if single else tuple(originals.get(id(r), r) for r in result)
        return round_back(result) if single else tuple(round_back(r) for r in result)

    return upcast_call


def _write_plain(dst: torch.Tensor, src: torch.Tensor) -> None:
    """write_back for a dst without conj/neg flags."""
    if dst.shape != src.shape:
        resize_output(dst, src.shape)
    dst.copy_(src)


def _with_numbers(info: Overload, original, args: tuple, kwargs: dict, inputs: list, widened: set):
    """(call, replacements): Python numbers in Tensor positions (wrapped numbers) become zero-dim tensors that
    promote and compute alike. Where the widened tensors alone fix the result dtype, `replacements` put
    `operand_for`'s tensor in their positions and `call` is original.call_boxed; otherwise (all tensors
    zero-dim, or a number raising the category) `call` hands them to `wrapped_numbers.call_original` on every
    call. Decided from the widened dtypes and dims, which the caller keys on."""
    numbers = [i for i, (arg, value) in enumerate(zip(info.positional, args))
               if arg.kind in (TENSOR, OPTIONAL_TENSOR) and value.__class__ in dtypes.WRAPPED_NUMBER_DTYPE]
    call_boxed = original.call_boxed
    if not numbers:
        return call_boxed, []
    tensors = [args[w] if w.__class__ is int else kwargs[w] for w in inputs]
    wide = [torch.empty((1,) * t.dim(), dtype=dtypes.COMPUTE_DTYPE[t.dtype] if w in widened else t.dtype,
                        device="meta") for w, t in zip(inputs, tensors)]
    expected = dtypes.result_dtype(wide, [args[i] for i in numbers])
    if expected == dtypes.result_dtype(wide) and (
        any(t.dim() for t in wide) or expected in wrapped_numbers.ZERO_DIM_EXACT
    ):
        return call_boxed, [(i, functools.partial(wrapped_numbers.operand_for, dtype=expected)) for i in numbers]

    def with_wrapped_numbers(keyset, *wide_args, **wide_kwargs):
        tensors = [wide_args[w] if w.__class__ is int else wide_kwargs[w] for w in inputs]
        return wrapped_numbers.call_original(original, keyset, wide_args, wide_kwargs, numbers, tensors)

    return with_wrapped_numbers, []


# dtype -> its conversion; the dtype-named methods parse their arguments faster than .to(dtype=...)
_CONVERT = {
    torch.complex64: torch.Tensor.cfloat, torch.float32: torch.Tensor.float,
    torch.complex32: torch.Tensor.chalf, torch.float16: torch.Tensor.half, torch.bfloat16: torch.Tensor.bfloat16,
}
if dtypes.BCOMPLEX32:
    _CONVERT[dtypes.BCOMPLEX32] = functools.partial(torch.Tensor.to, dtype=dtypes.BCOMPLEX32)
_CONVERTERS = frozenset(_CONVERT.values())


def _widening(value):
    """The function giving `value`'s replacement in the 32-bit call (a widened copy of a 16-bit tensor, the
    wide dtype for a 16-bit dtype argument), or None to pass it as it is."""
    if isinstance(value, torch.Tensor):
        compute = dtypes.COMPUTE_DTYPE.get(value.dtype)
        if compute is None:
            return None
        return widen if value.is_conj() or value.is_neg() else _CONVERT[compute]
    if isinstance(value, torch.dtype) and value in dtypes.COMPUTE_DTYPE:
        wide = dtypes.COMPUTE_DTYPE[value]
        return lambda _: wide
    return None


def _fixed_family(kwargs, inputs, mutated):
    """(True, family) when the dtypes alone fix the family results are rounded to; (False, None) when it
    depends on which tensors are zero-dim (16-bit mixed with another family or a wider dtype)."""
    requested = kwargs.get("dtype")
    if isinstance(requested, torch.dtype):
        return True, dtypes.FAMILY_OF.get(requested)
    decisive = [t for t in inputs or mutated if t.is_floating_point() or t.is_complex()]
    families = {dtypes.FAMILY_OF.get(t.dtype) for t in decisive}
    if len(families) > 1 or None in families:
        return False, None
    return True, families.pop() if families else None
