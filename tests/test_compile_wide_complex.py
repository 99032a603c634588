"""torch.compile of complex64 and complex128 code, opted in (jitdtypes.set_compile_complex): graphs computed on
real parts, as complex32's are, give eager's values forward and backward; off, nothing changes.

The OpInfo sweep runs a representative part here (one sample of each elementwise, reduction and matmul-family op,
graphs run eagerly through Inductor's decompositions); `JITDTYPES_FULL_SWEEP=1` runs every sample the OpInfo
database gives (docs/COMPILE.md has its counts).
"""

import os
import subprocess
import sys

import pytest
import torch
import torch._dynamo.testing
import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded
from torch.utils._pytree import tree_flatten

import jitdtypes
from jitdtypes.compile_path import opt_in
from tests import opinfo_samples as db
from tests import programs
from tests.test_compile_opinfo import COMPILED_OPS, MATMUL_FAMILY, PLANAR

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")

WIDE = [torch.complex64, torch.complex128]
WIDE_IDS = ["complex64", "complex128"]
FULL_SWEEP = os.environ.get("JITDTYPES_FULL_SWEEP") == "1"


def _complex_nodes(gm, dtype) -> set[str]:
    """Graph nodes that compute on `dtype` values: views (of inputs, kept as ATen views; the words a kernel
    reads) are not computing."""
    found = set()
    for node in gm.graph.nodes:
        if node.op != "call_function" or getattr(node.target, "is_view", False):
            continue
        values = [a.meta.get("val") for a in node.all_input_nodes] + [node.meta.get("val")]
        if any(isinstance(v, torch.Tensor) and v.dtype == dtype for v in tree_flatten(values)[0]):
            found.add(str(node.target))
    return found


def _graphs(function, *args):
    """The forward and backward graphs AOTAutograd hands Inductor for function(*args), and its result."""
    graphs = []
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm

    backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, decompositions=select_decomp_table,
                           partition_fn=min_cut_rematerialization_partition)
    torch._dynamo.reset()
    return torch.compile(function, backend=backend, fullgraph=True)(*args), graphs


def chain(x, y):
    z = x * y.conj()
    z = torch.sigmoid(z) * torch.exp(-z.abs())
    return torch.tanh(z / (y + 2))


# -- the switch ---------------------------------------------------------------------------------------------------


def test_off_by_default_complex64_graphs_are_traced_as_without_jitdtypes():
    assert opt_in.chosen() == frozenset()
    x, y = torch.randn(8, 16, dtype=torch.complex64), torch.randn(8, 16, dtype=torch.complex64)
    _, graphs = _graphs(chain, x, y)
    assert "aten.sigmoid.default" in _complex_nodes(graphs[0], torch.complex64)
    with jitdtypes.disabled():
        _, plain = _graphs(chain, x, y)
    assert graphs[0].code == plain[0].code


@pytest.mark.parametrize("opted_in", WIDE, ids=WIDE_IDS, indirect=True)
def test_opted_in_graphs_compute_on_parts(opted_in):
    x, y = torch.randn(8, 16, dtype=opted_in), torch.randn(8, 16, dtype=opted_in)
    _, graphs = _graphs(chain, x, y)
    assert not _complex_nodes(graphs[0], opted_in)
    parts = {node.meta["val"].dtype for node in graphs[0].graph.nodes
             if node.op == "call_function" and isinstance(node.meta.get("val"), torch.Tensor)}
    assert {torch.complex64: torch.float32, torch.complex128: torch.float64}[opted_in] in parts


def test_the_switch_takes_names_or_dtypes_turns_off_and_names_a_wrong_value():
    try:
        jitdtypes.set_compile_complex("complex64", torch.complex128)
        assert opt_in.chosen() == {torch.complex64, torch.complex128}
        assert torch.compiler.config.cache_key_tag.endswith("-complex64-complex128")
        with pytest.raises(ValueError, match="complex32 is not a dtype to opt in"):
            jitdtypes.set_compile_complex("complex32")
        with pytest.raises(ValueError, match="torch.float32 is not a dtype to opt in"):
            jitdtypes.set_compile_complex(torch.float32)
        assert opt_in.chosen() == {torch.complex64, torch.complex128}  # a refused call changes nothing
    finally:
        jitdtypes.set_compile_complex()
    assert opt_in.chosen() == frozenset()
    assert "complex64" not in torch.compiler.config.cache_key_tag


def test_disable_removes_the_opt_in_and_enable_restores_it():
    jitdtypes.set_compile_complex(torch.complex64)
    try:
        with jitdtypes.disabled():
            assert opt_in.chosen() == frozenset()
            assert "jitdtypes" not in (torch.compiler.config.cache_key_tag or "")
        assert opt_in.chosen() == {torch.complex64}
    finally:
        jitdtypes.set_compile_complex()


