"""The compiled-guard cache: one directory per key, holding a shared library and its metadata.

    <root>/guard/<key>/libjitdtypes_guard.so    built from jitdtypes/native_guard/guard.cpp
    <root>/guard/<key>/meta.json                {"key", "sha256", "bytes", "created", "torch", "compiler", ...}
    <root>/guard/<key>.lock                     serializes the build of one key across processes
    <root>/guard/<key>.failed.json              a build of this key that failed: {"key", "compiler", "error",
                                                "output", "created", "torch"}; no entry directory then

A build happens in a private temporary directory next to the entries, which is renamed into place once the
library and its metadata are complete: an entry directory is whole or absent. A library is handed out for
loading only after its ownership, permissions and sha256 were checked, since loading it runs its code.
A failed build is remembered (written whole, read only when private to the user) so that later imports do not
pay for the compiler again; it counts for the compiler that failed, and removing it asks for a new build.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from filelock import FileLock

from . import atomic, locations
from .store import FAILED, META, CorruptEntry, FailureRecords, check_private

LIBRARY = "libjitdtypes_guard.so"


@dataclasses.dataclass
class GuardEntry:
    key: str
    directory: Path
    meta: dict

    @property
    def library(self) -> Path:
        return self.directory / LIBRARY


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class GuardStore(FailureRecords):
    def __init__(self, root: Path | None = None) -> None:
        self.root = (root or locations.cache_root()) / "guard"

    def directory(self, key: str) -> Path:
        return self.root / key

    def lock(self, key: str) -> FileLock:
        locations.ensure_dir(self.root)
        return FileLock(str(self.root / f"{key}.lock"))

    def read(self, key: str) -> GuardEntry | None:
        """The entry for `key`, None if absent; InsecureEntry if it or a directory above it could have been
        written by someone else; CorruptEntry if present but not intact."""
        directory = self.directory(key)
        if not directory.exists():
            return None
        for path in (self.root.parent, self.root, directory, directory / LIBRARY, directory / META):
            if path.exists():
                check_private(path)
        try:
            meta = json.loads((directory / META).read_text())
        except (OSError, ValueError) as exc:
            raise CorruptEntry(f"{directory}: metadata unreadable ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise CorruptEntry(f"{directory}: metadata does not name this key")
        try:
            digest = sha256_file(directory / LIBRARY)
        except OSError as exc:
            raise CorruptEntry(f"{directory}: library unreadable ({exc})") from exc
        if digest != meta.get("sha256"):
            raise CorruptEntry(f"{directory}: library does not match its recorded sha256")
        return GuardEntry(key, directory, meta)

    def workspace(self) -> Path:
        """A private temporary directory on the same file system, for one build."""
        locations.ensure_dir(self.root)
        return Path(tempfile.mkdtemp(prefix=".build-", dir=self.root))

    def install(self, key: str, workspace: Path, meta: dict) -> GuardEntry:
        """Make the library built in `workspace` the entry for `key` (callers hold its lock)."""
        library = workspace / LIBRARY
        meta = {**meta, "key": key, "sha256": sha256_file(library), "bytes": library.stat().st_size,
                "created": time.time()}
        atomic.write_text(workspace / META, json.dumps(meta, indent=1, sort_keys=True))
        os.chmod(library, 0o700)
        target = self.directory(key)
        if target.exists():
            shutil.rmtree(target)  # a damaged entry: we hold the lock
        os.replace(workspace, target)
        return GuardEntry(key, target, meta)

    def failure_path(self, key: str) -> Path:
        return self.root / f"{key}{FAILED}"

    def entries(self) -> list[Path]:
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith("."))
