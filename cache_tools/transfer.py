"""`jitdtypes cache export` / `import`: entries of every kind but the compiled guard, as one .tar.gz.

    manifest.json                           {"format": FORMAT, "entries": {kind: {key: {relative path: sha256}}}}
    kernels/<key>/kernel.py, meta.json      a kernel entry as the store keeps it (store.py)
    kernels/<key>/triton/<dir>/<file>       its Triton cache files (triton_artifacts.py)
    cpu_kernels/<key>/<model>.so, meta.json a generated CPU kernel (an older one: kernel.pt2)
    discovery/<key>/<device>-torch<v>-<key>.json, meta.json
                                            a discovery result, so a node with the same torch build need not probe

The compiled guard is not exported: it is built for one machine's torch installation, compiler and C++ ABI, and
loading a library runs its code; a node builds its own in about 20 s.

An archive holds code that gets executed, and tar can describe far more than files: import reads member headers
itself instead of trusting tarfile's extraction (no `filter=` guarantee on every supported Python). It accepts
only regular files (and directories, which it ignores) at the paths above, refuses absolute paths, `..`,
symbolic and hard links, devices and FIFOs, duplicate names, members over a size limit and archives over a
total limit, all with an ArchiveRefused naming the member. Files go to a private staging directory inside the
cache (so the final renames stay on one file system); only when every file matches the manifest and every entry
its own metadata (store.checked_meta: key, every file's sha256; Triton files) is anything installed: each entry
under its lock, by renaming its whole directory into place, so readers see an entry whole or not at all. Two
imports of one archive at once both succeed; the second finds the first's entries intact and keeps them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
import shutil
import tarfile
import tempfile
import time
from pathlib import Path, PurePosixPath

from . import atomic, inventory, locations, triton_artifacts
from .store import (CPU_KERNELS, DISCOVERY, KERNELS, KEY, META, SOURCE, CorruptEntry, InsecureEntry, Store,
                    checked_meta, sha256, this_user)

FORMAT = "jitdtypes-cache/2"
MANIFEST = "manifest.json"
MAX_MEMBER_BYTES = 256 << 20  # a cubin of the largest GEMM is a few hundred KiB
MAX_TOTAL_BYTES = 8 << 30
MAX_MEMBERS = 200_000
# the kinds an archive carries, and the names of their files besides meta.json
FILES = {KERNELS: re.compile(re.escape(SOURCE)), CPU_KERNELS: re.compile(r"[a-z_]+\.(so|json)|kernel\.pt2"),
         DISCOVERY: re.compile(r"[a-z]+-torch[0-9A-Za-z.+_-]+-[0-9a-f]{64}\.json")}


class ArchiveRefused(Exception):
    """The archive is malformed, hostile or damaged: nothing of it was installed."""


@dataclasses.dataclass
class Limits:
    member_bytes: int = MAX_MEMBER_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    members: int = MAX_MEMBERS


# -- export ------------------------------------------------------------------------------------------------

def _entry_files(directory: Path) -> dict[str, bytes]:
    return {path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def export(out: Path, root: Path | None = None, dtype: str | None = None, devices: set[str] | None = None,
           discovery_keys=()) -> dict:
    """Write the intact kernel and generated CPU kernel entries (of `dtype`, for device kinds in `devices`, when
    given) and the intact discovery results of `discovery_keys` to `out`; returns {"entries" (kernels and
    generated CPU kernels), "cpu_kernels", "discovery", "files", "bytes" (uncompressed), "archive_bytes"}.
    Damaged entries are left out."""
    chosen = [r for r in inventory.scan(root, tuple(FILES)) if r.problem is None and (
        r.key in discovery_keys if r.kind == DISCOVERY else
        (dtype is None or r.meta.get("dtype") == dtype) and (devices is None or r.meta.get("device") in devices))]
    entries = {(r.kind, r.key): _entry_files(r.directory) for r in chosen}
    listed: dict[str, dict] = {kind: {} for kind in FILES}
    for (kind, key), files in entries.items():
        listed[kind][key] = {name: sha256(data) for name, data in files.items()}
    manifest = {"format": FORMAT, "created": time.time(), "entries": listed}
    out = Path(out)
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one beside it
        raise type(exc)(exc.errno, exc.strerror, str(out)) from None
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
            _add(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
            for (kind, key), files in entries.items():
                for name, data in files.items():
                    _add(tar, f"{kind}/{key}/{name}", data)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"entries": len(listed[KERNELS]) + len(listed[CPU_KERNELS]), "cpu_kernels": len(listed[CPU_KERNELS]),
            "discovery": len(listed[DISCOVERY]), "files": sum(len(f) for f in entries.values()),
            "bytes": sum(len(d) for f in entries.values() for d in f.values()), "archive_bytes": out.stat().st_size}


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
    tar.addfile(info, io.BytesIO(data))


# -- import ------------------------------------------------------------------------------------------------

def _checked_name(member: tarfile.TarInfo) -> tuple[str, str, str] | None:
    """(kind, key, path inside the entry) of an entry's file, ("", "", MANIFEST) for the manifest, None for a
    directory."""
    name = member.name
    if name.startswith("/"):
        raise ArchiveRefused(f"{name!r}: absolute path")
    if ".." in name.split("/"):
        raise ArchiveRefused(f"{name!r}: '..' in path")
    parts = PurePosixPath(name).parts
    if "\\" in name or name.rstrip("/") != "/".join(parts):
        raise ArchiveRefused(f"{name!r}: not a plain relative path")
    if not member.isfile() and not member.isdir():
        kind = ("symbolic link" if member.issym() else "hard link" if member.islnk() else
                "device file" if member.ischr() or member.isblk() else "FIFO" if member.isfifo() else "special member")
        raise ArchiveRefused(f"{name!r}: {kind}")
    if member.isdir():
        if parts[0] in FILES:
            return None
        raise ArchiveRefused(f"{name!r}: unexpected directory")
    if parts == (MANIFEST,):
        return "", "", MANIFEST
    if len(parts) >= 3 and parts[0] in FILES and KEY.fullmatch(parts[1]):
        kind, key, inner = parts[0], parts[1], parts[2:]
        if len(inner) == 1 and (inner[0] == META or FILES[kind].fullmatch(inner[0])):
            return kind, key, inner[0]
        if (kind == KERNELS and len(inner) == 3 and inner[0] == triton_artifacts.FOLDER
                and triton_artifacts.valid_dir_name(inner[1]) and triton_artifacts.valid_file_name(inner[2])):
            return kind, key, "/".join(inner)
    raise ArchiveRefused(f"{name!r}: not a path a jitdtypes cache archive holds")


def _stage(archive: Path, staging: Path, limits: Limits) -> tuple[dict, dict[str, dict[str, dict[str, str]]]]:
    """Copy the archive's files into `staging`/<kind>/<key>/, checking every member header first; (manifest,
    {kind: {key: {path: sha256 of the bytes staged}}}). OSError when the file cannot be read, ArchiveRefused when
    what it holds is refused."""
    manifest, staged, seen, total = None, {}, set(), 0
    raw = open(archive, "rb")  # apart from the tar reader: a missing or unreadable file stays an OSError
    try:
        tar = tarfile.open(fileobj=raw, mode="r:gz")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raw.close()
        raise ArchiveRefused(f"{archive}: not a gzip-compressed tar archive ({exc})") from exc
    with raw, tar:
        count = 0
        while True:
            try:
                member = tar.next()
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise ArchiveRefused(f"{archive}: damaged archive ({exc})") from exc
            if member is None:
                break
            count += 1
            if count > limits.members:
                raise ArchiveRefused(f"{archive}: more than {limits.members} members")
            where = _checked_name(member)
            if where is None:
                continue
            if member.name in seen:
                raise ArchiveRefused(f"{member.name!r}: appears twice")
            seen.add(member.name)
            if member.size > limits.member_bytes:
                raise ArchiveRefused(f"{member.name!r}: {member.size:,} bytes, over the {limits.member_bytes:,}-byte "
                                     "limit per member")
            total += member.size
            if total > limits.total_bytes:
                raise ArchiveRefused(f"{archive}: over the {limits.total_bytes:,}-byte limit in all")
            try:
                data = tar.extractfile(member).read()
            except (tarfile.TarError, OSError, EOFError) as exc:
                raise ArchiveRefused(f"{member.name!r}: unreadable ({exc})") from exc
            if len(data) != member.size:
                raise ArchiveRefused(f"{member.name!r}: truncated")
            kind, key, path = where
            if path == MANIFEST:
                try:
                    manifest = json.loads(data)
                except ValueError as exc:
                    raise ArchiveRefused(f"{MANIFEST}: not JSON ({exc})") from exc
                continue
            target = staging / kind / key / path
            locations.ensure_dir(target.parent)
            atomic.write_bytes(target, data)
            staged.setdefault(kind, {}).setdefault(key, {})[path] = sha256(data)
    return manifest, staged


def _verify(manifest, staged: dict[str, dict[str, dict[str, str]]], staging: Path) -> None:
    """Every staged file is the manifest's, and every staged entry is one file and its metadata, intact by that
    metadata (and a kernel's Triton files by theirs)."""
    if (not isinstance(manifest, dict) or manifest.get("format") != FORMAT
            or not isinstance(manifest.get("entries"), dict)
            or not all(isinstance(keys, dict) for keys in manifest["entries"].values())):
        raise ArchiveRefused(f"no {MANIFEST} of format {FORMAT}")
    listed = {(kind, key): files for kind, keys in manifest["entries"].items() for key, files in keys.items()}
    found = {(kind, key): files for kind, keys in staged.items() for key, files in keys.items()}
    if set(listed) != set(found):
        differ = sorted("/".join(pair) for pair in set(listed) ^ set(found))
        raise ArchiveRefused(f"entries differ from the manifest: {differ[:3]}")
    for (kind, key), files in sorted(found.items()):
        expected = listed[kind, key] if isinstance(listed[kind, key], dict) else {}
        if expected != files:
            wrong = sorted(p for p in set(files) | set(expected) if files.get(p) != expected.get(p))
            raise ArchiveRefused(f"{kind}/{key}/{wrong[0]}: does not match the manifest's sha256")
        directory = staging / kind / key
        try:
            meta = checked_meta(directory, key, this_user())
        except (CorruptEntry, InsecureEntry) as exc:
            raise ArchiveRefused(f"{kind}/{key}: {getattr(exc, 'problem', exc)}") from exc
        if len(meta["files"]) != 1:
            raise ArchiveRefused(f"{kind}/{key}: not one file and its metadata")
        problems = triton_artifacts.problems(directory, meta)
        listed_triton = {f"{triton_artifacts.FOLDER}/{r['dir']}/{n}" for r in meta.get(triton_artifacts.RECORDS, [])
                         for n in r["files"]} if not problems else set()
        extra = sorted(set(files) - {META, *meta["files"]} - listed_triton)
        if problems or extra:
            raise ArchiveRefused(f"{kind}/{key}: {problems[0] if problems else f'{extra[0]} is not in its metadata'}")


def _records(meta: dict) -> set[str]:
    return {r["dir"] for r in meta.get(triton_artifacts.RECORDS, [])}


def _install(store: Store, key: str, staged_entry: Path) -> bool:
    """Put one verified entry in place under its lock; False when an intact entry already holds as much (its
    Triton compilations included)."""
    with store.lock(key):
        new_meta = json.loads((staged_entry / META).read_text())
        try:
            existing = store.read(key)
        except (CorruptEntry, InsecureEntry):
            existing = None  # damaged or not ours: replaced below
        if (existing is not None and not triton_artifacts.problems(existing.directory, existing.meta)
                and _records(new_meta) <= _records(existing.meta)):
            return False
        store.put_in_place(key, staged_entry)
        return True


def import_archive(archive: Path, root: Path | None = None, limits: Limits | None = None,
                   discovery_refusal=lambda path: "not checked") -> dict:
    """Verify the whole archive, then install each entry atomically; {"entries" (kernels and generated CPU
    kernels), "installed", "kept", "discovery_installed", "discovery_skipped"}. A discovery result is installed
    where `discovery_refusal(its file)` returns None (the caller knows which torch build may use it) and no
    intact one is present. Raises ArchiveRefused (nothing installed) when any member or hash is refused."""
    root = root or locations.cache_root()
    locations.ensure_dir(root)
    staging = Path(tempfile.mkdtemp(prefix=inventory.IMPORT_STAGING, dir=root))
    try:
        manifest, staged = _stage(Path(archive), staging, limits or Limits())
        _verify(manifest, staged, staging)
        report = {"entries": 0, "installed": 0, "kept": 0, "discovery_installed": 0, "discovery_skipped": {}}
        for kind in sorted(staged):
            store = Store(kind, root)
            for key in sorted(staged[kind]):
                entry = staging / kind / key
                if kind == DISCOVERY:
                    (name,) = json.loads((entry / META).read_text())["files"]
                    reason = discovery_refusal(entry / name)
                    if reason is None and not _install(store, key, entry):
                        reason = "already present"
                    if reason is None:
                        report["discovery_installed"] += 1
                    else:
                        report["discovery_skipped"][name] = reason
                    continue
                installed = _install(store, key, entry)
                report["entries"] += 1
                report["installed" if installed else "kept"] += 1
        return report
    finally:
        shutil.rmtree(staging, ignore_errors=True)
