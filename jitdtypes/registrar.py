"""Turns findings into torch.library registrations: one generated Python kernel per (overload, dispatch key).

Each kernel is a guard in front of the original kernel (fetched with torch.library.get_kernel before we
register). Other dtypes pay one dtype check per tensor argument and the boxed call; calls with a target
dtype are routed: native first for PARTIAL support, then a generated template kernel or the upcast path.
The guard is generated as source per schema because a generic loop over arguments costs a measurable
fraction of a microsecond on every call of every dtype.
"""

from __future__ import annotations

import logging
import threading
import warnings

import torch

from . import dtypes, engine, path_record, upcast
from .discovery import Finding
from .probe import MISSING, PARTIAL
from .schema import OPTIONAL_TENSOR, TENSOR, TENSOR_LIST, Overload, overload

log = logging.getLogger("jitdtypes")

_DTYPE_ERROR_MARKERS = (
    "ComplexHalf", "BComplex32", "Half", "BFloat16", "complex32", "bcomplex32", "float16", "bfloat16",
    "Low precision", "dtype",
)

# Overloads whose overrides act as plain PyTorch: discovery probes a composite op this way to see whether
# it still fails with every other override in place.
bypassed: frozenset[str] = frozenset()


def looks_like_dtype_error(exc: BaseException) -> bool:
    return isinstance(exc, (NotImplementedError, RuntimeError, TypeError)) and any(
        m in str(exc) for m in _DTYPE_ERROR_MARKERS
    )


class Registration:
    """The live registrations; remove() restores PyTorch's own kernels."""

    def __init__(self) -> None:
        self.library = torch.library.Library("aten", "IMPL")
        self.keys: list[tuple[str, str]] = []

    def remove(self) -> None:
        self.library._destroy()
        self.keys.clear()


def install(findings_by_device: dict[str, list[Finding]], registration: Registration | None = None) -> Registration:
    registration = registration or Registration()
    with warnings.catch_warnings():
        # overriding PyTorch's kernels is the point; some torch versions warn about it once per process
        warnings.filterwarnings("ignore", message=".*Overriding a previously registered kernel.*")
        _install(findings_by_device, registration)
    return registration


