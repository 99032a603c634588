"""Ahead-of-time compilation of template kernels for GPU targets, on a machine with or without a GPU.

A rendered module's `run` is called on CPU tensors of representative shapes (`CASES`) inside `recording(arch)`:
Triton's launcher is replaced by a recorder that keeps each launch specialized exactly as JITFunction.run would
specialize it (Triton's own binder and `_pack_args`: pointer alignment, integers divisible by 16 or equal to 1),
and torch.cuda's device queries answer for the target arch, so launchers pick the configs they would pick there.
`compile_launch` hands a recorded launch to triton.compile for a GPUTarget: Triton computes the same cache key as
JITFunction.run on a GPU of that arch and writes its usual cache entry (TRITON_CACHE_DIR). Used by
`jitdtypes warm --arch` and benchmarks/aot_check.py.

Specializations the cases cover (what a warmed cache holds, `Sizes`): tensors as torch allocates them (data
pointers 16-byte aligned: every pointer argument carries Triton's divisibility-16 attribute), contiguous and, for
some ops, transposed, each case twice: ALIGNED, with every size and stride a multiple of 16 (1024 x 1024
elementwise operands, 1M- and 16M-element reductions, 1024 x 1024 scans, 4096^3 and 16 x 512^3 GEMMs, power-of-two
FFT rows), and ODD, with none a multiple of 16 (999 x 999, 1M - 1 elements, 999^3 and 3 x 199^3 GEMMs, an odd FFT
row count), plus the integer 1 where a case has it (a unit stride, a matrix-vector product). Launches that mix
the two kinds of integers (a 1024 x 37 tensor: numel a multiple of 16, its stride not), or whose data pointer is
offset by a non-multiple of 16 bytes (x[1:]), are other Triton specializations and compile on first use.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import multiprocessing
import pkgutil
import types
from typing import NamedTuple

import torch

from .. import dtypes
import kernels_templates


class Arch(NamedTuple):
    name: str
    capability: int
    sm_count: int  # launchers size grids by it: A100 (sm_80), H100/H200 SXM (sm_90)


ARCHES = {"sm_80": Arch("sm_80", 80, 108), "sm_90": Arch("sm_90", 90, 132)}
MILLION = 1 << 20


def arch_named(name: str) -> Arch:
    """sm_80, sm_90 (known SM counts), or sm_XY (the SM count of the sm_90 table entry stands in)."""
    if name in ARCHES:
        return ARCHES[name]
    digits = name.removeprefix("sm_")
    if not name.startswith("sm_") or not digits.isdigit() or len(digits) < 2:
        raise ValueError(f"not an arch like sm_80 or sm_90: {name!r}")
    return Arch(name, int(digits), ARCHES["sm_90"].sm_count)


def local_arch() -> Arch:
    properties = torch.cuda.get_device_properties()
    return Arch(f"sm_{properties.major}{properties.minor}", properties.major * 10 + properties.minor,
                properties.multi_processor_count)


def device_kind(arch: Arch) -> str:
    """The device part of jitdtypes' kernel key on a GPU of this arch (engine.device_kind)."""
    return f"cuda-sm{arch.capability}"


# -- representative calls per family ------------------------------------------------------------------------

WIDTH, STORE_WIDTH, FILL, GEMM = "width", "store width", "fill", "gemm"


class Case(NamedTuple):
    """One call of a module's `run`, and the criteria benchmarks/aot_check holds the kernels it launches to:
    WIDTH (global loads of interleaved contiguous operands at MIN_ACCESS_BITS or more), STORE_WIDTH (stores too:
    outputs with many elements), FILL (FILL_PER_SM x SM count programs), GEMM (tensor-core code as the issue asks per arch).
    only: the kernels some criteria apply to, {criterion: kernel names} (all kernels when absent): STORE_WIDTH
    judges the kernels that write the outputs (a workspace of one fp32 value per program is not an operand),
    GEMM the one that multiplies. subset: part of aot_check --subset."""

    label: str
    args: tuple
    judge: frozenset = frozenset()
    only: dict = {}
    subset: bool = True

    def judged(self, kernel_name: str) -> list[str]:
        return sorted(c for c in self.judge if kernel_name in self.only.get(c, (kernel_name,)))


