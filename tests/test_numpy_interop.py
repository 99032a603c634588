"""numpy interop through ml_dtypes: Tensor.numpy (np.asarray, __array__), torch.from_numpy, torch.as_tensor and
torch.tensor on complex32/bcomplex32 give what they give for complex64 (shapes, strides, memory sharing,
errors), with the bits intact. Other dtypes see PyTorch's own functions: same results, same errors."""

import os
import subprocess
import sys
import types
import warnings
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import torch

import jitdtypes
from jitdtypes import dtypes
from tests.conftest import IDS, TARGETS

ML_DTYPE = {torch.complex32: np.dtype(ml_dtypes.complex32)}
# 16-bit halves: zeros of both signs, normal numbers, infinities, quiet and signalling NaNs with payloads and
# both signs, the smallest subnormal and the largest finite value
HALVES = {torch.complex32: [0x0000, 0x8000, 0x3C00, 0xC100, 0x7C00, 0xFC00, 0x7E00, 0x7E5A, 0xFD01, 0x7C01,
                            0x0001, 0x7BFF]}
if dtypes.BCOMPLEX32:
    ML_DTYPE[dtypes.BCOMPLEX32] = np.dtype(ml_dtypes.bcomplex32)
    HALVES[dtypes.BCOMPLEX32] = [0x0000, 0x8000, 0x3F80, 0xC020, 0x7F80, 0xFF80, 0x7FC0, 0x7FC5, 0xFF81, 0x7F81,
                                 0x0001, 0x7F7F]


def special_pairs(target) -> np.ndarray:
    """(real, imag) bit patterns, uint16, shape (n, 2): every special value next to every other."""
    halves = HALVES[target]
    return np.array([(re, im) for re in halves for im in halves], dtype=np.uint16)


def tensor_from_bits(pairs: np.ndarray, target) -> torch.Tensor:
    words = torch.from_numpy(pairs.view(np.int16).copy()).view(torch.int32).squeeze(-1)
    return words.view(target)


def bits(value) -> np.ndarray:
    """(real, imag) uint16 bit patterns of a 16-bit complex array or tensor, whatever its strides."""
    if isinstance(value, torch.Tensor):
        value = value.view(torch.int32).numpy()  # int32 arrays convert natively
    return np.ascontiguousarray(value).view(np.uint16).reshape(*value.shape, 2)


def data_pointer(value) -> int:
    return value.ctypes.data if isinstance(value, np.ndarray) else value.data_ptr()


def values(array: np.ndarray) -> np.ndarray:
    return array.astype(np.complex64)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_numpy_shares_memory_and_keeps_every_bit(target):
    pairs = special_pairs(target)
    z = tensor_from_bits(pairs, target)
    array = z.numpy()
    assert array.dtype == ML_DTYPE[target] and array.shape == z.shape
    assert np.array_equal(bits(array), pairs)
    assert data_pointer(array) == data_pointer(z)
    # ml_dtypes reads the same (real, imag) layout as PyTorch
    np.testing.assert_array_equal(values(array), z.to(torch.complex64).numpy())
    assert np.array_equal(np.signbit(values(array).imag), np.signbit(z.to(torch.complex64).numpy().imag))
    array[0] = array[5]  # writes go to the tensor
    assert np.array_equal(bits(z[0]), pairs[5])
    assert np.array_equal(bits(np.asarray(z)), bits(z))
    assert data_pointer(np.asarray(z)) == data_pointer(z)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_arrays_become_tensors_with_every_bit(target):
    pairs = special_pairs(target)
    array = tensor_from_bits(pairs, target).numpy().copy()
    shared = torch.from_numpy(array)
    assert shared.dtype == target and np.array_equal(bits(shared), pairs)
    assert data_pointer(shared) == data_pointer(array) and shared._base is None
    as_tensor = torch.as_tensor(array)
    assert as_tensor.dtype == target and data_pointer(as_tensor) == data_pointer(array)
    copied = torch.tensor(array)
    assert copied.dtype == target and np.array_equal(bits(copied), pairs)
    assert data_pointer(copied) != data_pointer(array) and copied._base is None
    array[0] = array[7]  # from_numpy shares, tensor copies
    assert np.array_equal(bits(shared[0]), pairs[7]) and np.array_equal(bits(copied[0]), pairs[0])


