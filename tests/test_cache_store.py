"""The cache spine (cache_tools/store.py): one key recipe, check-lock-check across processes, failed builds
remembered until retried, interrupted builds leaving nothing, damaged entries rebuilt, untrusted ones refused,
and an older layout never read."""

import json
import multiprocessing
import os
import time
from pathlib import Path

import pytest

from cache_tools import inventory
from cache_tools.store import (KINDS, META, WORK, BuildFailed, CorruptEntry, InsecureEntry, RememberedFailure, Store,
                               cache_key)

KEY = cache_key("kernels", "content", {"torch": "x"})


def _writer(data=b"x = 1\n", meta=None, calls=None):
    """A build that writes kernel.py and counts its runs in `calls` (a file, across processes)."""
    def build(workspace):
        if calls is not None:
            with open(calls, "a") as f:
                f.write("built\n")
        (workspace / "kernel.py").write_bytes(data)
        return {"op": "exp", **(meta or {})}

    return build


def _file(name, data):
    """A build that writes one file."""
    def build(workspace):
        (workspace / name).write_bytes(data)
        return {}

    return build


def _traces(store):
    """What a build may leave beside the entries: workspaces and failure records."""
    return sorted(store.root.glob(f"{WORK}*")), store.failures()


def test_the_key_recipe_is_canonical_and_kinds_are_checked():
    assert cache_key("kernels", "c", {"a": 1, "b": [2]}) == cache_key("kernels", "c", {"b": [2], "a": 1})
    assert len({cache_key(kind, "c", {}) for kind in KINDS}) == len(KINDS)
    assert cache_key("kernels", "c", {}) != cache_key("kernels", "d", {}) != cache_key("kernels", "c", {"a": 1})
    assert all(len(cache_key(kind, "c", {})) == 64 for kind in KINDS)
    with pytest.raises(ValueError, match="not a kind of cache entry: 'kernel' \\(one of kernels, cpu_kernels"):
        cache_key("kernel", "c", {})
    with pytest.raises(ValueError, match="not a kind of cache entry: 'packages'"):
        Store("packages")
    for key in ("../../etc", "AB" * 32, "ab" * 20, None):
        with pytest.raises(ValueError, match="not a cache key: .* \\(64 lowercase hex digits"):
            Store("guard").read(key)


def test_an_entry_is_its_files_and_metadata_written_last(tmp_path):
    store = Store("kernels", tmp_path)
    entry, built = store.ensure(KEY, _writer(meta={"dtype": "complex32"}))
    assert built and entry.directory == tmp_path / "kernels" / KEY[:2] / KEY
    assert sorted(p.name for p in entry.directory.iterdir()) == ["kernel.py", META]
    meta = json.loads((entry.directory / META).read_text())
    assert meta["key"] == KEY and meta["dtype"] == "complex32" and meta["bytes"] == 6
    assert set(meta["files"]) == {"kernel.py"} and meta["created"] == meta["last_used"]
    assert entry.files == {"kernel.py": entry.directory / "kernel.py"}
    assert oct(entry.directory.stat().st_mode & 0o777) == "0o700"
    assert oct((entry.directory / "kernel.py").stat().st_mode & 0o777) == "0o600"
    again, built = store.ensure(KEY, _writer(b"never written"))
    assert not built and again.read_bytes("kernel.py") == b"x = 1\n"
    assert _traces(store) == ([], [])


def _ensure_in_process(args):
    root, calls = args
    entry, built = Store("kernels", Path(root)).ensure(KEY, _slow_writer(calls))
    return str(entry.directory), built


def _slow_writer(calls):
    build = _writer(calls=calls)

    def slowly(workspace):
        time.sleep(0.5)  # long enough for the other process to reach the lock
        return build(workspace)

    return slowly


def test_two_processes_ensuring_one_key_build_it_once(tmp_path):
    calls = tmp_path / "calls"
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map(_ensure_in_process, [(str(tmp_path), str(calls))] * 2)
    assert calls.read_text() == "built\n"
    assert sorted(built for _, built in results) == [False, True]
    assert results[0][0] == results[1][0]
    store = Store("kernels", tmp_path)
    assert store.read(KEY).read_bytes("kernel.py") == b"x = 1\n" and _traces(store) == ([], [])


