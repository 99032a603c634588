"""jitdtypes.optim.MasterWeights: torch.optim optimizers over 16-bit parameters with 32-bit state and updates.

The README's `nn.Linear(16, 8, dtype=torch.complex32)` fitted to a noisy linear map trains with Adam as
complex64 does from the same rounded start (plain Adam: NaN from its second step), and the wrapper computes
exactly what the optimizer computes on complex64 copies of the parameters given the same gradients: for Adam,
AdamW and SGD with momentum, with param groups, add_param_group, a scheduler, zero_grad, closures, changed
parameters and a state_dict round trip."""

import copy
import io
import math
import warnings

import pytest
import torch

from jitdtypes import dtypes
from jitdtypes.optim import MASTER_WEIGHTS, MasterWeights
from tests.conftest import IDS, TARGETS

pytestmark = pytest.mark.filterwarnings("ignore:Complex modules are a new feature")


def regression(dtype):
    """The README's Linear with weights rounded to `dtype`, and 64 noisy samples of a linear map (rounded too)."""
    generator = torch.Generator().manual_seed(0)

    def complex_randn(*shape, scale=1.0):
        return torch.randn(*shape, dtype=torch.complex64, generator=generator) * scale

    layer = torch.nn.Linear(16, 8, dtype=torch.complex64)
    with torch.no_grad():
        for param in layer.parameters():
            param.copy_(complex_randn(*param.shape, scale=0.25).to(dtype))
    x = complex_randn(64, 16).to(dtype)
    y = (x.to(torch.complex64) @ complex_randn(8, 16, scale=0.5).T + complex_randn(64, 8, scale=0.3)).to(dtype)
    return layer.to(dtype), x, y


def mean_squared_error(layer, x, y):
    return (layer(x) - y).abs().pow(2).mean()


def train(dtype, make_optimizer, steps=100):
    layer, x, y = regression(dtype)
    optimizer = make_optimizer(layer.parameters())
    losses = []
    for _ in range(steps):
        optimizer.zero_grad()
        loss = mean_squared_error(layer, x, y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return layer, losses


def test_plain_adam_on_complex32_gives_nan():
    """Why MasterWeights exists: Adam's state follows the parameter's dtype, float16 parts for complex32, where
    eps=1e-8 is 0 and small squared gradients underflow: the update is 0/0."""
    assert torch.tensor(1e-8, dtype=torch.float16).item() == 0
    layer, losses = train(torch.complex32, lambda params: torch.optim.Adam(params, lr=1e-2), steps=3)
    assert math.isfinite(losses[0]) and math.isnan(losses[1])
    assert layer.weight.isnan().any()


@pytest.mark.skipif(dtypes.BCOMPLEX32 is None, reason="this torch has no bcomplex32")
def test_plain_adam_on_bcomplex32_stalls():
    """bfloat16 parts keep float32's range but 8 bits: updates below 1/256 of a weight round away."""
    _, losses = train(dtypes.BCOMPLEX32, lambda params: torch.optim.Adam(params, lr=1e-2))
    _, reference = train(torch.complex64, lambda params: torch.optim.Adam(params, lr=1e-2))
    assert losses[-1] > 1.03 * reference[-1], (losses[-1], reference[-1])


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
def test_adam_trains_the_readme_linear_as_complex64_does(dtype):
    layer, losses = train(dtype, lambda params: MasterWeights(params, torch.optim.Adam, lr=1e-2))
    _, reference = train(torch.complex64, lambda params: torch.optim.Adam(params, lr=1e-2))
    assert all(math.isfinite(loss) for loss in losses)
    assert layer.weight.dtype == dtype and losses[-1] < losses[0] / 20
    assert abs(losses[-1] - reference[-1]) <= 0.02 * reference[-1], (losses[-1], reference[-1])


OPTIMIZERS = {
    "adam": (torch.optim.Adam, {"lr": 1e-2}),
    "adam-foreach-amsgrad": (torch.optim.Adam, {"lr": 1e-2, "foreach": True, "amsgrad": True}),
    "adamw": (torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.1}),
    "sgd-nesterov": (torch.optim.SGD, {"lr": 2e-2, "momentum": 0.9, "nesterov": True, "weight_decay": 1e-3}),
}


def updated_tensors(optimizer):
    """{your parameter: the tensor the wrapped optimizer updates for it}"""
    return {param: inner for group, inner_group in zip(optimizer.param_groups, optimizer.optimizer.param_groups)
            for param, inner in zip(group["params"], inner_group["params"])}


