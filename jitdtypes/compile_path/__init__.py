"""torch.compile for complex dtypes: Inductor computes complex32/bcomplex32 graphs, and complex64/complex128 ones
when opted in, on float32 (or float64) (re, im) parts.

installation.py   what `install` puts into torch (meta kernels, decompositions, skipped frames, a cache tag)
                  and `Installation.remove` takes out
decompositions.py the one table: ATen overload -> planar implementation (complex_math's formulas)
planar.py         complex values as (re, im) parts while AOTAutograd traces
opt_in.py         which complex dtypes are computed planar (complex64/complex128 when the user opts in)
bits.py           16-bit storage <-> float32 parts, with ops Inductor fuses
layout_ops.py     the opt-in planar storage on CPU (custom ops at a planar region's boundary)
custom_ops.py     matrix products and FFTs as jitdtypes custom ops
meta_kernels.py   fake tensors that agree with eager jitdtypes

Why this mechanism, and the measurements behind it: docs/COMPILE.md.
"""

from .installation import Installation, cache_tag, install

__all__ = ["Installation", "cache_tag", "install"]
