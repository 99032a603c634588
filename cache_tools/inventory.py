"""What the cache holds, and the operations on it behind `jitdtypes cache ...`: scan, info, verify, clean. Every
kind is seen through the one store (store.py), so that list, info, verify and clean agree. Everything here
tolerates damaged entries (it reports them) and never imports cached code."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

from . import locations, triton_artifacts
from .store import (CPU_KERNELS, DISCOVERY, FAILED, GUARD, KERNELS, KEY, KINDS, LOCK, META, RETIRED, WORK, CorruptEntry,
                    InsecureEntry, Store)

VERSION_FIELDS = ("torch", "triton", "jitdtypes")
# metadata fields a row shows, of whichever kinds have them
COLUMNS = ("family", "op", "dtype", "layout", "device", *VERSION_FIELDS, "overload", "compiler", "device_type",
           "overrides", "build_seconds")
# An import stages files in <root>/.import-*, a build works in <kind>/.work-*, a replaced entry is retired to
# <kind>/<xx>/.retired-*; a process killed meanwhile leaves them. Older than this, no running one still uses one.
IMPORT_STAGING = ".import-"
LEFTOVER_AGE_S = 3600.0


@dataclasses.dataclass
class Record:
    """One entry as found on disk: its metadata when readable, and what is wrong with it if anything."""

    kind: str
    key: str
    directory: Path
    meta: dict
    problem: str | None
    bytes: int

    @property
    def path(self) -> Path:
        """The entry's file (the first it lists), or its directory when the metadata does not say."""
        files = self.meta.get("files")
        return self.directory / sorted(files)[0] if isinstance(files, dict) and files else self.directory

    def row(self) -> dict:
        meta = self.meta
        return {"kind": self.kind, "key": self.key, **{field: meta.get(field) for field in COLUMNS},
                "op": _op(meta), "bytes": self.bytes, "created": meta.get("created"),
                "last_used": meta.get("last_used", meta.get("created")), "path": str(self.path),
                "problem": self.problem}


def _op(meta: dict) -> str | None:
    """The op an entry serves: a kernel's, or a generated CPU kernel's overload's (aten::add.Tensor -> add)."""
    overload = meta.get("overload")
    return meta.get("op") or (overload.removeprefix("aten::").split(".")[0] if isinstance(overload, str) else None)


def what(kind: str, meta: dict) -> str:
    """An entry in a few words, for what `cache clean` removes."""
    return {KERNELS: str(meta.get("op")), CPU_KERNELS: f"generated {meta.get('overload')}", GUARD: "compiled guard",
            DISCOVERY: "discovery"}[kind]


def _size(path: Path) -> int:
    if not path.is_dir() or path.is_symlink():
        return path.lstat().st_size if path.exists() or path.is_symlink() else 0
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file())


