"""The demo's memory part: a Fourier neural operator (Li et al. 2021) of a few spectral layers, forward and
backward, in each 16-bit complex dtype and in complex64: peak memory, what autograd keeps, agreement, time."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.autograd import ProfilerConfig, ProfilerState, _disable_profiler_legacy, _enable_profiler_legacy

from ... import dtypes
from .measure import PathWatch, duration, error_summary, line, mebibytes, median_seconds, relative_error, widened

DEFAULT_GRID = 64
FNO_TIMED_CALLS = 3


@dataclass(frozen=True)
class Model:
    batch: int
    channels: int
    grid: int
    layers: int

    @property
    def modes(self) -> int:
        """Frequencies kept per dimension in each of the two low corners of the rfft2 spectrum."""
        return max(self.grid // 8, 1)

    def describe(self) -> str:
        return (f"{self.layers} layers, batch {self.batch}, {self.channels} channels, {self.grid}x{self.grid} grid, "
                f"{self.modes}x{self.modes} modes per corner")


def model_for(size: int | None) -> Model:
    return Model(batch=4, channels=32, grid=size or DEFAULT_GRID, layers=4)


def spectral_layer(x, spectral_weights, pointwise_weight):
    """x -> GELU(irfft2(the low modes of rfft2(x) mixed across channels by complex weights) + a pointwise
    linear map of x)."""
    modes = spectral_weights.shape[-1]
    spectrum = torch.fft.rfft2(x)
    mixed = torch.zeros(x.shape[0], spectral_weights.shape[2], *spectrum.shape[-2:], dtype=spectrum.dtype,
                        device=x.device)
    for corner, rows in enumerate((slice(None, modes), slice(-modes, None))):
        mixed[..., rows, :modes] = torch.einsum("bixy,ioxy->boxy", spectrum[..., rows, :modes],
                                                spectral_weights[corner])
    pointwise = torch.einsum("bixy,io->boxy", x, pointwise_weight)
    return F.gelu(torch.fft.irfft2(mixed, s=x.shape[-2:]) + pointwise)


def loss_and_gradients(x, spectral_weights, pointwise_weights):
    """The sum of squares of the layers' output, and its gradients with respect to x and both weights."""
    y = x
    for spectral, pointwise in zip(spectral_weights, pointwise_weights):
        y = spectral_layer(y, spectral, pointwise)
    # summed in float32 without a float32 copy of y; a mean's gradients would be float16 subnormals
    loss = y.pow(2).sum(dtype=torch.float32)
    return loss, torch.autograd.grad(loss, (x, spectral_weights, pointwise_weights))


def inputs_for(model: Model, device: str) -> dict[torch.dtype, tuple[torch.Tensor, ...]]:
    """Per 16-bit complex dtype, the input and weights rounded to it (complex) and its parts' dtype (real);
    complex64 gets complex32's values in 32 bits. Each tensor is a leaf requiring gradients."""
    c, m = model.channels, model.modes
    x = torch.randn(model.batch, c, model.grid, model.grid, device=device)
    spectral = torch.randn(model.layers, 2, c, c, m, m, dtype=torch.complex64, device=device) / c
    pointwise = torch.randn(model.layers, c, c, device=device) / c**0.5
    rounded = {dtype: tuple(t.to(d) for t, d in ((x, dtypes.REAL_OF[dtype]), (spectral, dtype),
                                                   (pointwise, dtypes.REAL_OF[dtype])))
               for dtype in dtypes.COMPLEX_TARGETS}
    rounded = {torch.complex64: widened(rounded[torch.complex32]), **rounded}
    return {dtype: tuple(t.requires_grad_() for t in tensors) for dtype, tensors in rounded.items()}


def _saved_tensors(step):
    """step's result, and the bytes of the storages autograd saved for backward meanwhile, in all and in 32-bit
    dtypes (each storage once)."""
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        part_bytes = tensor.dtype.itemsize // 2 if tensor.is_complex() else tensor.dtype.itemsize
        storages[storage.data_ptr()] = (storage.nbytes(), part_bytes)
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        result = step()
    total = sum(n for n, _ in storages.values())
    return result, total, sum(n for n, part_bytes in storages.values() if part_bytes >= 4)


def _cpu_peak(step):
    """step's result, and the most bytes PyTorch's CPU allocator had handed out during it and not taken back
    (the legacy autograd profiler's memory records, merged across threads in time order: it keeps every
    allocation, also those inside an op, without starting Kineto)."""
    _enable_profiler_legacy(ProfilerConfig(ProfilerState.CPU, False, True, False, False, False,
                                           torch._C._profiler._ExperimentalConfig()))
    try:
        result = step()
    finally:
        records = _disable_profiler_legacy()
    start = records[0][0]
    # sorted by time alone: the sort is stable, so one thread's allocation and free in the same microsecond keep
    # their order
    changes = sorted(((start.cpu_elapsed_us(r), r.cpu_memory_usage())
                      for thread in records for r in thread if r.kind() == "memory_alloc"), key=lambda c: c[0])
    live = peak = 0
    for _, change in changes:
        live += change
        peak = max(peak, live)
    return result, peak