def test_a_change_of_the_switch_applies_to_what_compiles_after_it():
    x, y = torch.randn(8, 16, dtype=torch.complex64), torch.randn(8, 16, dtype=torch.complex64)
    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return gm

    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor.decomposition import select_decomp_table

    backend = aot_autograd(fw_compiler=keep, decompositions=select_decomp_table)
    torch._dynamo.reset()
    before = torch.compile(chain, backend=backend)
    before(x, y)
    jitdtypes.set_compile_complex(torch.complex64)
    try:
        before(x, y)  # compiled before the change: kept, as Inductor's settings are
        assert len(graphs) == 1 and _complex_nodes(graphs[0], torch.complex64)
        torch._dynamo.reset()
        before(x, y)
        assert len(graphs) == 2 and not _complex_nodes(graphs[1], torch.complex64)
    finally:
        jitdtypes.set_compile_complex()


@pytest.mark.parametrize("text, expected", [("complex64", {torch.complex64}), (" complex128 , torch.complex64", WIDE),
                                            ("none", set()), ("", set())])
def test_the_environment_variable_is_parsed(text, expected):
    assert opt_in.parse(text) == set(expected)


def test_a_wrong_environment_variable_fails_the_import_naming_it():
    env = {**os.environ, "JITDTYPES_COMPILE_COMPLEX": "complex64,complex256"}
    run = subprocess.run([sys.executable, "-c", "import jitdtypes"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode != 0
    assert "JITDTYPES_COMPILE_COMPLEX='complex64,complex256': complex256 is not a dtype to opt in" in run.stderr


# -- values, forward and backward ------------------------------------------------------------------------------------

TOLERANCE = {torch.complex64: dict(rtol=2e-5, atol=2e-5), torch.complex128: dict(rtol=1e-12, atol=1e-12)}


def _inputs(dtype, *shapes, grad=False):
    torch.manual_seed(0)
    return [torch.randn(*shape, dtype=dtype, requires_grad=grad) for shape in shapes]


def _grads(function, inputs):
    function(*inputs).backward()
    grads = [t.grad for t in inputs]
    for t in inputs:
        t.grad = None
    return grads


def _relative_error(actual, expected) -> float:
    return ((actual - expected).abs().max() / expected.abs().max().clamp_min(1e-30)).item()


def rotary(x, freqs):
    """LLaMA's reference rotary embedding: pairs as complex numbers times unit phasors."""
    pairs = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    return torch.view_as_real(pairs * freqs).flatten(-2)


def complex_mlp(x, w1, w2):
    hidden = x @ w1
    gate = torch.sigmoid(hidden.abs()) * hidden
    return gate @ w2


def beamformer(signals, steering):
    """Delay-and-sum: weight each sensor's spectrum by a conjugate steering vector, sum, power."""
    spectrum = torch.fft.fft(signals, dim=-1)
    beam = (spectrum * steering.conj().unsqueeze(-1)).sum(-2)
    return beam.abs().pow(2)


def _program_cases(dtype):
    real = {torch.complex64: torch.float32, torch.complex128: torch.float64}[dtype]
    torch.manual_seed(0)
    angles = torch.outer(torch.arange(16, dtype=real), torch.rand(8, dtype=real))
    return {
        "rotary": (lambda x, f: rotary(x, f).pow(2).sum(),
                   [torch.randn(2, 16, 16, dtype=real, requires_grad=True), torch.polar(torch.ones_like(angles), angles)]),
        "spectral conv": (lambda x, w: programs.spectral_conv_1d(x, w).pow(2).sum(),
                          [torch.randn(2, 4, 32, dtype=real, requires_grad=True),
                           torch.randn(4, 3, 8, dtype=dtype, requires_grad=True)]),
        "complex mlp": (lambda x, w1, w2: complex_mlp(x, w1, w2).abs().sum(),
                        [torch.randn(8, 16, dtype=dtype, requires_grad=True), torch.randn(16, 32, dtype=dtype) / 4,
                         torch.randn(32, 4, dtype=dtype, requires_grad=True)]),
        "beamformer": (lambda s, a: beamformer(s, a).sum(),
                       [torch.randn(3, 6, 32, dtype=dtype, requires_grad=True), torch.randn(6, dtype=dtype)]),
        "chain": (lambda x, y: chain(x, y).abs().sum(),
                  [torch.randn(8, 16, dtype=dtype, requires_grad=True), torch.randn(8, 16, dtype=dtype)]),
    }


@pytest.mark.parametrize("program", ["rotary", "spectral conv", "complex mlp", "beamformer", "chain"])
@pytest.mark.parametrize("opted_in", WIDE, ids=WIDE_IDS, indirect=True)
def test_real_programs_compile_whole_and_match_eager_forward_and_backward(opted_in, program):
    function, inputs = _program_cases(opted_in)[program]
    leaves = [t for t in inputs if t.requires_grad]
    expected = function(*inputs)
    expected_grads = _grads(lambda *_: function(*inputs), leaves)
    counter = torch._dynamo.testing.CompileCounterWithBackend("inductor")
    torch._dynamo.reset()
    compiled = torch.compile(function, backend=counter, fullgraph=True)
    actual = compiled(*inputs)
    grads = _grads(lambda *_: compiled(*inputs), leaves)
    assert counter.frame_count == 1  # one graph: no break
    bound = {torch.complex64: 1e-5, torch.complex128: 1e-12}[opted_in]
    assert _relative_error(actual, expected) < bound, program
    for grad, expected_grad in zip(grads, expected_grads):
        assert grad.dtype == expected_grad.dtype
        assert _relative_error(grad, expected_grad) < 20 * bound, program


# -- the OpInfo sweep --------------------------------------------------------------------------------------------

SWEPT = COMPILED_OPS if FULL_SWEEP else [op for op in COMPILED_OPS if db.op_id(op) in PLANAR]


def _recording(seen: set, dtype):
    """Inductor's decompositions and partitioner, graphs run eagerly, recording nodes that still compute on
    `dtype` values."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition
    from torch._inductor.decomposition import select_decomp_table

    def record(gm, example_inputs):
        seen.update(_complex_nodes(gm, dtype))
        return gm

    return aot_autograd(fw_compiler=record, bw_compiler=record, decompositions=select_decomp_table,
                        partition_fn=min_cut_rematerialization_partition)


def _with_leaves(sample, dtype):
    leaves = []

    def one(value):
        if isinstance(value, torch.Tensor) and value.dtype == dtype:
            value = value.detach().requires_grad_()
            leaves.append(value)
        return value

    return sample.transform(one), leaves


def _loss(result):
    """sum(real(w * out)) over the differentiable outputs, fixed weights w; None when there are none."""
    outputs = [t for t in db.flat_tensors(result) if t.requires_grad and (t.is_complex() or t.is_floating_point())]
    generator = torch.Generator().manual_seed(0)
    terms = [(out * torch.randn(out.shape, dtype=out.dtype, generator=generator)).real.sum() for out in outputs]
    return torch.stack(terms).sum() if terms else None


def _run(function, op, sample, dtype, backward):
    with_leaves, leaves = _with_leaves(sample, dtype) if backward else (sample, [])
    result = function(with_leaves.input, *with_leaves.args, **with_leaves.kwargs)
    loss = _loss(result) if leaves else None
    if loss is None or not loss.requires_grad:
        return result, None
    return result, torch.autograd.grad(loss, leaves, allow_unused=True)


@pytest.mark.parametrize("opted_in", WIDE, ids=WIDE_IDS, indirect=True)
@pytest.mark.parametrize("op", SWEPT, ids=db.op_id)
def test_compiled_opinfo_samples_match_eager_forward_and_backward(op, opted_in):
    dtype, seen, checked = opted_in, set(), 0
    backward = op.supports_autograd and dtype in op.supported_backward_dtypes("cpu")
    for index, sample in enumerate(db.samples(op, dtype, limit=None if FULL_SWEEP else 1)):
        try:
            expected, expected_grads = _run(lambda *a, **k: op(*a, **k), op, sample, dtype, backward)
        except Exception:  # the sample is invalid in eager too
            continue
        torch._dynamo.reset()
        compiled = torch.compile(lambda *a, **k: op(*a, **k), backend=_recording(seen, dtype), fullgraph=True)
        actual, grads = _run(compiled, op, sample, dtype, backward)
        where = f"{db.op_id(op)} sample {index} in {dtype}"
        flat_actual, flat_expected = db.flat_tensors(actual), db.flat_tensors(expected)
        assert [t.dtype for t in flat_actual] == [t.dtype for t in flat_expected], where
        for a, e in zip(flat_actual, flat_expected):
            torch.testing.assert_close(a.detach(), e.detach(), equal_nan=True, msg=lambda m: f"{where}: {m}",
                                       **TOLERANCE[dtype])
        assert (grads is None) == (expected_grads is None), where
        for a, e in zip(grads or (), expected_grads or ()):
            assert (a is None) == (e is None), where
            if e is not None:
                torch.testing.assert_close(a, e, equal_nan=True, msg=lambda m: f"{where}, gradient: {m}",
                                           **TOLERANCE[dtype])
        checked += 1
    if checked == 0:
        pytest.skip("no sample runs in eager")
    if db.op_id(op) in PLANAR - MATMUL_FAMILY:
        assert not seen, f"{dtype} arithmetic left in the graph: {sorted(seen)}"
