"""Triton's own runtime path (JITFunction.run -> triton.compile) on a machine without a GPU, for the proofs that
a warmed cache means no compilation. Run as a script in a process without TRITON_INTERPRET:

    python -m tests.triton_runtime keys OTHER_TRITON_CACHE   # AOT vs runtime Triton cache directory per launch
    python -m tests.triton_runtime program                   # a program's kernels against the current caches

Both print one JSON object. `runtime_path(arch)` makes Triton believe it runs on a GPU of `arch` up to the
launch itself: its active driver reports the arch's target, device 0 and stream 0, torch.cuda's queries answer
for the arch (launchers size grids by them), and every JITFunction.run is a warmup (bind, specialize, compute the
key, look up or compile, no launch). An autotuned kernel compiles each config, as its benchmark would.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

from benchmarks.host_time import simulated_gpu
from jitdtypes.triton_kernels import aot
from kernels_templates import launcher

ARCH = aot.ARCHES["sm_90"]
OPS = ("exp",)


@contextlib.contextmanager
def runtime_path(arch: aot.Arch):
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction

    run = JITFunction.run

    def warmup_only(kernel, *args, grid, warmup, **kwargs):
        return run(kernel, *args, grid=grid, warmup=True, **kwargs)

    def every_config(tuner, *args, **kwargs):
        for config in tuner.configs:
            tuner.fn.run(*args, **kwargs, **config.all_kwargs())

    direct = launcher.direct_launches_enabled
    launcher.direct_launches_enabled = False  # a warmup returns a kernel that was never loaded: not launchable
    try:
        with simulated_gpu(arch, [(JITFunction, "run", warmup_only), (Autotuner, "run", every_config)]):
            yield
    finally:
        launcher.direct_launches_enabled = direct


@contextlib.contextmanager
def compilations():
    """Every triton.compile call in the block, as (cache directory name, cache hit) from Triton's own
    compilation listener."""
    from triton import knobs

    events: list[tuple[str, bool]] = []

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        directory = os.path.basename(os.path.dirname(next(iter(metadata_group.values()))))
        events.append((directory, cache_hit))

    previous = knobs.compilation.listener
    knobs.compilation.listener = listener
    try:
        yield events
    finally:
        knobs.compilation.listener = previous


def representative_calls():
    """(family, params, case) for every warmed variant of OPS: the launches `warm` compiles."""
    from jitdtypes.cli import warm

    modules = aot.families()
    for family, params in warm.kernels_to_warm(["complex32"], set(OPS)):
        params = {**params, "interpret": False}
        yield family, params, modules[family]


def cases(family, module_family, params, run):
    return [case for sizes in (aot.ALIGNED, aot.ODD) for case in aot.CASES[family](module_family, params, run, sizes)]


def keys(other_cache: str) -> dict:
    """The Triton cache directory (base32 of sha256 of Triton's cache key) each launch gets on the AOT path, and
    the one Triton's runtime path gets for the same launch, compiling into another, empty Triton cache."""
    from triton import knobs

    from jitdtypes.triton_kernels import engine
    from cache_tools.store import KERNELS, SOURCE, Store
    from kernels_templates import common

    aot_dirs, runtime_dirs = [], []
    for family, params, module_family in representative_calls():
        entry, _ = engine.ensure_source(Store(KERNELS), family, params, "cuda", aot.device_kind(ARCH))
        source_module = common.exec_source(entry.read_bytes(SOURCE).decode(), "aot_side",
                                           filename=str(entry.directory / SOURCE))
        for case in cases(family, module_family, params, source_module.run):
            with aot.recording(ARCH) as launches:
                source_module.run(*case.args)
            aot_dirs += [aot.compile_launch(launch, ARCH).hash for launch in launches]
    knobs.cache.dir = other_cache
    for family, params, module_family in representative_calls():
        with runtime_path(ARCH), compilations() as events:
            run = engine.load_kernel(family, "cuda", params)
            for case in cases(family, module_family, params, run):
                run(*case.args)
        runtime_dirs += [directory for directory, _ in events]
    from triton.runtime.cache import _base32

    return {"aot": [_base32(h) for h in aot_dirs], "runtime": runtime_dirs}


def program() -> dict:
    """Every representative call of OPS through the engine, as a GPU program of that shape would make them."""
    from jitdtypes.triton_kernels import engine

    with runtime_path(ARCH), compilations() as events:
        for family, params, module_family in representative_calls():
            run = engine.load_kernel(family, "cuda", params)
            for case in cases(family, module_family, params, run):
                run(*case.args)
    return {"compiled": sum(not hit for _, hit in events), "cache_hits": sum(hit for _, hit in events),
            "engine": dict(engine.counters)}


if __name__ == "__main__":
    command = sys.argv[1]
    result = keys(sys.argv[2]) if command == "keys" else program()
    print(json.dumps(result))
