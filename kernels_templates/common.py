"""What every template family shares: dtype names, rendering, loading rendered source, stride helpers.

A family file (one per op family, e.g. unary.py) provides:

    FAMILY: str                                  # "unary"
    def variants(dtype: str) -> list[dict]       # every parameter set worth pre-generating for a dtype
    def render(params: dict) -> str              # complete Python module source for one parameter set
    ATEN: dict[str, Adapter]                     # "aten::exp" -> adapter (see below)

Every params dict holds at least "op" (e.g. "exp") and "dtype" ("complex32" or "bcomplex32"), plus
"interpret" (bool: rendered for Triton's CPU interpreter, which cannot run tl.dot on bf16 tiles).
Values must be JSON-serializable: the engine hashes them into the cache key.

A rendered module reads top-down: @triton.jit kernel(s) -> host launcher -> torch-facing `run(...)`,
annotated with torch types (torch.library.triton_op infers the custom-op schema from them), launching
through torch.library.wrap_triton, and declares MUTATES: tuple[str, ...] (names of arguments `run` writes).
It computes in fp32 and rounds once on store. Kernels and launchers that do not vary per variant are real
modules the rendered text imports and binds to the params (matmul_kernels.py, fft_kernels.py,
reduction_kernels.py, scan_kernels.py): text is generated only for what truly varies (docs/ARCHITECTURE.md).

An adapter maps one ATen overload call to a kernel:

    def adapter(load, args: tuple, kwargs: dict, device_type: str):
        ... return NotImplemented  # this call's arguments are not covered: the upcast path takes it
        run = load(params_dict)    # the engine renders/caches/loads and returns the callable custom op
        run = load(params_dict, key)  # the same, where `key` (hashable) always stands for these params:
                                      # found again without building the params' canonical form
        return run(...)

Adapters receive the arguments exactly as the dispatcher passes them to a Python kernel (trailing
defaults may be missing; Python numbers may stand where the schema says Tensor).

Every adapter also offers a plan, which the engine asks once per kind of call (the router's specialization
key, jitdtypes/routing/router.py: each argument's tensor dtype and conj/neg/zero-dim flags, or its Python
type, the keywords given, the number of positional arguments) and whose result serves every later call of that
kind:

    adapter.plan(load, args, kwargs, device_type) -> None  # every call of this kind is declined
                                                  -> planned(args, kwargs) -> result or NotImplemented

so checks of kinds and the kernel lookup happen once, checks of values (devices, shapes) per call. The callable
`load` returns carries its rendered module as `.module`, for a plan that launches the module's kernel itself.
Plans whose work depends on values (dims, shapes) keep it per value signature in a `Memo`; the modules of those
families offer a prepared launch (reductions and scans `prepared_launch`, matmul `prepared_thin`, fft
`prepared_rows`): the module's launch for tensors of one shape and layout, with everything but the pointers
computed when it is prepared.
"""

from __future__ import annotations

import functools
import string
import types

import torch

from jitdtypes import dtypes, generated_code


def tl_part_dtype(dtype: str) -> str:
    """The Triton spelling of a 16-bit complex dtype's part dtype, for rendered kernels: "tl.float16"."""
    return "tl." + str(dtypes.PART_BY_NAME[dtype]).removeprefix("torch.")


def render(template: str, **params) -> str:
    """string.Template substitution ($name); a missing parameter is an error, not an empty string."""
    return string.Template(template).substitute(**params)


def exec_source(source: str, module_name: str, *, filename: str | None = None) -> types.ModuleType:
    """Execute rendered source as a fresh module (not inserted into sys.modules).

    Compiled (non-interpreted) @triton.jit functions read their own source back, so `filename` must name a
    file holding `source`. Whether kernels run in Triton's CPU interpreter is decided process-wide by
    TRITON_INTERPRET when triton is first imported (its standard library is decorated then)."""
    module = types.ModuleType(module_name)
    module.__file__ = filename or f"<{module_name}>"
    # inspect.getsource (Triton's JIT) must see the text that was verified and compiled, not whatever the file
    # holds later
    exec(generated_code.compile_pinned(source, module.__file__), module.__dict__)
    return module


def broadcast_shape(*shapes):
    """torch.broadcast_shapes without its cost (it runs torch._refs' Python) when the shapes are equal, as in
    most calls."""
    first = shapes[0]
    for other in shapes[1:]:
        if other != first:
            return torch.broadcast_shapes(*shapes)
    return first


def cdiv(a: int, b: int) -> int:
    """triton.cdiv for host code: Triton 3.8 makes it a constexpr function, slow to call outside a kernel."""
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    """triton.next_power_of_2 for host code (see cdiv), with its results: 0 for n <= 0, else the smallest power
    of two >= n."""
    return 1 << (n - 1).bit_length() if n > 0 else 0


def dtype_name(t: torch.Tensor) -> str | None:
    return dtypes.complex_name(t.dtype)


def collapse_dims(shape, *stride_lists):
    """Merge adjacent dimensions that are contiguous with each other in every operand.

    Returns (shape, [strides, ...]) with at most as many dims as the input; size-1 dims are dropped.
    """
    dims = [(s, [st[i] for st in stride_lists]) for i, s in enumerate(shape) if s != 1]
    if not dims:
        return [1], [[0] for _ in stride_lists]
    merged = [dims[-1]]
    for size, strides in reversed(dims[:-1]):
        inner_size, inner_strides = merged[-1]
        if all(st == ist * inner_size for st, ist in zip(strides, inner_strides)):
            merged[-1] = (size * inner_size, inner_strides)
        else:
            merged.append((size, strides))
    merged.reverse()
    return [s for s, _ in merged], [[st[k] for _, st in merged] for k in range(len(stride_lists))]


