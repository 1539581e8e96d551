"""Run modes, seeds and progress bars.

Every chapter runs in one of three modes, read from the environment variable ``ICLLIB_MODE``:

- ``quick``: tests and CI; each chapter in under a minute on two cores.
- ``default``: the book the readers see; each chapter under 4 minutes, the whole book under 12 minutes on two cores.
- ``full``: paper scale; may need hours or a GPU.

The device of the heavy paths (training loops, samplers, Monte Carlo) is read from ``ICLLIB_DEVICE``: ``cpu``
(the default), ``cuda``, ``cuda:N`` or ``auto`` (CUDA when PyTorch sees it, else the CPU). Closed forms and SymPy
stay on the CPU.

Library code never seeds a global generator: it takes a :class:`numpy.random.Generator` or a
:class:`torch.Generator` made here from an explicit seed, and draws on that generator's device (a model
follows its generator, a training loop its weights). A chapter puts a heavy cell on the device with
``torch_generator(seed, device=device())``; on the CPU that is the generator it always was, so every CPU
number stays what it was. A CUDA generator with the same seed draws another stream (Philox, not the CPU's
Mersenne Twister): a GPU run is as deterministic as a CPU run, but its sample is not the CPU's, so the checks,
which are statistical, are the same and the numbers differ. Where a loop on the GPU is handed a CPU generator
(an accuracy measured on fresh data, say), :func:`generator_on` seeds a generator on the device with one draw
from it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

import numpy as np

from icllib.validation import positive_int

MODE_VARIABLE = "ICLLIB_MODE"
MODES = ("quick", "default", "full")
DEVICE_VARIABLE = "ICLLIB_DEVICE"
DEVICES = ("cpu", "cuda", "cuda:N", "auto")

T = TypeVar("T")


def mode() -> str:
    """The current run mode: ``ICLLIB_MODE`` if set, else ``"default"``.

    Raises ``ValueError`` naming the variable and the allowed values for anything else.
    """
    value = os.environ.get(MODE_VARIABLE, "default")
    if value not in MODES:
        raise ValueError(
            f"{MODE_VARIABLE}={value!r} is not a run mode; allowed values: {', '.join(MODES)}"
        )
    return value


def by_mode(*, quick: T, default: T, full: T) -> T:
    """Pick the value for the current mode, e.g. ``steps = by_mode(quick=100, default=5000, full=10**5)``."""
    return {"quick": quick, "default": default, "full": full}[mode()]


def device(value: str | None = None):
    """The ``torch.device`` of the heavy paths: ``value``, else ``ICLLIB_DEVICE``, else ``cpu``.

    ``auto`` is ``cuda`` when PyTorch sees a CUDA device and ``cpu`` otherwise. Raises ``ValueError`` naming the
    variable and the allowed values for anything else, and for ``cuda`` or ``cuda:N`` on a machine where
    PyTorch sees no such device (a run must not fall back to the CPU silently: it would take hours).
    """
    import torch

    if value is None:
        value = os.environ.get(DEVICE_VARIABLE, "cpu")
    allowed = f"allowed values: {', '.join(DEVICES)}"
    if not isinstance(value, str):
        raise ValueError(f"{DEVICE_VARIABLE} must be a string; {allowed}")
    if value == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if value == "cpu":
        return torch.device("cpu")
    name, _, index = value.partition(":")
    if name != "cuda" or (index and not index.isdigit()) or value.endswith(":"):
        raise ValueError(f"{DEVICE_VARIABLE}={value!r} is not a device; {allowed}")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise ValueError(f"{DEVICE_VARIABLE}={value!r}, but PyTorch {torch.__version__} sees no CUDA device on "
                         f"this machine; {allowed}")
    if index and int(index) >= count:
        raise ValueError(f"{DEVICE_VARIABLE}={value!r}, but this machine has {count} CUDA device(s) "
                         f"(cuda:0 to cuda:{count - 1}); {allowed}")
    return torch.device(value)


def device_description(chosen=None) -> str:
    """``cpu``, or the CUDA device with its name and the CUDA and PyTorch versions, for mode lines and records."""
    import torch

    chosen = device() if chosen is None else torch.device(chosen)
    if chosen.type != "cuda":
        return "cpu"
    index = chosen.index if chosen.index is not None else torch.cuda.current_device()
    return (f"cuda:{index} ({torch.cuda.get_device_name(index)}, CUDA {torch.version.cuda}, "
            f"torch {torch.__version__})")


def run_line() -> str:
    """The line each chapter prints first: its run mode and its device."""
    return f"run mode: {mode()}; device: {device_description()}"


def generator_on(generator, target):
    """A generator that draws on ``target``: ``generator`` itself when it is already there, else a new one on
    ``target`` seeded with one 63-bit draw from ``generator`` (so the CPU generator stays the only seed, and a
    CPU run draws exactly what it drew before devices existed)."""
    import torch

    from icllib.validation import torch_generator_arg

    generator = torch_generator_arg("generator", generator)
    if not isinstance(target, (str, torch.device)) or isinstance(target, bool):
        raise ValueError(f"target must be a torch.device or its name (cpu, cuda, cuda:N), got {target!r}")
    try:
        target = torch.device(target)
    except RuntimeError:
        raise ValueError(f"target {target!r} is not a device (cpu, cuda, cuda:N)") from None
    if target.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"target {target} is a CUDA device, but PyTorch sees none on this machine")

    def index(where):  # "cuda" without an index is the current CUDA device
        return where.index if where.index is not None or where.type != "cuda" else torch.cuda.current_device()

    if generator.device.type == target.type and index(generator.device) == index(target):
        return generator
    seed = int(torch.randint(0, 2**63 - 1, (), generator=generator, device=generator.device))
    moved = torch.Generator(device=target)
    moved.manual_seed(seed)
    return moved


def rng(seed: int) -> np.random.Generator:
    """A fresh NumPy generator (PCG64) seeded with ``seed``."""
    return np.random.default_rng(positive_int("seed", seed, minimum=0))


def torch_generator(seed: int, device=None):
    """A fresh ``torch.Generator`` seeded with ``seed``, on the CPU unless ``device`` says otherwise.

    The library's samplers and training loops draw on their generator's device, so a chapter moves a heavy
    cell to the GPU with ``torch_generator(seed, device=device())``. CUDA's generator (Philox) is not the
    CPU's (Mersenne Twister): the same seed gives another sample there.
    """
    import torch

    seed = positive_int("seed", seed, minimum=0)
    if device is None:
        generator = torch.Generator()
    else:
        try:
            generator = torch.Generator(device=torch.device(device))
        except (RuntimeError, TypeError) as error:
            raise ValueError(f"device {device!r} is not a device this machine has (cpu, cuda, cuda:N): {error}") \
                from None
    generator.manual_seed(seed)
    return generator


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str | None = None) -> Iterable[T]:
    """Wrap a long loop in a tqdm progress bar, except in ``quick`` mode where it stays silent."""
    from tqdm.auto import tqdm

    if not isinstance(iterable, Iterable):
        raise TypeError(f"iterable must be an iterable (the loop to show), got {iterable!r}")
    return tqdm(iterable, total=total, desc=desc, disable=mode() == "quick", leave=False)


if __name__ == "__main__":
    # `python -m icllib.config`: the run line, or the error of a bad ICLLIB_MODE or ICLLIB_DEVICE (exit status 2)
    import sys

    try:
        print(run_line())
    except ValueError as error:
        print(error, file=sys.stderr)
        sys.exit(2)
