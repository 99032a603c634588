"""The cache spine: one store for every kind of entry jitdtypes keeps, one key recipe, one check-lock-check.

    <root>/<kind>/<key[:2]>/<key>/              an entry: its files and meta.json
    <root>/<kind>/<key[:2]>/<key>.lock          serializes building one key across processes
    <root>/<kind>/<key[:2]>/<key>.failed.json   a build of this key that failed (then there is no entry)
    <root>/<kind>/.work-*/                      a build in progress, renamed into place when whole
    <root>/<kind>/<key[:2]>/.retired-*/         an entry being replaced

The kinds (KINDS): `kernels` (kernel.py, a rendered Triton module, and triton/: Triton's cache files compiled
ahead of time, see triton_artifacts.py), `cpu_kernels` (<model>.so per model of an AOTInductor package), `guard`
(libjitdtypes_guard.so, the compiled dispatch guard) and `discovery` (<device>-torch<version>-<key>.json, a
discovery result). A key is cache_key(kind, content, environment): the sha256 of what the entry is made from
(a source digest, template parameters) and of what it was made for (torch, triton and jitdtypes versions,
device, compiler), 64 hex digits for every kind.

meta.json = {"key", "files": {name: sha256}, "bytes", "created", "last_used", ...what the kind adds}. A build
writes its files into a private workspace inside the kind's folder, the metadata last, and the whole directory
is renamed into place: an entry is whole or absent. An entry is handed out only when it names its key, every
file it lists matches its sha256, and it, its files and every directory from the root down belong to `owners`
and are writable by nobody else: the cache holds code that gets executed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable

from filelock import FileLock

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None  # type: ignore[assignment]

from . import atomic, locations

KINDS = KERNELS, CPU_KERNELS, GUARD, DISCOVERY = ("kernels", "cpu_kernels", "guard", "discovery")
SOURCE, LIBRARY = "kernel.py", "libjitdtypes_guard.so"  # the file of a kernels entry, of a guard entry
META, LOCK, FAILED, WORK, RETIRED = "meta.json", ".lock", ".failed.json", ".work-", ".retired-"
KEY = re.compile(r"[0-9a-f]{64}")
TOUCH_EVERY_S = 3600.0  # last_used is rewritten at most this often: `cache clean --older-than` counts in days


class CorruptEntry(Exception):
    """An entry exists but its metadata or files cannot be trusted to be what was built."""

    def __init__(self, directory: Path, problem: str) -> None:
        super().__init__(f"{directory}: {problem}")
        self.directory, self.problem = directory, problem


class InsecureEntry(Exception):
    """An entry, or a directory above it, could have been written by someone else: it is not used."""


class BuildFailed(RuntimeError):
    """A build that failed for reasons a retry would meet again (a compiler error): `ensure` remembers it.
    `record`: what to remember besides the message (the compiler, its output)."""

    def __init__(self, message: str, record: dict | None = None) -> None:
        super().__init__(message)
        self.record = dict(record or {})


class RememberedFailure(BuildFailed):
    """`ensure` found a failed build of this key remembered: not built again unless retried."""

    def __init__(self, record: dict) -> None:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(float(record.get("created") or 0)))
        super().__init__(f"{record.get('error')} (failed at {when})", record)
        self.when = when


def cache_key(kind: str, content: str, environment: dict) -> str:
    """The key of an entry of `kind`: sha256 of a canonical JSON of what it is made from and made for."""
    if kind not in KINDS:
        raise ValueError(f"not a kind of cache entry: {kind!r} (one of {', '.join(KINDS)})")
    return sha256(json.dumps({"kind": kind, "content": content, "environment": environment}, sort_keys=True))


def sha256(source: bytes | str | Path) -> str:
    """The hex sha256 of bytes, of a str's UTF-8 encoding, or of a file's content (read in blocks)."""
    if isinstance(source, Path):
        digest = hashlib.sha256()
        with source.open("rb") as file:
            for block in iter(lambda: file.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    return hashlib.sha256(source.encode() if isinstance(source, str) else source).hexdigest()


def _workspace_prefix(key: str | None) -> str:
    return f"{WORK}{key[:16]}-" if key else WORK


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


def checked_meta(directory: Path, key: str, owners: frozenset[int]) -> dict:
    """The metadata of the entry in `directory` if it names `key` and every file it lists is there, trusted
    (check_trusted) and matching its sha256; CorruptEntry or InsecureEntry naming what is wrong otherwise."""
    try:
        check_trusted(directory / META, owners)
        meta = json.loads((directory / META).read_text())
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise CorruptEntry(directory, f"metadata unreadable ({exc})") from exc
    if not isinstance(meta, dict) or meta.get("key") != key:
        raise CorruptEntry(directory, "metadata does not name this key")
    files = meta.get("files")
    if not isinstance(files, dict) or not files:
        raise CorruptEntry(directory, "metadata lists no files")
    for name, digest in files.items():
        path = directory / name
        if name in (META, "", ".", "..") or "/" in name or "\\" in name:
            raise CorruptEntry(directory, f"{name!r} is not a file name an entry may hold")
        try:
            check_trusted(path, owners)
            actual = sha256(path)
        except FileNotFoundError as exc:
            raise CorruptEntry(directory, f"{name} is missing") from exc
        except OSError as exc:
            raise CorruptEntry(directory, f"{name} unreadable ({exc})") from exc
        if actual != digest:
            raise CorruptEntry(directory, f"{name} does not match its recorded sha256")
    return meta


@dataclasses.dataclass
class Entry:
    key: str
    directory: Path
    meta: dict

    @property
    def files(self) -> dict[str, Path]:
        """The entry's files (meta.json aside), by name."""
        return {name: self.directory / name for name in self.meta["files"]}

    def read_bytes(self, name: str) -> bytes:
        """The content of file `name`, checked against its recorded sha256 (what is executed is what was
        verified, however the file changed since `read`)."""
        data = (self.directory / name).read_bytes()
        if sha256(data) != self.meta["files"][name]:
            raise CorruptEntry(self.directory, f"{name} does not match its recorded sha256")
        return data