def test_a_failed_build_is_remembered_until_retried(tmp_path):
    store, calls = Store("cpu_kernels", tmp_path), []

    def failing(workspace):
        calls.append("failed")
        (workspace / "kernel.pt2").write_bytes(b"half")
        raise BuildFailed("the compiler said no", {"compiler": ["c++"]})

    with pytest.raises(BuildFailed, match="the compiler said no"):
        store.ensure(KEY, failing)
    record = store.read_failure(KEY)
    assert record["error"] == "the compiler said no" and record["compiler"] == ["c++"] and record["key"] == KEY
    assert store.read(KEY) is None and _traces(store) == ([], [KEY])  # no entry, no workspace
    with pytest.raises(RememberedFailure, match=r"the compiler said no \(failed at \d{4}-") as remembered:
        store.ensure(KEY, failing)
    assert remembered.value.record["compiler"] == ["c++"] and calls == ["failed"]
    # a record that no longer holds (another compiler) is no reason to skip the build
    with pytest.raises(BuildFailed):
        store.ensure(KEY, failing, failure_holds=lambda record: record["compiler"] == ["clang++"])
    assert calls == ["failed"] * 2
    entry, built = store.ensure(KEY, _file("kernel.pt2", b"PK"), retry=True)
    assert built and store.read_failure(KEY) is None and store.failures() == []
    assert entry.read_bytes("kernel.pt2") == b"PK"


def test_a_failure_record_others_could_write_is_ignored(tmp_path):
    store = Store("guard", tmp_path)
    store.record_failure(KEY, {"error": "failed"})
    os.chmod(store.failure_path(KEY), 0o666)
    assert store.read_failure(KEY) is None
    assert store.ensure(KEY, _file("libjitdtypes_guard.so", b"\x7fELF"))[1]


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, "vanished workspace", "full disk"])
def test_an_interrupted_build_leaves_no_entry_no_record_and_no_workspace(tmp_path, interruption):
    store = Store("kernels", tmp_path)

    def interrupted(workspace):
        (workspace / "kernel.py").write_text("half of it")
        if interruption == "vanished workspace":
            for path in workspace.iterdir():
                path.unlink()
            workspace.rmdir()
            return {}
        if interruption == "full disk":
            raise OSError(28, "No space left on device")
        raise interruption()

    expected = {"vanished workspace": OSError, "full disk": OSError}.get(interruption, interruption)
    with pytest.raises(expected):
        store.ensure(KEY, interrupted)
    assert store.read(KEY) is None and _traces(store) == ([], [])
    assert not store.directory(KEY).exists() and store.entries() == []


@pytest.mark.parametrize("damage", ["changed file", "missing file", "metadata", "metadata of another key"])
def test_a_damaged_entry_is_detected_and_rebuilt(tmp_path, damage):
    store = Store("kernels", tmp_path)
    entry, _ = store.ensure(KEY, _writer())
    if damage == "changed file":
        (entry.directory / "kernel.py").write_bytes(b"x = 2\n")
    elif damage == "missing file":
        (entry.directory / "kernel.py").unlink()
    elif damage == "metadata":
        (entry.directory / META).write_text("{ truncated")
    else:
        (entry.directory / META).write_text(json.dumps({**entry.meta, "key": "0" * 64}))
    wording = {"changed file": "kernel.py does not match its recorded sha256", "missing file": "kernel.py is missing",
               "metadata": "metadata unreadable", "metadata of another key": "metadata does not name this key"}[damage]
    with pytest.raises(CorruptEntry, match=wording) as corrupt:
        store.read(KEY)
    assert str(corrupt.value).startswith(f"{entry.directory}: ")
    heard = []
    rebuilt, built = store.ensure(KEY, _writer(b"x = 3\n"), damaged=heard.append)
    assert built and len(heard) == 1 and wording in str(heard[0])
    assert store.read(KEY).read_bytes("kernel.py") == b"x = 3\n"
    assert not list(store.root.glob("*/.retired-*")) and _traces(store) == ([], [])


def test_a_file_changed_after_read_is_refused_when_used(tmp_path):
    store = Store("kernels", tmp_path)
    entry, _ = store.ensure(KEY, _writer())
    (entry.directory / "kernel.py").write_bytes(b"import os\n")
    with pytest.raises(CorruptEntry, match="kernel.py does not match its recorded sha256"):
        entry.read_bytes("kernel.py")


