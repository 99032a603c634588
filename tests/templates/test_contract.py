"""What every template family promises (kernels_templates/common.py): its ATen adapters name real overloads and
offer plans."""

import importlib

import pytest
import torch

from jitdtypes.triton_kernels.engine import FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_adapter_names_are_real_overloads(family):
    module = importlib.import_module(f"kernels_templates.{family}")
    assert module.FAMILY == family and module.ATEN
    for name in module.ATEN:
        qualified, _, overload = name.partition(".")
        torch._C._get_schema(qualified, overload)  # raises for an unknown overload
        assert callable(getattr(module.ATEN[name], "plan", None)), name  # engine.planned_adapter asks it


# families whose kernels and host launcher are real modules (kernels_templates/<module>.py): what is rendered per
# variant only binds them to the params, with the torch-facing `run`
REAL_MODULES = {"matmul": "matmul_kernels", "fft": "fft_kernels", "reductions": "reduction_kernels",
                "scans": "scan_kernels"}


@pytest.mark.parametrize("family", sorted(REAL_MODULES))
def test_rendered_text_only_binds_the_real_module(family):
    """Every variant's rendered module, for GPUs and for the interpreter: no Triton code (no @triton.jit, no
    `tl.`), one function, `run`, whose body is one call, at most 30 lines; its kernels are the real module's own
    objects, which every variant shares."""
    import ast

    from jitdtypes import dtypes
    from kernels_templates import common

    module = importlib.import_module(f"kernels_templates.{family}")
    real = importlib.import_module(f"kernels_templates.{REAL_MODULES[family]}")
    for dtype in dtypes.COMPLEX_BY_NAME:
        for params in module.variants(dtype):
            for interpret in (False, True):
                source = module.render({**params, "interpret": interpret})
                assert not any(code in source for code in ("@triton.jit", "tl.", "import triton")), params
                assert len(source.splitlines()) <= 30, (params, len(source.splitlines()))
                functions = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
                assert [f.name for f in functions] == ["run"], params
                body = functions[0].body[1:]  # after the docstring
                assert len(body) == 1 and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Call)
                rendered = common.exec_source(source, f"jd_test_rendered_{family}")
                kernels = {name: value for name, value in vars(rendered).items() if name.endswith("_kernel")}
                assert kernels and all(value is getattr(real, name) for name, value in kernels.items()), params


def test_host_arithmetic_matches_triton():
    """Rendered host code divides and rounds with common.cdiv/next_power_of_2 (Triton's are constexpr functions,
    slow outside kernels): same results, including zero and negative arguments."""
    import triton

    from kernels_templates import common

    for n in range(-40, 5000):
        assert common.next_power_of_2(n) == triton.next_power_of_2(n), n
        for divisor in (1, 2, 3, 16, 64, 1000):
            assert common.cdiv(n, divisor) == triton.cdiv(n, divisor), (n, divisor)
    assert common.next_power_of_2(2**40 + 1) == triton.next_power_of_2(2**40 + 1) == 2**41


def test_launches_make_the_tensors_device_current(monkeypatch):
    """Triton launches on the current CUDA device, PyTorch on the tensors' one: launcher.on_device_of makes a
    tensor's device current around launches when it is another one, and changes nothing otherwise."""
    import types

    from kernels_templates import launcher

    entered = []

    class Device:  # torch.cuda.device's stand-in: this machine may have no GPU
        def __init__(self, device):
            self.device = device

        def __enter__(self):
            entered.append(self.device)

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "device", Device)
    for tensor in (types.SimpleNamespace(is_cuda=True, device=torch.device("cuda", 1)),
                   types.SimpleNamespace(is_cuda=True, device=torch.device("cuda", 0)), torch.zeros(1)):
        with launcher.on_device_of(tensor):
            pass
    assert entered == [torch.device("cuda", 1)]


def test_every_family_launches_on_its_tensors_device(load, monkeypatch):
    """Each family's host code launches inside on_device_of of one of the call's tensors, once per call."""
    import contextlib

    from kernels_templates import fft, launcher

    seen = []

    def recording(tensor):
        seen.append(tensor)
        return contextlib.nullcontext()

    x = torch.randn(4, dtype=torch.complex64).to(torch.complex32)
    out = torch.empty_like(x)
    calls = {
        "unary": ({"op": "exp", "dtype": "complex32", "layout": "interleaved", "out": False, "scalars": []}, (x,)),
        "reductions": ({"op": "sum", "dtype": "complex32"}, (x, [0], torch.empty((), dtype=x.dtype))),
        "scans": ({"op": "cumsum", "dtype": "complex32"}, (x, 0, out)),
        "matmul": ({"op": "matmul", "dtype": "complex32", "conj_a": False, "conj_b": False},
                   (x.view(1, 2, 2), x.view(1, 2, 2), out.view(1, 2, 2), None, 1.0, 0.0, 0.0, 0.0)),
        "fft": (fft._params("fft_c2c", "complex32", 4, False), (x.view(1, 1, 4), out.view(1, 1, 4), 1.0)),
    }
    monkeypatch.setattr(launcher, "on_device_of", recording)  # elementwise host code looks it up there
    for family, (params, args) in calls.items():
        run = load(family)(params)
        if "on_device_of" in run.__globals__:
            monkeypatch.setitem(run.__globals__, "on_device_of", recording)
        seen.clear()
        run(*args)
        assert len(seen) == 1 and seen[0].device == x.device, family