class Store:
    """The entries of one kind under <root>/<kind> (root: the cache root, default locations.cache_root()).
    owners: the uids an entry and its directories may belong to (default: this user; read-only layers also
    accept root, see layers.py)."""

    def __init__(self, kind: str, root: Path | None = None, owners: frozenset[int] | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"not a kind of cache entry: {kind!r} (one of {', '.join(KINDS)})")
        self.kind = kind
        self.root = (root or locations.cache_root()) / kind
        self.owners = this_user() if owners is None else owners

    def directory(self, key: str) -> Path:
        if not isinstance(key, str) or not KEY.fullmatch(key):
            raise ValueError(f"not a cache key: {key!r} (64 lowercase hex digits, cache_key's)")
        return self.root / key[:2] / key

    def lock(self, key: str) -> FileLock:
        directory = self.directory(key)
        locations.ensure_dir(directory.parent)
        return FileLock(f"{directory}{LOCK}")

    def read(self, key: str) -> Entry | None:
        """The entry for `key`, None if absent; InsecureEntry if it, a file of it or a directory above it could
        have been written by someone else; CorruptEntry if present but not intact."""
        directory = self.directory(key)
        if not directory.exists() and not directory.is_symlink():
            return None
        for path in (self.root.parent, self.root, directory.parent, directory):
            check_trusted(path, self.owners)
        return Entry(key, directory, checked_meta(directory, key, self.owners))

    def workspace(self, key: str | None = None) -> Path:
        """A private directory for one build, inside the kind's folder (so that the rename into place stays on
        one file system, and a build may outlive the process that started it); named after `key` when given,
        so that the next build of that key finds what a killed one left (`ensure`)."""
        locations.ensure_dir(self.root)
        return Path(tempfile.mkdtemp(prefix=_workspace_prefix(key), dir=self.root))

    def handover_lock(self, name: str) -> int:
        """Block until this process holds the exclusive lock `<kind>/<name>`; its file descriptor, which a child
        process may inherit (subprocess's pass_fds): the lock is held until every process holding the
        descriptor closed it or ended, so a build handed to a child keeps it when its parent exits. Where
        there is no flock (Windows), a descriptor that locks nothing."""
        locations.ensure_dir(self.root)
        fd = os.open(self.root / name, os.O_RDWR | os.O_CREAT, 0o600)
        if fcntl is not None:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            except BaseException:
                os.close(fd)
                raise
        return fd

    def publish(self, key: str, workspace: Path, meta: dict) -> Entry:
        """Make the files at the top of `workspace` (from self.workspace()) the entry for `key`, over whatever
        is there (a damaged entry); callers hold the key's lock. The files become private to the user, their
        sha256s go into the metadata, written last, and the directory is renamed into place."""
        files = sorted(path for path in workspace.iterdir() if path.is_file() and not path.is_symlink())
        if not files:
            raise ValueError(f"{workspace}: the build of {key} left no file")
        for path in files:
            os.chmod(path, stat.S_IMODE(path.stat().st_mode) & 0o700)
        now = time.time()
        meta = {**meta, "key": key, "files": {path.name: sha256(path) for path in files},
                "bytes": sum(path.stat().st_size for path in files), "created": now, "last_used": now}
        atomic.write_text(workspace / META, json.dumps(meta, indent=1, sort_keys=True))
        self.put_in_place(key, workspace)
        return Entry(key, self.directory(key), meta)

    def put_in_place(self, key: str, directory: Path) -> None:
        """Rename the whole entry `directory` (on this file system) to the entry for `key`, over whatever is
        there, so that readers see one or the other; callers hold the key's lock."""
        target = self.directory(key)
        locations.ensure_dir(target.parent)
        if not target.exists() and not target.is_symlink():
            os.rename(directory, target)
            return
        retired = target.parent / f"{RETIRED}{key}-{os.getpid()}-{time.time_ns()}"
        os.rename(target, retired)
        os.rename(directory, target)
        if retired.is_symlink():
            retired.unlink()
        else:
            shutil.rmtree(retired, ignore_errors=True)

    def ensure(self, key: str, build: Callable[[Path], dict], *, retry: bool = False,
               failure_holds: Callable[[dict], bool] | None = None,
               damaged: Callable[[CorruptEntry], None] | None = None) -> tuple[Entry, bool]:
        """(The intact entry for `key`, False), or (the one `build` makes, True): check, lock, check again,
        build(workspace) -> metadata, publish.

        A build that raises BuildFailed is remembered (<key>.failed.json) and raised; later calls raise
        RememberedFailure at once, unless `retry` or `failure_holds(record)` says the record no longer holds
        (another compiler). Any other exception leaves neither a record nor a trace of the build; what a killed
        build left (its workspace) the next build of the key removes, under the lock. `damaged`
        hears of a damaged entry once (it is replaced by the build). InsecureEntry if the entry is not
        trusted; OSError if the cache cannot be written."""
        reported: list[CorruptEntry] = []

        def intact() -> Entry | None:
            try:
                return self.read(key)
            except CorruptEntry as exc:
                if damaged is not None and not reported:
                    damaged(exc)
                reported.append(exc)
                return None

        entry = intact()
        if entry is not None:
            self.touch(entry)
            return entry, False
        with self.lock(key):
            entry = intact()
            if entry is not None:
                return entry, False
            failure = None if retry else self.read_failure(key)
            if failure is not None and (failure_holds is None or failure_holds(failure)):
                raise RememberedFailure(failure)
            for dead in self.root.glob(f"{_workspace_prefix(key)}*"):  # under the lock: its builder is gone
                shutil.rmtree(dead, ignore_errors=True)
            workspace = self.workspace(key)
            try:
                try:
                    meta = build(workspace)
                except BuildFailed as exc:
                    self.record_failure(key, {**exc.record, "error": str(exc)})
                    raise
                entry = self.publish(key, workspace, meta)
            finally:
                shutil.rmtree(workspace, ignore_errors=True)  # gone already once published
            self.forget_failure(key)
            return entry, True

    def update(self, key: str, change: Callable[[Entry], dict]) -> Entry | None:
        """Under the key's lock, replace the intact entry's metadata by change(entry), which may first add
        files in subdirectories of the entry (triton_artifacts.attach): listed only once the metadata is
        written. None when there is no intact entry."""
        with self.lock(key):
            try:
                entry = self.read(key)
            except CorruptEntry:
                return None
            if entry is None:
                return None
            entry.meta = {**change(entry), "key": key, "files": entry.meta["files"]}
            atomic.write_text(entry.directory / META, json.dumps(entry.meta, indent=1, sort_keys=True))
            return entry

    def touch(self, entry: Entry) -> None:
        """Record a use, at most every TOUCH_EVERY_S (best effort: a read-only cache still serves entries)."""
        now = time.time()
        if now - float(entry.meta.get("last_used") or 0) < TOUCH_EVERY_S:
            return
        entry.meta["last_used"] = now
        try:
            atomic.write_text(entry.directory / META, json.dumps(entry.meta, indent=1, sort_keys=True))
        except OSError:
            pass

    def entries(self) -> list[Path]:
        """The directory of every entry (intact or not) in this layout: <key[:2]>/<key>."""
        if not self.root.is_dir():
            return []
        return sorted(path for shard in self.root.iterdir() if shard.is_dir() and not shard.is_symlink()
                      and len(shard.name) == 2 for path in shard.iterdir()
                      if KEY.fullmatch(path.name) and path.name.startswith(shard.name))

    # -- failed builds: remembered per key, written whole, read only when private to the user -----------------

    def failure_path(self, key: str) -> Path:
        return self.directory(key).with_name(f"{key}{FAILED}")

    def record_failure(self, key: str, record: dict) -> None:
        locations.ensure_dir(self.failure_path(key).parent)
        record = {**record, "key": key, "created": time.time()}
        atomic.write_text(self.failure_path(key), json.dumps(record, indent=1, sort_keys=True))

    def read_failure(self, key: str) -> dict | None:
        """The remembered failed build of `key`, or None: absent, unreadable, or writable by someone else (a
        record only ever suppresses a build, so one that cannot be trusted is ignored and the build retried)."""
        path = self.failure_path(key)
        try:
            check_trusted(path, this_user())
            record = json.loads(path.read_text())
        except (OSError, ValueError, InsecureEntry):
            return None
        return record if isinstance(record, dict) and record.get("key") == key else None

    def forget_failure(self, key: str) -> None:
        self.failure_path(key).unlink(missing_ok=True)

    def failures(self) -> list[str]:
        """The keys of every remembered failed build."""
        found = self.root.glob(f"??/*{FAILED}") if self.root.is_dir() else []
        return sorted(path.name[:-len(FAILED)] for path in found if KEY.fullmatch(path.name[:-len(FAILED)]))
