"""`jitdtypes warm`: generate every template kernel for some dtypes ahead of time (and on CUDA compile
them, so the first real call does not). With GPU arches (`--arch`, or the local GPU's), every variant's
representative launches (aot.py) are compiled for each arch into Triton's cache format and kept in the kernel
entries, which `jitdtypes cache export` then carries to other machines: no GPU needed."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import math
import os
import re
import time

from cache_tools import triton_artifacts
from cache_tools.store import KERNELS, SOURCE, Store
from kernels_templates import common

from ..triton_kernels import aot, engine, selftest
from .. import cpu_kernels


@dataclasses.dataclass
class Summary:
    total: int = 0
    generated: int = 0
    cached: int = 0
    compiled: int = 0  # Triton compilations (on a GPU: representative calls run)
    triton_bytes: int = 0  # of the Triton cache files kept in kernel entries
    failed: list = dataclasses.field(default_factory=list)  # (label, error)
    build_peak_rss: int = 0  # bytes: the most a generated CPU kernel's build held at once


class ProgressReport:
    """What warm says while it works, phase by phase (a dtype's kernels, an arch's compilations), with an
    estimate of the time left from the mean time per step so far. On a terminal one line rewritten in place;
    elsewhere (a pipe, a log file) a plain line every 1/LINES_PER_PHASE of a phase, so that a log shows
    progress without a line per kernel."""

    LINES_PER_PHASE = 15

    def __init__(self, stream, terminal: bool, clock=time.monotonic):
        self.stream, self.terminal, self.clock = stream, terminal, clock
        self.name, self.unit, self.total, self.every, self.started = "", "", 0, 1, 0.0
        self.showing = False  # a terminal line to erase before anything else is printed

    def phase(self, name: str, total: int, unit: str = "kernels") -> None:
        self.name, self.unit, self.total, self.started = name, unit, total, self.clock()
        self.every = max(1, math.ceil(total / self.LINES_PER_PHASE))

    def step(self, done: int, label: str) -> None:
        """Called before the next step, `done` steps of the phase being finished."""
        elapsed = self.clock() - self.started
        eta = f"ETA {duration(elapsed / done * (self.total - done))}" if done else "ETA -"
        if self.terminal:
            self._show(f"[{done + 1}/{self.total} {eta}] {label}")
        elif done and done % self.every == 0:
            self._line(f"{done}/{self.total} {self.unit}, {duration(elapsed)} elapsed, {eta}")

    def note(self, text: str) -> None:
        """A step that is not counted (compiling every launch of an arch at once)."""
        if self.terminal:
            self._show(f"{self.name}: {text}")
        else:
            self._line(text)

    def close(self) -> None:
        if self.showing:
            self.stream.write("\r\033[K")
            self.stream.flush()
            self.showing = False

    def _show(self, text: str) -> None:
        try:
            width = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError):
            width = 80
        width -= 1  # a line filling the last column wraps on some terminals, and \r then rewrites the wrong one
        self.stream.write(f"\r\033[K{text[:width]}")
        self.stream.flush()
        self.showing = True

    def _line(self, text: str) -> None:
        print(f"warm {self.name}: {text}", file=self.stream, flush=True)


def duration(seconds: float) -> str:
    """12.3s, 4m05s, 1h02m."""
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes = round(seconds) // 60
    if minutes < 60:
        return f"{minutes}m{round(seconds) % 60:02d}s"
    return f"{minutes // 60}h{minutes % 60:02d}m"


def kernels_to_warm(dtype_names: list[str], ops: set[str] | None) -> list[tuple[str, dict]]:
    wanted = []
    for family in engine.FAMILIES:
        module = importlib.import_module(f"kernels_templates.{family}")
        for dtype in dtype_names:
            wanted += [(family, params) for params in module.variants(dtype) if not ops or params["op"] in ops]
    return wanted


def triton_missing() -> str | None:
    """Why no Triton kernel can be made here (None: they can). CPU calls never use them."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed (`pip install triton` adds them; CPU calls do not need them)"
    return None


def warm(dtype_names: list[str], device_type: str, ops: set[str] | None = None,
         progress: ProgressReport | None = None, arches: list[aot.Arch] | None = None, jobs: int = 1) -> Summary:
    """`progress` hears of each phase and of each kernel before it is made. On CUDA, `arches` (default: none
    without a GPU, the local one with it) are compiled ahead of time (precompile); with a GPU, the
    representative calls also run on it."""
    import torch

    if device_type == "cuda":
        has_gpu = torch.cuda.is_available()
        summary = precompile(dtype_names, arches or ([aot.local_arch()] if has_gpu else []), ops, progress, jobs)
        if has_gpu:
            _compile(dtype_names, ops, summary, progress)
        return summary
    kernels = [] if triton_missing() else kernels_to_warm(dtype_names, ops)
    summary = Summary(total=len(kernels))
    store = Store(KERNELS)
    if progress:
        progress.phase(device_type, summary.total)
    for done, (family, params) in enumerate(kernels):
        label = _label(family, params)
        if progress:
            progress.step(done, label)
        try:
            _, generated = engine.ensure_source(store, family, {**params, "interpret": True}, device_type)
        except Exception as exc:  # noqa: BLE001 - reported in the summary, the run goes on
            summary.failed.append((label, f"{type(exc).__name__}: {exc}"))
            continue
        summary.generated += generated
        summary.cached += not generated
    if device_type == "cpu" and cpu_kernels.mode() != cpu_kernels.OFF:
        _generate_cpu_kernels(dtype_names, ops, summary, progress, jobs)
    return summary


