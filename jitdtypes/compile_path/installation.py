"""What the compile path puts into torch, and takes out again.

`install(findings_by_device)` (called by jitdtypes.enable) puts in place, until `handle.remove()`:

1. Meta kernels that make fake tensors agree with eager jitdtypes (`meta_kernels.py`), so Dynamo and
   AOTAutograd trace every overridden op (fullgraph=True works, no graph break from 16-bit complex).
2. Entries in Inductor's decomposition table (`decompositions.py`) that rewrite 16-bit complex ATen ops into
   fused float32 arithmetic on parts, and matrix products/FFTs into jitdtypes custom ops. Each entry returns
   NotImplemented for other dtypes, so other compiled programs are traced as before. With them, a lowering
   for `jitdtypes::realized` (`realized.py`), which only their graphs call.
3. jitdtypes' own modules on Dynamo's skip list. Its kernels are Python functions the dispatcher calls; when
   that happens in the eager parts of a compiled function (an optimizer step, code after a graph break)
   Dynamo would otherwise try to compile them (a complex32 Adam step then failed with RecursionError).
4. Inductor's check that warns "does not support code generation for complex operators" skipped for the
   16-bit complex tensors this path handles (read as words, constants, linear algebra:
   `torch_warnings.skip_complex_check`), where the warning is false; kept for every other complex tensor.
5. A tag in torch.compiler.config.cache_key_tag: Inductor's and AOTAutograd's on-disk caches key on the
   Dynamo graph, which is the same with and without these decompositions, so entries made without them (or
   by another version of them, or with another choice of opted-in dtypes) must not be reused.
6. The opted-in wide complex dtypes (opt_in.py, `choose_complex`), which the decompositions then compute
   planar too; remove() opts them out.

Importing Inductor or Dynamo costs about a second each, so 2, 3 and 4 happen when torch._inductor.lowering and
torch._dynamo.trace_rules are first imported (by the first torch.compile), or right away if they already are.
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

from . import meta_kernels, opt_in

log = logging.getLogger("jitdtypes")

_INDUCTOR_LOWERING = "torch._inductor.lowering"  # imports the decomposition table and registers its fallbacks
_DYNAMO_TRACE_RULES = "torch._dynamo.trace_rules"
# Packages whose Python code runs inside dispatcher calls (guards, upcast path, template adapters, kernel cache)
_OWN_PACKAGES = ("jitdtypes", "kernels_templates", "cache_tools")
_lock = threading.Lock()


def cache_tag() -> str:
    """Changes whenever the compile path's sources (its room and the complex-math library it computes with) or
    its storage choice (layout_ops) change."""
    from .. import complex_math
    from . import layout_ops

    digest = hashlib.sha256(layout_ops.storage_tag().encode())
    for path in [*sorted(Path(__file__).parent.glob("*.py")), Path(complex_math.__file__)]:
        digest.update(path.name.encode() + path.read_bytes())
    return f"jitdtypes-compile-{digest.hexdigest()[:16]}"


class Installation:
    """What install() changed; remove() puts everything back (idempotent)."""

    def __init__(self) -> None:
        self.meta_kernels: meta_kernels.MetaKernels | None = None
        self.replaced: list[tuple[dict, object, object]] = []  # (table, overload, previous entry or None)
        self.lowerings: list = []  # overloads given a lowering in Inductor's table (none had one)
        self.skipped_dirs: list[str] = []  # added to Dynamo's SKIP_DIRS
        self.import_hooks: list[_AfterImport] = []
        self.restore_complex_check = None  # puts back Inductor's unsupported_input_tensor
        self.cache_tag: str | None = None
        self.previous_cache_tag: str | None = None

    def choose_complex(self, chosen: frozenset) -> None:
        """Compile the wide complex dtypes in `chosen` planar from now on (and no others). As with Inductor's
        own settings, functions Dynamo compiled before keep their code until torch._dynamo.reset()."""
        with _lock:
            opt_in.choose(chosen)
            self.set_cache_tag()

    def set_cache_tag(self) -> None:
        """torch.compiler.config.cache_key_tag: the tag set before ours, plus this compile path's."""
        config = torch.compiler.config
        if not hasattr(config, "cache_key_tag"):
            return
        if self.cache_tag is None or config.cache_key_tag != self.cache_tag:  # first, or replaced by the user
            self.previous_cache_tag = config.cache_key_tag
        self.cache_tag = "+".join(t for t in (self.previous_cache_tag, cache_tag() + opt_in.tag()) if t)
        config.cache_key_tag = self.cache_tag

    def install_into_inductor(self) -> None:
        self.install_decompositions()
        self.install_lowerings()
        self.skip_complex_check()

    def install_lowerings(self) -> None:
        from torch._inductor import lowering

        from . import realized

        with _lock:
            if not self.lowerings and realized.install_lowering(lowering.lowerings):
                self.lowerings.append(realized.OP)

    def skip_complex_check(self) -> None:
        from torch._inductor import lowering

        from .. import torch_warnings

        with _lock:
            if self.restore_complex_check is None:
                self.restore_complex_check = torch_warnings.skip_complex_check(lowering, opt_in.complex_dtypes)

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

    def skip_own_frames(self) -> None:
        from torch._dynamo import trace_rules

        with _lock:
            if self.skipped_dirs:
                return
            for package in _OWN_PACKAGES:
                known = len(trace_rules.SKIP_DIRS)
                trace_rules.add(package)  # appends the package's directory (even when already listed)
                added = trace_rules.SKIP_DIRS[known:]
                if added and added[0] in trace_rules.SKIP_DIRS[:known]:
                    del trace_rules.SKIP_DIRS[known:]
                else:
                    self.skipped_dirs += added
            trace_rules._recompile_re()

    def remove(self) -> None:
        with _lock:
            for hook in self.import_hooks:
                hook.cancel()
            self.import_hooks.clear()
            for table, overload, previous in reversed(self.replaced):
                if previous is None:
                    table.pop(overload, None)
                else:
                    table[overload] = previous
            self.replaced.clear()
            if self.lowerings:
                from torch._inductor import lowering

                for overload in self.lowerings:
                    lowering.lowerings.pop(overload, None)
                self.lowerings.clear()
            if self.restore_complex_check is not None:
                self.restore_complex_check()
                self.restore_complex_check = None
            if self.skipped_dirs:
                from torch._dynamo import trace_rules

                for directory in self.skipped_dirs:
                    trace_rules.SKIP_DIRS.remove(directory)
                trace_rules._recompile_re()
                self.skipped_dirs = []
            config = torch.compiler.config
            if self.cache_tag is not None and getattr(config, "cache_key_tag", None) == self.cache_tag:
                config.cache_key_tag = self.previous_cache_tag
            self.cache_tag = None
            if self.meta_kernels is not None:
                self.meta_kernels.remove()
                self.meta_kernels = None
            opt_in.choose(frozenset())


def install(findings_by_device: dict) -> Installation:
    """Install the compile path for jitdtypes' findings ({device type: [Finding]}); see the module docstring."""
    # The custom ops, registered now rather than with the decompositions that use them: a compiled artifact
    # loaded without Inductor's lowering (an AOTInductor package) calls them by name. torch.library keeps
    # them for the process's life; they run only where a graph names them.
    importlib.import_module(f"{__package__}.custom_ops")
    importlib.import_module(f"{__package__}.layout_ops")
    importlib.import_module(f"{__package__}.realized")

    installation = Installation()
    try:
        installation.meta_kernels = meta_kernels.install(findings_by_device)
        installation.set_cache_tag()
        for module, step in ((_INDUCTOR_LOWERING, installation.install_into_inductor),
                             (_DYNAMO_TRACE_RULES, installation.skip_own_frames)):
            if module in sys.modules:
                step()
            else:
                installation.import_hooks.append(_AfterImport(module, step))
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
