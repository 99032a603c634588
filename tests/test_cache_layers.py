"""Read-only cache layers (JITDTYPES_CACHE_PATH): a trusted layer serves kernels without anything being
generated or written; an entry that someone else could have written is refused with one warning and built in
the user's own cache."""

import logging
import os
import types
from pathlib import Path

import pytest
import torch

import jitdtypes
from jitdtypes.triton_kernels import engine
from cache_tools import inventory, layers
from cache_tools.store import Store
from tests.conftest import seed_cache


def _fresh_engine(monkeypatch):
    monkeypatch.setattr(engine, "_loaded", {})
    monkeypatch.setattr(engine, "_warned", set())
    monkeypatch.setattr(engine, "counters", engine.Counter())
    engine.forget_kernels()  # and the routed calls specialized on earlier ones


def _z(seed=3):
    return torch.randn(9, dtype=torch.complex64, generator=torch.Generator().manual_seed(seed)).to(torch.complex32)


def _calls():
    z, w = _z(), _z(4)
    torch.testing.assert_close(torch.exp(z).to(torch.complex64), torch.exp(z.to(torch.complex64)), rtol=2e-3,
                               atol=2e-3)
    torch.testing.assert_close(torch.sin(w).to(torch.complex64), torch.sin(w.to(torch.complex64)), rtol=2e-3,
                               atol=2e-3)


@pytest.fixture
def layered(tmp_path, monkeypatch):
    """(layer, user cache): the layer holds the kernels of _calls(), shared as an admin shares one (directories
    0755, files 0644); the user's cache is empty and is the only one configured for writing."""
    previous = engine.cpu_backend()
    jitdtypes.set_cpu_backend("triton-interpret")
    layer = seed_cache(tmp_path / "layer")
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(layer))
    _fresh_engine(monkeypatch)
    _calls()
    assert engine.counters["generated"] == 2
    for path in [layer, *layer.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    user = seed_cache(tmp_path / "user")
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(user))
    monkeypatch.setenv(layers.ENV_VAR, os.pathsep.join(["", str(tmp_path / "absent"), str(layer), ""]))
    _fresh_engine(monkeypatch)
    yield layer, user
    jitdtypes.set_cpu_backend(previous)


def _snapshot(root: Path) -> dict:
    return {p: (p.stat().st_mtime_ns, p.stat().st_mode) for p in root.rglob("*")}


def test_path_names_layers_in_order(monkeypatch):
    monkeypatch.setenv(layers.ENV_VAR, f"/opt/jitdtypes{os.pathsep}{os.pathsep}~/warm")
    assert layers.roots() == [Path("/opt/jitdtypes"), Path("~/warm").expanduser()]


def test_a_trusted_layer_serves_kernels_and_stays_untouched(layered, caplog):
    layer, user = layered
    before = _snapshot(layer)
    with caplog.at_level(logging.WARNING, logger="jitdtypes"):
        _calls()
    assert engine.counters["read_from_layer"] == 2 and engine.counters["generated"] == 0
    assert inventory.scan(user, ["kernels"]) == []  # nothing copied into or generated in the user's cache
    assert _snapshot(layer) == before  # not even last_used is written
    assert caplog.records == []


def _entries(layer):
    return [r.directory for r in inventory.scan(layer, ["kernels"])]


def _group_writable(layer):
    for directory in _entries(layer):
        directory.chmod(0o775)


def _other_owner(layer):
    for directory in _entries(layer):
        for path in (directory, *directory.iterdir()):
            os.chown(path, 12345, 12345)


def _world_writable_root(layer):
    (layer / "kernels").chmod(0o777)


def _symlinked(layer):
    for directory in _entries(layer):
        moved = directory.with_name(directory.name + "-real")
        directory.rename(moved)
        directory.symlink_to(moved)


def _damaged(layer):
    for directory in _entries(layer):
        (directory / "kernel.py").chmod(0o644)
        with (directory / "kernel.py").open("a") as f:
            f.write("\nimport os  # appended by someone\n")


REFUSED = {"group-writable entry": (_group_writable, "writable by group or others"),
           "entry owned by another user": (_other_owner, "owned by uid 12345"),
           "world-writable directory above the entry": (_world_writable_root, "writable by group or others"),
           "symlinked entry": (_symlinked, "symbolic link"),
           "damaged entry": (_damaged, "does not match its recorded sha256")}


@pytest.mark.skipif(not hasattr(os, "getuid"), reason="ownership needs uids")
@pytest.mark.parametrize("case", sorted(REFUSED))
def test_an_untrusted_layer_entry_is_refused_once_and_built_privately(layered, caplog, case):
    if case == "entry owned by another user" and os.getuid() != 0:
        pytest.skip("giving a file to another user needs root")
    layer, user = layered
    spoil, reason = REFUSED[case]
    spoil(layer)
    with caplog.at_level(logging.WARNING, logger="jitdtypes"):
        _calls()
    warnings = [r.getMessage() for r in caplog.records if "read-only cache layer" in r.getMessage()]
    assert len(warnings) == 1 and reason in warnings[0], warnings
    assert engine.counters["read_from_layer"] == 0 and engine.counters["generated"] == 2
    assert len(inventory.scan(user, ["kernels"])) == 2 and inventory.verify(user) == []


def _discovery_layer(tmp_path, monkeypatch, record_mode):
    """A layer holding this build's CPU discovery result (directories 0755, the record `record_mode`) and an
    empty user cache; probing is replaced by a marker."""
    from jitdtypes.discovery import results

    layer = seed_cache(tmp_path / "layer")
    for path in [layer, *layer.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    record = Store("discovery", layer).directory(results.build_key("cpu")) / results.file_name("cpu")
    assert record.is_file()
    record.chmod(record_mode)
    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(tmp_path / "user"))
    monkeypatch.setenv(layers.ENV_VAR, str(layer))
    probed = []
    marker = types.SimpleNamespace(to_json=lambda: "{}")
    monkeypatch.setattr(results, "discover", lambda device_type, **kw: probed.append(device_type) or marker)
    return results, record, probed, marker


def test_discovery_result_in_a_trusted_layer_spares_probing(tmp_path, monkeypatch):
    results, record, probed, _ = _discovery_layer(tmp_path, monkeypatch, 0o644)
    found = results.load_or_discover("cpu")
    assert probed == [] and found == results.check(record)[0] and len(found.findings) > 100
    assert not Store("discovery", tmp_path / "user").directory(record.parent.name).exists()  # read in place


def test_discovery_result_in_a_writable_layer_is_refused(tmp_path, monkeypatch, caplog):
    results, record, probed, marker = _discovery_layer(tmp_path, monkeypatch, 0o666)
    with caplog.at_level(logging.WARNING, logger="jitdtypes"):
        assert results.load_or_discover("cpu") is marker
    assert probed == ["cpu"]
    assert [r.getMessage() for r in caplog.records if "cache layer refused" in r.getMessage()] == [
        f"jitdtypes: discovery result in a cache layer refused: {record} is writable by group or others (mode 666)"]
