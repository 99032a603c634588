"""Kernels generated on first use for CPU eager calls: the compile path's formulas, compiled by AOTInductor.

provider.py  which (op, dtype) may get one, the first call's request, the builder process that builds it into
             the cache (handed over in lazy mode), and installing a package into the typed guard that runs it
table.py     which ops get one, of which kind, from how many elements, reading the storage how
build.py     the builder program: exports and compiles packages, one shared library per model, into the cache
"""

from .provider import (EAGER, ENV_VAR, LAZY, OFF, OVERRIDDEN, available, build_many, build_record, built,
                       current_keys, eligible, ensure, first_need, first_need_numel, key, mode, offer, overridable,
                       overridable_ops, status, to_warm, uninstall, wait)

__all__ = ["EAGER", "ENV_VAR", "LAZY", "OFF", "OVERRIDDEN", "available", "build_many", "build_record", "built",
           "current_keys", "eligible", "ensure", "first_need", "first_need_numel", "key", "mode", "offer",
           "overridable", "overridable_ops", "status", "to_warm", "uninstall", "wait"]
