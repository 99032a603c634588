"""Kernels generated on first use for CPU eager calls: the compile path's formulas, compiled by AOTInductor.

On CPU a call PyTorch lacks runs the upcast path: widen to complex64, run ATen's complex64 kernel, round back.
ATen's complex kernels are mostly scalar code, so that costs more than complex64 itself. The compile path
(jitdtypes/compile_path) already writes every elementwise op and reduction as float32 arithmetic on the 16-bit
storage read as words, which Inductor's C++ backend vectorizes. Here one op at a time is exported over
flattened inputs with a symbolic length (a reduction over dims, or a binary op with a broadcast operand: one
model per layout, every size symbolic) and compiled by AOTInductor into a package (.pt2), so one kernel serves
every size and shape; a package loads without Dynamo or Inductor and runs from C++. How it compares with the
upcast path and complex64 per op and size: `python -m benchmarks.cpu_eager` (docs/PERFORMANCE.md).

Tiers, so that nobody waits: the first call of an (op, dtype) goes to the Python router (as always), which
asks for the kernel (`first_need`). A package in the cache is installed at once; otherwise one is built in a
child process (the calling process imports neither Dynamo nor Inductor) on a background thread, and the C++
upcast serves every call until it is installed. Installed, a typed guard runs it for the calls it fits
(native_guard/generated.h: dense inputs of one dtype, shape and strides, alpha 1, at least table.min_numel
elements; reductions over adjacent dims of a contiguous tensor by the model of their layout, table.DIM_MODELS;
a broadcast operand of a binary op by the rows or columns model, table.BINARY_MODELS;
in-place and out= forms through a package of their own that writes into the written tensor, table.INTO, or
their functional op's, table.WRITING). The
first call of each (op, dtype) in a process always takes the router (its path is logged there).

JITDTYPES_CPU_KERNELS: `lazy` (default), `eager` (the first call builds and installs before it returns: tests),
`off`. Packages go to the cache's `cpu_kernels` entries (cache_tools/store.py), keyed by the source of the code
that generates them, the op, the dtype, torch's build and the CPU capability.
"""

from __future__ import annotations

import logging
import os
import queue
import subprocess
import sys
import threading
from pathlib import Path

import torch

from .._version import __version__
from .. import dtypes
from cache_tools import source_digest
from cache_tools.store import (CPU_KERNELS, PACKAGE, BuildFailed, CorruptEntry, InsecureEntry, RememberedFailure,
                               Store, cache_key)
from .table import (GENERATED, INTO, INTO_LANES, OVERRIDDEN, SHIM_DTYPES, WRITING, commutative, functional, min_numel,
                    models, writes_into)

log = logging.getLogger("jitdtypes")

ENV_VAR = "JITDTYPES_CPU_KERNELS"
OFF, LAZY, EAGER = "off", "lazy", "eager"
_FORMAT = 1

_lock = threading.Lock()
eligible: dict[tuple[str, torch.dtype], str] = {}  # (overload, dtype) -> dispatch key whose guard serves it
_min_numel: dict[tuple[str, torch.dtype], int] = {}  # -> the fewest elements a call needs to take the kernel
_requested: set[tuple[str, torch.dtype]] = set()
_installed: dict[tuple[str, torch.dtype], str] = {}  # -> the path of its first model's package
_failed: dict[tuple[str, torch.dtype], str] = {}  # -> why
built: list[tuple[str, torch.dtype]] = []  # what this process built (not found in the cache)
_queue: queue.Queue = queue.Queue()
_worker: list[threading.Thread] = []
_hooked: list[bool] = []


def mode() -> str:
    value = os.environ.get(ENV_VAR, "").strip().lower() or LAZY
    if value not in (OFF, LAZY, EAGER):
        raise ValueError(f"{ENV_VAR} must be {OFF}, {LAZY} or {EAGER}, not {value!r}")
    return value


def overridable_ops() -> list[str]:
    """The ops whose PyTorch kernels for 16-bit complex dtypes a generated kernel may take over. Their guards
    are registered in every mode (`off` builds and installs nothing, so PyTorch's kernel keeps every call)."""
    return sorted(OVERRIDDEN)


def overridable(overload: str, served) -> list:
    """Of the dtypes PyTorch serves for `overload` on CPU, those a generated kernel may take over."""
    return list(served) if overload in OVERRIDDEN else []


