"""Probe many overloads in child processes, surviving whatever a probe does to its process.

Some kernels crash on made-up arguments, some hang, and on CUDA a failing kernel can leave the context
unusable for everything after it. So probing runs in children that write a line before and after each
overload (progress.jsonl); the parent reads those lines as they come. When a child dies, stays silent on one
overload for longer than the probe timeout (it is killed), or reports that its device broke (it exits at
once, see probe.DeviceBroken), the parent records that overload as crashed and starts a new child for the
rest. Several workers share the overloads, each one child at a time; a child starts torch, and CUDA, once.

    python -m jitdtypes.discovery.runner DEVICE TODO PROGRESS OVERRIDES keep|bypass PARENT_PID  (the child)
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from . import probe
from .. import schema
from ..findings import Finding

log = logging.getLogger("jitdtypes")

PROBE_TIMEOUT_S = 60.0  # one overload; first calls into cuSOLVER, cuFFT or MAGMA take seconds, not a minute
START_TIMEOUT_S = 300.0  # importing torch, installing overrides, creating the CUDA context
_POLL_S = 0.05
_SHARE_MIN = 100  # overloads per worker at least: a child's start (torch, overrides) costs as much as ~400 probes
_EXIT_DEVICE_BROKEN = 3  # the child wrote which overload broke its device, then left


@dataclasses.dataclass
class Run:
    """What a probing run learned: a verdict (None: no reference call worked) per overload that finished,
    why each crashed one was cut short, and how many child processes it took."""

    outcomes: dict[str, probe.Outcome | None]
    crashed: dict[str, str]
    children: int = 0


def run_probes(
    device_type: str,
    names: list[str],
    installed: list[Finding],
    bypass_probed: bool = False,
    workers: int = 1,
    probe_timeout_s: float = PROBE_TIMEOUT_S,
    progress: Callable[[int, int, int], None] | None = None,
) -> Run:
    """Probe `names` on `device_type` with `installed` overrides registered (each probed op's own override
    bypassed if asked), in up to `workers` children side by side. progress(finished, crashed, total) is called as
    verdicts arrive."""
    run = Run({}, {})
    if not names:
        return run
    with tempfile.TemporaryDirectory(prefix="jitdtypes-probe-") as tmp:
        overrides = Path(tmp, "overrides.json")
        overrides.write_text(json.dumps([dataclasses.asdict(f) for f in installed]))
        command = [device_type, str(overrides), "bypass" if bypass_probed else "keep"]
        count = max(1, min(workers, len(names) // _SHARE_MIN))
        active = [_Worker(run, names[i::count], Path(tmp, str(i)), command, probe_timeout_s) for i in range(count)]
        reported = -1
        try:
            while active:
                active = [w for w in active if w.poll()]
                finished = len(run.outcomes) + len(run.crashed)
                if progress and finished != reported:
                    progress(finished, len(run.crashed), len(names))
                    reported = finished
                if active:
                    time.sleep(_POLL_S)
        finally:
            for worker in active:
                worker.kill()
    return run


class _Worker:
    """One share of the overloads, probed by one child at a time; a new child starts past a crashed one."""

    def __init__(self, run: Run, names: list[str], folder: Path, command: list[str], probe_timeout_s: float):
        self.run, self.remaining, self.folder = run, names, folder
        self.command, self.probe_timeout_s = command, probe_timeout_s
        folder.mkdir()
        self._start()

    def _start(self) -> None:
        todo, self.progress = self.folder / "todo.json", self.folder / "progress.jsonl"
        todo.write_text(json.dumps(self.remaining))
        self.progress.write_text("")
        device_type, overrides, bypass = self.command
        # One intra-op thread: probes use tiny tensors, and workers side by side each running a full OpenMP
        # team oversubscribe the cores (2 workers on 2 cores took more than twice as long).
        env = dict(os.environ, JITDTYPES_DISABLE="1", JITDTYPES_CPU_BACKEND="upcast", JITDTYPES_CPU_KERNELS="off",
                   PYTHONWARNINGS="ignore",
                   OMP_NUM_THREADS="1")
        # stderr to a file, not a pipe: a child that writes much to an unread pipe would block and look hung
        with (self.folder / "stderr.txt").open("wb") as stderr:
            self.child = subprocess.Popen(
                [sys.executable, "-m", "jitdtypes.discovery.runner", device_type, str(todo), str(self.progress),
                 overrides, bypass, str(os.getpid())],
                env=env, stdout=subprocess.DEVNULL, stderr=stderr,
            )
        self.run.children += 1
        self.offset, self.ready, self.current, self.heard = 0, False, None, time.monotonic()
        self.reported_crash = False

    def poll(self) -> bool:
        """Take in the child's new lines; restart it past a crash or hang. False once every name is done."""
        returncode = self.child.poll()
        self._read_lines()
        if returncode is None:
            limit = self.probe_timeout_s if self.ready else START_TIMEOUT_S
            if time.monotonic() - self.heard <= limit:
                return True
            self.kill()
            why = f"timed out after {limit:.0f} s"
        else:
            why = _describe_exit(returncode)
        if not self.ready:
            stderr = (self.folder / "stderr.txt").read_text(errors="replace")
            raise RuntimeError(f"jitdtypes: the probing child process failed to start ({why}):\n{stderr[-2000:]}")
        # Blame the overload being probed (or, silent between two, the next one), unless the child said which
        # overload broke its device before exiting: every restart then starts past at least one overload.
        blamed = None if self.reported_crash else (
            self.current or next((n for n in self.remaining if not self._finished(n)), None))
        if blamed is not None:
            log.debug("jitdtypes: probing %s: its process %s; it keeps PyTorch's kernel", blamed, why)
            self.run.crashed[blamed] = f"its probing process {why}"
        self.remaining = [n for n in self.remaining if not self._finished(n)]
        if self.remaining:
            self._start()
            return True
        return False

    def _finished(self, name: str) -> bool:
        return name in self.run.outcomes or name in self.run.crashed

    def _read_lines(self) -> None:
        with self.progress.open("rb") as f:
            f.seek(self.offset)
            data = f.read()
        complete = data[: data.rfind(b"\n") + 1]  # a line still being written waits for the next poll
        self.offset += len(complete)
        for line in complete.decode().splitlines():
            entry = json.loads(line)
            self.heard = time.monotonic()
            if "ready" in entry:
                self.ready = True
            elif "start" in entry:
                self.current = entry["start"]
            elif "crashed" in entry:
                self.run.crashed[entry["crashed"]] = entry["error"]
                self.current, self.reported_crash = None, True
            else:
                self.run.outcomes[entry["done"]] = probe.Outcome(**entry["outcome"]) if entry["outcome"] else None
                self.current = None

    def kill(self) -> None:
        if self.child.poll() is None:
            self.child.kill()
            self.child.wait()


