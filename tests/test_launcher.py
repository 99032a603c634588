"""The direct launcher (kernels_templates/launcher.py) hands a compiled kernel's launcher exactly what Triton's
own JITFunction.run hands it, for the representative launches of every template family, compiled for sm_90 on
a simulated GPU (benchmarks/host_time.launching_nothing: no GPU needed, the C launcher is a recorder). Run in a child
process: the template tests' process runs Triton's interpreter, which has no compiled kernels."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parent.parent
OPS = {"exp", "mul", "addcmul", "sum", "cumsum", "matmul", "fft_c2c"}


def _normalized(args: tuple) -> tuple:
    """A launcher's arguments with each tensor as what a launch depends on (fresh outputs differ in address)."""
    import torch

    return tuple((t.dtype, tuple(t.shape), tuple(t.stride()), t.data_ptr() % 16) if isinstance(t, torch.Tensor)
                 else type(t).__name__ if type(t).__name__ == "LazyDict" else t for t in args)


def compare() -> dict:
    """For each case: the launcher arguments on Triton's path, then on the direct path (a first call to learn
    the specialization, a second that launches directly)."""
    import tempfile

    import torch
    from triton.compiler.compiler import CompiledKernel

    from benchmarks.host_time import launching_nothing
    from jitdtypes import aot, warm
    from jitdtypes.kernels_templates import common, launcher

    received: list[tuple] = []
    families = aot.families()
    result = {"cases": 0, "equal": 0, "direct_launches": 0, "families": [], "unequal": []}
    workspace = Path(tempfile.mkdtemp(prefix="jitdtypes-launcher-test-"))
    with launching_nothing("sm_90"):
        handles = CompiledKernel._init_handles

        def recording_handles(kernel):
            handles(kernel)
            kernel._run = lambda *args: received.append(_normalized(args))

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
                    if direct == through_triton and direct:
                        result["equal"] += 1
                    else:
                        result["unequal"].append(f"{family} {case.label}: {through_triton!r} != {direct!r}")
                result["families"].append(family)
            result["float_specializations"] = _float_specializations(families, workspace)
        finally:
            CompiledKernel._init_handles = handles
    del torch
    return result


def _kernels(module):
    from triton.runtime.jit import JITFunction

    return [value for value in vars(module).values() if isinstance(value, JITFunction)]


def _float_specializations(families, workspace: Path) -> list:
    """What Triton's binder makes of a float argument of several values: the launcher keys floats by type."""
    from triton import knobs

    from jitdtypes.kernels_templates import common

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
        kwargs = {"debug": False, "instrumentation_mode": knobs.compilation.instrumentation_mode}
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


@pytest.mark.parametrize("shape", [(8,), (1,), (3, 5), (1, 1), (2, 1, 7), ()])
@pytest.mark.parametrize("operands", [1, 2, 3, 9])  # 9: more tensors than any kernel has (planar ternary: 8)
def test_contiguous_launch_equals_the_general_one(shape, operands):
    """Contiguous operands skip collapsing dims, with the same launch arguments (so the same specialization:
    kernels warmed ahead of time still match)."""
    import torch

    from jitdtypes.kernels_templates import elementwise

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
