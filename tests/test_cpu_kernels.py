"""Generated CPU kernels (jitdtypes/cpu_kernels): built on first use with JITDTYPES_CPU_KERNELS=eager, they
serve the calls they fit with the package's own results, leave every other call to the upcast path, agree with
complex64 on the same rounded inputs over OpInfo's samples, and follow the cache rules (tampered packages
are rebuilt, insecure ones refused, eight processes asking at once build one).

Each package takes AOTInductor 10-20 s to build on 2 cores, so a representative set is built here: a unary op
with a complex and one with a real result, a binary op without and one with alpha, the words boundary
(bcomplex32) and the native one (complex32)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest
import torch

import jitdtypes
from jitdtypes import cpu_kernels, dtypes
from jitdtypes.cpu_kernels import provider
from jitdtypes.cpu_kernels import table
from jitdtypes.routing import path_record
from cache_tools.store import InsecureEntry
from jitdtypes import complex_math

from .cpu_kernel_support import BCOMPLEX32, bits, call, eager_kernels, inputs, package_result, upcast
from .opinfo_samples import op_db
from .special_values import special_values

pytestmark = pytest.mark.skipif(
    not jitdtypes.is_enabled() or jitdtypes.guard() != "compiled", reason="needs the compiled guard")

CASES = [("aten::exp", torch.complex32, "exp"), ("aten::angle", torch.complex32, "angle"),
         ("aten::div.Tensor", torch.complex32, "div")]
if BCOMPLEX32 is not None:
    CASES += [("aten::mul.Tensor", BCOMPLEX32, "mul"), ("aten::add.Tensor", BCOMPLEX32, "add"),
              ("aten::exp", BCOMPLEX32, "exp")]
IDS = [f"{o.removeprefix('aten::')}-{dtypes.NAMES[d]}" for o, d, _ in CASES]


@pytest.fixture(scope="module")
def installed():
    """Every case's package built (or found) and installed, as a first call in eager mode does."""
    with eager_kernels():
        for overload, dtype, name in CASES:
            assert (overload, dtype) in cpu_kernels.eligible, f"{overload} is not upcast in C++ for {dtype}"
            # as the router's first call asks (which an earlier test may have made with the kernels off)
            cpu_kernels.first_need(overload, dtype)
            call(name, inputs(dtype, (4,), 2 if "Tensor" in overload else 1))  # the guard's first call routes
    status = cpu_kernels.status()
    for overload, dtype, _ in CASES:
        assert status[(overload, dtypes.NAMES[dtype])] == "installed", status
    yield dict(provider._installed)
    for overload, dtype in list(provider._installed):  # later tests in this process expect the upcast path
        cpu_kernels.uninstall(overload, dtype)  # (test_demo's memory), out= and in-place forms included


