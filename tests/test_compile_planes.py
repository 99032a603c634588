"""Planar storage in compiled CPU graphs (jitdtypes/compile_path/layout_ops.py): the split and merge ops move
every bit pattern exactly, natively and through ATen, for any layout; graphs traced with planes compute what
graphs reading words compute, bit for bit, forward and backward; and their kernels load 16-bit parts."""

from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

import jitdtypes
from jitdtypes import dtypes
from jitdtypes.compile_path import layout_ops

pytestmark = pytest.mark.skipif(not jitdtypes.is_enabled(), reason="jitdtypes disabled")

COMPLEX = [pytest.param(d, id=dtypes.NAMES[d]) for d in dtypes.COMPLEX_TARGETS]


def _every_pattern(dtype):
    """65536 elements: every 16-bit pattern as a real part, the same patterns reversed as imaginary parts."""
    re = torch.arange(65536, dtype=torch.int32)
    im = re.flip(0)
    return (re | (im << 16)).view(dtype), re, im


@pytest.fixture(params=["native", "aten"])
def move(request, monkeypatch):
    if request.param == "aten":
        monkeypatch.setattr(layout_ops, "_native_move", lambda *args, **kwargs: False)
    return request.param


@pytest.mark.parametrize("dtype", COMPLEX)
def test_split_and_merge_move_every_bit_pattern(dtype, move):
    x, re, im = _every_pattern(dtype)
    planes = torch.ops.jitdtypes.to_planes(x)
    assert planes.dtype == dtypes.part_dtype(dtype) and planes.shape == (2, 65536) and planes.is_contiguous()
    bits = planes.view(torch.int16).to(torch.int32) & 0xFFFF
    assert torch.equal(bits[0], re) and torch.equal(bits[1], im)
    back = torch.ops.jitdtypes.from_planes(planes)
    assert back.dtype == dtype and torch.equal(back.view(torch.int32), x.view(torch.int32))


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("layout", ["transposed", "sliced", "conj", "neg", "odd length"])
def test_unpack_reads_any_layout(dtype, layout, move):
    torch.manual_seed(0)
    wide = torch.randn(37, 41, dtype=torch.complex64)
    x = wide.to(dtype)
    x = {"transposed": x.T, "sliced": x[1::3, ::2], "conj": x.conj(), "neg": torch._neg_view(x),
         "odd length": x.flatten()[:1517]}[layout]
    re, im = layout_ops.unpack(x)
    expected = x.to(torch.complex64).resolve_conj().resolve_neg()
    assert re.dtype == dtypes.part_dtype(dtype) and re.shape == x.shape
    assert torch.equal(re.float(), expected.real) and torch.equal(im.float(), expected.imag)


def _programs():
    def chain(a, b):
        return (a * b + a).exp() / (b + 2)

    def reduction(a, b):
        return ((a * b + a).exp() / (b + 2)).sum(-1).mean()

    def transposed(a, b):
        return a.T * b.T.conj() + 1j

    def mixed(a, b):
        return (a * b.to(torch.complex64)).abs() + a.sum(0, keepdim=True).angle()

    def in_place(a, b):
        a = a.clone()
        a.mul_(b).add_(2)
        return a, a.real

    return {"chain": chain, "reduction": reduction, "transposed": transposed, "mixed": mixed, "in place": in_place}


def _compiled(program, held, *args):
    torch._dynamo.reset()
    with layout_ops.planar_storage(held):
        return torch.compile(program, fullgraph=True)(*args)


def _bits(value):
    if isinstance(value, tuple):
        return [_bits(v) for v in value]
    return value.view(torch.int32) if value.dtype.itemsize == 4 else value.view(torch.int16)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("name", list(_programs()))
def test_planes_compute_what_words_compute(dtype, name):
    torch.manual_seed(1)
    a, b = (torch.randn(48, 64, dtype=torch.complex64).to(dtype) for _ in range(2))
    program = _programs()[name]
    with_words = _compiled(program, (), a, b)
    with_planes = _compiled(program, (dtype,), a, b)
    eager = program(a, b)
    for w, p, e in zip(*(v if isinstance(v, tuple) else (v,) for v in (with_words, with_planes, eager))):
        assert p.dtype == w.dtype == e.dtype and p.shape == w.shape
        assert _bits(p).equal(_bits(w)), name
        torch.testing.assert_close(p.to(torch.complex64), e.to(torch.complex64), atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("dtype", COMPLEX)
def test_planes_gradients_are_those_of_words(dtype):
    torch.manual_seed(2)
    base = [torch.randn(32, 40, dtype=torch.complex64).to(dtype) for _ in range(2)]

    def loss(a, b):
        return ((a * b).exp() + a.conj()).abs().sum()

    grads = {}
    for held in ((), (dtype,)):
        a, b = (t.clone().requires_grad_() for t in base)
        _compiled(loss, held, a, b).backward()
        grads[held] = (a.grad, b.grad)
    for words, planes in zip(grads[()], grads[(dtype,)]):
        assert planes.dtype == dtype and _bits(planes).equal(_bits(words))


@pytest.mark.parametrize("dtype", COMPLEX)
def test_planar_graph_splits_once_and_loads_parts(dtype):
    a, b = (torch.randn(64, 128, dtype=torch.complex64).to(dtype) for _ in range(2))
    torch._dynamo.reset()
    with layout_ops.planar_storage((dtype,)):
        _, (code,) = run_and_get_code(torch.compile(lambda a, b: (a * b + a).exp() * b), a, b)
    part = "at::Half" if dtype == torch.complex32 else "at::BFloat16"
    assert code.count("= torch.ops.jitdtypes.to_planes.default(") == 2  # each input split once
    assert code.count("= torch.ops.jitdtypes.from_planes.default(") == 1
    assert f"at::vec::Vectorized<{part}>::loadu" in code  # the fused kernel reads planes, vectorized
    assert "const int32_t*" not in code  # and takes no words


def test_storage_choice_from_the_environment(monkeypatch):
    monkeypatch.setenv(layout_ops.ENV_VAR, " , ".join(dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS))
    assert layout_ops._requested() == frozenset(dtypes.COMPLEX_TARGETS)
    monkeypatch.setenv(layout_ops.ENV_VAR, "")
    assert layout_ops._requested() == frozenset()
    monkeypatch.setenv(layout_ops.ENV_VAR, "complex64")
    with pytest.raises(ValueError, match="complex64 not among"):
        layout_ops._requested()


def test_storage_choice_keys_inductor_caches():
    config = torch.compiler.config
    before = config.cache_key_tag
    with layout_ops.planar_storage((torch.complex32,)):
        assert config.cache_key_tag.endswith("planes-complex32") and config.cache_key_tag != before
    assert config.cache_key_tag == before
