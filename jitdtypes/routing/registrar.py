"""Turns findings into torch.library registrations: a guard per (overload, dispatch key) in front of the
original kernel (fetched with torch.library.get_kernel before we register).

Two guards, one behaviour. The compiled guard (native_guard/guard.cpp) scans the argument stack in C++ and
sends calls without a target dtype straight to the original kernel. The Python guard is generated per schema
(sources.py); under the compiled guard it is the entry to the router (router.py) for the calls the C++ side
hands over. Calls with a target dtype are routed: native first for PARTIAL support, then a template kernel or
the upcast path. Where the upcast path is all a routed call can take (`_cpp_upcast_dtypes`), the typed compiled
guard runs its common case itself (native_guard/upcast.h).
"""

from __future__ import annotations

import warnings

import torch

from .. import cpu_kernels, dtypes, native_guard, torch_compat, upcast
from ..triton_kernels import engine
from ..interop import complex_views
from . import path_record
from ..upcast import wide_gradients, wrapped_numbers
from ..findings import COMPOSITE, MISSING, PARTIAL, Finding, kernel_level
from ..schema import TENSOR_LIST, Overload, overload
from . import router, sources


def bypass(names: frozenset[str]) -> None:
    """Make the overloads `names` act as plain PyTorch (see router.bypassed)."""
    router.set_bypassed(names)
    _refresh_cpp_upcast()


def _refresh_cpp_upcast() -> None:
    # the compiled guard's upcast is the CPU upcast backend's path, and bypasses nothing
    native_guard.allow_cpp_upcast(engine.cpu_backend() == engine.UPCAST and not router.bypassed)


engine.backend_listeners.append(_refresh_cpp_upcast)
_refresh_cpp_upcast()

# Overloads guarded although probing finds PyTorch's kernel working for the 16-bit complex dtypes:
# (overload, their support, only under the compiled guard).
GUARDED_BEYOND_PROBING = (
    # PyTorch copies 16-bit complex tensors itself, except a lazily conjugated bcomplex32 source; copy_ runs
    # under every .to() and clone(), so only where other dtypes never leave C++
    ("aten::copy_", PARTIAL, True),
    # float32 weights promote PyTorch's result to complex64: the upcast path keeps the data's dtype
    *((name, MISSING, False) for name in upcast.WEIGHTS),
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
                 upcast=(), with_keyset: bool = False, overridden=((), 0)) -> None:
        """Register the Python kernel `make_python_kernel(original)` at `dispatch_key`, and the compiled
        guard over it when this registration uses one (`missing`, `partial`: the dtypes it hands over;
        `upcast`: (dtype, counter cell) pairs it may upcast in C++; `with_keyset`: the kernel takes the
        dispatcher's keyset first; `overridden`: (dtypes PyTorch serves that a generated CPU kernel takes, from how
        many elements))."""
        captured = self.compiled.capture(info.full_name, dispatch_key) if self.compiled else None
        try:
            original = torch.library.get_kernel(info.full_name, dispatch_key)
            torch_compat.impl(self.library, info.short_name, make_python_kernel(original), dispatch_key, with_keyset)
            if captured is not None and self.compiled.guard(
                    captured, info, dispatch_key, missing, partial, upcast, *overridden):
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
        compiled = registration.compiled is not None
        findings = findings + _beyond_probing(findings, device_type, compiled) + _only_overridden(
            findings, device_type, compiled)
        for finding in findings:
            try:
                info = overload(finding.overload)
            except RuntimeError:
                continue  # an overload this torch build does not have
            missing = [dtypes.BY_NAME[n] for n, s in finding.status.items() if s == MISSING and n in dtypes.BY_NAME]
            partial = [dtypes.BY_NAME[n] for n, s in finding.status.items() if s == PARTIAL and n in dtypes.BY_NAME]
            for key in finding.dispatch_keys(device_type):
                upcast = _cpp_upcast_dtypes(info, key, missing) if compiled else []
                served = [d for d in dtypes.COMPLEX_TARGETS if d not in missing]  # partial: where it fits
                overridden = cpu_kernels.overridable(info.full_name, served) if compiled and key == "CPU" else []
                registration.register(
                    info, key, lambda original: make_kernel(info, original, finding.status, device_type, key),
                    missing, partial,
                    [(d, path_record.native_counter(info.full_name, dtypes.NAMES[d], device_type, path_record.UPCAST))
                     for d in upcast],
                    overridden=(overridden, cpu_kernels.first_need_numel(info.full_name, overridden)),
                )
                if (info.full_name, key) in registration.typed:
                    cpu_kernels.offer(info.full_name, key, upcast, overridden)
        _install_wide_gradients(findings, device_type, registration)
    for name, key, factory, handed_over in complex_views.entries([d.upper() for d in findings_by_device]):
        registration.register(overload(name), key, lambda original: factory(original, _constant_keyset(key)),
                              handed_over)


