"""The 16-bit dtypes jitdtypes serves, by the names torch gives them, in a module that does not import torch: the
command line offers them as choices before torch is loaded. dtypes.py checks them against the torch build."""

COMPLEX = ("complex32", "bcomplex32")
# real 16-bit inputs matter only for ops that turn real into complex (fft, rfft, stft, complex, polar)
REAL = ("float16", "bfloat16")
# the PyTorch release that added each complex dtype a supported torch build may lack
FIRST_RELEASE = {"bcomplex32": "2.14"}
