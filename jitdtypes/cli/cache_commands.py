"""`jitdtypes cache info/list/show/clean/verify/export/import`: the cache, without installing the overrides."""

from __future__ import annotations

import datetime
import json
import string
import sys
import time
from pathlib import Path

from .parser import UsageError
from .commands import arches_named, print_table
from .parser import DEVICES


def _when(timestamp) -> str:
    if not timestamp:
        return "-"
    return datetime.datetime.fromtimestamp(float(timestamp)).strftime("%Y-%m-%d %H:%M:%S")


def info(args) -> int:
    from cache_tools import inventory
    from cache_tools.store import CPU_KERNELS, KERNELS

    report = inventory.info()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    kinds, failures = report["kinds"], report["failures"]
    print(f"directory  {report['dir']}")
    kernels = kinds[KERNELS]
    print(f"kernels    {kernels['entries']} entries, {kernels['bytes']:,} bytes"
          + (f", {kernels['damaged']} damaged (jitdtypes cache verify)" if kernels["damaged"] else ""))
    for version in report["versions"]:
        if version["kind"] == KERNELS:
            print(f"           torch {version['torch']} / triton {version['triton']} / jitdtypes "
                  f"{version['jitdtypes']}: {version['entries']} entries")
    generated = kinds[CPU_KERNELS]
    if generated["entries"]:
        per_torch = [f"torch {v['torch']}: {v['entries']}" for v in report["versions"] if v["kind"] == CPU_KERNELS]
        print(f"cpu        {generated['entries']} generated CPU kernels, {generated['bytes']:,} bytes ("
              + ", ".join(per_torch)
              + (f"; {generated['damaged']} damaged, rebuilt when next needed" if generated["damaged"] else "") + ")")
    failed = [f for f in failures if f["kind"] == CPU_KERNELS]
    if failed:
        print(f"cpu        {len(failed)} failed builds of generated CPU kernels, not built again until `jitdtypes warm "
              f"--device cpu` or `jitdtypes cache clean --stale` (the upcast path serves them): "
              + ", ".join(sorted(f"{(f['overload'] or '?').removeprefix('aten::')} {f['dtype']}" for f in failed)))
    from jitdtypes import discovery

    current = {discovery.build_key(device) for device in DEVICES}
    for found in report["discovery"]:
        status = found["problem"] or ("used by this build" if found["key"] in current else "another build's")
        print(f"discovery  {found['key'][:16]} {found['device_type']} torch {found['torch']}: {found['overrides']} "
              f"overrides, {found['bytes']:,} bytes ({status})")
    active = _active_guard()
    for guard in report["guard"]:
        status = guard["problem"] or ("loaded by this torch build" if guard["key"] == active else "another build")
        print(f"guard      {guard['key'][:16]} torch {guard['torch']}, {guard['compiler']}: {guard['bytes']:,} bytes "
              f"({status})")
    guard_failures = [f for f in failures if f["kind"] == "guard"]
    for failure in guard_failures:
        status = ("this torch build uses the Python guard; `jitdtypes warm` or `jitdtypes cache clean --stale` "
                  "retries" if failure["key"] == active else "another build")
        print(f"guard      {failure['key'][:16]} torch {failure['torch']}, {failure['compiler']}: build failed "
              f"{_when(failure['created'])}: {failure['error'] or failure['problem']} ({status})")
    if active is None:
        print("guard      the Python guard is used: JITDTYPES_GUARD=python")
    elif not report["guard"] and not guard_failures:
        print("guard      no compiled guard built yet (the Python guard is used until one is)")
    old = report["old_layout"]
    if old:
        print(f"old layout {len(old)} files and directories of an older cache layout, {sum(o['bytes'] for o in old):,} "
              "bytes: never read (`jitdtypes cache clean --stale` removes them)")
    print(f"total      {report['entries']} entries, {report['bytes']:,} bytes")
    return 0


def _active_guard() -> str | None:
    """The compiled-guard key this torch build would load (None if the Python guard is forced)."""
    from jitdtypes import native_guard
    from jitdtypes.native_guard import build

    return None if native_guard.requested() == native_guard.PYTHON else build.key()


def listing(args) -> int:
    from cache_tools import inventory
    from cache_tools.store import KINDS

    rows = [r.row() for r in inventory.scan(kinds=[args.kind] if args.kind else KINDS)]
    if args.dtype:
        rows = [r for r in rows if r["dtype"] == args.dtype]
    if args.op:
        rows = [r for r in rows if r["op"] == args.op]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = [{**{k: "-" if v is None else v for k, v in r.items()}, "key": r["key"][:16],
              "last_used": _when(r["last_used"]), "status": r["problem"] or "ok"} for r in rows]
    print_table(table, ["key", "family", "op", "dtype", "layout", "device", "kind", "bytes", "last_used", "status"])
    print(f"{len(rows)} entries")
    return 0


