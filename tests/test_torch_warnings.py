"""PyTorch's "... support is experimental" warning is filtered by its exact message while jitdtypes is enabled,
and comes back with disable(). PyTorch warns once per process, hence one child process per case."""

import json
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
