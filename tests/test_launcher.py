"""The direct launcher (kernels_templates/launcher.py) hands a compiled kernel's launcher exactly what Triton's
own JITFunction.run hands it, for the representative launches of every template family, compiled for sm_90 on
a simulated GPU (benchmarks/host_time.launching_nothing: no GPU needed, the C launcher is a recorder). Run in a child
process: the template tests' process runs Triton's interpreter, which has no compiled kernels."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parent.parent
OPS = {"exp", "mul", "addcmul", "sum", "cumsum", "matmul", "fft_c2c"}


def _normalized(args: tuple, inputs) -> tuple:
    """A launcher's arguments as what a launch depends on. A tensor is a pointer, all the C launcher reads from
    it: named by the input it starts at (else a fresh buffer, whose address differs per call) and its
    alignment. Launch metadata and hooks: whether a hook runs (Triton 3.8 passes empty hook chains and metadata
    no hook reads; None does the same)."""
    import torch

    starts = {t.data_ptr(): i for i, t in enumerate(inputs) if isinstance(t, torch.Tensor)}
    grid_stream_function, (metadata, enter, leave), rest = args[:6], args[6:9], args[9:]
    hooked = [hook for hook in (enter, leave) if hook is not None and getattr(hook, "calls", True)]
    launch_hooks = (type(metadata).__name__, *hooked) if hooked else "no launch hooks"
    return (*grid_stream_function, launch_hooks,
            *((f"input {starts[t.data_ptr()]}" if t.data_ptr() in starts else "fresh", t.data_ptr() % 16)
              if isinstance(t, torch.Tensor) else t for t in rest))


def compare() -> dict:
    """For each case: the launcher arguments on Triton's path, then on the direct path (a first call to learn
    the specialization, a second that launches directly)."""
    import tempfile

    import torch
    from triton.compiler.compiler import CompiledKernel

    from benchmarks.host_time import launching_nothing
    from jitdtypes.triton_kernels import aot
    from jitdtypes.cli import warm
    from kernels_templates import common, launcher

    received: list[tuple] = []
    inputs: list = []  # the tensors of the call being recorded
    families = aot.families()
    result = {"cases": 0, "equal": 0, "direct_launches": 0, "families": [], "unequal": [], "traced": []}
    workspace = Path(tempfile.mkdtemp(prefix="jitdtypes-launcher-test-"))
    with launching_nothing("sm_90"):
        handles = CompiledKernel._init_handles

        def recording_handles(kernel):
            handles(kernel)
            kernel._run = lambda *args: received.append(_normalized(args, inputs))

        CompiledKernel._init_handles = recording_handles
        try:
            seen_families = set()
            for family, params in warm.kernels_to_warm(["complex32"], OPS):
                if family in seen_families:
                    continue
                seen_families.add(family)
                params = {**params, "interpret": False}
                path = workspace / f"{family}.py"
                path.write_text(families[family].render(params))
                module = common.exec_source(path.read_text(), f"launcher_test_{family}", filename=str(path))
                run = launcher.eager_calls(module.run)
                for case in aot.CASES[family](families[family], params, module.run, aot.ODD):
                    if family == "matmul" and not case.label.startswith(("mv", "dot")):
                        continue  # the tiled products are autotuned: Triton's path every time
                    inputs[:] = case.args
                    received.clear()
                    launcher.direct_launches_enabled = False
                    run(*case.args)
                    through_triton = list(received)
                    launcher.direct_launches_enabled = True
                    run(*case.args)
                    received.clear()
                    before = sum(launcher.launcher(k).direct_launches for k in _kernels(module))
                    run(*case.args)
                    direct = list(received)
                    result["direct_launches"] += sum(launcher.launcher(k).direct_launches
                                                     for k in _kernels(module)) - before
                    result["cases"] += 1
                    result["traced"] += _traced_launches(module.run, case.args)
                    if direct == through_triton and direct:
                        result["equal"] += 1
                    else:
                        result["unequal"].append(f"{family} {case.label}: {through_triton!r} != {direct!r}")
                result["families"].append(family)
            result["float_specializations"] = _float_specializations(families, workspace)
            result["plans"] = _compare_plans(families, workspace, received, inputs)
        finally:
            CompiledKernel._init_handles = handles
    del torch
    return result


def _traced_launches(run, args) -> list[int]:
    """The launches make_fx records when tracing `run` with fake tensors, with concrete and with symbolic sizes:
    wrap_triton's higher-order op each, no address read (fake tensors have none)."""
    from torch.fx.experimental.proxy_tensor import make_fx

    counts = []
    for mode in ("fake", "symbolic"):
        graph = make_fx(lambda *a: run(*a), tracing_mode=mode)(*args).graph
        counts.append(sum(node.op == "call_function" and "triton_kernel_wrapper" in str(node.target)
                          for node in graph.nodes))
    return counts


