"""The two dispatch guards: which one is chosen, the fallback without a compiler, the compiled guard's
build under concurrency, and a cache that cannot be trusted. (Bit identity for other dtypes under both
guards: tests/test_do_no_harm.py and tests/test_fallback.py.)"""

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes, native_guard
from cache_tools.store import GUARD, LIBRARY, WORK, Store
from jitdtypes.native_guard import build
from tests.conftest import CLI, seed_cache

BUILDING = "building the compiled dispatch guard with the C++ compiler"
IN_THE_BACKGROUND = "building the compiled dispatch guard in the background"
FALLING_BACK = "using the Python dispatch guard"

_REPORT = """
import torch, jitdtypes
from jitdtypes import native_guard
z = torch.randn(4, dtype=torch.complex64).to(torch.complex32)
right = (torch.exp(z).to(torch.complex64) - torch.exp(z.to(torch.complex64))).abs().max().item() < 1e-2
library = str(native_guard.info().get("path", ""))
loaded = bool(library) and any(library in line for line in open("/proc/self/maps"))
print(jitdtypes.guard(), right, loaded)
"""

compiled_only = pytest.mark.skipif(jitdtypes.guard() != "compiled", reason="no compiled guard in this session")


def _run(cache: Path, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache)}
    environment.pop("JITDTYPES_GUARD", None)
    environment.update(env)
    return subprocess.run([sys.executable, "-c", _REPORT], env=environment, capture_output=True, text=True,
                          timeout=900)


