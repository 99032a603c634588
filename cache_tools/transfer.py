"""`jitdtypes cache export` / `import`: kernel entries, with their Triton cache files, as one .tar.gz.

    manifest.json                           {"format": FORMAT, "entries": {key: {relative path: sha256}},
                                             "discovery": {file name: sha256}}
    kernels/<key>/kernel.py, meta.json      the entry as the store keeps it
    kernels/<key>/triton/<dir>/<file>       its Triton cache files (triton_artifacts.py)
    cpu_kernels/<key>/kernel.pt2, meta.json a generated CPU kernel's package as package_store.py keeps it
                                            (listed under "cpu_kernels" in the manifest)
    discovery/<device>-torch<v>-<key>.json  discovery results, so a node with the same torch build need not probe

An archive holds code that gets executed, and tar can describe far more than files: import reads member headers
itself instead of trusting tarfile's extraction (no `filter=` guarantee on every supported Python). It accepts
only regular files (and directories, which it ignores) at the paths above, refuses absolute paths, `..`,
symbolic and hard links, devices and FIFOs, duplicate names, members over a size limit and archives over a
total limit, all with an ArchiveRefused naming the member. Files go to a private staging directory inside the
cache's kernels/ folder (so the final renames stay on one file system); only when every file matches the
manifest and every entry its own metadata (key, source sha256, Triton files) is anything installed: each entry
under its lock, by renaming its whole directory into place, so readers see an entry whole or not at all. Two
imports of one archive at once both succeed; the second finds the first's entries intact and keeps them.
"""

from __future__ import annotations

import dataclasses
import hashlib
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
from . import package_store
from .package_store import PackageStore
from .store import META, SOURCE, CorruptEntry, InsecureEntry, KernelStore

FORMAT = "jitdtypes-cache/1"
MANIFEST = "manifest.json"
MAX_MEMBER_BYTES = 256 << 20  # a cubin of the largest GEMM is a few hundred KiB
MAX_TOTAL_BYTES = 8 << 30
MAX_MEMBERS = 200_000
_KEY = re.compile(r"[0-9a-f]{64}")
_PACKAGE_KEY = re.compile(r"[0-9a-f]{40}")
_DISCOVERY_NAME = re.compile(r"[a-z]+-torch[0-9A-Za-z.+_-]+-[0-9a-f]{16}\.json")
DISCOVERY = "discovery"
PACKAGES = PackageStore.FOLDER  # "cpu_kernels": in the archive as in the cache


class ArchiveRefused(Exception):
    """The archive is malformed, hostile or damaged: nothing of it was installed."""


@dataclasses.dataclass
class Limits:
    member_bytes: int = MAX_MEMBER_BYTES
    total_bytes: int = MAX_TOTAL_BYTES
    members: int = MAX_MEMBERS


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# -- export ------------------------------------------------------------------------------------------------

def _entry_files(directory: Path) -> dict[str, bytes]:
    return {path.relative_to(directory).as_posix(): path.read_bytes()
            for path in sorted(directory.rglob("*")) if path.is_file()}