@functools.lru_cache(maxsize=None)
def schema_arguments(name: str) -> tuple[tuple[str, bool, object], ...]:
    qualname, _, overload = name.partition(".")
    schema = torch._C._get_schema(qualname, overload)
    return tuple((a.name, a.kwarg_only, a.default_value if a.has_default_value() else None) for a in schema.arguments)


def bind(name: str, args: tuple, kwargs: dict) -> dict:
    """Every argument of a dispatcher call by name, defaults filled in."""
    arguments = schema_arguments(name)
    call = dict(zip((arg for arg, kwarg_only, _ in arguments if not kwarg_only), args))
    for arg, _, default in arguments:
        call.setdefault(arg, kwargs.get(arg, default))
    return call


def argument_reader(name: str, args: tuple, kwargs: dict, names: tuple[str, ...]):
    """read(args, kwargs) -> the values of the arguments `names` of overload `name`, for calls that pass their
    arguments as this one does: the same number of positional arguments and the same keywords (what the
    router's specialization key fixes, so a plan builds one reader). Defaults are filled in and lists become
    tuples, so that what is read can key a memo. Generated per call form, like that key: a loop costs more."""
    return _reader(name, len(args), tuple(kwargs), names, False)


def signature_reader(name: str, args: tuple, kwargs: dict, names: tuple[str, ...]):
    """read(args, kwargs) -> (the first of `names`, a tensor; the call's value signature: that tensor's shape,
    strides and device, then the values of the other names), as argument_reader reads them: what a plan's memo
    is keyed by, built in one generated expression."""
    return _reader(name, len(args), tuple(kwargs), names, True)


@functools.lru_cache(maxsize=None)
def _reader(name: str, positional: int, keywords: tuple, names: tuple, signature: bool):
    arguments = {arg: (index, kwarg_only, default)
                 for index, (arg, kwarg_only, default) in enumerate(schema_arguments(name))}
    values, namespace = [], {"frozen": _frozen}
    for n, wanted in enumerate(names):
        index, kwarg_only, default = arguments[wanted]
        if not kwarg_only and index < positional:
            value = f"args[{index}]"
        elif wanted in keywords:
            value = f"kwargs[{wanted!r}]"
        else:
            namespace[f"default{n}"] = default
            value = f"default{n}"
        values.append(f"frozen({value})" if _is_list(name, wanted) else value)
    if signature:
        body = (f"    first = {values[0]}\n"
                f"    return first, (first.shape, first.stride(), first.device, {''.join(v + ', ' for v in values[1:])})")
    else:
        body = f"    return ({', '.join(values)},)"
    filename = f"<jitdtypes argument reader of {name}: {', '.join(names)}{' (signature)' if signature else ''}>"
    exec(generated_code.compile_pinned(f"def read(args, kwargs):\n{body}\n", filename), namespace)
    return namespace["read"]


def _is_list(name: str, argument: str) -> bool:
    qualname, _, overload = name.partition(".")
    schema = torch._C._get_schema(qualname, overload)
    return any(a.name == argument and "[" in str(a.type) for a in schema.arguments)


def _frozen(value):
    return tuple(value) if value.__class__ is list else value


class Planned:
    """An adapter that is its plan: called as a plain adapter, it builds the plan for the call and uses it once."""

    def __call__(self, load, args, kwargs, device_type):
        planned = self.plan(load, args, kwargs, device_type)
        return NotImplemented if planned is None else planned(args, kwargs)


def adapter_name(overload: str) -> str:
    """"adapt_sum_dim_IntList" for "aten::sum.dim_IntList": the name an adapter shows in profiles and reprs."""
    return f"adapt_{overload.removeprefix('aten::').replace('.', '_')}"


DECLINED = object()  # what a Memo keeps for a signature whose calls its plan declines


class Memo(dict):
    """What a plan decided for each value signature of its calls (shapes, strides, dims...); a plan seeing this
    many signatures starts over: they come from the shapes a program uses, so reaching it means shapes that keep
    changing, where keeping them buys nothing."""

    LIMIT = 256

    def keep(self, key, value):
        """Keep `value` for `key` (DECLINED for None) and return what is kept."""
        if len(self) >= self.LIMIT:
            self.clear()
        self[key] = value = DECLINED if value is None else value
        return value


def plain_16bit_complex(t) -> str | None:
    """The dtype name of a 16-bit complex tensor whose values are its memory (no lazy conj/neg flag)."""
    if not isinstance(t, torch.Tensor) or t.is_conj() or t.is_neg():
        return None
    return dtype_name(t)


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def plain_self_call(name: str, args: tuple, kwargs: dict):
    """(bound call, self, self's dtype name) when self is a plain 16-bit complex tensor and any dtype=
    argument is self's own dtype; None otherwise (the adapter then declines)."""
    call = bind(name, args, kwargs)
    x = call["self"]
    dtype = plain_16bit_complex(x)
    if dtype is None or call.get("dtype") not in (None, x.dtype):
        return None
    return call, x, dtype
