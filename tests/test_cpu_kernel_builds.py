"""The life of a generated CPU kernel's build (jitdtypes/cpu_kernels/provider.py, build.py): it belongs to the
cache, not to the process that asked. Many short processes start one build, which lands after they have gone;
lazy builds run one at a time on the machine; a forked child, DataLoader workers of either start method, a
killed builder and a Ctrl-C during `warm` leave the cache consistent and record no failed build; processes that
install kernels leave nothing in $TMPDIR. Each test runs programs in processes of their own over a private
cache (seeded with this session's discovery results and compiled guard) and asserts on the cache's contents
and on values computed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes import cpu_kernels
from cache_tools.store import CPU_KERNELS, Store

from .conftest import CLI, seed_cache

pytestmark = [
    pytest.mark.machinery,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="watches builders through /proc"),
    pytest.mark.skipif(not jitdtypes.is_enabled() or jitdtypes.guard() != "compiled",
                       reason="needs the compiled guard"),
]

BUILD_TIMEOUT_S = 600
# A program's first call of an op asks for its kernel (the router's first need); then it checks the values
# against complex64's, and says what it saw.
PRELUDE = textwrap.dedent("""
    import json, os, sys, time
    import torch, jitdtypes
    from jitdtypes import cpu_kernels
    from jitdtypes.cpu_kernels import provider

    def first_call(name):
        x = (torch.randn(4096, dtype=torch.complex64, generator=torch.Generator().manual_seed(0))).to(torch.complex32)
        got = getattr(torch, name)(x).to(torch.complex64)
        wide = getattr(torch, name)(x.to(torch.complex64))
        assert torch.allclose(got, wide, rtol=2e-3, atol=2e-3), name
        return x
