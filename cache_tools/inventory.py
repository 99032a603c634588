"""What the cache holds, and the operations on it behind `jitdtypes cache ...`: scan, info, list, verify,
clean. Everything here tolerates damaged entries (it reports them) and never imports cached code."""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

from . import locations, triton_artifacts
from .guard_store import LIBRARY, GuardStore
from .package_store import PACKAGE, PackageStore
from .store import FAILED, META, SOURCE, CorruptEntry, InsecureEntry, KernelStore

VERSION_FIELDS = ("torch", "triton", "jitdtypes")


@dataclasses.dataclass
class Record:
    """One kernel entry as found on disk: its metadata when readable, and what is wrong with it if anything."""

    key: str
    directory: Path
    meta: dict
    problem: str | None
    bytes: int

    def row(self) -> dict:
        meta = self.meta
        return {
            "key": self.key, "family": meta.get("family"), "op": meta.get("op"), "dtype": meta.get("dtype"),
            "layout": meta.get("layout"), "device": meta.get("device"), "bytes": self.bytes,
            "created": meta.get("created"), "last_used": meta.get("last_used"),
            **{field: meta.get(field) for field in VERSION_FIELDS},
            "path": str(self.directory / SOURCE), "problem": self.problem,
        }


def _size(directory: Path) -> int:
    return sum(p.lstat().st_size for p in directory.rglob("*") if p.is_file()) if directory.is_dir() else 0