def _meta(directory: Path) -> dict | None:
    try:
        meta = json.loads((directory / META).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def scan(root: Path | None = None, kinds=KINDS) -> list[Record]:
    """Every entry of `kinds` under the cache root, damaged ones included (with `problem` set); an older
    layout's entries are left to old_layout()."""
    root = root or locations.cache_root()
    records = []
    for kind in kinds:
        store = Store(kind, root)
        for directory in store.entries():
            meta = _meta(directory)
            if meta is not None and "files" not in meta:
                continue  # an older layout's entry
            problem = None
            try:
                store.read(directory.name)
            except CorruptEntry as exc:
                problem = exc.problem
            except (InsecureEntry, OSError) as exc:
                problem = str(exc)
            if problem is None:
                problem = "; ".join(triton_artifacts.problems(directory, meta)) or None
            records.append(Record(kind, directory.name, directory, meta or {}, problem, _size(directory)))
    return records


def failures(root: Path | None = None, kinds=KINDS) -> list[dict]:
    """Every remembered failed build of `kinds` (store.py's <key>.failed.json)."""
    rows = []
    for kind in kinds:
        store = Store(kind, root or locations.cache_root())
        for key in store.failures():
            path, record = store.failure_path(key), store.read_failure(key) or {}
            compiler = record.get("compiler")
            rows.append({"kind": kind, "key": key, "path": str(path), "bytes": _size(path),
                         "torch": record.get("torch"), "overload": record.get("overload"),
                         "dtype": record.get("dtype"), "compiler": compiler[0] if isinstance(compiler, list) else None,
                         "created": record.get("created"), "error": record.get("error"),
                         "problem": None if record else "unreadable or not private"})
    return rows


def old_layout(root: Path | None = None, kinds=KINDS) -> list[Path]:
    """What an older cache layout left in the kinds' folders (guard/<key>/, discovery/*.json, cpu_kernels' 40-digit
    keys, kernel entries whose metadata lists no files): never read; `cache clean --stale` removes it."""
    root = root or locations.cache_root()
    found = []
    for kind in kinds:
        folder = root / kind
        for path in sorted(folder.iterdir()) if folder.is_dir() else []:
            if path.name.startswith(WORK):
                continue  # a build's workspace: leftovers()
            if path.name.endswith(LOCK) and path.is_file():
                continue  # a kind-wide lock (cpu_kernels' lazy build slot): removing it would let two hold it
            if len(path.name) != 2 or not path.is_dir() or path.is_symlink():
                found.append(path)
                continue
            for inner in sorted(path.iterdir()):
                if inner.name.startswith(RETIRED):
                    continue  # leftovers()
                key = inner.name.removesuffix(LOCK).removesuffix(FAILED)
                meta = _meta(inner) if inner.name == key else None
                if not KEY.fullmatch(key) or not key.startswith(path.name) or (meta is not None and "files" not in meta):
                    found.append(inner)
    return found


def leftovers(root: Path | None = None) -> list[Path]:
    """Staging, workspace and retired directories that interrupted imports and builds left."""
    root = root or locations.cache_root()
    found = list(root.glob(f"{IMPORT_STAGING}*"))
    for kind in KINDS:
        found += list((root / kind).glob(f"{WORK}*")) + list((root / kind).glob(f"??/{RETIRED}*"))
    return sorted(path for path in found if path.is_dir() and not path.is_symlink())


def info(root: Path | None = None) -> dict:
    """Counts and bytes per kind from one scan (so that `cache list` and `cache info` agree), the versions that
    made the entries, the discovery results and compiled guards row by row, remembered failed builds, and what
    an older layout left."""
    root = root or locations.cache_root()
    records, failed, old = scan(root), failures(root), old_layout(root)
    kinds = {kind: {"entries": 0, "bytes": 0, "damaged": 0, "failures": 0} for kind in KINDS}
    versions: dict[tuple, int] = {}
    for record in records:
        counts = kinds[record.kind]
        counts["entries"] += 1
        counts["bytes"] += record.bytes
        counts["damaged"] += record.problem is not None
        version = (record.kind, *(record.meta.get(field) for field in VERSION_FIELDS))
        versions[version] = versions.get(version, 0) + 1
    for failure in failed:
        kinds[failure["kind"]]["failures"] += 1
    old_rows = [{"path": str(path), "bytes": _size(path)} for path in old]
    return {
        "dir": str(root),
        "entries": len(records),
        "bytes": sum(r.bytes for r in records) + sum(f["bytes"] for f in failed) + sum(o["bytes"] for o in old_rows),
        "damaged": sum(r.problem is not None for r in records),
        "kinds": kinds,
        "versions": [dict(zip(("kind", *VERSION_FIELDS), v), entries=n) for v, n in sorted(versions.items(), key=str)],
        DISCOVERY: [r.row() for r in records if r.kind == DISCOVERY],
        GUARD: [r.row() for r in records if r.kind == GUARD],
        "failures": failed,
        "old_layout": old_rows,
    }


def verify(root: Path | None = None, fix: bool = False, records: list[Record] | None = None) -> list[dict]:
    """The damaged entries of every kind (metadata, every file's sha256, Triton files, ownership and permissions)
    among `records` (default: a scan); with fix, they are removed."""
    records = scan(root) if records is None else records
    damaged = [{"kind": r.kind, "key": r.key, "path": str(r.directory), "problem": r.problem}
               for r in records if r.problem]
    if fix:
        for item in damaged:
            _remove(Path(item["path"]))
    return [{**item, "removed": fix} for item in damaged]


def parse_age(text: str) -> float:
    """'30d', '12h', '45m', '90s' -> seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    if not text or text[-1] not in units or not text[:-1].replace(".", "", 1).isdigit():
        raise ValueError(f"not an age like 30d, 12h, 45m or 90s: {text!r}")
    return float(text[:-1]) * units[text[-1]]


def clean(
    root: Path | None = None, *, everything: bool = False, older_than_s: float | None = None,
    dtype: str | None = None, stale_for: dict | None = None, current: dict[str, set[str]] | None = None,
    kinds=KINDS, dry_run: bool = False,
) -> list[dict]:
    """Remove the entries of `kinds` matching any given criterion, and what interrupted imports and builds left
    over an hour ago; returns what was (or, dry run, would be) removed.

    stale_for: the current {"torch", "triton", "jitdtypes"} versions. An entry is then stale when its kind is in
    `current` ({kind: the keys this torch build and jitdtypes look up}: discovery, guard, cpu_kernels) and its
    key is not, or else (kernels, whose keys cannot be listed) when its versions differ. Remembered failed builds
    are all forgotten (the next need builds again), and what an older layout left goes."""
    root = root or locations.cache_root()
    now, current = time.time(), current or {}
    chosen = []

    def choose(path, kind, key, op, found_dtype, reasons):
        if any(chose for _, chose in reasons):
            chosen.append({"path": str(path), "kind": kind, "key": key, "bytes": _size(path), "op": op,
                           "dtype": found_dtype, "reason": ", ".join(reason for reason, chose in reasons if chose)})

    def older(timestamp) -> bool:
        return older_than_s is not None and now - float(timestamp or 0) > older_than_s

    for record in scan(root, kinds):
        meta = record.meta
        stale = stale_for is not None and (record.key not in current[record.kind] if record.kind in current else
                                           any(meta.get(f) != stale_for.get(f) for f in VERSION_FIELDS))
        choose(record.directory, record.kind, record.key, what(record.kind, meta), meta.get("dtype"), [
            ("all", everything), ("unused", older(meta.get("last_used", meta.get("created")))),
            (f"dtype {dtype}", dtype is not None and meta.get("dtype") == dtype), ("stale", stale)])
    for failure in failures(root, kinds):
        label = "failed guard build" if failure["kind"] == GUARD else \
            f"failed build of {what(failure['kind'], failure)}"
        choose(Path(failure["path"]), failure["kind"], failure["key"], label, failure["dtype"], [
            ("all", everything), ("stale", stale_for is not None), ("unused", older(failure["created"])),
            (f"dtype {dtype}", dtype is not None and failure["dtype"] == dtype)])
    for path in old_layout(root, kinds):
        choose(path, path.relative_to(root).parts[0], None, "older cache layout", None,
               [("all", everything), ("stale", stale_for is not None)])
    for path in leftovers(root):
        choose(path, None, None, "interrupted import or build", None,
               [("leftover", now - path.stat().st_mtime > LEFTOVER_AGE_S)])
    if not dry_run:
        for item in chosen:
            _remove(Path(item["path"]))
    return chosen


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)
