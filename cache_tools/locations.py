"""The cache root: JITDTYPES_CACHE_DIR when set, else the platform's per-user cache directory."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_VAR = "JITDTYPES_CACHE_DIR"


def cache_root() -> Path:
    configured = os.environ.get(ENV_VAR)
    return Path(configured).expanduser() if configured else Path(platformdirs.user_cache_dir("jitdtypes"))


def ensure_dir(path: Path) -> Path:
    """Create `path` (and parents) private to the user; raises OSError when that is impossible."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path