def export(out: Path, root: Path | None = None, dtype: str | None = None, devices: set[str] | None = None,
           discovery_records: list[Path] = ()) -> dict:
    """Write the intact kernel entries and generated CPU kernels (of `dtype`, for device kinds in `devices`,
    when given) and the given discovery result files to `out`; returns {"entries" (both kinds), "cpu_kernels",
    "files", "bytes" (uncompressed), "archive_bytes", "discovery"}. Damaged entries are left out."""
    records = [r for r in inventory.scan(root) if r.problem is None
               and (dtype is None or r.meta.get("dtype") == dtype)
               and (devices is None or r.meta.get("device") in devices)]
    kernels = {record.key: _entry_files(record.directory) for record in records}
    packages = {found["key"]: _entry_files(Path(found["path"]).parent) for found in inventory.cpu_kernel_entries(root)
                if found["problem"] is None and (dtype is None or found["dtype"] == dtype)
                and (devices is None or "cpu" in devices)}
    entries = {**{f"kernels/{key}": files for key, files in kernels.items()},
               **{f"{PACKAGES}/{key}": files for key, files in packages.items()}}
    discovery = {Path(path).name: Path(path).read_bytes() for path in discovery_records}
    digests = lambda found: {key: {name: _sha256(data) for name, data in files.items()}  # noqa: E731
                             for key, files in found.items()}
    manifest = {"format": FORMAT, "created": time.time(), "entries": digests(kernels),
                PACKAGES: digests(packages), DISCOVERY: {name: _sha256(data) for name, data in discovery.items()}}
    out = Path(out)
    try:
        fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    except OSError as exc:  # name the file asked for, not the temporary one beside it
        raise type(exc)(exc.errno, exc.strerror, str(out)) from None
    try:
        with os.fdopen(fd, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz", compresslevel=6) as tar:
            _add(tar, MANIFEST, json.dumps(manifest, indent=1, sort_keys=True).encode())
            for folder, files in entries.items():
                for name, data in files.items():
                    _add(tar, f"{folder}/{name}", data)
            for name, data in discovery.items():
                _add(tar, f"{DISCOVERY}/{name}", data)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return {"entries": len(entries), "cpu_kernels": len(packages), "files": sum(len(f) for f in entries.values()),
            "bytes": sum(len(d) for f in entries.values() for d in f.values()), "archive_bytes": out.stat().st_size,
            "discovery": len(discovery)}


def _add(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(time.time())
    tar.addfile(info, io.BytesIO(data))


# -- import ------------------------------------------------------------------------------------------------

def _checked_name(member: tarfile.TarInfo) -> tuple[str, str] | None:
    """(key, path inside the entry) of a kernel file, ("cpu_kernels/<key>", file name) of a generated CPU
    kernel's, ("", MANIFEST) for the manifest, (DISCOVERY, file name) for a discovery result, None for a
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
        if parts[:1] in (("kernels",), (DISCOVERY,), (PACKAGES,)):
            return None
        raise ArchiveRefused(f"{name!r}: unexpected directory")
    if parts == (MANIFEST,):
        return "", MANIFEST
    if len(parts) == 2 and parts[0] == DISCOVERY and _DISCOVERY_NAME.fullmatch(parts[1]):
        return DISCOVERY, parts[1]
    if (len(parts) == 3 and parts[0] == PACKAGES and _PACKAGE_KEY.fullmatch(parts[1])
            and parts[2] in PackageStore.FILES):
        return f"{PACKAGES}/{parts[1]}", parts[2]
    if len(parts) >= 3 and parts[0] == "kernels" and _KEY.fullmatch(parts[1]):
        inner = parts[2:]
        if inner in ((SOURCE,), (META,)):
            return parts[1], inner[0]
        if (len(inner) == 3 and inner[0] == triton_artifacts.FOLDER and triton_artifacts.valid_dir_name(inner[1])
                and triton_artifacts.valid_file_name(inner[2])):
            return parts[1], "/".join(inner)
    raise ArchiveRefused(f"{name!r}: not a path a jitdtypes cache archive holds")


def _stage(archive: Path, staging: Path, limits: Limits) -> tuple[dict, dict[str, dict[str, str]]]:
    """Copy the archive's files into `staging`, checking every member header first; (manifest, {key: {path:
    sha256 of the bytes staged}}). OSError when the file cannot be read, ArchiveRefused when what it holds is
    refused."""
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
            key, path = where
            if path == MANIFEST:
                try:
                    manifest = json.loads(data)
                except ValueError as exc:
                    raise ArchiveRefused(f"{MANIFEST}: not JSON ({exc})") from exc
                continue
            target = staging / key / path  # DISCOVERY and cpu_kernels/<key> are not kernel keys: no clash
            locations.ensure_dir(target.parent)
            atomic.write_bytes(target, data)
            staged.setdefault(key, {})[path] = _sha256(data)
    return manifest, staged


def _verify(manifest, staged: dict[str, dict[str, str]], staging: Path) -> None:
    if (not isinstance(manifest, dict) or manifest.get("format") != FORMAT
            or not isinstance(manifest.get("entries"), dict)):
        raise ArchiveRefused(f"no {MANIFEST} of format {FORMAT}")
    listed = manifest["entries"]
    if staged.get(DISCOVERY, {}) != manifest.get(DISCOVERY, {}):
        raise ArchiveRefused(f"{DISCOVERY}/: files differ from the manifest's names and sha256s")
    _verify_packages(manifest.get(PACKAGES, {}), _staged_packages(staged), staging / PACKAGES)
    staged = {key: files for key, files in staged.items() if key != DISCOVERY and not key.startswith(PACKAGES)}
    if set(listed) != set(staged):
        raise ArchiveRefused(f"entries differ from the manifest: {sorted(set(listed) ^ set(staged))[:3]}")
    for key, files in staged.items():
        if listed[key] != files:
            wrong = sorted(p for p in set(files) | set(listed[key]) if files.get(p) != listed[key].get(p))
            raise ArchiveRefused(f"kernels/{key}/{wrong[0]}: does not match the manifest's sha256")
        directory = staging / key
        try:
            meta = json.loads((directory / META).read_text())
            source = (directory / SOURCE).read_bytes()
        except (OSError, ValueError) as exc:
            raise ArchiveRefused(f"kernels/{key}: no readable {SOURCE} and {META} ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise ArchiveRefused(f"kernels/{key}/{META}: does not name this key")
        if _sha256(source) != meta.get("sha256"):
            raise ArchiveRefused(f"kernels/{key}/{SOURCE}: does not match its recorded sha256")
        problems = triton_artifacts.problems(directory, meta)
        listed_triton = {f"{triton_artifacts.FOLDER}/{r['dir']}/{n}" for r in meta.get(triton_artifacts.RECORDS, [])
                         for n in r["files"]} if not problems else set()
        extra = sorted(set(files) - {SOURCE, META} - listed_triton)
        if problems or extra:
            raise ArchiveRefused(f"kernels/{key}: {problems[0] if problems else f'{extra[0]} is not in its metadata'}")


def _staged_packages(staged: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    return {key.split("/", 1)[1]: files for key, files in staged.items() if key.startswith(f"{PACKAGES}/")}


def _verify_packages(listed, staged: dict[str, dict[str, str]], staging: Path) -> None:
    """Every staged package is the manifest's, names its key and matches its recorded sha256."""
    if not isinstance(listed, dict) or listed != staged:
        raise ArchiveRefused(f"{PACKAGES}/: files differ from the manifest's names and sha256s")
    for key, files in staged.items():
        if set(files) != set(PackageStore.FILES):
            raise ArchiveRefused(f"{PACKAGES}/{key}: not a package and its metadata")
        try:
            meta = json.loads((staging / key / package_store.META).read_text())
        except (OSError, ValueError) as exc:
            raise ArchiveRefused(f"{PACKAGES}/{key}/{package_store.META}: unreadable ({exc})") from exc
        if not isinstance(meta, dict) or meta.get("key") != key or meta.get("sha256") != files[package_store.PACKAGE]:
            raise ArchiveRefused(f"{PACKAGES}/{key}: its metadata does not name this key and package")


