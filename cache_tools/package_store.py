"""The generated CPU kernels' cache: one content-addressed directory per key, holding an AOTInductor package.

    <root>/cpu_kernels/<key[:2]>/<key>/kernel.pt2   the package (a zip of the compiled .so and its metadata)
    <root>/cpu_kernels/<key[:2]>/<key>/meta.json    {"key", "sha256", "bytes", "created", "last_used", ...}
    <root>/cpu_kernels/<key[:2]>/<key>.lock         serializes building one key across processes
    <root>/cpu_kernels/<key[:2]>/<key>.failed.json  a build of this key that failed ({"key", "created", "error",
                                                    "torch", "overload", "dtype"}); no entry directory then

The rules of store.py: the package is written before the metadata, each atomically, so an entry without valid
metadata is incomplete and one whose package does not hash to meta["sha256"] is corrupt; entries and the
directories above them must belong to this user and be writable by nobody else. Neither is ever loaded.
A failed build is remembered (store.FailureRecords), so that later processes do not pay for it again.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from pathlib import Path

from . import atomic, locations
from .store import FAILED, CorruptEntry, Entry, FailureRecords, KeyedStore

PACKAGE, META = "kernel.pt2", "meta.json"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class PackageStore(KeyedStore, FailureRecords):
    FOLDER, FILES = "cpu_kernels", (PACKAGE, META)

    def failure_path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}{FAILED}"

    def read(self, key: str) -> Entry | None:
        """The entry for `key` (its `source` is the package's path), None if absent; InsecureEntry or
        CorruptEntry as KernelStore.read."""
        directory = self.existing(key)
        if directory is None:
            return None
        try:
            meta = json.loads((directory / META).read_text())
            digest = sha256_of(directory / PACKAGE)
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            raise CorruptEntry(f"{directory}: unreadable ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise CorruptEntry(f"{directory}: metadata does not name this key")
        if digest != meta.get("sha256"):
            raise CorruptEntry(f"{directory}: package does not match its recorded sha256")
        return Entry(key, directory, str(directory / PACKAGE), meta)

    def write(self, key: str, package: Path, meta: dict) -> Entry:
        """Store the package file at `package` under `key` (callers hold its lock)."""
        directory = locations.ensure_dir(self.directory(key))
        data = Path(package).read_bytes()
        now = time.time()
        meta = {**meta, "key": key, "sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data),
                "created": now, "last_used": now}
        try:
            atomic.write_bytes(directory / PACKAGE, data)
            atomic.write_text(directory / META, json.dumps(meta, indent=1, sort_keys=True))
        except OSError:
            shutil.rmtree(directory, ignore_errors=True)
            raise
        return Entry(key, directory, str(directory / PACKAGE), meta)
