"""The cache root: JITDTYPES_CACHE_DIR when set, else the platform's per-user cache directory."""

from __future__ import annotations

import os
from pathlib import Path

ENV_VAR = "JITDTYPES_CACHE_DIR"


def cache_root() -> Path:
    configured = os.environ.get(ENV_VAR)
    if configured:
        return Path(configured).expanduser()
    import platformdirs  # only here: a machine without it (the lent GPU machine) runs with JITDTYPES_CACHE_DIR

    return Path(platformdirs.user_cache_dir("jitdtypes"))


def ensure_dir(path: Path) -> Path:
    """Create `path` and any missing parents private to the user (mode 0700, whatever the umask);
    directories that already exist are left as they are. Raises OSError when that is impossible."""
    missing = []
    current = path
    while not current.exists():
        missing.append(current)
        current = current.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=0o700)
        except FileExistsError:  # another process made it meanwhile
            continue
        os.chmod(directory, 0o700)
    return path