def _plan_cases():
    """(family, overload, args, kwargs): calls the plans launch themselves. Elementwise: contiguous operands of one
    shape, an aligned and an odd size each, then broadcast, transposed and sliced ones. The other families: their
    common small calls, one operand misaligned (a slice one element in) or transposed, out= and in place where
    the plan writes them directly."""
    import torch

    def complex32(*shape, seed=0):
        return torch.randn(shape, dtype=torch.complex64, generator=torch.Generator().manual_seed(seed)).to(
            torch.complex32)

    cases = []
    for size in (64, 37):
        x, y, z = (complex32(size, seed=seed) for seed in range(3))
        cases += [
            ("unary", "aten::exp", (x,), {}),
            ("unary", "aten::abs", (x,), {}),
            ("unary", "aten::sqrt_", (x.clone(),), {}),
            ("binary", "aten::mul.Tensor", (x, y), {}),
            ("binary", "aten::mul.Tensor", (x, 2.5), {}),
            ("binary", "aten::add.Tensor", (x, y), {"alpha": 2}),
            ("binary", "aten::div.out", (x, y), {"out": torch.empty_like(x)}),
            ("ternary", "aten::addcmul", (x, y, z), {"value": 0.5}),
        ]
    grid, row = complex32(6, 8, seed=4), complex32(8, seed=5)
    cases += [  # broadcast, transposed and sliced operands: the layouts' launches
        ("binary", "aten::mul.Tensor", (grid, row), {}),
        ("binary", "aten::mul.Tensor", (grid.t(), grid.t()), {}),
        ("binary", "aten::mul_.Tensor", (grid.clone(), row), {}),
        ("binary", "aten::mul.out", (grid[:, 1:], row[1:]), {"out": torch.empty(6, 7, dtype=torch.complex32)}),
        ("unary", "aten::exp", (grid.t(),), {}),
        ("unary", "aten::abs", (grid[::2],), {}),
        ("ternary", "aten::addcmul", (grid, row, grid[0]), {"value": 2}),
    ]
    for x in (complex32(8), complex32(9)[1:]):
        cases += [
            ("reductions", "aten::sum", (x,), {}),
            ("reductions", "aten::sum.dim_IntList", (x, [0], True), {}),
            ("reductions", "aten::var.correction", (x,), {"correction": 0}),
            ("reductions", "aten::linalg_vector_norm", (x, 3.0), {}),
            ("scans", "aten::cumsum", (x, 0), {}),
            ("scans", "aten::cumsum_", (x.clone(), 0), {}),
            ("fft", "aten::_fft_c2c", (x, [0], 0, True), {}),
            ("fft", "aten::_fft_r2c", (torch.view_as_real(x)[:, 0], [0], 1, True), {}),
            ("fft", "aten::_fft_c2r", (x[:5], [0], 2, 8), {}),
        ]
    m, v = complex32(4, 4, seed=1), complex32(4, seed=2)
    cases += [
        ("matmul", "aten::mm", (m, m), {}),
        ("matmul", "aten::mm", (m.t().conj(), complex32(4, 5, seed=3)[:, 1:].t()), {}),
        ("matmul", "aten::addmm", (m, m, m), {"beta": 0.5, "alpha": 2j}),
        ("matmul", "aten::addmv_", (torch.empty(4, dtype=torch.complex32), m, v), {"beta": 0}),
        ("matmul", "aten::mv.out", (m, v), {"out": torch.empty(4, dtype=torch.complex32)}),
        ("matmul", "aten::dot", (v, v[:4]), {}),
    ]
    return cases


def _compare_plans(families, workspace: Path, received: list, inputs: list) -> dict:
    """An adapter's plan, launching by itself, hands the C launcher what the module's `run` hands it through
    Triton's own path for the same call."""
    import torch

    from kernels_templates import common, launcher

    modules = {}

    def loader(family, with_module):
        def load(params, key=None):
            params = {**params, "interpret": False}
            name = f"plan_{family}_{hashlib.sha256(json.dumps(params, sort_keys=True).encode()).hexdigest()[:16]}"
            if name not in modules:
                path = workspace / f"{name}.py"
                path.write_text(families[family].render(params))
                modules[name] = common.exec_source(path.read_text(), f"launcher_test_{name}", filename=str(path))
            eager_run = launcher.eager_calls(modules[name].run)

            def run(*args, **kwargs):
                result["runs"] += 1
                return eager_run(*args, **kwargs)

            if with_module:
                run.module = modules[name]
            return run

        return load

    result = {"cases": 0, "equal": 0, "direct_launches": 0, "unequal": [], "runs": 0, "through_run": []}
    for family, overload, args, kwargs in _plan_cases():
        adapter = families[family].ATEN[overload]
        inputs[:] = [*args, *kwargs.values()]
        received.clear()
        launcher.direct_launches_enabled = False
        adapter(loader(family, False), args, kwargs, "cpu")
        through_run = list(received)
        launcher.direct_launches_enabled = True
        plan = adapter.plan(loader(family, True), args, kwargs, "cpu")
        plan(args, kwargs)
        received.clear()
        before = sum(launcher.launcher(k).direct_launches for m in modules.values() for k in _kernels(m))
        runs = result["runs"]
        plan(args, kwargs)
        if result["runs"] != runs:
            result["through_run"].append(f"{overload} {args[0].shape}")
        result["direct_launches"] += sum(launcher.launcher(k).direct_launches
                                         for m in modules.values() for k in _kernels(m)) - before
        result["cases"] += 1
        if received == through_run and received:
            result["equal"] += 1
        else:
            result["unequal"].append(f"{overload} {args[0].shape}: {through_run!r} != {received!r}")
    # a layout the plan launches next to shapes that do not broadcast, with the same argument kinds
    mismatched = (torch.zeros(2, 3, dtype=torch.complex32), torch.zeros(4, dtype=torch.complex32))
    plan = families["binary"].ATEN["aten::mul.Tensor"].plan(loader("binary", True), mismatched, {}, "cpu")
    received.clear()
    result["declined"] = [plan(pair, {}) is NotImplemented for pair in (mismatched, mismatched)] + [not received]
    return result


