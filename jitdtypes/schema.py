"""What jitdtypes needs to know about an ATen overload, read once from its schema, and how ATen treats the
tensors an out= overload writes (`resize_output`)."""

from __future__ import annotations

import dataclasses
import functools
import warnings

import torch

TENSOR, OPTIONAL_TENSOR, TENSOR_LIST, OTHER = "tensor", "optional_tensor", "tensor_list", "other"

_KIND_BY_TYPE = {
    "Tensor": TENSOR,
    "Optional[Tensor]": OPTIONAL_TENSOR,
    "List[Tensor]": TENSOR_LIST,
    "List[Optional[Tensor]]": TENSOR_LIST,
}


@dataclasses.dataclass(frozen=True)
class Arg:
    name: str
    kind: str
    real_type: str
    kwarg_only: bool
    is_write: bool
    has_default: bool
    default: object
    fixed_length: int | None  # int[2] -> 2


@dataclasses.dataclass(frozen=True)
class Overload:
    """An overload's schema as jitdtypes reads it. Derived attributes are computed once: a routed call reads
    them, and a property would cost a call each time."""

    qualname: str  # "aten::exp"
    overload: str  # "" for the default overload
    args: tuple[Arg, ...]
    returns_alias_input: bool  # the op returns a (possibly mutated) input or a view of one
    mutates: bool

    @functools.cached_property
    def full_name(self) -> str:
        return f"{self.qualname}.{self.overload}" if self.overload else self.qualname

    @functools.cached_property
    def short_name(self) -> str:
        return self.full_name.removeprefix("aten::")

    @functools.cached_property
    def overload_packet(self):
        namespace, name = self.qualname.split("::")
        return getattr(getattr(torch.ops, namespace), name)

    @functools.cached_property
    def op(self) -> torch._ops.OpOverload:
        return getattr(self.overload_packet, self.overload or "default")

    @functools.cached_property
    def positional(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if not a.kwarg_only)

    @functools.cached_property
    def keyword(self) -> tuple[Arg, ...]:
        return tuple(a for a in self.args if a.kwarg_only)

    @functools.cached_property
    def has_dtype_arg(self) -> bool:
        return any(a.real_type == "Optional[ScalarType]" and a.name == "dtype" for a in self.args)

    @functools.cached_property
    def is_view(self) -> bool:
        return self.returns_alias_input and not self.mutates


def split_name(full_name: str) -> tuple[str, str]:
    """'aten::add.Tensor' -> ('aten::add', 'Tensor'); 'exp' -> ('aten::exp', '')."""
    if "::" not in full_name:
        full_name = "aten::" + full_name
    qualname, _, overload = full_name.partition(".")
    return qualname, overload


@functools.lru_cache(maxsize=None)
def overload(full_name: str) -> Overload:
    qualname, overload = split_name(full_name)
    schema = torch._C._get_schema(qualname, overload)
    args = tuple(
        Arg(
            name=a.name,
            kind=_KIND_BY_TYPE.get(str(a.type), OTHER),
            real_type=str(a.real_type),
            kwarg_only=a.kwarg_only,
            is_write=bool(a.alias_info and a.alias_info.is_write),
            has_default=a.has_default_value(),
            default=a.default_value if a.has_default_value() else None,
            fixed_length=a.N,
        )
        for a in schema.arguments
    )
    return Overload(
        qualname=qualname,
        overload=overload,
        args=args,
        returns_alias_input=any(r.alias_info is not None for r in schema.returns),
        mutates=any(a.is_write for a in args),
    )


def all_aten_overloads() -> list[str]:
    return sorted(n for n in torch._C._dispatch_get_all_op_names() if n.startswith("aten::"))


def resize_output(out: torch.Tensor, shape) -> None:
    """ATen's resize_output (aten::_resize_output_ has only a Meta kernel): leave a right-shaped out= tensor
    alone, otherwise warn if it held elements, then resize it in place."""
    if out.shape == shape:  # the common call: no torch.Size built
        return
    shape = torch.Size(shape)
    if out.numel():
        warnings.warn(
            f"An output with one or more elements was resized since it had shape {list(out.shape)}, which does "
            f"not match the required output shape {list(shape)}. This behavior is deprecated, and in a future "
            "PyTorch release outputs will not be resized unless they have zero elements. You can explicitly "
            "reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0).",
            UserWarning,
        )
    out.resize_(shape)
