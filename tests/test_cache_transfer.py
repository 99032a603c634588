"""`jitdtypes cache export/import`: a round trip keeps every byte; hostile or damaged archives are refused with a
clear error and leave the cache exactly as it was; concurrent imports of one archive all succeed."""

import hashlib
import io
import json
import multiprocessing
import tarfile

import pytest

from jitdtypes import discovery
from jitdtypes.triton_kernels import engine
from cache_tools import inventory, transfer, triton_artifacts
from cache_tools.store import CPU_KERNELS, DISCOVERY, GUARD, KERNELS, Store
from kernels_templates import unary

from .conftest import DISCOVERY_CACHE, seed_cache

TRITON_DIR = "A" * 52  # a Triton cache directory name: base32 of a sha256
CUBIN = b"\x7fELF fake cubin"


def _make_cache(root, kind="cuda-sm90"):
    """Two exp kernels keyed for `kind`, one with a Triton compilation attached."""
    store = Store(KERNELS, root)
    keys = []
    for params in unary.variants("complex32")[:2]:
        entry, _ = engine.ensure_source(store, "unary", params, "cuda", kind)
        keys.append(entry.key)
    store.update(keys[0], lambda entry: triton_artifacts.attach(entry.directory, entry.meta, [
        (TRITON_DIR, {"exp_kernel.cubin": CUBIN, "exp_kernel.json": b'{"name": "exp_kernel"}'})]))
    return keys


@pytest.fixture
def archive(tmp_path):
    source = tmp_path / "source"
    keys = _make_cache(source)
    path = tmp_path / "warm.tar.gz"
    report = transfer.export(path, source)
    assert report["entries"] == 2 and report["files"] == 6
    return path, keys


def _files(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.name.endswith(".lock")}


def test_round_trip_keeps_every_entry_and_file(archive, tmp_path):
    path, keys = archive
    report = transfer.import_archive(path, tmp_path / "target")
    nothing_else = {"discovery_installed": 0, "discovery_skipped": {}}
    assert report == {"entries": 2, "installed": 2, "kept": 0, **nothing_else}
    assert _files(tmp_path / "target" / "kernels") == _files(tmp_path / "source" / "kernels")
    assert inventory.verify(tmp_path / "target") == []
    assert transfer.import_archive(path, tmp_path / "target") == {"entries": 2, "installed": 0, "kept": 2,
                                                                  **nothing_else}
    assert not [p for p in (tmp_path / "target" / "kernels").iterdir() if p.name.startswith(".")]


def test_export_filters_by_dtype_and_device(tmp_path):
    _make_cache(tmp_path / "c", "cuda-sm80")
    _make_cache(tmp_path / "c", "cuda-sm90")
    assert transfer.export(tmp_path / "a.tar.gz", tmp_path / "c", devices={"cuda-sm90"})["entries"] == 2
    assert transfer.export(tmp_path / "b.tar.gz", tmp_path / "c", dtype="complex32")["entries"] == 4
    assert transfer.export(tmp_path / "d.tar.gz", tmp_path / "c", dtype="bcomplex32")["entries"] == 0


def test_triton_files_reach_triton_cache_verified(archive, tmp_path):
    path, keys = archive
    transfer.import_archive(path, tmp_path / "target")
    entry = Store(KERNELS, tmp_path / "target").read(keys[0])
    triton_cache = tmp_path / "triton"
    assert triton_artifacts.install(entry.directory, entry.meta, Store(KERNELS).owners, triton_cache) == 1
    group = json.loads((triton_cache / TRITON_DIR / "__grp__exp_kernel.json").read_text())
    assert group == {"child_paths": {n: str(triton_cache / TRITON_DIR / n) for n in ("exp_kernel.cubin",
                                                                                      "exp_kernel.json")}}
    assert (triton_cache / TRITON_DIR / "exp_kernel.cubin").read_bytes() == CUBIN
    (entry.directory / "triton" / TRITON_DIR / "exp_kernel.cubin").write_bytes(b"tampered")
    with pytest.raises(triton_artifacts.CorruptEntry):
        triton_artifacts.install(entry.directory, entry.meta, frozenset(), tmp_path / "triton2")
    assert not (tmp_path / "triton2" / TRITON_DIR).exists()


# -- hostile archives ------------------------------------------------------------------------------------------

def _members(path):
    """(TarInfo, bytes) of every member of a good archive, to rebuild it with one change."""
    with tarfile.open(path, "r:gz") as tar:
        return [(m, tar.extractfile(m).read()) for m in tar.getmembers()]


def _write(path, members):
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            info = tarfile.TarInfo(info) if isinstance(info, str) else info
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)


