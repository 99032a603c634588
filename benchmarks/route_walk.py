"""The files a first routed call crosses: the Python frames in jitdtypes' code (its packages and the sources
it generates), in call order, from a profile of one call.

    python -m benchmarks.route_walk [--dtype complex32] [--call exp|sum|cumsum|matmul|mul_scalar]

Prints one line per change of file and a summary; the compiled guard (native_guard/guard.cpp) runs first and
is counted as one more file. docs/ARCHITECTURE.md ("The routed call, file by file") reads this walk.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

import jitdtypes
from cache_tools import source_digest

CALLS = {
    "exp": torch.exp,
    "sum": torch.sum,
    "cumsum": lambda x: torch.cumsum(x, 0),
    "matmul": lambda x: x.reshape(4, 4) @ x.reshape(4, 4),
    # a Python number: its first call also makes the number's zero-dim tensor (wrapped_numbers)
    "mul_scalar": lambda x: x * 2,
}


def walk(call, x) -> list[tuple[str, str]]:
    """(file, function) of every Python call in jitdtypes' code while `call(x)` runs, in order; files relative
    to the checkout, generated sources by their pinned names (`<jitdtypes guard of aten::exp>`)."""
    return [(name, function) for name, function, _ in walk_with_callers(call, x)]


def walk_with_callers(call, x) -> list[tuple[str, str, tuple[str, ...]]]:
    """walk(), each call with the files of the jitdtypes frames under it, innermost first."""
    packages = tuple(str(directory) + "/" for directory in source_digest.installed().packages.values())
    root = str(Path(jitdtypes.__file__).parent.parent) + "/"
    frames = []

    def ours(frame) -> str | None:
        name = frame.f_code.co_filename
        return name.removeprefix(root) if name.startswith(packages) or name.startswith("<jitdtypes") else None

    def profile(frame, event, arg):
        if event == "call" and ours(frame) is not None:
            callers, below = [], frame.f_back
            while below is not None:
                if ours(below) is not None:
                    callers.append(ours(below))
                below = below.f_back
            frames.append((ours(frame), frame.f_code.co_name, tuple(callers)))

    sys.setprofile(profile)
    try:
        call(x)
    finally:
        sys.setprofile(None)
    return frames


def files_crossed(frames) -> tuple[list[str], list[tuple[str, str]]]:
    """(distinct files in first-seen order, the frames at which the file changes)."""
    files, hops = [], []
    for name, function in frames:
        if not hops or hops[-1][0] != name:
            hops.append((name, function))
        if name not in files:
            files.append(name)
    return files, hops


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dtype", default="complex32", choices=sorted(jitdtypes.dtypes.COMPLEX_BY_NAME))
    parser.add_argument("--call", default="exp", choices=sorted(CALLS))
    args = parser.parse_args(argv)
    x = torch.randn(16, dtype=torch.complex64).to(jitdtypes.dtypes.COMPLEX_BY_NAME[args.dtype])
    frames = walk(CALLS[args.call], x)
    files, hops = files_crossed(frames)
    for name, function in hops:
        print(f"  {name}: {function}")
    compiled = jitdtypes.guard() == "compiled"
    print(f"{args.call} on {args.dtype}/cpu: {len(files) + compiled} files"
          f"{' (native_guard/guard.cpp and ' + str(len(files)) + ' in Python)' if compiled else ''}, "
          f"{len(hops) - 1} changes of file, {len(frames)} Python calls")
    return 0


if __name__ == "__main__":
    sys.exit(main())
