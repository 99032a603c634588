"""The cache under concurrency, corruption and hostile permissions: ops keep giving right answers."""

import errno
import json
import os
import subprocess
import sys

import pytest
import torch

import jitdtypes
from cache_tools import atomic, inventory
from cache_tools.store import SOURCE
from jitdtypes.triton_kernels import engine
from tests.conftest import CLI, seed_cache

OPS = "exp,mul,sum"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cache with this build's discovery results, the interpreter backend, nothing loaded."""
    root = seed_cache(tmp_path / "cache")
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(root))
    monkeypatch.setattr(engine, "_loaded", {})
    monkeypatch.setattr(engine, "_warned", set())
    monkeypatch.setattr(engine, "counters", engine.Counter())
    previous = engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    yield root
    jitdtypes.set_cpu_backend(previous)


def _z():
    return torch.randn(9, dtype=torch.complex64, generator=torch.Generator().manual_seed(3)).to(torch.complex32)


def _assert_exp_right(y, x):
    torch.testing.assert_close(y.to(torch.complex64), torch.exp(x.to(torch.complex64)), rtol=2e-3, atol=2e-3)


@pytest.mark.machinery
def test_eight_processes_warming_one_empty_cache(cache):
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache)}
    command = [CLI, "warm", "--dtype", "all", "--device", "cpu", "--ops", OPS]
    processes = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(8)]
    outputs = [p.communicate(timeout=600) for p in processes]
    assert [p.returncode for p in processes] == [0] * 8, [o[1][-500:] for o in outputs]
    summaries = [out.strip().splitlines()[-1] for out, _ in outputs]
    generated = [int(s.split("generated ")[1].split(",")[0]) for s in summaries]
    total = int(summaries[0].split(": ")[1].split()[0])
    records = inventory.scan(cache, ["kernels"])
    assert len(records) == total and sum(generated) == total  # every entry written exactly once
    assert all(r.problem is None for r in records)  # and intact
    assert not list(cache.rglob("*.tmp"))  # no temp files left behind


@pytest.mark.parametrize("damage", ["truncated", "garbled", "hash mismatch", "metadata"])
def test_a_damaged_entry_is_regenerated_with_one_warning(cache, damage, caplog):
    x = _z()
    torch.exp(x)
    (record,) = [r for r in inventory.scan(cache, ["kernels"]) if r.meta["op"] == "exp"]
    source = record.directory / SOURCE
    if damage == "truncated":
        source.write_text(source.read_text()[: len(source.read_text()) // 2])
    elif damage == "garbled":
        source.write_bytes(b"\x00\xffgarbage" * 10)
    elif damage == "hash mismatch":  # valid Python that was not what we rendered must not run
        source.write_text(source.read_text() + "\nraise SystemExit('tampered')\n")
    else:
        (record.directory / "meta.json").write_text("{ truncated")
    engine.forget_kernels()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        _assert_exp_right(torch.exp(x), x)
        _assert_exp_right(torch.exp(x), x)
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "regenerating" in warnings[0].getMessage()
    assert inventory.verify(cache) == []


def test_entries_writable_by_others_are_not_imported(cache, caplog):
    x = _z()
    torch.exp(x)
    (record,) = [r for r in inventory.scan(cache, ["kernels"]) if r.meta["op"] == "exp"]
    os.chmod(record.directory / SOURCE, 0o666)
    engine.forget_kernels()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        _assert_exp_right(torch.exp(x), x)
        torch.exp(x * 2)
    messages = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(messages) == 1 and "writable by group or others" in messages[0] and "in memory" in messages[0]
    assert engine.counters["in_memory"] == 1 and engine.counters["generated"] == 1  # the first, before chmod
    assert "writable by group or others" in inventory.verify(cache)[0]["problem"]


def test_a_group_writable_cache_directory_is_not_trusted(cache, caplog):
    x = _z()
    torch.exp(x)
    os.chmod(cache / "kernels", 0o777)
    engine.forget_kernels()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        _assert_exp_right(torch.exp(x), x)
    assert engine.counters["in_memory"] == 1
    assert any("writable by group or others" in r.getMessage() for r in caplog.records)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="chown needs root")
def test_entries_owned_by_another_user_are_not_imported(cache, caplog):
    x = _z()
    torch.exp(x)
    (record,) = [r for r in inventory.scan(cache, ["kernels"]) if r.meta["op"] == "exp"]
    os.chown(record.directory / SOURCE, 12345, 12345)
    engine.forget_kernels()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        _assert_exp_right(torch.exp(x), x)
    assert any("owned by uid 12345" in r.getMessage() for r in caplog.records)
    assert engine.counters["in_memory"] == 1


def test_a_full_cache_directory_keeps_kernels_in_memory(cache, monkeypatch, caplog):
    def full(path, data, mode=0o600):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(atomic, "write_bytes", full)
    x = _z()
    with caplog.at_level("WARNING", logger="jitdtypes"):
        _assert_exp_right(torch.exp(x), x)
        torch.mul(x, x * 1j)
        x.sum()
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1 and "No space left" in warnings[0]
    assert engine.counters["in_memory"] >= 2 and inventory.scan(cache, ["kernels"]) == []


_UNWRITABLE_PROCESS = """
import torch, jitdtypes
from jitdtypes.triton_kernels import engine
x = torch.randn(5, dtype=torch.complex64).to(torch.complex32)
y = torch.exp(x)
err = (y.to(torch.complex64) - torch.exp(x.to(torch.complex64))).abs().max().item()
print("ok" if err < 1e-2 else "wrong", engine.counters["in_memory"])
"""


@pytest.mark.machinery
def test_an_unwritable_cache_location_does_not_break_ops(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("the cache directory cannot live under a file")
    # the Python guard: this is about the kernel cache (tests/test_guard.py covers an unusable guard cache)
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(blocker / "cache"), "JITDTYPES_CPU_BACKEND": "triton-interpret",
           "JITDTYPES_GUARD": "python"}
    if os.geteuid() != 0:  # a read-only directory stops everyone but root
        readonly = tmp_path / "readonly"
        readonly.mkdir(mode=0o500)
        env["JITDTYPES_CACHE_DIR"] = str(readonly)
    run = subprocess.run([sys.executable, "-c", _UNWRITABLE_PROCESS], env=env, capture_output=True, text=True,
                         timeout=900)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["ok", "1"]
    assert run.stderr.count("not writable") == 2  # once for discovery results, once for kernels


def test_discovery_results_that_do_not_parse_are_ignored(tmp_path):
    from jitdtypes.discovery import results

    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    assert results.load(bad) is None
    bad.write_text(json.dumps({"format": results.FORMAT, "findings": [{"nonsense": 1}]}))
    assert results.load(bad) is None
