"""Read-only cache layers: JITDTYPES_CACHE_PATH=/opt/jitdtypes:/shared/warm names caches (an image's, an admin's,
a shared file system's) consulted, in order, before the user's own cache, which is still the only one written.
They have the store's layout (store.py); kernels and discovery results are looked up in them.

A layer holds code that gets executed, so its entries are used only when the entry, its files and every
directory from the layer root down to it are owned by this user or root and not writable by group or others
(readable by all is fine: that is how an admin shares one). Anything else is refused and the entry is built in
the user's own cache instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from .store import Store, this_user

ENV_VAR = "JITDTYPES_CACHE_PATH"
ROOT_UID = 0


def roots() -> list[Path]:
    """The layers named by JITDTYPES_CACHE_PATH, in order (empty parts ignored)."""
    return [Path(part).expanduser() for part in os.environ.get(ENV_VAR, "").split(os.pathsep) if part.strip()]


def trusted_owners() -> frozenset[int]:
    return this_user() | {ROOT_UID} if this_user() else frozenset()


def stores(kind: str) -> list[Store]:
    """A read-only store of `kind` per layer, accepting entries owned by this user or root."""
    owners = trusted_owners()
    return [Store(kind, root, owners=owners) for root in roots()]
