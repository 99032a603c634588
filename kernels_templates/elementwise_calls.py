"""From ATen calls to elementwise kernels (unary.py, binary.py, ternary.py): one Adapter per overload.

An Adapter knows where the op's operand slots sit in the overload's arguments. Called as an adapter
(kernels_templates/common.py), it runs one call on a rendered interleaved kernel, or returns NotImplemented
unless the kernel covers the call. Its `plan` is that call split in two: what depends on the kinds of the
arguments (tensor or Python number, dtype, conj/neg flags, the out= tensor's dtype: the router's
specialization key) is checked once, and the kernel looked up once; what depends on their values (devices, shapes, layouts,
overlaps, numbers too large for a float) is checked per call. Contiguous operands of one shape, the common
call, then launch straight from the plan: the output is allocated, and the launch is the one the module's `run`
would make (elementwise._launch_contiguous), without the module's own checks. Other layouts (broadcast operands,
as in rotary embeddings, transposed or sliced ones) launch from the plan too, with the geometry the module's
`run` computes kept per layout (elementwise.strided_launch).
"""

from __future__ import annotations

import math
import operator

import torch

from jitdtypes import dtypes
from jitdtypes.schema import resize_output

from . import common, launcher
from .common import broadcast_shape
from .elementwise import (BOOL, COMPLEX, INTERLEAVED, SCALAR, broadcast_strides, contiguous_launch,
                          contiguous_strides, strided_launch)

NUMBER_TYPES = (bool, int, float, complex)


class Adapter(common.Planned):
    """One ATen overload of an elementwise op.

    slots: [(name, COMPLEX | SCALAR | BOOL)] of the op; values(args, kwargs): the values in those slots;
    written(args, kwargs): the tensor the overload writes (out=, or self in place), None for functional ones;
    inplace: the written tensor is self, whose shape must be the result's; declines(args, kwargs): True for calls
    no kernel computes, whatever their kinds (a division's rounding mode)."""

    def __init__(self, op: str, slots, values, *, result: str = COMPLEX, written=None, inplace: bool = False,
                 declines=None) -> None:
        self.op, self.slots, self.values, self.result = op, list(slots), values, result
        self.written, self.inplace, self.declines = written, inplace, declines

    def plan(self, load, args: tuple, kwargs: dict, device_type: str):
        """(args, kwargs) -> result or NotImplemented, for calls whose arguments are of the kinds these are;
        None when this adapter declines every such call."""
        kinds = _kinds(self, args, kwargs, device_type)
        if kinds is None:
            return None
        dtype, numbers, tensor_at, number_at = kinds
        writes = self.written is not None
        params = {"op": self.op, "dtype": dtype, "layout": INTERLEAVED, "out": writes, "scalars": numbers,
                  "interpret": device_type == "cpu"}
        run = load(params, (self.op, dtype, writes, *numbers))
        return _Plan(self, run, dtype, device_type, tensor_at, number_at)


_COPIES_FIRST = object()


def written_self(args, kwargs):
    return args[0]


def written_out(args, kwargs):
    return kwargs["out"]


def _kinds(adapter: Adapter, args, kwargs, device_type: str):
    """What an adapter decides from the arguments' kinds alone: (dtype name, names of the complex slots holding
    Python numbers, positions of tensor values, positions of number values), or None when it declines."""
    if device_type not in ("cuda", "cpu"):
        return None
    dtype, numbers, tensor_at, number_at = None, [], [], []
    for i, ((name, kind), value) in enumerate(zip(adapter.slots, adapter.values(args, kwargs))):
        if isinstance(value, torch.Tensor):
            if kind == SCALAR or (kind == BOOL and value.dtype != torch.bool):
                return None
            if kind == COMPLEX:
                name_of_dtype = common.plain_16bit_complex(value)
                if name_of_dtype is None or dtype not in (None, name_of_dtype):
                    return None
                dtype = name_of_dtype
            tensor_at.append(i)
        elif isinstance(value, NUMBER_TYPES) and kind != BOOL:
            if kind == COMPLEX:
                numbers.append(name)
            number_at.append(i)
        else:
            return None
    if dtype is None:
        return None
    if adapter.written is not None and not _writes_kind(adapter.written(args, kwargs), dtype, adapter.result):
        return None
    return dtype, numbers, tuple(tensor_at), tuple(number_at)


