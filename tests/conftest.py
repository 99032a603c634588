import os
import tempfile

# Tests never touch the user's cache: every session gets its own, unless one is given.
os.environ.setdefault("JITDTYPES_CACHE_DIR", os.path.join(tempfile.gettempdir(), "jitdtypes-test-cache"))
