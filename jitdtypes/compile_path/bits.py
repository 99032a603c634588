"""16-bit complex storage <-> float32 (re, im) parts, written with ops that Inductor fuses.

A complex32/bcomplex32 element is 4 bytes: the real part's 16 bits in the low half of a little-endian 32-bit
word, the imaginary part's in the high half. Compiled code reads and writes whole int32 words, so every load
and store is contiguous, and does the arithmetic in float32. complex64 values met on the way (what upcast
FFTs return, promotions with float32) are read and written the same way, as int64 words of two floats.

Why words and not `view_as_real(x)[..., 0]`: Inductor's C++ backend stops vectorizing a loop once more than
12% of its loads/stores are strided (`KernelOpStats.OVERHEAD_RATIO_THRESHOLD`), and it never vectorizes
int16. An exp/div chain over interleaved halves then ran scalar, several times slower than over words
(docs/COMPILE.md). So where vectorization matters (`arithmetic=True`, the CPU default) the conversions use
only int32 and float32 operations. They are exact (the tests compare all 65536 half values in both halves
and 1.2 million float32 bit patterns with PyTorch's conversions), subnormals, infinities and NaN included,
and do no arithmetic on denormal floats, so they also hold with torch.set_flush_denormal(True). Triton has
no such limits: elsewhere int16 bitcasts do the same in fewer instructions.

The word decoding costs about a dozen vector operations and one bit cast per part (Inductor's vector code
has no bit cast: it stores the vector, casts element by element and reloads; the obvious form took four per
part, and cost a kernel like complex32 angle its lead over complex64), which only pays where the formula
itself is vectorized work. A kernel of one cheap op (complex32 abs) runs faster as the scalar loop
`read_as_halves()` gives: two strided float16 loads and one hardware conversion each (generated CPU kernels
choose per op, cpu_kernels/table.py).
"""

from __future__ import annotations

import contextlib
import sys

import torch

from .. import dtypes

_INT32, _FLOAT32 = torch.int32, torch.float32
_SIGN = -(2**31)  # bit 31
_HALF_BITS_AT_FLOAT32 = 0x7FFF << 13  # a half's exponent and mantissa moved to float32's bit positions
_LITTLE_ENDIAN = sys.byteorder == "little"


def supported(dtype: torch.dtype) -> bool:
    """Whether tensors of `dtype` can be read and written as words here (the layout assumes little endian)."""
    return _LITTLE_ENDIAN and (dtype in dtypes.REAL_OF or dtype == torch.complex64)