class Shadowed:
    """16-bit complex, float16 and float32 parameters under MasterWeights, and the plain optimizer on complex64 /
    float32 copies of them fed the same gradients, widened: the master weights must equal the copies bit for
    bit, the 16-bit parameters their rounding, and the float32 parameter (passed through) its copy."""

    def __init__(self, dtype, optimizer_class, defaults):
        generator = torch.Generator().manual_seed(1)
        complex_randn = lambda *shape: torch.randn(*shape, dtype=torch.complex64, generator=generator)  # noqa: E731
        self.weight = torch.nn.Parameter((complex_randn(8, 16) / 4).to(dtype))
        self.bias = torch.nn.Parameter(complex_randn(8).to(dtype))
        self.scale = torch.nn.Parameter(torch.ones(8, dtype=torch.float16))
        self.shift = torch.nn.Parameter(torch.zeros(8))
        self.x = complex_randn(32, 16).to(dtype)
        self.parameters = (self.weight, self.bias, self.scale, self.shift)
        self.copies = [p.detach().to(dtypes.COMPUTE_DTYPE.get(p.dtype, p.dtype), copy=True).requires_grad_()
                       for p in self.parameters]
        groups = [{"params": [self.weight]}, {"params": [self.bias, self.scale, self.shift], "lr": 3e-2}]
        self.optimizer = MasterWeights(groups[:1], optimizer_class, **defaults)
        self.optimizer.add_param_group(groups[1])
        self.reference = optimizer_class([{"params": self.copies[:1]}, {"params": self.copies[1:], "lr": 3e-2}],
                                         **defaults)

    def loss(self):
        return ((self.x @ self.weight.T + self.bias) * self.scale + self.shift).abs().pow(2).mean()

    def step(self):
        self.optimizer.zero_grad()
        loss = self.loss()
        loss.backward()
        for param, wide in zip(self.parameters, self.copies):
            wide.grad = param.grad.to(wide.dtype)
        self.optimizer.step()
        self.reference.step()
        self.check()
        return loss.item()

    def check(self):
        updated = updated_tensors(self.optimizer)
        assert updated[self.shift] is self.shift
        for param, wide in zip(self.parameters, self.copies):
            assert torch.equal(updated[param], wide.detach())
            assert torch.equal(param, wide.detach().to(param.dtype))
        assert [p.dtype for p in self.parameters] == [self.weight.dtype] * 2 + [torch.float16, torch.float32]


@pytest.mark.parametrize("dtype", TARGETS, ids=IDS)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_updates_are_the_optimizers_on_32_bit_copies(name, dtype):
    shadowed = Shadowed(dtype, *OPTIMIZERS[name])
    losses = [shadowed.step() for _ in range(8)]
    assert losses[-1] < losses[0]
    state = shadowed.optimizer.state[shadowed.weight]  # keyed by your parameter, 32-bit inside
    assert state and all(v.dtype == torch.complex64 for k, v in state.items() if k != "step")


def test_a_scheduler_sets_the_learning_rate_of_every_step_and_step_hooks_run():
    shadowed = Shadowed(torch.complex32, torch.optim.SGD, {"lr": 0.1})
    schedulers = [torch.optim.lr_scheduler.StepLR(o, step_size=1, gamma=0.5)
                  for o in (shadowed.optimizer, shadowed.reference)]
    rates, hooked = [], []
    shadowed.optimizer.register_step_post_hook(lambda optimizer, args, kwargs: hooked.append(optimizer))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # e.g. "Detected call of `lr_scheduler.step()` before `optimizer.step()`"
        for _ in range(4):
            rates.append([g["lr"] for g in shadowed.optimizer.param_groups])
            shadowed.step()
            for scheduler in schedulers:
                scheduler.step()
    assert rates == [[0.1 * 0.5 ** i, 0.03 * 0.5 ** i] for i in range(4)]
    assert hooked == [shadowed.optimizer] * 4


def _saved(obj):
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer)


@pytest.mark.parametrize("model_first", [True, False], ids=["model-then-optimizer", "optimizer-then-model"])
def test_a_checkpoint_resumes_bit_for_bit(model_first):
    def run(optimizer, layer, x, y, steps):
        for _ in range(steps):
            optimizer.zero_grad()
            mean_squared_error(layer, x, y).backward()
            optimizer.step()

    def adam(layer):
        return MasterWeights(layer.parameters(), torch.optim.Adam, lr=1e-2)

    layer, x, y = regression(torch.complex32)
    optimizer = adam(layer)
    run(optimizer, layer, x, y, 5)
    checkpoint = _saved({"model": layer.state_dict(), "optimizer": optimizer.state_dict()})
    saved = checkpoint["optimizer"]
    assert sorted(saved) == sorted(["state", "param_groups", MASTER_WEIGHTS])
    assert all(v.dtype == torch.complex64 for s in saved["state"].values() for k, v in s.items() if k != "step")
    assert sorted(saved[MASTER_WEIGHTS]) == [0, 1]
    # The master weights hold what the 16-bit parameters cannot: they are needed to resume exactly.
    assert not torch.equal(saved[MASTER_WEIGHTS][0], layer.weight.detach().to(torch.complex64))

    resumed, _, _ = regression(torch.complex32)
    resumed_optimizer = adam(resumed)
    loaded = []
    resumed_optimizer.register_load_state_dict_post_hook(lambda o: loaded.append(o))
    if model_first:
        resumed.load_state_dict(checkpoint["model"])
    resumed_optimizer.load_state_dict(checkpoint["optimizer"])
    if not model_first:  # the model's weights then arrive after the master weights, and equal their rounding
        resumed.load_state_dict(checkpoint["model"])
    assert loaded == [resumed_optimizer]
    run(optimizer, layer, x, y, 5)
    run(resumed_optimizer, resumed, x, y, 5)
    for a, b in zip(updated_tensors(optimizer).values(), updated_tensors(resumed_optimizer).values()):
        assert torch.equal(a, b)
    assert torch.equal(layer.weight, resumed.weight) and torch.equal(layer.bias, resumed.bias)


