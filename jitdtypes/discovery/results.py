"""Which overloads lack 16-bit support on a device: learned by probing in child processes, cached per build.

Probing runs every candidate overload with synthesized arguments (see probe.py) in child processes that
survive crashes, hangs and broken CUDA contexts (see runner.py); an overload whose probe is cut short
that way is recorded as crashed and keeps PyTorch's own kernel. Devices are probed side by side.

Two passes: the first finds every failing overload; overrides are then installed for the failing backend
kernels and the remaining (composite) failures are probed again, because most of them only failed inside a
backend kernel that is now covered. Composite ops still failing get their own override at the Autograd key.

The result is one self-contained JSON file per device, `<device>-torch<version>-<key>.json`, keyed by the
device, the torch build, the jitdtypes version and the code discovery runs, with a sha256 of its content: `check`
verifies a file (shipped in the package, copied from another machine) before anything trusts it. In the cache it
is the file of a `discovery` entry (cache_tools/store.py), published whole once probing is done, so an
interrupted discovery leaves nothing behind that a later import would read.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import json
import logging
import os
import sys
import time
from pathlib import Path

import torch

from cache_tools import layers
from cache_tools.store import DISCOVERY, CorruptEntry, Entry, InsecureEntry, Store, cache_key, sha256

from .._version import __version__
from . import probe, runner, simulated_faults
from .. import schema
from cache_tools import source_digest
from ..findings import BACKEND, COMPOSITE, SUPPORTED, Finding, kernel_level

log = logging.getLogger("jitdtypes")

FORMAT = 2
PASSES = 3  # every candidate, the failing composites with the overrides installed, the dropped ones again
MAX_WORKERS = 8  # child processes per device; each holds torch (and a CUDA context) in memory
PROGRESS_EVERY_S = 10.0
# JITDTYPES_DISCOVERY: which devices an import may probe when their results are not cached.
ENV = "JITDTYPES_DISCOVERY"
MODES = ("auto", "skip-cuda", "cached", "probe")  # probe: as auto, the shipped results aside
# Results that ship inside the package, for the torch builds CI tests on CPU (CI_TORCH_BUILDS), so that a user
# on one of them probes nothing on CPU: used only when `check` accepts them, i.e. made by this very code. They
# are regenerated with the code, per CI torch build, on a CPU machine (`ship`):
#     JITDTYPES_DISABLE=1 python -m jitdtypes.discovery --ship
# CUDA is always probed on the machine: GPUs and drivers differ too much for a shipped verdict.
SHIPPED = Path(__file__).parent / "shipped"
SHIPPED_DEVICES = ("cpu",)
CI_TORCH_BUILDS = ("2.14.1+cu130", "2.11.0+cu130")
# what runner's children turn off (templates, JITDTYPES_CPU_KERNELS=off): build_key leaves their code out
NOT_RUN_WHILE_PROBING = ("kernels_templates", "jitdtypes.cpu_kernels")


def _has_own_backend_kernel(full_name: str, device_type: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(full_name, device_type.upper())


def build_key(device_type: str) -> str:
    """What a discovery result on `device_type` depends on: this torch build, jitdtypes, the code discovery runs
    (this module and every module it imports, source_digest) and any test faults, so that results probed under
    them are never read by an ordinary import. The key of its cache entry.

    The kernels are not part of that code: probing children turn Triton templates and generated CPU kernels
    off (runner), so their verdicts are the upcast path's, and an edited kernel re-probes nothing (nor makes
    the shipped results stale)."""
    return cache_key(DISCOVERY, source_digest.of(__name__, leaving_out=NOT_RUN_WHILE_PROBING), {
        "format": FORMAT, "device": device_type, "torch": torch.__version__,
        "git": (torch.version.git_version or "")[:10], "cuda": torch.version.cuda or "nocuda",
        "jitdtypes": __version__, "faults": simulated_faults.spec()})


def file_name(device_type: str) -> str:
    return f"{device_type}-torch{torch.__version__}-{build_key(device_type)}.json"


def cache_path(device_type: str) -> Path:
    """Where this build's result on `device_type` is in the user's cache (present or not)."""
    return Store(DISCOVERY).directory(build_key(device_type)) / file_name(device_type)


@dataclasses.dataclass
class Discovery:
    """What probing learned on one device type."""

    device_type: str
    findings: list[Finding]  # overloads that need an override
    supported: dict[str, list[str]]  # dtype name -> overloads that work natively
    crashed: dict[str, str] = dataclasses.field(default_factory=dict)  # overload -> why; keeps PyTorch's kernel
    stats: dict = dataclasses.field(default_factory=dict)  # probed, workers, children, seconds

    def to_json(self) -> str:
        record = {
            "format": FORMAT,
            "key": build_key(self.device_type),
            "device_type": self.device_type,
            "torch": torch.__version__,
            "jitdtypes": __version__,
            "created": time.time(),
            "stats": self.stats,
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "supported": self.supported,
            "crashed": self.crashed,
        }
        return json.dumps({**record, "sha256": _digest(record)}, indent=1)


def _digest(record: dict) -> str:
    return sha256(json.dumps(record, sort_keys=True))


def check(path: Path) -> tuple[Discovery | None, str | None]:
    """The discovery result in `path` if this torch build and jitdtypes may use it, else why not."""
    try:
        record = json.loads(path.read_text())
        body = {k: v for k, v in record.items() if k != "sha256"}
        if record.get("format") != FORMAT:
            return None, f"format {record.get('format')}, not {FORMAT}"
        if record.get("sha256") != _digest(body):
            return None, "content does not match its sha256"
        if record["key"] != build_key(record["device_type"]):
            return None, "made by another torch build, jitdtypes version or discovery source"
        if not path.name.startswith(f"{record['device_type']}-"):
            return None, f"probed on {record['device_type']}, but its name says another device"
        found = Discovery(record["device_type"], [Finding(**f) for f in record["findings"]], record["supported"],
                          record["crashed"], record["stats"])
        return found, None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return None, f"unreadable ({type(exc).__name__})"


def load(path: Path) -> Discovery | None:
    return check(path)[0]


def summary(found: Discovery) -> str:
    """One line: what `found` overrides and what crashed its probe, and what probing took."""
    stats = found.stats
    return (f"discovery {found.device_type}: {len(found.findings)} overrides, {len(found.crashed)} crashed in probing "
            f"(probed {stats.get('probed')} overloads in {stats.get('seconds')} s: {stats.get('children')} child "
            f"processes in all, over {PASSES} passes, up to {stats.get('workers')} at a time)")


def probed_at_import(device_types: list[str]) -> list[str]:
    """The devices an import may probe (JITDTYPES_DISCOVERY); the others use cached results or get none."""
    mode = _mode()
    if mode not in MODES:
        raise ValueError(f"{ENV}={mode!r}: expected one of {', '.join(MODES)}")
    return {"auto": list(device_types), "skip-cuda": [d for d in device_types if d != "cuda"], "cached": [],
            "probe": list(device_types)}[mode]


def load_or_discover_all(device_types: list[str], may_probe: list[str] | None = None,
                         cached: dict[str, Discovery | None] | None = None) -> dict[str, Discovery]:
    """Each device's results: cached, or probed (the devices in `may_probe`, default all, side by side). A
    device that may not be probed and has no cached results gets none: PyTorch's kernels only. `cached`: what
    `stored` gave for each device, when the caller has asked already."""
    may_probe = list(device_types) if may_probe is None else may_probe
    cached = cached if cached is not None else {d: stored(d) for d in device_types}
    to_probe = [d for d in device_types if cached[d] is None and d in may_probe]
    with concurrent.futures.ThreadPoolExecutor(max(1, len(to_probe))) as pool:
        probing = {d: pool.submit(load_or_discover, d, len(to_probe)) for d in to_probe}
        found = {d: cached[d] or (probing[d].result() if d in probing else None) for d in device_types}
    for device_type, result in found.items():
        if result is None:
            log.warning("jitdtypes: %s=%s and no cached discovery results for %s: its 16-bit calls get PyTorch's "
                        "kernels only (`jitdtypes warm` probes it ahead of time)", ENV, os.environ.get(ENV),
                        device_type)
            found[device_type] = Discovery(device_type, [], {}, stats={"skipped": True})
    return found


def load_or_discover(device_type: str, devices_at_once: int = 1) -> Discovery:
    """What is missing on `device_type`, from the cache when present, else by probing (then cached)."""
    found = stored(device_type)
    if found is not None:
        return found
    workers = default_workers(devices_at_once)
    probed: list[Discovery] = []

    def probe_into(workspace: Path) -> dict:
        probed.append(discover(device_type, workers=workers))
        text = probed[0].to_json()
        (workspace / file_name(device_type)).write_text(text)
        return {"device_type": device_type, "torch": torch.__version__, "jitdtypes": __version__,
                "overrides": len(json.loads(text).get("findings", []))}

    def damaged(exc: CorruptEntry) -> None:
        log.warning("jitdtypes: damaged discovery result (%s): probing again", exc)

    store = Store(DISCOVERY)
    try:
        entry, _ = store.ensure(build_key(device_type), probe_into, damaged=damaged)
    except InsecureEntry as exc:
        log.warning("jitdtypes: cache %s not trusted (%s); discovery results kept in memory", store.root, exc)
        entry = None
    except OSError as exc:
        log.warning("jitdtypes: cache %s not writable (%s); discovery results kept in memory", store.root, exc)
        entry = None
    if probed:
        return probed[0]
    found = load(entry.directory / file_name(device_type)) if entry is not None else None
    return found or discover(device_type, workers=workers)  # found None: made by another process, yet refused


def _mode() -> str:
    return os.environ.get(ENV, "").strip() or "auto"


def stored(device_type: str) -> Discovery | None:
    """This build's result without probing: from the cache, a read-only cache layer, or the package (unless
    JITDTYPES_DISCOVERY=probe: this machine's own verdicts are wanted)."""
    return (_cached(device_type) or _from_layers(device_type)
            or (_shipped(device_type) if _mode() != "probe" else None))


