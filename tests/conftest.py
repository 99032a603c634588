import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
import torch

# Without a GPU, Triton kernels run in its interpreter; the switch must be set before triton is imported
# (its own standard-library helpers are decorated at import time).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Tests never touch the user's cache: the session gets its own, unless one is given.
if not os.environ.get("JITDTYPES_CACHE_DIR"):
    os.environ["JITDTYPES_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "jitdtypes-test-cache")
# The session probes (and builds the compiled guard meanwhile) rather than read the results shipped for CI's torch
# builds: its cache then holds the results other tests seed their caches with, and tests of a first import see
# one; tests/test_shipped_discovery.py checks the shipped results against these.
os.environ.setdefault("JITDTYPES_DISCOVERY", "probe")
# generated CPU kernels are built only where a test asks (tests/test_cpu_kernels.py): a background build would
# change which path serves the other tests while they run
os.environ.setdefault("JITDTYPES_CPU_KERNELS", "off")

import jitdtypes  # noqa: E402 - after the environment above; runs (or loads) discovery once per session
from jitdtypes import native_guard  # noqa: E402

# Where this session's discovery results and compiled guard live: tests that want an empty kernel cache copy
# them from here (seed_cache), so that their processes neither probe nor compile again.
DISCOVERY_CACHE = Path(os.environ["JITDTYPES_CACHE_DIR"])
assert jitdtypes.is_enabled() or os.environ.get("JITDTYPES_DISABLE")


# The 16-bit complex dtypes this torch build has, their test ids, and how far a 16-bit result computed through
# float32 may stray from complex64 (relative, on values of order one).
TARGETS = list(jitdtypes.dtypes.COMPLEX_TARGETS)
IDS = [jitdtypes.dtypes.NAMES[d] for d in TARGETS]
TOLERANCE = {torch.complex32: 2e-2}
if jitdtypes.dtypes.BCOMPLEX32:
    TOLERANCE[jitdtypes.dtypes.BCOMPLEX32] = 8e-2


def seed_cache(root: Path) -> Path:
    """`root` as a private cache holding this session's discovery results and compiled guard, no kernels."""
    from cache_tools.store import GUARD, Store
    from jitdtypes.native_guard import build

    root.mkdir(mode=0o700, exist_ok=True)
    shutil.copytree(DISCOVERY_CACHE / "discovery", root / "discovery", ignore=shutil.ignore_patterns("*.lock", ".work-*"))
    guard = Store(GUARD, DISCOVERY_CACHE).directory(build.key())
    if guard.is_dir():
        target = Store(GUARD, root).directory(build.key())
        target.parent.mkdir(mode=0o700, parents=True)
        shutil.copytree(guard, target)
    return root


# The `jitdtypes` command of the environment running the tests (next to its python, whether or not that
# environment is activated), else the one on PATH.
_BESIDE = Path(sys.executable).with_name("jitdtypes")
CLI = str(_BESIDE) if _BESIDE.is_file() else (shutil.which("jitdtypes") or "jitdtypes")


def enable_or_skip(choice: str) -> None:
    """jitdtypes.enable(choice); the test is skipped where that guard cannot be had (no compiler, a failed
    build)."""
    try:
        jitdtypes.enable(choice)
    except native_guard.GuardUnavailable as exc:
        pytest.skip(f"no {choice} guard in this session: {exc}")
    if jitdtypes.guard() != choice:
        pytest.skip(f"no {choice} guard in this session")


@pytest.fixture(params=["compiled", "python"])
def guard(request):
    """Runs a test under each dispatch guard (skipped for the compiled one where it cannot be built)."""
    enable_or_skip(request.param)
    yield request.param
    jitdtypes.enable(os.environ.get("JITDTYPES_GUARD") or "auto")


@pytest.fixture
def opted_in(request):
    """complex64 or complex128 (the test's indirect parameter) compiled planar for the test, opted out after."""
    dtype = request.param
    jitdtypes.set_compile_complex(dtype)
    yield dtype
    jitdtypes.set_compile_complex()
