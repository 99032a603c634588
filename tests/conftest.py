import os
import tempfile

import torch

# Without a GPU, Triton kernels run in its interpreter; the switch must be set before triton is imported
# (its own standard-library helpers are decorated at import time).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Tests never touch the user's cache: every session gets its own, unless one is given.
os.environ.setdefault("JITDTYPES_CACHE_DIR", os.path.join(tempfile.gettempdir(), "jitdtypes-test-cache"))
