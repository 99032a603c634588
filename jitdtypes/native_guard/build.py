"""Builds guard.cpp into a shared library with the C++ compiler the machine has, once per torch build.

Key = cache_key(GUARD, guard.cpp and its headers, {format, torch version and git revision, C++ ABI, platform,
torch's directory}); the store's check, lock, check again, a build in its private workspace, put in place
(cache_tools/store.py). Without a usable compiler or cache the caller falls back.

A failed build is remembered for its key and compiler (the store's `<key>.failed.json`): a failed compile costs
as much as a build and was repeated on every import. `ensure(retry=True)` (`jitdtypes warm`) builds again, and
so does the next import once `jitdtypes cache clean --stale` removed the record or another compiler is chosen.
"""

from __future__ import annotations

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

from cache_tools.store import (GUARD, LIBRARY, BuildFailed, InsecureEntry, RememberedFailure, Store, cache_key,
                               sha256)

log = logging.getLogger("jitdtypes")

FORMAT = 1
SOURCE = Path(__file__).with_name("guard.cpp")
HEADERS = tuple(sorted(Path(__file__).parent.glob("*.h")))  # every header guard.cpp includes
COMPILE_TIMEOUT_S = 600


class BuildError(RuntimeError):
    """The guard could not be built (no compiler, or the compiler failed)."""


class CompileError(BuildError, BuildFailed):
    """The compiler failed: remembered for this key and compiler."""


def key() -> str:
    content = " ".join(f"{path.name}:{sha256(path)}" for path in (SOURCE, *HEADERS))
    return cache_key(GUARD, content, {
        "format": FORMAT, "torch": torch.__version__, "git": torch.version.git_version or "",
        "cxx11_abi": int(torch._C._GLIBCXX_USE_CXX11_ABI), "platform": sys.platform, "machine": platform.machine(),
        "torch_dir": str(Path(torch.__file__).parent)})


def compiler() -> list[str]:
    """The C++ compiler command: $CXX when set, else the first of c++, g++, clang++ on PATH."""
    configured = os.environ.get("CXX", "").strip()
    candidates = [shlex.split(configured)] if configured else [["c++"], ["g++"], ["clang++"]]
    for command in candidates:
        found = shutil.which(command[0])
        if found:
            return [found, *command[1:]]
    raise BuildError(f"no C++ compiler found ({'CXX=' + configured if configured else 'c++, g++, clang++ on PATH'})")


def compile_command(output: Path, cxx: list[str] | None = None) -> list[str]:
    torch_dir = Path(torch.__file__).parent
    include, lib = torch_dir / "include", torch_dir / "lib"
    link = ["-shared", "-undefined", "dynamic_lookup"] if sys.platform == "darwin" else ["-shared"]
    return [
        *(cxx or compiler()), "-O2", "-std=c++20", "-fPIC", "-fvisibility=hidden",
        f"-D_GLIBCXX_USE_CXX11_ABI={int(torch._C._GLIBCXX_USE_CXX11_ABI)}",
        "-isystem", str(include), "-isystem", str(include / "torch" / "csrc" / "api" / "include"),
        str(SOURCE), "-o", str(output), *link, f"-L{lib}", "-lc10", "-ltorch_cpu", f"-Wl,-rpath,{lib}",
    ]


def first_errors(output: str, count: int = 3) -> list[str]:
    """The compiler's first `count` error lines (gcc and clang: `file:line:col: error: ...`, the linker:
    `undefined reference`), jitdtypes' own directory left out of paths; its first lines when none is one."""
    lines = [line.strip().replace(f"{SOURCE.parent}{os.sep}", "") for line in output.splitlines() if line.strip()]
    errors = [line for line in lines if "error:" in line or "undefined reference" in line]
    return (errors or lines)[:count]


def _build_into(workspace: Path, cxx: list[str]) -> dict:
    command = compile_command(workspace / LIBRARY, cxx)
    started = time.monotonic()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CompileError(f"{command[0]} failed to run: {exc}", {"compiler": cxx, "torch": torch.__version__}) from exc
    if done.returncode != 0:
        output = done.stderr or done.stdout
        raise CompileError(f"{command[0]} exited with {done.returncode}: " + " | ".join(first_errors(output)),
                           {"compiler": cxx, "torch": torch.__version__, "output": output[-6000:]})
    version = subprocess.run([command[0], "--version"], capture_output=True, text=True, check=False).stdout
    return {"torch": torch.__version__, "compiler": command[0], "compiler_version": version.splitlines()[0:1],
            "build_seconds": round(time.monotonic() - started, 2), "format": FORMAT}


def _announce() -> None:
    log.warning("jitdtypes: building the compiled dispatch guard with the C++ compiler "
                "(once per torch build; about 20 s)")


def ensure(store: Store | None = None, retry: bool = False) -> tuple[Path, dict]:
    """The path of a verified guard library for this torch build, built if needed; BuildError otherwise (no
    compiler, a failed build, or, unless `retry`, a failed build of this key with this compiler remembered).

    An entry that could have been written by someone else, or a cache that cannot be written, makes the
    library live in a private temporary directory for this process instead (one warning)."""
    store = store or Store(GUARD)

    def build_library(workspace: Path) -> dict:
        cxx = compiler()  # none: a BuildError, not a failed build to remember
        _announce()
        return _build_into(workspace, cxx)

    try:
        entry, _ = store.ensure(key(), build_library, retry=retry,
                                failure_holds=lambda record: record.get("compiler") == compiler(),
                                damaged=lambda exc: log.warning("jitdtypes: damaged compiled guard (%s): it is rebuilt",
                                                                exc))
    except RememberedFailure as exc:
        raise BuildError(f"{exc.record.get('error')} (the build for this torch build and compiler failed at "
                         f"{exc.when} and is not retried: `jitdtypes warm` or `jitdtypes cache clean --stale` "
                         "retries it)") from None
    except (InsecureEntry, OSError) as exc:
        log.warning("jitdtypes: the compiled guard cache is not usable (%s); building it in a private "
                    "temporary directory for this process", exc)
        return _build_private()
    return entry.directory / LIBRARY, entry.meta


def would_build(store: Store | None = None) -> bool:
    """Whether `ensure` would run the compiler now: no library for this key, a compiler at hand, and no failed
    build of this key with it remembered."""
    store = store or Store(GUARD)
    try:
        # existence only: `ensure` verifies the entry right after, and a damaged one is rebuilt there
        if (store.directory(key()) / LIBRARY).is_file():
            return False
        cxx = compiler()
        failure = store.read_failure(key())
    except (BuildError, InsecureEntry, OSError):
        return False
    return failure is None or failure.get("compiler") != cxx


def build_detached() -> None:
    """Start `ensure` in a process of its own that outlives this one: the next import finds the library built
    (an interrupted build leaves only its private workspace, and the next one starts over)."""
    subprocess.Popen([sys.executable, "-m", "jitdtypes.native_guard.build"],
                     env=dict(os.environ, JITDTYPES_DISABLE="1"), stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)


_private_builds: list = []  # kept for the life of the process: the library stays loaded


def _build_private() -> tuple[Path, dict]:
    cxx = compiler()
    workspace = tempfile.TemporaryDirectory(prefix="jitdtypes-guard-")
    _private_builds.append(workspace)
    _announce()
    meta = _build_into(Path(workspace.name), cxx)
    return Path(workspace.name) / LIBRARY, meta


if __name__ == "__main__":  # build_detached's process
    from jitdtypes.native_guard import build

    try:
        build.ensure()
    except BuildError:
        sys.exit(1)  # remembered by ensure: the next import says why
