"""PyTorch's "... support is experimental" warning is filtered by its exact message while jitdtypes is enabled,
and comes back with disable(); Inductor's "does not support code generation for complex operators" is not
raised for 16-bit complex graphs while enabled, and is for complex64 ones. PyTorch warns once per process,
hence child processes."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import jitdtypes

CHILD = textwrap.dedent("""
    import json, sys, warnings
    import torch
    import jitdtypes
    if sys.argv[1] == "disabled":
        jitdtypes.disable()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", append=True)  # behind the filters jitdtypes put in front
        for dtype in jitdtypes.dtypes.COMPLEX_TARGETS:
            torch.zeros(2, dtype=dtype)
        warnings.warn("ComplexHalf support is experimental and many operators don't support it yet, says a user")
    print(json.dumps([str(w.message) for w in caught]))
""")


def _warnings_seen(state: str) -> list[str]:
    ran = subprocess.run([sys.executable, "-c", CHILD, state], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[-1])


def _experimental(messages):
    return sorted(m.split(" support is experimental")[0] for m in messages
                  if "support is experimental and many operators don't support it yet." in m)


@pytest.mark.parametrize("state", ["enabled", "disabled"])
def test_experimental_warning_is_filtered_exactly_while_enabled(state):
    seen = _warnings_seen(state)
    every = sorted("ComplexHalf" if d == torch.complex32 else "BComplex32" for d in jitdtypes.dtypes.COMPLEX_TARGETS)
    assert _experimental(seen) == ([] if state == "enabled" else every)
    # A different message that merely starts the same way is never hidden.
    assert any(m.endswith("says a user") for m in seen)


def test_disable_and_enable_remove_and_restore_the_filter():
    import warnings

    from jitdtypes import torch_warnings

    was_enabled = jitdtypes.is_enabled()
    try:
        jitdtypes.disable()
        assert not any(f in warnings.filters for f in torch_warnings._FILTERS)
        jitdtypes.enable()
        assert sum(f in warnings.filters for f in torch_warnings._FILTERS) == len(torch_warnings._FILTERS)
        jitdtypes.enable()  # idempotent: never stacks a second copy
        assert warnings.filters.count(torch_warnings._FILTERS[0]) == 1
    finally:
        if not was_enabled:
            jitdtypes.disable()


INDUCTOR_COMPLEX = ("Torchinductor does not support code generation for complex operators. Performance may be "
                    "worse than eager.")

# Compiles each case, on the cold Inductor cache the parent gives it (the warning comes from code generation),
# and prints the Inductor warnings each raised. Inductor warns once per process, so the 16-bit cases run first:
# had they spent the warning, the complex64 case after them would be silent.
INDUCTOR_CHILD = textwrap.dedent("""
    import json, sys, warnings
    import torch
    import jitdtypes
    if sys.argv[1] == "disabled":
        jitdtypes.disable()

    def chain(a, b):
        return (a * b + a).exp() / (b + 2)

    def solve_then_scale(a, b):
        return torch.linalg.solve(a, b) * 2

    eye = torch.eye(4, dtype=torch.complex64)
    cases = {
        "chain": (chain, lambda d: [torch.randn(8, 16, dtype=torch.complex64).to(d)] * 2),
        "solve": (solve_then_scale, lambda d: [(eye * 4 + 0.1).to(d), torch.ones(4, 2, dtype=d)]),
        "plain-mul-add": (lambda a, b: a * b + a, lambda d: [torch.ones(8, 16, dtype=d)] * 2),
    }
    dtypes = {"complex64": torch.complex64, **{jitdtypes.dtypes.NAMES[d]: d for d in jitdtypes.dtypes.COMPLEX_TARGETS}}
    seen = {}
    for case in sys.argv[2:]:
        name, dtype = case.split(":")
        program, arguments = cases[name]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            torch._dynamo.reset()
            torch.compile(program, fullgraph=True)(*arguments(dtypes[dtype]))
        seen[case] = [str(w.message) for w in caught if "Torchinductor" in str(w.message)]
    import torch._inductor.lowering as lowering
    seen["inductor's own check"] = lowering.unsupported_input_tensor.__module__ == "torch._inductor.lowering"
    print(json.dumps(seen))
""")


def _inductor_warnings(cold_cache, state: str, *cases: str) -> dict:
    ran = subprocess.run([sys.executable, "-c", INDUCTOR_CHILD, state, *cases], capture_output=True, text=True,
                         timeout=900, env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cold_cache)})
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout.splitlines()[-1])


def test_inductor_complex_warning_is_skipped_for_16_bit_graphs_only(tmp_path):
    sixteen_bit = [f"{case}:{jitdtypes.dtypes.NAMES[d]}" for d in jitdtypes.dtypes.COMPLEX_TARGETS
                   for case in ("chain", "solve")]
    seen = _inductor_warnings(tmp_path, "enabled", *sixteen_bit, "chain:complex64")
    assert seen == {**{case: [] for case in sixteen_bit}, "chain:complex64": [INDUCTOR_COMPLEX],
                    "inductor's own check": False}


def test_inductor_complex_warning_is_back_after_disable(tmp_path):
    # Plain PyTorch runs complex32 multiplication and addition (and Inductor leaves them to it, with the warning).
    seen = _inductor_warnings(tmp_path, "disabled", "plain-mul-add:complex32")
    assert seen == {"plain-mul-add:complex32": [INDUCTOR_COMPLEX], "inductor's own check": True}


def test_importing_jitdtypes_imports_neither_dynamo_nor_inductor():
    # They cost about a second each: the compile path joins them when torch.compile first imports them.
    script = ("import sys, jitdtypes, jitdtypes.optim; "
              "print(sorted(m for m in sys.modules if m.startswith(('torch._dynamo', 'torch._inductor'))))")
    ran = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.splitlines()[-1] == "[]"
