"""Deployment: `import jitdtypes` registers the compile path's custom ops without loading Dynamo or Inductor,
and an AOTInductor package of a complex32 module (matrix product, elementwise ops, FFTs) built in one process
loads and runs in a fresh one that only imports jitdtypes (the package calls torch.ops.jitdtypes.* by name)."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from tests.conftest import TOLERANCE

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MODULE = textwrap.dedent("""
    import torch

    class Module(torch.nn.Module):
        def forward(self, a, b, x):
            product = (a @ b).exp() * 2 + torch.fft.fft(a, dim=-1)[:, :b.shape[1]]
            return product, torch.fft.irfft(torch.fft.rfft(x) * 1j, n=x.shape[-1])

    def arguments():
        torch.manual_seed(0)
        a = torch.randn(4, 8, dtype=torch.complex64).to(torch.complex32) * 0.3
        b = torch.randn(8, 6, dtype=torch.complex64).to(torch.complex32) * 0.3
        return a, b, torch.randn(4, 16).half()
""")


def _python(script: str, timeout: int):
    return subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True,
                          timeout=timeout, env=os.environ.copy())


def test_import_registers_the_custom_ops_without_dynamo_or_inductor():
    ran = _python("import sys, torch, jitdtypes\n"
                  "print(sorted(op for op in ('complex_matmul', 'fft_r2c', 'fft_c2c', 'fft_c2r')"
                  " if hasattr(torch.ops.jitdtypes, op)))\n"
                  "print(sorted(m for m in sys.modules if m.startswith(('torch._dynamo', 'torch._inductor'))))",
                  timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-2:] == ["['complex_matmul', 'fft_c2c', 'fft_c2r', 'fft_r2c']", "[]"]


def test_aot_inductor_package_runs_in_a_fresh_process(tmp_path):
    package = tmp_path / "module.pt2"
    build = MODULE + textwrap.dedent(f"""
        import jitdtypes
        a, b, x = arguments()
        program = torch.export.export(Module(), (a, b, x))
        try:
            torch._inductor.aoti_compile_and_package(program, package_path={str(package)!r})
        except Exception as error:  # no C++ toolchain AOTInductor can use here
            print("AOTINDUCTOR FAILED:", type(error).__name__, str(error).splitlines()[-1:])
            raise SystemExit(0)
        torch.save(Module()(a, b, x), {str(tmp_path / "expected.pt")!r})
    """)
    built = _python(build, timeout=1200)
    assert built.returncode == 0, built.stderr
    if "AOTINDUCTOR FAILED" in built.stdout:
        pytest.skip(f"AOTInductor cannot compile on this machine: {built.stdout.strip()}")
    run = MODULE + textwrap.dedent(f"""
        import sys
        import jitdtypes
        runner = torch._inductor.aoti_load_package({str(package)!r})
        outputs = runner(*arguments())
        torch.save(outputs, {str(tmp_path / "got.pt")!r})
        print("lowering" if "torch._inductor.lowering" in sys.modules else "no lowering")
    """)
    ran = _python(run, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == "no lowering"  # the ops came from `import jitdtypes` alone
    got, want = torch.load(tmp_path / "got.pt"), torch.load(tmp_path / "expected.pt")
    assert [t.dtype for t in got] == [t.dtype for t in want] == [torch.complex32, torch.float16]
    for g, w in zip(got, want):
        wide = torch.complex128 if w.is_complex() else torch.float64
        error = (g.to(wide) - w.to(wide)).abs().max() / w.to(wide).abs().max()
        assert error.item() <= TOLERANCE[torch.complex32]