def _special(name, kind, link=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info, None


def _with(members, name_or_suffix, data, manifest_too=False):
    """The first member named (or ending with) `name_or_suffix` replaced by `data`, or a new member of that name;
    with manifest_too, the manifest then agrees with the new bytes."""
    out, changed = [], None
    for info, old in members:
        if changed is None and info.name.endswith(name_or_suffix):
            changed, old = info.name, data
        out.append((info, old))
    if changed is None:
        changed = name_or_suffix
        out.append((changed, data))
    if manifest_too:
        manifest = json.loads(out[0][1])
        kind, key, inner = changed.split("/", 2)
        manifest["entries"][kind][key][inner] = hashlib.sha256(data).hexdigest()
        out[0] = (out[0][0], json.dumps(manifest).encode())
    return out


def _key_of(members):
    return members[1][0].name.split("/")[1]


HOSTILE = {
    # case: (how to build it from the good archive's members, the refusal's wording, limits)
    "absolute path": (lambda m: m + [("/tmp/evil.py", b"x")], "absolute path", None),
    "dot-dot": (lambda m: m + [(f"kernels/{_key_of(m)}/../../evil.py", b"x")], "'..' in path", None),
    "symlink": (lambda m: m + [_special(f"kernels/{_key_of(m)}/link", tarfile.SYMTYPE, "/etc/passwd")],
                "symbolic link", None),
    "hard link": (lambda m: m + [_special(f"kernels/{_key_of(m)}/hard", tarfile.LNKTYPE, "manifest.json")],
                  "hard link", None),
    "character device": (lambda m: m + [_special("kernels/dev", tarfile.CHRTYPE)], "device file", None),
    "block device": (lambda m: m + [_special("kernels/blk", tarfile.BLKTYPE)], "device file", None),
    "fifo": (lambda m: m + [_special("kernels/fifo", tarfile.FIFOTYPE)], "FIFO", None),
    "oversized member": (lambda m: m, "limit per member", transfer.Limits(member_bytes=1000)),
    "oversized archive": (lambda m: m, "limit in all", "half the archive"),  # a limit under its real size
    "too many members": (lambda m: m, "more than 3 members", transfer.Limits(members=3)),
    "unexpected file": (lambda m: m + [(f"kernels/{_key_of(m)}/evil.py", b"x")], "not a path", None),
    "non-canonical path": (lambda m: m + [(f"kernels//{_key_of(m)}/kernel.py", b"x")], "plain relative", None),
    "duplicate member": (lambda m: m + [m[1]], "appears twice", None),
    "source not matching manifest": (lambda m: _with(m, "kernel.py", b"import os\n"), "manifest's sha256", None),
    "source not matching its metadata": (lambda m: _with(m, "kernel.py", b"import os\n", manifest_too=True),
                                         "recorded sha256", None),
    "metadata naming another key": (lambda m: _with(m, "meta.json", json.dumps({"key": "0" * 64}).encode(), True),
                                    "does not name this key", None),
    "Triton file not matching its metadata": (lambda m: _with(m, ".cubin", b"evil", manifest_too=True),
                                              "does not match its recorded sha256", None),
    "Triton file not in its metadata": (lambda m: _with(m, f"kernels/{_key_of(m)}/triton/{'B' * 52}/x.cubin", b"x",
                                                        manifest_too=True), "is not in its metadata", None),
    "no manifest": (lambda m: m[1:], "no manifest.json", None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_archive_is_refused_and_changes_nothing(archive, tmp_path, case):
    path, _ = archive
    build, wording, limits = HOSTILE[case]
    members = build(_members(path))
    if limits == "half the archive":
        total = sum(len(data) for _, data in members)
        limits = transfer.Limits(member_bytes=total, total_bytes=total // 2)
    hostile = tmp_path / "hostile.tar.gz"
    _write(hostile, members)
    target = tmp_path / "target"
    with pytest.raises(transfer.ArchiveRefused) as refused:
        transfer.import_archive(hostile, target, limits)
    assert wording in str(refused.value)
    assert [p for p in (target / "kernels").rglob("*")] == []  # no entry, no staging directory, no temp file
    assert not (tmp_path / "evil.py").exists()


@pytest.mark.parametrize("content", [b"not a tar at all", b""])
def test_not_an_archive_is_refused(tmp_path, content):
    path = tmp_path / "junk.tar.gz"
    path.write_bytes(content)
    with pytest.raises(transfer.ArchiveRefused, match="not a gzip-compressed tar archive"):
        transfer.import_archive(path, tmp_path / "target")


def _import(args):
    path, root = args
    return transfer.import_archive(path, root)


def test_concurrent_imports_of_one_archive_all_succeed(archive, tmp_path):
    path, keys = archive
    target = tmp_path / "target"
    with multiprocessing.get_context("fork").Pool(4) as pool:
        reports = pool.map(_import, [(path, target)] * 8)
    assert sum(r["installed"] for r in reports) == 2 and all(r["entries"] == 2 for r in reports)
    assert _files(target / "kernels") == _files(tmp_path / "source" / "kernels")
    assert inventory.verify(target) == []


def _this_builds_discovery():
    """The result files of the session cache's discovery entries that this build uses (the entry's key is its
    directory's name)."""
    return sorted(p for p in (DISCOVERY_CACHE / "discovery").glob("*/*/*.json")
                  if p.name != "meta.json" and discovery.check(p)[0] is not None)


def test_discovery_results_travel_and_only_usable_ones_are_installed(tmp_path):
    records = _this_builds_discovery()
    assert records, "the test session's discovery result"
    source = seed_cache(tmp_path / "source")
    _make_cache(source)
    path = tmp_path / "warm.tar.gz"
    keys = {record.parent.name for record in records}
    assert transfer.export(path, source, discovery_keys=keys)["discovery"] == len(records)
    refusal = lambda record: discovery.check(record)[1]  # noqa: E731 - what the CLI passes
    report = transfer.import_archive(path, tmp_path / "target", discovery_refusal=refusal)
    assert report["discovery_installed"] == len(records) and report["discovery_skipped"] == {}
    target = Store(DISCOVERY, tmp_path / "target")
    for record in records:
        assert (target.directory(record.parent.name) / record.name).read_bytes() == record.read_bytes()
    again = transfer.import_archive(path, tmp_path / "target", discovery_refusal=refusal)
    assert again["discovery_skipped"] == {record.name: "already present" for record in records}

    # A result whose content no longer matches its own sha256 (entry metadata and manifest made to agree) is not
    # installed.
    members = _members(path)
    key = records[0].parent.name
    name, meta_name = f"discovery/{key}/{records[0].name}", f"discovery/{key}/meta.json"
    record = json.loads(records[0].read_text())
    record["findings"] = []
    tampered = json.dumps(record).encode()
    meta = json.loads(next(data for info, data in members if info.name == meta_name))
    meta["files"][records[0].name] = hashlib.sha256(tampered).hexdigest()
    meta_bytes = json.dumps(meta).encode()
    manifest = json.loads(members[0][1])
    manifest["entries"]["discovery"][key] = {records[0].name: hashlib.sha256(tampered).hexdigest(),
                                             "meta.json": hashlib.sha256(meta_bytes).hexdigest()}
    members = [(members[0][0], json.dumps(manifest).encode())] + [
        (info, {name: tampered, meta_name: meta_bytes}.get(info.name, data)) for info, data in members[1:]]
    _write(tmp_path / "tampered.tar.gz", members)
    report = transfer.import_archive(tmp_path / "tampered.tar.gz", tmp_path / "other", discovery_refusal=refusal)
    assert report["installed"] == 2 and report["discovery_installed"] == len(records) - 1
    assert report["discovery_skipped"] == {records[0].name: "content does not match its sha256"}
    assert not Store(DISCOVERY, tmp_path / "other").directory(key).exists()


@pytest.mark.parametrize("name, wording", [("discovery/evil.py", "not a path"),
                                           (f"discovery/{'0' * 64}/cpu-torch2-{'0' * 64}.json",
                                            "differ from the manifest")])
def test_discovery_members_outside_the_manifest_are_refused(archive, tmp_path, name, wording):
    path, _ = archive
    _write(tmp_path / "extra.tar.gz", _members(path) + [(name, b"{}")])
    with pytest.raises(transfer.ArchiveRefused, match=wording):
        transfer.import_archive(tmp_path / "extra.tar.gz", tmp_path / "target")
    assert not (tmp_path / "target" / "discovery").exists()


def test_clean_removes_what_interrupted_imports_left(archive, tmp_path):
    import os
    import time

    path, keys = archive
    target = tmp_path / "target"
    transfer.import_archive(path, target)
    staging = target / ".import-killed"
    retired = target / "kernels" / keys[0][:2] / f".retired-{keys[0]}-1-2"
    fresh = target / ".import-running"
    for directory in (staging, retired, fresh):
        (directory / "sub").mkdir(parents=True)
        (directory / "sub" / "kernel.py").write_text("x = 1\n")
    hours_ago = time.time() - 2 * inventory.LEFTOVER_AGE_S
    for directory in (staging, retired):
        os.utime(directory, (hours_ago, hours_ago))
    removed = inventory.clean(target, older_than_s=10 * 86400)
    assert sorted(r["path"] for r in removed) == sorted([str(staging), str(retired)])
    assert {r["reason"] for r in removed} == {"leftover"}
    assert not staging.exists() and not retired.exists() and fresh.exists()
    assert inventory.verify(target) == [] and len(inventory.scan(target)) == 2


def _package_cache(root):
    """One generated CPU kernel entry (the store checks bytes and metadata only, so any bytes are a package)."""
    def build(workspace):
        (workspace / "model.so").write_bytes(b"\x7fELF a model's library")
        return {"overload": "aten::exp", "dtype": "complex32", "torch": "x"}

    store, key = Store(CPU_KERNELS, root), "ab" * 32
    store.ensure(key, build)
    return store, key


def test_generated_cpu_kernels_travel_verified(tmp_path):
    source = tmp_path / "source"
    _make_cache(source)
    _, key = _package_cache(source)
    path = tmp_path / "all.tar.gz"
    report = transfer.export(path, source)
    assert (report["entries"], report["cpu_kernels"]) == (3, 1)
    assert transfer.export(tmp_path / "cuda.tar.gz", source, devices={"cuda"})["cpu_kernels"] == 0
    assert transfer.export(tmp_path / "bc.tar.gz", source, dtype="bcomplex32")["cpu_kernels"] == 0
    result = transfer.import_archive(path, tmp_path / "target")
    assert (result["entries"], result["installed"]) == (3, 3)
    entry = Store(CPU_KERNELS, tmp_path / "target").read(key)
    assert entry.meta["overload"] == "aten::exp" and _files(tmp_path / "target" / "cpu_kernels") == _files(
        source / "cpu_kernels")
    assert transfer.import_archive(path, tmp_path / "target")["kept"] == 3

    # a package changed after export, with the manifest rewritten to match: its own metadata refuses it
    members = {}
    with tarfile.open(path) as tar:
        for member in tar.getmembers():
            members[member.name] = tar.extractfile(member).read()
    name = f"cpu_kernels/{key}/model.so"
    members[name] = b"PK\x03\x04 something else"
    manifest = json.loads(members["manifest.json"])
    manifest["entries"]["cpu_kernels"][key]["model.so"] = hashlib.sha256(members[name]).hexdigest()
    members["manifest.json"] = json.dumps(manifest).encode()
    forged = tmp_path / "forged.tar.gz"
    with tarfile.open(forged, "w:gz") as tar:
        for member_name, data in members.items():
            info = tarfile.TarInfo(member_name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with pytest.raises(transfer.ArchiveRefused, match="model.so does not match its recorded sha256"):
        transfer.import_archive(forged, tmp_path / "fresh")
    assert not (tmp_path / "fresh" / "cpu_kernels").exists() or not any((tmp_path / "fresh" / "cpu_kernels").rglob("*.so"))


def test_every_exported_kind_round_trips_and_the_guard_stays(tmp_path):
    """Kernels (with their Triton files), generated CPU kernels and discovery results travel byte for byte and
    verified; the compiled guard, built for one machine's torch and compiler, is not exported."""
    source, target = tmp_path / "source", tmp_path / "target"
    _make_cache(source)
    _package_cache(source)
    discovery_key = "cd" * 32

    def result(workspace):
        (workspace / f"cpu-torch2.14.1-{discovery_key}.json").write_text('{"findings": []}')
        return {"device_type": "cpu"}

    def library(workspace):
        (workspace / "libjitdtypes_guard.so").write_bytes(b"\x7fELF")
        return {}

    Store(DISCOVERY, source).ensure(discovery_key, result)
    Store(GUARD, source).ensure("ef" * 32, library)
    path = tmp_path / "all.tar.gz"
    report = transfer.export(path, source, discovery_keys={discovery_key})
    assert (report["entries"], report["cpu_kernels"], report["discovery"]) == (3, 1, 1)
    with tarfile.open(path) as tar:
        assert {name.split("/")[0] for name in tar.getnames()} == {"manifest.json", KERNELS, CPU_KERNELS, DISCOVERY}
    imported = transfer.import_archive(path, target, discovery_refusal=lambda record: None)
    assert imported == {"entries": 3, "installed": 3, "kept": 0, "discovery_installed": 1, "discovery_skipped": {}}
    for kind in (KERNELS, CPU_KERNELS, DISCOVERY):
        assert _files(target / kind) == _files(source / kind), kind
    assert not (target / GUARD).exists()
    assert inventory.verify(target) == [] and len(inventory.scan(target)) == 4
