"""The kernel cache: one content-addressed directory per key, holding the rendered source and its metadata.

    <root>/kernels/<key[:2]>/<key>/kernel.py    rendered Triton module
    <root>/kernels/<key[:2]>/<key>/meta.json    {"key", "sha256", "bytes", "created", "last_used", ...}
    <root>/kernels/<key[:2]>/<key>/triton/<dir>/ Triton cache files compiled ahead of time for this kernel
                                                (meta["triton_cache"]: their Triton cache directory names and sha256s,
                                                see triton_artifacts.py)
    <root>/kernels/<key[:2]>/<key>.lock         serializes generation of one key across processes

Source is written before metadata, each atomically (temp name + os.replace), so an entry without valid
metadata is incomplete and an entry whose source does not hash to meta["sha256"] is corrupt: neither is
ever handed out for import.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import stat
import time
from pathlib import Path

from filelock import FileLock

from . import atomic, locations

SOURCE, META = "kernel.py", "meta.json"


class CorruptEntry(Exception):
    """An entry exists but its source or metadata cannot be trusted."""


class InsecureEntry(Exception):
    """An entry, or a directory above it, could have been written by someone else: it is not imported."""


def this_user() -> frozenset[int]:
    return frozenset({os.getuid()}) if hasattr(os, "getuid") else frozenset()


def check_trusted(path: Path, owners: frozenset[int]) -> None:
    """Raise InsecureEntry unless `path` is owned by one of `owners`, not group/world writable, not a symlink
    (no owners: a platform without uids, where ownership is not checked)."""
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode):
        raise InsecureEntry(f"{path} is a symbolic link")
    if owners and info.st_uid not in owners:
        who = "this user" if owners == this_user() else "this user or root"
        raise InsecureEntry(f"{path} is owned by uid {info.st_uid}, not by {who}")
    if info.st_mode & 0o022:
        raise InsecureEntry(f"{path} is writable by group or others (mode {stat.S_IMODE(info.st_mode):o})")


def check_private(path: Path) -> None:
    """Raise InsecureEntry unless `path` is owned by this user, not group/world writable, not a symlink."""
    check_trusted(path, this_user())


@dataclasses.dataclass
class Entry:
    key: str
    directory: Path
    source: str
    meta: dict

    @property
    def source_path(self) -> Path:
        return self.directory / SOURCE


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


FAILED = ".failed.json"


class FailureRecords:
    """Builds that failed, remembered per key as <failure_path(key)> (written whole, read only when private to
    the user), so that later processes do not pay for the build again: {"key", "created", ...what failed}."""

    root: Path

    def failure_path(self, key: str) -> Path:
        raise NotImplementedError

    def record_failure(self, key: str, record: dict) -> None:
        locations.ensure_dir(self.failure_path(key).parent)
        record = {**record, "key": key, "created": time.time()}
        atomic.write_text(self.failure_path(key), json.dumps(record, indent=1, sort_keys=True))

    def read_failure(self, key: str) -> dict | None:
        """The remembered failed build of `key`, or None: absent, unreadable, or writable by someone else (a
        record only ever suppresses a build, so one that cannot be trusted is ignored and the build retried)."""
        path = self.failure_path(key)
        try:
            check_private(path)
            record = json.loads(path.read_text())
        except (OSError, ValueError, InsecureEntry):
            return None
        return record if isinstance(record, dict) and record.get("key") == key else None

    def forget_failure(self, key: str) -> None:
        self.failure_path(key).unlink(missing_ok=True)

    def failures(self) -> list[Path]:
        """Every remembered failed build, of any key."""
        return sorted(self.root.glob(f"**/*{FAILED}")) if self.root.is_dir() else []


class KeyedStore:
    """One content-addressed directory per key under <cache>/<FOLDER>/<key[:2]>/<key>, with its lock beside it.
    owners: the uids an entry and its directories may belong to (default: this user; read-only layers also
    accept root, see layers.py)."""

    FOLDER = ""
    FILES: tuple[str, ...] = ()  # an entry's files, checked like its directories

    def __init__(self, root: Path | None = None, owners: frozenset[int] | None = None) -> None:
        self.root = (root or locations.cache_root()) / self.FOLDER
        self.owners = this_user() if owners is None else owners

    def directory(self, key: str) -> Path:
        return self.root / key[:2] / key

    def lock(self, key: str) -> FileLock:
        locations.ensure_dir(self.root / key[:2])
        return FileLock(str(self.root / key[:2] / f"{key}.lock"))

    def existing(self, key: str) -> Path | None:
        """The entry's directory, None if absent; InsecureEntry if it, one of its files or a directory above it
        could have been written by someone else."""
        directory = self.directory(key)
        if not directory.exists():
            return None
        for path in (self.root.parent, self.root, directory.parent, directory, *(directory / f for f in self.FILES)):
            if path.exists():
                check_trusted(path, self.owners)
        return directory

    def touch(self, entry: Entry) -> None:
        """Record a use (best effort: a read-only cache still serves its entries)."""
        entry.meta["last_used"] = time.time()
        try:
            atomic.write_text(entry.directory / META, json.dumps(entry.meta, indent=1, sort_keys=True))
        except OSError:
            pass


class KernelStore(KeyedStore):
    FOLDER, FILES = "kernels", (SOURCE, META)

    def read(self, key: str) -> Entry | None:
        """The entry for `key`, None if absent; InsecureEntry if it or a directory above it could have been
        written by someone else; CorruptEntry if present but not intact."""
        directory = self.existing(key)
        if directory is None:
            return None
        try:
            meta = json.loads((directory / META).read_text())
            source = (directory / SOURCE).read_text()
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptEntry(f"{directory}: unreadable ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise CorruptEntry(f"{directory}: metadata does not name this key")
        if sha256(source) != meta.get("sha256"):
            raise CorruptEntry(f"{directory}: source does not match its recorded sha256")
        return Entry(key, directory, source, meta)

    def write(self, key: str, source: str, meta: dict) -> Entry:
        """Write an entry (callers hold its lock); on failure (full disk, read-only) nothing half-written stays."""
        directory = locations.ensure_dir(self.directory(key))
        now = time.time()
        meta = {**meta, "key": key, "sha256": sha256(source), "bytes": len(source.encode()),
                "created": now, "last_used": now}
        try:
            atomic.write_text(directory / SOURCE, source)
            atomic.write_text(directory / META, json.dumps(meta, indent=1, sort_keys=True))
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Entry(key, directory, source, meta)

    def write_meta(self, entry: Entry) -> None:
        """Replace an entry's metadata (callers hold its lock)."""
        atomic.write_text(entry.directory / META, json.dumps(entry.meta, indent=1, sort_keys=True))