def _install_wide_gradients(findings: list[Finding], device_type: str, registration: Registration) -> None:
    """The Autograd-key kernels of wide_gradients, for the dtypes whose forward discovery found lacking; not
    where a composite op's router already holds that key (it computes the whole op, backward too, in 32 bits)."""
    status = {f.overload: f.status for f in findings}
    key = f"Autograd{device_type.upper()}"
    for entry in wide_gradients.WIDE_GRADIENTS:
        targets = wide_gradients.target_dtypes(entry, status)
        if not targets or (entry.overload, key) in registration.keys:
            continue
        try:
            info = overload(entry.overload)
        except RuntimeError:
            continue  # not in this torch build
        if not wide_gradients.supported(info):
            continue
        names = {dtypes.NAMES[d]: MISSING for d in targets}
        native = lambda original, info=info: router.Router(info, original, names, device_type, templates=False).native  # noqa: E731
        registration.register(info, key, wide_gradients.kernel_factory(info, entry, targets, native), targets,
                              with_keyset=True)


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
        for name, support, compiled_only in GUARDED_BEYOND_PROBING
        if name not in known and (compiled or not compiled_only)
    ]


def _only_overridden(findings: list[Finding], device_type: str, compiled: bool) -> list[Finding]:
    """Registrations for ops PyTorch serves in every 16-bit complex dtype but more slowly than their generated
    CPU kernel (cpu_kernels.table.OVERRIDDEN): only under the compiled guard, whose typed form costs other
    dtypes a few nanoseconds, where the Python guard would cost them a microsecond."""
    if device_type != "cpu" or not compiled:
        return []
    known = {f.overload for f in findings}
    return [Finding(name, kernel_level(name, device_type), {}, {}) for name in cpu_kernels.overridable_ops()
            if name not in known and kernel_level(name, device_type) != COMPOSITE]


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
    dispatcher's keyset boxes it on every call): the original kernel is called with the constant keyset of
    its own key, which kernels at a backend key or composite-implicit kernels at an Autograd key ignore."""
    targets = frozenset(dtypes.BY_NAME[name] for name in status if name in dtypes.BY_NAME)
    # template kernels are custom ops without autograd formulas: only below the Autograd key
    routed = router.Router(info, original, status, device_type, templates=not dispatch_key.startswith("Autograd"))
    return sources.guard_function(info, {
        "KEYSET": _constant_keyset(dispatch_key),
        "Tensor": torch.Tensor,
        "targets": targets,
        "call_native": original.call_boxed,
        "route": routed.route,
        "general": routed.general,
        "NO_KWARGS": {},
        "operand_for": wrapped_numbers.operand_for,
        "NUMBER_CATEGORY": router.NUMBER_CATEGORY,
        "CATEGORY": router.DTYPE_CATEGORY,
        "ZERO_DIM_EXACT": wrapped_numbers.ZERO_DIM_EXACT,
    })
