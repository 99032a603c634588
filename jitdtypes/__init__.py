"""jitdtypes: torch.complex32 and torch.bcomplex32 that just work.

Importing the package registers, with torch.library, overrides at exactly the (overload, dispatch key) pairs
where PyTorch lacks a 16-bit kernel (found by probing, cached per torch build). Set JITDTYPES_DISABLE=1 to
import without installing anything.
"""

__version__ = "0.1.0"

import contextlib
import logging
import os
import sys
import threading


def _attach_source_checkout_packages() -> None:
    """An installed jitdtypes holds kernels_templates and cache_tools inside it (pyproject's package-dir). In a
    source checkout they sit beside it: attach those under the same names, so that a checkout (an editable
    install, a git worktree, a bare machine running `python -m benchmarks.gpu_check`) runs its own copy."""
    import importlib.util

    package = os.path.dirname(os.path.abspath(__file__))
    for name in ("kernels_templates", "cache_tools"):
        beside = os.path.join(os.path.dirname(package), name)
        if os.path.isdir(os.path.join(package, name)) or not os.path.isfile(os.path.join(beside, "__init__.py")):
            continue
        full_name = f"{__name__}.{name}"
        spec = importlib.util.spec_from_file_location(
            full_name, os.path.join(beside, "__init__.py"), submodule_search_locations=[beside]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[full_name] = module
        spec.loader.exec_module(module)


_attach_source_checkout_packages()

# No NullHandler on purpose: without logging configured, warnings (first-import probing, an unusable cache)
# reach stderr through logging's last-resort handler; configure the "jitdtypes" logger to change that.
log = logging.getLogger("jitdtypes")

_lock = threading.RLock()
_registration = None
_compile_path = None  # jitdtypes.compile_path.Installation while enabled (torch.compile support)
_discoveries: dict = {}


def set_cpu_backend(name: str) -> None:
    """"upcast" (default): CPU calls PyTorch lacks run in complex64/float32. "triton-interpret": CPU calls
    with a kernel template run it in Triton's interpreter (validation; must be chosen before importing
    triton). Also settable with JITDTYPES_CPU_BACKEND."""
    from . import engine

    engine.set_cpu_backend(name)


def _device_types() -> list[str]:
    import torch

    # is_available() asks the driver without creating a CUDA context, so forked workers stay usable.
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def enable(guard: str | None = None) -> None:
    """Install the overrides (idempotent). `guard`: "compiled", "python" or "auto" (default: the
    JITDTYPES_GUARD environment variable, else auto: compiled when a C++ compiler can build it); given while
    installed, it switches the guard if it differs."""
    global _registration, _compile_path
    from . import compile_path, discovery, native_guard, numpy_interop, torch_warnings
    from .routing import registrar

    with _lock:
        if _registration is not None:
            if guard is None or native_guard.resolve(guard) == _registration.guard:
                return
            disable()
        missing = [d for d in _device_types() if d not in _discoveries]
        may_probe = discovery.probed_at_import(missing)
        stored = {d: discovery.stored(d) for d in missing}
        probing = [d for d in missing if stored[d] is None and d in may_probe]
        if probing:  # the guard builds on one core while discovery probes on the others
            native_guard.build_in_background(guard)
        _discoveries.update(discovery.load_or_discover_all(missing, may_probe, stored))
        # an import that probes nothing does not wait for a build: the next one gets the compiled guard
        chosen = native_guard.resolve(guard, wait=bool(probing))
        findings = {d: found.findings for d, found in _discoveries.items()}
        _registration = registrar.install(findings, chosen)
        numpy_interop.install()
        torch_warnings.install()
        _compile_path = compile_path.install(findings)
        log.debug("jitdtypes: %d kernels registered (%s guard)", len(_registration.keys), chosen)


def disable() -> None:
    """Remove every override: PyTorch behaves exactly as without jitdtypes."""
    global _registration, _compile_path
    from . import numpy_interop, torch_warnings

    with _lock:
        if _registration is not None:
            if _compile_path is not None:
                _compile_path.remove()
                _compile_path = None
            numpy_interop.uninstall()
            torch_warnings.uninstall()
            _registration.remove()
            _registration = None


def is_enabled() -> bool:
    return _registration is not None


def guard() -> str | None:
    """The dispatch guard in front of PyTorch's kernels: "compiled", "python", or None when disabled."""
    return _registration.guard if _registration is not None else None


@contextlib.contextmanager
def disabled():
    """`with jitdtypes.disabled():` runs its body on plain PyTorch, then restores the previous state."""
    with _lock:
        previous = guard()
        disable()
    try:
        yield
    finally:
        if previous is not None:
            enable(previous)


def stats() -> list[dict]:
    """One row per (op, dtype, device) that jitdtypes knows about: its support in plain PyTorch, the path a
    call takes (native, template, upcast, or generated where a generated CPU kernel is installed or cached:
    its calls count with the path it stands in for) and the calls seen in this process, by path."""
    from . import cpu_kernels, discovery, dtypes, path_record
    from .routing import registrar

    def generated(overload, dtype, device_type, path):
        known = dtypes.BY_NAME.get(dtype)
        return (path_record.GENERATED if device_type == "cpu" and known is not None
                and cpu_kernels.available(overload, known) else path)

    calls = path_record.calls()
    rows = []
    for device_type in _device_types():
        found = _discoveries.get(device_type) or discovery.load_or_discover(device_type)
        for finding in found.findings:
            for dtype, support in sorted(finding.status.items()):
                key = (finding.overload, dtype, device_type)
                seen = calls.pop(key, {})
                planned = registrar.planned_path(finding.overload, device_type, support)
                path = max(seen, key=seen.get) if seen else planned
                rows.append(_row(key, support, generated(finding.overload, dtype, device_type, path), seen))
        for dtype, names in sorted(found.supported.items()):
            rows += [_row((name, dtype, device_type), "native", generated(name, dtype, device_type, "native"), {})
                     for name in names]
        for name in found.crashed:  # its probe crashed or hung: support unknown, PyTorch's kernel kept
            keys = [(name, dtypes.NAMES[d], device_type) for d in dtypes.COMPLEX_TARGETS]
            rows += [_row(key, "crashed", "native", calls.pop(key, {})) for key in keys]
        if device_type == "cpu":  # ops PyTorch serves that a generated kernel takes over (sum): not listed above
            listed = {(r["op"], r["dtype"]) for r in rows if r["device"] == "cpu"}
            overridden = {(o, dtypes.NAMES[d]) for o, d in cpu_kernels.eligible if o in cpu_kernels.OVERRIDDEN}
            rows += [_row((o, d, "cpu"), "native", generated(o, d, "cpu", "native"), calls.pop((o, d, "cpu"), {}))
                     for o, d in sorted(overridden - listed)]
    rows += [_row(key, "unknown", max(seen, key=seen.get), seen) for key, seen in calls.items()]
    return sorted(rows, key=lambda r: (r["device"], r["dtype"], r["op"]))


def _row(key, support, path, seen) -> dict:
    op, dtype, device = key
    return {
        "op": op, "dtype": dtype, "device": device, "support": support, "path": path,
        "calls": sum(seen.values()), "calls_by_path": dict(seen), "guard": guard(),
    }


if os.environ.get("JITDTYPES_CPU_BACKEND"):
    set_cpu_backend(os.environ["JITDTYPES_CPU_BACKEND"])
# The `jitdtypes` command installs the overrides only for the subcommands that use them (not `cache ...`), and
# torch comes with them: nothing above imports it, so `jitdtypes --help` does not wait for torch.
_is_cli = os.path.basename(sys.argv[0] if sys.argv else "") == "jitdtypes"
if os.environ.get("JITDTYPES_DISABLE", "").strip() in ("", "0") and not _is_cli:
    enable()
