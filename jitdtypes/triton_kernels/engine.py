"""The JIT kernel engine: an ATen call -> its template family's adapter -> a rendered Triton module,
rendered on first use, cached on disk by content key, loaded once per process and registered as a
torch.library custom op (jitdtypes::<family>_<op>_<key>, a triton_op with a fake kernel) so torch.compile
and torch.export can use it.

Key = cache_key(KERNELS, the template sources' digest, {family, params, jitdtypes/triton/torch versions,
device kind}): a warm cache in a second process generates nothing. Generation is serialized per key across
processes by the store's check, lock, check again (cache_tools/store.py) and across threads with an in-process
lock.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import logging
import os
import re
import shutil
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path

import torch

from cache_tools import layers, triton_artifacts
from cache_tools.store import KERNELS, SOURCE, CorruptEntry, Entry, InsecureEntry, Store, cache_key
from kernels_templates import common

from .._version import __version__
from cache_tools import source_digest

log = logging.getLogger("jitdtypes")

FAMILIES = ("unary", "binary", "ternary", "reductions", "scans", "matmul", "fft")
UPCAST, TRITON_INTERPRET = "upcast", "triton-interpret"
CPU_BACKENDS = (UPCAST, TRITON_INTERPRET)

counters: Counter = Counter()  # generated, read_from_cache, read_from_layer, regenerated_corrupt, in_memory, loaded,
#                                triton_entries_installed
_warned: set[str] = set()
_private_dirs: list[tuple[int, Path]] = []  # (pid, directory): in-memory kernels' sources, removed at exit
_loaded: dict[tuple, object] = {}
_lock = threading.RLock()
_cpu_backend = UPCAST
# the device types whose routed calls ask a template adapter first (read by the router as it specializes a call)
template_devices = {"cuda"}
# called after the CPU backend changes (routed calls specialized for the old one forget it)
backend_listeners: list = []
# called after loaded kernels are dropped (routed calls specialized on one forget it)
kernel_listeners: list = []


# -- configuration ---------------------------------------------------------------------------------------


def cpu_backend() -> str:
    return _cpu_backend


def set_cpu_backend(name: str) -> None:
    """"upcast" (default) or "triton-interpret": run CPU calls that have a template through Triton's
    interpreter (a validation mode, far slower than the upcast path). The interpreter is a process-wide
    choice Triton makes when it is imported, so this must come before `import triton`."""
    if name not in CPU_BACKENDS:
        raise ValueError(f"cpu backend must be one of {CPU_BACKENDS}, not {name!r}")
    if name == TRITON_INTERPRET and os.environ.get("TRITON_INTERPRET") != "1":
        if "triton" in sys.modules:
            raise RuntimeError("triton was imported without TRITON_INTERPRET=1: set JITDTYPES_CPU_BACKEND="
                               "triton-interpret (or TRITON_INTERPRET=1) before importing triton")
        os.environ["TRITON_INTERPRET"] = "1"
    route_cpu_calls(name)


def route_cpu_calls(name: str) -> None:
    """Where CPU calls that have a template go, without touching Triton's mode (set_cpu_backend checks that;
    a simulated GPU compiles real kernels and launches nothing, so it calls this directly)."""
    global _cpu_backend
    _cpu_backend = name
    if name == TRITON_INTERPRET:
        template_devices.add("cpu")
    else:
        template_devices.discard("cpu")
    for listener in backend_listeners:
        listener()


def uses_templates(device_type: str) -> bool:
    return device_type in template_devices


# -- ATen call -> adapter ----------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _adapters() -> dict:
    table = {}
    for family in FAMILIES:
        module = importlib.import_module(f"kernels_templates.{family}")
        table.update({name: (family, adapter) for name, adapter in module.ATEN.items()})
    return table


def has_template(overload_name: str) -> bool:
    return overload_name in _adapters()


def adapter_for(overload_name: str, device_type: str):
    """A callable (args, kwargs) -> result or NotImplemented for this overload on this device, or None."""
    if not uses_templates(device_type):
        return None
    return _bound_adapter(overload_name, device_type)


def planned_adapter(overload_name: str, device_type: str, args: tuple, kwargs: dict):
    """adapter_for, specialized for calls whose arguments are of the kinds these are (the router's
    specialization key): the adapter's plan (kernels_templates/common.py); None also when the plan declines
    every such call."""
    if not uses_templates(device_type) or overload_name not in _adapters():
        return None
    family, adapter = _adapters()[overload_name]
    return adapter.plan(functools.partial(load_kernel, family, device_type), args, kwargs, device_type)


@functools.lru_cache(maxsize=None)
def _bound_adapter(overload_name: str, device_type: str):
    # built once per (overload, device): routed calls should not pay for closures
    if overload_name not in _adapters():
        return None
    family, adapter = _adapters()[overload_name]
    load = functools.partial(load_kernel, family, device_type)
    return lambda args, kwargs: adapter(load, args, kwargs, device_type)


def forget_kernels() -> None:
    """Drop every kernel loaded in this process: the next call of each loads it again from the cache (tests
    of the cache stand in for a new process this way)."""
    _loaded.clear()
    for listener in kernel_listeners:
        listener()


# -- params -> kernel --------------------------------------------------------------------------------------


def _freeze(value):
    if isinstance(value, dict):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    return value


def load_kernel(family: str, device_type: str, params: dict, key: tuple | None = None):
    """The custom op for (family, params) on device_type: from this process, the disk cache, or rendered.

    key: a hashable stand-in for params that the caller guarantees names the same params every time (an
    adapter's own summary of them); it spares the canonical form of params on every call."""
    shortcut = (family, device_type, "key", key) if key is not None else None
    kernel = _loaded.get(shortcut) if shortcut is not None else None
    if kernel is not None:
        return kernel
    params = {**params, "interpret": device_type == "cpu"}
    frozen = (family, device_type, _freeze(params))
    kernel = _loaded.get(frozen)
    if kernel is None:
        with _lock:  # threads asking for a new kernel at the same moment build it once
            kernel = _loaded.get(frozen)
            if kernel is None:
                kernel = _loaded[frozen] = _build(family, device_type, params)
    if shortcut is not None:
        _loaded[shortcut] = kernel
    return kernel


def family_sources(family: str) -> tuple[str, ...]:
    """What a family's kernels are made from: its template module, common.py and the launcher that rendered
    kernels import; their key hashes these and every module they import (source_digest), so that one family's
    edit leaves the other families' cached kernels valid."""
    package = common.__name__.rpartition(".")[0]
    return f"{package}.{family}", common.__name__, f"{package}.launcher"


def _device_kind(device_type: str) -> str:
    # `jitdtypes warm --arch` names the same kinds for GPUs it does not have (aot.device_kind)
    if device_type == "cuda":
        major, minor = torch.cuda.get_device_capability()
        return f"cuda-sm{major}{minor}"
    return "cpu-interpreter"


def _environment(family: str, params: dict, device_type: str, kind: str | None = None) -> dict:
    import triton

    return {"family": family, "params": params, "jitdtypes": __version__, "triton": triton.__version__,
            "torch": torch.__version__, "device": kind or _device_kind(device_type)}


def kernel_key(family: str, params: dict, device_type: str, kind: str | None = None) -> str:
    """kind: the device kind to key for (default: this process's device of that type)."""
    return cache_key(KERNELS, source_digest.of(*family_sources(family)),
                     _environment(family, params, device_type, kind))


def _render(family: str, params: dict) -> str:
    return importlib.import_module(f"kernels_templates.{family}").render(params)


def ensure_source(store: Store, family: str, params: dict, device_type: str,
                  kind: str | None = None) -> tuple[Entry, bool]:
    """(The cached entry, False) if intact, else (a freshly rendered one, True): the store's check, lock, check.
    Raises OSError when the cache cannot be written and InsecureEntry when the entry is not private to this
    user."""

    def render(workspace: Path) -> dict:
        environment = _environment(family, params, device_type, kind)
        (workspace / SOURCE).write_text(_render(family, params))
        return {**environment, "sources": source_digest.of(*family_sources(family)), "op": params["op"],
                "dtype": params.get("dtype"), "layout": params.get("layout", "interleaved")}

    entry, generated = store.ensure(kernel_key(family, params, device_type, kind), render, damaged=_regenerating)
    if generated:
        counters["generated"] += 1
        log.info("jitdtypes: generated %s/%s (%s) -> %s", family, params["op"], params.get("dtype"), entry.directory)
    else:
        counters["read_from_cache"] += 1
    return entry, generated


def _regenerating(exc: CorruptEntry) -> None:
    counters["regenerated_corrupt"] += 1
    log.warning("jitdtypes: %s; regenerating it", exc)


def _warn_once(kind: str, message: str, *args) -> None:
    if kind not in _warned:
        _warned.add(kind)
        log.warning(message, *args)


def _in_memory(family: str, params: dict, device_type: str) -> tuple[str, str, str]:
    """(source, filename, key) of a kernel rendered into a private temporary directory."""
    counters["in_memory"] += 1
    source, key = _render(family, params), kernel_key(family, params, device_type)
    private = Path(tempfile.mkdtemp(prefix="jitdtypes-kernel-"))  # mode 0700
    _private_dirs.append((os.getpid(), private))
    if len(_private_dirs) == 1:
        atexit.register(_remove_private_dirs)
    (private / SOURCE).write_text(source)  # compiled Triton reads its source back from a file
    return source, str(private / SOURCE), key


def _remove_private_dirs() -> None:
    """At exit: $TMPDIR keeps nothing of this process's. A forked child that exits leaves its parent's alone
    (they are still read)."""
    for pid, private in _private_dirs:
        if pid == os.getpid():
            shutil.rmtree(private, ignore_errors=True)


def _from_layers(key: str) -> tuple[Entry, Store] | None:
    """The first read-only layer (JITDTYPES_CACHE_PATH) holding a trusted, intact entry for `key`."""
    for store in layers.stores(KERNELS):
        try:
            entry = store.read(key)
        except (InsecureEntry, CorruptEntry, OSError) as exc:
            _warn_once("layer", "jitdtypes: not using an entry of a read-only cache layer (%s); such kernels are "
                       "built in your own cache", exc)
            continue
        if entry is not None:
            counters["read_from_layer"] += 1
            return entry, store
    return None


def _triton_code_in_place(entry: Entry, store: Store) -> None:
    """Hand Triton the code compiled ahead of time for this kernel, if any; else Triton compiles it."""
    if not entry.meta.get(triton_artifacts.RECORDS):
        return
    try:
        counters["triton_entries_installed"] += triton_artifacts.install(entry.directory, entry.meta, store.owners)
    except (InsecureEntry, CorruptEntry, OSError) as exc:
        _warn_once("triton-artifacts", "jitdtypes: not using precompiled Triton code (%s); Triton compiles it", exc)


def _build(family: str, device_type: str, params: dict):
    try:
        found = _from_layers(kernel_key(family, params, device_type))
        if found is None:
            store = Store(KERNELS)
            found = ensure_source(store, family, params, device_type)[0], store
        entry, store = found
        if device_type == "cuda":
            _triton_code_in_place(entry, store)
        source, filename, key = entry.read_bytes(SOURCE).decode(), str(entry.directory / SOURCE), entry.key
    except (InsecureEntry, CorruptEntry) as exc:  # CorruptEntry: changed since it was verified
        _warn_once("insecure", "jitdtypes: not importing from the kernel cache (%s); kernels are generated in "
                   "memory", exc)
        source, filename, key = _in_memory(family, params, device_type)
    except OSError as exc:  # read-only or full: the kernel lives in memory
        _warn_once("unwritable", "jitdtypes: kernel cache not writable (%s); kernels are generated in memory", exc)
        source, filename, key = _in_memory(family, params, device_type)
    name = re.sub(r"\W", "_", f"{family}_{params['op']}_{key[:16]}")
    module = common.exec_source(source, f"jitdtypes_kernels.{name}", filename=filename)
    counters["loaded"] += 1
    # The custom op makes the kernel visible to torch.compile / torch.export for direct use
    # (torch.ops.jitdtypes.<name>). Calls routed here from an ATen override are already below the
    # dispatcher's tracing layers and hold real tensors: they call `run` directly, skipping the custom op's
    # dispatch, and launch without wrap_triton's higher-order op (launcher.eager_calls).
    torch.library.triton_op(f"jitdtypes::{name}", module.run, mutates_args=module.MUTATES)
    from kernels_templates import launcher

    run = launcher.eager_calls(module.run)
    run = _one_at_a_time(run) if device_type == "cpu" else run
    run.module = module  # for adapters that launch the module's kernels themselves (kernels_templates/common.py)
    return run


_interpreter_lock = threading.Lock()


def _one_at_a_time(run):
    # Triton's interpreter patches triton.language globally while a kernel runs: launches must not overlap.
    def run_interpreted(*args, **kwargs):
        with _interpreter_lock:
            return run(*args, **kwargs)

    return run_interpreted