""")


def _environment(cache: Path, **extra) -> dict:
    return dict(os.environ, JITDTYPES_CACHE_DIR=str(cache), JITDTYPES_CPU_KERNELS="lazy",
                JITDTYPES_DISCOVERY="cached", **extra)


def _start(cache: Path, program: str, **extra) -> subprocess.Popen:
    """The program in a file of its own (spawned DataLoader workers import its classes from it)."""
    script = cache.with_name(f"program{len(list(cache.parent.glob('program*.py')))}.py")
    script.write_text(PRELUDE + textwrap.dedent(program))
    return subprocess.Popen([sys.executable, str(script)], env=_environment(cache, **extra), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _finish(child: subprocess.Popen) -> str:
    out, err = child.communicate(timeout=BUILD_TIMEOUT_S)
    assert child.returncode == 0, err[-3000:]
    return out


class Builders:
    """Watches /proc for builder processes of one cache while it runs: every pid seen, and the most that ran
    at once."""

    def __init__(self, cache: Path) -> None:
        self.cache, self.seen, self.most = str(cache), set(), 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def running(self) -> set[int]:
        found = set()
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                command = Path(entry.path, "cmdline").read_bytes().split(b"\0")
                if b"jitdtypes.cpu_kernels.build" not in command:
                    continue
                environment = Path(entry.path, "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"JITDTYPES_CACHE_DIR={self.cache}".encode() in environment:
                found.add(int(entry.name))
        return found

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = self.running()
            self.seen |= now
            self.most = max(self.most, len(now))
            time.sleep(0.05)

    def wait_until_none(self, timeout: float = BUILD_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout
        while self.running():
            assert time.monotonic() < deadline, "builders still running"
            time.sleep(0.2)
        self._stop.set()
        self._thread.join()


def _entry(cache: Path, overload: str, dtype=torch.complex32):
    return Store(CPU_KERNELS, cache).read(cpu_kernels.key(overload, dtype))


def _consistent(cache: Path) -> None:
    """Every entry intact, no workspace or failure record left."""
    store = Store(CPU_KERNELS, cache)
    for directory in store.entries():
        assert store.read(directory.name) is not None, directory
    assert not list(store.root.glob(".work-*")), "a workspace was left"
    assert store.failures() == [], "a build was recorded as failed"


def test_short_processes_start_one_build_that_lands_after_they_end(tmp_path):
    """8 processes at once ask for the same kernel and end at once: one builder runs, and its package lands."""
    cache = seed_cache(tmp_path / "cache")
    builders = Builders(cache)
    children = [_start(cache, """
        first_call("sigmoid")
        time.sleep(1)  # the background thread reaches the build slot, as in any process that computes a while
        print(os.getpid())
    """) for _ in range(8)]
    pids = {int(_finish(child)) for child in children}
    builders.wait_until_none()
    assert len(builders.seen) == 1 and builders.most == 1, builders.seen
    entry = _entry(cache, "aten::sigmoid")
    assert entry is not None and entry.meta["builder_pid"] in builders.seen and not pids & builders.seen
    _consistent(cache)
    out = _finish(_start(cache, """
        x = first_call("sigmoid")
        cpu_kernels.wait()
        print(json.dumps([cpu_kernels.status()[("aten::sigmoid", "complex32")], len(cpu_kernels.built)]))
        before = torch.sigmoid(x)  # the package's result (installed), against the upcast's below
        cpu_kernels.uninstall("aten::sigmoid", torch.complex32)
        after = torch.sigmoid(x)
        torch.testing.assert_close(before.to(torch.complex64), after.to(torch.complex64), rtol=2e-3, atol=2e-3)
    """))
    assert json.loads(out.splitlines()[-1]) == ["installed", 0]  # found in the cache, not built again


def test_lazy_builds_run_one_at_a_time(tmp_path):
    """Two processes that wait for their kernels (different ops): their builds never overlap."""
    cache = seed_cache(tmp_path / "cache")
    builders = Builders(cache)
    children = [_start(cache, f"""
        first_call("{name}")
        cpu_kernels.wait()
        print(cpu_kernels.status()[("aten::{name}", "complex32")])
    """) for name in ("exp", "sin")]
    assert [_finish(child).split()[-1] for child in children] == ["installed", "installed"]
    builders.wait_until_none()
    assert len(builders.seen) == 2 and builders.most == 1
    spans = sorted((entry.meta["created"] - entry.meta["build_seconds"], entry.meta["created"])
                   for entry in (_entry(cache, "aten::exp"), _entry(cache, "aten::sin")))
    assert spans[0][1] <= spans[1][0], spans
    _consistent(cache)


def test_forked_children_and_dataloader_workers_leave_a_build_alone(tmp_path):
    """While this process's build of exp runs: a forked child that exits normally (having asked for another
    kernel), and DataLoader workers (fork and spawn) computing exp too; the build lands, once, nothing is
    recorded as failed, values are right."""
    cache = seed_cache(tmp_path / "cache")
    builders = Builders(cache)
    out = _finish(_start(cache, """
        import torch.utils.data as data

        class Exponentials(data.Dataset):
            def __len__(self):
                return 4

            def __getitem__(self, index):
                x = torch.full((64,), complex(0.25 * index, 0.5), dtype=torch.complex64).to(torch.complex32)
                return torch.view_as_real(torch.exp(x).to(torch.complex64))

        def main():
            x = first_call("exp")
            deadline = time.monotonic() + 60
            while not provider._builders:  # the builder has started
                assert time.monotonic() < deadline
                time.sleep(0.05)
            child = os.fork()
            if child == 0:
                # as DataLoader's workers do: libgomp's threads do not survive a fork (plain PyTorch hangs in
                # a forked child's first parallel loop after its parent ran one)
                torch.set_num_threads(1)
                first_call("tanh")
                sys.exit(0)  # atexit handlers and all: a normal end
            assert os.waitpid(child, 0)[1] == 0
            for method in ("fork", "spawn"):
                loader = data.DataLoader(Exponentials(), batch_size=2, num_workers=2, multiprocessing_context=method)
                got = torch.cat(list(loader))
                wide = torch.stack([torch.view_as_real(torch.exp(torch.full((64,), complex(0.25 * i, 0.5))))
                                    for i in range(4)])
                torch.testing.assert_close(got, wide, rtol=2e-3, atol=2e-3)
            cpu_kernels.wait()
            print(cpu_kernels.status()[("aten::exp", "complex32")])
            wide = torch.exp(x.to(torch.complex64))
            torch.testing.assert_close(torch.exp(x).to(torch.complex64), wide, rtol=2e-3, atol=2e-3)

        if __name__ == "__main__":  # not in spawned workers, which import this file for the dataset
            main()
    """))
    assert out.split()[-1] == "installed"
    builders.wait_until_none()
    assert len(builders.seen) == 1 and _entry(cache, "aten::exp") is not None
    _consistent(cache)


def test_killed_builder_is_not_a_failed_build(tmp_path):
    """A builder killed with SIGKILL: the process that asked hears its build was interrupted, nothing is
    recorded, and the next need builds the package, removing what the killed one left."""
    cache = seed_cache(tmp_path / "cache")
    out = _finish(_start(cache, """
        first_call("exp")
        from pathlib import Path

        deadline = time.monotonic() + 120
        while not (provider._builders and list(Path(os.environ["JITDTYPES_CACHE_DIR"], "cpu_kernels").glob(".work-*"))):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(next(iter(provider._builders)), 9)  # into the build: its workspace exists
        cpu_kernels.wait()
        print(cpu_kernels.status()[("aten::exp", "complex32")])
    """))
    assert "interrupted" in out.splitlines()[-1]
    store = Store(CPU_KERNELS, cache)
    assert store.failures() == [] and _entry(cache, "aten::exp") is None
    assert len(list(store.root.glob(".work-*"))) == 1  # what the killed builder left
    out = _finish(_start(cache, """
        first_call("exp")
        cpu_kernels.wait()
        print(cpu_kernels.status()[("aten::exp", "complex32")])
    """))
    assert out.split()[-1] == "installed"
    _consistent(cache)


def test_processes_that_install_kernels_leave_nothing_in_tmpdir(tmp_path):
    """20 processes installing packages from the cache (built by the first) with a private $TMPDIR."""
    cache = seed_cache(tmp_path / "cache")
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    program = """
        x = first_call("exp")
        cpu_kernels.wait()
        print(cpu_kernels.status()[("aten::exp", "complex32")])
        wide = torch.exp(x.to(torch.complex64))
        torch.testing.assert_close(torch.exp(x).to(torch.complex64), wide, rtol=2e-3, atol=2e-3)
    """
    _finish(_start(cache, program))  # builds it (with Inductor's own cache where PyTorch keeps it)
    for _ in range(20):
        assert _finish(_start(cache, program, TMPDIR=str(scratch))).split()[-1] == "installed"
    assert sorted(os.listdir(scratch)) == []
    _consistent(cache)


def test_interrupted_warm_keeps_what_finished(tmp_path):
    """Ctrl-C during `jitdtypes warm --device cpu`: the packages built stay, nothing is half-written or
    recorded as failed, and a second warm builds only what is missing."""
    cache = seed_cache(tmp_path / "cache")
    environment = _environment(cache)
    warm = subprocess.Popen([CLI, "warm", "--dtype", "complex32", "--device", "cpu", "--ops", "exp", "--jobs", "1"],
                            env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    store = Store(CPU_KERNELS, cache)
    deadline = time.monotonic() + BUILD_TIMEOUT_S
    while not store.entries():
        assert time.monotonic() < deadline and warm.poll() is None, warm.communicate()
        time.sleep(0.2)
    os.killpg(warm.pid, signal.SIGINT)  # the terminal's Ctrl-C: warm and its builder
    warm.communicate(timeout=120)
    assert warm.returncode != 0
    first = {path.name for path in store.entries()}
    _consistent(cache)
    done = subprocess.run([CLI, "warm", "--dtype", "complex32", "--device", "cpu", "--ops", "exp"],
                          env=environment, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    assert done.returncode == 0, done.stderr[-3000:]
    assert first < {path.name for path in store.entries()}
    assert "already cached" in done.stdout and "largest build" in done.stdout
    _consistent(cache)
