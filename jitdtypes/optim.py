"""Any torch.optim optimizer over 16-bit parameters, with its state and its update in 32 bits.

An optimizer given complex32 parameters keeps its state in complex32 too: Adam's float16 second moment
underflows to 0 for gradients below about 5e-3, its eps=1e-8 rounds to 0, and the update becomes 0/0 or
x/0 (a NaN loss from the second step on). bfloat16 parts have float32's range but 8 bits of precision, so
updates smaller than 1/256 of a weight are rounded away. `MasterWeights` runs the optimizer on complex64
(float32 for float16/bfloat16) copies of the 16-bit parameters, the master weights, and rounds them into the
parameters after each step; other parameters are optimized as they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import torch

from .dtypes import COMPUTE_DTYPE

MASTER_WEIGHTS = "master_weights"  # the state_dict entry: {parameter index: master weight}


class MasterWeights(torch.optim.Optimizer):
    """`optimizer_class(params, **defaults)` with each 16-bit parameter replaced by a 32-bit master weight.

    Behaves as that optimizer does: `param_groups` hold your parameters and their hyperparameters (LR
    schedulers, `add_param_group` and the step hooks work on it), `zero_grad` clears your parameters'
    gradients, `state[p]` is the optimizer's state of `p` (32 bits for a 16-bit `p`), and `state_dict()` is
    the optimizer's own plus `MASTER_WEIGHTS`, so a checkpoint resumes bit for bit. A parameter changed
    outside the optimizer (`model.load_state_dict`, an in-place edit) is read back into its master weight at
    the next step, unless it equals the master weight's rounding. The optimizer itself is `.optimizer`.
    Memory per 16-bit complex parameter element: 8 bytes of master weight and 8 of its gradient, plus the
    optimizer's state in complex64.
    """

    def __init__(self, params, optimizer_class: type[torch.optim.Optimizer], **defaults) -> None:
        self.optimizer: torch.optim.Optimizer | None = None
        self._master_of: dict[torch.Tensor, torch.Tensor] = {}
        # Parallel lists, one entry per 16-bit parameter, for the foreach copies of every step: the parameter,
        # its master weight, the master's gradient buffer (made on first use, then reused) and the parameter's
        # _version when it last held the master's rounding (an in-place change outside the optimizer bumps it).
        self._parameters: list[torch.Tensor] = []
        self._masters: list[torch.Tensor] = []
        self._gradients: list[torch.Tensor | None] = []
        self._versions: list[int] = []
        super().__init__(params, {})  # validates and normalizes the groups as any optimizer does
        self.optimizer = optimizer_class([self._inner_group(g) for g in self.param_groups], **defaults)
        self.defaults = self.optimizer.defaults
        for group, inner in zip(self.param_groups, self.optimizer.param_groups):
            _copy_hyperparameters(inner, group)  # the defaults the optimizer filled in
        self.state = _StateOfParameters(self)

    # Optimizer's own pair keeps only defaults, state and param_groups: a copy would lose the master weights.
    def __getstate__(self) -> dict:
        return self.__dict__.copy()

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def add_param_group(self, param_group: dict) -> None:
        super().add_param_group(param_group)
        if self.optimizer is not None:  # (during __init__ the optimizer is built from every group at once)
            self.optimizer.add_param_group(self._inner_group(self.param_groups[-1]))
            _copy_hyperparameters(self.optimizer.param_groups[-1], self.param_groups[-1])

    def _inner_group(self, group: dict) -> dict:
        return {**group, "params": [self._master(p) for p in group["params"]]}

    def _master(self, param: torch.Tensor) -> torch.Tensor:
        wide = COMPUTE_DTYPE.get(param.dtype)
        if wide is None:
            return param
        if param not in self._master_of:
            master = param.detach().to(wide).requires_grad_(param.requires_grad)
            self._master_of[param] = master
            self._parameters.append(param)
            self._masters.append(master)
            self._gradients.append(None)
            self._versions.append(param._version)
        return self._master_of[param]

    def step(self, closure=None):
        for group, inner in zip(self.param_groups, self.optimizer.param_groups):
            # Hyperparameters live in self.param_groups, where schedulers and users set them.
            inner.update((k, v) for k, v in group.items() if k != "params")
        self._read_changed_parameters()
        if closure is None:
            self._gather_gradients()
            loss = self.optimizer.step()
        else:
            loss = self.optimizer.step(lambda: self._evaluate(closure))
        self._round_into_parameters()
        return loss

    def _evaluate(self, closure):
        # An optimizer may evaluate the loss at several points of one step (LBFGS moves its parameters between
        # evaluations): the closure runs on the rounding of wherever the master weights are.
        self._round_into_parameters()
        loss = closure()
        self._gather_gradients()
        return loss

    @torch.no_grad()
    def _read_changed_parameters(self) -> None:
        for i, param in enumerate(self._parameters):
            if param._version != self._versions[i]:
                master = self._masters[i]
                if not torch.equal(param, master.to(param.dtype)):
                    master.copy_(param)
                self._versions[i] = param._version

    @torch.no_grad()
    def _gather_gradients(self) -> None:
        targets, sources = [], []
        for i, (param, master) in enumerate(zip(self._parameters, self._masters)):
            if param.grad is None:
                master.grad = None  # the optimizer skips it, as it would skip `param`
                continue
            if self._gradients[i] is None:
                self._gradients[i] = torch.empty_like(master)
            master.grad = self._gradients[i]
            targets.append(self._gradients[i])
            sources.append(param.grad)
        if targets:
            torch._foreach_copy_(targets, sources)

    @torch.no_grad()
    def _round_into_parameters(self) -> None:
        if not self._parameters:
            return
        torch._foreach_copy_(self._parameters, self._masters)
        self._versions = [p._version for p in self._parameters]

    def state_dict(self) -> dict:
        state_dict = super().state_dict()  # `state` read through _StateOfParameters: the optimizer's own layout
        state_dict[MASTER_WEIGHTS] = {
            index: self._master_of[param]
            for packed, group in zip(state_dict["param_groups"], self.param_groups)
            for index, param in zip(packed["params"], group["params"])
            if param in self._master_of
        }
        return state_dict

    def load_state_dict(self, state_dict: dict) -> None:
        state_dict = state_dict.copy()
        for hook in self._optimizer_load_state_dict_pre_hooks.values():  # as Optimizer.load_state_dict runs them
            replaced = hook(self, state_dict)
            state_dict = state_dict if replaced is None else replaced
        saved_masters = state_dict.pop(MASTER_WEIGHTS, {})
        params = [p for group in self.param_groups for p in group["params"]]
        for index in saved_masters:
            if params[index] not in self._master_of:
                raise ValueError(f"the state_dict has a master weight for parameter {index}, which is "
                                 f"{params[index].dtype} here")
        self.optimizer.load_state_dict(state_dict)  # casts the state to the master weights' dtypes
        for group, inner in zip(self.param_groups, self.optimizer.param_groups):
            _copy_hyperparameters(inner, group)
        with torch.no_grad():
            for index, saved in saved_masters.items():
                self._master_of[params[index]].copy_(saved)
        for hook in self._optimizer_load_state_dict_post_hooks.values():
            hook(self)


def _copy_hyperparameters(source: dict, target: dict) -> None:
    params = target["params"]
    target.clear()
    target.update(source)
    target["params"] = params


class _StateOfParameters(Mapping):
    """The optimizer's state keyed by your parameters (it keys a 16-bit parameter's state by its master)."""

    def __init__(self, owner: MasterWeights) -> None:
        self._owner = owner

    def _key(self, param: torch.Tensor) -> torch.Tensor:
        return self._owner._master_of.get(param, param)

    def __getitem__(self, param: torch.Tensor) -> dict:
        return self._owner.optimizer.state[self._key(param)]

    def __iter__(self) -> Iterator[torch.Tensor]:
        state = self._owner.optimizer.state
        seen = set()
        for group in self._owner.param_groups:
            for param in group["params"]:
                if param not in seen and self._key(param) in state:
                    seen.add(param)
                    yield param

    def __len__(self) -> int:
        return sum(1 for _ in self)