def show(args) -> int:
    from cache_tools import inventory
    from cache_tools.store import KERNELS, SOURCE

    prefix = args.key.lower()
    if not prefix or set(prefix) - set(string.hexdigits.lower()):
        raise UsageError(f"not a key: {args.key!r} (keys are hex digits; `jitdtypes cache list` shows them)")
    matches = [r for r in inventory.scan() if r.key.startswith(prefix)]
    if not matches:
        raise UsageError(f"no entry's key starts with {prefix!r} (`jitdtypes cache list` shows them)")
    if len(matches) > 1:
        shown = ", ".join(r.key[:16] for r in matches[:3]) + (", ..." if len(matches) > 3 else "")
        raise UsageError(f"{len(matches)} entries' keys start with {prefix!r} ({shown}): give more digits")
    record = matches[0]
    print(json.dumps({**record.meta, "kind": record.kind, "path": str(record.directory), "problem": record.problem},
                     indent=1))
    if record.kind == KERNELS:
        print()
        try:
            print((record.directory / SOURCE).read_text())
        except (OSError, UnicodeDecodeError) as exc:
            print(f"(source unreadable: {exc})")
    return 0 if record.problem is None else 1


def clean(args) -> int:
    if not (args.all or args.older_than is not None or args.dtype is not None or args.stale):
        raise UsageError("say what to remove: --all, --older-than AGE, --dtype D or --stale")
    from jitdtypes import cpu_kernels, discovery
    from cache_tools import inventory
    from cache_tools.store import CPU_KERNELS, DISCOVERY, GUARD, KINDS
    from jitdtypes.native_guard import build

    current = {DISCOVERY: {discovery.build_key(device) for device in DEVICES}, GUARD: {build.key()},
               CPU_KERNELS: cpu_kernels.current_keys()}
    removed = inventory.clean(everything=args.all, older_than_s=args.older_than, dtype=args.dtype,
                              stale_for=_current_versions() if args.stale else None, current=current,
                              kinds=[args.kind] if args.kind else KINDS, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for item in removed:
        label = f"{item['op']} {item['dtype'] or ''}".strip()
        print(f"{verb} {item['path']} ({label}; {item['reason']}; {item['bytes']:,} bytes)")
    print(f"{verb} {len(removed)} entries, {sum(i['bytes'] for i in removed):,} bytes"
          + (" freed" if not args.dry_run else ""))
    return 0


def _current_versions() -> dict:
    import torch
    import triton

    from .._version import __version__

    return {"torch": torch.__version__, "triton": triton.__version__, "jitdtypes": __version__}


def verify(args) -> int:
    from cache_tools import inventory

    records = inventory.scan()
    damaged = inventory.verify(fix=args.fix, records=records)
    for item in damaged:
        print(f"{'removed' if args.fix else 'damaged'} {item['path']}: {item['problem']}")
    print(f"{len(records)} entries checked, {len(damaged)} damaged" + (", removed (they regenerate on next use)"
                                                                      if args.fix and damaged else ""))
    return 1 if damaged and not args.fix else 0


def export(args) -> int:
    archive: Path = args.file
    if archive.is_dir():
        raise UsageError(f"{archive}: a directory; name the archive to write, e.g. {archive / 'cache.tar.gz'}")
    if not archive.parent.exists():
        raise UsageError(f"{archive.parent}: no such directory")
    if not archive.parent.is_dir():
        raise UsageError(f"{archive.parent}: not a directory")
    from ..triton_kernels import aot
    from jitdtypes import discovery
    from cache_tools import transfer

    arches = arches_named(args.arch)
    devices = {aot.device_kind(arch) for arch in arches} if arches else None
    started = time.perf_counter()
    try:
        report = transfer.export(archive, dtype=args.dtype, devices=devices,
                                 discovery_keys={discovery.build_key(device) for device in DEVICES})
    except OSError as exc:
        if exc.filename != str(archive):
            raise
        print(f"jitdtypes cache export: cannot write {archive}: {exc.strerror}", file=sys.stderr)
        return 1
    print(f"exported {report['entries']} entries ({report['cpu_kernels']} of them generated CPU kernels; "
          f"{report['files']} files, {report['bytes']:,} bytes) and "
          f"{report['discovery']} discovery results to {archive}: {report['archive_bytes']:,} bytes "
          f"[{time.perf_counter() - started:.1f} s]")
    if not report["entries"]:
        print("jitdtypes cache export: no intact kernel entry matched (`jitdtypes cache list` shows them)",
              file=sys.stderr)
        return 1
    return 0


def import_archive(args) -> int:
    archive: Path = args.file
    if not archive.exists():
        raise UsageError(f"{archive}: no such file")
    if archive.is_dir():
        raise UsageError(f"{archive}: a directory, not an archive `jitdtypes cache export` wrote")
    from jitdtypes import discovery
    from cache_tools import locations, transfer

    started = time.perf_counter()
    try:
        report = transfer.import_archive(archive, discovery_refusal=lambda path: discovery.check(path)[1])
    except transfer.ArchiveRefused as exc:
        print(f"jitdtypes cache import: refused, nothing installed: {exc}", file=sys.stderr)
        return 1
    print(f"imported {report['entries']} entries into {locations.cache_root()}: installed {report['installed']}, "
          f"already present {report['kept']}; discovery results installed {report['discovery_installed']}"
          f" [{time.perf_counter() - started:.1f} s]")
    for name, reason in report["discovery_skipped"].items():
        print(f"  discovery result {name} not installed: {reason}")
    return 0