def _complex(shape, dtype: str) -> torch.Tensor:
    t = torch.empty(shape, dtype=dtypes.COMPLEX_BY_NAME[dtype])
    torch.view_as_real(t).zero_()  # zeros() has no CPU kernel for bcomplex32 in torch itself
    return t


def _real(shape, dtype: str) -> torch.Tensor:
    return torch.view_as_real(_complex(shape, dtype))[..., 0].contiguous()


STRIDED_SAMPLES = ("exp", "mul", "where")  # ops whose kernels are also compiled for transposed inputs


class Sizes(NamedTuple):
    """The sizes the cases use. Triton specializes every integer argument on whether it is divisible by 16 (or
    is 1), so ALIGNED (every size and stride a multiple of 16) and ODD (none is, apart from unit strides) are
    different compilations of the same launches."""

    side: int  # of square operands
    count: int  # elements of 1-D operands
    big_count: int | None  # a second, larger 1-D reduction (None: skipped)
    gemm: int  # M = K = N of the large products
    batch: int
    batch_side: int  # M = K = N of the batched product
    row_delta: int  # added to the FFT row count


ALIGNED = Sizes(side=1024, count=MILLION, big_count=16 * MILLION, gemm=4096, batch=16, batch_side=512, row_delta=0)
ODD = Sizes(side=999, count=MILLION - 1, big_count=None, gemm=999, batch=3, batch_side=199, row_delta=-1)


def _count(n: int) -> str:
    return f"{n // MILLION}M" if n % MILLION == 0 else f"{n:,}"


def elementwise_cases(family, params: dict, run, sizes: Sizes = ALIGNED) -> list[Case]:
    """Arguments follow `run`'s signature: floats for scalars, bool `condition`, part tensors for planar
    operands (NAME_re, NAME_im) and real results, complex tensors otherwise."""
    planar = params["layout"] == "planar"
    real_result = family.FAMILY == "unary" and params["op"] in family.REAL_RESULT

    def arguments(shape, transpose_inputs=False):
        args = []
        for name, parameter in inspect.signature(run).parameters.items():
            if parameter.annotation in (float, "float"):
                args.append(0.5)
                continue
            output = name.startswith("out")
            if name == "condition":
                t = torch.zeros(shape, dtype=torch.bool)
            elif name.endswith(("_re", "_im")) or (output and real_result):
                t = _real(shape, params["dtype"])
            else:
                t = _complex(shape, params["dtype"])
            args.append(t.t() if transpose_inputs and not output else t)
        return tuple(args)

    judge = frozenset() if planar else frozenset({WIDTH, STORE_WIDTH})
    square = (sizes.side, sizes.side)
    cases = [Case(f"{sizes.side}x{sizes.side}", arguments(square), judge)]
    if params["op"] in STRIDED_SAMPLES and not planar and not params["scalars"]:
        cases.append(Case(f"{sizes.side}x{sizes.side}, inputs transposed", arguments(square, transpose_inputs=True),
                          subset=False))
    return cases


def reduction_cases(family, params: dict, run, sizes: Sizes = ALIGNED) -> list[Case]:
    dtype, op = params["dtype"], params["op"]
    scalars = [1.0] if op in family.VARIANCE_OPS else [3.0] if params.get("ord") == "p" else []

    def call(x, dims):
        shape = [n for d, n in enumerate(x.shape) if d not in dims]
        outs = [_complex(shape, dtype) if op in family.COMPLEX_RESULT_OPS else _real(shape, dtype)]
        if op.endswith("_mean"):
            outs.append(_complex(shape, dtype))
        return (x, dims, *scalars, *outs)

    square, side = _complex((sizes.side, sizes.side), dtype), f"{sizes.side}x{sizes.side}"
    cases = [Case(f"full {_count(sizes.count)}", call(_complex((sizes.count,), dtype), [0]), frozenset({WIDTH, FILL}))]
    if sizes.big_count:
        cases.append(Case(f"full {_count(sizes.big_count)}", call(_complex((sizes.big_count,), dtype), [0]),
                          frozenset({WIDTH, FILL}), subset=False))
    return cases + [
        Case(f"inner dim of {side}", call(square, [1]), frozenset({WIDTH, FILL})),
        Case(f"outer dim of {side}", call(square, [0]), frozenset({WIDTH, STORE_WIDTH, FILL}),
             {STORE_WIDTH: ("_finish_kernel",)}),
        Case(f"inner dim of {side} transposed", call(square.t(), [1]), subset=False),
    ]


