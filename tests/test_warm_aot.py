"""`jitdtypes warm --device cuda --arch sm_90` on a machine without a GPU, and the proof that a cache it warmed
means no compilation: the Triton cache key of the AOT path is the one Triton's runtime path computes, and a
program run against an imported (or layered) warm cache compiles nothing (Triton's compilation listener).

Triton's runtime path runs here up to the launch (tests/triton_runtime.py): what a GPU adds beyond it, loading
the cubin and launching, is not exercised. Each step runs in its own process without TRITON_INTERPRET."""

import json
import os
import subprocess
import sys

import pytest

from jitdtypes.triton_kernels import aot
from cache_tools import inventory, layers
from tests.conftest import CLI, seed_cache
from tests.triton_runtime import OPS

RUNTIME = [sys.executable, "-m", "tests.triton_runtime"]


def _run(command, cache, triton_cache, **env):
    environment = {k: v for k, v in os.environ.items() if k not in ("TRITON_INTERPRET", layers.ENV_VAR)}
    environment.update(JITDTYPES_CACHE_DIR=str(cache), TRITON_CACHE_DIR=str(triton_cache), **env)
    run = subprocess.run(command, capture_output=True, text=True, env=environment, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return run.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def warmed(tmp_path_factory):
    """(cache warmed for sm_90 without a GPU, the Triton cache it compiled into, its export, the warm summary)."""
    base = tmp_path_factory.mktemp("warm")
    cache, triton_cache = seed_cache(base / "cache"), base / "triton"
    summary = _run([CLI, "warm", "--dtype", "complex32", "--device", "cuda", "--arch", "sm_90",
                    "--ops", ",".join(OPS), "--jobs", "2"], cache, triton_cache)
    archive = base / "warm.tar.gz"
    _run([CLI, "cache", "export", str(archive), "--arch", "sm_90"], cache, triton_cache)
    return cache, triton_cache, archive, summary


def test_warm_compiles_every_variant_for_the_arch_and_records_its_triton_entries(warmed):
    cache, triton_cache, _, summary = warmed
    assert "warm complex32 on cuda sm_90: 4 kernels: generated 4, already cached 0, compiled " in summary
    assert "failed 0" in summary
    records = inventory.scan(cache, ["kernels"])
    assert len(records) == 4 and all(r.problem is None for r in records)
    assert {r.meta["device"] for r in records} == {aot.device_kind(aot.ARCHES["sm_90"])} == {"cuda-sm90"}
    for record in records:
        assert len(record.meta["triton_cache"]) >= 2, record.key  # sizes that are multiples of 16, and not
        for triton in record.meta["triton_cache"]:
            for name in triton["files"]:  # the same bytes Triton wrote to its own cache
                kept = record.directory / "triton" / triton["dir"] / name
                assert kept.read_bytes() == (triton_cache / triton["dir"] / name).read_bytes()
            assert any(name.endswith(".cubin") for name in triton["files"])


def test_aot_cache_key_equals_the_runtime_paths(tmp_path):
    """Per launch, the Triton cache directory (base32 of sha256 of Triton's cache key) that triton.compile picks
    for the AOT path's recorded launch and for JITFunction.run's own launch of the same call."""
    cache = seed_cache(tmp_path / "cache")
    result = json.loads(_run([*RUNTIME, "keys", str(tmp_path / "runtime-triton")], cache,
                             tmp_path / "aot-triton"))
    assert result["runtime"] and set(result["runtime"]) == set(result["aot"])


def test_a_program_against_an_imported_cache_compiles_nothing(warmed, tmp_path):
    _, _, archive, _ = warmed
    cache, triton_cache = seed_cache(tmp_path / "cache"), tmp_path / "empty-triton"
    _run([CLI, "cache", "import", str(archive)], cache, triton_cache)
    result = json.loads(_run([*RUNTIME, "program"], cache, triton_cache))
    assert result["compiled"] == 0 and result["cache_hits"] >= 4
    assert result["engine"].get("generated", 0) == 0 and result["engine"]["triton_entries_installed"] >= 1


def test_a_program_against_a_shared_layer_compiles_nothing(warmed, tmp_path):
    _, _, archive, _ = warmed
    layer, triton_cache = seed_cache(tmp_path / "layer"), tmp_path / "empty-triton"
    _run([CLI, "cache", "import", str(archive)], layer, triton_cache)
    for path in [layer, *layer.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # shared read-only, as an admin would
    cache = seed_cache(tmp_path / "cache")
    result = json.loads(_run([*RUNTIME, "program"], cache, triton_cache,
                             **{layers.ENV_VAR: str(layer)}))
    assert result["compiled"] == 0 and result["cache_hits"] >= 4
    assert result["engine"]["read_from_layer"] == 4 and result["engine"].get("generated", 0) == 0
    assert inventory.scan(cache, ["kernels"]) == []


def test_the_same_program_against_an_empty_cache_compiles(tmp_path):
    """The counter above can fail: without a warm cache, the same calls compile."""
    cache = seed_cache(tmp_path / "cache")
    result = json.loads(_run([*RUNTIME, "program"], cache, tmp_path / "empty-triton"))
    assert result["compiled"] >= 3 and result["engine"]["generated"] == 4