def scan(root: Path | None = None) -> list[Record]:
    """Every kernel entry under the cache root, damaged ones included (with `problem` set)."""
    store = KernelStore(root or locations.cache_root())
    records = []
    if not store.root.is_dir():
        return records
    for shard in sorted(p for p in store.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for directory in sorted(p for p in shard.iterdir() if p.is_dir() and not p.name.startswith(".")):
            key, problem, meta = directory.name, None, {}
            try:
                meta = json.loads((directory / META).read_text())
                if not isinstance(meta, dict):
                    meta, problem = {}, "metadata is not a JSON object"
            except (OSError, ValueError) as exc:
                problem = f"metadata unreadable: {type(exc).__name__}"
            if problem is None:
                try:
                    store.read(key)
                except (CorruptEntry, InsecureEntry, OSError) as exc:
                    problem = str(exc).replace(f"{directory}: ", "")
            if problem is None:
                problem = "; ".join(triton_artifacts.problems(directory, meta)) or None
            records.append(Record(key, directory, meta, problem, _size(directory)))
    return records


def discovery_files(root: Path | None = None) -> list[dict]:
    folder = (root or locations.cache_root()) / "discovery"
    files = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            record = json.loads(path.read_text())
            summary = {"device_type": record.get("device_type"), "torch": record.get("torch"),
                       "jitdtypes": record.get("jitdtypes"), "overrides": len(record.get("findings", []))}
        except (OSError, ValueError, AttributeError):
            summary = {"problem": "unreadable"}
        files.append({"path": str(path), "bytes": path.stat().st_size, "created": path.stat().st_mtime, **summary})
    return files


# An import stages files in kernels/.import-* and retires replaced entries to kernels/<xx>/.retired-*; a
# process killed meanwhile leaves them. Older than this, no running import still uses one.
LEFTOVER_AGE_S = 3600.0


def leftovers(root: Path | None = None) -> list[Path]:
    """Staging and retired directories that interrupted imports left in the kernel store."""
    kernels = (root or locations.cache_root()) / "kernels"
    if not kernels.is_dir():
        return []
    found = list(kernels.glob(".import-*")) + list(kernels.glob("*/.retired-*"))
    return sorted(path for path in found if path.is_dir() and not path.is_symlink())


def guard_entries(root: Path | None = None) -> list[dict]:
    """Every compiled-guard build in the cache, damaged ones included (with `problem` set)."""
    store = GuardStore(root or locations.cache_root())
    entries = []
    for directory in store.entries():
        meta, problem = {}, None
        try:
            meta = store.read(directory.name).meta
        except (CorruptEntry, InsecureEntry, OSError) as exc:
            problem = str(exc).replace(f"{directory}: ", "")
        entries.append({"key": directory.name, "path": str(directory / LIBRARY), "bytes": _size(directory),
                        "torch": meta.get("torch"), "compiler": meta.get("compiler"), "created": meta.get("created"),
                        "build_seconds": meta.get("build_seconds"), "problem": problem})
    return entries


def _failure_rows(store, columns) -> list[dict]:
    """Every failed build `store` remembers (store.FailureRecords' `<key>.failed.json`), with the record's own
    `columns(record)` after the common ones."""
    rows = []
    for path in store.failures():
        key = path.name[: -len(FAILED)]
        record = store.read_failure(key) or {}
        rows.append({"key": key, "path": str(path), "bytes": path.lstat().st_size, "torch": record.get("torch"),
                     **columns(record), "created": record.get("created"), "error": record.get("error"),
                     "problem": None if record else "unreadable or not private"})
    return rows


def guard_failures(root: Path | None = None) -> list[dict]:
    """Every remembered failed compiled-guard build."""
    return _failure_rows(GuardStore(root or locations.cache_root()),
                         lambda record: {"compiler": (record.get("compiler") or [None])[0]})


def cpu_kernel_entries(root: Path | None = None) -> list[dict]:
    """Every generated CPU kernel (package_store.py) in the cache, damaged ones included (with `problem` set)."""
    store = PackageStore(root or locations.cache_root())
    entries = []
    for directory in sorted(store.root.glob("*/*")) if store.root.is_dir() else []:
        if not directory.is_dir() or directory.is_symlink():
            continue
        meta, problem = {}, None
        try:
            entry = store.read(directory.name)
            meta = entry.meta if entry is not None else {}
        except (CorruptEntry, InsecureEntry, OSError) as exc:
            problem = str(exc).replace(f"{directory}: ", "")
        entries.append({"key": directory.name, "path": str(directory / PACKAGE), "bytes": _size(directory),
                        "overload": meta.get("overload"), "dtype": meta.get("dtype"), "torch": meta.get("torch"),
                        "created": meta.get("created"), "last_used": meta.get("last_used", meta.get("created")),
                        "problem": problem})
    return entries


def cpu_kernel_failures(root: Path | None = None) -> list[dict]:
    """Every remembered failed build of a generated CPU kernel."""
    return _failure_rows(PackageStore(root or locations.cache_root()),
                         lambda record: {"overload": record.get("overload"), "dtype": record.get("dtype")})


def info(root: Path | None = None) -> dict:
    root = root or locations.cache_root()
    records = scan(root)
    versions: dict[tuple, int] = {}
    for record in records:
        version = tuple(record.meta.get(field) for field in VERSION_FIELDS)
        versions[version] = versions.get(version, 0) + 1
    discovery = discovery_files(root)
    guards = guard_entries(root)
    failures = guard_failures(root)
    generated = cpu_kernel_entries(root)
    generated_failures = cpu_kernel_failures(root)
    return {
        "dir": str(root),
        "entries": len(records),
        "bytes": sum(r.bytes for r in records) + sum(d["bytes"] for d in discovery)
        + sum(g["bytes"] for g in guards + failures + generated + generated_failures),
        "kernel_bytes": sum(r.bytes for r in records),
        "damaged": sum(r.problem is not None for r in records),
        "versions": [dict(zip(VERSION_FIELDS, v), entries=n) for v, n in sorted(versions.items(), key=str)],
        "discovery": discovery,
        "guard": guards,
        "guard_failures": failures,
        "cpu_kernels": generated,
        "cpu_kernel_failures": generated_failures,
    }


def verify(root: Path | None = None, fix: bool = False) -> list[dict]:
    """The damaged kernel, guard and generated CPU kernel entries (content hash, metadata, ownership/permissions);
    with fix, they are removed."""
    damaged = [{"key": r.key, "path": str(r.directory), "problem": r.problem} for r in scan(root) if r.problem]
    damaged += [{"key": g["key"], "path": str(Path(g["path"]).parent), "problem": g["problem"]}
                for g in guard_entries(root) + cpu_kernel_entries(root) if g["problem"]]
    if fix:
        for item in damaged:
            shutil.rmtree(item["path"], ignore_errors=True)
    return [{**item, "removed": fix} for item in damaged]


def parse_age(text: str) -> float:
    """'30d', '12h', '45m', '90s' -> seconds."""
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    if not text or text[-1] not in units or not text[:-1].replace(".", "", 1).isdigit():
        raise ValueError(f"not an age like 30d, 12h, 45m or 90s: {text!r}")
    return float(text[:-1]) * units[text[-1]]


def clean(
    root: Path | None = None, *, everything: bool = False, older_than_s: float | None = None,
    dtype: str | None = None, stale_for: dict | None = None, current_discovery: set[str] | None = None,
    current_guard: str | None = None, current_cpu_kernels: set[str] | None = None, dry_run: bool = False,
) -> list[dict]:
    """Remove entries matching any given criterion, and what interrupted imports left over an hour ago;
    returns what was (or, dry run, would be) removed.

    stale_for: the current {"torch", "triton", "jitdtypes"} versions; entries made by others are stale, as
    are discovery results other than `current_discovery` (the paths this build and jitdtypes would use),
    compiled guards other than `current_guard` (the key this torch build would load) and generated CPU kernels
    whose key is not in `current_cpu_kernels` (those this torch build and jitdtypes would look up)."""
    root = root or locations.cache_root()
    now = time.time()
    chosen = []
    for record in scan(root):
        meta = record.meta
        reasons = []
        if everything:
            reasons.append("all")
        if older_than_s is not None and now - float(meta.get("last_used") or 0) > older_than_s:
            reasons.append("unused")
        if dtype is not None and meta.get("dtype") == dtype:
            reasons.append(f"dtype {dtype}")
        if stale_for is not None and any(meta.get(f) != stale_for.get(f) for f in VERSION_FIELDS):
            reasons.append("stale")
        if reasons:
            chosen.append({"path": str(record.directory), "key": record.key, "bytes": record.bytes,
                           "op": meta.get("op"), "dtype": meta.get("dtype"), "reason": ", ".join(reasons)})
    for found in discovery_files(root):
        stale = stale_for is not None and found["path"] not in (current_discovery or set())
        old = older_than_s is not None and now - found["created"] > older_than_s
        if everything or stale or old:
            chosen.append({"path": found["path"], "key": None, "bytes": found["bytes"], "op": "discovery",
                           "dtype": None, "reason": "all" if everything else "stale" if stale else "unused"})
    for guard in guard_entries(root):
        stale = stale_for is not None and guard["key"] != current_guard
        old = older_than_s is not None and now - float(guard["created"] or 0) > older_than_s
        if everything or stale or old:
            chosen.append({"path": str(Path(guard["path"]).parent), "key": guard["key"], "bytes": guard["bytes"],
                           "op": "compiled guard", "dtype": None,
                           "reason": "all" if everything else "stale" if stale else "unused"})
    for failure in guard_failures(root):  # --stale forgets the current build's failure too: the next import retries
        old = older_than_s is not None and now - float(failure["created"] or 0) > older_than_s
        if everything or stale_for is not None or old:
            chosen.append({"path": failure["path"], "key": failure["key"], "bytes": failure["bytes"],
                           "op": "failed guard build", "dtype": None,
                           "reason": "all" if everything else "stale" if stale_for is not None else "unused"})
    for package in cpu_kernel_entries(root):
        stale = stale_for is not None and package["key"] not in (current_cpu_kernels or set())
        old = older_than_s is not None and now - float(package["last_used"] or 0) > older_than_s
        of_dtype = dtype is not None and package["dtype"] == dtype
        if everything or stale or old or of_dtype:
            chosen.append({"path": str(Path(package["path"]).parent), "key": package["key"],
                           "bytes": package["bytes"], "op": f"generated {package['overload']}",
                           "dtype": package["dtype"], "reason": ", ".join(
                               r for r, chose in (("all", everything), ("stale", stale), ("unused", old),
                                                  (f"dtype {dtype}", of_dtype)) if chose)})
    for failure in cpu_kernel_failures(root):  # --stale forgets current failures too: the next need builds again
        old = older_than_s is not None and now - float(failure["created"] or 0) > older_than_s
        if everything or stale_for is not None or old or (dtype is not None and failure["dtype"] == dtype):
            chosen.append({"path": failure["path"], "key": failure["key"], "bytes": failure["bytes"],
                           "op": f"failed build of generated {failure['overload']}", "dtype": failure["dtype"],
                           "reason": "all" if everything else "stale" if stale_for is not None else
                           "unused" if old else f"dtype {dtype}"})
    for path in leftovers(root):
        if now - path.stat().st_mtime > LEFTOVER_AGE_S:
            chosen.append({"path": str(path), "key": None, "bytes": sum(f.stat().st_size for f in path.rglob("*")
                                                                        if f.is_file()),
                           "op": "interrupted import", "dtype": None, "reason": "leftover"})
    if not dry_run:
        for item in chosen:
            path = Path(item["path"])
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
                Path(f"{path}.lock").unlink(missing_ok=True)
    return chosen
