"""The compile path's pieces: exact 16-bit <-> float32 word conversions, the planar complex formulas, the
custom ops (eager, forward and backward), and installation: removing it restores PyTorch exactly, and
compiled float32/complex64 programs are traced to the same graphs and give the same bits with it."""

import math
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from torch._dynamo.backends.common import aot_autograd

import jitdtypes
from jitdtypes import compile_path, dtypes
from tests.conftest import IDS, TARGETS, TOLERANCE
from jitdtypes.compile_path import bits, custom_ops, decompositions
from jitdtypes import complex_math

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _findings():
    return {device: found.findings for device, found in jitdtypes.installer.discoveries.items()}


@pytest.fixture(scope="module", autouse=True)
def compile_path_installed():
    """jitdtypes.enable() installs the compile path with the overrides."""
    assert jitdtypes.installer.compile_installation() is not None
    yield


# -- words <-> float32 ------------------------------------------------------------------------------------------


def _every_16_bit_pattern(dtype) -> torch.Tensor:
    """65536 complex values: every 16-bit pattern as the real part, the same reversed as the imaginary part."""
    low = torch.arange(0, 1 << 16, dtype=torch.int32)
    return (low | (low.flip(0) << 16)).view(dtype)


def _float_patterns() -> torch.Tensor:
    """Every 3856th float32 bit pattern (either sign), plus the rounding boundaries of both 16-bit formats."""
    spread = torch.arange(-(2**31), 2**31 - 1, 241 * 16, dtype=torch.int64).to(torch.int32)
    h = torch.arange(0, 1 << 16, dtype=torch.int32)
    edges = [h << 13, (h << 13) + 0xFFF, (h << 13) + 0x1000, (h << 13) + 0x1001, (h << 16) + 0x7FFF,
             (h << 16) + 0x8000, (h << 16) + 0x8001]
    return torch.cat([spread, *edges, *(e | -(2**31) for e in edges)]).view(torch.float32)


def _assert_same_bits(got: torch.Tensor, want: torch.Tensor) -> None:
    """Equal bit patterns, except that any NaN matches any NaN."""
    nan = want.isnan()
    assert torch.equal(got.isnan(), nan)
    width = torch.int32 if want.dtype == torch.float32 else torch.int16
    assert torch.equal(got[~nan].view(width), want[~nan].view(width))


FORMS = [(dtype, arithmetic) for dtype in TARGETS for arithmetic in (True, False)
         if arithmetic or dtype == torch.complex32]  # bfloat16 has one form: shifts


@pytest.mark.parametrize("dtype, arithmetic", FORMS, ids=[f"{dtypes.NAMES[d]}-{'arithmetic' if a else 'bitcast'}"
                                                          for d, a in FORMS])
