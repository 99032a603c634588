"""`jitdtypes warm` and `jitdtypes cache ...` through the console script, on a private cache directory."""

import json
import math
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from cache_tools.store import Store
from jitdtypes import discovery, dtypes
from tests.conftest import CLI, seed_cache

# bcomplex32 where torch has it (2.14+), else complex32
LAST_DTYPE = "bcomplex32" if "bcomplex32" in dtypes.BY_NAME else "complex32"


def jitdtypes_cli(cache: Path, *args, check_rc=0):
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache)}
    run = subprocess.run([CLI, *args], env=env, capture_output=True, text=True, timeout=600)
    if check_rc is not None:
        assert run.returncode == check_rc, run.stdout + run.stderr
    return run


@pytest.fixture
def cache(tmp_path):
    """A cache holding this torch build's discovery results and no kernels."""
    return seed_cache(tmp_path / "cache")


def _warm(cache, ops="exp,mul,cumsum"):
    return jitdtypes_cli(cache, "warm", "--dtype", "all", "--device", "cpu", "--ops", ops)


def test_warm_generates_then_finds_everything_cached(cache):
    first = _warm(cache)
    summary = first.stdout.strip().splitlines()[-1]
    names = ",".join(sorted(n for n, d in dtypes.BY_NAME.items() if d.is_complex))
    assert summary.startswith(f"warm {names} on cpu: ") and "failed 0" in summary
    total = int(summary.split(": ")[1].split()[0])
    assert f"generated {total}, already cached 0" in summary and total >= 6
    # piped, progress is a plain line on stderr every ceil(total / 15) kernels
    progress = [re.fullmatch(r"warm cpu: (\d+)/(\d+) kernels, [\d.]+s elapsed, ETA [\d.]+s", line)
                for line in first.stderr.splitlines() if line.startswith("warm cpu: ")]
    every = math.ceil(total / 15)
    assert progress and all(progress), first.stderr
    assert [(int(m[1]), int(m[2])) for m in progress] == [(done, total) for done in range(every, total, every)]
    second = _warm(cache).stdout.strip().splitlines()[-1]
    assert f"generated 0, already cached {total}" in second
    bad = jitdtypes_cli(cache, "warm", "--dtype", "complex32", "--ops", "nonsense", check_rc=2)
    assert "unknown ops" in bad.stderr


def test_info_list_show(cache):
    _warm(cache, ops="exp,sum")
    info = json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)
    kernels = info["kinds"]["kernels"]
    assert info["dir"] == str(cache) and kernels["entries"] > 0 and info["bytes"] > kernels["bytes"] > 0
    assert info["damaged"] == 0 and [v for v in info["versions"] if v["kind"] == "kernels"][0]["entries"] == \
        kernels["entries"]
    assert info["discovery"] and info["discovery"][0]["device_type"] == "cpu"
    text = jitdtypes_cli(cache, "cache", "info").stdout
    assert text.splitlines()[0] == f"directory  {cache}" and f"{info['entries']} entries" in text

    rows = json.loads(jitdtypes_cli(cache, "cache", "list", "--json", "--kind", "kernels").stdout)
    assert len(rows) == kernels["entries"]
    for row in rows:
        assert {"key", "op", "dtype", "path", "bytes", "last_used"} <= row.keys()
        assert Path(row["path"]).is_file() and row["bytes"] > 0 and row["op"] in ("exp", "sum")
    last = LAST_DTYPE
    only = json.loads(jitdtypes_cli(cache, "cache", "list", "--json", "--dtype", last, "--op", "exp").stdout)
    assert only and all(r["dtype"] == last and r["op"] == "exp" for r in only)
    table = jitdtypes_cli(cache, "cache", "list").stdout.splitlines()
    assert table[0].split()[:4] == ["key", "family", "op", "dtype"] and table[-1] == f"{info['entries']} entries"

    # an elementwise module holds its rendered @triton.jit kernel (a reduction's imports its kernels)
    row = next(r for r in rows if r["op"] == "exp")
    shown = jitdtypes_cli(cache, "cache", "show", row["key"][:12]).stdout
    meta = json.loads(shown.split("\n\n", 1)[0])
    assert meta["key"] == row["key"] and "@triton.jit" in shown and "def run(" in shown
    jitdtypes_cli(cache, "cache", "show", "ffffffffffff", check_rc=2)


