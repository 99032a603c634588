"""jitdtypes: torch.complex32 and torch.bcomplex32 that just work.

Importing the package registers, with torch.library, overrides at exactly the (overload, dispatch key) pairs
where PyTorch lacks a 16-bit kernel (found by probing, cached per torch build). Set JITDTYPES_DISABLE=1 to
import without installing anything. What importing does, and undoes, is installer.py's.
"""

from . import installer
from ._version import __version__
from .installer import disable, disabled, enable, guard, is_enabled, set_compile_complex, set_cpu_backend
from .reports.stats import stats

__all__ = ["__version__", "disable", "disabled", "enable", "guard", "is_enabled", "set_compile_complex",
           "set_cpu_backend", "stats"]

installer.install_on_import()
