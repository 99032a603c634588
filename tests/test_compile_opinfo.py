"""OpInfo samples under torch.compile, in complex32 and bcomplex32, match eager jitdtypes.

Every elementwise, reduction and matmul-family OpInfo op is compiled with fullgraph=True through Inductor's
decompositions, which is where the compile path works, with the graphs run eagerly
(backend="aot_eager_decomp_partition": Inductor's C++ compile would not fit in CI time); the ops the table
covers must leave no 16-bit complex arithmetic in the graph. A subset runs through Inductor itself. Fake
tensors (what Dynamo traces with) must give eager's dtypes and shapes for every OpInfo op and for the
real-16-bit FFT entry points, forward and backward.
"""

import pytest
import torch
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch._dynamo.backends.common import aot_autograd
from torch._functorch.partitioners import min_cut_rematerialization_partition
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.testing._internal.opinfo.core import BinaryUfuncInfo, ReductionOpInfo, UnaryUfuncInfo
from torch.utils._pytree import tree_flatten, tree_map

from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS
from tests import opinfo_samples as db
from tests import torch_bugs
from tests.test_compile_parts import compile_path_installed  # noqa: F401 - the module fixture
from tests.test_opinfo_coverage import assert_matches

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

MATMUL_FAMILY = {
    "addmm", "addmm.decomposed", "addmv", "addbmm", "baddbmm", "dot", "vdot", "bmm", "mv", "addr", "matmul", "mm",
    "einsum", "outer", "inner", "tensordot", "kron", "linalg.vecdot", "linalg.multi_dot", "nn.functional.linear",
    "__rmatmul__",
}
OTHER_ELEMENTWISE_AND_REDUCTIONS = {
    "addcmul", "addcdiv", "lerp", "where", "masked_fill", "cumsum", "var_mean", "std_mean", "var_mean.unbiased",
    "std_mean.unbiased",
}
COMPILED_OPS = [
    op for op in db.ops_supporting(torch.complex64)
    if isinstance(op, (UnaryUfuncInfo, BinaryUfuncInfo, ReductionOpInfo))
    or db.op_id(op) in MATMUL_FAMILY | OTHER_ELEMENTWISE_AND_REDUCTIONS
]
# Ops the planar table covers end to end: their graphs must hold no ATen op that computes on 16-bit complex.
PLANAR = {
    "add", "sub", "mul", "div.no_rounding_mode", "true_divide", "__radd__", "__rmul__", "__rsub__", "rsub", "__rdiv__",
    "neg", "conj_physical", "reciprocal", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "sigmoid", "sgn",
    "abs", "angle", "square", "pow", "__rpow__",
    "isnan", "isinf", "isfinite", "eq", "ne", "addcmul", "addcdiv", "lerp", "where", "masked_fill", "sum", "mean",
    "var", "var.unbiased", "std", "std.unbiased", "var_mean", "std_mean", "cumsum", "linalg.vector_norm",
    "dot", "vdot", "mv", "addmv", "addr", "outer", "inner", "einsum", "mm", "bmm", "addmm", "baddbmm", "matmul",
}
# Nodes that may still see 16-bit complex values in a planar graph: packing/unpacking views and custom ops.
_BOUNDARY = {"aten.view.dtype", "aten.view_as_real.default", "aten.alias.default"}


def _sixteen_bit_complex_nodes(gm) -> set[str]:
    found = set()
    for node in gm.graph.nodes:
        if node.op != "call_function" or str(node.target).startswith("jitdtypes.") or str(node.target) in _BOUNDARY:
            continue
        values = [a.meta.get("val") for a in node.all_input_nodes] + [node.meta.get("val")]
        if any(isinstance(v, torch.Tensor) and v.dtype in TARGETS for v in tree_flatten(values)[0]):
            found.add(str(node.target))
    return found


def _recording_backend(seen: set):
    """Inductor's decompositions and partitioner, graphs run eagerly (aot_eager_decomp_partition), recording
    ops that still compute on 16-bit complex values."""
    from torch._inductor.decomposition import select_decomp_table

    def record(gm, example_inputs):
        seen.update(_sixteen_bit_complex_nodes(gm))
        return gm

    return aot_autograd(fw_compiler=record, bw_compiler=record, decompositions=select_decomp_table,
                        partition_fn=min_cut_rematerialization_partition)