def _generate_cpu_kernels(dtype_names, ops, summary: Summary, progress, jobs: int) -> None:
    """The generated CPU kernels (jitdtypes.cpu_kernels) of every eligible (op, dtype), built by up to `jobs`
    builder processes; the largest memory a build took goes into the summary."""
    from .. import dtypes

    wanted = cpu_kernels.to_warm([dtypes.COMPLEX_BY_NAME[n] for n in dtype_names if n in dtypes.COMPLEX_BY_NAME],
                                 ops)
    summary.total += len(wanted)
    if progress:
        progress.phase("cpu (generated kernels)", len(wanted), unit="packages")

    def heard(done: int, total: int, label: str) -> None:
        if progress:
            progress.total = total
            progress.step(done, label)

    built, errors = cpu_kernels.build_many(wanted, jobs, heard)
    for overload, dtype in wanted:
        label = f"{overload.removeprefix('aten::')} {dtypes.NAMES[dtype]} (generated)"
        if (overload, dtype) in errors:
            summary.failed.append((label, errors[(overload, dtype)]))
        elif (overload, dtype) in built:
            summary.generated += 1
        else:
            summary.cached += 1
    summary.build_peak_rss = max([cpu_kernels.build_record(o, d).get("peak_rss_bytes", 0) for o, d in built] or [0])


def _compile(dtype_names, ops, summary: Summary, progress) -> None:
    """Run each family's representative calls once on the GPU: Triton compiles what they launch."""
    calls = [c for c in selftest.representative_calls("cuda", small=True)
             if not ops or c[2].removeprefix("aten::").split(".")[0] in ops]
    if progress:
        progress.phase("cuda", len(calls) * len(dtype_names), unit="representative calls")
    for index, (family, label, overload, build, _) in enumerate(calls):
        for position, dtype_name in enumerate(dtype_names):
            if progress:
                progress.step(index * len(dtype_names) + position, f"compile {family}/{label} {dtype_name}")
            try:
                args, kwargs, _, _ = build(selftest.target_dtypes()[dtype_name])
                if engine.adapter_for(overload, "cuda")(tuple(args), kwargs) is NotImplemented:
                    raise RuntimeError("the adapter declined its representative call")
                summary.compiled += 1
            except Exception as exc:  # noqa: BLE001
                summary.failed.append((f"compile {family}/{label} {dtype_name}", f"{type(exc).__name__}: {exc}"))


def _label(family: str, params: dict) -> str:
    return f"{family}/{params['op']} {params.get('dtype')} " + " ".join(
        f"{k}={v}" for k, v in sorted(params.items()) if k not in ("op", "dtype", "interpret"))


def _distinct(launches: list) -> list:
    seen: dict[str, object] = {}
    for launch in launches:
        seen.setdefault(launch.key(), launch)
    return list(seen.values())


def _compile_to_files(launch, arch):
    """The compiled launch's Triton cache files (directory name, {name: bytes}), or an error message."""
    try:
        return triton_artifacts.capture(aot.compile_launch(launch, arch).metadata_group)
    except Exception as exc:  # noqa: BLE001 - reported in the summary
        cause = exc.__cause__ or exc
        return f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0][:300]}"


def precompile(dtype_names: list[str], arches: list[aot.Arch], ops: set[str] | None = None, progress=None,
               jobs: int = 1) -> Summary:
    """Generate each kernel keyed for each arch (as a GPU of that arch keys it), compile its representative
    launches for that arch, and record the Triton cache files in the entry."""
    kernels = [(f, {**p, "interpret": False}) for f, p in kernels_to_warm(dtype_names, ops)]
    modules = aot.families()
    summary = Summary(total=len(kernels) * len(arches))
    store = Store(KERNELS)
    for arch in arches:
        planned = []  # (entry, label, launches)
        if progress:
            progress.phase(arch.name, len(kernels))
        with aot.recording(arch) as recorded:
            for done, (family, params) in enumerate(kernels):
                label = f"{arch.name} {_label(family, params)}"
                if progress:
                    progress.step(done, label)
                try:
                    entry, generated = engine.ensure_source(store, family, params, "cuda", aot.device_kind(arch))
                    name = re.sub(r"\W", "_", f"{family}_{params['op']}_{entry.key[:16]}")
                    module = common.exec_source(entry.read_bytes(SOURCE).decode(), f"jitdtypes_warm.{name}",
                                                filename=str(entry.directory / SOURCE))
                    first = len(recorded)
                    for sizes in (aot.ALIGNED, aot.ODD):
                        for case in aot.CASES[family](modules[family], params, module.run, sizes):
                            module.run(*case.args)
                except Exception as exc:  # noqa: BLE001 - reported in the summary, the run goes on
                    summary.failed.append((label, f"{type(exc).__name__}: {exc}"))
                    continue
                summary.generated += generated
                summary.cached += not generated
                planned.append((entry, label, _distinct(recorded[first:])))
        # kernels whose text is the same in several entries are one Triton compilation: compiled once
        unique = {launch.key(): launch for _, _, launches in planned for launch in launches}
        if progress:
            progress.note(f"compiling {len(unique)} launches, {jobs} at once")
        results = dict(zip(unique, aot.map_launches(_compile_to_files, list(unique.values()), arch, jobs)))
        done_ok = [r for r in results.values() if not isinstance(r, str)]
        summary.compiled += len(done_ok)
        summary.triton_bytes += sum(len(data) for _, files in done_ok for data in files.values())
        for entry, label, launches in planned:
            compiled = [results[launch.key()] for launch in launches]
            errors = [r for r in compiled if isinstance(r, str)]
            if errors:
                summary.failed.append((label, errors[0]))
                continue
            # under the entry's lock: another warm may be attaching to the same entry
            attached = store.update(entry.key, lambda current: triton_artifacts.attach(current.directory,
                                                                                      current.meta, compiled))
            if attached is None:
                summary.failed.append((label, "the entry was removed or damaged while its launches compiled"))
    return summary
