"""Turns findings into torch.library registrations: a guard per (overload, dispatch key) in front of the
original kernel (fetched with torch.library.get_kernel before we register).

Two guards, one behaviour. The compiled guard (native_guard/guard.cpp) scans the argument stack in C++ and
sends calls without a target dtype straight to the original kernel. The Python guard is generated as source
per schema, because a generic loop over arguments costs a measurable fraction of a microsecond on every call
of every dtype; under the compiled guard it is the router for the calls the C++ side hands over. Calls with
a target dtype are routed: native first for PARTIAL support, then a template kernel or the upcast path.
Where the upcast path is all a routed call can take (`_cpp_upcast_dtypes`), the typed compiled guard runs
its common case itself (native_guard/upcast.h).
"""

from __future__ import annotations

import functools
import logging
import threading
import warnings

import torch

from . import dtypes, engine, entry_points, fast_path, native_guard, path_record, torch_compat, upcast, wrapped_numbers
from .findings import Finding, kernel_level
from .probe import MISSING, PARTIAL
from .schema import OPTIONAL_TENSOR, OTHER, TENSOR, TENSOR_LIST, Overload, overload

log = logging.getLogger("jitdtypes")

_DTYPE_ERROR_MARKERS = (
    "ComplexHalf", "BComplex32", "Half", "BFloat16", "complex32", "bcomplex32", "float16", "bfloat16",
    "Low precision", "dtype",
)

# Overloads whose overrides act as plain PyTorch: discovery probes a composite op this way to see whether
# it still fails with every other override in place. Set with `bypass`.
bypassed: frozenset[str] = frozenset()


def bypass(names: frozenset[str]) -> None:
    global bypassed
    bypassed = names
    _refresh_cpp_upcast()


def _refresh_cpp_upcast() -> None:
    # the compiled guard's upcast is the CPU upcast backend's path, and bypasses nothing
    native_guard.allow_cpp_upcast(engine.cpu_backend() == engine.UPCAST and not bypassed)


engine.backend_listeners.append(_refresh_cpp_upcast)
_refresh_cpp_upcast()

# Overloads guarded although probing finds PyTorch's kernel working for the 16-bit complex dtypes:
# (overload, their support, only under the compiled guard).
_GUARDED_BEYOND_PROBING = (
    # PyTorch copies 16-bit complex tensors itself, except a lazily conjugated bcomplex32 source; copy_ runs
    # under every .to() and clone(), so only where other dtypes never leave C++
    ("aten::copy_", PARTIAL, True),
    # float32 weights promote PyTorch's result to complex64: the upcast path keeps the data's dtype
    *((name, MISSING, False) for name in upcast.WEIGHTS),
)


def looks_like_dtype_error(exc: BaseException) -> bool:
    return isinstance(exc, (NotImplementedError, RuntimeError, TypeError)) and any(
        m in str(exc) for m in _DTYPE_ERROR_MARKERS
    )


class Registration:
    """The live registrations; remove() restores PyTorch's own kernels."""

    def __init__(self, guard: str = native_guard.PYTHON) -> None:
        self.guard = guard
        self.library = torch.library.Library("aten", "IMPL")
        self.compiled = native_guard.GuardLibrary() if guard == native_guard.COMPILED else None
        self.keys: list[tuple[str, str]] = []
        self.typed: set[tuple[str, str]] = set()  # compiled guards with the operator's unboxed signature

    def register(self, info: Overload, dispatch_key: str, make_python_kernel, missing, partial=(),
                 upcast=()) -> None:
        """Register the Python kernel `make_python_kernel(original)` at `dispatch_key`, and the compiled
        guard over it when this registration uses one (`missing`, `partial`: the dtypes it hands over;
        `upcast`: (dtype, counter cell) pairs it may upcast in C++)."""
        captured = self.compiled.capture(info.full_name, dispatch_key) if self.compiled else None
        try:
            original = torch.library.get_kernel(info.full_name, dispatch_key)
            torch_compat.impl(self.library, info.short_name, make_python_kernel(original), dispatch_key)
            if captured is not None and self.compiled.guard(captured, info, dispatch_key, missing, partial, upcast):
                self.typed.add((info.full_name, dispatch_key))
        finally:
            if captured is not None:
                captured.release()
        self.keys.append((info.full_name, dispatch_key))
        _forget_dispatch_choices(info)

    def remove(self) -> None:
        if self.compiled is not None:
            self.compiled.close()  # first: its guards call the Python kernels underneath
        self.library._destroy()
        for name in {name for name, _ in self.keys}:
            _forget_dispatch_choices(overload(name))
        self.keys.clear()
        self.typed.clear()


def _forget_dispatch_choices(info: Overload) -> None:
    # The Python dispatcher (Dynamo, fake tensors) caches per OpOverload which dispatch key's kernel to call;
    # a choice made while our kernel was registered there points at nothing once it is removed (a segfault).
    info.op._dispatch_cache.clear()