def _no_compiler(tmp_path: Path) -> dict:
    """An environment where neither $CXX nor PATH leads to a C++ compiler."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return {"CXX": "", "PATH": str(empty)}


@compiled_only
def test_the_compiled_guard_is_the_default_and_typed_for_every_cpu_override():
    registration = jitdtypes.installer.registration()
    assert registration.guard == "compiled" and registration.compiled is not None
    cpu_keys = [(name, key) for name, key in registration.keys if key in ("CPU", "AutogradCPU")]
    untyped = [k for k in cpu_keys if k not in registration.typed]
    assert len(cpu_keys) > 300 and untyped == []
    assert {row["guard"] for row in jitdtypes.stats()} == {"compiled"}


def test_switching_guards_in_process_keeps_results():
    z = torch.randn(5, dtype=torch.complex64).to(torch.complex32)
    x = torch.randn(5)
    results = {}
    try:
        for guard in ("python", "compiled"):
            jitdtypes.enable(guard)
            if jitdtypes.guard() != guard:
                pytest.skip("no compiled guard in this session")
            results[guard] = (torch.exp(z), z * 2, x * 2, (x.half() * 1j).dtype)
    finally:
        jitdtypes.enable(os.environ.get("JITDTYPES_GUARD") or "auto")
    python, compiled = results["python"], results["compiled"]
    assert python[3] == compiled[3] == torch.complex32  # float16 times a complex number is complex32
    for a, b in zip(python[:3], compiled[:3]):
        assert a.dtype == b.dtype and torch.equal(a.view(torch.uint8) if a.is_complex() else a,
                                                  b.view(torch.uint8) if b.is_complex() else b)


def test_environment_variable_chooses_the_guard(tmp_path):
    cache = seed_cache(tmp_path / "cache")
    python = _run(cache, JITDTYPES_GUARD="python")
    assert python.returncode == 0, python.stderr[-2000:]
    assert python.stdout.split() == ["python", "True", "False"]
    bogus = _run(cache, JITDTYPES_GUARD="fast")
    assert bogus.returncode != 0 and "JITDTYPES_GUARD must be 'python' or 'compiled', not 'fast'" in bogus.stderr


def test_without_a_compiler_the_python_guard_takes_over_with_one_warning(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copytree(seed_cache(tmp_path / "seed") / "discovery", cache / "discovery")  # no guard built yet
    for env in ({"CXX": str(tmp_path / "no-such-compiler")}, _no_compiler(tmp_path)):
        run = _run(cache, **env)
        assert run.returncode == 0, run.stderr[-2000:]
        assert run.stdout.split() == ["python", "True", "False"]
        assert run.stderr.count(FALLING_BACK) == 1 and "no C++ compiler found" in run.stderr
        assert BUILDING not in run.stderr  # no build is announced without a compiler to run it
    forced = _run(cache, JITDTYPES_GUARD="compiled", **_no_compiler(tmp_path))
    assert forced.returncode != 0
    assert "GuardUnavailable: JITDTYPES_GUARD=compiled, but the compiled guard is not available" in forced.stderr


def _failing_compiler(path: Path, runs: Path) -> Path:
    """A compiler that counts its runs in `runs` and fails as g++ does, with a note and an error line."""
    path.write_text(f"#!/bin/sh\necho run >> {runs}\n"
                    "echo 'In file included from guard.cpp:18:' >&2\n"
                    "echo 'torch_compat.h:7:3: error: this compiler refuses' >&2\n"
                    "echo '    7 |   nothing' >&2\nexit 3\n")
    path.chmod(0o755)
    return path


def _cli(cache: Path, *args, **env) -> subprocess.CompletedProcess:
    environment = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache), **env}
    environment.pop("JITDTYPES_GUARD", None)
    return subprocess.run([CLI, *args], env=environment, capture_output=True, text=True, timeout=900)


@pytest.mark.machinery
def test_a_failing_build_falls_back_with_the_compiler_message_and_is_remembered(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copytree(seed_cache(tmp_path / "seed") / "discovery", cache / "discovery")
    runs = tmp_path / "runs"
    failing = str(_failing_compiler(tmp_path / "failing-c++", runs))
    compiler_runs = lambda: len(runs.read_text().split()) if runs.exists() else 0  # noqa: E731

    # nothing to probe: the first import does not wait; the build runs in a process of its own, and fails
    first = _run(cache, CXX=failing)
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.split() == ["python", "True", "False"]
    assert first.stderr.count(IN_THE_BACKGROUND) == 1 and FALLING_BACK not in first.stderr
    assert _built_in_the_background(cache) == "failed" and compiler_runs() == 1
    assert not list((cache / "guard").glob("*/*/*.so"))  # nothing half-built is left as an entry

    again = _run(cache, CXX=failing)  # remembered: no compiler run, no build announced, the reason quoted
    assert again.stdout.split() == ["python", "True", "False"] and compiler_runs() == 1
    assert again.stderr.count(FALLING_BACK) == 1 and BUILDING not in again.stderr
    assert "exited with 3: torch_compat.h:7:3: error: this compiler refuses" in again.stderr  # the error line
    assert "is not retried" in again.stderr

    info = _cli(cache, "cache", "info", CXX=failing)
    assert info.returncode == 0 and "build failed" in info.stdout and "this compiler refuses" in info.stdout
    ops = _cli(cache, "ops", "--path", "upcast", CXX=failing)
    assert ops.returncode == 0, ops.stderr[-2000:]
    assert ops.stdout.splitlines()[0].startswith("guard: python (the compiled guard is not available: ")
    assert "this compiler refuses" in ops.stdout.splitlines()[0] and compiler_runs() == 1

    other = _failing_compiler(tmp_path / "other-c++", runs)  # another compiler is tried (in the background)
    assert _run(cache, CXX=str(other)).stdout.split()[0] == "python"
    _wait_until(lambda: compiler_runs() == 2)
    warm = _cli(cache, "warm", "--dtype", "complex32", "--device", "cpu", "--ops", "exp", CXX=failing)
    assert warm.returncode == 0 and compiler_runs() == 3  # warm retries
    assert "guard: python (the compiled guard is not available: " in warm.stdout
    clean = _cli(cache, "cache", "clean", "--stale", CXX=failing)
    assert clean.returncode == 0 and "failed guard build" in clean.stdout
    assert _run(cache, CXX=failing).stdout.split()[0] == "python"
    _wait_until(lambda: compiler_runs() == 4)  # retried after clean


def _wait_until(condition, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.2)


def _built_in_the_background(cache: Path, timeout_s: float = 900) -> str:
    """Wait for the detached build of this torch build's guard in `cache`: "built" or "failed"."""
    store = Store(GUARD, cache)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if (store.directory(build.key()) / LIBRARY).is_file():
            return "built"
        if store.failure_path(build.key()).is_file():
            return "failed"
        time.sleep(0.5)
    raise TimeoutError(f"no guard build finished in {timeout_s} s")


