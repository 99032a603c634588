"""`jitdtypes demo`: per op and 16-bit complex dtype, what plain PyTorch does, the path jitdtypes takes, the
error and time against complex64; then the memory a Fourier neural operator needs forward and backward.

main.py     the checks and the two parts, in order
ops.py      the table of ops
fno.py      the memory of a Fourier neural operator, forward and backward
measure.py  errors, times, paths and table lines, shared by both parts
"""

from .main import run

__all__ = ["run"]