def install(findings_by_device: dict[str, list[Finding]], guard: str = native_guard.PYTHON) -> Registration:
    registration = Registration(guard)
    try:
        with warnings.catch_warnings():
            # overriding PyTorch's kernels is the point; some torch versions warn about it once per process
            warnings.filterwarnings("ignore", message="(?s).*Overriding a previously registered kernel")
            _install(findings_by_device, registration)
    except BaseException:
        registration.remove()
        raise
    return registration


def _install(findings_by_device: dict[str, list[Finding]], registration: Registration) -> None:
    for device_type, findings in findings_by_device.items():
        findings = findings + _beyond_probing(findings, device_type, registration.compiled is not None)
        for finding in findings:
            try:
                info = overload(finding.overload)
            except RuntimeError:
                continue  # an overload this torch build does not have
            missing = [dtypes.BY_NAME[n] for n, s in finding.status.items() if s == MISSING and n in dtypes.BY_NAME]
            partial = [dtypes.BY_NAME[n] for n, s in finding.status.items() if s == PARTIAL and n in dtypes.BY_NAME]
            for key in finding.dispatch_keys(device_type):
                upcast = _cpp_upcast_dtypes(info, key, missing) if registration.compiled else []
                registration.register(
                    info, key, lambda original: make_kernel(info, original, finding.status, device_type, key),
                    missing, partial,
                    [(d, path_record.native_counter(info.full_name, dtypes.NAMES[d], device_type, path_record.UPCAST))
                     for d in upcast],
                )
    for name, key, factory, handed_over in entry_points.entries([d.upper() for d in findings_by_device]):
        registration.register(overload(name), key, lambda original: factory(original, _constant_keyset(key)),
                              handed_over)


def _cpp_upcast_dtypes(info: Overload, dispatch_key: str, missing) -> list:
    """The dtypes whose common routed calls the compiled guard may upcast in C++ (see upcast.h): 16-bit
    complex ones PyTorch lacks at the CPU key (below autograd; where no template kernel is asked unless the
    CPU backend is switched, which switches this off), for a schema without views: Tensor results without
    alias annotations, or one written tensor returned as the only result (in place as the first argument, or
    a keyword-only out=); no tensor lists, no weights (WEIGHTS)."""
    if dispatch_key != "CPU" or not _upcast_schema(info):
        return []
    return [d for d in missing if d in dtypes.COMPLEX_TARGETS]


def _upcast_schema(info: Overload) -> bool:
    schema = info.op._schema
    if (not schema.returns or any(str(r.type) != "Tensor" for r in schema.returns)
            or any(a.kind == TENSOR_LIST for a in info.args) or info.full_name in upcast.WEIGHTS):
        return False
    arguments = schema.arguments
    annotated = [i for i, a in enumerate(arguments) if a.alias_info is not None]
    if not annotated:
        return all(r.alias_info is None for r in schema.returns)
    if len(annotated) != 1 or len(schema.returns) != 1:
        return False
    # the C++ guard takes a written argument in first place for in place, anywhere else for out=
    written, result = arguments[annotated[0]], schema.returns[0]
    in_place, out = annotated[0] == 0 and not written.kwarg_only, annotated[0] > 0 and written.kwarg_only
    return (written.alias_info.is_write and (in_place or out) and result.alias_info is not None
            and result.alias_info.is_write and result.alias_info.before_set == written.alias_info.before_set)


def _beyond_probing(findings: list[Finding], device_type: str, compiled: bool) -> list[Finding]:
    known = {f.overload for f in findings}
    return [
        Finding(name, kernel_level(name, device_type), {dtypes.NAMES[d]: support for d in dtypes.COMPLEX_TARGETS}, {})
        for name, support, compiled_only in _GUARDED_BEYOND_PROBING
        if name not in known and (compiled or not compiled_only)
    ]


def _constant_keyset(dispatch_key: str):
    return torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, dispatch_key))


def planned_path(overload_name: str, device_type: str, support: str) -> str:
    """The path a call with an unsupported dtype takes, before any call was made."""
    if support == PARTIAL:
        return path_record.NATIVE
    if engine.uses_templates(device_type) and engine.has_template(overload_name):
        return path_record.TEMPLATE
    return path_record.UPCAST


