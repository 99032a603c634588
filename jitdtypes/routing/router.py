"""The slow paths behind one generated guard, and the routed calls it has specialized.

The guard (sources.py) hands the router the calls it cannot pass straight to PyTorch: `route` those with a
target dtype, `general` those with a Python number or a Tensor subclass in a Tensor position, or a complex
Scalar. A routed call is described by a key (sources.key_source): the number of positional arguments, the
keywords given, and for every argument that can hold a tensor, a Python number or a dtype, what it holds (a
tensor's dtype, conj and neg flags and whether it is zero-dim; a number's type; the dtype). Everything the
router decides depends on the key alone: which dtype is routed and whether PyTorch is tried first, whether a
template adapter is asked, which tensors are widened, which positions receive a zero-dim tensor for a Python
number, what is written back (in place, out=) and what is rounded. The first call with a key builds a callable
that does only what is left to do per call and caches it; later calls look it up, count themselves with one
increment, and run it.
"""

from __future__ import annotations

import functools
import logging
import threading
import weakref

import torch

from .. import cpu_kernels, dtypes, upcast
from ..triton_kernels import engine
from . import path_record
from ..upcast import wrapped_numbers
from ..upcast.error_messages import looks_like_dtype_error
from ..findings import MISSING, PARTIAL
from ..schema import OPTIONAL_TENSOR, TENSOR, TENSOR_LIST, Overload
from . import sources

log = logging.getLogger("jitdtypes")

# a router holding this many specializations starts over: keys come from the argument kinds a program uses,
# a handful per op, so reaching it means kinds that keep changing, where caching buys nothing
_LIMIT = 256
_SEVERITY = {MISSING: 2, PARTIAL: 1}
_NUMBERS = (bool, int, float, complex)
# type-promotion categories: bool < integer < floating < complex (the guards read them too)
NUMBER_CATEGORY = {bool: 0, int: 1, float: 2}
DTYPE_CATEGORY = {
    dtype: 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype == torch.bool else 1
    for dtype in (getattr(torch, name) for name in dir(torch)) if isinstance(dtype, torch.dtype)
}
_CATEGORY_DEFAULT = {1: lambda: torch.int64, 2: torch.get_default_dtype}
# what _with_exact_numbers answers for a call with a target dtype: the general path then looks for its
# specialization first
_INVOLVES_TARGET = object()

# Overloads whose routers act as plain PyTorch: discovery probes a composite op this way to see whether it
# still fails with every other override in place (registrar.bypass).
bypassed: frozenset[str] = frozenset()


def set_bypassed(names: frozenset[str]) -> None:
    global bypassed
    bypassed = names


_all: weakref.WeakSet = weakref.WeakSet()


def forget_all() -> None:
    """Drop every specialization: what they decided no longer holds (the CPU backend was switched, or the
    kernels they hold were dropped)."""
    for router in list(_all):
        router.specialized.clear()


engine.backend_listeners.append(forget_all)
engine.kernel_listeners.append(forget_all)


