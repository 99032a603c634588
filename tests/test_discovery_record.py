"""What discovery leaves in the cache and who may trust it: a killed discovery leaves nothing (and no probing
children), a record is checked against its sha256 and this build before use, JITDTYPES_DISCOVERY decides which
devices an import may probe, crashed overloads show in `jitdtypes ops`, and made-up probabilities are valid."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

import jitdtypes
from cache_tools.store import Store
from jitdtypes import installer, schema
from jitdtypes.discovery import probe, results
from jitdtypes.findings import BACKEND, Finding


def _probing_children_of(cache: Path) -> list[int]:
    """Probing children whose environment names `cache` (only this test's runs do)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, ValueError):
            continue
        if b"jitdtypes.discovery.runner" in cmdline and f"JITDTYPES_CACHE_DIR={cache}".encode() in environ:
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_killed_discovery_leaves_no_result_and_no_children(tmp_path):
    cache = tmp_path / "cache"
    env = {**os.environ, "JITDTYPES_CACHE_DIR": str(cache), "JITDTYPES_DISABLE": "1"}
    code = "from jitdtypes import discovery; discovery.load_or_discover('cpu')"
    parent = subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
    try:
        while "probing which ATen kernels" not in (line := parent.stderr.readline()):
            assert line, "discovery ended before it started probing"
        deadline = time.monotonic() + 60
        while not _probing_children_of(cache) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)  # children are probing now
        assert _probing_children_of(cache)
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    # Linux kills the probing children at once; one still importing torch (a replacement started just before the
    # kill) has not asked for that yet and leaves when it sees its new parent, which takes longer on a busy machine
    deadline = time.monotonic() + 60
    while _probing_children_of(cache) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _probing_children_of(cache) == []
    store = Store("discovery", cache)
    assert store.entries() == [] and store.failures() == []  # a killed build leaves only its workspace


def _record(tmp_path, **changes) -> Path:
    found = results.Discovery("cpu", [Finding("aten::exp", BACKEND, {"complex32": "missing"}, {})],
                                {"complex32": ["aten::neg"]}, {"aten::sin": "its probing process timed out after 60 s"},
                                {"probed": 3})
    record = json.loads(found.to_json())
    record.update(changes)
    path = tmp_path / "cpu-torch.json"
    path.write_text(json.dumps(record))
    return path


def test_a_record_is_used_only_whole_and_for_this_build(tmp_path):
    found, problem = results.check(_record(tmp_path))
    assert problem is None and found.crashed == {"aten::sin": "its probing process timed out after 60 s"}
    assert [f.overload for f in found.findings] == ["aten::exp"] and found.stats == {"probed": 3}
    assert results.check(_record(tmp_path, crashed={}))[1] == "content does not match its sha256"
    body = json.loads(_record(tmp_path).read_text())
    body["key"] = "0" * 16
    del body["sha256"]
    body["sha256"] = results._digest(body)
    path = tmp_path / "cpu-other.json"
    path.write_text(json.dumps(body))
    assert results.check(path)[1] == "made by another torch build, jitdtypes version or discovery source"
    assert results.check(_record(tmp_path).rename(tmp_path / "cuda-torch.json"))[1] == (
        "probed on cpu, but its name says another device")
    assert results.check(tmp_path / "absent.json")[1] == "unreadable (FileNotFoundError)"


def test_jitdtypes_discovery_says_which_devices_an_import_may_probe(monkeypatch):
    for mode, probed in (("", ["cpu", "cuda"]), ("auto", ["cpu", "cuda"]), ("skip-cuda", ["cpu"]), ("cached", [])):
        monkeypatch.setenv(results.ENV, mode)
        assert results.probed_at_import(["cpu", "cuda"]) == probed
    monkeypatch.setenv(results.ENV, "later")
    with pytest.raises(ValueError, match="auto, skip-cuda, cached"):
        results.probed_at_import(["cpu"])


def test_a_device_not_probed_and_not_cached_gets_no_overrides(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(results.ENV, "cached")
    found = results.load_or_discover_all(["cuda"], may_probe=[])  # no results ship for CUDA
    assert found["cuda"].findings == [] and found["cuda"].stats == {"skipped": True}
    assert "no cached discovery results for cuda" in caplog.text
    assert not (tmp_path / "discovery").exists()


def test_crashed_overloads_show_in_ops_and_keep_pytorchs_kernel(monkeypatch, capsys):
    from jitdtypes import cli

    crashed = results.Discovery("cpu", [], {}, {"aten::sin": "RuntimeError: CUDA error: device-side assert"})
    monkeypatch.setattr(installer, "discoveries", {"cpu": crashed})
    monkeypatch.setattr(installer, "device_types", lambda: ["cpu"])
    rows = [r for r in jitdtypes.stats() if r["op"] == "aten::sin"]
    assert {(r["dtype"], r["support"], r["path"]) for r in rows} == {
        (jitdtypes.dtypes.NAMES[d], "crashed", "native") for d in jitdtypes.dtypes.COMPLEX_TARGETS}
    monkeypatch.setenv("JITDTYPES_DISABLE", "1")
    assert cli.main(["ops", "--device", "cpu"]) == 0
    out = capsys.readouterr().out
    assert "aten::sin" in out and "crashed" in out
    assert f"{len(rows)} crashed in probing" in out.splitlines()[-1]


@pytest.mark.parametrize("overload, arg", [("aten::bernoulli", 0), ("aten::multinomial", 0),
                                           ("aten::binomial", 1), ("aten::bernoulli_.Tensor", 1)])
def test_made_up_probabilities_are_probabilities(overload, arg):
    info = schema.overload(overload)
    args, _ = probe._synthesize(info, probe.Case(torch.float32, (3, 3)), "cpu")
    assert 0 < args[arg].min() and args[arg].max() <= 1


def test_made_up_indices_and_class_targets_are_in_range():
    info = schema.overload("aten::nll_loss_forward")
    args, _ = probe._synthesize(info, probe.Case(torch.float32, (3, 3)), "cpu")
    assert args[1].dtype == torch.int64 and args[1].eq(0).all()
    args, _ = probe._synthesize(schema.overload("aten::index_select"), probe.Case(torch.complex64, (4, 4)), "cpu")
    assert args[2].dtype == torch.int64 and args[2].eq(0).all()


def test_warm_runs_discovery_ahead_of_time(tmp_path, monkeypatch, capsys):
    from jitdtypes.cli import commands
    from tests.conftest import seed_cache

    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(seed_cache(tmp_path / "cache")))
    monkeypatch.setenv(results.ENV, "cached")  # warm probes whatever is missing regardless; here nothing is
    monkeypatch.setattr(installer, "device_types", lambda: ["cpu"])
    commands._warm_discovery()
    cached = results.load(results.cache_path("cpu"))
    assert capsys.readouterr().out == results.summary(cached) + "\n"
    assert results.summary(cached).startswith(f"discovery cpu: {len(cached.findings)} overrides, ")
