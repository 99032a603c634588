"""The `jitdtypes` command: a thin argparse layer over the library and cache_tools."""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path


def _print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())


def _enable_unless_disabled() -> None:
    import jitdtypes

    if os.environ.get("JITDTYPES_DISABLE", "").strip() in ("", "0"):
        jitdtypes.enable()


def _refuse_absent_dtype(command: str, name: str | None) -> bool:
    """Whether `name` is a 16-bit complex dtype this torch build lacks (said on stderr)."""
    from . import dtypes

    if name in dtypes.ABSENT:
        print(f"jitdtypes {command}: --dtype {name}: {dtypes.ABSENT[name]}", file=sys.stderr)
        return True
    return False


def cmd_ops(args) -> int:
    import jitdtypes

    if _refuse_absent_dtype("ops", args.dtype):
        return 2
    _enable_unless_disabled()
    rows = jitdtypes.stats()
    if args.dtype:
        rows = [r for r in rows if r["dtype"] == args.dtype]
    if args.device:
        rows = [r for r in rows if r["device"] == args.device]
    if args.path:
        rows = [r for r in rows if r["path"] == args.path]
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        print()
        return 0
    registration = jitdtypes._registration
    if registration is not None:
        from . import native_guard

        typed = f", {len(registration.typed)} of {len(registration.keys)} typed" if registration.compiled else ""
        why = native_guard.why_python() if registration.compiled is None else None
        print(f"guard: {registration.guard}{typed}" + (f" ({why})" if why else ""))
    _print_table(rows, ["op", "dtype", "device", "support", "path", "calls"])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["path"]] = counts.get(row["path"], 0) + 1
    crashed = sum(row["support"] == "crashed" for row in rows)
    print(f"{len(rows)} (op, dtype, device) rows: " + ", ".join(f"{n} {p}" for p, n in sorted(counts.items()))
          + (f"; {crashed} crashed in probing (they keep PyTorch's kernel)" if crashed else ""))
    return 0


def _is_terminal() -> bool:
    return sys.stdout.isatty()


def cmd_warm(args) -> int:
    import torch

    from . import aot, dtypes, warm

    device = args.device or ("cuda" if torch.cuda.is_available() or args.arch else "cpu")
    try:
        arches = [aot.arch_named(name.strip()) for name in args.arch.split(",") if name.strip()] if args.arch else []
    except ValueError as exc:
        print(f"jitdtypes warm: {exc}", file=sys.stderr)
        return 2
    if arches and device != "cuda":
        print("jitdtypes warm: --arch compiles for GPUs: use it with --device cuda", file=sys.stderr)
        return 2
    if device == "cuda" and not arches and not torch.cuda.is_available():
        print("jitdtypes warm: no CUDA device here: name the GPU arches to compile for, e.g. --arch sm_80,sm_90",
              file=sys.stderr)
        return 2
    if _refuse_absent_dtype("warm", args.dtype):
        return 2
    names = sorted(n for n, d in dtypes.BY_NAME.items() if d.is_complex) if args.dtype == "all" else [args.dtype]
    ops = {op.strip() for op in args.ops.split(",") if op.strip()} if args.ops else None
    known = {params["op"] for _, params in warm.kernels_to_warm(names, None)}
    if ops and not ops <= known:
        print(f"jitdtypes warm: unknown ops {sorted(ops - known)}; template ops are: {', '.join(sorted(known))}",
              file=sys.stderr)
        return 2

    def progress(done, total, label):
        if _is_terminal():
            print(f"\r\033[K[{done + 1}/{total}] {label}"[:160], end="", flush=True)

    guard_line = _warm_guard()
    _warm_discovery()
    summary = warm.warm(names, device, ops, progress, arches, max(1, args.jobs))
    if _is_terminal():
        print("\r\033[K", end="")
    for label, error in summary.failed:
        print(f"failed: {label}: {error}")
    compiled = (f", compiled {summary.compiled} (Triton cache files {summary.triton_bytes:,} bytes)"
                if device == "cuda" else "")
    target = f"{device} {','.join(a.name for a in arches)}" if arches else device
    print(guard_line)
    print(f"warm {','.join(names)} on {target}: {summary.total} kernels: generated {summary.generated}, "
          f"already cached {summary.cached}{compiled}, failed {len(summary.failed)}")
    return 1 if summary.failed else 0


