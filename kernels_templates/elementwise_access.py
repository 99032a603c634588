"""The parts of every elementwise kernel that no op or dtype changes, as @triton.jit functions rendered modules
import: where a program's block lies in the collapsed shape, and the loads and stores of one operand.

Each operand is either dense in the iteration order (DENSE, a constexpr the launcher decides: addressed by the
flat index alone) or read through its own strides at the offset `strided_offset` gives, which the compiler drops
where DENSE leaves it unused. Interleaved operands that are dense move as one contiguous run of 2 * BLOCK parts,
split in registers: the compiler turns that into 128-bit accesses, where separate re and im accesses at 2 * i and
2 * i + 1 compile to 16-bit ones.
"""

import triton
import triton.language as tl

__all__ = ["block_coordinates", "strided_offset", "load_pair", "load_part", "store_pair", "store_part"]


@triton.jit
def block_coordinates(numel, n1, n2, n3, BLOCK: tl.constexpr, WIDE: tl.constexpr):
    # (first, index, mask, c0, c1, c2, c3): the block's first flat index, its flat indices, which of them exist,
    # and their row-major coordinates in the collapsed shape, whose unused inner dims have size 1 (constants to
    # Triton). WIDE: offsets can pass 2^31, so the indices are int64.
    pid = tl.program_id(0)
    if WIDE:
        first = pid.to(tl.int64) * BLOCK
    else:
        first = pid * BLOCK
    index = first + tl.arange(0, BLOCK)
    c3 = index % n3
    rest = index // n3
    c2 = rest % n2
    rest = rest // n2
    c1 = rest % n1
    c0 = rest // n1
    return first, index, index < numel, c0, c1, c2, c3


@triton.jit
def strided_offset(c0, c1, c2, c3, s0, s1, s2, s3):
    return c0 * s0 + c1 * s1 + c2 * s2 + c3 * s3


@triton.jit
def load_pair(ptr, first, numel, offset, mask, DENSE: tl.constexpr, BLOCK: tl.constexpr):
    # (re, im) in fp32 of an interleaved complex operand.
    if DENSE:
        parts = 2 * first + tl.arange(0, 2 * BLOCK)
        re, im = tl.split(tl.reshape(tl.load(ptr + parts, mask=parts < 2 * numel), [BLOCK, 2]))
    else:
        re = tl.load(ptr + 2 * offset, mask=mask)
        im = tl.load(ptr + 2 * offset + 1, mask=mask)
    return re.to(tl.float32), im.to(tl.float32)


@triton.jit
def load_part(ptr, index, offset, mask, DENSE: tl.constexpr):
    # One value per element, as stored: a planar part, a real result, a bool condition.
    if DENSE:
        value = tl.load(ptr + index, mask=mask)
    else:
        value = tl.load(ptr + offset, mask=mask)
    return value


@triton.jit
def store_pair(ptr, first, numel, offset, mask, re, im, DENSE: tl.constexpr, BLOCK: tl.constexpr):
    # re, im already in the part dtype.
    if DENSE:
        parts = 2 * first + tl.arange(0, 2 * BLOCK)
        tl.store(ptr + parts, tl.reshape(tl.join(re, im), [2 * BLOCK]), mask=parts < 2 * numel)
    else:
        tl.store(ptr + 2 * offset, re, mask=mask)
        tl.store(ptr + 2 * offset + 1, im, mask=mask)


@triton.jit
def store_part(ptr, index, offset, mask, value, DENSE: tl.constexpr):
    if DENSE:
        tl.store(ptr + index, value, mask=mask)
    else:
        tl.store(ptr + offset, value, mask=mask)