def test_words_convert_exactly(dtype, arithmetic):
    z = _every_16_bit_pattern(dtype)
    re, im = bits.unpack(z, arithmetic=arithmetic)
    expected = torch.view_as_real(z).float()  # PyTorch's own 16-bit -> float32 conversion
    _assert_same_bits(re, expected[:, 0])
    _assert_same_bits(im, expected[:, 1])
    floats = _float_patterns()
    floats = floats[: floats.numel() // 2 * 2]
    packed = bits.pack(floats[0::2].contiguous(), floats[1::2].contiguous(), dtype, arithmetic=arithmetic)
    rounded = torch.complex(floats[0::2], floats[1::2]).to(dtype)  # PyTorch's rounding
    _assert_same_bits(torch.view_as_real(packed), torch.view_as_real(rounded))


def test_complex64_words_round_trip_bit_for_bit():
    torch.manual_seed(0)
    words = torch.randint(-(2**62), 2**62, (4096,), dtype=torch.int64)
    z = words.view(torch.complex64)
    re, im = bits.unpack(z)
    _assert_same_bits(re, torch.view_as_real(z)[:, 0])
    _assert_same_bits(im, torch.view_as_real(z)[:, 1])
    assert torch.equal(bits.pack(re, im, torch.complex64).view(torch.int64), words)


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_words_convert_exactly_in_inductor_code(dtype):
    """The same through Inductor's C++ kernels: z * 1 reads and writes every pattern, f.to(dtype) rounds."""
    import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded

    z, floats = _every_16_bit_pattern(dtype), _float_patterns()
    torch._dynamo.reset()
    same, rounded = torch.compile(lambda z, f: (z * 1, f.to(dtype)), fullgraph=True)(z, floats)
    _assert_same_bits(torch.view_as_real(same), torch.view_as_real(z))
    _assert_same_bits(torch.view_as_real(rounded), torch.view_as_real(floats.to(dtype)))


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_unpack_pack_round_trips_views_and_conjugates(dtype):
    z = torch.randn(6, 8, dtype=torch.complex64).to(dtype)
    view = z[::2, 1:].t()
    re, im = bits.unpack(view)
    assert torch.equal(re, view.to(torch.complex64).real) and torch.equal(im, view.to(torch.complex64).imag)
    re, im = bits.unpack(view.conj())
    assert torch.equal(im, -view.to(torch.complex64).imag)
    packed = bits.pack(re, im, dtype)
    assert packed.dtype == dtype and torch.equal(packed.view(torch.int32), view.conj().resolve_conj().contiguous().view(torch.int32))


def test_halves_read_converts_exactly_in_inductor_code():
    """bits.read_as_halves: compiled complex32 code that reads float16 halves (a scalar loop) sees every pattern
    as PyTorch does: z * 1 gives z's bits back, abs the formula's value on PyTorch's conversion."""
    import torch._inductor.lowering  # noqa: F401 - the compile path joins Inductor's table once this is loaded

    z = _every_16_bit_pattern(torch.complex32)
    torch._dynamo.reset()
    no_caches = torch._inductor.config.patch(force_disable_caches=True)  # the Dynamo graph is the words one's
    with bits.read_as_halves(), no_caches:
        same, size = torch.compile(lambda z: (z * 1, z.abs()), fullgraph=True)(z)
    torch._dynamo.reset()
    _assert_same_bits(torch.view_as_real(same), torch.view_as_real(z))
    parts = torch.view_as_real(z).float()
    _assert_same_bits(size, complex_math.magnitude_of_half_parts((parts[:, 0], parts[:, 1])).half())


def test_magnitude_of_half_parts_is_hypot_rounded_to_float16():
    """Over every pair of special values and 1M random float16 pairs: non-finite results exactly hypot's
    (C99: an infinite part gives inf, NaN included), finite ones within one float16 rounding of it."""
    torch.manual_seed(0)
    values = torch.tensor([0.0, -0.0, 2.0**-24, 2.0**-14, 1.0, 65504.0, -65504.0, math.inf, -math.inf, math.nan])
    pairs = torch.cartesian_prod(values, values)
    a = torch.cat([pairs[:, 0], (torch.randn(1 << 20) * 2.0 ** torch.randint(-24, 16, (1 << 20,)))]).half()
    b = torch.cat([pairs[:, 1], (torch.randn(1 << 20) * 2.0 ** torch.randint(-24, 16, (1 << 20,)))]).half()
    got = complex_math.magnitude_of_half_parts((a.float(), b.float())).half()
    want = torch.hypot(a.double(), b.double()).half()
    finite = want.isfinite()
    assert torch.equal(got.isfinite(), finite) and torch.equal(got[~finite].isnan(), want[~finite].isnan())
    assert torch.equal(got[~finite & ~want.isnan()], want[~finite & ~want.isnan()])
    ulp = (want[finite].view(torch.int16).int() - got[finite].view(torch.int16).int()).abs()
    assert ulp.max().item() <= 1 and (ulp != 0).float().mean().item() < 1e-3


# -- planar formulas --------------------------------------------------------------------------------------------


def _complex_samples():
    torch.manual_seed(0)
    z = torch.randn(4000, dtype=torch.complex128) * 3
    z[:6] = torch.tensor([0j, 1 + 0j, -4 + 0j, -4 - 0j, 0.1j, 1e-4 + 1e-4j])
    return z


UNARY = ["exp", "expm1", "exp2", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin", "cos", "tan", "sinh",
         "cosh", "tanh", "sigmoid", "reciprocal", "sgn"]


@pytest.mark.parametrize("name", UNARY)
def test_formula_matches_complex128(name):
    z = _complex_samples()
    expected = getattr(torch, name)(z)
    re, im = getattr(complex_math, name)((z.real.float(), z.imag.float()))
    got = torch.complex(re.double(), im.double())
    finite = torch.isfinite(expected)
    assert torch.equal(torch.isfinite(got), finite)
    relative = (got - expected).abs()[finite] / expected.abs()[finite].clamp_min(1e-30)
    assert relative.max().item() < 1e-5  # float32 arithmetic, far below a 16-bit ulp (1e-3)


@pytest.mark.parametrize("name", ["mul", "div", "power"])
def test_binary_formula_matches_complex128(name):
    z, w = _complex_samples(), _complex_samples().flip(0) + 0.5j
    expected = {"mul": z * w, "div": z / w, "power": z**w}[name]
    re, im = getattr(complex_math, name)((z.real.float(), z.imag.float()), (w.real.float(), w.imag.float()))
    got = torch.complex(re.double(), im.double())
    finite = torch.isfinite(expected)
    assert ((got - expected).abs()[finite] / expected.abs()[finite].clamp_min(1e-30)).max().item() < 1e-5


def test_division_by_zero_gives_atens_inf_and_nan():
    z = torch.tensor([1 + 1j, 0j, 1 + 0j], dtype=torch.complex64)
    zero = torch.zeros(3)
    re, im = complex_math.div((z.real, z.imag), (zero, zero))
    assert torch.equal(torch.complex(re, im).isnan(), (z / torch.zeros(3, dtype=torch.complex64)).isnan())
    assert torch.equal(torch.complex(re, im).isinf(), (z / torch.zeros(3, dtype=torch.complex64)).isinf())


# -- custom ops, eager ------------------------------------------------------------------------------------------


def _relative_error(a, b) -> float:
    wide = torch.complex128 if b.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return ((a - b).abs().max() / b.abs().max().clamp_min(1e-12)).item()


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_complex_matmul_forward_and_backward_match_complex64(dtype):
    torch.manual_seed(0)
    a = torch.randn(3, 5, 6, dtype=torch.complex64).to(dtype).requires_grad_()
    b = torch.randn(3, 6, 4, dtype=torch.complex64).to(dtype).requires_grad_()
    out = torch.ops.jitdtypes.complex_matmul(a, b)
    out.abs().pow(2).sum().backward()
    a64, b64 = (t.detach().to(torch.complex64).requires_grad_() for t in (a, b))
    expected = a64 @ b64
    expected.abs().pow(2).sum().backward()
    assert out.dtype == dtype and out.is_contiguous() and a.grad.dtype == dtype
    assert _relative_error(out, expected) <= TOLERANCE[dtype]
    assert _relative_error(a.grad, a64.grad) <= TOLERANCE[dtype]
    assert _relative_error(b.grad, b64.grad) <= TOLERANCE[dtype]


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_fft_ops_forward_and_backward_match_complex64(dtype):
    real = dtypes.REAL_OF[dtype]
    torch.manual_seed(0)
    x = torch.randn(4, 30).to(real).requires_grad_()
    spectrum = custom_ops.fft_r2c(x, [1], 0, True)
    mixed = custom_ops.fft_c2c(spectrum, [1], 1, True)
    signal = custom_ops.fft_c2r(mixed, [1], 2, 30)
    signal.float().pow(2).sum().backward()
    x64 = x.detach().float().requires_grad_()
    aten = torch.ops.aten
    expected = aten._fft_c2r(aten._fft_c2c(aten._fft_r2c(x64, [1], 0, True), [1], 1, True), [1], 2, 30)
    expected.pow(2).sum().backward()
    assert (spectrum.dtype, mixed.dtype, signal.dtype, x.grad.dtype) == (dtype, dtype, real, real)
    assert _relative_error(signal, expected) <= TOLERANCE[dtype]
    assert _relative_error(x.grad, x64.grad) <= TOLERANCE[dtype]


# -- installation and do-no-harm ----------------------------------------------------------------------------------


def test_remove_restores_what_install_changed():
    from torch._inductor import decomposition as inductor
    from torch._inductor import lowering  # loaded: install() adds its entries right away

    before = dict(inductor.decompositions)
    complex_check = lowering.unsupported_input_tensor
    fft_meta = torch.ops.aten._fft_c2r.default.py_kernels.get(torch._C.DispatchKey.Meta)
    tag = torch.compiler.config.cache_key_tag
    installation = compile_path.install(_findings())  # a second one, on top of the session's
    try:
        assert {op for _, op, _ in installation.replaced} == set(decompositions.TABLE)
        assert inductor.decompositions[torch.ops.aten.exp.default] is not before[torch.ops.aten.exp.default]
        assert torch.ops.aten._fft_c2r.default.py_kernels[torch._C.DispatchKey.Meta] is not fft_meta
        assert lowering.unsupported_input_tensor is not complex_check
    finally:
        installation.remove()
    assert lowering.unsupported_input_tensor is complex_check
    assert inductor.decompositions.keys() == before.keys()
    assert all(inductor.decompositions[op] is entry for op, entry in before.items())
    assert torch.ops.aten._fft_c2r.default.py_kernels.get(torch._C.DispatchKey.Meta) is fft_meta
    assert torch.compiler.config.cache_key_tag == tag


# Float32 and complex64 programs, forward and backward, for the do-no-harm checks. They are run here and, for
# "without jitdtypes", in a child process started with JITDTYPES_DISABLE=1.
DO_NO_HARM_PROGRAMS = textwrap.dedent("""
    import torch

    def float_program(x, y):
        return (torch.sin(x) * y + x.abs().sqrt()).cumsum(0).sum(-1), (x @ y.T).exp()

    def complex64_program(z, w):
        spectrum = torch.fft.fft(z * w.conj())
        return (spectrum.exp() / (w + 2)).sum(0), torch.view_as_real(z * 1j).mean(), (z @ w.mT).abs()

    def mixed_program(x, y, z, w):
        return float_program(x, y) + complex64_program(z, w)

    def arguments():
        torch.manual_seed(0)
        return [torch.randn(8, 8), torch.randn(8, 8), torch.randn(8, 8, dtype=torch.complex64),
                torch.randn(8, 8, dtype=torch.complex64)]

    def traced_graphs():
        # the graphs AOTAutograd hands to Inductor, forward and backward, after Inductor's decompositions
        from torch._dynamo.backends.common import aot_autograd
        from torch._inductor.decomposition import select_decomp_table

        graphs = []

        def keep(gm, example_inputs):
            graphs.append(gm.code)
            return gm

        backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, decompositions=select_decomp_table)
        args = [a.requires_grad_() for a in arguments()]
        outputs = torch.compile(mixed_program, backend=backend, fullgraph=True)(*args)
        sum(o.abs().sum() for o in outputs).backward()
        return graphs

    def inductor_results():
        torch._dynamo.reset()
        return torch.compile(mixed_program, fullgraph=True)(*arguments())
""")
_programs = {}
exec(DO_NO_HARM_PROGRAMS, _programs)


def _without_jitdtypes(expression: str):
    """`expression` evaluated over DO_NO_HARM_PROGRAMS in a child process that imports no jitdtypes."""
    script = DO_NO_HARM_PROGRAMS + textwrap.dedent(f"""
        import pickle, sys
        sys.stdout.buffer.write(pickle.dumps({expression}))
    """)
    env = {**os.environ, "JITDTYPES_DISABLE": "1"}
    child = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True)
    import pickle

    return pickle.loads(child.stdout)


def test_float32_and_complex64_graphs_are_unchanged():
    torch._dynamo.reset()
    with_jitdtypes = _programs["traced_graphs"]()
    assert with_jitdtypes == _without_jitdtypes("traced_graphs()")
    assert len(with_jitdtypes) == 2  # forward and backward


def test_float32_and_complex64_inductor_results_are_bit_identical():
    with_jitdtypes = _programs["inductor_results"]()
    plain = _without_jitdtypes("[t.detach() for t in inductor_results()]")
    assert len(with_jitdtypes) == len(plain) == 5
    for a, b in zip(with_jitdtypes, plain):
        assert a.dtype == b.dtype and torch.equal(a, b)


def test_every_table_entry_reaches_inductors_table():
    from torch._inductor import lowering  # noqa: F401 - importing it installs the entries
    from torch._inductor.decomposition import select_decomp_table

    table = select_decomp_table()
    missing = [op for op in decompositions.TABLE if not table[op].__name__.startswith("jitdtypes_")]
    assert not missing
