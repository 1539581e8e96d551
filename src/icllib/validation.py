"""Input checks shared by the chapter modules: a bad argument raises ``ValueError`` naming it.

Each check takes the parameter's name first and returns the value in the form the caller works with, so
that a public function opens with one line per argument, e.g.
``D = even_int("D", D, why="Eq. 2")`` or ``generator = torch_generator_arg("generator", generator)``.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np


def _label(name) -> str:
    """The parameter's name, which every message starts with; a helper called without one is a bug."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be the parameter's name (a non-empty str), got {name!r}")
    return name


def positive_int(name: str, value, minimum: int = 1) -> int:
    """``value`` as an ``int`` if it is an integer (not a bool) of at least ``minimum``."""
    _label(name)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def even_int(name: str, value, minimum: int = 2, *, why: str = "") -> int:
    """``value`` as an ``int`` if it is an even integer of at least ``minimum``; ``why`` cites the reason."""
    value = positive_int(name, value, minimum)
    if value % 2:
        raise ValueError(f"{name} must be even{f' ({why})' if why else ''}, got {value}")
    return value


def power_of_two(name: str, value, minimum: int = 1, *, why: str = "") -> int:
    """``value`` as an ``int`` if it is a power of two of at least ``minimum``; ``why`` cites the reason."""
    value = positive_int(name, value, minimum)
    if value & (value - 1):
        raise ValueError(f"{name} must be a power of two{f' ({why})' if why else ''}, got {value}")
    return value


def positive_number(name: str, value, *, allow_zero: bool = False) -> float:
    """``value`` as a ``float`` if it is finite and positive (or zero, with ``allow_zero``)."""
    _label(name)
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        raise ValueError(f"{name} must be finite and {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    return number


def array_like(name: str, value, *, what: str = ""):
    """``value`` itself if it is a tensor, a NumPy array, a list or a tuple (what ``torch.as_tensor`` takes
    without guessing); ``what`` describes the expected shape in the message."""
    import torch

    _label(name)
    if not isinstance(value, (torch.Tensor, np.ndarray, list, tuple)):
        raise TypeError(f"{name} must be a tensor or array{f' {what}' if what else ''}, got {type(value).__name__}")
    return value


def real_number(name: str, value) -> float:
    """``value`` as a ``float`` if it is a finite real number (any sign; not a bool, a string or an array with
    axes; a 0-d array or tensor counts as its number)."""
    _label(name)
    import torch

    if isinstance(value, (np.ndarray, torch.Tensor)) and value.ndim == 0:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if not math.isfinite(float(value)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return float(value)


def one_of(name: str, value, allowed: Iterable):
    """``value`` itself if it is one of ``allowed`` (e.g. the names of an optimiser)."""
    _label(name)
    if isinstance(allowed, (str, np.ndarray)) or not isinstance(allowed, Iterable):
        raise TypeError(f"allowed must be a collection of the values {name} may take, got {allowed!r}")
    allowed = tuple(allowed)
    if not allowed:
        raise ValueError(f"allowed must name at least one value {name} may take")
    if isinstance(value, np.ndarray) or value not in allowed:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, allowed))}, got {value!r}")
    return value


def real_array(name: str, value) -> np.ndarray:
    """``value`` as a non-empty, finite float64 array (a scalar gives a 0-d array)."""
    _label(name)
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array, got {value!r}") from None
    if array.size == 0:
        raise ValueError(f"{name} must not be empty, got {value!r}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


def torch_generator_arg(name: str, value):
    """``value`` itself if it is a ``torch.Generator`` (make one with :func:`icllib.config.torch_generator`)."""
    import torch

    _label(name)
    if not isinstance(value, torch.Generator):
        raise ValueError(f"{name} must be a torch.Generator (icllib.config.torch_generator), "
                         f"got {type(value).__name__}")
    return value


def numpy_generator_arg(name: str, value) -> np.random.Generator:
    """``value`` itself if it is a ``numpy.random.Generator`` (make one with :func:`icllib.config.rng`)."""
    _label(name)
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator (icllib.config.rng), "
                         f"got {type(value).__name__}")
    return value


