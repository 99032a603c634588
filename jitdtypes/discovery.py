"""Which overloads lack 16-bit support on a device: learned by probing in child processes, cached per build.

Probing runs every candidate overload with synthesized arguments (see probe.py). Some ATen kernels crash on
made-up arguments, so probing happens in a child process that logs each overload before running it; when a
child dies, the parent skips the overload that killed it and starts a new child for the rest.

Two passes: the first finds every failing overload; overrides are then installed for the failing backend
kernels and the remaining (composite) failures are probed again, because most of them only failed inside a
backend kernel that is now covered. Composite ops still failing get their own override at the Autograd key.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from filelock import FileLock

from jitdtypes.cache_tools import atomic, locations

from . import __version__, probe, schema
from .findings import BACKEND, COMPOSITE, Finding, kernel_level

log = logging.getLogger("jitdtypes")

FORMAT = 1
CHILD_TIMEOUT_S = 900


def _has_own_backend_kernel(full_name: str, device_type: str) -> bool:
    return torch._C._dispatch_has_kernel_for_dispatch_key(full_name, device_type.upper())


def _source_fingerprint() -> str:
    here = Path(__file__).parent
    digest = hashlib.sha256()
    for name in ("probe.py", "schema.py", "discovery.py", "findings.py", "dtypes.py", "upcast.py", "registrar.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:16]


def cache_path(device_type: str) -> Path:
    build = f"{torch.__version__}-{(torch.version.git_version or '')[:10]}-{torch.version.cuda or 'nocuda'}"
    key = hashlib.sha256(f"{FORMAT}|{build}|{__version__}|{_source_fingerprint()}".encode()).hexdigest()[:16]
    return locations.cache_root() / "discovery" / f"{device_type}-torch{torch.__version__}-{key}.json"


@dataclasses.dataclass
class Discovery:
    """What probing learned on one device type."""

    device_type: str
    findings: list[Finding]  # overloads that need an override
    supported: dict[str, list[str]]  # dtype name -> overloads that work natively

    def to_json(self) -> str:
        record = {
            "format": FORMAT,
            "device_type": self.device_type,
            "torch": torch.__version__,
            "jitdtypes": __version__,
            "created": time.time(),
            "findings": [dataclasses.asdict(f) for f in self.findings],
            "supported": self.supported,
        }
        return json.dumps(record, indent=1)


def load(path: Path) -> Discovery | None:
    try:
        record = json.loads(path.read_text())
        if record["format"] != FORMAT:
            return None
        return Discovery(record["device_type"], [Finding(**f) for f in record["findings"]], record["supported"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def load_or_discover(device_type: str) -> Discovery:
    """What is missing on `device_type`, from the cache when present, else by probing (then cached)."""
    path = cache_path(device_type)
    found = load(path)
    if found is not None:
        return found
    try:
        locations.ensure_dir(path.parent)
        with FileLock(str(path) + ".lock"):
            found = load(path)
            if found is None:
                found = discover(device_type)
                atomic.write_text(path, found.to_json())
            return found
    except OSError as exc:
        log.warning("jitdtypes: cache %s not writable (%s); discovery results kept in memory", path.parent, exc)
        return discover(device_type)


def discover(device_type: str) -> Discovery:
    started = time.monotonic()
    log.warning(
        "jitdtypes: probing which ATen kernels lack 16-bit complex support on %s "
        "(once per torch build; takes about a minute)",
        device_type,
    )
    candidates = [n for n in schema.all_aten_overloads() if probe.should_probe(schema.overload(n))]
    outcomes = run_probes(device_type, candidates, installed=[])
    first = [_finding(o, device_type) for o in outcomes if o.needs_override]
    # Ops with their own backend kernel keep their overrides. A composite op (abs -> abs.out, arccos -> acos,
    # fft_rfft2 -> _fft_r2c) often failed only inside another failing op: it is probed again with every
    # override installed but its own bypassed, and keeps its override only if it still fails that way.
    own = [f for f in first if _has_own_backend_kernel(f.overload, device_type)]
    composites = [f.overload for f in first if not _has_own_backend_kernel(f.overload, device_type)]
    still_failing = {o.overload: o for o in run_probes(device_type, composites, first, bypass_probed=True)
                     if o.needs_override}
    kept = [_finding(o, device_type) for o in still_failing.values()]
    # Two composites could each have passed thanks to the other's override: check the dropped ones again
    # against exactly what will be installed.
    dropped = [name for name in composites if name not in still_failing]
    kept += [_finding(o, device_type) for o in run_probes(device_type, dropped, own + kept) if o.needs_override]
    backend = own + [f for f in kept if f.level == BACKEND]
    composite = [f for f in kept if f.level == COMPOSITE]
    supported: dict[str, list[str]] = {}
    for outcome in outcomes:
        for dtype, status in outcome.status.items():
            if status == probe.SUPPORTED:
                supported.setdefault(dtype, []).append(outcome.overload)
    log.warning(
        "jitdtypes: %d of %d overloads need overrides on %s (%d backend, %d composite) [%.1fs]",
        len(backend) + len(composite), len(candidates), device_type, len(backend), len(composite),
        time.monotonic() - started,
    )
    return Discovery(device_type, backend + composite, supported)


def _finding(outcome: probe.Outcome, device_type: str) -> Finding:
    failing = {dtype: s for dtype, s in outcome.status.items() if s != probe.SUPPORTED}
    return Finding(outcome.overload, kernel_level(outcome.overload, device_type), failing, outcome.errors)


def run_probes(
    device_type: str, names: list[str], installed: list[Finding], bypass_probed: bool = False
) -> list[probe.Outcome]:
    """Probe `names` in child processes with `installed` overrides registered (each probed op's own override
    bypassed if asked), restarting past any overload that kills its child."""
    outcomes: dict[str, probe.Outcome | None] = {}
    remaining = list(names)
    with tempfile.TemporaryDirectory(prefix="jitdtypes-probe-") as tmp:
        todo, progress, overrides = Path(tmp, "todo.json"), Path(tmp, "progress.jsonl"), Path(tmp, "ov.json")
        overrides.write_text(json.dumps([dataclasses.asdict(f) for f in installed]))
        while remaining:
            todo.write_text(json.dumps(remaining))
            progress.write_text("")
            env = dict(os.environ, JITDTYPES_DISABLE="1", JITDTYPES_CPU_BACKEND="upcast", PYTHONWARNINGS="ignore")
            cmd = [sys.executable, "-m", "jitdtypes.discovery", device_type, str(todo), str(progress), str(overrides),
                   "bypass" if bypass_probed else "keep"]
            try:
                child = subprocess.run(cmd, env=env, timeout=CHILD_TIMEOUT_S, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, check=False)
                stderr = child.stderr.decode(errors="replace")
            except subprocess.TimeoutExpired as exc:
                stderr = (exc.stderr or b"").decode(errors="replace")
            if not progress.read_text():
                raise RuntimeError(f"jitdtypes: the probing child process failed to start:\n{stderr[-2000:]}")
            started = None
            for line in progress.read_text().splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    break  # the child died mid-line
                if "start" in entry:
                    started = entry["start"]
                else:
                    outcomes[entry["done"]] = probe.Outcome(**entry["outcome"]) if entry["outcome"] else None
                    started = None
            if started is not None:
                log.debug("jitdtypes: %s crashed or hung its probe; it is left alone", started)
                outcomes[started] = None
            remaining = [n for n in remaining if n not in outcomes]
    return [o for o in outcomes.values() if o is not None]


def _child(device_type: str, todo: Path, progress: Path, overrides: Path, bypass_probed: bool) -> None:
    from . import registrar

    installed = [Finding(**f) for f in json.loads(overrides.read_text())]
    keep_alive = registrar.install({device_type: installed}) if installed else None
    with progress.open("a") as out:
        for name in json.loads(todo.read_text()):
            out.write(json.dumps({"start": name}) + "\n")
            out.flush()
            if bypass_probed:
                registrar.bypassed = frozenset({name})
            try:
                outcome = probe.probe(schema.overload(name), device_type)
            except Exception as exc:  # a bug in argument synthesis must not look like a crashing kernel
                print(f"jitdtypes: probing {name} failed: {exc!r}", file=sys.stderr)
                outcome = None
            out.write(json.dumps({"done": name, "outcome": dataclasses.asdict(outcome) if outcome else None}) + "\n")
            out.flush()
    del keep_alive


if __name__ == "__main__":
    _child(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5] == "bypass")