def _warm_discovery() -> None:
    """Probe every device here that has no cached discovery results (whatever JITDTYPES_DISCOVERY says)."""
    import jitdtypes

    from . import discovery

    for found in discovery.load_or_discover_all(jitdtypes._device_types()).values():
        print(discovery.summary(found))


def _warm_guard() -> str:
    """Build (or find) the compiled dispatch guard, as the next import would; a remembered failed build is
    tried again."""
    from . import native_guard

    try:
        chosen = native_guard.resolve(retry=True)
    except native_guard.GuardUnavailable as exc:
        return f"guard: unavailable ({exc})"
    if chosen != native_guard.COMPILED:
        return f"guard: {chosen} ({native_guard.why_python()})"
    return f"guard: compiled, {native_guard.info()['path']}"


def _when(timestamp) -> str:
    import datetime

    if not timestamp:
        return "-"
    return datetime.datetime.fromtimestamp(float(timestamp)).strftime("%Y-%m-%d %H:%M:%S")


def cmd_cache_info(args) -> int:
    from jitdtypes.cache_tools import inventory

    report = inventory.info()
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    print(f"directory  {report['dir']}")
    print(f"kernels    {report['entries']} entries, {report['kernel_bytes']:,} bytes"
          + (f", {report['damaged']} damaged (jitdtypes cache verify)" if report["damaged"] else ""))
    for version in report["versions"]:
        print(f"           torch {version['torch']} / triton {version['triton']} / jitdtypes "
              f"{version['jitdtypes']}: {version['entries']} entries")
    for found in report["discovery"]:
        print(f"discovery  {found.get('device_type')} torch {found.get('torch')}: {found.get('overrides')} overrides "
              f"({found['bytes']:,} bytes)")
    active = _active_guard()
    for guard in report["guard"]:
        status = guard["problem"] or ("loaded by this torch build" if guard["key"] == active else "another build")
        print(f"guard      {guard['key']} torch {guard['torch']}, {guard['compiler']}: {guard['bytes']:,} bytes "
              f"({status})")
    for failure in report["guard_failures"]:
        status = ("this torch build uses the Python guard; `jitdtypes warm` or `jitdtypes cache clean --stale` "
                  "retries" if failure["key"] == active else "another build")
        print(f"guard      {failure['key']} torch {failure['torch']}, {failure['compiler']}: build failed "
              f"{_when(failure['created'])}: {failure['error'] or failure['problem']} ({status})")
    if active is None:
        print("guard      the Python guard is used: JITDTYPES_GUARD=python")
    elif not report["guard"] and not report["guard_failures"]:
        print("guard      no compiled guard built yet (the Python guard is used until one is)")
    print(f"total      {report['bytes']:,} bytes")
    return 0


def _active_guard() -> str | None:
    """The compiled-guard key this torch build would load (None if the Python guard is forced)."""
    from . import native_guard
    from .native_guard import build

    return None if native_guard.requested() == native_guard.PYTHON else build.key()


def cmd_cache_list(args) -> int:
    from jitdtypes.cache_tools import inventory

    rows = [r.row() for r in inventory.scan()]
    if args.dtype:
        rows = [r for r in rows if r["dtype"] == args.dtype]
    if args.op:
        rows = [r for r in rows if r["op"] == args.op]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    table = [{**r, "key": r["key"][:16], "last_used": _when(r["last_used"]), "status": r["problem"] or "ok"}
             for r in rows]
    _print_table(table, ["key", "family", "op", "dtype", "layout", "device", "bytes", "last_used", "status"])
    print(f"{len(rows)} entries")
    return 0