@pytest.mark.parametrize("where", ["entry", "file", "metadata", "kind folder", "root"])
def test_an_entry_others_could_write_is_refused(tmp_path, where):
    store = Store("kernels", tmp_path / "cache")
    entry, _ = store.ensure(KEY, _writer())
    path = {"entry": entry.directory, "file": entry.directory / "kernel.py", "metadata": entry.directory / META,
            "kind folder": store.root, "root": tmp_path / "cache"}[where]
    os.chmod(path, 0o775 if path.is_dir() else 0o664)
    message = f"{path} is writable by group or others (mode {'775' if path.is_dir() else '664'})"
    with pytest.raises(InsecureEntry) as refused:
        store.read(KEY)
    assert str(refused.value) == message
    with pytest.raises(InsecureEntry):
        store.ensure(KEY, _writer(b"never"))
    assert inventory.verify(tmp_path / "cache")[0]["problem"] == message


def test_a_symlinked_entry_is_refused(tmp_path):
    store = Store("kernels", tmp_path)
    entry, _ = store.ensure(KEY, _writer())
    moved = entry.directory.with_name("elsewhere")
    entry.directory.rename(moved)
    entry.directory.symlink_to(moved)
    with pytest.raises(InsecureEntry, match="is a symbolic link"):
        store.read(KEY)


def test_update_adds_to_an_intact_entry_only(tmp_path):
    store = Store("kernels", tmp_path)
    entry, _ = store.ensure(KEY, _writer())
    updated = store.update(KEY, lambda found: {**found.meta, "extra": 1, "files": {}, "key": "forged"})
    assert updated.meta["extra"] == 1 and updated.meta["files"] == entry.meta["files"]
    assert store.read(KEY).meta["extra"] == 1  # still intact: the key and files are the store's
    (entry.directory / "kernel.py").write_bytes(b"changed")
    assert store.update(KEY, lambda found: found.meta) is None
    assert store.update("ab" * 32, lambda found: found.meta) is None


def test_touch_records_a_use_at_most_hourly(tmp_path):
    store = Store("kernels", tmp_path)
    entry, _ = store.ensure(KEY, _writer())
    meta_path = entry.directory / META
    before = meta_path.read_bytes()
    store.ensure(KEY, _writer())
    assert meta_path.read_bytes() == before  # used just now: not rewritten
    meta_path.write_text(json.dumps({**entry.meta, "last_used": time.time() - 7200}))
    store.ensure(KEY, _writer())
    assert time.time() - json.loads(meta_path.read_text())["last_used"] < 60


def test_an_older_layout_is_not_read_and_clean_stale_removes_it(tmp_path):
    old = [tmp_path / "guard" / ("a" * 20), tmp_path / "discovery" / "cpu-torch2.14.1-0123456789abcdef.json",
           tmp_path / "cpu_kernels" / "ab" / ("ab" * 20), tmp_path / "kernels" / KEY[:2] / KEY]
    for path in old[:1] + old[2:]:
        path.mkdir(parents=True)
        (path / META).write_text(json.dumps({"key": path.name, "sha256": "0" * 64}))
    old[1].parent.mkdir()
    old[1].write_text("{}")
    current = Store("kernels", tmp_path).ensure(cache_key("kernels", "new", {}), _writer())[0]
    assert [r.directory for r in inventory.scan(tmp_path)] == [current.directory]
    assert inventory.old_layout(tmp_path) == sorted(old, key=lambda p: KINDS.index(p.relative_to(tmp_path).parts[0]))
    assert inventory.info(tmp_path)["entries"] == 1 and len(inventory.info(tmp_path)["old_layout"]) == 4
    removed = inventory.clean(tmp_path, stale_for={"torch": None, "triton": None, "jitdtypes": None},
                              current={"kernels": set()}, kinds=["guard", "discovery", "cpu_kernels"])
    assert {Path(r["path"]) for r in removed} == set(old[:3]) and {r["op"] for r in removed} == {"older cache layout"}
    assert inventory.old_layout(tmp_path) == [old[3]] and current.directory.exists()