def _compile_and_compare(op, target, backend, limit):
    checked = 0
    for index, sample in enumerate(db.samples(op, torch.complex64, limit=limit)):
        low = db.convert(sample, torch.complex64, target)
        try:
            expected = db.call(op, low)
        except Exception:  # the sample is invalid in eager too
            continue
        torch._dynamo.reset()
        compiled = torch.compile(lambda *a, **k: op(*a, **k), backend=backend, fullgraph=True)
        actual = compiled(low.input, *low.args, **low.kwargs)
        where = f"{db.op_id(op)} sample {index} in {dtypes.NAMES[target]}"
        declared = [t.dtype for t in db.flat_tensors(expected)]
        assert [t.dtype for t in db.flat_tensors(actual)] == declared, where
        assert_matches(actual, expected, target, where, declared or None)
        checked += 1
    return checked


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("op", COMPILED_OPS, ids=db.op_id)
def test_compiled_sample_matches_eager(op, target):
    if db.op_id(op) == "logaddexp" and not torch_bugs.fx_writes_nonfinite_complex_constants():
        pytest.skip("this torch's FX cannot run a graph holding complex(nan, nan), which PyTorch's complex "
                    "logaddexp puts there, complex64 too (tests/torch_bugs.py)")
    seen: set = set()
    if _compile_and_compare(op, target, _recording_backend(seen), limit=2) == 0:
        pytest.skip("no sample runs in eager")
    if db.op_id(op) in PLANAR:
        assert not seen, f"16-bit complex left in the graph: {sorted(seen)}"


# Inductor's C++ compile takes seconds per graph: each op runs once, in one of the dtypes.
INDUCTOR_SUBSET = {"mul": 0, "exp": 0, "sum": 0, "addmm": 0, "cumsum": 0, "div.no_rounding_mode": 1, "abs": 1,
                   "var": 1, "einsum": 1, "where": 1}
INDUCTOR_CASES = [(op, TARGETS[INDUCTOR_SUBSET[db.op_id(op)] % len(TARGETS)])
                  for op in COMPILED_OPS if db.op_id(op) in INDUCTOR_SUBSET]


@pytest.mark.parametrize("op, target", INDUCTOR_CASES, ids=[f"{db.op_id(o)}-{dtypes.NAMES[t]}" for o, t in INDUCTOR_CASES])
def test_inductor_sample_matches_eager(op, target):
    assert _compile_and_compare(op, target, "inductor", limit=1) == 1


# -- fake tensors -----------------------------------------------------------------------------------------------


def _metadata(value):
    return [(t.dtype, tuple(t.shape)) for t in db.flat_tensors(value)]


def _fake_metadata(function, args, kwargs):
    mode = FakeTensorMode()
    fake_args, fake_kwargs = tree_map(lambda v: mode.from_tensor(v) if isinstance(v, torch.Tensor) else v,
                                      (args, kwargs))
    with mode:
        return _metadata(function(*fake_args, **fake_kwargs))


def _fails_in_complex64_too(op, sample) -> bool:
    """Data-dependent ops (item, nonzero, masked_select ...) cannot run on fake tensors of any dtype."""
    try:
        _fake_metadata(op, (sample.input, *sample.args), sample.kwargs)
    except Exception:
        return True
    return False


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_fake_tensors_give_eager_dtypes_and_shapes(target):
    mismatches = []
    for op in db.ops_supporting(torch.complex64):
        samples = db.samples(op, torch.complex64, limit=1)
        if not samples or _fails_in_complex64_too(op, samples[0]):
            continue
        low = db.convert(samples[0], torch.complex64, target)
        try:
            eager = _metadata(db.call(op, low))
        except Exception:
            continue
        try:
            fake = _fake_metadata(op, (low.input, *low.args), low.kwargs)
        except Exception as exc:
            mismatches.append(f"{db.op_id(op)}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        if fake != eager:
            mismatches.append(f"{db.op_id(op)}: fake {fake} eager {eager}")
    assert not mismatches, "\n".join(mismatches)


REAL_INPUT_FFTS = {
    "rfft": lambda x: torch.fft.rfft(x, n=30), "rfft2": torch.fft.rfft2, "rfftn": torch.fft.rfftn,
    "ihfft": torch.fft.ihfft, "ihfft2": torch.fft.ihfft2, "fft": torch.fft.fft, "fft2": torch.fft.fft2,
    "hfft_of_rfft": lambda x: torch.fft.hfft(torch.fft.rfft(x)), "irfft_of_rfft2": lambda x: torch.fft.irfft2(torch.fft.rfft2(x)),
    "stft": lambda x: torch.stft(x.flatten(), 8, window=torch.ones(8, dtype=x.dtype), return_complex=True),
}


REAL_WITH_COMPLEX = [d for d in dtypes.REAL_TARGETS if d in dtypes.COMPLEX_OF]  # bfloat16 needs torch.bcomplex32


@pytest.mark.parametrize("real", REAL_WITH_COMPLEX, ids=[dtypes.NAMES[d] for d in REAL_WITH_COMPLEX])
@pytest.mark.parametrize("name", REAL_INPUT_FFTS)
def test_fake_tensors_follow_real_16_bit_ffts_with_autograd(name, real):
    x = torch.randn(4, 6, 16).to(real).requires_grad_()
    eager = REAL_INPUT_FFTS[name](x)
    mode = FakeTensorMode()
    fake_x = mode.from_tensor(x.detach()).requires_grad_()
    with mode:
        fake = REAL_INPUT_FFTS[name](fake_x)
        (fake.abs() if fake.is_complex() else fake).float().sum().backward()
        assert fake_x.grad.dtype == real
    assert (fake.dtype, fake.shape) == (eager.dtype, eager.shape)
