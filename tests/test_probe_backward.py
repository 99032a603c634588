"""Probing finds backward-only and shape-dependent gaps: a backward overload gets the arguments its forward
call would hand it (the gradient shaped as the forward's result), and window arguments are probed overlapping
too, with a verdict of partial where one window fails (issue 22)."""

import pytest
import torch

import jitdtypes
from jitdtypes import dtypes, schema
from jitdtypes.discovery import probe
from jitdtypes.findings import MISSING, PARTIAL, SUPPORTED

NAMES = [dtypes.NAMES[d] for d in dtypes.COMPLEX_TARGETS]


@pytest.fixture(autouse=True)
def plain_pytorch():
    """Probing asks PyTorch's own kernels, as discovery's children do."""
    with jitdtypes.disabled():
        yield


@pytest.mark.parametrize("backward, forward", [
    ("aten::reflection_pad1d_backward", "aten::reflection_pad1d"), ("aten::col2im", "aten::im2col"),
    ("aten::_softmax_backward_data", "aten::_softmax"), ("aten::unfold_backward", "aten::unfold"),
    ("aten::exp", None), ("aten::_backward", None),
])
def test_a_backward_overload_knows_its_forward(backward, forward):
    found = probe.forward_of(schema.overload(backward))
    assert (found.full_name if found else None) == forward


def test_the_gradient_is_shaped_as_the_forward_result():
    info = schema.overload("aten::reflection_pad1d_backward")
    args, _ = probe._synthesize(info, probe.Case(torch.complex64, (3, 3)), "cpu", forward=probe.forward_of(info))
    grad_output, self, padding = args
    assert padding == [1, 1] and self.shape == (3, 3)
    assert torch.equal(grad_output, torch.ops.aten.reflection_pad1d(self, padding))
    info = schema.overload("aten::col2im")
    args, _ = probe._synthesize(info, probe.Case(torch.complex64, (2, 3, 3), window=1), "cpu",
                                forward=probe.forward_of(info))
    columns, output_size, kernel_size, dilation, padding = args[:5]
    assert (kernel_size, dilation, padding, output_size) == ([2, 2], [1, 1], [1, 1], [3, 3])
    # im2col's result: unbatched input of 2 channels, 2 * 2 * 2 rows, (3 + 2 * 1 - 2 + 1) ** 2 windows
    assert columns.shape == (8, 16)


@pytest.mark.parametrize("overload", ["aten::reflection_pad1d_backward", "aten::replication_pad1d_backward",
                                      "aten::replication_pad2d_backward", "aten::col2im"])
def test_backward_kernels_lacking_the_dtypes_are_found(overload):
    outcome = probe.probe(schema.overload(overload))
    assert outcome is not None, "no reference call worked"
    assert outcome.status == {name: MISSING for name in NAMES}
    assert "not implemented for" in outcome.errors["complex32"]


def test_one_failing_window_makes_the_verdict_partial(monkeypatch):
    info = schema.overload("aten::unfold_backward")
    outcome = probe.probe(info)
    assert outcome.status["complex32"] == PARTIAL
    assert "unfold_backward_cpu" in outcome.errors["complex32"]
    # disjoint windows alone (step >= size) copy, which complex32 supports: the verdict PyTorch's kernel got before
    monkeypatch.setattr(probe, "WINDOWS", probe.WINDOWS[:1])
    assert probe.probe(info).status["complex32"] == SUPPORTED