TENSOR_LAYOUTS = {
    "contiguous": lambda t: t,
    "transposed": lambda t: t.mT,
    "strided": lambda t: t[..., ::2, 1::3],
    "offset": lambda t: t[1:, 2:],
    "expanded": lambda t: t[:, :, :1].expand(-1, -1, 5),
    "permuted": lambda t: t.permute(2, 0, 1),
    "zero-dim": lambda t: t[1, 2, 3],
    "empty": lambda t: t[:, :0],
}


def layout_of(value):
    if isinstance(value, np.ndarray):
        return value.shape, tuple(s // value.itemsize for s in value.strides)
    return tuple(value.shape), value.stride()


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("layout", TENSOR_LAYOUTS)
def test_numpy_of_any_layout_matches_complex64(layout, target):
    wide = torch.randn(3, 4, 6, dtype=torch.complex64).to(target).to(torch.complex64)
    low = TENSOR_LAYOUTS[layout](wide.to(target))
    wide = TENSOR_LAYOUTS[layout](wide)
    array, reference = low.numpy(), wide.numpy()
    assert layout_of(array) == layout_of(reference)
    assert np.array_equal(bits(array), bits(low))
    np.testing.assert_array_equal(values(array), reference)


ARRAY_LAYOUTS = {
    "contiguous": lambda a: a,
    "transposed": lambda a: a.T,
    "strided": lambda a: a[::2, 1::3],
    "offset": lambda a: a[1:, 2:],
    "new axis": lambda a: a[:, None],
    "broadcast": lambda a: np.broadcast_to(a[:1], (3, 6)),
    "zero-dim": lambda a: a[1, 2, ...],
    "empty": lambda a: a[:0],
}
CONVERSIONS = {"from_numpy": torch.from_numpy, "as_tensor": torch.as_tensor, "tensor": torch.tensor}


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("conversion", CONVERSIONS)
@pytest.mark.parametrize("layout", ARRAY_LAYOUTS)
def test_arrays_of_any_layout_convert_like_complex64(layout, conversion, target):
    low_tensor = torch.randn(4, 6, dtype=torch.complex64).to(target)
    low_array = ARRAY_LAYOUTS[layout](low_tensor.numpy())
    wide_array = ARRAY_LAYOUTS[layout](low_tensor.to(torch.complex64).numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broadcast_to arrays are read-only: PyTorch warns once for both
        low, wide = CONVERSIONS[conversion](low_array), CONVERSIONS[conversion](wide_array)
    assert low.dtype == target
    assert layout_of(low) == layout_of(wide)
    assert (data_pointer(low) == data_pointer(low_array)) == (data_pointer(wide) == data_pointer(wide_array))
    assert np.array_equal(bits(low), bits(low_array))


def outcome(call, value):
    """What a call returns (kind, dtype, layout) or raises (type and message)."""
    try:
        result = call(value)
    except Exception as exc:  # noqa: BLE001 - the error is the outcome
        return type(exc), str(exc)
    return type(result), layout_of(result)


def sparse_numpy(t):
    return t.to_sparse().numpy()


TENSOR_MISUSES = {
    "requires grad": lambda t: t.clone().requires_grad_().numpy(),
    "conj bit": lambda t: t.conj().numpy(),
    "neg bit": lambda t: torch._neg_view(t).numpy(),
    "sparse": sparse_numpy,
    "meta": lambda t: t.to("meta").numpy(),
    "meta, forced": lambda t: t.to("meta").numpy(force=True),
    "positional force": lambda t: t.numpy(True),
    "force not a bool": lambda t: t.numpy(force=1),
    "unknown keyword": lambda t: t.numpy(copy=True),
}
ARRAY_MISUSES = {
    "from_numpy, negative strides": lambda a: torch.from_numpy(a[::-1]),
    "as_tensor, negative strides": lambda a: torch.as_tensor(a[:, ::-1]),
    "tensor, negative strides": lambda a: torch.tensor(a[::-1]),
    "byte order": lambda a: torch.from_numpy(a.astype(a.dtype.newbyteorder())),
    "strides not a multiple of the item size": lambda a: torch.from_numpy(
        np.ndarray((2,), a.dtype, buffer=a.view(np.uint8), strides=(a.itemsize + a.itemsize // 2,))),
    "integer dtype with requires_grad": lambda a: torch.tensor(a, dtype=torch.int64, requires_grad=True),
    "dtype not a dtype": lambda a: torch.as_tensor(a, dtype="complex32"),
    "unknown keyword": lambda a: torch.tensor(a, copy=True),
    "two arguments": lambda a: torch.from_numpy(a, a),
}


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("misuse", TENSOR_MISUSES)
def test_tensor_misuse_raises_what_complex64_raises(misuse, target):
    z = torch.randn(3, 4, dtype=torch.complex64).to(target)
    expected = outcome(TENSOR_MISUSES[misuse], z.to(torch.complex64))
    assert outcome(TENSOR_MISUSES[misuse], z) == expected


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("misuse", ARRAY_MISUSES)
def test_array_misuse_raises_what_complex64_raises(misuse, target):
    low = torch.randn(3, 4, dtype=torch.complex64).to(target).numpy()
    expected = outcome(ARRAY_MISUSES[misuse], low.astype(np.complex64))
    assert isinstance(expected[1], str), "the misuse should fail for complex64 too"
    assert outcome(ARRAY_MISUSES[misuse], low) == expected


# (layout, flags, sign bits that resolving the flags flips in (real, imag)) of tensors whose numpy(force=True)
# resolves flags, detaches or copies
FORCED = {
    "conj": (lambda t: t, lambda t: t.conj(), (0, 0x8000)),
    "neg": (lambda t: t, torch._neg_view, (0x8000, 0x8000)),
    "conj and neg": (lambda t: t, lambda t: torch._neg_view(t.conj()), (0x8000, 0)),
    "transposed conj": (lambda t: t.mT, lambda t: t.conj(), (0, 0x8000)),
    "requires grad": (lambda t: t, lambda t: t.clone().requires_grad_(), (0, 0)),
}


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
@pytest.mark.parametrize("case", FORCED)
def test_numpy_force_resolves_like_complex64(case, target):
    layout, flags, flipped = FORCED[case]
    source = layout(tensor_from_bits(special_pairs(target), target).reshape(12, 12))
    array = flags(source).numpy(force=True)
    reference = flags(source.to(torch.complex64)).numpy(force=True)
    assert array.dtype == ML_DTYPE[target] and layout_of(array) == layout_of(reference)
    np.testing.assert_array_equal(values(array), reference)
    # conj and neg resolve as IEEE negation: the sign bit flips, NaN payloads stay. (complex64's vectorized
    # neg computes 0 - x instead, which turns -0 into +0 and leaves the sign of a NaN.)
    assert np.array_equal(bits(array), bits(source) ^ np.array(flipped, dtype=np.uint16))


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_dtype_device_and_grad_arguments(target):
    low = torch.randn(3, 4, dtype=torch.complex64).to(target)
    array, wide = low.numpy(), low.to(torch.complex64)
    assert torch.equal(torch.as_tensor(array, dtype=torch.complex64), wide)
    assert data_pointer(torch.as_tensor(array, dtype=target)) == data_pointer(array)
    assert torch.equal(torch.tensor(array, dtype=torch.complex64), wide)
    on_meta = torch.tensor(array, device="meta")
    assert (on_meta.device.type, on_meta.dtype, on_meta.shape) == ("meta", target, low.shape)
    leaf = torch.tensor(array, requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad and leaf.dtype == target
    np.testing.assert_array_equal(np.asarray(low, dtype=np.complex64), wide.numpy())
    assert np.asarray(low).__array_interface__["data"][0] == data_pointer(low)


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_scalars_and_sequences_of_ml_dtypes_values(target):
    low = torch.randn(2, 3, dtype=torch.complex64).to(target)
    array = low.numpy()
    scalar = torch.tensor(array[1, 2])
    assert scalar.shape == () and scalar.dtype == target and np.array_equal(bits(scalar), bits(low[1, 2]))
    rows = torch.tensor([array[0], array[1]])
    assert rows.dtype == target and np.array_equal(bits(rows), bits(low))
    assert np.array_equal(bits(torch.as_tensor([array[0, 0], array[1, 1]])), bits(low.diagonal()))


@pytest.mark.parametrize("target", TARGETS, ids=IDS)
def test_without_ml_dtypes_the_error_names_the_extra(target, monkeypatch):
    monkeypatch.setitem(sys.modules, "ml_dtypes", None)  # import ml_dtypes now raises ImportError
    z = torch.zeros(2, dtype=target)
    for call in (z.numpy, lambda: np.asarray(z), lambda: z.numpy(force=True)):
        with pytest.raises(TypeError) as info:
            call()
        assert str(info.value) == (f"Got unsupported ScalarType {dtypes.SCALAR_TYPE_NAMES[target]}: numpy arrays of "
                                   f'{dtypes.NAMES[target]} need ml_dtypes >= 0.6: pip install "jitdtypes[numpy]"')


def test_without_numpy_jitdtypes_installs_no_wrappers_and_pytorch_says_why():
    code = """import sys
sys.modules["numpy"] = None
import torch, jitdtypes
assert jitdtypes.is_enabled() and type(torch.tensor) is type(len)
for dtype in (torch.complex32, torch.complex64):
    try:
        torch.zeros(2, dtype=dtype).numpy()
    except RuntimeError as exc:
        print(exc)
"""
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines() == ["Numpy is not available"] * 2


def test_disabled_means_pytorchs_own_functions():
    z = torch.zeros(2, dtype=torch.complex32)
    with jitdtypes.disabled():
        assert all(isinstance(f, types.BuiltinFunctionType) for f in (torch.tensor, torch.as_tensor, torch.from_numpy))
        assert "numpy" not in torch.Tensor.__dict__
        with pytest.raises(TypeError, match="^Got unsupported ScalarType ComplexHalf$"):
            z.numpy()
    assert z.numpy().dtype == ML_DTYPE[torch.complex32]


# -- do no harm: every other dtype goes through PyTorch's own conversions --------------------------------------

OTHER_TENSORS = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.complex64, torch.int64,
                 torch.uint8, torch.bool]
TENSOR_CALLS = {
    "numpy": lambda t: t.numpy(),
    "numpy(force=True)": lambda t: t.numpy(force=True),
    "numpy(force=False)": lambda t: t.numpy(force=False),
    "np.asarray": np.asarray,
    "np.asarray float64": lambda t: np.asarray(t, dtype=np.float64),
    "__array__": lambda t: t.__array__(),
    "transposed": lambda t: t.mT.numpy(),
    "conj": lambda t: t.conj().numpy(),
    "conj, forced": lambda t: t.conj().numpy(force=True),
    **{f"misuse: {name}": call for name, call in TENSOR_MISUSES.items()},
}
OTHER_ARRAYS = [np.float32, np.float16, np.float64, np.complex64, np.complex128, np.int64, np.int16, np.uint8,
                np.bool_, np.object_, ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, np.str_]
ARRAY_CALLS = {
    **{name: call for name, call in CONVERSIONS.items()},
    "as_tensor float64": lambda a: torch.as_tensor(a, dtype=torch.float64),
    "tensor requires_grad": lambda a: torch.tensor(a, requires_grad=True),
    "tensor of a list of rows": lambda a: torch.tensor(list(a)),
    "tensor of a scalar": lambda a: torch.tensor(a[0, 0]),
    "transposed": lambda a: torch.from_numpy(a.T),
    **{f"misuse: {name}": call for name, call in ARRAY_MISUSES.items()},
}
PYTHON_DATA = {"floats": [1.5, 2], "int": 3, "ragged": [[1], [2, 3]], "text": "x", "complex": 1 + 2j,
               "numpy scalars": [np.float32(1), np.float32(2)], "none": None, "tensors": [torch.ones(2)]}
PYTHON_CALLS = {"tensor": torch.tensor, "as_tensor": torch.as_tensor, "from_numpy": torch.from_numpy}


def fingerprint(call, source):
    """Everything observable about a conversion: the result's type, dtype, layout, bytes and whether it
    shares the source's memory, or the error's type and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = call(source)
    except Exception as exc:  # noqa: BLE001 - the error is the outcome
        return "error", type(exc), str(exc)
    if isinstance(result, torch.Tensor):
        content = result.detach().cpu().reshape(-1).view(torch.uint8).numpy().tobytes() if result.numel() else b""
        dtype, device = result.dtype, result.device
    else:
        content = np.ascontiguousarray(result).tobytes() if result.dtype != object else repr(result.tolist())
        dtype, device = result.dtype, None
    shares = isinstance(source, (np.ndarray, torch.Tensor)) and data_pointer(result) == data_pointer(source)
    return "ok", type(result), dtype, device, layout_of(result), content, shares


def outcomes_with_and_without_jitdtypes(cases):
    with jitdtypes.disabled():
        without = {name: fingerprint(call, make()) for name, (call, make) in cases.items()}
    with_jitdtypes = {name: fingerprint(call, make()) for name, (call, make) in cases.items()}
    return without, with_jitdtypes


def other_tensor(dtype):
    return (torch.arange(12).reshape(3, 4) % 5 * 0.75 - 1).to(dtype)


def other_array(dtype):
    numbers = np.arange(12).reshape(3, 4) % 5 * 0.75 - 1
    return numbers.astype(dtype) if dtype is not np.str_ else numbers.astype(str)


@pytest.mark.parametrize("dtype", OTHER_TENSORS, ids=str)
def test_other_tensor_dtypes_convert_as_without_jitdtypes(dtype):
    cases = {name: (call, lambda: other_tensor(dtype)) for name, call in TENSOR_CALLS.items()}
    without, with_jitdtypes = outcomes_with_and_without_jitdtypes(cases)
    assert with_jitdtypes == without
    assert sum(kind == "ok" for kind, *_ in without.values()) >= 3 or dtype == torch.bfloat16


@pytest.mark.parametrize("dtype", OTHER_ARRAYS, ids=lambda d: np.dtype(d).name)
def test_other_array_dtypes_convert_as_without_jitdtypes(dtype):
    cases = {name: (call, lambda: other_array(dtype)) for name, call in ARRAY_CALLS.items()}
    without, with_jitdtypes = outcomes_with_and_without_jitdtypes(cases)
    assert with_jitdtypes == without


@pytest.mark.parametrize("data", PYTHON_DATA)
def test_python_data_converts_as_without_jitdtypes(data):
    cases = {name: (call, lambda: PYTHON_DATA[data]) for name, call in PYTHON_CALLS.items()}
    without, with_jitdtypes = outcomes_with_and_without_jitdtypes(cases)
    assert with_jitdtypes == without


COMPILERS_SCRIPT = """
import sys, warnings
import numpy as np, torch
warnings.simplefilter("ignore")

def conversions(x, array):
    return torch.tensor([1.5, 2.0]) + torch.as_tensor(array) + torch.from_numpy(array) + x

def scripted(x: torch.Tensor):
    return x + torch.tensor([1.0, 2.0]) + torch.as_tensor([3.0, 4.0])

def check(state, fn=conversions):
    import torch._dynamo
    torch._dynamo.reset()
    x, array = torch.ones(2), np.arange(2, dtype=np.float32)
    compiled = torch.compile(fn, backend="eager", fullgraph=True)(x, array)
    print(state, torch.equal(compiled, fn(x, array)), torch.equal(torch.jit.script(scripted)(x), scripted(x)))

if sys.argv[1] == "compilers first":
    check("before import")
import jitdtypes
check("enabled")
check("enabled", lambda x, array: torch.as_tensor(x.numpy() * 2) + x)
with jitdtypes.disabled():
    check("disabled")
check("enabled again")
"""


@pytest.mark.parametrize("order", ["compilers first", "jitdtypes first"])
def test_torch_compile_and_torchscript_see_pytorchs_functions(order, tmp_path):
    # compilers know functions by identity, in tables filled once: whichever is installed when they are
    # filled, both compile (fullgraph) and script in every state, with the results of eager calls
    script = tmp_path / "compilers.py"  # TorchScript reads the source of what it compiles
    script.write_text(COMPILERS_SCRIPT)
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, str(script), order], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    states = ["enabled", "enabled", "disabled", "enabled again"]
    if order == "compilers first":
        states.insert(0, "before import")
    assert run.stdout.splitlines() == [f"{state} True True" for state in states]