@pytest.mark.parametrize("overload,dtype,name", CASES, ids=IDS)
def test_dense_calls_take_the_package_others_the_upcast(installed, overload, dtype, name):
    count = 2 if "Tensor" in overload else 1
    threshold = table.min_numel(overload, dtypes.NAMES[dtype])
    assert provider._min_numel[(overload, dtype)] == threshold
    columns = -(-threshold // 37)
    tensors = inputs(dtype, (37, columns), count)
    ours = call(name, tensors)
    packaged = package_result(installed[(overload, dtype)], tensors, dtype)
    assert ours.dtype == upcast(name, tensors, dtype).dtype and ours.shape == tensors[0].shape
    assert torch.equal(bits(ours), bits(packaged))
    # transposed, so dense: the package over the same memory, the result strided as its inputs (as complex64's
    # TensorIterator kernels give it; ATen's angle of complex64 returns a contiguous one)
    transposed = call(name, [t.T for t in tensors])
    assert transposed.stride() == (1, columns)
    if transposed.is_complex():
        assert transposed.stride() == call(name, [t.T.to(torch.complex64) for t in tensors]).stride()
    assert torch.equal(bits(transposed), bits(packaged.T))
    if count == 2:  # operands of different strides: the upcast
        mixed = [tensors[0], tensors[1].T.contiguous().T]
        assert torch.equal(bits(call(name, mixed)), bits(upcast(name, mixed, dtype)))
    sliced = [t[:, ::2] for t in inputs(dtype, (37, 2 * columns), count)]  # not dense: the upcast, bit for bit
    assert torch.equal(bits(call(name, sliced)), bits(upcast(name, sliced, dtype)))
    below = [t.reshape(-1)[: threshold - 1] for t in tensors]  # too small to gain: the upcast
    assert torch.equal(bits(call(name, below)), bits(upcast(name, below, dtype)))


@pytest.mark.parametrize("overload,dtype,name", CASES, ids=IDS)
def test_opinfo_samples_agree_with_complex64(installed, overload, dtype, name):
    """Every plain OpInfo sample whose tensors the package can take (one shape, at least 2 elements) through
    the package itself, whatever its size; the call's dtype and shape through the guard."""
    (info,) = [op for op in op_db() if op.name == name and op.variant_test_name in ("", "no_rounding_mode")]
    checked = 0
    for sample in info.sample_inputs("cpu", torch.complex64):
        tensors = [sample.input, *sample.args]
        if sample.kwargs or not all(isinstance(t, torch.Tensor) for t in tensors):
            continue
        narrow = [t.to(dtype).contiguous() for t in tensors]
        if len({t.shape for t in narrow}) != 1 or narrow[0].numel() < 2:
            continue
        expected = upcast(name, narrow, dtype)
        got = package_result(installed[(overload, dtype)], narrow, dtype)
        called = call(name, narrow)
        assert got.dtype == called.dtype == expected.dtype and got.shape == called.shape == expected.shape
        torch.testing.assert_close(got.to(torch.complex64 if got.is_complex() else torch.float32),
                                   expected.to(torch.complex64 if got.is_complex() else torch.float32),
                                   rtol=2 ** -7, atol=2 ** -7, equal_nan=True)
        checked += 1
    assert checked >= 1, f"no OpInfo sample of {name} is a plain call"


def test_in_place_and_out_forms_run_their_functional_package(installed):
    """exp's package installed in sin_'s and sin.out's slots (which an in-place or out= call of complex32 sin
    reaches): the written tensor gets exp's values, in place; what does not fit keeps the upcast."""
    from jitdtypes import native_guard

    dtype, package = torch.complex32, installed[("aten::exp", torch.complex32)]
    for overload in ("aten::sin_", "aten::sin.out"):
        assert cpu_kernels.eligible.get((overload, dtype)) == "CPU", overload
    (x,) = inputs(dtype, (64, 64), 1)
    expected = package_result(package, [x], dtype)
    x.clone().sin_(), torch.sin(x, out=torch.empty_like(x))  # a first call of an op takes the router
    try:
        for overload in ("aten::sin_", "aten::sin.out"):
            native_guard.install_generated(overload, "CPU", dtype, package, ("model",), 2, words=False)
        y = x.clone()
        version = y._version
        assert y.sin_() is y and y._version > version and torch.equal(bits(y), bits(expected))
        out = torch.empty_like(x)
        assert torch.sin(x, out=out) is out and torch.equal(bits(out), bits(expected))
        transposed = torch.empty_like(x).T  # dense: written through its strides
        assert torch.sin(x.T, out=transposed) is transposed and torch.equal(bits(transposed), bits(expected.T))
        # an out= of another shape is resized, one with gaps written through its strides: the upcast
        resized, gapped = torch.empty(3, dtype=dtype), torch.empty(64, 128, dtype=dtype)[:, ::2]
        with pytest.warns(UserWarning, match="resized"):
            torch.sin(x, out=resized)
        torch.sin(x, out=gapped)
        sine = upcast("sin", [x], dtype)
        assert resized.shape == x.shape and torch.equal(bits(resized), bits(sine))
        assert torch.equal(bits(gapped), bits(sine))
        flat = x.clone().reshape(-1)  # written over what it reads, one element apart: the upcast too
        torch.sin(flat[1:], out=flat[:-1])
        assert torch.equal(bits(flat[:-1]), bits(upcast("sin", [x.reshape(-1)[1:]], dtype)))
    finally:
        for overload in ("aten::sin_", "aten::sin.out"):
            native_guard.install_generated(overload, "CPU", dtype, "", (), 0, words=False)
    with pytest.raises(RuntimeError, match="not supported for complex"):  # abs_'s result is real
        x.clone().abs_()


def test_in_place_and_out_forms_write_through_their_own_package(installed):
    """exp's writing package (its into model, table.INTO) installed in sin_'s and sin.out's slots: the written
    tensor itself gets exp's values (no tensor of the package's own is copied in); a written tensor whose
    strides differ from the inputs' takes the upcast (the slot has no functional flat model)."""
    from jitdtypes import native_guard

    dtype = torch.complex32
    (x,) = inputs(dtype, (64, 64), 1)
    with eager_kernels():
        cpu_kernels.first_need("aten::exp_", dtype)
        x.clone().exp_()
    into = provider._installed[("aten::exp_", dtype)]
    assert into != installed[("aten::exp", dtype)] and table.models("aten::exp_", "complex32") == (table.INTO,)
    expected = package_result(installed[("aten::exp", dtype)], [x], dtype)
    x.clone().sin_(), torch.sin(x, out=torch.empty_like(x))  # a first call of an op takes the router
    try:
        for overload in ("aten::sin_", "aten::sin.out"):
            native_guard.install_generated(overload, "CPU", dtype, into, (table.INTO,), 2, words=False)
        y = x.clone()
        address, version = y.data_ptr(), y._version
        assert y.sin_() is y and y.data_ptr() == address and y._version > version
        assert torch.equal(bits(y), bits(expected))
        out = torch.empty_like(x)
        assert torch.sin(x, out=out) is out and torch.equal(bits(out), bits(expected))
        transposed = torch.empty_like(x).T  # the strides of x.T: written in memory order
        assert torch.sin(x.T, out=transposed) is transposed and torch.equal(bits(transposed), bits(expected.T))
        other = torch.empty_like(x)  # contiguous, x.T is not: the upcast
        torch.sin(x.T, out=other)
        assert torch.equal(bits(other), bits(upcast("sin", [x.T], dtype)))
    finally:
        for overload in ("aten::sin_", "aten::sin.out"):
            native_guard.install_generated(overload, "CPU", dtype, "", (), 0, words=False)


def test_out_forms_take_the_installed_kernels(installed):
    """The fixture's packages serve the out= and in-place forms of their ops (installed by their first call)."""
    with eager_kernels():
        for overload, dtype, name in CASES:
            count = 2 if "Tensor" in overload else 1
            out_form, in_place = f"aten::{name}.out", f"aten::{name}_.Tensor" if count == 2 else f"aten::{name}_"
            tensors = inputs(dtype, (8192,), count)
            for form in (out_form, in_place):  # as the router's first call asks (an earlier test in this
                cpu_kernels.first_need(form, dtype)  # process may have made it with the kernels off)
            functional = package_result(installed[(overload, dtype)], tensors, dtype)
            out = torch.empty_like(functional)
            for _ in range(2):  # the first call of an op routes
                getattr(torch, name)(*tensors, out=out)
            assert torch.equal(bits(out), bits(functional)), name
            status = cpu_kernels.status()
            assert status.get((out_form, dtypes.NAMES[dtype])) == "installed", (out_form, status)
            if count == 2:  # written over an input it is: x.div_(x), torch.div(x, y, out=x)
                x, y = tensors
                on_itself = package_result(installed[(overload, dtype)], [x, x], dtype)
                for _ in range(2):  # the first call of div_ routes
                    same = x.clone()
                    getattr(same, f"{name}_")(same)
                assert torch.equal(bits(same), bits(on_itself)), name
                into_input = x.clone()
                getattr(torch, name)(into_input, y, out=into_input)
                assert torch.equal(bits(into_input), bits(functional)), name


def test_uninstalled_kernels_leave_calls_to_the_upcast(installed):
    tensors = inputs(torch.complex32, (64, 64), 1)
    cpu_kernels.uninstall("aten::exp", torch.complex32)
    try:
        assert torch.equal(bits(torch.exp(tensors[0])), bits(upcast("exp", tensors, torch.complex32)))
    finally:
        cpu_kernels.first_need("aten::exp", torch.complex32)  # eager mode is off here: reinstall by hand
        cpu_kernels.ensure("aten::exp", torch.complex32)


@pytest.mark.machinery
def test_tampered_package_is_rebuilt(installed, monkeypatch):
    overload, dtype = "aten::exp", torch.complex32
    store = provider._store()
    entry = store.read(cpu_kernels.key(overload, dtype))
    library = entry.directory / "model.so"
    data = bytearray(library.read_bytes())
    data[len(data) // 2] ^= 0xFF
    changed = library.with_name("changed")
    changed.write_bytes(bytes(data))
    os.replace(changed, library)  # a new file: this process has the library loaded
    before = len(cpu_kernels.built)
    directory = provider._package(overload, dtype)
    assert cpu_kernels.built[before:] == [(overload, dtype)]
    rebuilt = store.read(cpu_kernels.key(overload, dtype))
    assert rebuilt.directory == directory and set(rebuilt.files) == {"model.so"}
    x = inputs(dtype, (4096,), 1)[0]
    assert torch.equal(bits(package_result(directory / "model.so", [x], dtype)), bits(torch.exp(x)))


def test_failed_build_is_remembered_until_retried(tmp_path, monkeypatch):
    """A build that fails (here: no C++ compiler) is not run again by later calls or processes (each took
    10-30 s of CPU), until a retry (`jitdtypes warm --device cpu`) builds it."""
    from .conftest import seed_cache

    monkeypatch.setenv("JITDTYPES_CACHE_DIR", str(seed_cache(tmp_path / "cache")))
    monkeypatch.setenv("CXX", str(tmp_path / "no-compiler"))
    overload, dtype = "aten::exp", torch.complex32
    with pytest.raises(RuntimeError, match="building it failed"):
        provider._package(overload, dtype)
    store = provider._store()
    entry_key = cpu_kernels.key(overload, dtype)
    record = store.read_failure(entry_key)
    assert record["overload"] == overload and "building it failed" in record["error"] and store.read(entry_key) is None
    assert not list(store.root.glob(".work-*"))
    with pytest.raises(RuntimeError, match="not built again until `jitdtypes warm --device cpu`"):
        provider._package(overload, dtype)
    assert store.read_failure(entry_key)["created"] == record["created"]  # not tried again
    monkeypatch.delenv("CXX")
    before = len(cpu_kernels.built)
    directory = provider._package(overload, dtype, retry=True)
    assert cpu_kernels.built[before:] == [(overload, dtype)] and store.read_failure(entry_key) is None
    assert provider._package(overload, dtype) == directory and len(cpu_kernels.built) == before + 1


def test_insecure_package_is_refused(installed):
    entry = provider._store().read(cpu_kernels.key("aten::angle", torch.complex32))
    mode = entry.directory.stat().st_mode
    os.chmod(entry.directory, mode | stat.S_IWOTH)
    try:
        with pytest.raises(InsecureEntry):
            provider._package("aten::angle", torch.complex32)
    finally:
        os.chmod(entry.directory, mode)


@pytest.mark.machinery
def test_eight_processes_build_one_package(tmp_path):
    from .conftest import seed_cache

    cache = seed_cache(tmp_path / "cache")
    program = textwrap.dedent("""
        import jitdtypes, torch
        from jitdtypes import cpu_kernels
        cpu_kernels.first_need("aten::sigmoid", torch.complex32)
        print(cpu_kernels.status()[("aten::sigmoid", "complex32")], len(cpu_kernels.built))
    """)
    env = dict(os.environ, JITDTYPES_CACHE_DIR=str(cache), JITDTYPES_CPU_KERNELS="eager",
               JITDTYPES_DISCOVERY="cached")
    children = [subprocess.Popen([sys.executable, "-c", program], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(8)]
    results = [child.communicate(timeout=600) for child in children]
    lines = [out.strip().splitlines()[-1] for out, _ in results]
    assert all(line.startswith("installed ") for line in lines), results
    assert sorted(int(line.split()[1]) for line in lines) == [0] * 7 + [1]


def test_mode_from_the_environment(monkeypatch):
    for value in (cpu_kernels.OFF, cpu_kernels.LAZY, cpu_kernels.EAGER):
        monkeypatch.setenv(cpu_kernels.ENV_VAR, value)
        assert cpu_kernels.mode() == value
    monkeypatch.setenv(cpu_kernels.ENV_VAR, "sometimes")
    with pytest.raises(ValueError, match="must be off, lazy or eager"):
        cpu_kernels.mode()


def test_off_builds_nothing(monkeypatch):
    monkeypatch.setenv(cpu_kernels.ENV_VAR, cpu_kernels.OFF)
    request = ("aten::tanh", torch.complex32)
    assert request in cpu_kernels.eligible
    cpu_kernels.first_need(*request)
    assert request not in provider._requested


def test_import_loads_neither_dynamo_nor_inductor():
    code = "import sys, jitdtypes, torch; print('torch._dynamo' in sys.modules, 'torch._inductor' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, JITDTYPES_CPU_KERNELS="lazy"), timeout=300)
    assert out.stdout.split() == ["False", "False"], out.stderr


def test_every_generated_op_has_a_compile_path_formula():
    """A package of an op without one would hold an ATen node that AOTInductor calls back through its proxy
    executor (bcomplex32: a build that fails, AOTInductor's shim lacking the dtype)."""
    from jitdtypes import schema
    from jitdtypes.compile_path import decompositions

    assert [o for o in table.GENERATED if schema.overload(o).op not in decompositions.TABLE] == []


def test_warm_command_builds_the_generated_kernels_of_every_dtype():
    """`jitdtypes warm --device cpu` as the console script runs it (argv[0] "jitdtypes": importing the package
    does not enable it), with the builds recorded instead of run. It had warmed none: the registrar offers
    them only once enabled."""
    code = textwrap.dedent("""
        import sys
        sys.argv[0] = "jitdtypes"
        from jitdtypes import cpu_kernels, dtypes

        def build_many(pairs, jobs, heard):
            for overload, dtype in pairs:
                print("built", overload, dtypes.NAMES[dtype])
            return set(pairs), {}

        cpu_kernels.build_many, cpu_kernels.build_record = build_many, lambda overload, dtype: {}
        from jitdtypes.cli import main
        sys.exit(main(["warm", "--dtype", "all", "--device", "cpu", "--ops", "tanh"]))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, JITDTYPES_CPU_KERNELS="lazy"))
    assert run.returncode == 0, run.stderr
    built = {tuple(line.split()[1:]) for line in run.stdout.splitlines() if line.startswith("built ")}
    complex_dtypes = [d for d in dtypes.BY_NAME.values() if d.is_complex]
    wanted = {(overload, dtypes.NAMES[d]) for overload, d in cpu_kernels.to_warm(complex_dtypes, {"tanh"})}
    assert {("aten::tanh", "complex32"), ("aten::tanh.out", "complex32")} <= wanted and built == wanted


# Ops PyTorch serves itself for complex32, more slowly than a generated kernel (cpu_kernels.table.OVERRIDDEN)
OVERRIDDEN_CASES = [("aten::sum", torch.complex32, "sum"), ("aten::add.Tensor", torch.complex32, "add"),
                    ("aten::abs", torch.complex32, "abs"), ("aten::addcmul", torch.complex32, "addcmul"),
                    ("aten::mul.Tensor", torch.complex32, "mul")]
OVERRIDDEN_IDS = [name for _, _, name in OVERRIDDEN_CASES]
ARITY = {"add": 2, "mul": 2, "addcmul": 3}  # tensors per call (the others take one)


@pytest.fixture(scope="module")
def overriding():
    """Their packages built (or found) and installed; afterwards PyTorch's kernels serve them again."""
    with eager_kernels():
        for overload, dtype, _ in OVERRIDDEN_CASES:
            assert provider._min_numel[(overload, dtype)] == table.min_numel(overload, dtypes.NAMES[dtype])
            cpu_kernels.first_need(overload, dtype)
    yield
    for overload, dtype, _ in OVERRIDDEN_CASES:
        cpu_kernels.uninstall(overload, dtype)


@pytest.mark.parametrize("overload,dtype,name", OVERRIDDEN_CASES, ids=OVERRIDDEN_IDS)
def test_overridden_ops_take_large_calls_from_pytorch(overriding, overload, dtype, name):
    count = ARITY.get(name, 1)
    large = inputs(dtype, (8192,), count)
    ours = call(name, large)
    path = provider._installed[(overload, dtype)]
    assert torch.equal(bits(ours), bits(package_result(path, large, dtype)))
    torch.testing.assert_close(ours.to(torch.complex64), upcast(name, large, dtype).to(torch.complex64),
                               rtol=2 ** -9, atol=2 ** -6)
    # below the measured threshold, and not dense: PyTorch's own kernel, bit for bit
    small = inputs(dtype, (table.min_numel(overload, dtypes.NAMES[dtype]) - 1,), count)
    strided = [t.reshape(64, 128)[:, ::2] for t in large]
    for tensors in (small, strided):
        cpu_kernels.uninstall(overload, dtype)
        try:
            expected = call(name, tensors)
        finally:
            cpu_kernels.ensure(overload, dtype)
        assert torch.equal(bits(call(name, tensors)), bits(expected))
    # other dtypes never reach it
    wide = [t.to(torch.complex64) for t in large]
    assert torch.equal(call(name, wide), getattr(torch.Tensor, name)(*wide))


@pytest.mark.parametrize("overload,dtype,name", OVERRIDDEN_CASES, ids=OVERRIDDEN_IDS)
def test_overridden_calls_run_the_installed_package(installed, overriding, overload, dtype, name):
    """Which package serves a call, seen by installing another op's (exp for sum, div for add, mul) in its slot;
    addcmul, the one ternary op, by its one rounding where PyTorch's complex32 kernel rounds each step."""
    from jitdtypes import native_guard

    tensors = inputs(dtype, (8192,), ARITY.get(name, 1))
    if name == "addcmul":
        ours = call(name, tensors)
        cpu_kernels.uninstall(overload, dtype)
        try:
            pytorchs = call(name, tensors)
        finally:
            cpu_kernels.ensure(overload, dtype)
        assert torch.equal(bits(ours), bits(package_result(provider._installed[(overload, dtype)], tensors, dtype)))
        assert not torch.equal(bits(ours), bits(pytorchs))
        torch.testing.assert_close(ours.to(torch.complex64), upcast(name, tensors, dtype).to(torch.complex64),
                                   rtol=2 ** -9, atol=2 ** -6)
        return
    other = "div" if ARITY.get(name) == 2 else "exp"
    other_package = installed[("aten::exp" if other == "exp" else "aten::div.Tensor", dtype)]
    native_guard.install_generated(overload, "CPU", dtype, other_package, ("model",), 2, words=False)
    try:
        assert torch.equal(bits(call(name, tensors)), bits(call(other, tensors)))
    finally:
        cpu_kernels.uninstall(overload, dtype)
        cpu_kernels.ensure(overload, dtype)
    torch.testing.assert_close(call(name, tensors).to(torch.complex64),
                               upcast(name, tensors, dtype).to(torch.complex64), rtol=2 ** -9, atol=2 ** -6)


def test_overridden_in_place_and_out_forms_take_large_calls_from_pytorch(installed, overriding):
    """complex32 add_ and add.out, which PyTorch serves: from the measured size on, add's package (first call
    asks for it through the hook, eager mode installs it; that the slot's package serves is seen by installing
    div's there); below it and not dense, PyTorch's kernel."""
    from jitdtypes import native_guard

    dtype = torch.complex32
    x, w = inputs(dtype, (8192,), 2)
    expected = package_result(provider._installed[("aten::add.Tensor", dtype)], [x, w], dtype)
    for form in ("aten::add_.Tensor", "aten::add.out"):  # an earlier test of this process may have asked
        native_guard.install_generated(form, "CPU", dtype, "", (), 0, words=False)  # (resets the guard's flag)
        provider._requested.discard((form, dtype))
    with eager_kernels():
        for _ in range(2):  # the first large call asks for the package
            y, out = x.clone(), torch.empty_like(x)
            y.add_(w), torch.add(x, w, out=out)
    assert cpu_kernels.status()[("aten::add_.Tensor", "complex32")] == "installed"
    assert torch.equal(bits(y), bits(expected)) and torch.equal(bits(out), bits(expected))
    native_guard.install_generated("aten::add_.Tensor", "CPU", dtype, installed[("aten::div.Tensor", dtype)],
                                   ("model",), 2, words=False)
    try:
        y = x.clone()
        y.add_(w)
        assert torch.equal(bits(y), bits(x / w))
    finally:
        cpu_kernels.uninstall("aten::add_.Tensor", dtype)
        cpu_kernels.ensure("aten::add_.Tensor", dtype)
    def small(t):
        return t[: table.min_numel("aten::add_.Tensor", "complex32") - 1].clone()

    def gapped(t):  # not dense
        return t.reshape(64, 128).clone()[:, ::2]

    for layout in (small, gapped):
        pytorchs = layout(x)
        cpu_kernels.uninstall("aten::add_.Tensor", dtype)
        try:
            pytorchs.add_(layout(w))
        finally:
            cpu_kernels.ensure("aten::add_.Tensor", dtype)
        ours = layout(x)
        ours.add_(layout(w))
        assert torch.equal(bits(ours), bits(pytorchs))


def test_overridden_dtype_asks_for_its_kernel_once(overriding, monkeypatch):
    """The guard's first call that fits calls cpu_kernels.first_need through the hook (PyTorch's kernel
    serves that call), and no later one."""
    x = inputs(torch.complex32, (4096,), 1)[0]
    torch.sum(x, 0)  # PyTorch's full sum calls sum.dim_IntList, whose first call in a process routes and asks
    asked = []
    monkeypatch.setattr(provider, "_requested", set())
    monkeypatch.setattr(provider, "mode", lambda: asked.append(1) or cpu_kernels.OFF)
    cpu_kernels.uninstall("aten::sum", torch.complex32)  # resets the guard's "asked" flag
    try:
        for _ in range(3):
            torch.sum(x)
        assert len(asked) == 1
    finally:
        cpu_kernels.ensure("aten::sum", torch.complex32)


@pytest.mark.parametrize("overload,dtype,name", OVERRIDDEN_CASES, ids=OVERRIDDEN_IDS)
def test_overridden_opinfo_samples_agree_with_complex64(overriding, overload, dtype, name):
    (info,) = [op for op in op_db() if op.name == name and op.variant_test_name == ""]
    checked = 0
    for sample in info.sample_inputs("cpu", torch.complex64):
        tensors = [sample.input, *sample.args]
        if sample.kwargs or not all(isinstance(t, torch.Tensor) for t in tensors):
            continue
        narrow = [t.to(dtype) for t in tensors]
        expected, got = upcast(name, narrow, dtype), call(name, narrow)
        assert got.dtype == expected.dtype and got.shape == expected.shape
        torch.testing.assert_close(got.to(torch.complex64), expected.to(torch.complex64), rtol=2 ** -7,
                                   atol=2 ** -7 * max(1.0, float(expected.abs().max())) if got.numel() else 0,
                                   equal_nan=True)
        checked += 1
    assert checked >= 1


def _with_special_values(t: torch.Tensor) -> torch.Tensor:
    """t with the special values of its dtype (tests/special_values.py) in its first elements' parts."""
    specials = torch.tensor(special_values(t.dtype))
    parts = torch.view_as_real(t.to(torch.complex64)).clone()
    parts[: len(specials), 0] = specials
    parts[: len(specials), 1] = specials.flip(0)
    return torch.view_as_complex(parts).to(t.dtype)


LANES_CASES = [("aten::add.Tensor", torch.complex32, "add")]
if BCOMPLEX32 is not None:
    LANES_CASES.append(("aten::add.Tensor", BCOMPLEX32, "add"))


@pytest.mark.parametrize("overload,dtype,name", LANES_CASES, ids=[dtypes.NAMES[d] for _, d, _ in LANES_CASES])
def test_lanes_packages_add_each_part_in_float32(installed, overriding, overload, dtype, name):
    """add over the flat parts (table.LANES): each part's float32 sum rounded once, which has complex64's
    values wherever the parts are finite. Where one is infinite, complex64's kernel first multiplies by alpha = 1 + 0i
    (inf * 0: NaN in the other part); the package, like the compile path, adds the parts as they are."""
    x, y = inputs(dtype, (8192,), 2)
    x, y = _with_special_values(x), _with_special_values(y.flip(0))
    got = package_result(provider._installed[(overload, dtype)], [x, y], dtype)
    assert got.dtype == dtype and torch.equal(bits(call(name, [x, y])), bits(got))
    part = dtypes.part_dtype(dtype)
    per_part = (torch.view_as_real(x).float() + torch.view_as_real(y).float()).to(part)
    got_parts = torch.view_as_real(got)
    assert torch.equal(got_parts.isnan(), per_part.isnan())
    assert torch.equal(got_parts[~per_part.isnan()], per_part[~per_part.isnan()])
    finite = torch.isfinite(torch.view_as_real(x)).all(-1) & torch.isfinite(torch.view_as_real(y)).all(-1)
    # equal values; not bits: the same multiplication turns -0 - 0i's real part into +0 in complex64
    assert torch.equal(got[finite].to(torch.complex64),
                       upcast(name, [x[finite], y[finite]], dtype).to(torch.complex64))


PAIRS_FORMULAS = {"mul": lambda x, w: complex_math.mul(x, w),
                  "addcmul": lambda x, t1, t2: complex_math.add(x, complex_math.mul(t1, t2), 1)}


@pytest.mark.parametrize("name", sorted(PAIRS_FORMULAS))
def test_pairs_packages_compute_the_formula_on_every_lane(overriding, name):
    """complex32 mul and addcmul read the parts as lanes, each lane its element's other part from a
    neighbour (table.PAIRS): every lane, the first and last ones (computed apart) included, holds the compile
    path's formula on that element's float32 parts rounded once, special values included, at every length."""
    overload = f"aten::{name}.Tensor" if name == "mul" else f"aten::{name}"
    assert table.reads(overload, "complex32") == table.PAIRS
    path = provider._installed[(overload, torch.complex32)]
    for length in (2, 3, 33, 4097, 8192):
        tensors = [_with_special_values(t) if length > 100 else t
                   for t in inputs(torch.complex32, (length,), ARITY[name], seed=length)]
        parts = [torch.view_as_real(t).float().unbind(-1) for t in tensors]
        re, im = PAIRS_FORMULAS[name](*parts)
        expected = torch.stack([re, im], -1).half()
        got = torch.view_as_real(package_result(path, tensors, torch.complex32))
        assert torch.equal(got.isnan(), expected.isnan()), length
        assert torch.equal(bits(got[~got.isnan()]), bits(expected[~expected.isnan()])), length


def test_ops_rows_show_the_generated_path(installed, overriding):
    path_record.reset()  # an earlier test in this process may have routed tanh elsewhere (a Triton template)
    rows = {(r["op"], r["dtype"]): r for r in jitdtypes.stats() if r["device"] == "cpu"}
    assert rows[("aten::exp", "complex32")]["path"] == "generated"
    assert rows[("aten::sum", "complex32")]["path"] == "generated"  # PyTorch's own kernel, taken over
    assert rows[("aten::sum", "complex32")]["support"] == "native"
    assert rows[("aten::tanh", "complex32")]["path"] == "upcast"  # eligible, never built here (kernels off)
