"""Triton cache entries that belong to a kernel entry: compiled ahead of time (`jitdtypes warm --arch`), kept
inside the kernel entry, exported and imported with it, and copied into Triton's own cache before the kernel
first runs, so that Triton finds its compiled code instead of compiling.

Triton's file cache (triton/runtime/cache.py) keeps one directory per compilation, named by the base32 of
sha256(its cache key), holding the stage files and a group file `__grp__<kernel>.json` that lists their
absolute paths. A kernel entry keeps the files a TRITON_STORE_BINARY_ONLY cache keeps (the source, the binary,
the metadata json: everything CompiledKernel loads and launches) with their sha256 in meta.json:

    <entry>/triton/<dir>/<kernel>.cubin ...        meta["triton_cache"] = [{"dir": <dir>, "files": {name: sha256}}]

The group file is written fresh wherever the files are installed (its paths are absolute). Files are checked
against their recorded sha256, and for ownership and permissions, before they are copied: Triton loads what
its cache holds without checking it, so only verified bytes go there.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from . import atomic
from .store import CorruptEntry, check_trusted, sha256

FOLDER = "triton"
RECORDS = "triton_cache"  # the meta.json field ("triton" holds the version)
KEPT_SUFFIXES = (".json", ".cubin", ".source")
_DIR_NAME = re.compile(r"[A-Z2-7]{52}")  # base32 of a sha256, unpadded
_FILE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")


def valid_dir_name(name: str) -> bool:
    return bool(_DIR_NAME.fullmatch(name))


def valid_file_name(name: str) -> bool:
    return bool(_FILE_NAME.fullmatch(name)) and not name.startswith("__grp__") and ".." not in name


def triton_cache_dir() -> Path:
    """Where this process's Triton keeps its file cache (TRITON_CACHE_DIR, else ~/.triton/cache)."""
    try:
        from triton import knobs

        return Path(knobs.cache.dir)
    except (ImportError, AttributeError):  # a triton without knobs
        configured = os.environ.get("TRITON_CACHE_DIR")
        return Path(configured) if configured else Path.home() / ".triton" / "cache"


def capture(metadata_group: dict[str, str]) -> tuple[str, dict[str, bytes]]:
    """(Triton cache directory name, {file name: bytes}) of one compilation, from the metadata_group that
    triton.compile's CompiledKernel (or a compilation listener) reports."""
    paths = {name: Path(path) for name, path in metadata_group.items() if name.endswith(KEPT_SUFFIXES)}
    directories = {path.parent.name for path in paths.values()}
    if len(directories) != 1 or not any(name.endswith(".json") for name in paths):
        raise ValueError(f"not one Triton cache entry with its metadata: {sorted(metadata_group)}")
    return directories.pop(), {name: path.read_bytes() for name, path in paths.items()}


def attach(entry_directory: Path, meta: dict, compiled: list[tuple[str, dict[str, bytes]]]) -> dict:
    """Write captured compilations into the entry and return its metadata listing them (the caller holds the
    entry's lock and writes the metadata after the files, so listed files are always complete)."""
    records = {record["dir"]: record for record in meta.get(RECORDS, [])}
    for name, files in compiled:
        folder = entry_directory / FOLDER / name
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        for file_name, data in files.items():
            atomic.write_bytes(folder / file_name, data)
        records[name] = {"dir": name, "files": {file_name: sha256(data) for file_name, data in sorted(files.items())}}
    return {**meta, RECORDS: [records[name] for name in sorted(records)]}


def problems(entry_directory: Path, meta: dict) -> list[str]:
    """What is wrong with the Triton files an entry lists: malformed names, missing files, wrong sha256."""
    found = []
    records = meta.get(RECORDS, [])
    if not isinstance(records, list):
        return [f"meta.json: {RECORDS!r} is not a list"]
    for record in records:
        name = record.get("dir", "") if isinstance(record, dict) else ""
        files = record.get("files") if isinstance(record, dict) else None
        if not valid_dir_name(name) or not isinstance(files, dict) or not files:
            found.append(f"malformed Triton record {str(record)[:80]}")
            continue
        if not any(file_name.endswith(".json") for file_name in files):
            found.append(f"Triton entry {name} lists no metadata file")
        for file_name, digest in files.items():
            path = entry_directory / FOLDER / name / file_name
            if not valid_file_name(file_name):
                found.append(f"Triton file name {file_name!r} is not allowed")
            elif not path.is_file():
                found.append(f"Triton file {name}/{file_name} is missing")
            elif sha256(path) != digest:
                found.append(f"Triton file {name}/{file_name} does not match its recorded sha256")
    return found


def install(entry_directory: Path, meta: dict, owners: frozenset[int], triton_dir: Path | None = None) -> int:
    """Copy the entry's Triton compilations into Triton's cache where absent; returns how many were copied.
    Raises CorruptEntry (listed files damaged) or InsecureEntry (not owned by `owners`, or writable by others)
    before anything is copied for that compilation."""
    triton_dir = triton_dir or triton_cache_dir()
    copied = 0
    for record in meta.get(RECORDS, []):
        name, files = record["dir"], record["files"]
        target = triton_dir / name
        metadata_name = next(file_name for file_name in files if file_name.endswith(".json"))
        group = target / f"__grp__{metadata_name}"
        if group.is_file() and all((target / file_name).is_file() for file_name in files):
            continue  # Triton has it (compiled here, or copied by an earlier process)
        source = entry_directory / FOLDER / name
        for path in (entry_directory / FOLDER, source):
            check_trusted(path, owners)
        blobs = {}
        for file_name, digest in files.items():
            if not valid_file_name(file_name):
                raise CorruptEntry(entry_directory, f"Triton file name {file_name!r} is not allowed")
            try:
                check_trusted(source / file_name, owners)
                data = (source / file_name).read_bytes()
            except FileNotFoundError as exc:
                raise CorruptEntry(entry_directory, f"Triton file {name}/{file_name} is missing") from exc
            if sha256(data) != digest:
                raise CorruptEntry(entry_directory, f"Triton file {name}/{file_name} does not match its sha256")
            blobs[file_name] = data
        target.mkdir(parents=True, exist_ok=True)
        for file_name, data in blobs.items():
            atomic.write_bytes(target / file_name, data)
        # the group file last: Triton treats an entry as present once its group names existing files
        atomic.write_text(group, json.dumps({"child_paths": {n: str(target / n) for n in blobs}}))
        copied += 1
    return copied

