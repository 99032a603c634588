"""What `import jitdtypes` puts into torch, and `jitdtypes.disable()` takes out again.

`enable` finds what each device lacks (discovery), registers the overrides (routing.registrar), then the numpy
conversions, the warning filters and the compile path; each returns a handle whose `remove()` undoes it, and
`disable` calls them in reverse. Nothing at module level imports torch: the `jitdtypes` command imports the
package to answer `--help` at once, and installs only for the commands that use the overrides.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading

# No NullHandler on purpose: without logging configured, warnings (first-import probing, an unusable cache)
# reach stderr through logging's last-resort handler; configure the "jitdtypes" logger to change that.
log = logging.getLogger("jitdtypes")

_lock = threading.RLock()
_registration = None
_compile_path = None  # compile_path.Installation while enabled (torch.compile support)
_compile_complex: frozenset = frozenset()  # the wide complex dtypes chosen to compile planar (set_compile_complex)
discoveries: dict = {}  # device type -> discovery.Discovery, learned once per process


def set_cpu_backend(name: str) -> None:
    """"upcast" (default): CPU calls PyTorch lacks run in complex64/float32. "triton-interpret": CPU calls
    with a kernel template run it in Triton's interpreter (validation; must be chosen before importing
    triton). Also settable with JITDTYPES_CPU_BACKEND."""
    from .triton_kernels import engine

    engine.set_cpu_backend(name)


def set_compile_complex(*dtypes) -> None:
    """Make torch.compile fuse complex64 and/or complex128 code: their graphs are computed on real parts
    (float32, float64) as complex32's are, instead of running op by op in ATen. Takes torch dtypes or names
    ("complex64"); no argument turns it off. A change applies to what compiles after it: functions compiled
    before keep their code until torch._dynamo.reset(), as with Inductor's settings. Also settable with JITDTYPES_COMPILE_COMPLEX=complex64,complex128 before import;
    in effect while jitdtypes is enabled."""
    global _compile_complex
    from .compile_path import opt_in

    chosen = opt_in.chosen_dtypes(dtypes)
    with _lock:
        _compile_complex = chosen
        if _compile_path is not None:
            _compile_path.choose_complex(chosen)


def device_types() -> list[str]:
    import torch

    # is_available() asks the driver without creating a CUDA context, so forked workers stay usable.
    return ["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"]


def enable(guard: str | None = None) -> None:
    """Install the overrides (idempotent). `guard`: "compiled", "python" or "auto" (default: the
    JITDTYPES_GUARD environment variable, else auto: compiled when a C++ compiler can build it); given while
    installed, it switches the guard if it differs."""
    global _registration, _compile_path
    from . import compile_path, discovery, native_guard, torch_warnings
    from .interop import numpy_arrays
    from .routing import registrar

    with _lock:
        if _registration is not None:
            if guard is None or native_guard.resolve(guard) == _registration.guard:
                return
            disable()
        missing = [d for d in device_types() if d not in discoveries]
        may_probe = discovery.probed_at_import(missing)
        stored = {d: discovery.stored(d) for d in missing}
        probing = [d for d in missing if stored[d] is None and d in may_probe]
        if probing:  # the guard builds on one core while discovery probes on the others
            native_guard.build_in_background(guard)
        discoveries.update(discovery.load_or_discover_all(missing, may_probe, stored))
        # an import that probes nothing does not wait for a build: the next one gets the compiled guard
        chosen = native_guard.resolve(guard, wait=bool(probing))
        findings = {d: found.findings for d, found in discoveries.items()}
        _registration = registrar.install(findings, chosen)
        numpy_arrays.install()
        torch_warnings.install()
        _compile_path = compile_path.install(findings)
        _compile_path.choose_complex(_compile_complex)
        log.debug("jitdtypes: %d kernels registered (%s guard)", len(_registration.keys), chosen)


def disable() -> None:
    """Remove every override: PyTorch behaves exactly as without jitdtypes."""
    global _registration, _compile_path
    from . import torch_warnings
    from .interop import numpy_arrays

    with _lock:
        if _registration is not None:
            if _compile_path is not None:
                _compile_path.remove()
                _compile_path = None
            numpy_arrays.uninstall()
            torch_warnings.uninstall()
            _registration.remove()
            _registration = None


def registration():
    """The registrations in place (routing.registrar.Registration: keys, typed guards), None when disabled."""
    return _registration


def compile_installation():
    """What the compile path installed (compile_path.Installation), None when disabled."""
    return _compile_path


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


def install_on_import() -> None:
    """What `import jitdtypes` does: JITDTYPES_CPU_BACKEND chosen, then everything enabled, unless
    JITDTYPES_DISABLE=1 or the process is the `jitdtypes` command (which enables only for the subcommands that
    use the overrides, not `cache ...`; torch comes with them, so `jitdtypes --help` does not wait for it)."""
    global _compile_complex
    if os.environ.get("JITDTYPES_CPU_BACKEND"):
        set_cpu_backend(os.environ["JITDTYPES_CPU_BACKEND"])
    if os.environ.get("JITDTYPES_COMPILE_COMPLEX", "").strip():
        from .compile_path import opt_in

        _compile_complex = opt_in.parse(os.environ["JITDTYPES_COMPILE_COMPLEX"])
    is_cli = os.path.basename(sys.argv[0] if sys.argv else "") == "jitdtypes"
    if os.environ.get("JITDTYPES_DISABLE", "").strip() in ("", "0") and not is_cli:
        enable()