def first_need_numel(overload: str, overridden) -> int:
    """The fewest elements of an overridden call that asks for the package (the guard's hook): its smallest
    dtype's threshold (each installed package then keeps its own)."""
    return min((min_numel(overload, dtypes.NAMES[d]) for d in overridden), default=0)


def offer(overload: str, dispatch_key: str, upcast_dtypes, overridden=()) -> None:
    """The registrar registered a typed guard that upcasts these dtypes of `overload` in C++, or runs PyTorch's
    kernel for the `overridden` ones: a generated kernel may take their calls (cheap: nothing is loaded or built
    until a first call asks, `first_need`; for overridden dtypes the guard asks through a hook)."""
    if overload not in GENERATED and overload not in WRITING:
        return
    for dtype in (*upcast_dtypes, *overridden):
        eligible[(overload, dtype)] = dispatch_key
        _min_numel[(overload, dtype)] = min_numel(overload, dtypes.NAMES[dtype])
    if overridden and not _hooked:
        from .. import native_guard

        native_guard.set_first_need_hook(first_need)
        _hooked.append(True)


def first_need(overload: str, dtype: torch.dtype) -> None:
    """A first call of (overload, dtype) reached the router: install its kernel, or have it built."""
    request = (overload, dtype)
    if request not in eligible or request in _requested:
        return
    chosen = mode()
    if chosen == OFF:
        return
    with _lock:
        if request in _requested:
            return
        _requested.add(request)
    if chosen == EAGER:
        _provide(overload, dtype)
        return
    _queue.put(request)
    with _lock:
        if not _worker:  # one build at a time, on one thread: a first burst of ops does not fork a crowd
            _worker.append(threading.Thread(target=_work, name="jitdtypes-cpu-kernels", daemon=True))
            _worker[0].start()


def _work() -> None:
    while True:
        overload, dtype = _queue.get()
        try:
            _provide(overload, dtype)
        finally:
            _queue.task_done()


def wait() -> None:
    """Block until every kernel asked for so far is built and installed (or failed): tests, `warm`."""
    _queue.join()


def to_warm(dtype_list, ops=None) -> list[tuple[str, torch.dtype]]:
    """The eligible (overload, dtype) pairs of these dtypes (and op names, e.g. "exp", "add"), for `warm`."""
    wanted = [(o, d) for o, d in eligible if d in dtype_list and (not ops or o[6:].split(".")[0] in ops)]
    return sorted(wanted, key=lambda pair: (pair[0], dtypes.NAMES[pair[1]]))


def ensure(overload: str, dtype: torch.dtype) -> bool:
    """Build or find the package and install it now (`jitdtypes warm --device cpu`): True if it was built. A
    remembered failed build is tried again."""
    before = len(built)
    _install(overload, dtype, _packages(overload, dtype, retry=True))
    with _lock:
        _requested.add((overload, dtype))
    return len(built) > before


def uninstall(overload: str, dtype: torch.dtype) -> None:
    """Calls take the C++ upcast again, and a next first need installs the package anew (tests)."""
    from .. import native_guard

    dispatch_key = eligible.get((overload, dtype))
    if dispatch_key is not None and (overload, dtype) in _installed:
        native_guard.install_generated(overload, dispatch_key, dtype, "", (), 0, words=False)
    with _lock:
        _installed.pop((overload, dtype), None)
        _requested.discard((overload, dtype))


def status() -> dict:
    """(overload, dtype name) -> "installed", "building", "failed: ...": what `jitdtypes ops` shows."""
    result = {}
    for overload, dtype in _requested:
        key = (overload, dtype)
        result[(overload, dtypes.NAMES[dtype])] = (
            "installed" if key in _installed else f"failed: {_failed[key]}" if key in _failed else "building")
    return result


def available(overload: str, dtype: torch.dtype) -> bool:
    """Whether calls of (overload, dtype) that fit take a generated kernel: installed, or intact in the cache
    (installed by the first call): `jitdtypes ops` shows its path as generated. Builds nothing."""
    if (overload, dtype) in _installed:
        return True
    if (overload, dtype) not in eligible or mode() == OFF:
        return False
    try:
        return all(_store().read(key(overload, dtype, into)) is not None for into in _variants(overload))
    except (CorruptEntry, InsecureEntry, OSError):
        return False


def _variants(overload: str) -> tuple[bool, ...]:
    """The packages a call of `overload` runs (models() names their models): its functional op's, and
    for a writing form that writes_into, its own (into=True) first."""
    return (True, False) if writes_into(overload) else (False,)


