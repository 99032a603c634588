"""Builds guard.cpp into a shared library with the C++ compiler the machine has, once per torch build.

Key = sha256(format, guard.cpp and its headers, torch version and git revision, C++ ABI, platform): check the store, lock,
check again, build in a private workspace, install. Without a usable compiler or cache the caller falls back.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from jitdtypes.cache_tools.guard_store import LIBRARY, GuardEntry, GuardStore
from jitdtypes.cache_tools.store import CorruptEntry, InsecureEntry

log = logging.getLogger("jitdtypes")

FORMAT = 1
SOURCE = Path(__file__).with_name("guard.cpp")
HEADERS = (Path(__file__).with_name("typed_signatures.h"), Path(__file__).with_name("upcast.h"))
COMPILE_TIMEOUT_S = 600


class BuildError(RuntimeError):
    """The guard could not be built (no compiler, or the compiler failed)."""


def key() -> str:
    torch_dir = Path(torch.__file__).parent
    parts = [
        str(FORMAT), *(hashlib.sha256(path.read_bytes()).hexdigest() for path in (SOURCE, *HEADERS)),
        torch.__version__,
        torch.version.git_version or "", str(torch._C._GLIBCXX_USE_CXX11_ABI), sys.platform, platform.machine(),
        str(torch_dir),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:20]


def compiler() -> list[str]:
    """The C++ compiler command: $CXX when set, else the first of c++, g++, clang++ on PATH."""
    configured = os.environ.get("CXX", "").strip()
    candidates = [shlex.split(configured)] if configured else [["c++"], ["g++"], ["clang++"]]
    for command in candidates:
        found = shutil.which(command[0])
        if found:
            return [found, *command[1:]]
    raise BuildError(f"no C++ compiler found ({'CXX=' + configured if configured else 'c++, g++, clang++ on PATH'})")


def compile_command(output: Path) -> list[str]:
    torch_dir = Path(torch.__file__).parent
    include, lib = torch_dir / "include", torch_dir / "lib"
    link = ["-shared", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    return [
        *compiler(), "-O2", "-std=c++20", "-fPIC", "-fvisibility=hidden",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        "-isystem", str(include), "-isystem", str(include / "torch" / "csrc" / "api" / "include"),
        str(SOURCE), "-o", str(output), *link, f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}",
    ]


def _build_into(workspace: Path) -> dict:
    command = compile_command(workspace / LIBRARY)
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BuildError(f"{command[0]} failed to run: {exc}") from exc
    if done.returncode != 0:
        raise BuildError(f"{command[0]} exited with {done.returncode}:\n{(done.stderr or done.stdout)[-3000:]}")
    version = subprocess.run([command[0], "--version"], capture_output=True, text=True, check=False).stdout
    return {"torch": torch.__version__, "compiler": command[0], "compiler_version": version.splitlines()[0:1],
            "build_seconds": round(time.monotonic() - started, 2), "format": FORMAT}


def _announce() -> None:
    log.warning("jitdtypes: building the compiled dispatch guard with the C++ compiler "
                "(once per torch build; about 20 s)")


def ensure(store: GuardStore | None = None) -> tuple[Path, dict]:
    """The path of a verified guard library for this torch build, built if needed; BuildError otherwise.

    An entry that could have been written by someone else, or a cache that cannot be written, makes the
    library live in a private temporary directory for this process instead (one warning)."""
    store = store or GuardStore()
    entry_key = key()
    try:
        entry = _read(store, entry_key, quietly=True)
        if entry is None:
            with store.lock(entry_key):
                entry = _read(store, entry_key, quietly=False)
                if entry is None:
                    _announce()
                    workspace = store.workspace()
                    try:
                        entry = store.install(entry_key, workspace, _build_into(workspace))
                    finally:
                        shutil.rmtree(workspace, ignore_errors=True)
        return entry.library, entry.meta
    except (InsecureEntry, OSError) as exc:
        log.warning("jitdtypes: the compiled guard cache is not usable (%s); building it in a private "
                    "temporary directory for this process", exc)
        return _build_private()


def _read(store: GuardStore, entry_key: str, quietly: bool) -> GuardEntry | None:
    """The entry, or None when absent or damaged (replaced by the build that follows, under the lock)."""
    try:
        return store.read(entry_key)
    except CorruptEntry as exc:
        if not quietly:
            log.warning("jitdtypes: damaged compiled guard (%s): it is rebuilt", exc)
        return None


_private_builds: list = []  # kept for the life of the process: the library stays loaded


def _build_private() -> tuple[Path, dict]:
    workspace = tempfile.TemporaryDirectory(prefix="jitdtypes-guard-")
    _private_builds.append(workspace)
    _announce()
    meta = _build_into(Path(workspace.name))
    return Path(workspace.name) / LIBRARY, meta
