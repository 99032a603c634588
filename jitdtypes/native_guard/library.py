"""The compiled dispatch guard (guard.cpp), loaded with ctypes.

For one (overload, dispatch key): `capture` PyTorch's kernel, register the Python guard there
(routing/registrar.py), then `GuardLibrary.guard` puts the C++ guard over it. Calls whose arguments involve no
target dtype never leave C++; the rest reach the router, except the common routed call of a registration that
allows it, which typed guards upcast in C++ (upcast.h) while `allow_cpp_upcast` and `set_cpp_upcast` agree.
Closing the library removes every guard it registered.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading

from .. import dtypes
from ..schema import OPTIONAL_TENSOR, TENSOR, TENSOR_LIST, Overload
from . import build

log = logging.getLogger("jitdtypes")

PYTHON, COMPILED, AUTO = "python", "compiled", "auto"
ENV_VAR = "JITDTYPES_GUARD"
# "0": typed guards never upcast in C++, every routed call goes to the Python router (comparisons, debugging)
CPP_UPCAST_ENV_VAR = "JITDTYPES_CPP_UPCAST"
_ERROR_SIZE = 4096

_lock = threading.Lock()
_loaded: dict = {}  # "library" -> ctypes.CDLL, "path", "meta"; or "error" -> message
# the C++ upcast runs while both hold: the switch (env var, set_cpp_upcast) and jitdtypes' conditions
_cpp_upcast = {"switch": os.environ.get(CPP_UPCAST_ENV_VAR, "").strip() != "0", "conditions": False}


class GuardUnavailable(RuntimeError):
    """JITDTYPES_GUARD=compiled, but the compiled guard cannot be built or loaded."""


def requested() -> str:
    value = os.environ.get(ENV_VAR, "").strip().lower() or AUTO
    if value not in (PYTHON, COMPILED, AUTO):
        raise ValueError(f"{ENV_VAR} must be '{PYTHON}' or '{COMPILED}', not {value!r}")
    return value


# (name "aten::sum", overload "", dtype "ComplexHalf"): a call an overridden dtype's generated kernel could take
FIRST_NEED_HOOK = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p)
_hooks: list = []  # the ctypes callback must outlive every call of it


def _bind(library: ctypes.CDLL) -> ctypes.CDLL:
    p, s = ctypes.c_char_p, ctypes.c_size_t
    out = ctypes.POINTER(ctypes.c_void_p)
    signatures = {
        "jitdtypes_guard_capture": [p, p, p, out, p, s],
        "jitdtypes_guard_release": [ctypes.c_void_p],
        "jitdtypes_guard_library_new": [out, p, s],
        "jitdtypes_guard_library_free": [ctypes.c_void_p],
        "jitdtypes_guard_register": [ctypes.c_void_p, ctypes.c_void_p, p, p, p, p, p, p, p, p,
                                     ctypes.POINTER(ctypes.c_void_p), p, ctypes.c_int64, ctypes.POINTER(ctypes.c_int),
                                     p, s],
        "jitdtypes_guard_upcast_enable": [ctypes.c_int],
        "jitdtypes_guard_signature_key": [p, p, p, s],
        "jitdtypes_guard_conversion": [ctypes.c_int],
        "jitdtypes_guard_planes": [ctypes.c_void_p] * 3 + [ctypes.c_int64, ctypes.c_int],
        "jitdtypes_guard_generated": [p, p, p, p, p, p, ctypes.c_int64, ctypes.c_int, ctypes.c_int, p, s],
        "jitdtypes_guard_first_need_hook": [FIRST_NEED_HOOK],
    }
    for name, argtypes in signatures.items():
        function = getattr(library, name)
        function.argtypes = argtypes
        function.restype = None if name.endswith(("_release", "_free", "_enable", "_planes", "_hook")) else ctypes.c_int
    return library


def load(retry: bool = False) -> ctypes.CDLL:
    """The loaded guard library (built on first use for this torch build); BuildError/OSError otherwise.
    A failure is remembered: the process does not try the compiler again, nor do later processes with the same
    torch build and compiler (build.ensure), unless `retry`."""
    with _lock:
        if retry and "error" in _loaded:
            del _loaded["error"]
        if "error" in _loaded:
            raise _loaded["error"]
        if "library" not in _loaded:
            try:
                path, meta = build.ensure(retry=retry)
                try:
                    library = _bind(ctypes.CDLL(str(path), mode=os.RTLD_LOCAL))
                except AttributeError as exc:  # a library that is not ours
                    raise OSError(f"{path}: {exc}") from exc
            except (build.BuildError, OSError) as exc:
                _loaded["error"] = exc
                raise
            _loaded.update(library=library, path=path, meta=meta)
            library.jitdtypes_guard_upcast_enable(int(cpp_upcast_enabled()))
        return _loaded["library"]


def set_cpp_upcast(enabled: bool) -> None:
    """Let typed guards upcast eligible routed calls in C++ (the default, unless JITDTYPES_CPP_UPCAST=0), or
    send every routed call to the Python router: same results, bit for bit, at Python's cost."""
    _update_cpp_upcast(switch=bool(enabled))