def _cached(device_type: str) -> Discovery | None:
    """The user's own cached result: None when absent, damaged or not private (load_or_discover says why)."""
    store = Store(DISCOVERY)
    try:
        entry = store.read(build_key(device_type))
    except (CorruptEntry, InsecureEntry, OSError):
        return None
    if entry is None:
        return None
    store.touch(entry)
    return _checked(entry, device_type, "")


def _checked(entry: Entry, device_type: str, where: str) -> Discovery | None:
    found, why_not = check(entry.directory / file_name(device_type))
    if why_not is not None:
        log.warning("jitdtypes: discovery result %s%s refused: %s", entry.directory, where, why_not)
    return found


def shipped_path(device_type: str = "cpu") -> Path:
    return SHIPPED / file_name(device_type)


def _shipped(device_type: str) -> Discovery | None:
    path = shipped_path(device_type)
    if device_type not in SHIPPED_DEVICES or not path.is_file():
        return None
    found, why_not = check(path)
    if why_not is not None:
        log.warning("jitdtypes: shipped discovery result %s refused: %s", path.name, why_not)
    return found


def ship() -> Path:
    """Probe CPU afresh and write this build's shipped result; the files of other keys for this torch version
    (stale: the code discovery runs has changed) go."""
    path = shipped_path()
    found = discover("cpu")
    SHIPPED.mkdir(parents=True, exist_ok=True)
    path.write_text(found.to_json() + "\n")
    for stale in SHIPPED.glob(f"cpu-torch{torch.__version__}-*.json"):
        if stale != path:
            stale.unlink()
    return path