def scan_cases(family, params: dict, run, sizes: Sizes = ALIGNED) -> list[Case]:
    dtype = params["dtype"]
    square, side = _complex((sizes.side, sizes.side), dtype), f"{sizes.side}x{sizes.side}"
    judged = frozenset({WIDTH, STORE_WIDTH, FILL})
    writer = {STORE_WIDTH: ("_scan_kernel",)}
    return [
        Case(f"1-D {_count(sizes.count)}", (_complex((sizes.count,), dtype), 0, _complex((sizes.count,), dtype)),
             judged, writer),
        Case(f"dim 0 of {side}", (square, 0, torch.empty_like(square)), judged, writer),
        Case(f"dim 1 of {side}", (square, 1, torch.empty_like(square)), frozenset({WIDTH, STORE_WIDTH})),
        Case(f"dim 1 of {side} transposed", (square.t(), 1, torch.empty_like(square)), subset=False),
    ]


def matmul_cases(family, params: dict, run, sizes: Sizes = ALIGNED) -> list[Case]:
    dtype = params["dtype"]

    def product(batch, m, k, n, *, bias=False, alpha=1.0, beta=0.0, transpose_a=False):
        a = _complex((batch, k, m), dtype).transpose(1, 2) if transpose_a else _complex((batch, m, k), dtype)
        addend = _complex((batch, m, n), dtype) if bias else None
        alpha, beta = complex(alpha), complex(beta)
        return (a, _complex((batch, k, n), dtype), _complex((batch, m, n), dtype), addend,
                alpha.real, alpha.imag, beta.real, beta.imag)

    gemm, multiplier = frozenset({GEMM}), {GEMM: ("complex_matmul_kernel",)}
    g, b, s = sizes.gemm, sizes.batch_side, sizes.side
    return [
        Case(f"mm {g}^3", product(1, g, g, g), gemm, multiplier),
        Case(f"addmm {g}^3, complex alpha and beta", product(1, g, g, g, bias=True, alpha=0.5 + 1j, beta=2j), gemm,
             multiplier, subset=False),
        Case(f"bmm {sizes.batch}x{b}^3", product(sizes.batch, b, b, b), gemm, multiplier, subset=False),
        Case(f"mm {s}^3, A transposed", product(1, s, s, s, transpose_a=True), subset=False),
        Case(f"mv {g}x{g}", product(1, g, g, 1), subset=False),
        Case(f"dot {_count(sizes.count)}", product(1, 1, sizes.count, 1)),
    ]


