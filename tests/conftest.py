import os
import tempfile
from pathlib import Path

import torch

# Without a GPU, Triton kernels run in its interpreter; the switch must be set before triton is imported
# (its own standard-library helpers are decorated at import time).
if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")

# Tests never touch the user's cache: the session gets its own, unless one is given.
if not os.environ.get("JITDTYPES_CACHE_DIR"):
    os.environ["JITDTYPES_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "jitdtypes-test-cache")

import jitdtypes  # noqa: E402 - after the environment above; runs (or loads) discovery once per session

# Where this session's discovery results live: tests that want an empty kernel cache copy them from here.
DISCOVERY_CACHE = Path(os.environ["JITDTYPES_CACHE_DIR"])
assert jitdtypes.is_enabled() or os.environ.get("JITDTYPES_DISABLE")
