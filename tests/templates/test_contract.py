"""What every template family promises (kernels_templates/common.py): its ATen adapters name real overloads."""

import importlib

import pytest
import torch

from jitdtypes.engine import FAMILIES


@pytest.mark.parametrize("family", FAMILIES)
def test_adapter_names_are_real_overloads(family):
    module = importlib.import_module(f"jitdtypes.kernels_templates.{family}")
    assert module.FAMILY == family and module.ATEN
    for name in module.ATEN:
        qualified, _, overload = name.partition(".")
        torch._C._get_schema(qualified, overload)  # raises for an unknown overload


def test_host_arithmetic_matches_triton():
    """Rendered host code divides and rounds with common.cdiv/next_power_of_2 (Triton's are constexpr functions,
    slow outside kernels): same results, including zero and negative arguments."""
    import triton

    from jitdtypes.kernels_templates import common

    for n in range(-40, 5000):
        assert common.next_power_of_2(n) == triton.next_power_of_2(n), n
        for divisor in (1, 2, 3, 16, 64, 1000):
            assert common.cdiv(n, divisor) == triton.cdiv(n, divisor), (n, divisor)
    assert common.next_power_of_2(2**40 + 1) == triton.next_power_of_2(2**40 + 1) == 2**41