class Router:
    """The routed calls of one overload at one dispatch key."""

    def __init__(self, info: Overload, original, status: dict[str, str], device_type: str, templates: bool) -> None:
        self.info = info
        self.templates = templates
        self.original = original
        self.status = {dtypes.BY_NAME[n]: s for n, s in status.items() if n in dtypes.BY_NAME}
        self.device_type = device_type
        self.tensor_positions = [i for i, a in enumerate(info.positional) if a.kind in (TENSOR, OPTIONAL_TENSOR)]
        self.scalar_positions = [i for i, a in enumerate(info.positional) if a.real_type == "number"]
        self.number_positions = frozenset(self.tensor_positions + self.scalar_positions)
        self.simple_numbers = not any(a.kind == TENSOR_LIST for a in info.positional)
        self.logged: set[torch.dtype] = set()
        self.lock = threading.Lock()
        self.key = sources.key_function(info)
        self.specialized: dict[tuple, object] = {}
        # the cells each routed dtype counts its calls in, by path: made here, so that routed calls do not
        self.cells = {dtype: tuple(path_record.counter(info.full_name, dtypes.NAMES[dtype], device_type, path)
                                   for path in (path_record.NATIVE, path_record.TEMPLATE, path_record.UPCAST))
                      for dtype in self.status}
        _all.add(self)

    # -- entry points from the generated guard -------------------------------------------------------

    def route(self, keyset, args, kwargs, dtype=None):
        if bypassed and self.info.full_name in bypassed:
            return self.native(keyset, args, kwargs)
        specialized = self.specialized.get(self.key(args, kwargs))
        if specialized is None:
            specialized = self.specialize(args, kwargs, dtype)
        return specialized(keyset, args, kwargs)

    def general(self, keyset, args, kwargs):
        """A tensor position holds a Python scalar (a wrapped number) or a Tensor subclass, or a Scalar
        argument is complex: the result dtype may then be a target even if no tensor is."""
        exact_args = self._with_exact_numbers(args, kwargs) if self.simple_numbers else None
        if exact_args is _INVOLVES_TARGET:
            specialized = self.specialized.get(self.key(args, kwargs))
            if specialized is not None and not bypassed:
                return specialized(keyset, args, kwargs)
        elif exact_args is not None:
            return self.original.call_boxed(keyset, *exact_args, **kwargs)
        dtype = self.target_dtype(args, kwargs)
        if dtype is None:
            scalars = [a for i, a in enumerate(args) if i in self.number_positions and isinstance(a, _NUMBERS)]
            if scalars:
                tensors = [t for t in _tensors_and_dtypes(self.info, args, kwargs) if isinstance(t, torch.Tensor)]
                result = dtypes.result_dtype(tensors, scalars)
                dtype = result if result in self.status else None
        if dtype is not None:
            return self.route(keyset, args, kwargs, dtype)
        return self.native(keyset, args, kwargs)

    # -- specializing ---------------------------------------------------------------------------------

    def specialize(self, args, kwargs, dtype=None):
        """The callable (keyset, args, kwargs) -> result for calls of these argument kinds, built and entered
        into `specialized` (under `key(args, kwargs)`); `dtype`: the routed dtype when the caller knows it (a
        result dtype that promotion makes a target)."""
        info = self.info
        dtype = dtype or self.target_dtype(args, kwargs)
        op, device = info.full_name, self.device_type
        native_count, template_count, upcast_count = self.cells[dtype]
        templates = self.templates and device in engine.template_devices
        template = engine.planned_adapter(op, device, args, kwargs) if templates else None
        upcast_call = upcast.specialize(info, self.original, args, kwargs, upcast_count)
        if device == "cpu" and (op, dtype) in cpu_kernels.eligible:
            cpu_kernels.first_need(op, dtype)  # later calls may find a generated kernel in the C++ guard

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
        if self.status[dtype] == PARTIAL:
            native = self.native

            def native_first(keyset, args, kwargs):
                try:
                    result = native(keyset, args, kwargs)
                except Exception as exc:
                    if not looks_like_dtype_error(exc):
                        raise
                    return without_native(keyset, args, kwargs)
                native_count[0] += 1
                return result

            specialized, path = native_first, f"native first, else {path}"
        if len(self.specialized) >= _LIMIT:
            self.specialized.clear()
        self.specialized[self.key(args, kwargs)] = specialized
        self._log_first(dtype, path)
        return specialized

    def _log_first(self, dtype: torch.dtype, path: str) -> None:
        if dtype not in self.logged:
            with self.lock:
                if dtype not in self.logged:
                    self.logged.add(dtype)
                    log.debug("%s on %s/%s -> %s", self.info.full_name, dtypes.NAMES[dtype], self.device_type, path)

    # -- what a call holds -----------------------------------------------------------------------------

    def target_dtype(self, args, kwargs) -> torch.dtype | None:
        """The most severely unsupported target dtype among the call's tensors (and dtype= argument)."""
        worst, worst_severity = None, 0
        for value in _tensors_and_dtypes(self.info, args, kwargs):
            dtype = value if isinstance(value, torch.dtype) else value.dtype
            severity = _SEVERITY.get(self.status.get(dtype), 0)
            if severity > worst_severity:
                worst, worst_severity = dtype, severity
        return worst

    def _with_exact_numbers(self, args, kwargs):
        """The common case, fast: `args` with each real Python number in a Tensor position replaced by a
        cached zero-dim tensor that gives the same result dtype and values, when no argument involves a
        target dtype. _INVOLVES_TARGET when an argument has a target dtype (a routed call's specialization may
        exist), None when it does not hold for other reasons or is not quick to tell (the general path
        decides)."""
        for value in kwargs.values():
            if value.__class__ is torch.dtype or isinstance(value, torch.Tensor):
                if (value if value.__class__ is torch.dtype else value.dtype) in self.status:
                    return _INVOLVES_TARGET
        numbers = []
        highest_number = dimensioned = zero_dim = -1
        zero_dim_dtype = None
        for i in self.tensor_positions:
            if i >= len(args):
                break
            value = args[i]
            category = NUMBER_CATEGORY.get(value.__class__)
            if category is not None:
                numbers.append(i)
                highest_number = max(highest_number, category)
            elif isinstance(value, torch.Tensor):
                dtype = value.dtype
                if dtype in self.status:
                    return _INVOLVES_TARGET
                if value.ndim:
                    dimensioned = max(dimensioned, DTYPE_CATEGORY[dtype])
                else:
                    zero_dim = max(zero_dim, DTYPE_CATEGORY[dtype])
                    zero_dim_dtype = dtype if zero_dim_dtype is None else torch.promote_types(zero_dim_dtype, dtype)
            elif value is not None:
                return None
        for i in self.scalar_positions:
            if i < len(args) and args[i].__class__ is complex:
                return None
        if dimensioned >= 0 and zero_dim < 0:
            # next to dimensioned tensors of the same or a higher category a number does not promote; of a
            # lower category it promotes to that category's default dtype
            if highest_number <= dimensioned:
                operand = wrapped_numbers.exact_tensor
            else:
                operand = functools.partial(wrapped_numbers.exact_tensor, dtype=_CATEGORY_DEFAULT[highest_number]())
        elif (dimensioned < 0 <= zero_dim and highest_number <= zero_dim
              and zero_dim_dtype in wrapped_numbers.ZERO_DIM_EXACT):
            # only zero-dim tensors: the result is their dtype, and kernels compute in it
            operand = functools.partial(wrapped_numbers.operand_for, dtype=zero_dim_dtype)
        else:
            return None
        args = list(args)
        for i in numbers:
            args[i] = operand(args[i])
        return args

    def native(self, keyset, args, kwargs):
        """The original kernel. Python scalars that arrived in Tensor positions (wrapped numbers) are turned
        back into zero-dim tensors chosen so that type promotion and the computed values are unchanged."""
        scalar_positions = [i for i in self.tensor_positions if i < len(args) and isinstance(args[i], _NUMBERS)]
        if not scalar_positions:
            return self.original.call_boxed(keyset, *args, **kwargs)
        inputs = [t for t in _tensors_and_dtypes(self.info, args, kwargs, inputs_only=True) if isinstance(t, torch.Tensor)]
        return wrapped_numbers.call_original(self.original, keyset, args, kwargs, scalar_positions, inputs)


def _tensors_and_dtypes(info: Overload, args, kwargs, inputs_only: bool = False):
    for arg, value in zip(info.positional, args):  # in-place self is written but still an input
        if arg.kind == TENSOR_LIST:
            yield from (t for t in value if isinstance(t, torch.Tensor))
        elif isinstance(value, torch.Tensor):
            yield value
    for arg in info.keyword:
        value = kwargs.get(arg.name)
        if inputs_only and arg.is_write:
            continue
        if isinstance(value, torch.Tensor):
            yield value
        elif arg.name == "dtype" and isinstance(value, torch.dtype):
            yield value