def _writes_kind(out, dtype: str, result: str) -> bool:
    wanted = dtypes.COMPLEX_BY_NAME[dtype] if result == COMPLEX else dtypes.PART_BY_NAME[dtype]
    return isinstance(out, torch.Tensor) and out.dtype == wanted and not out.is_conj() and not out.is_neg()


class _Plan:
    """An Adapter's call for one kind of arguments (Adapter.plan). Attributes are copied off the adapter and
    device checks read tensor flags (tensor.is_cuda) rather than device.type: this runs on every routed call."""

    def __init__(self, adapter: Adapter, run, dtype: str, device_type: str, tensor_at, number_at) -> None:
        self.values, self.written, self.inplace, self.declines = (adapter.values, adapter.written, adapter.inplace,
                                                                   adapter.declines)
        self.run, self.tensor_at, self.number_at = run, tensor_at, number_at
        self.pick_tensors, self.several = operator.itemgetter(*tensor_at), len(tensor_at) > 1
        self.number_slots = frozenset(number_at)
        self.on_device = operator.attrgetter("is_cuda" if device_type == "cuda" else "is_cpu")
        # the first complex tensor: the output is allocated like it
        self.like = next(n for n, i in enumerate(tensor_at) if adapter.slots[i][1] == COMPLEX)
        self.result_dtype = None if adapter.result == COMPLEX else dtypes.PART_BY_NAME[dtype]
        module = getattr(run, "module", None)  # what engine.load_kernel returns carries its module
        kernel = launcher.launcher(getattr(module, f"{adapter.op}_kernel")) if module is not None else None
        # interpreted kernels run one at a time through `run` (engine._one_at_a_time)
        self.kernel = kernel if kernel is not None and kernel.direct else None
        self.block = module.BLOCK if module is not None else None
        self.launches = common.Memo()  # numel -> _launch_contiguous's launch (elementwise.contiguous_launch)
        self.shapes = common.Memo()  # the operands' shapes -> the result's
        self.layouts = common.Memo()  # shapes and strides -> what _launch_strided keeps
        self.allocated_dtype = dtypes.COMPLEX_BY_NAME[dtype] if self.result_dtype is None else self.result_dtype

    def __call__(self, args: tuple, kwargs: dict):
        if self.declines is not None and self.declines(args, kwargs):
            return NotImplemented
        values = self.values(args, kwargs)
        picked = self.pick_tensors(values)
        tensors = list(picked) if self.several else [picked]
        scalars = []
        for i in self.number_at:
            try:
                number = complex(values[i])
            except OverflowError:
                return NotImplemented
            scalars += (number.real, number.imag)
        first = tensors[0]
        if not self.on_device(first):
            return NotImplemented
        device, shape = first.device, first.shape
        same_shape, contiguous = True, first.is_contiguous()
        if self.several:
            for t in tensors[1:]:
                if t.device != device:
                    return NotImplemented
                same_shape = same_shape and t.shape == shape
                contiguous = contiguous and t.is_contiguous()
        out = self.written(args, kwargs) if self.written is not None else None
        # Triton launches on the current CUDA device: another one's tensors go through `run`, which switches
        launchable = self.kernel is not None and not (first.is_cuda and device.index != torch.cuda.current_device())
        if out is None and launchable and not (contiguous and same_shape):
            return self._launch_strided(values, tensors, scalars, None)
        if not same_shape:
            shapes = tuple(t.shape for t in tensors)
            shape = self.shapes.get(shapes)
            if shape is None:
                try:
                    shape = self.shapes.keep(shapes, broadcast_shape(*shapes))  # computed once per operand shapes
                except RuntimeError:
                    return NotImplemented  # the fallback path raises ATen's own message
        if out is not None:
            if out.device != device or (self.inplace and out.shape != shape):
                return NotImplemented
            resize_output(out, shape)
            if not writable(out, tensors):
                return NotImplemented
        if not launchable:
            return self._through_run(values, scalars, out)
        if not (contiguous and same_shape and (out is None or out.is_contiguous())):
            return self._launch_strided(values, tensors, scalars, out)
        # empty_like: a contiguous tensor's layout, without parsing a shape (cheaper than empty), and
        # without a dtype where it is the operand's (cheaper again)
        like = tensors[self.like]
        result = (out if out is not None else torch.empty_like(like) if self.result_dtype is None
                  else torch.empty_like(like, dtype=self.result_dtype))
        numel = result.numel()
        if numel:
            tensors.append(result)
            launch = self.launches.get(numel)
            if launch is None:  # the same for every numel-element call of this plan's kinds
                launch = self.launches.keep(numel, contiguous_launch(self.block, numel, tensors, scalars))
            grid, key, constexprs, stride = launch
            launch_args = []
            for t in tensors:
                launch_args += (t, stride, 0, 0, 0)
            # routed calls hold real tensors: no wrap_triton (as the engine runs a module's `run`)
            self.kernel.launch_pointers(key, grid, (*launch_args, *scalars, numel, 1, 1, 1), constexprs, tensors, True)
        return result

    def _launch_strided(self, values, tensors, scalars, out):
        """Operands of other shapes or layouts (broadcast, transposed, sliced): the launch the module's `run`
        makes, its geometry kept per layout (elementwise.strided_launch); through `run` where that copies
        operands first (more dims than the kernel indexes). out, when given, has the result's shape."""
        layout = []
        for t in tensors:
            layout += (t.shape, t.stride())
        if out is not None:
            layout.append(out.stride())
        layout = tuple(layout)
        prepared = self.layouts.get(layout)
        if prepared is None:
            prepared = self.layouts.keep(layout, self._strided(tensors, scalars, out))
        if prepared.__class__ is not tuple:
            # DECLINED: operands that do not broadcast (the fallback path raises ATen's own message)
            return self._through_run(values, scalars, out) if prepared is _COPIES_FIRST else NotImplemented
        shape, grid, key, constexprs, operand_strides, inner_sizes, numel, like = prepared
        if out is not None:
            result = out
        elif like is None:
            result = torch.empty(shape, dtype=self.allocated_dtype, device=tensors[0].device)
        else:  # no shape to parse
            result = torch.empty_like(tensors[like], dtype=self.result_dtype, memory_format=torch.contiguous_format)
        if numel:
            tensors.append(result)
            launch_args = []
            for t, strides in zip(tensors, operand_strides):
                launch_args += (t, *strides)
            self.kernel.launch_pointers(key, grid, (*launch_args, *scalars, numel, *inner_sizes), constexprs, tensors,
                                        True)
        return result

    def _strided(self, tensors, scalars, out):
        """What _launch_strided keeps for one layout: the result's shape, strided_launch's launch, the element
        count, and which operand a fresh result can be allocated like (complex, of the result's shape, or None);
        None for operands that do not broadcast."""
        try:
            shape = tuple(broadcast_shape(*(t.shape for t in tensors)))
        except RuntimeError:
            return None
        numel = math.prod(shape)
        result_strides = contiguous_strides(shape) if out is None else out.stride()
        strides = [broadcast_strides(t.shape, t.stride(), shape) for t in tensors] + [list(result_strides)]
        parts = [2 if t.is_complex() else 1 for t in tensors] + [2 if self.result_dtype is None else 1]
        found = strided_launch(self.block, shape, numel, strides, parts, scalars)
        if found is None:
            return _COPIES_FIRST
        like = next((i for i, t in enumerate(tensors) if t.is_complex() and t.shape == shape), None)
        return (shape, *found, numel, like)

    def _through_run(self, values, scalars, out):
        numbers = iter(scalars)
        module_args = []
        for i, value in enumerate(values):
            module_args += (next(numbers), next(numbers)) if i in self.number_slots else (value,)
        if out is None:
            return self.run(*module_args)
        self.run(*module_args, out)
        return out


def writable(out: torch.Tensor, inputs) -> bool:
    """Whether a kernel may write `out` while reading `inputs`: no element of out is stored twice (expanded
    dims), and each input is out itself or shares none of its memory (ATen refuses partial overlaps)."""
    if not out.is_contiguous() and any(st == 0 and n > 1 for n, st in zip(out.shape, out.stride())):
        return False
    storage, out_span = out.untyped_storage().data_ptr(), None
    for t in inputs:
        if t.untyped_storage().data_ptr() != storage:
            continue  # other memory (ATen's overlap check compares storages first too)
        same_view = t.data_ptr() == out.data_ptr() and t.dtype == out.dtype and t.shape == out.shape
        if same_view and t.stride() == out.stride():
            continue
        out_span = out_span or _byte_span(out)
        span = _byte_span(t)
        if out_span and span and span[0] < out_span[1] and out_span[0] < span[1]:
            return False
    return True


def _byte_span(t: torch.Tensor):
    if t.numel() == 0:
        return None
    start = t.data_ptr()
    if t.is_contiguous():
        return start, start + t.numel() * t.element_size()
    return start, start + (sum((n - 1) * st for n, st in zip(t.shape, t.stride())) + 1) * t.element_size()
