"""16-bit complex storage <-> float32 (re, im) parts, written with ops that Inductor fuses.

A complex32/bcomplex32 element is 4 bytes: the real part's 16 bits in the low half of a little-endian 32-bit
word, the imaginary part's in the high half. Compiled code reads and writes whole int32 words, so every load
and store is contiguous, and does the arithmetic in float32.

Why words and not `view_as_real(x)[..., 0]`: Inductor's C++ backend stops vectorizing a loop once more than
12% of its loads/stores are strided (`KernelOpStats.OVERHEAD_RATIO_THRESHOLD`), and it never vectorizes
int16. A complex exp/div chain over interleaved halves then runs scalar: 48 ms against 24 ms with words
(256x4096 elements, 2 cores, docs/COMPILE.md). So on CPU the conversions below use only int32 and float32
operations; they are exact (the tests compare all 65536 half values and 22 million float32 bit patterns
with PyTorch's own conversions), including subnormals, infinities and NaN, and need no denormal arithmetic
(so they hold with torch.set_flush_denormal(True)). Triton has no such limits: on other devices int16
bitcasts do the same job in fewer instructions.
"""

from __future__ import annotations

import sys

import torch

from .. import dtypes

_INT32, _FLOAT32 = torch.int32, torch.float32
_LITTLE_ENDIAN = sys.byteorder == "little"


def supported(dtype: torch.dtype) -> bool:
    """Whether tensors of `dtype` can be read and written as words here (the layout assumes little endian)."""
    return _LITTLE_ENDIAN and dtype in dtypes.REAL_OF


def unpack(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 (re, im) of a complex32/bcomplex32 tensor of any strides, lazy conj/neg flags included."""
    conj, neg = x.is_conj(), x.is_neg()
    raw = x.conj() if conj else x  # strips the flag: a view of the same storage
    raw = torch._neg_view(raw) if neg else raw
    words = raw.view(_INT32)
    if x.dtype == torch.complex32:
        low, high = words & 0xFFFF, (words >> 16) & 0xFFFF
        to_float = _half_bits_to_float if x.device.type == "cpu" else _half_bits_to_float_bitcast
        re, im = to_float(low), to_float(high)
    else:  # bfloat16 is the top half of a float32: shifting the word is the conversion
        re, im = (words << 16).view(_FLOAT32), (words & -65536).view(_FLOAT32)
    if neg:
        re, im = -re, -im
    return re, (-im if conj else im)


def pack(re: torch.Tensor, im: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The complex32/bcomplex32 tensor with parts re, im (float32, same shape), rounded to nearest even."""
    if dtype == torch.complex32:
        to_bits = _float_to_half_bits if re.device.type == "cpu" else _float_to_half_bits_bitcast
    else:
        to_bits = _float_to_bfloat16_bits
    return (to_bits(re) | (to_bits(im) << 16)).view(dtype)


def _constant(like: torch.Tensor, value: int) -> torch.Tensor:
    # a zero-dim int32 operand: a bare Python int would promote the result of torch.where to int64
    return torch.scalar_tensor(value, dtype=_INT32, device=like.device)


def _half_bits_to_float(h: torch.Tensor) -> torch.Tensor:
    """int32 holding half bits -> float32, with int32/float32 ops only."""
    exponent_mantissa = (h & 0x7FFF) << 13
    normal = (exponent_mantissa + ((127 - 15) << 23)).view(_FLOAT32)  # rebias the exponent
    subnormal = (h & 0x3FF).to(_FLOAT32) * 2.0**-24  # exact: an integer times a power of two
    special = (exponent_mantissa | 0x7F800000).view(_FLOAT32)  # inf, NaN (payload kept)
    exponent = h & 0x7C00
    magnitude = torch.where(exponent == 0x7C00, special, torch.where(exponent == 0, subnormal, normal))
    return (magnitude.view(_INT32) | ((h & 0x8000) << 16)).view(_FLOAT32)


def _float_to_half_bits(f: torch.Tensor) -> torch.Tensor:
    """float32 -> int32 holding the half bits, round to nearest even (F. Giesen's float_to_half_fast3_rtne)."""
    bits = f.view(_INT32)
    magnitude = bits & 0x7FFFFFFF
    # normal halves: rebias, add the rounding bias (0xFFF plus the kept mantissa's lowest bit), cut 13 bits
    normal = (magnitude - (((127 - 15) << 23) - 0xFFF) + ((magnitude >> 13) & 1)) >> 13
    # subnormal halves: adding 0.5 makes the float adder round the mantissa at the half's last place
    subnormal = (magnitude.view(_FLOAT32) + 0.5).view(_INT32) - 0x3F000000
    overflow = torch.where(magnitude > 0x7F800000, _constant(f, 0x7E00), _constant(f, 0x7C00))  # NaN, inf
    half = torch.where(magnitude >= (127 + 16) << 23, overflow,
                       torch.where(magnitude < (127 - 14) << 23, subnormal, normal))
    return half | ((bits >> 16) & 0x8000)


def _float_to_bfloat16_bits(f: torch.Tensor) -> torch.Tensor:
    """float32 -> int32 holding the bfloat16 bits, round to nearest even; NaN -> 0x7FC0 as in c10."""
    bits = f.view(_INT32)
    magnitude = bits & 0x7FFFFFFF
    upper, lower = magnitude >> 16, magnitude & 0xFFFF
    round_up = (lower > 0x8000) | ((lower == 0x8000) & ((upper & 1) == 1))
    rounded = torch.where(magnitude > 0x7F800000, _constant(f, 0x7FC0), upper + round_up.to(_INT32))
    return rounded | ((bits >> 16) & 0x8000)


def _half_bits_to_float_bitcast(h: torch.Tensor) -> torch.Tensor:
    return h.to(torch.int16).view(torch.float16).to(_FLOAT32)


def _float_to_half_bits_bitcast(f: torch.Tensor) -> torch.Tensor:
    return f.to(torch.float16).view(torch.int16).to(_INT32) & 0xFFFF