def allow_cpp_upcast(allowed: bool) -> None:
    """jitdtypes' side of the switch: off while the CPU backend is not the upcast path or probing bypasses
    overrides."""
    _update_cpp_upcast(conditions=bool(allowed))


def cpp_upcast_enabled() -> bool:
    return _cpp_upcast["switch"] and _cpp_upcast["conditions"]


def _update_cpp_upcast(**changes) -> None:
    with _lock:
        _cpp_upcast.update(changes)
        if "library" in _loaded:
            _loaded["library"].jitdtypes_guard_upcast_enable(int(cpp_upcast_enabled()))


# convert.h's modes, by their number there
CONVERSIONS = ("aten", "portable", "vector")


def conversion() -> str:
    """The conversion between 16-bit complex and complex64 that the copy_ guard and the C++ upcast use:
    "vector" (AVX2/F16C), "portable" (no CPU features), or "aten" (ATen's own copy)."""
    return CONVERSIONS[load().jitdtypes_guard_conversion(-1)]


def set_conversion(mode: str) -> str:
    """Choose the conversion (default: JITDTYPES_CONVERSION, else ATen's copy); "vector" where the CPU or ATen's
    capability does not allow it gives "aten". Returns the one now in use."""
    return CONVERSIONS[load().jitdtypes_guard_conversion(CONVERSIONS.index(mode))]


def move_planes(words: int, re: int, im: int, n: int, split: bool) -> None:
    """n 16-bit complex words at address `words` <-> the planes of their parts' bits at `re` and `im` (contiguous,
    CPU; planes.h), words to planes where `split`. Raises where the library cannot be loaded."""
    load().jitdtypes_guard_planes(words, re, im, n, int(split))


def install_generated(overload: str, key: str, dtype, path, models, min_numel: int, words: bool,
                      commutative: bool = False) -> None:
    """Typed guards of `overload` ("aten::add.Tensor" style: name and overload, none for the default) at `key`
    run the AOTInductor models `models` (in generated.h's order) from their shared libraries at `path` (one
    per model; a single model's may come alone) for
    `dtype` calls of at least `min_numel` elements (generated.h; `commutative`: a broadcast operand may come
    first); an empty `path` uninstalls."""
    name, _, overload_name = overload.partition(".")
    paths = [str(path)] if isinstance(path, (str, os.PathLike)) else [str(p) for p in path]
    assert not any("\n" in p for p in paths), "the guard library takes the paths one per line"
    _call(load().jitdtypes_guard_generated, name.encode(), overload_name.encode(), key.encode(),
          _scalar_type_names([dtype]), "\n".join(paths).encode(), ",".join(models).encode(), min_numel,
          int(words), int(commutative))