def cmd_cache_show(args) -> int:
    from jitdtypes.cache_tools import inventory

    matches = [r for r in inventory.scan() if r.key.startswith(args.key)]
    if len(matches) != 1:
        print(f"jitdtypes cache show: {len(matches)} entries match {args.key!r}", file=sys.stderr)
        return 1
    record = matches[0]
    print(json.dumps({**record.meta, "path": str(record.directory), "problem": record.problem}, indent=1))
    print()
    try:
        print(record.row()["path"] and (record.directory / "kernel.py").read_text())
    except OSError as exc:
        print(f"(source unreadable: {exc})")
    return 0 if record.problem is None else 1


def cmd_cache_clean(args) -> int:
    from jitdtypes.cache_tools import inventory

    criteria = [args.all, args.older_than is not None, args.dtype is not None, args.stale]
    if not any(criteria):
        print("jitdtypes cache clean: say what to remove: --all, --older-than AGE, --dtype D or --stale",
              file=sys.stderr)
        return 2
    try:
        older = inventory.parse_age(args.older_than) if args.older_than else None
    except ValueError as exc:
        print(f"jitdtypes cache clean: {exc}", file=sys.stderr)
        return 2
    from . import discovery

    current = {str(discovery.cache_path(device)) for device in ("cpu", "cuda")}
    from .native_guard import build

    removed = inventory.clean(everything=args.all, older_than_s=older, dtype=args.dtype,
                              stale_for=_current_versions() if args.stale else None, current_discovery=current,
                              current_guard=build.key(), dry_run=args.dry_run)
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

    from . import __version__

    return {"torch": torch.__version__, "triton": triton.__version__, "jitdtypes": __version__}


def cmd_cache_verify(args) -> int:
    from jitdtypes.cache_tools import inventory

    damaged = inventory.verify(fix=args.fix)
    total = len(inventory.scan()) + len(inventory.guard_entries()) + (len(damaged) if args.fix else 0)
    for item in damaged:
        print(f"{'removed' if args.fix else 'damaged'} {item['path']}: {item['problem']}")
    print(f"{total} entries checked, {len(damaged)} damaged" + (", removed (they regenerate on next use)"
                                                                   if args.fix and damaged else ""))
    return 1 if damaged and not args.fix else 0