def _from_layers(device_type: str) -> Discovery | None:
    """This build's result from the first read-only cache layer (JITDTYPES_CACHE_PATH) holding one that passes
    the layer trust rule, its sha256s and the record's own checks; refusals are logged."""
    for store in layers.stores(DISCOVERY):
        try:
            entry = store.read(build_key(device_type))
        except (InsecureEntry, CorruptEntry, OSError) as exc:
            log.warning("jitdtypes: discovery result in a cache layer refused: %s", exc)
            continue
        found = _checked(entry, device_type, " in a cache layer") if entry is not None else None
        if found is not None:
            return found
    return None


def default_workers(devices_at_once: int = 1) -> int:
    """Probing children per device: the cores this process may use, shared among the devices probed at once."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return max(1, min(MAX_WORKERS, cores // devices_at_once))


class _Progress:
    """A line on stderr (through the jitdtypes logger) every PROGRESS_EVERY_S while probing."""

    def __init__(self, device_type: str, started: float):
        self.device_type, self.started, self.last = device_type, started, started

    def __call__(self, finished: int, crashed: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last >= PROGRESS_EVERY_S:
            self.last = now
            log.warning("jitdtypes: probing %s: %d/%d overloads done, %d crashed [%.0f s]", self.device_type,
                        finished, total, crashed, now - self.started)


def discover(
    device_type: str,
    overloads: list[str] | None = None,
    workers: int | None = None,
    probe_timeout_s: float = runner.PROBE_TIMEOUT_S,
) -> Discovery:
    """Probe `overloads` (default: every ATen overload worth probing) on `device_type` in `workers` child
    processes (default: default_workers())."""
    started = time.monotonic()
    names = schema.all_aten_overloads() if overloads is None else overloads
    candidates = [n for n in names if probe.should_probe(schema.overload(n))]
    workers = workers or default_workers()
    log.warning("jitdtypes: probing which ATen kernels lack 16-bit complex support on %s: %d overloads, in up to "
                "%d processes (once per torch build)", device_type, len(candidates), workers)
    runs = []

    def run(names, installed, bypass_probed=False, progress=None):
        runs.append(runner.run_probes(device_type, names, installed, bypass_probed, workers, probe_timeout_s,
                                            progress))
        return [o for o in runs[-1].outcomes.values() if o is not None]

    outcomes = run(candidates, [], progress=_Progress(device_type, started))
    first = [_finding(o, device_type) for o in outcomes if o.needs_override]
    # Ops with their own backend kernel keep their overrides. A composite op (abs -> abs.out, arccos -> acos,
    # fft_rfft2 -> _fft_r2c) often failed only inside another failing op: it is probed again with every
    # override installed but its own bypassed, and keeps its override only if it still fails that way.
    own = [f for f in first if _has_own_backend_kernel(f.overload, device_type)]
    composites = [f.overload for f in first if not _has_own_backend_kernel(f.overload, device_type)]
    still_failing = {o.overload: o for o in run(composites, first, bypass_probed=True) if o.needs_override}
    kept = [_finding(o, device_type) for o in still_failing.values()]
    # Two composites could each have passed thanks to the other's override: check the dropped ones again
    # against exactly what will be installed.
    dropped = [name for name in composites if name not in still_failing]
    kept += [_finding(o, device_type) for o in run(dropped, own + kept) if o.needs_override]
    backend = own + [f for f in kept if f.level == BACKEND]
    composite = [f for f in kept if f.level == COMPOSITE]
    overridden = {f.overload for f in backend + composite}
    crashed = {name: why for r in runs for name, why in r.crashed.items() if name not in overridden}
    supported: dict[str, list[str]] = {}
    for outcome in outcomes:
        for dtype, status in outcome.status.items():
            if status == SUPPORTED:
                supported.setdefault(dtype, []).append(outcome.overload)
    seconds = time.monotonic() - started
    log.warning(
        "jitdtypes: %d of %d overloads need overrides on %s (%d backend, %d composite), %d crashed their probe "
        "and keep PyTorch's kernel [%.1fs]",
        len(overridden), len(candidates), device_type, len(backend), len(composite), len(crashed), seconds,
    )
    stats = {"probed": len(candidates), "workers": workers, "children": sum(r.children for r in runs),
             "seconds": round(seconds, 2)}
    return Discovery(device_type, backend + composite, supported, crashed, stats)


def _finding(outcome: probe.Outcome, device_type: str) -> Finding:
    failing = {dtype: s for dtype, s in outcome.status.items() if s != SUPPORTED}
    return Finding(outcome.overload, kernel_level(outcome.overload, device_type), failing, outcome.errors)


def main(argv: list[str]) -> int:
    """`python -m jitdtypes.discovery --ship`: this build's CPU result written into the package."""
    if argv != ["--ship"]:
        print("usage: JITDTYPES_DISABLE=1 python -m jitdtypes.discovery --ship", file=sys.stderr)
        return 2
    if os.environ.get("JITDTYPES_DISABLE", "").strip() in ("", "0"):  # the import has read or probed a result
        print("run it with JITDTYPES_DISABLE=1, so that importing jitdtypes probes nothing first", file=sys.stderr)
        return 2
    path = ship()
    print(f"wrote {path.relative_to(Path(__file__).parent.parent.parent)}: {summary(load(path))}")
    return 0