def _cuda_peak(step):
    """step's result, and torch.cuda.max_memory_allocated during it less what was allocated before."""
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated()
    result = step()
    torch.cuda.synchronize()
    return result, torch.cuda.max_memory_allocated() - before


PEAK = {"cpu": _cpu_peak, "cuda": _cuda_peak}
PEAK_METHOD = {
    "cpu": "bytes PyTorch's CPU allocator\n  handed out and had not taken back, 32-bit temporaries inside ops included "
           "(the legacy autograd profiler's memory records)",
    "cuda": "torch.cuda.max_memory_allocated\n  during forward+backward, less what was allocated before it",
}
COLUMNS = ("dtype", "peak memory", "peak vs complex64", "saved for backward", "of it 32-bit",
           "saved vs complex64", "loss error", "gradient error", "time", "time vs complex64", "jitdtypes path")
WIDTHS = (10, 11, 17, 18, 12, 18, 10, 14, 9, 17)


@dataclass
class Run:
    loss: torch.Tensor
    gradients: tuple
    peak: int
    saved: int
    saved_32bit: int
    path: str
    seconds: float


def _measured_run(inputs, device, seconds) -> Run:
    watch = PathWatch()
    ((loss, gradients), saved, saved_32bit), allocated = PEAK[device](
        lambda: _saved_tensors(lambda: loss_and_gradients(*inputs)))
    peak = allocated + sum(t.untyped_storage().nbytes() for t in inputs)
    return Run(loss, gradients, peak, saved, saved_32bit, "+".join(sorted(watch.paths())) or "native", seconds)


def _agreement(run: Run, inputs) -> list[str]:
    """The loss's error and the largest of the gradients' errors against complex64 on the same values."""
    loss, gradients = loss_and_gradients(*(t.requires_grad_() for t in widened(t.detach() for t in inputs)))
    return [f"{relative_error(run.loss, loss):.1e}", f"{max(map(relative_error, run.gradients, gradients)):.1e}"]


def _ratio(value, complex64_value) -> str:
    return f"{value / complex64_value:.2f}" if complex64_value else "-"


def report(device: str, size: int | None) -> int:
    """Prints the memory table; returns how many runs failed."""
    model = model_for(size)
    print(f"Memory: a Fourier neural operator, {model.describe()}. Each layer:\n"
          "  rfft2 -> low modes x complex weights (einsum) -> irfft2, plus a pointwise linear path, GELU. Forward and "
          "backward of\n  the sum of squares, eager; input and weights rounded to the dtype (complex64: complex32's "
          "values).\n"
          f"  peak memory: input, weights and the most forward+backward had allocated at once: {PEAK_METHOD[device]}."
          "\n  saved for backward: the tensors autograd kept (saved_tensors_hooks, each storage once); of it 32-bit: "
          "those in float32\n  or complex64. errors: the loss's, and the largest of the gradients' (x and both "
          "weights), against complex64 on the\n  same values. time: forward+backward, median of "
          f"{FNO_TIMED_CALLS} after a warm-up, runs taking turns.")
    torch.manual_seed(0)
    inputs = inputs_for(model, device)
    failed = {}
    for dtype, tensors in inputs.items():  # the warm-up: first calls specialize their paths and fill caches
        try:
            loss_and_gradients(*tensors)
        except Exception as exc:  # noqa: BLE001 - reported in its row; the other dtypes still run
            failed[dtype] = error_summary(exc)
    working = [dtype for dtype in inputs if dtype not in failed]
    timed = median_seconds([lambda tensors=inputs[dtype]: loss_and_gradients(*tensors) for dtype in working],
                           device, FNO_TIMED_CALLS, warm_up=False)
    runs = {dtype: _measured_run(inputs[dtype], device, seconds) for dtype, seconds in zip(working, timed)}
    wide = runs.get(torch.complex64)
    print(line(COLUMNS, WIDTHS))
    for dtype in inputs:
        name = dtypes.NAMES.get(dtype, "complex64")
        if dtype in failed:
            print(line([name, "FAILED", failed[dtype]], WIDTHS[:2]))
            continue
        run = runs[dtype]
        agreement = _agreement(run, inputs[dtype]) if dtype in dtypes.REAL_OF else ["-", "-"]
        print(line([name, mebibytes(run.peak), _ratio(run.peak, wide and wide.peak), mebibytes(run.saved),
                    mebibytes(run.saved_32bit), _ratio(run.saved, wide and wide.saved), *agreement,
                    duration(run.seconds), _ratio(run.seconds, wide and wide.seconds) + "x", run.path], WIDTHS))
    return len(failed)