def cmd_cache_export(args) -> int:
    from jitdtypes.cache_tools import transfer

    from . import aot

    try:
        devices = {aot.device_kind(aot.arch_named(a.strip())) for a in args.arch.split(",")} if args.arch else None
    except ValueError as exc:
        print(f"jitdtypes cache export: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    report = transfer.export(args.file, dtype=args.dtype, devices=devices, discovery_records=_usable_discovery())
    print(f"exported {report['entries']} entries ({report['files']} files, {report['bytes']:,} bytes) and "
          f"{report['discovery']} discovery results to {args.file}: {report['archive_bytes']:,} bytes "
          f"[{time.perf_counter() - started:.1f} s]")
    return 0 if report["entries"] else 1


def _usable_discovery() -> list[Path]:
    """The cached discovery results this torch build and jitdtypes would load: what a node like this one needs."""
    from jitdtypes.cache_tools import inventory

    from . import discovery

    return [Path(found["path"]) for found in inventory.discovery_files()
            if discovery.check(Path(found["path"]))[0] is not None]


def cmd_cache_import(args) -> int:
    from jitdtypes.cache_tools import locations, transfer

    from . import discovery

    started = time.perf_counter()
    try:
        report = transfer.import_archive(args.file, discovery_refusal=lambda path: discovery.check(path)[1])
    except transfer.ArchiveRefused as exc:
        print(f"jitdtypes cache import: refused, nothing installed: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"jitdtypes cache import: {exc}", file=sys.stderr)
        return 1
    print(f"imported {report['entries']} entries into {locations.cache_root()}: installed {report['installed']}, "
          f"already present {report['kept']}; discovery results installed {report['discovery_installed']}"
          f" [{time.perf_counter() - started:.1f} s]")
    for name, reason in report["discovery_skipped"].items():
        print(f"  discovery result {name} not installed: {reason}")
    return 0


def cmd_demo(args) -> int:
    from . import demo

    _enable_unless_disabled()
    return demo.run()


def build_parser() -> argparse.ArgumentParser:
    from jitdtypes import __version__, dtypes

    parser = argparse.ArgumentParser(prog="jitdtypes", description="Lazily generated kernels for 16-bit complex dtypes.")
    parser.add_argument("--version", action="version", version=f"jitdtypes {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    ops = commands.add_parser("ops", help="which path each (op, dtype, device) takes: native, template or upcast")
    ops.add_argument("--dtype", choices=sorted({*dtypes.BY_NAME, *dtypes.ABSENT}))
    ops.add_argument("--device", choices=["cpu", "cuda"])
    ops.add_argument("--path", choices=["native", "template", "upcast"])
    ops.add_argument("--json", action="store_true", help="a JSON list of objects instead of a table")
    ops.set_defaults(run=cmd_ops)

    # a dtype this torch lacks is still a choice: the cache may hold other builds' entries, and warm/ops say why
    complex_names = sorted({*(n for n, d in dtypes.BY_NAME.items() if d.is_complex), *dtypes.ABSENT})
    warm = commands.add_parser("warm", help="generate (and on CUDA compile) every template kernel for a dtype")
    warm.add_argument("--dtype", required=True, choices=complex_names + ["all"])
    warm.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when available, else cpu")
    warm.add_argument("--ops", help="comma-separated template ops (exp,mul,matmul,...); default: all")
    warm.add_argument("--arch", help="comma-separated GPU arches (sm_80,sm_90,...) to compile for, no GPU needed; "
                      "default with --device cuda: the local GPU's")
    warm.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compile in this many processes")
    warm.set_defaults(run=cmd_warm)

    cache = commands.add_parser("cache", help="inspect and clean the kernel and guard cache").add_subparsers(
        dest="cache_command", required=True)
    info = cache.add_parser("info", help="directory, entries, bytes, versions seen")
    info.add_argument("--json", action="store_true")
    info.set_defaults(run=cmd_cache_info)
    listing = cache.add_parser("list", help="one row per entry")
    listing.add_argument("--dtype", choices=complex_names)
    listing.add_argument("--op")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(run=cmd_cache_list)
    show = cache.add_parser("show", help="metadata and source of one entry")
    show.add_argument("key", help="a key or an unambiguous prefix")
    show.set_defaults(run=cmd_cache_show)
    clean = cache.add_parser("clean", help="remove entries")
    clean.add_argument("--all", action="store_true", help="everything, discovery results included")
    clean.add_argument("--older-than", metavar="AGE", help="not used for AGE (30d, 12h, 45m, 90s)")
    clean.add_argument("--dtype", choices=complex_names)
    clean.add_argument("--stale", action="store_true",
                       help="made by other torch/triton/jitdtypes versions (kernels, discovery, compiled guards)")
    clean.add_argument("--dry-run", action="store_true", help="print what would be removed")
    clean.set_defaults(run=cmd_cache_clean)
    verify = cache.add_parser("verify", help="check every entry's content hash, metadata and permissions")
    verify.add_argument("--fix", action="store_true", help="remove damaged entries (they regenerate on use)")
    verify.set_defaults(run=cmd_cache_verify)
    export = cache.add_parser("export", help="write kernel entries and their compiled Triton code to a .tar.gz")
    export.add_argument("file", type=Path)
    export.add_argument("--dtype", choices=complex_names)
    export.add_argument("--arch", help="comma-separated GPU arches (sm_80,sm_90,...): only kernels keyed for them")
    export.set_defaults(run=cmd_cache_export)
    load = cache.add_parser("import", help="verify an exported .tar.gz and install its entries into this cache")
    load.add_argument("file", type=Path)
    load.set_defaults(run=cmd_cache_import)

    demo = commands.add_parser("demo", help="ops plain PyTorch rejects, working, with their path and time")
    demo.set_defaults(run=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `jitdtypes ops | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
