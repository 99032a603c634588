"""The Python that routing generates per schema: the dispatch guard and the router's specialization key.

Both are written as source for the schema at hand, because a generic loop over arguments costs a measurable
fraction of a microsecond on every call of every dtype. Overloads whose schemas have the same shape share one
compiled source; each function names its own file, `<jitdtypes guard of aten::exp>`, whose text is pinned in
linecache (generated_code), so that a traceback through a guard shows its lines.
"""

from __future__ import annotations

import torch

from .. import generated_code
from ..schema import OPTIONAL_TENSOR, OTHER, TENSOR, TENSOR_LIST, Overload

Tensor = torch.Tensor


def guard_function(info: Overload, namespace: dict):
    """The guard of `info`, its globals `namespace` (what the source below calls: KEYSET, targets,
    call_native, route, general, ...)."""
    source = guard_source(info)
    exec(_compiled(source), namespace)
    return generated_code.renamed(namespace["kernel"], source, f"<jitdtypes guard of {info.full_name}>",
                                  f"jitdtypes_{info.short_name.replace('.', '_')}")


def key_function(info: Overload):
    """key(args, kwargs) for routed calls of `info`: the positions and keywords whose value kinds change what a
    routed call does (router.py's docstring). Other arguments (ints, int lists, strings) pass through unchanged
    and stay out of the key."""
    namespace = {"kind": _kind, "Tensor": Tensor, "PLAIN": _PLAIN}
    source = key_source(info)
    exec(_compiled(source), namespace)
    return generated_code.renamed(namespace["key"], source, f"<jitdtypes specialization key of {info.full_name}>",
                                  "key")


_code: dict[str, object] = {}


def _compiled(source: str):
    # overloads with the same schema shape share one source: compiled once (import time)
    code = _code.get(source)
    if code is None:
        code = _code[source] = compile(source, "<jitdtypes routing>", "exec")
    return code


# -- the guard ----------------------------------------------------------------------------------------------


def _required(info: Overload) -> int:
    positional, required = info.positional, 0
    while required < len(positional) and not positional[required].has_default:
        required += 1
    return required


def guard_source(info: Overload) -> str:
    """A kernel whose signature mirrors the schema: required positional arguments by name (the dispatcher
    always passes them), trailing defaulted ones in *rest, keyword-only ones in **kwargs; each part only
    when the schema has it, since every generic parameter costs time on every call."""
    positional = info.positional
    required = _required(info)
    names = [f"p{i}" for i in range(required)]
    has_rest, has_kwargs = required < len(positional), bool(info.keyword)
    tail = (["*rest"] if has_rest else []) + (["**kwargs"] if has_kwargs else [])
    parameters = ", ".join(names + tail)
    call_args = ", ".join(["KEYSET", *names] + tail)
    as_tuple = "(" + "".join(f"{n}, " for n in names) + ")" + (" + rest" if has_rest else "")
    slow_args = f"KEYSET, {as_tuple}, {'kwargs' if has_kwargs else 'NO_KWARGS'}"
    lines = [f"def kernel({parameters}):"]
    values = names + [f"rest[{i}]" for i in range(len(positional) - required)]
    binary = _binary_tensor_positions(info, required)

    def check(value: str, indent: str, arg) -> list[str]:
        if arg.kind in (TENSOR, OPTIONAL_TENSOR):
            number = [f"{indent}    return general({slow_args})"]
            if binary and value in (values[binary[0]], values[binary[1]]):
                number = _exact_number_lines(info, values, binary, value, indent + "    ") + number
            guard = [
                f"{indent}if {value}.__class__ is not Tensor:",
                *number,
                f"{indent}if {value}.dtype in targets:",
                f"{indent}    return route({slow_args})",
            ]
            if arg.kind == OPTIONAL_TENSOR:
                return [f"{indent}if {value} is not None:"] + ["    " + line for line in guard]
            return guard
        if arg.real_type == "number":  # a complex Python scalar makes a real 16-bit tensor's result complex
            return [f"{indent}if {value}.__class__ is complex:", f"{indent}    return general({slow_args})"]
        if arg.kind == TENSOR_LIST:
            return [
                f"{indent}for a in {value}:",
                f"{indent}    if a is not None and a.dtype in targets:",
                f"{indent}        return route({slow_args})",
            ]
        return []

    for index, arg in enumerate(positional):
        if index < required:
            lines += check(names[index], "    ", arg)
        else:
            body = check(f"rest[{index - required}]", "        ", arg)
            if body:
                lines += [f"    if len(rest) > {index - required}:"] + body
    for arg in info.keyword:
        if arg.kind in (TENSOR, OPTIONAL_TENSOR):
            lines += [
                f"    a = kwargs.get({arg.name!r})",
                "    if a is not None and a.dtype in targets:",
                f"        return route({slow_args})",
            ]
        elif arg.name == "dtype" and arg.real_type == "Optional[ScalarType]":
            lines += ["    if kwargs.get('dtype') in targets:", f"        return route({slow_args})"]
    lines.append(f"    return call_native({call_args})")
    return "\n".join(lines) + "\n"


