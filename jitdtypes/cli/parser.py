"""The `jitdtypes` command line: options, help and examples. Nothing here imports torch, so that `--help` and
`--version` answer at once; whether this torch build has a dtype is checked when a command runs."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from cache_tools.store import KINDS

from .._version import __version__
from .. import dtype_table

class UsageError(Exception):
    """A value on the command line names nothing usable here (a missing file, an unknown key): exit status 2."""


DEVICES = ("cpu", "cuda")
PATHS = ("native", "template", "upcast", "generated")

TOP_EXAMPLES = """\
examples:
  jitdtypes ops --dtype complex32 --path upcast   the complex32 ops computed through complex64
  jitdtypes warm --dtype all                      generate every kernel now rather than at first use
  jitdtypes cache info                            where the cache is and what it holds
  jitdtypes demo                                  ops plain PyTorch rejects, working

environment:
  JITDTYPES_CACHE_DIR   the cache directory (default: the platform's per-user cache directory)
  JITDTYPES_DISABLE=1   `import jitdtypes` installs nothing
  JITDTYPES_GUARD       python or compiled: the dispatch guard (default: compiled when it can be built)
"""

OPS_EXAMPLES = """\
examples:
  jitdtypes ops                                     every (op, dtype, device) jitdtypes knows of
  jitdtypes ops --dtype bcomplex32 --path template  the bcomplex32 calls served by a generated kernel
  jitdtypes ops --device cpu --json > ops.json      the same rows as JSON
"""

WARM_EXAMPLES = """\
examples:
  jitdtypes warm --dtype all                         every kernel, for the devices here
  jitdtypes warm --dtype complex32 --ops exp,matmul  only those ops' kernels
  jitdtypes warm --dtype all --device cuda --arch sm_80,sm_90
                                                     compile for GPUs this machine does not have
"""

CACHE_EXAMPLES = """\
examples:
  jitdtypes cache info                        directory, entries and bytes of every kind, guards
  jitdtypes cache list --op matmul            one row per matmul kernel
  jitdtypes cache list --kind cpu_kernels     one row per generated CPU kernel
  jitdtypes cache clean --older-than 30d      remove what has not been used for 30 days
  jitdtypes cache export warm.tar.gz --arch sm_90
  jitdtypes cache import warm.tar.gz          on another machine: install what the first one compiled
"""

DEMO_EXAMPLES = """\
examples:
  jitdtypes demo                              on the GPU when there is one, else on the CPU
  jitdtypes demo --device cpu --size 1024     on the CPU, with larger inputs
"""


class Parser(argparse.ArgumentParser):
    """Reports a bad command line in one line (and exit status 2), pointing at the command's --help."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the lines of a text written in lines (examples) and wraps a text written as one paragraph
    (descriptions) to the terminal's width."""

    def _fill_text(self, text, width, indent):
        if "\n" in text:
            return super()._fill_text(text, width, indent)
        return argparse.HelpFormatter._fill_text(self, text, width, indent)


def _command(commands, name: str, **options) -> Parser:
    """A subcommand; its --help opens with its one-line help unless it has a description of its own."""
    options.setdefault("description", options.get("help"))
    return commands.add_parser(name, formatter_class=HelpFormatter, **options)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"not a positive integer: {text!r}")
    return value


def names(text: str) -> list[str]:
    """A comma-separated list, at least one name."""
    found = [name.strip() for name in text.split(",") if name.strip()]
    if not found:
        raise argparse.ArgumentTypeError(f"no names in {text!r}: give one or more, comma-separated")
    return found


