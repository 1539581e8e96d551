"""Run modes, seeds and progress bars.

Every chapter runs in one of three modes, read from the environment variable ``ICLLIB_MODE``:

- ``quick``: tests and CI; each chapter in under a minute on two cores.
- ``default``: the book the readers see; each chapter under 4 minutes, the whole book under 12 minutes on two cores.
- ``full``: paper scale; may need hours or a GPU.

Library code never seeds a global generator: it takes a :class:`numpy.random.Generator` or a
:class:`torch.Generator` made here from an explicit seed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TypeVar

import numpy as np

from icllib.validation import positive_int

MODE_VARIABLE = "ICLLIB_MODE"
MODES = ("quick", "default", "full")

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


def rng(seed: int) -> np.random.Generator:
    """A fresh NumPy generator (PCG64) seeded with ``seed``."""
    return np.random.default_rng(positive_int("seed", seed, minimum=0))


def torch_generator(seed: int):
    """A fresh CPU ``torch.Generator`` seeded with ``seed``."""
    import torch

    generator = torch.Generator()
    generator.manual_seed(positive_int("seed", seed, minimum=0))
    return generator


def progress(iterable: Iterable[T], *, total: int | None = None, desc: str | None = None) -> Iterable[T]:
    """Wrap a long loop in a tqdm progress bar, except in ``quick`` mode where it stays silent."""
    from tqdm.auto import tqdm

    if not isinstance(iterable, Iterable):
        raise TypeError(f"iterable must be an iterable (the loop to show), got {iterable!r}")
    return tqdm(iterable, total=total, desc=desc, disable=mode() == "quick", leave=False)