def make_kernel(info: Overload, original, status: dict[str, str], device_type: str, dispatch_key: str):
    """The guard for one (overload, dispatch key). It is registered without with_keyset (receiving the
    dispatcher's keyset costs ~0.3 us per call): the original kernel is called with the constant keyset of
    its own key, which kernels at a backend key or composite-implicit kernels at an Autograd key ignore."""
    targets = frozenset(dtypes.BY_NAME[name] for name in status if name in dtypes.BY_NAME)
    # template kernels are custom ops without autograd formulas: only below the Autograd key
    router = _Router(info, original, status, device_type, templates=not dispatch_key.startswith("Autograd"))
    namespace = {
        "KEYSET": _constant_keyset(dispatch_key),
        "Tensor": torch.Tensor,
        "targets": targets,
        "call_native": original.call_boxed,
        "route": router.route,
        "general": router.general,
        "NO_KWARGS": {},
        "operand_for": wrapped_numbers.operand_for,
        "NUMBER_CATEGORY": _NUMBER_CATEGORY,
        "CATEGORY": _DTYPE_CATEGORY,
        "ZERO_DIM_EXACT": wrapped_numbers.ZERO_DIM_EXACT,
    }
    exec(_compiled_guard(_guard_source(info)), namespace)
    kernel = namespace["kernel"]
    kernel.__qualname__ = kernel.__name__ = f"jitdtypes_{info.short_name.replace('.', '_')}"
    return kernel


@functools.lru_cache(maxsize=None)
def _compiled_guard(source: str):
    # overloads with the same schema shape share one source: compile it once (import time)
    return compile(source, "<jitdtypes guard>", "exec")


def _guard_source(info: Overload) -> str:
    """A kernel whose signature mirrors the schema: required positional arguments by name (the dispatcher
    always passes them), trailing defaulted ones in *rest, keyword-only ones in **kwargs; each part only
    when the schema has it, since every generic parameter costs time on every call."""
    positional = info.positional
    required = 0
    while required < len(positional) and not positional[required].has_default:
        required += 1
    names = [f"p{i}" for i in range(required)]
    has_rest, has_kwargs = required < len(positional), bool(info.keyword)
    tail = (["*rest"] if has_rest else []) + (["**kwargs"] if has_kwargs else [])
    parameters = ", ".join(names + tail)
    call_args = ", ".join(["KEYSET", *names] + tail)
    as_tuple = "(" + "".join(f"{n}, " for n in names) + ")" + (" + rest" if has_rest else "")
    slow_args = f"KEYSET, {as_tuple}, {'kwargs' if has_kwargs else 'NO_KWARGS'}"
    lines = [f"def kernel({parameters}):"]
    values = names + [f"rest[{i}]" for i in range(len(positional) - required)]
    binary = _binary_tensor_positions(info, required)

    def check(value: str, indent: str, arg) -> list[str]:
        if arg.kind in (TENSOR, OPTIONAL_TENSOR):
            number = [f"{indent}    return general({slow_args})"]
            if binary and value in (values[binary[0]], values[binary[1]]):
                number = _exact_number_lines(info, values, binary, value, indent + "    ") + number
            guard = [
                f"{indent}if {value}.__class__ is not Tensor:",
                *number,
                f"{indent}if {value}.dtype in targets:",
                f"{indent}    return route({slow_args})",
            ]
            if arg.kind == OPTIONAL_TENSOR:
                return [f"{indent}if {value} is not None:"] + ["    " + line for line in guard]
            return guard
        if arg.real_type == "number":  # a complex Python scalar makes a real 16-bit tensor's result complex
            return [f"{indent}if {value}.__class__ is complex:", f"{indent}    return general({slow_args})"]
        if arg.kind == TENSOR_LIST:
            return [
                f"{indent}for a in {value}:",
                f"{indent}    if a is not None and a.dtype in targets:",
                f"{indent}        return route({slow_args})",
            ]
        return []

    for index, arg in enumerate(positional):
        if index < required:
            lines += check(names[index], "    ", arg)
        else:
            body = check(f"rest[{index - required}]", "        ", arg)
            if body:
                lines += [f"    if len(rest) > {index - required}:"] + body
    for arg in info.keyword:
        if arg.kind in (TENSOR, OPTIONAL_TENSOR):
            lines += [
                f"    a = kwargs.get({arg.name!r})",
                "    if a is not None and a.dtype in targets:",
                f"        return route({slow_args})",
            ]
        elif arg.name == "dtype" and arg.real_type == "Optional[ScalarType]":
            lines += ["    if kwargs.get('dtype') in targets:", f"        return route({slow_args})"]
    lines.append(f"    return call_native({call_args})")
    return "\n".join(lines) + "\n"


def _binary_tensor_positions(info: Overload, required: int) -> tuple[int, int] | None:
    """The two Tensor positions of a binary-like schema (add, mul, div, where, eq ...), where a Python number
    in either is checked inline; None for other schemas, whose numbers take the general path."""
    tensors = [i for i, a in enumerate(info.positional) if a.kind in (TENSOR, OPTIONAL_TENSOR, TENSOR_LIST)]
    if len(tensors) != 2 or tensors[1] >= required or any(info.positional[i].kind != TENSOR for i in tensors):
        return None
    if any(a.kind != OTHER or a.name == "dtype" for a in info.keyword):
        return None
    return tensors[0], tensors[1]