def age(text: str) -> float:
    """30d, 12h, 45m or 90s, in seconds."""
    from cache_tools import inventory

    try:
        return inventory.parse_age(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def build() -> Parser:
    # a complex dtype this torch lacks is still a choice: the cache may hold other builds' entries, and the
    # commands that need the dtype say why they cannot have it
    complex_names = list(dtype_table.COMPLEX)
    parser = Parser(prog="jitdtypes", formatter_class=HelpFormatter, epilog=TOP_EXAMPLES,
                    description="Lazily generated kernels that make torch.complex32 and torch.bcomplex32 usable: "
                                "what they serve, and their cache.")
    parser.add_argument("--version", action="version", version=f"jitdtypes {__version__}",
                        help="print the version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    ops = _command(
        commands, "ops", epilog=OPS_EXAMPLES,
        help="which path each (op, dtype, device) takes: native, template, upcast or generated",
        description="The dispatch guard in use, then one row per (op, dtype, device) jitdtypes knows of: PyTorch's "
                    "own support (native, partial, missing, or crashed when probing it crashed), the path a call "
                    "takes, and the calls seen in this process.")
    ops.add_argument("--dtype", choices=[*complex_names, *dtype_table.REAL], help="only rows of this dtype")
    ops.add_argument("--device", choices=DEVICES, help="only rows of this device type")
    ops.add_argument("--path", choices=PATHS, help="only rows whose calls take this path")
    ops.add_argument("--json", action="store_true",
                     help="a JSON list of objects (op, dtype, device, support, path, calls, guard) instead of a table")

    warm = _command(
        commands, "warm", epilog=WARM_EXAMPLES,
        help="generate (and on CUDA compile) every template kernel for a dtype ahead of time",
        description="Run discovery for each device here that has none cached, build the compiled dispatch guard, "
                    "and generate every template kernel for the dtype (with --device cuda also compile each "
                    "kernel's representative launches into Triton's cache format). Progress goes to stderr, the "
                    "summary to stdout; exit status 1 if any kernel failed.")
    warm.add_argument("--dtype", required=True, choices=[*complex_names, "all"],
                      help="the 16-bit complex dtype to generate kernels for; all: every one this torch has")
    warm.add_argument("--device", choices=DEVICES,
                      help="the device to generate kernels for (default: cuda when a GPU is present or --arch is "
                           "given, else cpu)")
    warm.add_argument("--ops", type=names, metavar="OP,...",
                      help="only these template ops (exp,mul,matmul,...; a wrong name lists them); default: all")
    warm.add_argument("--arch", type=names, metavar="ARCH,...",
                      help="GPU arches (sm_80,sm_90,...) to compile for, no GPU needed; implies --device cuda; "
                           "default with --device cuda: the local GPU's")
    warm.add_argument("--jobs", type=positive_int, default=os.cpu_count() or 1, metavar="N",
                      help="compile in up to N processes at once (default: the number of CPUs, %(default)s)")

    cache = _command(
        commands, "cache", epilog=CACHE_EXAMPLES,
        help="inspect, check, clean, export and import the cache",
        description="The cache holds entries of four kinds: kernels (rendered Triton kernels), cpu_kernels "
                    "(generated CPU kernels), guard (the compiled dispatch guard) and discovery (discovery "
                    "results), in JITDTYPES_CACHE_DIR, else the platform's per-user cache directory.")
    cache_commands = cache.add_subparsers(dest="cache_command", metavar="CACHE_COMMAND", required=True)

    info = _command(cache_commands, "info",
                    help="directory, entries and bytes of every kind, versions, discovery results, guards")
    info.add_argument("--json", action="store_true",
                      help="one JSON object (dir, entries, bytes, kinds, versions, discovery, guard, failures, ...)")

    listing = _command(cache_commands, "list", help="one row per entry, of every kind")
    listing.add_argument("--kind", choices=KINDS, help="only entries of this kind")
    listing.add_argument("--dtype", choices=complex_names, help="only entries of this dtype")
    listing.add_argument("--op", help="only entries of this op (exp, matmul, ...)")
    listing.add_argument("--json", action="store_true",
                         help="a JSON list of objects (kind, key, op, dtype, path, bytes, last_used, ...)")

    show = _command(cache_commands, "show", help="metadata of one entry (and a kernel's source)")
    show.add_argument("key", help="the entry's key, or enough of its first hex digits to name one entry")

    clean = _command(
        cache_commands, "clean", help="remove entries",
        description="Remove the entries any of the given criteria select. Every run also removes what "
                    "interrupted imports and builds left (staging, workspace and retired directories over an hour "
                    "old).")
    clean.add_argument("--all", action="store_true", help="everything, discovery results and guards included")
    clean.add_argument("--older-than", type=age, metavar="AGE",
                       help="not used for AGE: a number and a unit, d, h, m or s (30d, 12h, 45m, 90s)")
    clean.add_argument("--dtype", choices=complex_names, help="entries of this dtype (kernels, generated CPU kernels)")
    clean.add_argument("--stale", action="store_true",
                       help="made by or for other torch/triton/jitdtypes versions (entries of every kind), "
                            "remembered failed builds, and what an older cache layout left")
    clean.add_argument("--kind", choices=KINDS, help="only entries of this kind")
    clean.add_argument("--dry-run", action="store_true", help="print what would be removed, remove nothing")

    verify = _command(cache_commands, "verify",
                      help="check every entry's content hash, metadata and permissions (exit status 1 if damaged)")
    verify.add_argument("--fix", action="store_true", help="remove damaged entries (they regenerate on next use)")

    export = _command(cache_commands, "export",
                      help="write the intact kernel entries with their compiled Triton code, the generated CPU "
                           "kernels and this build's discovery results to a .tar.gz (not the compiled guard: "
                           "each machine builds its own)")
    export.add_argument("file", type=Path, metavar="FILE.tar.gz",
                        help="the archive to write (replaced if it exists; its directory must exist)")
    export.add_argument("--dtype", choices=complex_names, help="only kernel entries of this dtype")
    export.add_argument("--arch", type=names, metavar="ARCH,...",
                        help="only kernels keyed for these GPU arches (sm_80,sm_90,...); default: every entry")

    load = _command(
        cache_commands, "import", help="verify an exported .tar.gz, then install its entries into this cache",
        description="Verify the whole archive (member paths and types, sizes, every sha256), then install its "
                    "entries; a refused archive installs nothing (exit status 1).")
    load.add_argument("file", type=Path, metavar="FILE.tar.gz", help="an archive `jitdtypes cache export` wrote")

    demo = _command(
        commands, "demo", epilog=DEMO_EXAMPLES,
        help="ops plain PyTorch rejects, working, with their path and time",
        description="Calls plain PyTorch rejects for the 16-bit complex dtypes, then the same calls with "
                    "jitdtypes, with the path each took and its time.")
    demo.add_argument("--device", choices=DEVICES, help="where to run (default: cuda when available, else cpu)")
    demo.add_argument("--size", type=positive_int, metavar="N",
                      help="the size of the demo's inputs (default: chosen by the demo)")
    return parser