@pytest.mark.machinery
@compiled_only
def test_an_import_that_probes_nothing_builds_the_guard_for_the_next_one(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    shutil.copytree(seed_cache(tmp_path / "seed") / "discovery", cache / "discovery")  # no guard built yet
    started = time.monotonic()
    first = _run(cache)
    waited = time.monotonic() - started
    assert first.returncode == 0, first.stderr[-2000:]
    assert first.stdout.split() == ["python", "True", "False"]
    assert first.stderr.count(IN_THE_BACKGROUND) == 1 and BUILDING not in first.stderr
    assert _built_in_the_background(cache) == "built"
    assert time.monotonic() - started > waited  # the build outlived the import that started it
    second = _run(cache)
    assert second.stdout.split() == ["compiled", "True", "True"] and not second.stderr.strip()
    forced = _run(cache, JITDTYPES_GUARD="compiled")  # asked for explicitly, it is waited for (here: loaded)
    assert forced.stdout.split() == ["compiled", "True", "True"]


@pytest.mark.machinery
@compiled_only
def test_eight_processes_importing_on_an_empty_cache_build_the_guard_once(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache)}
    env.pop("JITDTYPES_GUARD", None)
    processes = [subprocess.Popen([sys.executable, "-c", _REPORT], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(8)]
    outputs = [p.communicate(timeout=1200) for p in processes]
    assert [p.returncode for p in processes] == [0] * 8, [err[-1500:] for _, err in outputs]
    assert [out.split() for out, _ in outputs] == [["compiled", "True", "True"]] * 8
    stderr = "".join(err for _, err in outputs)
    assert stderr.count(BUILDING) == 1 and stderr.count("probing which ATen kernels") == 1
    entries = Store(GUARD, cache).entries()
    assert len(entries) == 1 and not list((cache / "guard").glob(f"{WORK}*"))


def _marker_library(tmp_path: Path, marker: Path) -> bytes:
    """A valid shared library that, if it were ever loaded, would create `marker`."""
    source = tmp_path / "marker.c"
    source.write_text('#include <stdio.h>\n__attribute__((constructor)) static void mark(void) '
                      f'{{ FILE* f = fopen("{marker}", "w"); if (f) fclose(f); }}\n')
    compiler = shutil.which("cc") or shutil.which("gcc")
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", str(tmp_path / "marker.so")], check=True)
    return (tmp_path / "marker.so").read_bytes()


def _seeded_guard(tmp_path: Path) -> tuple[Path, Path]:
    cache = seed_cache(tmp_path / "cache")
    (entry,) = Store(GUARD, cache).entries()
    return cache, entry / LIBRARY


@compiled_only
def test_a_tampered_guard_library_is_never_loaded(tmp_path):
    cache, library = _seeded_guard(tmp_path)
    marker = tmp_path / "the-tampered-library-ran"
    library.write_bytes(_marker_library(tmp_path, marker))
    run = _run(cache, **_no_compiler(tmp_path))  # so the rebuild fails and the process must do without
    assert run.returncode == 0, run.stderr[-2000:]
    assert not marker.exists()
    assert "damaged compiled guard" in run.stderr and "does not match its recorded sha256" in run.stderr
    assert run.stdout.split() == ["python", "True", "False"]


@compiled_only
def test_a_guard_entry_writable_by_others_is_never_loaded(tmp_path):
    cache, library = _seeded_guard(tmp_path)
    library.parent.chmod(0o770)
    run = _run(cache, **_no_compiler(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    assert "compiled guard cache is not usable" in run.stderr and "writable by group or others" in run.stderr
    assert run.stdout.split() == ["python", "True", "False"]  # the valid library there was not loaded either


@pytest.mark.machinery
@compiled_only
def test_a_guard_cache_that_cannot_be_trusted_still_gets_a_private_build(tmp_path):
    cache, library = _seeded_guard(tmp_path)
    (cache / "guard").chmod(0o777)
    run = _run(cache)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "building it in a private temporary directory" in run.stderr
    assert run.stdout.split() == ["compiled", "True", "True"]


@compiled_only
@pytest.mark.skipif(dtypes.BCOMPLEX32 is None, reason="torch without bcomplex32")
def test_copy_from_a_conjugated_bcomplex32_view_works_under_the_compiled_guard():
    z = torch.randn(6, dtype=torch.complex64).to(dtypes.BCOMPLEX32)
    destination = torch.empty(6, dtype=dtypes.BCOMPLEX32)
    destination.copy_(z.conj())
    assert torch.equal(torch.view_as_real(destination), torch.view_as_real(z.conj().resolve_conj()))
    strided = torch.empty(12, dtype=dtypes.BCOMPLEX32)[::2]
    strided.copy_(z.conj())
    assert torch.equal(torch.view_as_real(strided), torch.view_as_real(destination))


@compiled_only
def test_signature_keys_name_what_the_typed_table_lists():
    assert native_guard.signature_key("aten::mul.Tensor") == "Tensor,Tensor->Tensor"
    assert native_guard.signature_key("aten::add_.Tensor") == "!Tensor,Tensor,Scalar->!Tensor"
    assert native_guard.signature_key("aten::var_mean.correction") == "Tensor,int[]?,Scalar?,bool->(Tensor,Tensor)"
