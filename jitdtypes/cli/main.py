"""`jitdtypes ...`: reads the command line (parser.py), runs the command's function, and turns what went wrong
into one line and an exit status: 2 for a bad command line, 1 for a failed operation, 130 when interrupted."""

from __future__ import annotations

import signal
import sys


def _handler(args):
    from . import cache_commands, commands

    if args.command == "cache":
        return {"info": cache_commands.info, "list": cache_commands.listing, "show": cache_commands.show,
                "clean": cache_commands.clean, "verify": cache_commands.verify, "export": cache_commands.export,
                "import": cache_commands.import_archive}[args.cache_command]
    return {"ops": commands.ops, "warm": commands.warm, "demo": commands.demo}[args.command]


def _describe(error: OSError) -> str:
    if error.filename is None:
        return str(error)
    return f"{error.filename}: {error.strerror or error}"


def main(argv: list[str] | None = None) -> int:
    from . import parser

    if hasattr(signal, "SIGPIPE"):  # `jitdtypes ops | head` ends quietly
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    args = parser.build().parse_args(argv)
    prog = " ".join(["jitdtypes", args.command] + ([args.cache_command] if args.command == "cache" else []))
    try:
        return _handler(args)(args)
    except parser.UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # the command was right, the file system said no (permissions, a full disk)
        print(f"{prog}: {_describe(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
