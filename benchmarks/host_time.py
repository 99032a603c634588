"""Host time of template calls, the Python a GPU call spends before its kernel launch, measured without a GPU.

    python -m benchmarks.host_time [--rounds N] [--calls N] [--dtypes complex32,bcomplex32] [--arch sm_90]

The per-call cases of benchmarks/latency.py, and other layouts of the same families (LAYOUT_CASES), run on CPU
tensors with CPU calls routed to the Triton templates,
as CUDA calls are, but compiled for a GPU (not interpreted): Triton believes a GPU of `--arch` is active, each
kernel is compiled for it once, and the compiled kernel's launcher, the C function that would call
cuLaunchKernel, does nothing. What is timed is everything a CUDA call does on the host up to that launcher:
the compiled guard, the router, the specialization, the family's adapter, the module's `run` (allocation,
views, launch arguments) and the launch itself. Not included: the C launcher and the driver (a few us on a
real GPU), and the difference between CUDA's caching allocator and CPU allocation. The CPU renders the
interpreter's variants of the templates (smaller blocks, other matmul configurations): the same host code.

Three launch paths, timed in interleaved rounds in one process:
  direct     the default: a known specialization launches its compiled kernel directly (kernels_templates/launcher.py)
  triton     every launch through Triton's JITFunction.run (JITDTYPES_DIRECT_LAUNCH=0)
  hop        every launch through wrap_triton's higher-order op (what routed calls did before launcher.py)
Target (issue 13): at most 10 us of host time per template call on the default path.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import types

import torch

from benchmarks.common import percentiles, write_rows
from benchmarks.latency import CASES, _inputs, _per_call_us

PATHS = ("direct", "triton", "hop")
TARGET_US = 10.0
BATCH, ROW = (2, 4, 8), (8,)
# Layouts the per-call cases' contiguous vectors leave out: a frequency row broadcast over heads (rotary
# embeddings), transposed and sliced views, in place, out=, reductions and scans over inner or outer dims, a
# transposed matrix, a batched product, a transform along an outer dim. (family, label, op, shapes, views):
# `views` makes the views once, outside the timing.
LAYOUT_CASES = [
    ("layouts", "x * freqs (broadcast)", lambda x, f: x * f, (BATCH, ROW), None),
    ("layouts", "x.mul_(freqs)", lambda x, f: x.mul_(f), (BATCH, ROW), None),
    ("layouts", "mul(x, y, out=o)", lambda x, y, o: torch.mul(x, y, out=o), (BATCH, BATCH, BATCH), None),
    ("layouts", "x.mT.exp()", lambda x: x.exp(), (BATCH,), lambda x: (x.mT,)),
    ("layouts", "x.mT * x.mT", lambda x: x * x, (BATCH,), lambda x: (x.mT,)),
    ("layouts", "x[..., ::2].abs()", lambda x: x.abs(), (BATCH,), lambda x: (x[..., ::2],)),
    ("layouts", "x.sum(-1)", lambda x: x.sum(-1), (BATCH,), None),
    ("layouts", "x.mean((0, 1))", lambda x: x.mean((0, 1)), (BATCH,), None),
    ("layouts", "cumsum(x.mT, 1)", lambda x: torch.cumsum(x, 1), (BATCH,), lambda x: (x.mT,)),
    ("layouts", "m.mT @ v", lambda m, v: m @ v, ((4, 4), (4,)), lambda m, v: (m.mT, v)),
    ("layouts", "bmm(x, x.mT)", lambda x, y: torch.bmm(x, y), (BATCH,), lambda x: (x, x.mT)),
    ("layouts", "fft.fft(x, dim=1)", lambda x: torch.fft.fft(x, dim=1), (BATCH,), None),
]


@contextlib.contextmanager
def simulated_gpu(arch, patches=()):
    """Triton's driver and torch.cuda's device queries answer as a GPU of `arch` (an aot.Arch) would, with
    `patches` [(owner, attribute, value)] applied as well."""
    from triton.runtime import driver

    from jitdtypes.triton_kernels import aot

    class Driver:
        def get_current_device(self):
            return 0

        def get_current_stream(self, device):
            return 0

        def get_current_target(self):
            return aot.gpu_target(arch)

    properties = types.SimpleNamespace(multi_processor_count=arch.sm_count, name=arch.name,
                                       major=arch.capability // 10, minor=arch.capability % 10)
    patches = [*patches, (torch.cuda, "get_device_properties", lambda device=None: properties),
               (torch.cuda, "get_device_capability", lambda device=None: (properties.major, properties.minor))]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    active = driver._active  # resetting would look for a real GPU driver
    driver.set_active(Driver())
    try:
        yield
    finally:
        driver._active = active
        for owner, name, value in saved:
            setattr(owner, name, value)


def launching_nothing(arch_name: str, launches: list | None = None):
    """simulated_gpu, where compiled kernels load nothing and their C launcher does nothing (but append the
    kernel's name to `launches`, when given)."""
    from triton.compiler.compiler import CompiledKernel

    from jitdtypes.triton_kernels import aot

    def load_nothing(kernel):
        if kernel.module is None:
            launch = (lambda *args: None) if launches is None else (lambda *args: launches.append(kernel.name))
            kernel.module, kernel.function, kernel._run = "simulated", 0, launch

    return simulated_gpu(aot.ARCHES[arch_name], [(CompiledKernel, "_init_handles", load_nothing)])


@contextlib.contextmanager
def simulated_process(arch_name: str, launches: list | None = None):
    """Every template call of the process compiled for a GPU of `arch_name` and launched on nothing: CPU
    tensors, CPU calls routed to the templates (launching_nothing, cpu_calls_through_templates). Triton must
    not run in its interpreter (no TRITON_INTERPRET=1)."""
    with launching_nothing(arch_name, launches), cpu_calls_through_templates():
        yield


@contextlib.contextmanager
def cpu_calls_through_templates():
    """Route CPU calls to the templates without Triton's interpreter (set_cpu_backend would turn it on)."""
    from jitdtypes.triton_kernels import engine

    previous = engine.cpu_backend()
    engine.route_cpu_calls(engine.TRITON_INTERPRET)
    try:
        yield
    finally:
        engine.route_cpu_calls(previous)


class _AlwaysTraced:
    """A wrap_triton switch stuck on: eager callers can no longer opt out of the higher-order op."""

    value = property(lambda self: True, lambda self, value: None)


@contextlib.contextmanager
def launch_path(path: str):
    import torch._library.triton as torch_triton

    from kernels_templates import launcher

    saved = launcher.direct_launches_enabled, launcher._wrap_state, torch_triton.is_wrap_triton_enabled
    launcher.direct_launches_enabled = path == "direct"
    if path == "hop":
        launcher._wrap_state = _AlwaysTraced()
        torch_triton.is_wrap_triton_enabled = lambda: True
    try:
        yield
    finally:
        launcher.direct_launches_enabled, launcher._wrap_state, torch_triton.is_wrap_triton_enabled = saved


def _calls_by_path(dtype_name: str) -> dict:
    import jitdtypes

    counts: dict = {}
    for row in jitdtypes.stats():
        if row["dtype"] == dtype_name and row["device"] == "cpu":
            counts[row["path"]] = counts.get(row["path"], 0) + row["calls"]
    return counts


def _path_taken(op, args, dtype_name: str) -> str:
    """The path jitdtypes.stats() counts a call on: template, upcast, native, or pytorch (not overridden)."""
    before = _calls_by_path(dtype_name)
    op(*args)
    after = _calls_by_path(dtype_name)
    moved = [path for path, calls in after.items() if calls > before.get(path, 0)]
    return "template" if "template" in moved else moved[0] if moved else "pytorch"


def measure(dtypes: list[torch.dtype], rounds: int, calls: int) -> list[dict]:
    cases = []
    every = [(family, label, op, shapes, None) for family, label, _, op, shapes in CASES] + LAYOUT_CASES
    for seed, (family, label, op, shapes, views) in enumerate(every):
        for dtype in dtypes:
            args = _inputs(shapes, dtype, "cpu", seed)
            args = views(*args) if views is not None else args
            name = str(dtype).removeprefix("torch.")
            op(*args)  # compiles this call's kernels for the simulated GPU
            taken = _path_taken(op, args, name)
            cases.append((family, label, name, taken, lambda op=op, args=args: op(*args)))
    samples = {(i, path): [] for i in range(len(cases)) for path in PATHS}
    gc.disable()
    try:
        for round_index in range(rounds):
            order = PATHS[round_index % 3:] + PATHS[:round_index % 3]
            for i, case in enumerate(cases):
                for path in order:
                    with launch_path(path):
                        samples[(i, path)].append(_per_call_us(case[-1], calls, "cpu"))
    finally:
        gc.enable()
    rows = []
    for i, (family, label, name, taken, _) in enumerate(cases):
        row = {"family": family, "case": label, "dtype": name, "path": taken}
        for path in PATHS:
            p20, p50, p80 = percentiles(samples[(i, path)])
            row.update({f"{path}_p50_us": round(p50, 2), f"{path}_p20_us": round(p20, 2),
                        f"{path}_p80_us": round(p80, 2)})
        row["triton_over_direct"] = round(row["triton_p50_us"] / row["direct_p50_us"], 2)
        row["hop_over_direct"] = round(row["hop_p50_us"] / row["direct_p50_us"], 2)
        row["target"] = ("met" if row["direct_p50_us"] <= TARGET_US else "missed") if taken == "template" else "-"
        rows.append({**row, "rounds": rounds, "calls": calls})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--dtypes", default="complex32,bcomplex32")
    parser.add_argument("--arch", default="sm_90")
    options = parser.parse_args()
    import triton  # compiled, not interpreted: before anything could set TRITON_INTERPRET

    import jitdtypes
    from jitdtypes import dtypes as known

    wanted = [known.BY_NAME[name] for name in options.dtypes.split(",") if name in known.BY_NAME]
    with simulated_process(options.arch):
        rows = measure(wanted, options.rounds, options.calls)
    print(f"host time per call up to the kernel launcher, simulated {options.arch}, triton {triton.__version__}, "
          f"torch {torch.__version__}, jitdtypes {jitdtypes.__version__} (median us; target {TARGET_US:g} us)")
    print(f"{'family':15} {'case':22} {'dtype':10} {'path':8} {'direct':>7} {'triton':>7} {'hop':>7} "
          f"{'x tri':>6} {'x hop':>6}  target")
    for r in rows:
        print(f"{r['family']:15} {r['case']:22} {r['dtype']:10} {r['path']:8} {r['direct_p50_us']:7.1f} "
              f"{r['triton_p50_us']:7.1f} {r['hop_p50_us']:7.1f} {r['triton_over_direct']:6.2f} "
              f"{r['hop_over_direct']:6.2f}  {r['target']}")
    print(f"rows appended to {write_rows('host_time', [{**r, 'arch': options.arch} for r in rows])}")


if __name__ == "__main__":
    main()