def _kernels(module):
    from triton.runtime.jit import JITFunction

    return [value for value in vars(module).values() if isinstance(value, JITFunction)]


def _float_specializations(families, workspace: Path) -> list:
    """What Triton's binder makes of a float argument of several values: the launcher keys floats by type."""
    from triton import knobs

    from kernels_templates import common

    params = {"op": "mul", "dtype": "complex32", "layout": "interleaved", "out": False, "scalars": ["other"],
              "interpret": False}
    path = workspace / "mul_number.py"
    path.write_text(families["binary"].render(params))
    module = common.exec_source(path.read_text(), "launcher_test_float", filename=str(path))
    kernel = module.mul_kernel
    binder = kernel.device_caches[0][4]
    seen = []
    for number in (0.0, 1.0, 16.0, -2.5, 1e30):
        args = [0] * len(kernel.arg_names)
        names = kernel.arg_names
        args[names.index("other_re")] = number
        args[names.index("other_im")] = number
        kwargs = {"debug": False}  # what JITFunction.run adds to the arguments (Triton 3.5: no instrumentation)
        if hasattr(knobs.compilation, "instrumentation_mode"):
            kwargs["instrumentation_mode"] = knobs.compilation.instrumentation_mode
        specialization = binder(*args, **kwargs)[1]
        seen.append(repr([specialization[names.index("other_re")], specialization[names.index("other_im")]]))
    return sorted(set(seen))


def test_direct_launches_pass_what_triton_passes():
    environment = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    environment["PYTHONPATH"] = os.pathsep.join([str(ROOT), environment.get("PYTHONPATH", "")])
    environment["JITDTYPES_DISABLE"] = "1"
    code = "import json, tests.test_launcher as t; print(json.dumps(t.compare()))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environment,
                          cwd=ROOT, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["unequal"] == []
    assert set(result["families"]) == {"unary", "binary", "ternary", "reductions", "scans", "matmul", "fft"}
    assert result["cases"] >= 10 and result["equal"] == result["cases"]
    assert result["direct_launches"] >= result["cases"]
    # one specialization for every value: keying floats by their type alone is what Triton does
    assert len(result["float_specializations"]) == 1, result["float_specializations"]
    assert len(result["traced"]) == 2 * result["cases"] and min(result["traced"]) >= 1, result["traced"]
    plans = result["plans"]
    assert plans["unequal"] == [] and plans["cases"] == 47 and plans["equal"] == plans["cases"]
    assert plans["direct_launches"] >= plans["cases"] and plans["through_run"] == []
    assert plans["declined"] == [True, True, True]


@pytest.mark.parametrize("shape", [(8,), (1,), (3, 5), (1, 1), (2, 1, 7), ()])
@pytest.mark.parametrize("operands", [1, 2, 3, 9])  # 9: more tensors than any kernel has (planar ternary: 8)
def test_contiguous_launch_equals_the_general_one(shape, operands):
    """Contiguous operands skip collapsing dims, with the same launch arguments (so the same specialization:
    kernels warmed ahead of time still match)."""
    import torch

    from kernels_templates import elementwise

    class Recorder:
        def __init__(self):
            self.launches = []

        def __getitem__(self, grid):
            return lambda *args, **kwargs: self.launches.append((grid, args, kwargs))

    tensors = [torch.zeros(shape, dtype=torch.complex32) for _ in range(operands)]
    fast, general = Recorder(), Recorder()
    elementwise.launch(fast, 128, torch.float16, tensors[:-1], tensors[-1:], (0.5,))
    described = [elementwise._Operand(torch.view_as_real(t), elementwise.broadcast_strides(t.shape, t.stride(), shape),
                                      2) for t in tensors]
    elementwise._launch(general, 128, tuple(shape), tensors[0].numel(), described[:-1], described[-1:], (0.5,))
    assert len(fast.launches) == len(general.launches) == 1
    (grid, args, kwargs), (grid_, args_, kwargs_) = fast.launches[0], general.launches[0]
    assert grid == grid_ and kwargs == kwargs_
    assert [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args] == \
           [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args_]
