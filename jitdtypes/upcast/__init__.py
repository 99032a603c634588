"""The universal fallback: calls PyTorch lacks run in complex64/float32 with PyTorch's own kernels, rounded once.

path.py             the upcast path: widen, call, write back, round; specialized per kind of call
wrapped_numbers.py  Python numbers in Tensor positions, handed back to PyTorch's kernels as exact tensors
error_messages.py   errors of the 32-bit call, reworded in the caller's dtypes
wide_gradients.py   backward passes in 32 bits where PyTorch's derivative formula fails in 16 bits
"""

from .path import WEIGHTS, run, specialize, widen, write_back

__all__ = ["WEIGHTS", "run", "specialize", "widen", "write_back"]
