"""Python that jitdtypes writes at run time (dispatch guards, specialization keys, argument readers, kernel
modules), compiled under a name that tracebacks, pdb and `inspect.getsource` can show.

A frame of exec'd code names a file that does not exist, so a traceback through it shows no lines. The text is
pinned in linecache under that name instead (an entry whose mtime is None is never checked against the disk).
"""

from __future__ import annotations

import linecache


def compile_pinned(source: str, filename: str):
    """compile(source, filename, "exec") with `source` kept in linecache as the text of `filename`."""
    pin(source, filename)
    return compile(source, filename, "exec")


def pin(source: str, filename: str) -> None:
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)


def renamed(function, source: str, filename: str, name: str):
    """`function` (compiled from `source` under another file name) as if compiled under `filename` and called
    `name`: code shared by many functions is compiled once and each names its own file, for the price of a code
    object copy."""
    pin(source, filename)
    function.__code__ = function.__code__.replace(co_filename=filename, co_name=name)
    function.__name__ = function.__qualname__ = name
    return function