def test_a_parameter_changed_outside_the_optimizer_is_read_back():
    shadowed = Shadowed(torch.complex32, torch.optim.SGD, {"lr": 0.1})
    shadowed.step()
    with torch.no_grad():
        shadowed.weight.mul_(2)
        shadowed.copies[0].copy_(shadowed.weight)  # the reference reads the same change
    shadowed.step()  # check(): the master restarted from the changed weight


def test_zero_grad_clears_your_parameters_and_a_parameter_without_gradient_is_skipped():
    shadowed = Shadowed(torch.complex32, torch.optim.AdamW, {"lr": 1e-2, "weight_decay": 0.5})
    shadowed.step()
    shadowed.loss().backward()
    shadowed.optimizer.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.any() for p in shadowed.parameters)
    shadowed.optimizer.zero_grad()
    assert all(p.grad is None for p in shadowed.parameters)
    # A step in which the bias gets no gradient leaves it alone (weight decay included), as AdamW itself does.
    bias = shadowed.bias.detach().clone()
    shadowed.bias.requires_grad_(False)
    shadowed.copies[1].requires_grad_(False)
    shadowed.optimizer.zero_grad()
    shadowed.loss().backward()
    shadowed.optimizer.step()
    assert torch.equal(shadowed.bias, bias) and shadowed.optimizer.state[shadowed.bias]["step"] == 1


def test_closures_see_the_current_master_weights_rounded():
    """LBFGS evaluates the loss at several points of one step: each evaluation must see the parameters at the
    master weights' current point, else its line search and curvature pairs see stale values."""
    def closure_of(optimizer, layer, x, y):
        def closure():
            optimizer.zero_grad()
            loss = mean_squared_error(layer, x, y)
            loss.backward()
            return loss
        return closure

    results = {}
    for dtype in (torch.complex32, torch.complex64):
        layer, x, y = regression(dtype)
        if dtype == torch.complex64:
            optimizer = torch.optim.LBFGS(layer.parameters(), lr=0.5, max_iter=10)
        else:
            optimizer = MasterWeights(layer.parameters(), torch.optim.LBFGS, lr=0.5, max_iter=10)
        closure = closure_of(optimizer, layer, x, y)
        losses = [optimizer.step(closure).item() for _ in range(5)]
        results[dtype] = mean_squared_error(layer, x, y).item()
        assert losses[-1] < losses[0] / 20
    assert abs(results[torch.complex32] - results[torch.complex64]) <= 0.02 * results[torch.complex64], results


def test_a_state_dict_whose_master_weight_meets_a_32_bit_parameter_is_refused_before_loading():
    shadowed = Shadowed(torch.complex32, torch.optim.Adam, {"lr": 1e-2})
    shadowed.step()
    saved = shadowed.optimizer.state_dict()
    saved[MASTER_WEIGHTS] = {3: saved[MASTER_WEIGHTS][0]}  # parameter 3 is the float32 shift
    before = copy.deepcopy(shadowed.optimizer.optimizer.state_dict())
    with pytest.raises(ValueError, match="master weight for parameter 3, which is torch.float32 here"):
        shadowed.optimizer.load_state_dict(saved)
    after = shadowed.optimizer.optimizer.state_dict()
    assert all(torch.equal(after["state"][i][k], v) for i, s in before["state"].items() for k, v in s.items())


def test_a_deep_copy_carries_on_as_the_original():
    shadowed = Shadowed(torch.complex32, torch.optim.Adam, {"lr": 1e-2})
    shadowed.step()
    original = shadowed.optimizer
    twin = copy.deepcopy(original)
    twin_parameters = [p for group in twin.param_groups for p in group["params"]]
    assert not any(p is q for p in twin_parameters for q in shadowed.parameters)
    for optimizer, parameters in ((original, shadowed.parameters), (twin, twin_parameters)):
        for p, q in zip(parameters, shadowed.parameters):
            p.grad = torch.ones_like(q)
        optimizer.step()
    for a, b in zip(updated_tensors(original).values(), updated_tensors(twin).values()):
        assert torch.equal(a, b)
    assert all(torch.equal(p, q) for p, q in zip(shadowed.parameters, twin_parameters))
