"""Routed calls, specialized per argument kinds.

A call the guard hands to its router is described by a key: the number of positional arguments, the
keywords given, and for every argument that can hold a tensor, a Python number or a dtype, what it holds
(a tensor's dtype, conj and neg flags and whether it is zero-dim; a number's type; the dtype). Everything
the router decides depends on the key alone: which dtype is routed and whether PyTorch is tried first,
whether a template adapter is asked, which tensors are widened, which positions receive a zero-dim tensor
for a Python number, what is written back (in place, out=) and what is rounded. The first call with a key
builds a callable that does only what is left to do per call and caches it; later calls look it up, count
themselves with one increment, and run it.
"""

from __future__ import annotations

import functools
import weakref

import torch

from . import dtypes, engine, path_record, upcast
from .probe import PARTIAL
from .schema import OPTIONAL_TENSOR, TENSOR, Overload

Tensor = torch.Tensor
# a router holding this many specializations starts over: keys come from the argument kinds a program uses,
# a handful per op, so reaching it means kinds that keep changing, where caching buys nothing
_LIMIT = 256


def key_function(info: Overload):
    """key(args, kwargs) for calls of `info`: the positions and keywords whose value kinds change what a
    routed call does (see the module docstring). Other arguments (ints, int lists, strings) pass through
    unchanged and stay out of the key. Generated per schema, like the guard: a loop costs more."""
    required = 0
    while required < len(info.positional) and not info.positional[required].has_default:
        required += 1
    lines, parts = ["def key(args, kwargs):"], ["len(args)", "*kwargs"]
    # trailing defaulted positional arguments may be missing; a missing keyword reads as None (the keywords
    # given are part of the key)
    described = [f"args[{i}]" if i < required else f"(args[{i}] if len(args) > {i} else None)"
                 for i, arg in enumerate(info.positional) if _described(arg)]
    described += [f"kwargs.get({arg.name!r})" for arg in info.keyword if _described(arg)]
    for n, value in enumerate(described):
        # plain tensors and Python numbers inline (a call per argument costs more than the tests)
        lines += [f"    a = {value}", "    c = a.__class__",
                  f"    k{n} = (a.dtype, a.is_conj(), a.is_neg(), not a.ndim) if c is Tensor else "
                  "c if c in PLAIN else kind(a)"]
        parts.append(f"k{n}")
    # unpacking an empty kwargs costs more than the test (most calls pass no keywords)
    without_keywords = [part for part in parts if part != "*kwargs"]
    lines.append(f"    return ({', '.join(parts)},) if kwargs else ({', '.join(without_keywords)},)")
    namespace = {"kind": _kind, "Tensor": Tensor, "PLAIN": _PLAIN}
    exec(_compiled("\n".join(lines) + "\n"), namespace)
    return namespace["key"]


@functools.lru_cache(maxsize=None)
def _compiled(source: str):
    return compile(source, "<jitdtypes specialization key>", "exec")


def _described(arg) -> bool:
    return arg.kind in (TENSOR, OPTIONAL_TENSOR) or arg.real_type in ("number", "ScalarType", "Optional[ScalarType]")


_PLAIN = frozenset({int, float, complex, bool, type(None)})


def _kind(value):
    if isinstance(value, Tensor):
        return value.dtype, value.is_conj(), value.is_neg(), not value.ndim
    if value.__class__ is torch.dtype:
        return value
    return value.__class__


_all: weakref.WeakSet = weakref.WeakSet()


def forget_all() -> None:
    """Drop every specialization: what they decided no longer holds (the CPU backend was switched, or the
    kernels they hold were dropped)."""
    for specializations in list(_all):
        specializations.table.clear()


class Specializations:
    """The specialized routed calls of one router (one overload at one dispatch key)."""

    def __init__(self, router, looks_like_dtype_error) -> None:
        self.router = router
        self.looks_like_dtype_error = looks_like_dtype_error
        self.key = key_function(router.info)
        self.table: dict[tuple, object] = {}
        _all.add(self)

    def specialize(self, args, kwargs, dtype=None):
        """The callable (keyset, args, kwargs) -> result for calls of these argument kinds, built and
        entered into `table` (under `key(args, kwargs)`); `dtype`: the routed dtype when the caller knows
        it (a result dtype that promotion makes a target)."""
        router = self.router
        info = router.info
        dtype = dtype or router.target_dtype(args, kwargs)
        name, op, device = dtypes.NAMES[dtype], info.full_name, router.device_type
        native_count = path_record.counter(op, name, device, path_record.NATIVE)
        template_count = path_record.counter(op, name, device, path_record.TEMPLATE)
        upcast_count = path_record.counter(op, name, device, path_record.UPCAST)
        template = engine.planned_adapter(op, device, args, kwargs) if router.templates else None
        upcast_call = upcast.specialize(info, router.original, args, kwargs, upcast_count)

        if template is None:
            without_native = upcast_call
        else:
            def without_native(keyset, args, kwargs):
                result = template(args, kwargs)
                if result is not NotImplemented:
                    template_count[0] += 1
                    return result
                return upcast_call(keyset, args, kwargs)

        specialized, path = without_native, path_record.UPCAST if template is None else "template or upcast"
        if router.status[dtype] == PARTIAL:
            native, dtype_error = router.native, self.looks_like_dtype_error

            def native_first(keyset, args, kwargs):
                try:
                    result = native(keyset, args, kwargs)
                except Exception as exc:
                    if not dtype_error(exc):
                        raise
                    return without_native(keyset, args, kwargs)
                native_count[0] += 1
                return result

            specialized, path = native_first, f"native first, else {path}"
        if len(self.table) >= _LIMIT:
            self.table.clear()
        self.table[self.key(args, kwargs)] = specialized
        router.log_first(dtype, path)
        return specialized


engine.backend_listeners.append(forget_all)
engine.kernel_listeners.append(forget_all)