def fft_cases(family, params: dict, run, sizes: Sizes = ALIGNED) -> list[Case]:
    """Contiguous rows. Rows of n/2 + 1 elements (r2c's one-sided output, c2r's input) start at odd element
    offsets every other row: no access wider than one element (32 bits) fits them, so those are not judged."""
    dtype, op, n = params["dtype"], params["op"], params["n"]
    rows = max(8, MILLION // n) + sizes.row_delta
    if op == "fft_c2c":
        return [Case(f"{rows} rows", (_complex((rows, 1, n), dtype), _complex((rows, 1, n), dtype), 1.0),
                     frozenset({WIDTH, STORE_WIDTH}))]
    if op == "fft_r2c":
        x = _real((rows, 1, n), dtype)
        return [Case(f"{rows} rows, one-sided", (x, _complex((rows, 1, n // 2 + 1), dtype), 1.0), frozenset({WIDTH})),
                Case(f"{rows} rows, two-sided", (x, _complex((rows, 1, n), dtype), 1.0),
                     frozenset({WIDTH, STORE_WIDTH}), subset=False)]
    return [Case(f"{rows} rows", (_complex((rows, 1, n // 2 + 1), dtype), _real((rows, 1, n), dtype), 1.0),
                 frozenset({STORE_WIDTH}))]


CASES = {
    "unary": elementwise_cases, "binary": elementwise_cases, "ternary": elementwise_cases,
    "reductions": reduction_cases, "scans": scan_cases, "matmul": matmul_cases, "fft": fft_cases,
}


def families() -> dict:
    """Every family module of kernels_templates (a module that declares FAMILY), by family name."""
    found = {}
    for info in pkgutil.iter_modules(kernels_templates.__path__):
        module = importlib.import_module(f"kernels_templates.{info.name}")
        if hasattr(module, "FAMILY"):
            found[module.FAMILY] = module
    return found


# -- recording launches -------------------------------------------------------------------------------------

class Launch(NamedTuple):
    kernel: object  # the JITFunction
    grid: tuple
    signature: dict
    constexprs: dict
    attrs: dict
    options: object  # the backend's options (num_warps, num_stages, ...)

    def key(self) -> str:
        return repr((self.kernel.cache_key, sorted(self.signature.items()), sorted(self.constexprs.items()),
                     sorted(self.attrs.items()), sorted(self.options.__dict__.items())))


def gpu_target(arch: Arch):
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", arch.capability, 32)


@contextlib.contextmanager
def recording(arch: Arch):
    """Launches inside the block are recorded, not run, specialized for `arch` as JITFunction.run specializes
    them (an autotuned kernel's launch records one launch per config: each must compile); torch.cuda's device
    queries answer for `arch`."""
    from triton.compiler import make_backend
    from triton.runtime.autotuner import Autotuner
    from triton.runtime.jit import JITFunction, create_function_from_signature

    backend = make_backend(gpu_target(arch))
    launches: list[Launch] = []

    def record(kernel, *args, grid, warmup, **kwargs):
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        bound_args, specialization, options = binder(*args, **kwargs)
        options, signature, constexprs, attrs = kernel._pack_args(backend, kwargs, bound_args, specialization,
                                                                   options)
        grid = grid(bound_args) if callable(grid) else grid
        launches.append(Launch(kernel, tuple(int(g) for g in grid), signature, constexprs, attrs, options))

    def record_configs(tuner, *args, grid, warmup, **kwargs):
        for config in tuner.configs:
            tuner.fn.run(*args, grid=grid, warmup=warmup, **kwargs, **config.all_kwargs())

    properties = types.SimpleNamespace(multi_processor_count=arch.sm_count, name=arch.name,
                                       major=arch.capability // 10, minor=arch.capability % 10)
    patches = [
        (JITFunction, "run", record),
        (Autotuner, "run", record_configs),
        (torch.cuda, "get_device_properties", lambda device=None: properties),
        (torch.cuda, "get_device_capability", lambda device=None: (properties.major, properties.minor)),
    ]
    saved = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        yield launches
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


# -- compiling --------------------------------------------------------------------------------------------

def compile_launch(launch: Launch, arch: Arch):
    """triton.compile for `arch`: the CompiledKernel, read from or written to Triton's cache."""
    import triton
    from triton.compiler import ASTSource

    source = ASTSource(launch.kernel, launch.signature, launch.constexprs, launch.attrs)
    return triton.compile(source, target=gpu_target(arch), options=launch.options.__dict__)


_pending: list = []


def _run_pending(i: int):
    work, launch, arch = _pending[i]
    return work(launch, arch)


def map_launches(work, launches: list[Launch], arch: Arch, jobs: int) -> list:
    """[work(launch, arch) for each launch], in `jobs` forked processes (they inherit the rendered modules
    and the recorded launches, which do not pickle); `work` returns something that pickles."""
    _pending[:] = [(work, launch, arch) for launch in launches]
    try:
        if jobs <= 1 or len(launches) <= 1:
            return [_run_pending(i) for i in range(len(launches))]
        with multiprocessing.get_context("fork").Pool(min(jobs, len(launches))) as pool:
            return pool.map(_run_pending, range(len(launches)), chunksize=1)
    finally:
        _pending.clear()
