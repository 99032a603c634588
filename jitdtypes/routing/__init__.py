"""The routed call: from a dispatcher call PyTorch lacks a 16-bit kernel for, to the path that serves it.

registrar.py  registrations per (overload, dispatch key): the compiled guard over the Python one, where the C++
              upcast may run, and `make_kernel` (the Python guard with its router); undone by remove().
sources.py    the Python written per schema: the guard, and the key of a routed call's argument kinds.
router.py     the router behind one guard: native first where PyTorch works for some calls, then a template
              kernel or the upcast path, specialized per key and cached.

Each module calls only those listed below it.
"""
