"""The `jitdtypes` command: a thin argparse layer over the library and cache_tools.

main.py            the entry point: parse, run, exit status
parser.py          options, help and examples; imports no torch, so that `--help` answers at once
commands.py        ops, warm, demo: the commands that run the library
cache_commands.py  cache info/list/show/clean/verify/export/import, without installing the overrides
warm.py            what `warm` generates, builds and compiles, with its progress report
demo/              `jitdtypes demo`: per op, plain PyTorch against jitdtypes; the memory of an FNO
"""

from .main import main
from .parser import UsageError

__all__ = ["UsageError", "main"]
