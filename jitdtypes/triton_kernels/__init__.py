"""Triton kernels rendered from kernels_templates/ on first use: on CUDA, and in Triton's interpreter on CPU.

engine.py    an ATen call -> its family's adapter -> a rendered module: keyed, cached, loaded, registered
aot.py       compiling those kernels for GPU targets ahead of time, without a GPU (`jitdtypes warm --arch`)
selftest.py  representative calls per family against complex64: GPU validation and `warm` on CUDA
"""