def _install(findings_by_device: dict[str, list[Finding]], registration: Registration) -> None:
    for device_type, findings in findings_by_device.items():
        for finding in findings:
            try:
                info = overload(finding.overload)
            except RuntimeError:
                continue  # an overload this torch build does not have
            for key in finding.dispatch_keys(device_type):
                original = torch.library.get_kernel(finding.overload, key)
                kernel = make_kernel(info, original, finding.status, device_type, key)
                registration.library.impl(info.short_name, kernel, key)
                registration.keys.append((finding.overload, key))


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
        "KEYSET": torch._C.DispatchKeySet(getattr(torch._C.DispatchKey, dispatch_key)),
        "Tensor": torch.Tensor,
        "targets": targets,
        "call_native": original.call_boxed,
        "route": router.route,
        "general": router.general,
        "NO_KWARGS": {},
    }
    exec(compile(_guard_source(info), f"<jitdtypes guard {info.full_name}>", "exec"), namespace)
    kernel = namespace["kernel"]
    kernel.__qualname__ = kernel.__name__ = f"jitdtypes_{info.short_name.replace('.', '_')}"
    return kernel


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

    def check(value: str, indent: str, arg) -> list[str]:
        if arg.kind in (TENSOR, OPTIONAL_TENSOR):
            guard = [
                f"{indent}if {value}.__class__ is not Tensor:",
                f"{indent}    return general({slow_args})",
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


_SEVERITY = {MISSING: 2, PARTIAL: 1}
_NUMBERS = (bool, int, float, complex)


class _Router:
    """The slow paths behind one generated guard."""

    def __init__(self, info: Overload, original, status: dict[str, str], device_type: str, templates: bool) -> None:
        self.info = info
        self.templates = templates
        self.original = original
        self.status = {dtypes.BY_NAME[n]: s for n, s in status.items() if n in dtypes.BY_NAME}
        self.device_type = device_type
        self.tensor_positions = [i for i, a in enumerate(info.positional) if a.kind in (TENSOR, OPTIONAL_TENSOR)]
        self.number_positions = frozenset(
            self.tensor_positions + [i for i, a in enumerate(info.positional) if a.real_type == "number"]
        )
        self.logged: set[torch.dtype] = set()
        self.lock = threading.Lock()

    # -- entry points from the generated guard -------------------------------------------------------

    def general(self, keyset, args, kwargs):
        """A tensor position holds a Python scalar (a wrapped number) or a Tensor subclass, or a Scalar
        argument is complex: the result dtype may then be a target even if no tensor is."""
        dtype = self._target_dtype(args, kwargs)
        if dtype is None:
            scalars = [a for i, a in enumerate(args) if i in self.number_positions and isinstance(a, _NUMBERS)]
            if scalars:
                tensors = [t for t in _tensors_and_dtypes(self.info, args, kwargs) if isinstance(t, torch.Tensor)]
                result = dtypes.result_dtype(tensors, scalars)
                dtype = result if result in self.status else None
        if dtype is not None:
            return self.route(keyset, args, kwargs, dtype)
        return self.native(keyset, args, kwargs)

    def route(self, keyset, args, kwargs, dtype=None):
        if self.info.full_name in bypassed:
            return self.native(keyset, args, kwargs)
        dtype = dtype or self._target_dtype(args, kwargs)
        if self.status[dtype] == PARTIAL:
            try:
                result = self.native(keyset, args, kwargs)
            except Exception as exc:
                if not looks_like_dtype_error(exc):
                    raise
            else:
                self._note(dtype, path_record.NATIVE)
                return result
        template = engine.adapter_for(self.info.full_name, self.device_type) if self.templates else None
        if template is not None:
            result = template(args, kwargs)
            if result is not NotImplemented:
                self._note(dtype, path_record.TEMPLATE)
                return result
        self._note(dtype, path_record.UPCAST)
        return upcast.run(self.info, args, kwargs)

    # -- helpers -------------------------------------------------------------------------------------

    def _note(self, dtype: torch.dtype, path: str) -> None:
        name = dtypes.NAMES[dtype]
        path_record.record(self.info.full_name, name, self.device_type, path)
        if dtype not in self.logged:
            with self.lock:
                if dtype not in self.logged:
                    self.logged.add(dtype)
                    log.debug("%s on %s/%s -> %s", self.info.full_name, name, self.device_type, path)

    def _target_dtype(self, args, kwargs) -> torch.dtype | None:
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
        return _call_with_wrapped_numbers(self.original, keyset, args, kwargs, scalar_positions, inputs)


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


# -- wrapped numbers -----------------------------------------------------------------------------------

_SIXTEEN_BIT = frozenset(dtypes.COMPUTE_DTYPE)


def _call_with_wrapped_numbers(original, keyset, args, kwargs, scalar_positions, tensors):
    """A zero-dim tensor of the Python number's own dtype (float64, int64, complex128, bool) keeps its exact
    value and, next to dimensioned tensors of the same or higher category, the same promotion as a wrapped
    number. Where it would change the result dtype, the result dtype itself is used: that happens when the
    number raises the category (int tensor * 2.5 -> float32), where the default 32-bit dtype loses nothing;
    or when every tensor is zero-dim and 16-bit, which is computed on one-element views instead.
    `tensors` are the inputs that take part in type promotion (not out= or other written arguments)."""
    scalars = [args[i] for i in scalar_positions]
    expected = dtypes.result_dtype(tensors, scalars)
    exact = [torch.tensor(s, dtype=dtypes.WRAPPED_NUMBER_DTYPE[type(s)]) for s in scalars]
    args = list(args)
    if dtypes.result_dtype(tensors + exact) == expected:
        zero_dims = exact
    elif expected in _SIXTEEN_BIT and tensors and all(t.dim() == 0 for t in tensors):
        return _call_on_one_element_views(original, keyset, args, kwargs, scalar_positions, exact)
    else:
        zero_dims = [torch.tensor(s, dtype=expected) for s in scalars]
    for i, zero_dim in zip(scalar_positions, zero_dims):
        args[i] = zero_dim
    return original.call_boxed(keyset, *args, **kwargs)


def _call_on_one_element_views(original, keyset, args, kwargs, scalar_positions, zero_dims):
    views = {}

    def as_view(value):
        if isinstance(value, torch.Tensor) and value.dim() == 0:
            views.setdefault(id(value), (value, value.view(1)))
            return views[id(value)][1]
        return value

    args = [as_view(a) for a in args]
    kwargs = {k: as_view(v) for k, v in kwargs.items()}
    for i, zero_dim in zip(scalar_positions, zero_dims):
        args[i] = zero_dim
    result = original.call_boxed(keyset, *args, **kwargs)
    back = {id(view): value for value, view in views.values()}
    if isinstance(result, torch.Tensor):
        return back[id(result)] if id(result) in back else result.resize_(())
    return result