def test_clean_by_dtype_age_staleness_and_all(cache):
    _warm(cache, ops="exp")
    rows = json.loads(jitdtypes_cli(cache, "cache", "list", "--json").stdout)
    dry = jitdtypes_cli(cache, "cache", "clean", "--dtype", "complex32", "--dry-run").stdout
    assert "would remove" in dry and len(json.loads(jitdtypes_cli(cache, "cache", "list", "--json").stdout)) == len(rows)
    removed = jitdtypes_cli(cache, "cache", "clean", "--dtype", "complex32").stdout
    complex32_bytes = sum(r["bytes"] for r in rows if r["dtype"] == "complex32")
    assert removed.strip().splitlines()[-1] == (f"removed {sum(r['dtype'] == 'complex32' for r in rows)} entries, "
                                                f"{complex32_bytes:,} bytes freed")
    if LAST_DTYPE == "complex32":  # torch without bcomplex32: nothing is left to age or go stale
        _warm(cache, ops="exp")
    left = json.loads(jitdtypes_cli(cache, "cache", "list", "--json", "--kind", "kernels").stdout)
    assert left and (LAST_DTYPE == "complex32" or all(r["dtype"] == "bcomplex32" for r in left))

    # an entry made by another torch version is stale; entries unused for an hour are old
    meta_path = Path(left[0]["path"]).with_name("meta.json")
    meta = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**meta, "torch": "1.0.0", "last_used": time.time() - 7200}))
    (cache / "discovery" / "cpu-torch1.0.0-0000000000000000.json").write_text('{"torch": "1.0.0"}')  # old layout
    _entry(cache, "discovery", "0" * 64, f"cpu-torch1.0.0-{'0' * 64}.json", {"torch": "1.0.0"})  # another build's
    current_discovery = {discovery.build_key(device) for device in ("cpu", "cuda")}
    other_build = _entry(cache, "guard", "0" * 64, "libjitdtypes_guard.so", {"torch": "1.0.0"})  # another torch's
    current_guards = {p.name for p in Store("guard", cache).entries()} - {other_build.name}
    stale = jitdtypes_cli(cache, "cache", "clean", "--stale").stdout
    assert "stale" in stale and meta["key"] not in json.dumps(json.loads(
        jitdtypes_cli(cache, "cache", "list", "--json").stdout))
    assert "torch1.0.0" in stale and {p.name for p in Store("discovery", cache).entries()} <= current_discovery
    assert len(Store("discovery", cache).entries()) == 1  # the current one stays
    assert "compiled guard" in stale and {p.name for p in Store("guard", cache).entries()} == current_guards
    assert "removed 0 entries" in jitdtypes_cli(cache, "cache", "clean", "--older-than", "30d").stdout
    assert jitdtypes_cli(cache, "cache", "clean", "--older-than", "soon", check_rc=2).stderr
    jitdtypes_cli(cache, "cache", "clean", check_rc=2)  # nothing asked for

    everything = jitdtypes_cli(cache, "cache", "clean", "--all").stdout
    assert "discovery" in everything and ("compiled guard" in everything) == bool(current_guards)
    info = json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)
    assert info["entries"] == 0 and info["guard"] == [] and info["discovery"] == []


def test_verify_finds_and_fixes_damage(cache):
    _warm(cache, ops="exp")
    assert jitdtypes_cli(cache, "cache", "verify").stdout.strip().endswith("0 damaged")
    rows = json.loads(jitdtypes_cli(cache, "cache", "list", "--json", "--kind", "kernels").stdout)
    truncated, garbled, bad_meta = (Path(r["path"]) for r in rows[:3])
    truncated.write_text(truncated.read_text()[:100])
    garbled.write_bytes(b"\xff\xfe not python \x00")
    bad_meta.with_name("meta.json").write_text("{ not json")
    report = jitdtypes_cli(cache, "cache", "verify", check_rc=1).stdout
    assert report.count("damaged ") == 3 and "3 damaged" in report
    # the CLI keeps working on a damaged cache
    listing = jitdtypes_cli(cache, "cache", "list").stdout
    assert "metadata unreadable" in listing and "does not match its recorded sha256" in listing
    assert json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)["damaged"] == 3
    fixed = jitdtypes_cli(cache, "cache", "verify", "--fix").stdout
    assert "removed (they regenerate on next use)" in fixed
    assert jitdtypes_cli(cache, "cache", "verify").stdout.strip().endswith("0 damaged")


def test_info_and_verify_cover_the_compiled_guard(cache):
    import jitdtypes

    if jitdtypes.guard() != "compiled":
        pytest.skip("this session runs the Python guard")
    text = jitdtypes_cli(cache, "cache", "info").stdout
    (guard_line,) = [line for line in text.splitlines() if line.startswith("guard ")]
    assert "loaded by this torch build" in guard_line
    (entry,) = json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)["guard"]
    library = Path(entry["path"])
    damaged = bytearray(library.read_bytes())
    damaged[-1] ^= 0xFF
    library.write_bytes(bytes(damaged))
    report = jitdtypes_cli(cache, "cache", "verify", check_rc=1).stdout
    assert "libjitdtypes_guard.so does not match its recorded sha256" in report and "1 damaged" in report
    jitdtypes_cli(cache, "cache", "verify", "--fix")
    assert not library.parent.exists()


