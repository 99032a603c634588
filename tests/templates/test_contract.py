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