def _binary_tensor_positions(info: Overload, required: int) -> tuple[int, int] | None:
    """The two Tensor positions of a binary-like schema (add, mul, div, where, eq ...), where a Python number
    in either is checked inline; None for other schemas, whose numbers take the general path."""
    tensors = [i for i, a in enumerate(info.positional) if a.kind in (TENSOR, OPTIONAL_TENSOR, TENSOR_LIST)]
    if len(tensors) != 2 or tensors[1] >= required or any(info.positional[i].kind != TENSOR for i in tensors):
        return None
    if any(a.kind != OTHER or a.name == "dtype" for a in info.keyword):
        return None
    return tensors[0], tensors[1]


def _exact_number_lines(info: Overload, values: list[str], binary: tuple[int, int], number: str,
                        indent: str) -> list[str]:
    """`number` (a value in one of the two Tensor positions, not a Tensor) next to the other Tensor position:
    when it is a real Python number of a category no higher than that tensor's, and no Scalar argument is
    complex, call the original with an exact zero-dim tensor for it: its own dtype next to a dimensioned
    tensor (no promotion), the tensor's dtype next to a zero-dim one whose dtype kernels compute in."""
    first, second = (values[i] for i in binary)
    other = second if number == first else first
    conditions = [f"NUMBER_CATEGORY.get({number}.__class__, 9) <= CATEGORY[{other}.dtype]"]
    if number == first:  # the other tensor is not checked yet
        conditions = [f"{other}.__class__ is Tensor", f"{other}.dtype not in targets", *conditions]
    for i, arg in enumerate(info.positional):
        if arg.real_type == "number":
            value = values[i]
            rest_index = value[len("rest["):-1] if value.startswith("rest[") else None
            present = f"len(rest) <= {rest_index} or " if rest_index is not None else ""
            conditions.append(f"({present}{value}.__class__ is not complex)")
    has_rest = len(values) > len([v for v in values if not v.startswith("rest[")])
    head = [v for v in values if not v.startswith("rest[")]

    def call(replacement: str) -> str:
        args = ", ".join(["KEYSET", *(replacement if v == number else v for v in head)] + (["*rest"] if has_rest else []))
        return f"call_native({args}, **kwargs)" if info.keyword else f"call_native({args})"

    if number not in head:
        return []
    return [
        f"{indent}if {' and '.join(conditions)}:",
        f"{indent}    if {other}.ndim or {other}.dtype in ZERO_DIM_EXACT:",
        f"{indent}        return {call(f'operand_for({number}, {other}.dtype)')}",
    ]


# -- the specialization key ---------------------------------------------------------------------------------


def key_source(info: Overload) -> str:
    required = _required(info)
    lines, parts = ["def key(args, kwargs):"], ["len(args)", "*kwargs"]
    # trailing defaulted positional arguments may be missing; a missing keyword reads as None (the keywords
    # given are part of the key)
    described = [f"args[{i}]" if i < required else f"(args[{i}] if len(args) > {i} else None)"
                 for i, arg in enumerate(info.positional) if _described(arg)]
    described += [f"kwargs.get({arg.name!r})" for arg in info.keyword if _described(arg)]
    for n, value in enumerate(described):
        # plain tensors and Python numbers inline (a call per argument costs more than the tests)
        lines += [f"    a = {value}", "    c = a.__class__",
                  f"    k{n} = (a.dtype, a.is_conj(), a.is_neg(), not a.ndim) if c is Tensor else "
                  "c if c in PLAIN else kind(a)"]
        parts.append(f"k{n}")
    # unpacking an empty kwargs costs more than the test (most calls pass no keywords)
    without_keywords = [part for part in parts if part != "*kwargs"]
    lines.append(f"    return ({', '.join(parts)},) if kwargs else ({', '.join(without_keywords)},)")
    return "\n".join(lines) + "\n"


def _described(arg) -> bool:
    return arg.kind in (TENSOR, OPTIONAL_TENSOR) or arg.real_type in ("number", "ScalarType", "Optional[ScalarType]")


_PLAIN = frozenset({int, float, complex, bool, type(None)})


def _kind(value):
    if isinstance(value, Tensor):
        return value.dtype, value.is_conj(), value.is_neg(), not value.ndim
    if value.__class__ is torch.dtype:
        return value
    return value.__class__
