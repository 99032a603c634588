"""Kernels generated on first use for CPU eager calls: the compile path's formulas, compiled by AOTInductor.

On CPU a call PyTorch lacks runs the upcast path: widen to complex64, run ATen's complex64 kernel, round back.
ATen's complex kernels are mostly scalar code, so that costs more than complex64 itself. The compile path
(jitdtypes/compile_path) already writes every elementwise op and reduction as float32 arithmetic on the 16-bit
storage read as words, which Inductor's C++ backend vectorizes. Here one op at a time is exported over
flattened inputs with a symbolic length (a reduction over dims, or a binary op with a broadcast operand: one
model per layout, every size symbolic) and compiled by AOTInductor into a package (a shared library per
model), so one kernel serves every size and shape; a package loads without Dynamo or Inductor, straight from
the cache (nothing is extracted into $TMPDIR), and runs from C++. How it compares with the
upcast path and complex64 per op and size: `python -m benchmarks.cpu_eager` (docs/PERFORMANCE.md).

Tiers, so that nobody waits: the first call of an (op, dtype) goes to the Python router (as always), which asks for
the kernel (`first_need`). A package in the cache is installed at once; otherwise a background thread has a builder
process build it (the calling process imports neither Dynamo nor Inductor), and the C++ upcast serves every call
until it is installed. A build belongs to the cache, not to the process that asked: the builder holds the key's
lock and publishes into the cache itself; in lazy mode it runs at low priority in a session of its own, holding the
machine's one lazy build slot (LAZY_SLOT), so that many short processes asking at once start one build, and one
that ends while its build runs leaves it to finish and land. A forked child leaves its parent's builds alone
(_after_fork_in_child). Installed, a typed guard runs it for the calls it fits (native_guard/generated.h: dense
inputs of one dtype, shape and strides, alpha 1, at least table.min_numel elements; reductions over adjacent dims
of a contiguous tensor by the model of their layout, table.DIM_MODELS; a broadcast operand of a binary op by the
rows or columns model, table.BINARY_MODELS; in-place and out= forms through a package of their own that writes into
the written tensor, table.INTO, or their functional op's, table.WRITING). The first call of each (op, dtype) in a
process always takes the router (its path is logged there).

JITDTYPES_CPU_KERNELS: `lazy` (default), `eager` (the first call builds and installs before it returns: tests),
`off`. Packages go to the cache's `cpu_kernels` entries (cache_tools/store.py), keyed by the source of the code
that generates them, the op, the dtype, torch's build and the CPU capability.
"""

from __future__ import annotations

import json
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
from cache_tools.store import CPU_KERNELS, CorruptEntry, InsecureEntry, RememberedFailure, Store, cache_key
from .table import (GENERATED, INTO, INTO_LANES, LIBRARY_SUFFIX, OVERRIDDEN, SHIM_DTYPES, WRITING, commutative,
                    functional, min_numel, models, writes_into)

log = logging.getLogger("jitdtypes")

ENV_VAR = "JITDTYPES_CPU_KERNELS"
OFF, LAZY, EAGER = "off", "lazy", "eager"
_FORMAT = 2  # 1: one AOTInductor package (kernel.pt2) per entry; 2: a shared library per model
LAZY_SLOT = ".lazy-build.lock"  # in the cpu_kernels folder: held by the one lazy build of the machine

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
_slots: set[int] = set()  # lazy build slots this process holds (for a moment: until its builder has them)
_builders: dict[int, list[str]] = {}  # pid -> keys: the builder processes this process waits for


def _after_fork_in_child() -> None:
    """A forked child (DataLoader's fork workers, multiprocessing) starts no thread and holds no slot of its
    parent's; the builds its parent started are left to the parent (their requests stay asked), and its own
    first needs get a queue and a thread of their own."""
    global _lock, _queue
    _lock, _queue = threading.Lock(), queue.Queue()
    _worker.clear()
    _builders.clear()
    for slot in list(_slots):
        _slots.discard(slot)
        os.close(slot)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


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


