"""Input checks shared by the chapter modules: a bad argument raises ``ValueError`` naming it."""

from __future__ import annotations

import math
import numbers

import numpy as np


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) of at least ``minimum``."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def positive_number(name: str, value, *, allow_zero: bool = False) -> float:
    """``value`` as a ``float`` if it is finite and positive (or zero, with ``allow_zero``)."""
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return number
