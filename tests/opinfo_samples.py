"""PyTorch's OpInfo database as a peer test suite: sample inputs for every op that supports complex64."""

from __future__ import annotations

import functools
import warnings

import torch
from torch.utils._pytree import tree_flatten, tree_map

SAMPLES_PER_OP = 4


@functools.lru_cache(maxsize=None)
def op_db():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torch.testing._internal import common_utils
        from torch.testing._internal.common_methods_invocations import op_db as database
        from torch.testing._internal.opinfo import core

    # OpInfo looks for the running unittest method by inspecting the whole stack on every sample_inputs
    # call (for its debugging aids); under pytest that is most of the suite's time. We are not unittest.
    core.extract_test_fn = common_utils.extract_test_fn = lambda: None
    return database


def op_id(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


def ops_supporting(dtype: torch.dtype, device: str = "cpu"):
    return [op for op in op_db() if dtype in op.supported_dtypes(device)]


def samples(op, dtype: torch.dtype, device: str = "cpu", limit: int = SAMPLES_PER_OP):
    """The first `limit` samples, generated deterministically (the same tensors on every call)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = []
        for sample in op.sample_inputs(device, dtype, requires_grad=False):
            out.append(sample)
            if len(out) == limit:
                break
    return out


def convert(sample, source: torch.dtype, target: torch.dtype):
    """The sample with every `source` tensor and dtype argument converted to `target`."""

    def one(value):
        if isinstance(value, torch.Tensor):
            return value.to(target) if value.dtype == source else value
        return target if value == source else value

    return sample.transform(one)


def call(op, sample):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return op(sample.input, *sample.args, **sample.kwargs)


def flat_tensors(result):
    return [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]


def flat(result):
    return tree_flatten(tree_map(lambda v: v, result))[0]