def _describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            return f"died of {signal.Signals(-returncode).name}"
        except ValueError:
            return f"died of signal {-returncode}"
    return f"exited with status {returncode}"


def _die_with_parent(parent_pid: int) -> None:
    """A killed parent must not leave children probing (or hanging) on: Linux signals them; elsewhere they
    notice their new parent between overloads."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent_pid:
        os._exit(0)


def _child(device_type: str, todo: Path, progress: Path, overrides: Path, bypass_probed: bool,
           parent_pid: int) -> None:
    _die_with_parent(parent_pid)
    import torch

    from . import simulated_faults

    installed = [Finding(**f) for f in json.loads(overrides.read_text())]
    keep_alive = None  # the registration lasts while referenced
    if installed or bypass_probed:
        from ..triton_kernels import engine
        from ..routing import registrar

        # As JITDTYPES_CPU_BACKEND=upcast does on CPU: probing asks whether calls work with the overrides, not
        # how fast, and the upcast path answers without compiling (and autotuning) Triton kernels on CUDA in
        # every child, which could take longer than the probe timeout.
        engine.template_devices.clear()
        keep_alive = registrar.install({device_type: installed})
    call = probe.caller(device_type)
    if device_type == "cuda":
        call(torch.ones, 1, device=device_type)  # the context, created once for every overload below
    faults = simulated_faults.Faults(simulated_faults.spec()) if simulated_faults.spec() else None
    with progress.open("a") as out:

        def write(entry: dict) -> None:
            out.write(json.dumps(entry) + "\n")
            out.flush()

        write({"ready": os.getpid()})
        for name in json.loads(todo.read_text()):
            if os.getppid() != parent_pid:
                return
            write({"start": name})
            if bypass_probed:
                registrar.bypass(frozenset({name}))
            try:
                outcome = probe.probe(schema.overload(name), device_type,
                                      faults.caller(name, call) if faults else call)
            except Exception as exc:  # noqa: BLE001 - sorted below
                if isinstance(exc, probe.DeviceBroken) or probe.is_cuda_error(exc):
                    # Nothing more may run on this context, not even Python's exit handlers (they touch CUDA).
                    write({"crashed": name, "error": str(exc) if isinstance(exc, probe.DeviceBroken)
                           else probe.first_line(exc)})
                    os._exit(_EXIT_DEVICE_BROKEN)
                # a bug in argument synthesis must not look like a crashing kernel
                print(f"jitdtypes: probing {name} failed: {exc!r}", file=sys.stderr)
                outcome = None
            write({"done": name, "outcome": dataclasses.asdict(outcome) if outcome else None})
    del keep_alive


if __name__ == "__main__":
    _child(sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), sys.argv[5] == "bypass",
           int(sys.argv[6]))