def tensor_arg(name: str, value, *, shape: tuple | None = None, min_ndim: int = 0, what: str = ""):
    """``value`` itself if it is a non-empty, finite ``torch.Tensor`` with at least ``min_ndim`` axes and, if
    given, exactly ``shape``; ``what`` describes the expected shape in the message (e.g. ``"(..., 2N+1, 2D)"``).
    A NumPy array is refused as a wrong type (convert it with ``torch.as_tensor``), not as a wrong shape."""
    import torch

    _label(name)
    expected = what or (f"of shape {tuple(shape)}" if shape is not None else f"with >= {min_ndim} axes")
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor {expected}, got {type(value).__name__}"
                        + (" (convert it with torch.as_tensor)" if isinstance(value, np.ndarray) else ""))
    if value.ndim < min_ndim or (shape is not None and tuple(value.shape) != tuple(shape)):
        raise ValueError(f"{name} must be a tensor {expected}, got shape {tuple(value.shape)!r}")
    if value.numel() == 0:
        raise ValueError(f"{name} must not be empty, got shape {tuple(value.shape)!r}")
    if (value.is_floating_point() or value.is_complex()) and not bool(torch.isfinite(value).all()):
        raise ValueError(f"{name} must be finite (it holds NaN or infinite values)")
    return value


def square_matrices(name: str, value, *, what: str = "(..., n, n)"):
    """``value`` itself if it is a tensor of square matrices (at least two axes, the last two equal)."""
    tensor_arg(name, value, min_ndim=2, what=f"of square matrices {what}")
    if value.shape[-1] != value.shape[-2]:
        raise ValueError(f"{name} must be a tensor of square matrices {what}, got {tuple(value.shape)!r}")
    return value


def non_empty(name: str, values) -> tuple:
    """``values`` as a tuple if it is a collection (not a string) holding at least one element."""
    _label(name)
    if isinstance(values, str) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be a collection (a tuple or list), got {values!r}")
    values = tuple(values)
    if not values:
        raise ValueError(f"{name} must not be empty")
    return values


def int_array(name: str, value, minimum: int = 1) -> np.ndarray:
    """``value`` (a scalar or an array) as a float64 array of integers, each at least ``minimum``; floats
    that are whole numbers count as integers."""
    message = f"{name} must be an integer >= {minimum} (or a non-empty array of them), got {value!r}"
    _label(name)
    if isinstance(value, bool):
        raise ValueError(message)
    array = np.asarray(value)
    if array.size == 0:
        raise ValueError(message)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu" or np.any(array < minimum):
        raise ValueError(message)
    return array.astype(np.float64)


def path_arg(name: str, value) -> Path:
    """``value`` as a ``Path`` if it is a ``str`` or path (which need not exist)."""
    _label(name)
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"{name} must be a folder path (str or pathlib.Path), got {type(value).__name__}")
    return Path(value)


def directory_arg(name: str, value) -> Path:
    """``value`` as a ``Path`` if it is a ``str`` or path naming an existing folder."""
    _label(name)
    if not isinstance(value, (str, os.PathLike)) or not Path(value).is_dir():
        raise ValueError(f"{name} must name an existing folder, got {value!r}")
    return Path(value)


def str_list(name: str, value) -> list[str]:
    """``value`` as a list if it is a list or tuple of ``str`` (lines of a text, labels)."""
    _label(name)
    if not isinstance(value, (list, tuple)) or not all(isinstance(item, str) for item in value):
        raise TypeError(f"{name} must be a list of str, got {type(value).__name__}")
    return list(value)


def index_array(name: str, value, size: int, *, ndim: int | None = None) -> np.ndarray:
    """``value`` (an integer or a non-empty integer array, e.g. token ids or class labels) as an int64 array
    if every entry lies in ``[0, size)`` and, if given, it has ``ndim`` axes."""
    _label(name)
    size = positive_int("size", size)
    array = np.asarray(value) if isinstance(value, (numbers.Integral, np.ndarray, list, tuple)) else None
    if (isinstance(value, bool) or array is None or array.dtype.kind not in "iu" or array.size == 0
            or (ndim is not None and array.ndim != ndim) or array.min() < 0 or array.max() >= size):
        axes = f"{ndim}-d array of " if ndim else ""
        raise ValueError(f"{name} must be a non-empty {axes}integers in [0, {size}), got {value!r}")
    return array.astype(np.int64)


def token_source(name: str, value):
    """``value`` itself if it is a batchified token stream: a 2-d array (or tensor) of non-negative integer
    token ids, ``(steps, batch)`` with at least two steps (inputs and their next tokens)."""
    _label(name)
    array = value.detach().cpu().numpy() if type(value).__name__ == "Tensor" else value
    if (not isinstance(array, np.ndarray) or array.dtype.kind not in "iu" or array.ndim != 2
            or array.shape[0] < 2 or array.shape[1] < 1 or array.min() < 0):
        raise ValueError(f"{name} must be a (steps >= 2, batch) array of token ids (text.batchify), "
                         f"got {value!r}")
    return value


def fraction(name: str, value, *, upper: float = 1.0) -> float:
    """``value`` as a ``float`` if it lies in the open interval ``(0, upper)`` (a probability, a tolerance)."""
    value = positive_number(name, value)
    if value >= upper:
        raise ValueError(f"{name} must lie in (0, {upper:g}), got {value!r}")
    return value
