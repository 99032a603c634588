"""Read-only cache layers: JITDTYPES_CACHE_PATH=/opt/jitdtypes:/shared/warm names kernel caches (an image's,
an admin's, a shared file system's) consulted, in order, before the user's own cache, which is still the only
one written.

A layer holds code that gets executed, so its entries are used only when the entry, its files and every
directory from the layer root down to it are owned by this user or root and not writable by group or others
(readable by all is fine: that is how an admin shares one). Anything else is refused and the kernel is built in
the user's own cache instead.
"""

from __future__ import annotations

import os
from pathlib import Path

from .store import InsecureEntry, KernelStore, check_trusted, this_user

ENV_VAR = "JITDTYPES_CACHE_PATH"
ROOT_UID = 0


def roots() -> list[Path]:
    """The layers named by JITDTYPES_CACHE_PATH, in order (empty parts ignored)."""
    return [Path(part).expanduser() for part in os.environ.get(ENV_VAR, "").split(os.pathsep) if part.strip()]


def trusted_owners() -> frozenset[int]:
    return this_user() | {ROOT_UID} if this_user() else frozenset()


def stores() -> list[KernelStore]:
    """A read-only kernel store per layer, accepting entries owned by this user or root."""
    owners = trusted_owners()
    return [KernelStore(root, owners=owners) for root in roots()]


def find(relative: str) -> tuple[Path | None, list[str]]:
    """The first layer's file at `relative` (e.g. "discovery/<name>.json") whose every directory from the layer
    root down, and itself, pass the layer trust rule; and why files found in earlier layers were refused."""
    owners, refusals = trusted_owners(), []
    for root in roots():
        candidate = root / relative
        if not candidate.is_file():
            continue
        chain = [root]
        for part in Path(relative).parts:
            chain.append(chain[-1] / part)
        try:
            for path in chain:
                check_trusted(path, owners)
        except InsecureEntry as exc:
            refusals.append(str(exc))
            continue
        return candidate, refusals
    return None, refusals