def build_many(pairs, jobs: int = 1, heard=None) -> tuple[set[tuple[str, torch.dtype]], dict]:
    """Find or build the packages of every (overload, dtype) of `pairs` (`jitdtypes warm --device cpu`), with up
    to `jobs` builder processes at once, each importing torch and Inductor once for its share; remembered
    failed builds are tried again. `heard(done, total, label)` after each package. (The pairs that had a
    package built, {pair: error} for those that failed.)"""
    wanted: dict[str, tuple[str, torch.dtype]] = {}
    for overload, dtype in pairs:
        for into in _variants(overload):
            wanted.setdefault(key(overload, dtype, into), (overload, dtype, into))
    missing = [{"key": k, "overload": functional(o), "dtype": dtypes.NAMES[d], "into": into}
               for k, (o, d, into) in wanted.items() if _intact(k) is None]
    pair_of = {k: (o, d) for k, (o, d, _) in wanted.items()}
    built_pairs: set = set()
    errors: dict = {}
    done = [0]

    def line(result: dict) -> None:
        with _lock:
            done[0] += 1
            pair = pair_of[result["key"]]
            if "error" in result:
                errors[pair] = result["error"]
            elif result.get("built"):
                built_pairs.add(pair)
            if heard is not None:
                heard(done[0], len(missing), f"{pair[0].removeprefix('aten::')} {dtypes.NAMES[pair[1]]}")

    shares = [missing[i::jobs] for i in range(min(jobs, len(missing)))]
    threads = [threading.Thread(target=_run_builder, args=(share, True, False, line)) for share in shares]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for job in missing:
        pair = pair_of[job["key"]]
        if pair not in errors and _intact(job["key"]) is None:
            errors[pair] = "its build was interrupted"
    with _lock:
        built.extend(sorted(built_pairs, key=lambda pair: (pair[0], dtypes.NAMES[pair[1]])))
    return built_pairs, errors


def build_record(overload: str, dtype: torch.dtype) -> dict:
    """What the build of (overload, dtype)'s package recorded (build_seconds, peak_rss_bytes, ...); {} if none."""
    entry = _intact(key(overload, dtype))
    return dict(entry.meta) if entry is not None else {}


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
    """The path of each model's library (models()): the writing package's first model, then the
    functional op's."""
    directories = {into: _package(overload, dtype, into, retry) for into in reversed(_variants(overload))}
    return [str(directories[name in (INTO, INTO_LANES)] / f"{name}{LIBRARY_SUFFIX}")
            for name in models(overload, dtypes.NAMES[dtype])]


def _package(overload: str, dtype: torch.dtype, into: bool = False, retry: bool = False) -> Path:
    """The cached package's directory, built first by a builder process (build.py) if the cache lacks it. A
    failed build is remembered for its key (torch build and build source included), so that every later
    process does not spend the build's compiler time again; unless `retry`, it raises at once. In lazy mode
    the build is handed over: it runs at low priority in a session of its own, one lazy build on the machine
    at a time, and lands in the cache even if this process ends first."""
    entry_key = key(overload, dtype, into)
    entry = _intact(entry_key)
    if entry is None:
        if not retry:
            _raise_remembered(entry_key)
        job = {"key": entry_key, "overload": functional(overload), "dtype": dtypes.NAMES[dtype], "into": into}
        builder = _run_builder([job], retry, handover=mode() == LAZY and not retry)
        entry = _intact(entry_key)
        if entry is None:
            _raise_remembered(entry_key)
            raise RuntimeError("its build was interrupted (not recorded as failed: the next need builds it)")
        if builder is not None and entry.meta.get("builder_pid") == builder:
            built.append((overload, dtype))
    return entry.directory


def _intact(entry_key: str):
    """The intact entry, or None (absent, or damaged: the builder replaces it)."""
    try:
        return _store().read(entry_key)
    except CorruptEntry as exc:
        log.warning("jitdtypes: rebuilding a corrupt generated CPU kernel (%s)", exc)
        return None


def _raise_remembered(entry_key: str) -> None:
    failure = _store().read_failure(entry_key)
    if failure is not None:
        raise RuntimeError(f"{failure.get('error')} (at {RememberedFailure(failure).when}; not built again until "
                           "`jitdtypes warm --device cpu` or `jitdtypes cache clean --stale`)")


def _run_builder(jobs: list[dict], retry: bool, handover: bool, lines=None) -> int | None:
    """Run a builder process (build.py) over `jobs` and wait for it; its pid (None: none was needed; what it
    built names it in its metadata, `builder_pid`, and what failed is remembered). `lines(dict)` hears of
    each job as it ends. handover: the machine's one lazy build slot is taken first (waiting for the build
    before, which may have been this one's) and passed to the builder, which keeps it to its end, in a session
    of its own (a terminal's Ctrl-C or the end of this process leaves it running)."""
    command = [sys.executable, "-m", "jitdtypes.cpu_kernels.build", json.dumps({"jobs": jobs, "retry": retry})]
    environment = dict(os.environ, **{ENV_VAR: OFF, "PYTHONWARNINGS": "ignore"})  # the builder never asks
    if not handover:
        with subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              text=True) as child:
            for line in child.stdout:
                if lines is not None and line.startswith("{"):
                    lines(json.loads(line))
        return child.pid
    slot = _store().handover_lock(LAZY_SLOT)
    _slots.add(slot)
    try:
        if all(_intact(job["key"]) is not None for job in jobs):
            return None  # built while this process waited for the slot
        child = subprocess.Popen(command, env=environment, pass_fds=(slot,), start_new_session=True,
                                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        _slots.discard(slot)
        os.close(slot)
    _builders[child.pid] = [job["key"] for job in jobs]
    try:
        child.wait()
    finally:
        _builders.pop(child.pid, None)
    return child.pid


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

