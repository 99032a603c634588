"""torch.compile for 16-bit complex: Inductor computes complex32/bcomplex32 graphs on float32 (re, im) parts.

`install(findings_by_device)` (called by jitdtypes.enable) puts in place, until `handle.remove()`:

1. Meta kernels that make fake tensors agree with eager jitdtypes (`meta_kernels.py`), so Dynamo and
   AOTAutograd trace every overridden op (fullgraph=True works, no graph break from 16-bit complex).
2. Entries in Inductor's decomposition table (`decompositions.py`) that rewrite 16-bit complex ATen ops into
   fused float32 arithmetic on parts, and matrix products/FFTs into jitdtypes custom ops. Each entry returns
   NotImplemented for other dtypes, so other compiled programs are traced as before. Importing Inductor
   costs about a second, so the entries are added when torch._inductor.lowering is first imported (by the
   first torch.compile), or right away if it already is.
3. A tag in torch.compiler.config.cache_key_tag: Inductor's and AOTAutograd's on-disk caches key on the
   Dynamo graph, which is the same with and without these decompositions, so entries made without them (or
   by another version of them) must not be reused.

Why this mechanism, and the measurements behind it: docs/COMPILE.md.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import logging
import sys
import threading
from pathlib import Path

import torch

from . import meta_kernels

log = logging.getLogger("jitdtypes")

_INDUCTOR_MODULE = "torch._inductor.lowering"  # imports the decomposition table and registers its fallbacks
_lock = threading.Lock()


def cache_tag() -> str:
    """Changes whenever the compile path's sources change."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + path.read_bytes())
    return f"jitdtypes-compile-{digest.hexdigest()[:16]}"


class Installation:
    """What install() changed; remove() puts everything back (idempotent)."""

    def __init__(self) -> None:
        self.meta_kernels: meta_kernels.MetaKernels | None = None
        self.replaced: list[tuple[dict, object, object]] = []  # (table, overload, previous entry or None)
        self.import_hook: _AfterImport | None = None
        self.cache_tag: str | None = None
        self.previous_cache_tag: str | None = None

    def install_decompositions(self) -> None:
        from torch._inductor import decomposition as inductor, lowering

        from . import decompositions

        with _lock:
            if self.replaced:
                return
            # select_decomp_table() returns `decompositions` or fast_random_decomps(), a cached copy of it:
            # build that copy before adding entries, then add them to both dicts.
            tables = [inductor.decompositions]
            if hasattr(inductor, "fast_random_decomps"):
                tables.append(inductor.fast_random_decomps())
            for table in {id(t): t for t in tables}.values():
                for overload, planar_fn in decompositions.TABLE.items():
                    previous = table.get(overload)
                    if previous is None and overload not in lowering.lowerings and (
                        overload not in decompositions.ALWAYS_COMPLEX
                    ):
                        continue  # left out: Inductor would fail making a fallback for it (see ALWAYS_COMPLEX)
                    table[overload] = _chained(planar_fn, previous)
                    self.replaced.append((table, overload, previous))
        log.debug("jitdtypes: %d Inductor decompositions for 16-bit complex", len(self.replaced))

    def remove(self) -> None:
        with _lock:
            if self.import_hook is not None:
                self.import_hook.cancel()
                self.import_hook = None
            for table, overload, previous in reversed(self.replaced):
                if previous is None:
                    table.pop(overload, None)
                else:
                    table[overload] = previous
            self.replaced.clear()
            config = torch.compiler.config
            if self.cache_tag is not None and getattr(config, "cache_key_tag", None) == self.cache_tag:
                config.cache_key_tag = self.previous_cache_tag
            self.cache_tag = None
            if self.meta_kernels is not None:
                self.meta_kernels.remove()
                self.meta_kernels = None


def install(findings_by_device: dict) -> Installation:
    """Install the compile path for jitdtypes' findings ({device type: [Finding]}); see the module docstring."""
    installation = Installation()
    try:
        installation.meta_kernels = meta_kernels.install(findings_by_device)
        config = torch.compiler.config
        if hasattr(config, "cache_key_tag"):
            installation.previous_cache_tag = config.cache_key_tag
            installation.cache_tag = "+".join(t for t in (config.cache_key_tag, cache_tag()) if t)
            config.cache_key_tag = installation.cache_tag
        if _INDUCTOR_MODULE in sys.modules:
            installation.install_decompositions()
        else:
            installation.import_hook = _AfterImport(_INDUCTOR_MODULE, installation.install_decompositions)
    except BaseException:
        installation.remove()
        raise
    return installation


def _chained(planar_fn, previous):
    """planar_fn, and where it returns NotImplemented the entry it replaced (if any)."""

    def decomposition(*args, **kwargs):
        result = planar_fn(*args, **kwargs)
        if result is NotImplemented and previous is not None:
            return previous(*args, **kwargs)
        return result

    decomposition.__name__ = f"jitdtypes_{getattr(planar_fn, '__name__', 'decomposition')}"
    decomposition.jitdtypes_replaced = previous
    return decomposition


class _AfterImport(importlib.abc.MetaPathFinder):
    """Calls `callback()` once, right after the module named `name` is first executed."""

    def __init__(self, name: str, callback) -> None:
        self.name, self.callback = name, callback
        sys.meta_path.insert(0, self)

    def cancel(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, fullname, path, target=None):
        if fullname != self.name:
            return None
        self.cancel()
        for finder in sys.meta_path:
            spec = finder.find_spec(fullname, path, target) if hasattr(finder, "find_spec") else None
            if spec is not None:
                spec.loader = _ThenCall(spec.loader, self.callback)
                return spec
        return None


class _ThenCall(importlib.abc.Loader):
    """The module's own loader, plus a callback after it executed the module."""

    def __init__(self, loader, callback) -> None:
        self.loader, self.callback = loader, callback

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module) -> None:
        self.loader.exec_module(module)
        module.__loader__ = module.__spec__.loader = self.loader  # the module keeps its real loader
        self.callback()