def set_first_need_hook(function) -> None:
    """`function(overload, dtype)` ("aten::sum" style, a torch dtype) runs once per (registration, dtype) when a
    typed guard sees a call of a dtype PyTorch serves itself that an uninstalled generated kernel could take
    (generated.h's overridden dtypes); it runs inside that call, holding the GIL, so it must not block."""
    by_name = {name: dtype for dtype, name in dtypes.SCALAR_TYPE_NAMES.items()}

    def hook(name: bytes, overload_name: bytes, dtype_name: bytes) -> None:
        try:
            full = name.decode() + (f".{overload_name.decode()}" if overload_name else "")
            function(full, by_name[dtype_name.decode()])
        except Exception:  # noqa: BLE001 - a callback must not raise into C++; the call runs PyTorch's kernel
            log.exception("jitdtypes: asking for a generated CPU kernel failed")

    callback = FIRST_NEED_HOOK(hook)
    _hooks.append(callback)
    load().jitdtypes_guard_first_need_hook(callback)


def build_in_background(choice: str | None = None) -> None:
    """Start building (or loading) the compiled guard on a thread, unless the Python guard is chosen: a first
    import then compiles it on one core while discovery probes on the other. `load` waits for it."""
    if (choice or requested()) == PYTHON or "library" in _loaded:
        return
    threading.Thread(target=_load_quietly, name="jitdtypes-guard-build", daemon=True).start()


def _load_quietly() -> None:
    try:
        load()
    except (build.BuildError, OSError):
        pass  # remembered by load(): resolve() reports it


def info() -> dict:
    """Where the loaded library lives and how it was built (empty before `load`)."""
    return {k: _loaded[k] for k in ("path", "meta") if k in _loaded}


def signature_key(full_name: str) -> str:
    """The key under which guard.cpp lists typed signatures, for this overload's schema."""
    key = ctypes.create_string_buffer(_ERROR_SIZE)
    if load().jitdtypes_guard_signature_key(*_split(full_name), key, _ERROR_SIZE):
        raise RuntimeError(key.value.decode(errors="replace"))
    return key.value.decode()


def _call(function, *args) -> None:
    error = ctypes.create_string_buffer(_ERROR_SIZE)
    if function(*args, error, _ERROR_SIZE):
        raise RuntimeError(f"jitdtypes compiled guard: {error.value.decode(errors='replace')}")


def _split(full_name: str) -> tuple[bytes, bytes]:
    name, _, overload = full_name.partition(".")
    return name.encode(), overload.encode()


_KIND_CODES = {TENSOR: "T", OPTIONAL_TENSOR: "O", TENSOR_LIST: "L"}


def argument_kinds(info: Overload) -> str:
    """One character per schema argument, in stack order, as guard.cpp reads them."""
    codes = []
    for arg in info.args:
        if arg.kind in _KIND_CODES:
            codes.append(_KIND_CODES[arg.kind])
        elif arg.real_type == "number":
            codes.append("N")
        elif arg.name == "dtype" and arg.real_type in ("ScalarType", "Optional[ScalarType]"):
            codes.append("D")
        else:
            codes.append("-")
    return "".join(codes)


def _scalar_type_names(dtype_list) -> bytes:
    return ",".join(dtypes.SCALAR_TYPE_NAMES[d] for d in dtype_list).encode()


class Captured:
    """PyTorch's kernel for (overload, key), held by the guard library until released."""

    def __init__(self, library: ctypes.CDLL, full_name: str, dispatch_key: str) -> None:
        self._library = library
        self.handle = ctypes.c_void_p()
        _call(library.jitdtypes_guard_capture, *_split(full_name), dispatch_key.encode(), ctypes.byref(self.handle))

    def release(self) -> None:
        if self.handle:
            self._library.jitdtypes_guard_release(self.handle)
            self.handle = ctypes.c_void_p()