def _install_package(store: PackageStore, key: str, staged_entry: Path) -> bool:
    """Put one verified package in place under its lock; False when an intact one is there already."""
    with store.lock(key):
        try:
            if store.read(key) is not None:
                return False
        except (CorruptEntry, InsecureEntry):
            pass  # damaged or not ours: replaced
        _put_in_place(staged_entry, store.directory(key), key)
        return True


def _records(meta: dict) -> set[str]:
    return {r["dir"] for r in meta.get(triton_artifacts.RECORDS, [])}


def _install(store: KernelStore, key: str, staged_entry: Path) -> bool:
    """Put one verified entry in place under its lock; False when an intact entry already holds as much."""
    with store.lock(key):
        new_meta = json.loads((staged_entry / META).read_text())
        try:
            existing = store.read(key)
        except (CorruptEntry, InsecureEntry):
            existing = None  # damaged or not ours: replaced below
        if (existing is not None and not triton_artifacts.problems(existing.directory, existing.meta)
                and _records(new_meta) <= _records(existing.meta)):
            return False
        _put_in_place(staged_entry, store.directory(key), key)
        return True


def _put_in_place(staged_entry: Path, target: Path, key: str) -> None:
    """Rename the staged entry to `target`, over whatever is there, so that readers see one or the other."""
    if target.exists() or target.is_symlink():
        retired = target.parent / f".retired-{key}-{os.getpid()}-{time.time_ns()}"
        os.rename(target, retired)
        os.rename(staged_entry, target)
        shutil.rmtree(retired, ignore_errors=True)
    else:
        os.rename(staged_entry, target)


def _install_discovery(root: Path, staged: Path, refusal) -> tuple[int, dict[str, str]]:
    """Install the staged discovery results that `refusal(path)` (None: usable here, else why not) accepts and
    the cache lacks; (installed, {name: why skipped})."""
    installed, skipped = 0, {}
    folder = root / DISCOVERY
    for path in sorted(staged.glob("*.json")) if staged.is_dir() else []:
        reason = refusal(path)
        if reason is None and (folder / path.name).exists():
            reason = "already present"
        if reason is not None:
            skipped[path.name] = reason
            continue
        locations.ensure_dir(folder)
        os.replace(path, folder / path.name)  # the same file system (staging is inside the cache)
        installed += 1
    return installed, skipped


def import_archive(archive: Path, root: Path | None = None, limits: Limits | None = None,
                   discovery_refusal=lambda path: "not checked") -> dict:
    """Verify the whole archive, then install each entry atomically; {"entries", "installed", "kept",
    "discovery_installed", "discovery_skipped"}. Discovery results are installed where
    `discovery_refusal(path)` returns None (the caller knows which torch build may use them). Raises
    ArchiveRefused (nothing installed) when any member or hash is refused."""
    store = KernelStore(root)
    locations.ensure_dir(store.root)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=store.root))
    try:
        manifest, staged = _stage(Path(archive), staging, limits or Limits())
        _verify(manifest, staged, staging)
        keys = sorted(key for key in staged if key != DISCOVERY and not key.startswith(PACKAGES))
        installed = 0
        for key in keys:
            locations.ensure_dir(store.root / key[:2])
            installed += _install(store, key, staging / key)
        packages, package_keys = PackageStore(store.root.parent), sorted(_staged_packages(staged))
        for key in package_keys:
            locations.ensure_dir(packages.root / key[:2])
            installed += _install_package(packages, key, staging / PACKAGES / key)
        keys += package_keys
        discovery_installed, discovery_skipped = _install_discovery(store.root.parent, staging / DISCOVERY,
                                                                    discovery_refusal)
        return {"entries": len(keys), "installed": installed, "kept": len(keys) - installed,
                "discovery_installed": discovery_installed, "discovery_skipped": discovery_skipped}
    finally:
        shutil.rmtree(staging, ignore_errors=True)
