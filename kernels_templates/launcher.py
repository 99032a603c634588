"""The cheapest way Triton offers to launch a kernel whose specialization is already compiled.

Rendered modules launch through `launcher(kernel)[grid](*args, **constexprs)` where they would write
`wrap_triton(kernel)[grid](...)`. Three cases:

- Traced (torch.compile or torch.export through the module's custom op, or any caller that has not opted out):
  wrap_triton's higher-order op, which tracing needs. In eager mode that op costs far more than the launch, so
  eager callers opt out the way torch.library.triton_op's own eager kernel does (`eager_calls`).
- Eager, first launch of a specialization: Triton's own `JITFunction.run` (bind, specialize, compile or load,
  launch), which returns the compiled kernel; it is kept under a key computed from the arguments.
- Eager, a specialization seen before: the compiled kernel's launcher is called with exactly the arguments
  `JITFunction.run` passes it (grid, stream, function, metadata, hooks, every bound argument in signature
  order), skipping the binder, the cache key's string building and the global-value checks (most of its host
  time per launch).

Host code that knows what determines its launch skips even that key: `launch_pointers(key, grid, args, kwargs,
tensors)` keeps the launch under the caller's hashable `key` (its geometry: element count or shapes and
strides, device, the scalars' types) plus each tensor's dtype and alignment, and repeats it on later calls
with the new arguments as they are, a complex tensor standing for its view_as_real: a pointer's address is all
the C launcher reads.

The key is coarser than nothing and finer than Triton's specialization: per tensor its dtype and whether its
data pointer is 16-byte aligned (all Triton specializes a pointer on), per int and bool its value (Triton
specializes ints on 1, on divisibility by 16 and on their width), per float only its type (Triton never
specializes a float argument; tests/test_launcher.py checks that on the installed Triton), the keyword
arguments by value, and the device. Equal keys therefore mean the same compiled kernel. Anything else
(autotuned kernels, the interpreter, pre-run hooks, stage-inspection hooks, a Triton older than 3.4, argument
types outside these) takes Triton's own path every time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

import torch

from jitdtypes import torch_compat

try:
    from triton import knobs
    from triton.runtime import driver
    from triton.runtime.jit import JITFunction
except ImportError:  # Triton before 3.4 has no knobs and passes other launcher arguments: no direct launches
    knobs = driver = JITFunction = None

try:
    from torch._library.triton import wrap_triton_enabled as _wrap_state
except ImportError:  # an older torch always traces through the higher-order op
    _wrap_state = None

torch_compat.fix_triton_interpreter()
if knobs is not None:  # knobs Triton 3.5 lacks: a launch depends on them as on their defaults there
    _instrumentation_mode = torch_compat.triton_knob("compilation", "instrumentation_mode", "")
    _stages_hook = torch_compat.triton_knob("runtime", "add_stages_inspection_hook", None)
# JITDTYPES_DIRECT_LAUNCH=0: every eager launch through Triton's JITFunction.run (comparisons, debugging)
direct_launches_enabled = os.environ.get("JITDTYPES_DIRECT_LAUNCH", "1") != "0"
# a kernel seeing this many specializations starts over: keys include int values (sizes, strides), so a
# program that keeps changing shapes would otherwise grow the table without bound
LIMIT = 512
_Tensor = torch.Tensor
_launchers_lock = threading.Lock()


def launcher(kernel) -> "Launcher":
    """The launcher of a @triton.jit (or autotuned, or interpreted) kernel; one per kernel object, kept on it
    (it lives and dies with its module)."""
    found = getattr(kernel, "jitdtypes_launcher", None)
    if found is None:
        with _launchers_lock:
            found = getattr(kernel, "jitdtypes_launcher", None)
            if found is None:
                found = kernel.jitdtypes_launcher = Launcher(kernel)
    return found


def eager_calls(run):
    """`run` (a rendered module's torch-facing function) for callers passing real tensors: its launches skip
    wrap_triton's higher-order op, as torch.library.triton_op's eager kernel does."""
    if _wrap_state is None:
        return run

    @functools.wraps(run)  # its signature too: callers read the module's arguments from it
    def run_eagerly(*args, **kwargs):
        previous = getattr(_wrap_state, "value", True)
        _wrap_state.value = False
        try:
            return run(*args, **kwargs)
        finally:
            _wrap_state.value = previous

    return run_eagerly


def on_device_of(tensor):
    """Triton launches on the current CUDA device, PyTorch ops on their tensors' one: a context that makes
    `tensor`'s device current for the launches inside when it is another one (a no-op otherwise)."""
    return contextlib.nullcontext() if on_current_device(tensor) else torch.cuda.device(tensor.device)


def on_current_device(tensor) -> bool:
    """Whether launches for `tensor` need no device switch (on_device_of would be a no-op): plans launching by
    themselves check this and leave other devices' tensors to the module's `run`, which switches."""
    return not tensor.is_cuda or tensor.device.index == torch.cuda.current_device()


def traced() -> bool:
    """Whether launches now go through wrap_triton's higher-order op (anything but an eager caller's call)."""
    return _wrap_state is None or getattr(_wrap_state, "value", True)


class Launcher:
    def __init__(self, kernel) -> None:
        self.kernel = kernel
        self.direct = JITFunction is not None and isinstance(kernel, JITFunction)
        self.compiled: dict[tuple, tuple] = {}  # key -> (compiled kernel, names of keyword arguments bound)
        # (device, debug knobs, a caller's key) -> (the compiled kernel's launcher, the grid, function and metadata,
        # the values of the keyword arguments bound): what launch_pointers repeats
        self.known: dict[tuple, tuple] = {}
        self.direct_launches = 0

    def __getitem__(self, grid):
        return lambda *args, **kwargs: self.launch(grid, args, kwargs)

    def launch(self, grid, args: tuple, kwargs: dict, keep=None):
        """keep: the caller's key for this launch's specialization, to repeat it (launch_pointers)."""
        if _wrap_state is None or getattr(_wrap_state, "value", True):
            return torch_compat.wrap_triton(self.kernel)[grid](*args, **kwargs)
        if not (self.direct and direct_launches_enabled and self.compiled) or grid.__class__ is not tuple:
            return self._through_triton(grid, args, kwargs, keep)
        device = driver.active.get_current_device()
        found = self.compiled.get(self._key(device, args, kwargs))
        if found is None or self.kernel.pre_run_hooks or _stages_hook() is not None:
            return self._through_triton(grid, args, kwargs, keep)
        compiled, keywords = found
        if keep is not None:
            self._keep(device, keep, compiled, keywords, kwargs, grid)
        stream = driver.active.get_current_stream(device)
        bound = (*args, *(kwargs[name] for name in keywords))
        metadata = compiled.launch_metadata(grid, stream, *bound)
        self.direct_launches += 1
        compiled.run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1, stream,
                     compiled.function, compiled.packed_metadata, metadata, knobs.runtime.launch_enter_hook,
                     knobs.runtime.launch_exit_hook, *bound)
        return compiled

    def launch_pointers(self, key, grid: tuple, args, kwargs: dict, tensors, eager: bool = False) -> None:
        """Launch with complex tensors among `args` standing for their view_as_real (a pointer's address is all
        the C launcher reads): the launch kept under `key` plus the dtype and alignment of each of `tensors`
        (the distinct tensors among `args`: one passed twice once, where the key says so), else the one `launch`
        makes with the views, kept. The caller guarantees that `key` (its geometry: shapes, strides, device, the
        scalars' types) and those determine the grid and every other argument, so equal keys mean one
        specialization and one grid. eager: the caller holds real tensors outside any tracing (a routed call),
        whatever wrap_triton's switch says."""
        kept = None
        if eager or not traced():  # traced tensors (fake ones) have no addresses
            kept = [key]
            for t in tensors:
                kept += (t.dtype, t.data_ptr() & 15)
            kept = tuple(kept)
            if self.known and direct_launches_enabled:
                active, runtime = driver.active, knobs.runtime
                device = active.get_current_device()
                found = self.known.get((device, runtime.debug, _instrumentation_mode(), kept))
                enter, leave = runtime.launch_enter_hook, runtime.launch_exit_hook
                # a launch hook (a profiler) gets its metadata, built from the arguments as bound, on Triton's
                # path; Triton 3.8 keeps chains of hooks, empty unless a profiler added one, earlier ones None
                if (found is not None and not self.kernel.pre_run_hooks
                        and _stages_hook() is None
                        and (enter is None or not getattr(enter, "calls", True))
                        and (leave is None or not getattr(leave, "calls", True))):
                    run, grid_x, grid_y, grid_z, function, metadata, constexprs = found
                    self.direct_launches += 1
                    run(grid_x, grid_y, grid_z, active.get_current_stream(device), function, metadata, None, None, None,
                        *args, *constexprs)
                    return
        views = tuple(torch.view_as_real(a) if isinstance(a, _Tensor) and a.is_complex() else a for a in args)
        (eager_calls(self.launch) if eager else self.launch)(grid, views, kwargs, keep=kept)

    def _keep(self, device, key, compiled, keywords: tuple, kwargs: dict, grid: tuple) -> None:
        """Keep a launch for launch_pointers: its key determines the grid too."""
        if len(self.known) >= LIMIT:
            self.known.clear()
        grid_x, grid_y, grid_z = (*grid, 1, 1)[:3]
        self.known[(device, knobs.runtime.debug, _instrumentation_mode(), key)] = (
            compiled.run, grid_x, grid_y, grid_z, compiled.function, compiled.packed_metadata,
            tuple(kwargs[name] for name in keywords))

    @staticmethod
    def _key(device, args: tuple, kwargs: dict):
        """None for an argument type outside the key's rules (module docstring)."""
        parts = [device, knobs.runtime.debug, _instrumentation_mode()]
        for value in args:
            kind = value.__class__
            if kind is _Tensor:
                parts.append((value.dtype, not value.data_ptr() & 15))
            elif kind is int:
                parts.append(value)
            elif kind is float:
                parts.append(kind)  # never equal to an int
            elif kind is bool:
                parts.append((kind, value))  # True == 1, but Triton gives bools their own type
            else:
                return None
        parts.extend(kwargs.items())
        return tuple(parts)

    def _through_triton(self, grid, args: tuple, kwargs: dict, keep=None):
        compiled = self.kernel[grid](*args, **kwargs)
        if not (self.direct and direct_launches_enabled) or grid.__class__ is not tuple:
            return compiled
        if compiled is None or not hasattr(compiled, "packed_metadata") or self.kernel.pre_run_hooks:
            return compiled  # recorded rather than run (jitdtypes.aot), or not a launch this class can repeat
        keywords = tuple(self.kernel.arg_names[len(args):])
        if set(keywords) - kwargs.keys():
            return compiled  # a default filled in by Triton's binder: keep its path
        device = driver.active.get_current_device()
        key = self._key(device, args, kwargs)
        if key is not None:
            if len(self.compiled) >= LIMIT:
                self.compiled.clear()
            self.compiled[key] = compiled, keywords
            if keep is not None:
                self._keep(device, keep, compiled, keywords, kwargs, grid)
        return compiled
