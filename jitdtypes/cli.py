"""The `jitdtypes` command: a thin argparse layer over the library and cache_tools."""

from __future__ import annotations

import argparse
import json
import signal
import sys


def _print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {c: max([len(c)] + [len(str(r[c])) for r in rows]) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns).rstrip())
    for row in rows:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in columns).rstrip())


def cmd_ops(args) -> int:
    import jitdtypes

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
    _print_table(rows, ["op", "dtype", "device", "support", "path", "calls"])
    counts: dict[str, int] = {}
    for row in rows:
        counts[row["path"]] = counts.get(row["path"], 0) + 1
    print(f"{len(rows)} (op, dtype, device) rows: " + ", ".join(f"{n} {p}" for p, n in sorted(counts.items())))
    return 0


def build_parser() -> argparse.ArgumentParser:
    from jitdtypes import __version__, dtypes

    parser = argparse.ArgumentParser(prog="jitdtypes", description="Lazily generated kernels for 16-bit complex dtypes.")
    parser.add_argument("--version", action="version", version=f"jitdtypes {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    ops = commands.add_parser("ops", help="which path each (op, dtype, device) takes: native, template or upcast")
    ops.add_argument("--dtype", choices=sorted(dtypes.BY_NAME))
    ops.add_argument("--device", choices=["cpu", "cuda"])
    ops.add_argument("--path", choices=["native", "template", "upcast"])
    ops.add_argument("--json", action="store_true", help="a JSON list of objects instead of a table")
    ops.set_defaults(run=cmd_ops)
    return parser


def main(argv: list[str] | None = None) -> int:
    if hasattr(signal, "SIGPIPE"):  # `jitdtypes ops | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = build_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