def unpack(x: torch.Tensor, arithmetic: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """float32 (re, im) of a complex32/bcomplex32/complex64 tensor of any strides, lazy conj/neg flags
    included. `arithmetic`: for complex32, int32/float32 ops only (default on CPU) rather than int16 bitcasts."""
    conj, neg = x.is_conj(), x.is_neg()
    raw = x.conj() if conj else x  # strips the flag: a view of the same storage
    raw = torch._neg_view(raw) if neg else raw
    if x.dtype == torch.complex32 and x.device.type == "cpu" and _halves_read[-1]:
        halves = torch.view_as_real(raw)
        re, im = halves[..., 0].to(_FLOAT32), halves[..., 1].to(_FLOAT32)
    elif x.dtype == torch.complex64:
        words = raw.view(torch.int64)
        re, im = words.to(_INT32).view(_FLOAT32), (words >> 32).to(_INT32).view(_FLOAT32)  # to(): low 32 bits
    else:
        arithmetic = x.device.type == "cpu" if arithmetic is None else arithmetic
        re, im = _unpack_16_bit(raw.view(_INT32), x.dtype, arithmetic)
    if neg:
        re, im = -re, -im
    return re, (-im if conj else im)


_halves_read = [False]


@contextlib.contextmanager
def read_as_halves():
    """While tracing, complex32 on CPU is read as its float16 halves (strided loads: a scalar loop)."""
    _halves_read.append(True)
    try:
        yield
    finally:
        _halves_read.pop()


def _unpack_16_bit(words: torch.Tensor, dtype: torch.dtype, arithmetic: bool):
    if dtype == torch.complex32:
        if arithmetic:
            re = _half_to_float((words << 13) & _HALF_BITS_AT_FLOAT32, (words << 16) & _SIGN)
            im = _half_to_float((words >> 3) & _HALF_BITS_AT_FLOAT32, words & _SIGN)
            return re, im
        re = words.to(torch.int16).view(torch.float16).to(_FLOAT32)
        return re, (words >> 16).to(torch.int16).view(torch.float16).to(_FLOAT32)
    # bfloat16 is the top half of a float32: shifting the word is the conversion
    return (words << 16).view(_FLOAT32), (words & -65536).view(_FLOAT32)


def pack(re: torch.Tensor, im: torch.Tensor, dtype: torch.dtype, arithmetic: bool | None = None) -> torch.Tensor:
    """The complex32/bcomplex32/complex64 tensor with parts re, im (float32, same shape), rounded to nearest
    even."""
    re_bits, im_bits = re.view(_INT32), im.view(_INT32)
    if dtype == torch.complex64:
        return ((re_bits.to(torch.int64) & 0xFFFFFFFF) | (im_bits.to(torch.int64) << 32)).view(dtype)
    if dtype == torch.complex32:
        if re.device.type == "cpu" if arithmetic is None else arithmetic:
            low = _float_to_half_magnitude(re) | ((re_bits >> 16) & 0x8000)
            high = (_float_to_half_magnitude(im) << 16) | (im_bits & _SIGN)
        else:
            low = re.to(torch.float16).view(torch.int16).to(_INT32) & 0xFFFF
            high = im.to(torch.float16).view(torch.int16).to(_INT32) << 16
    else:
        low = (_float_to_bfloat16_at_top(re) >> 16) & 0xFFFF
        high = _float_to_bfloat16_at_top(im) & -65536
    return (low | high).view(dtype)


def _constant(like: torch.Tensor, value: int) -> torch.Tensor:
    # a zero-dim int32 operand: a bare Python int would make torch.where's result int64
    return torch.scalar_tensor(value, dtype=_INT32, device=like.device)


def _half_to_float(exponent_mantissa: torch.Tensor, sign: torch.Tensor) -> torch.Tensor:
    """A half given as its exponent/mantissa bits at float32 positions (bits 13-27) and its sign at bit 31.

    One bit cast: Inductor's vector code has none (each is a store, a scalar loop and a reload), and the four
    of the obvious form (normal, inf/NaN and sign as bits, subnormals as an integer times 2**-24) took
    compiled complex32 angle at 64K elements from 8 to 2 bit casts."""
    small = exponent_mantissa < 1 << 23  # zero or subnormal
    # rebias the exponent; a subnormal m * 2**-24 is first read as the normal float 2**-14 + m * 2**-24
    rebiased = exponent_mantissa + torch.where(small, _constant(exponent_mantissa, (127 - 14) << 23),
                                               _constant(exponent_mantissa, (127 - 15) << 23))
    bits = torch.where(exponent_mantissa >= 0x1F << 23, exponent_mantissa | 0x7F800000, rebiased)  # inf, NaN
    magnitude = bits.view(_FLOAT32)
    # exact, and no arithmetic on denormal floats (so set_flush_denormal(True) cannot change it)
    magnitude = torch.where(small, magnitude - 2.0**-14, magnitude)
    return torch.where(sign != 0, -magnitude, magnitude)


def _float_to_half_magnitude(f: torch.Tensor) -> torch.Tensor:
    """|f| as half bits (int32, 0..0x7E00), round to nearest even (after F. Giesen's float_to_half_fast3)."""
    magnitude = f.view(_INT32) & 0x7FFFFFFF
    # normal halves: rebias, add the rounding bias (0xFFF plus the kept mantissa's lowest bit), cut 13 bits;
    # past the largest half this passes 0x7C00, which the minimum turns into inf
    normal = torch.minimum((magnitude - (((127 - 15) << 23) - 0xFFF) + ((magnitude >> 13) & 1)) >> 13,
                           _constant(f, 0x7C00))
    # subnormal halves: adding 0.5 makes the float adder round the mantissa at the half's last place
    subnormal = (f.abs() + 0.5).view(_INT32) - 0x3F000000  # abs(), not magnitude's bits: one bit cast fewer
    half = torch.where(magnitude < (127 - 14) << 23, subnormal, normal)
    return torch.where(magnitude > 0x7F800000, _constant(f, 0x7E00), half)  # NaN stays NaN


def _float_to_bfloat16_at_top(f: torch.Tensor) -> torch.Tensor:
    """f rounded to bfloat16 (nearest even), as its bits in the top half of an int32 (the low half not cleared:
    the caller masks or shifts it out); NaN gives 0x7FC0 whatever its sign, as c10::detail::round_to_nearest_even.
    The rounding bias is added to the signed bits: below NaN a carry stops at the exponent (largest: inf's
    0x7F800000 + 0x7FFF), so the sign needs no masking apart (a bcomplex32 exp/div chain 2% faster than masking
    and restoring it)."""
    bits = f.view(_INT32)
    rounded = bits + 0x7FFF + ((bits >> 16) & 1)
    return torch.where(f != f, _constant(f, 0x7FC00000), rounded)
