"""The compiled dispatch guard: C++ kernels in front of PyTorch's, built with the machine's compiler.

library.py          the built guard loaded with ctypes: registering guards over captured kernels, the C++
                    upcast's switches, generated CPU kernels installed into typed guards, `resolve` (compiled
                    or Python guard)
build.py            guard.cpp and its headers into a shared library, once per torch build, cached
guard.cpp           the guard itself; typed_signatures.h, upcast.h, convert.h, planes.h, generated.h: the
                    typed calls it upcasts in C++, the conversions, the planes of parts, the generated kernels
torch_compat.h      what differs between torch versions on the C++ side
"""

from .library import (COMPILED, CPP_UPCAST_ENV_VAR, PYTHON, GuardLibrary, GuardUnavailable, allow_cpp_upcast,
                      build_in_background, conversion, cpp_upcast_enabled, info, install_generated, move_planes,
                      requested, resolve, set_conversion, set_cpp_upcast, set_first_need_hook, signature_key,
                      why_python)

__all__ = ["COMPILED", "CPP_UPCAST_ENV_VAR", "PYTHON", "GuardLibrary", "GuardUnavailable", "allow_cpp_upcast",
           "build_in_background", "conversion", "cpp_upcast_enabled", "info", "install_generated", "move_planes",
           "requested", "resolve", "set_conversion", "set_cpp_upcast", "set_first_need_hook", "signature_key",
           "why_python"]