class GuardLibrary:
    """One set of compiled guards (a torch::Library of the aten namespace)."""

    def __init__(self) -> None:
        self._library = load()
        self.handle = ctypes.c_void_p()
        _call(self._library.jitdtypes_guard_library_new, ctypes.byref(self.handle))

    def capture(self, full_name: str, dispatch_key: str) -> Captured:
        return Captured(self._library, full_name, dispatch_key)

    def guard(self, captured: Captured, info: Overload, dispatch_key: str, missing, partial, upcast=(),
              overridden=(), overridden_min_numel: int = 0) -> bool:
        """Put a guard at `dispatch_key` over what is registered there now. Calls with a `missing` dtype, or
        a real 16-bit tensor whose complex partner is a target next to a complex number, go to the kernel
        underneath; calls with a `partial` dtype try `captured` first; everything else runs `captured`.
        `upcast`: (dtype, ctypes.c_uint64 counter cell) pairs for the dtypes whose common routed calls a typed
        guard upcasts in C++ (the caller keeps the cells alive as long as the guard). True when the guard is
        typed (the operator's unboxed signature), False when boxed. `overridden`: dtypes PyTorch serves that
        an installed generated kernel takes in a typed guard from `overridden_min_numel` elements up
        (generated.h)."""
        real16 = [dtypes.REAL_OF[d] for d in (*missing, *partial) if d in dtypes.REAL_OF]
        typed = ctypes.c_int(0)
        cells = (ctypes.c_void_p * max(len(upcast), 1))(*(ctypes.addressof(cell) for _, cell in upcast))
        _call(self._library.jitdtypes_guard_register, self.handle, captured.handle, *_split(info.full_name),
              dispatch_key.encode(), argument_kinds(info).encode(), _scalar_type_names(missing),
              _scalar_type_names(partial), _scalar_type_names(real16),
              _scalar_type_names([dtype for dtype, _ in upcast]), cells, _scalar_type_names(overridden),
              overridden_min_numel, ctypes.byref(typed))
        return bool(typed.value)

    def close(self) -> None:
        if self.handle:
            self._library.jitdtypes_guard_library_free(self.handle)
            self.handle = ctypes.c_void_p()


_fallback_warned = False
_why_python: list[str] = []  # why the last resolve() chose the Python guard, when it did


def resolve(choice: str | None = None, retry: bool = False, wait: bool = True) -> str:
    """The guard to install: PYTHON or COMPILED. `choice` (default: $JITDTYPES_GUARD, else auto) of AUTO
    takes the compiled guard when it can be had, else the Python one with a single warning per process;
    COMPILED raises GuardUnavailable when it cannot be had. `retry`: build again after a remembered failure.
    Not `wait` (an import that probed nothing, so that nothing else would take the build's time): AUTO takes
    the Python guard rather than run the compiler, and the guard is built in a process of its own for the
    next import."""
    global _fallback_warned
    explicit = choice
    choice = choice or requested()
    _why_python.clear()
    if choice == PYTHON:
        _why_python.append(f"chosen with enable({PYTHON!r})" if explicit else f"{ENV_VAR}={PYTHON}")
        return PYTHON
    if choice == AUTO and not wait and "library" not in _loaded and build.would_build():
        build.build_detached()
        _why_python.append("the compiled guard is being built in the background, for the next import")
        log.warning("jitdtypes: building the compiled dispatch guard in the background (about 20 s), for the next "
                    "import; this process uses the Python guard (slower per call of an overridden op)")
        return PYTHON
    try:
        load(retry)
        return COMPILED
    except (build.BuildError, OSError, RuntimeError) as exc:
        reason = " ".join(str(exc).split()) or type(exc).__name__
        if choice == COMPILED:
            raise GuardUnavailable(f"{ENV_VAR}=compiled, but the compiled guard is not available: {exc}") from exc
        _why_python.append(f"the compiled guard is not available: {reason}")
        if not _fallback_warned:
            _fallback_warned = True
            log.warning("jitdtypes: using the Python dispatch guard (slower per call of an overridden op "
                        "in any dtype), since the compiled one is not available: %s", reason)
        return PYTHON


def why_python() -> str | None:
    """Why the Python guard was chosen by the last resolve(), or None when it was not."""
    return _why_python[0] if _why_python else None