def key(overload: str, dtype: torch.dtype, into: bool = False) -> str:
    """A package's cache key: in-place and out= forms share their functional op's package, and their own."""
    name = f"{functional(overload)}:{INTO}" if into else functional(overload)
    return cache_key(CPU_KERNELS, source_digest.of("jitdtypes.cpu_kernels.build"), {
        "format": _FORMAT, "op": name, "dtype": dtypes.NAMES[dtype], "torch": torch.__version__,
        "git": str(torch.version.git_version), "cpu": torch.backends.cpu.get_cpu_capability(),
        "platform": sys.platform, "jitdtypes": __version__})


def current_keys() -> set[str]:
    """The cache keys this torch build and jitdtypes look packages up by (`jitdtypes cache clean --stale` keeps
    only these)."""
    overloads = set(GENERATED) | set(WRITING)
    return {key(overload, dtype, into) for overload in overloads for dtype in dtypes.COMPLEX_BY_NAME.values()
            for into in _variants(overload)}


def _store() -> Store:
    return Store(CPU_KERNELS)


def _provide(overload: str, dtype: torch.dtype) -> None:
    try:
        _install(overload, dtype, _packages(overload, dtype))
    except Exception as exc:  # the upcast keeps serving: a kernel is an optimization
        _failed[(overload, dtype)] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        log.warning("jitdtypes: no generated CPU kernel for %s on %s (%s); the upcast path serves it",
                    overload, dtypes.NAMES[dtype], _failed[(overload, dtype)])


def _packages(overload: str, dtype: torch.dtype, retry: bool = False) -> list[str]:
    """The path of each model's package (models()): the writing package's first model, then the
    functional op's."""
    paths = {into: _package(overload, dtype, into, retry) for into in reversed(_variants(overload))}
    return [paths[name in (INTO, INTO_LANES)] for name in models(overload, dtypes.NAMES[dtype])]


def _package(overload: str, dtype: torch.dtype, into: bool = False, retry: bool = False) -> str:
    """The cached package's path, built first (in a child process) if the cache lacks it: the store's check,
    lock, check. A failed build is remembered for its key (torch build and build source included), so that every
    later process does not spend the build's compiler time again; unless `retry`, it raises at once."""
    described = {"overload": functional(overload), "dtype": dtypes.NAMES[dtype], "into": into,
                 "torch": torch.__version__, "device": "cpu"}

    def build(workspace: Path) -> dict:
        try:
            _build_in_child(functional(overload), dtype, workspace / PACKAGE, into)
        except RuntimeError as exc:
            raise BuildFailed(str(exc), described) from exc
        return described

    def damaged(exc: CorruptEntry) -> None:
        log.warning("jitdtypes: rebuilding a corrupt generated CPU kernel (%s)", exc)

    try:
        entry, was_built = _store().ensure(key(overload, dtype, into), build, retry=retry, damaged=damaged)
    except RememberedFailure as exc:
        raise RuntimeError(f"{exc.record.get('error')} (at {exc.when}; not built again until `jitdtypes warm "
                           "--device cpu` or `jitdtypes cache clean --stale`)") from None
    if was_built:
        built.append((overload, dtype))
    return str(entry.directory / PACKAGE)


def _build_in_child(overload: str, dtype: torch.dtype, package: Path, into: bool) -> None:
    command = [sys.executable, "-m", "jitdtypes.cpu_kernels.build", overload, dtypes.NAMES[dtype], str(package),
               *([INTO] if into else [])]
    environment = dict(os.environ, **{ENV_VAR: OFF, "PYTHONWARNINGS": "ignore"})  # the child builds, never asks
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=environment)
    if done.returncode != 0 or not package.exists():
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        raise RuntimeError(f"building it failed: {lines[-1] if lines else done.returncode}")


def _install(overload: str, dtype: torch.dtype, paths: list[str]) -> None:
    from .. import native_guard

    dispatch_key = eligible.get((overload, dtype))
    if dispatch_key is None:
        return  # disabled meanwhile
    native_guard.install_generated(overload, dispatch_key, dtype, paths, models(overload, dtypes.NAMES[dtype]),
                                   _min_numel[(overload, dtype)], words=dtypes.NAMES[dtype] not in SHIM_DTYPES,
                                   commutative=commutative(overload))
    _installed[(overload, dtype)] = paths[0]
    log.debug("jitdtypes: generated CPU kernel for %s on %s installed", overload, dtypes.NAMES[dtype])