def _entry(cache: Path, kind: str, key: str, name: str, meta: dict) -> Path:
    """An entry of `kind` holding one file `name` (the store checks bytes and metadata only, so any bytes do)."""
    def build(workspace):
        (workspace / name).write_bytes(b"PK\x03\x04 made up by a test")
        return meta

    return Store(kind, cache).ensure(key, build)[0].directory


def _package(cache: Path, key: str, dtype: str = "complex32") -> Path:
    """A generated CPU kernel entry."""
    return _entry(cache, "cpu_kernels", key, "model.so", {"overload": "aten::exp", "dtype": dtype, "torch": "x"})


def test_clean_verify_and_info_cover_generated_cpu_kernels(cache):
    from jitdtypes import cpu_kernels
    from jitdtypes.cpu_kernels import provider

    current = cpu_kernels.key("aten::exp", dtypes.BY_NAME["complex32"])
    kept, stale, damaged = _package(cache, current), _package(cache, "ab" * 32), _package(cache, "cd" * 32)
    os.close(Store("cpu_kernels", cache).handover_lock(provider.LAZY_SLOT))  # as a lazy build leaves it
    (damaged / "model.so").write_bytes(b"\x7fELF changed")
    Store("cpu_kernels", cache).record_failure(cpu_kernels.key("aten::sin", dtypes.BY_NAME["complex32"]),
                                               {"overload": "aten::sin", "dtype": "complex32", "error": "it failed"})
    info = json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)
    assert info["kinds"]["cpu_kernels"]["entries"] == 3
    assert [f["overload"] for f in info["failures"] if f["kind"] == "cpu_kernels"] == ["aten::sin"]
    assert "1 failed builds of generated CPU kernels" in jitdtypes_cli(cache, "cache", "info").stdout

    report = jitdtypes_cli(cache, "cache", "verify", check_rc=1).stdout
    assert f"damaged {damaged}: model.so does not match its recorded sha256" in report and "1 damaged" in report
    jitdtypes_cli(cache, "cache", "verify", "--fix")
    assert not damaged.exists() and kept.exists()

    assert "old layout" not in jitdtypes_cli(cache, "cache", "info").stdout
    assert "generated aten::exp" in jitdtypes_cli(cache, "cache", "clean", "--stale").stdout
    assert kept.exists() and not stale.exists() and not any(cache.rglob("*.failed.json"))
    assert (cache / "cpu_kernels" / provider.LAZY_SLOT).is_file()  # a lock another process may hold
    assert "generated aten::exp complex32; dtype complex32" in jitdtypes_cli(
        cache, "cache", "clean", "--dtype", "complex32").stdout
    assert not kept.exists()


def test_list_and_info_agree_on_every_kind(cache):
    """One scan of every kind: `cache list`'s rows per kind are `cache info`'s counts (kernels, a made-up
    generated CPU kernel and compiled guard, the seeded discovery result)."""
    _warm(cache, ops="exp")
    _package(cache, "ab" * 32)
    _entry(cache, "guard", "cd" * 32, "libjitdtypes_guard.so", {"torch": "1.0.0", "compiler": "c++"})
    info = json.loads(jitdtypes_cli(cache, "cache", "info", "--json").stdout)
    rows = json.loads(jitdtypes_cli(cache, "cache", "list", "--json").stdout)
    per_kind = {kind: sum(row["kind"] == kind for row in rows) for kind in info["kinds"]}
    assert per_kind == {kind: counts["entries"] for kind, counts in info["kinds"].items()}
    assert per_kind["cpu_kernels"] == 1 and per_kind["guard"] >= 1 and per_kind["discovery"] >= 1
    assert per_kind["kernels"] > 0 and len(rows) == info["entries"] and info["damaged"] == 0
    (package,) = json.loads(jitdtypes_cli(cache, "cache", "list", "--json", "--kind", "cpu_kernels").stdout)
    assert package["kind"] == "cpu_kernels" and package["op"] == "exp" and package["path"].endswith("model.so")
    table = jitdtypes_cli(cache, "cache", "list").stdout.splitlines()
    assert table[-1] == f"{info['entries']} entries" and sum(" cpu_kernels " in line for line in table) == 1
    text = jitdtypes_cli(cache, "cache", "info").stdout
    assert "cpu        1 generated CPU kernels" in text and f"total      {info['entries']} entries" in text


def test_demo_runs(cache):
    demo = jitdtypes_cli(cache, "demo", "--device", "cpu", "--size", "64").stdout
    lines = demo.splitlines()
    assert lines[0].startswith("jitdtypes ") and "demo on cpu" in lines[0]
    assert any("torch.exp(z)" in line and "NotImplementedError" in line and "upcast" in line for line in lines)
    assert not any("FAILED" in line for line in lines)