def _exact_number_lines(info: Overload, values: list[str], binary: tuple[int, int], number: str,
                        indent: str) -> list[str]:
    """`number` (a value in one of the two Tensor positions, not a Tensor) next to the other Tensor position:
    when it is a real Python number of a category no higher than that tensor's, and no Scalar argument is
    complex, call the original with an exact zero-dim tensor for it: its own dtype next to a dimensioned
    tensor (no promotion), the tensor's dtype next to a zero-dim one whose dtype kernels compute in."""
    first, second = (values[i] for i in binary)
    other = second if number == first else first
    conditions = [f"NUMBER_CATEGORY.get({number}.__class__, 9) <= CATEGORY[{other}.dtype]"]
    if number == first:  # the other tensor is not checked yet
        conditions = [f"{other}.__class__ is Tensor", f"{other}.dtype not in targets", *conditions]
    for i, arg in enumerate(info.positional):
        if arg.real_type == "number":
            value = values[i]
            rest_index = value[len("rest["):-1] if value.startswith("rest[") else None
            present = f"len(rest) <= {rest_index} or " if rest_index is not None else ""
            conditions.append(f"({present}{value}.__class__ is not complex)")
    has_rest = len(values) > len([v for v in values if not v.startswith("rest[")])
    head = [v for v in values if not v.startswith("rest[")]

    def call(replacement: str) -> str:
        args = ", ".join(["KEYSET", *(replacement if v == number else v for v in head)] + (["*rest"] if has_rest else []))
        return f"call_native({args}, **kwargs)" if info.keyword else f"call_native({args})"

    if number not in head:
        return []
    return [
        f"{indent}if {' and '.join(conditions)}:",
        f"{indent}    if {other}.ndim or {other}.dtype in ZERO_DIM_EXACT:",
        f"{indent}        return {call(f'operand_for({number}, {other}.dtype)')}",
    ]


_SEVERITY = {MISSING: 2, PARTIAL: 1}
_NUMBERS = (bool, int, float, complex)
# type-promotion categories: bool < integer < floating < complex
_NUMBER_CATEGORY = {bool: 0, int: 1, float: 2}
_DTYPE_CATEGORY = {
    dtype: 3 if dtype.is_complex else 2 if dtype.is_floating_point else 0 if dtype == torch.bool else 1
    for dtype in (getattr(torch, name) for name in dir(torch)) if isinstance(dtype, torch.dtype)
}
_CATEGORY_DEFAULT = {1: lambda: torch.int64, 2: torch.get_default_dtype}
# what _with_exact_numbers answers for a call with a target dtype: the general path then looks for its
# specialization first
_INVOLVES_TARGET = object()


class _Router:
    """The slow paths behind one generated guard."""

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
        self.specializations = fast_path.Specializations(self, looks_like_dtype_error)
        self.key, self.specialized = self.specializations.key, self.specializations.table

    # -- entry points from the generated guard -------------------------------------------------------

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
            category = _NUMBER_CATEGORY.get(value.__class__)
            if category is not None:
                numbers.append(i)
                highest_number = max(highest_number, category)
            elif isinstance(value, torch.Tensor):
                dtype = value.dtype
                if dtype in self.status:
                    return _INVOLVES_TARGET
                if value.ndim:
                    dimensioned = max(dimensioned, _DTYPE_CATEGORY[dtype])
                else:
                    zero_dim = max(zero_dim, _DTYPE_CATEGORY[dtype])
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

    def route(self, keyset, args, kwargs, dtype=None):
        if bypassed and self.info.full_name in bypassed:
            return self.native(keyset, args, kwargs)
        specialized = self.specialized.get(self.key(args, kwargs))
        if specialized is None:
            specialized = self.specializations.specialize(args, kwargs, dtype)
        return specialized(keyset, args, kwargs)

    # -- helpers -------------------------------------------------------------------------------------

    def log_first(self, dtype: torch.dtype, path: str) -> None:
        if dtype not in self.logged:
            with self.lock:
                if dtype not in self.logged:
                    self.logged.add(dtype)
                    log.debug("%s on %s/%s -> %s", self.info.full_name, dtypes.NAMES[dtype], self.device_type, path)

    def target_dtype(self, args, kwargs) -> torch.dtype | None:
        """The most severely unsupported target dtype among the call's tensors (and dtype= argument)."""
        worst, worst_severity = None, 0
        for value in _tensors_and_dtypes(self.info, args, kwargs):
            dtype = value if isinstance(value, torch.dtype) else value.dtype
            severity = _SEVERITY.get(self.status.get(dtype), 0)
            if severity > worst_severity:
                worst, worst_severity = dtype, severity
        return worst

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
