"""Self-checks for the chapters' exercises: a student passes an answer and learns whether it is right.

Each chapter's checks live in its paper's package, in a module named ``exercises`` (``<part>_exercises`` where a
paper has two chapters: ``icllib.induction.emergence_exercises``), as a :class:`SelfChecks` table named
``SELF_CHECKS``; the chapter's Exercises section imports its ``check``::

    from icllib.lsa.exercises import check
    check("ex-lsa-cor43", 1210)      # prints "ex-lsa-cor43: right." or "...: not yet. Hint: ..."

A check never prints the expected answer. It judges with a tolerance, so a right answer computed another way (a
different seed, float32) still passes where the exercise allows it; each judge describes its own tolerance
(``judge.tolerance``), which a wrong answer is told: the text a student reads is the judge's own setting. The tests
(tests/test_exercises.py) run each check on the instructor's solution, the ``python`` block of the exercise's
``{solution}``, and on a typical wrong answer (``wrong``), which the check must refuse.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from icllib.validation import positive_number, real_number


def _callable(name: str, value) -> Callable:
    if not callable(value):
        raise ValueError(f"{name} must be a function of no arguments that returns the expected answer, got {value!r}")
    return value


@dataclass(frozen=True)
class SelfCheck:
    """One exercise's check.

    ``label`` is the exercise's label (``ex-<chapter>-<name>``), ``asks`` says what to pass and how it is
    judged, ``judge`` returns True for a right answer, ``hint`` is what a wrong answer is told (a pointer to
    the idea, never the value), and ``wrong`` is a typical wrong answer the check must refuse.
    """

    label: str
    asks: str
    judge: Callable[[Any], bool]
    hint: str
    wrong: Any


class SelfChecks:
    """A chapter's self-checks by label; ``check(label, answer)`` prints the verdict."""

    def __init__(self, chapter: str, *checks: SelfCheck):
        from icllib.claims import registry

        if not isinstance(chapter, str) or chapter not in registry().chapters:
            raise ValueError(f"chapter must be one of the book's chapters ({', '.join(registry().chapters)}), "
                             f"got {chapter!r}")
        if not all(isinstance(entry, SelfCheck) for entry in checks):
            raise ValueError("checks must be SelfCheck entries")
        self.chapter = chapter
        self.by_label = {}
        for entry in checks:
            if not entry.label.startswith(f"ex-{chapter.replace('_', '-')}-"):
                raise ValueError(f"label must start with 'ex-{chapter.replace('_', '-')}-', got {entry.label!r}")
            if entry.label in self.by_label:
                raise ValueError(f"label {entry.label!r} is given twice")
            self.by_label[entry.label] = entry

    def __getitem__(self, label: str) -> SelfCheck:
        if label not in self.by_label:
            known = ", ".join(self.by_label) or "none"
            raise ValueError(f"label must be one of this chapter's self-checked exercises ({known}), got {label!r}")
        return self.by_label[label]

    def passes(self, label: str, answer) -> bool:
        """Whether ``answer`` is right, silently; an answer of the wrong kind (a string for a number) is wrong."""
        try:
            return bool(self[label].judge(answer))
        except (TypeError, ValueError, IndexError, KeyError, AttributeError):
            if label not in self.by_label:
                raise
            return False

    def check(self, label: str, answer) -> None:
        """Print whether ``answer`` to exercise ``label`` is right; on a wrong answer, what to pass and a hint.

        The answer cell's blank default, ``answer = ...``, is told what to put there; an answer of the wrong kind (a
        string where the check takes a number) is told the kind the check takes, not "not yet"."""
        entry = self[label]
        expects = getattr(entry.judge, "expects", "")
        expects = expects() if callable(expects) else expects
        if answer is ...:
            print(f"{label}: no answer yet. Replace the ... of answer = ... by {entry.asks}, then run the cell.")
        elif expects and not entry.judge.takes(answer):
            print(f"{label}: the answer is {_kind_of(answer)}, and this check takes {expects}: {entry.asks}.")
        elif self.passes(label, answer):
            print(f"{label}: right.")
        else:
            tolerance = getattr(entry.judge, "tolerance", "")
            print(f"{label}: not yet. The check expects {entry.asks}{f', {tolerance}' if tolerance else ''}. "
                  f"Hint: {entry.hint}")


def _kind_of(answer) -> str:
    """An answer's kind as a student reads it: "a str ('0.5')", "a list of 3 entries", "None"."""
    if answer is None:
        return "None"
    name = type(answer).__name__
    article = "an" if name[:1].lower() in "aeiou" else "a"
    if isinstance(answer, str):
        return f"{article} {name} ({answer[:20]!r})"
    if isinstance(answer, (list, tuple)):
        return f"{article} {name} of {len(answer)} entr{'y' if len(answer) == 1 else 'ies'}"
    return f"{article} {name}"


def _is_number(value) -> bool:
    """A real number: an int or float (NumPy's too, or a 0-d array of one), not a bool."""
    if isinstance(value, (bool, np.bool_)):
        return False
    if isinstance(value, np.ndarray):
        return value.shape == () and np.issubdtype(value.dtype, np.number) and not np.iscomplexobj(value)
    if isinstance(value, (int, float, np.integer, np.floating)):
        return True
    # A 0-d tensor (PyTorch's) holds one number too.
    return hasattr(value, "item") and getattr(value, "shape", None) == () and _is_number(value.item())


def _is_numbers(value) -> bool:
    """Real numbers in a list, tuple or array (nested alike), none a string or a bool."""
    if isinstance(value, (str, bytes, dict, set)) or value is None:
        return False
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        return False
    return array.ndim >= 1 and np.issubdtype(array.dtype, np.number) and not np.iscomplexobj(array)


def _within(rtol: float, atol: float) -> str:
    """How a judge with these tolerances reads to a student ("to a relative 0.001")."""
    parts = ([f"relative {rtol:g}"] if rtol else []) + ([f"absolute {atol:g}"] if atol else [])
    return "to " + (" or ".join(parts) if parts else "the last bit")


def _finite_array(answer) -> np.ndarray:
    array = np.asarray(answer, dtype=float)
    if not np.all(np.isfinite(array)):
        raise ValueError("answer must be finite")
    return array


def number_near(expected: Callable[[], float], rtol: float = 1e-6, atol: float = 0.0) -> Callable[[Any], bool]:
    """A judge: the answer is one real number within ``rtol`` (relative) or ``atol`` of ``expected()``.

    ``expected`` is a function, evaluated when the check runs, so that the value is computed by the chapter's
    own closed forms rather than written into the source as a literal.
    """
    expected = _callable("expected", expected)
    rtol, atol = positive_number("rtol", rtol, allow_zero=True), positive_number("atol", atol, allow_zero=True)

    def judge(answer) -> bool:
        if isinstance(answer, bool):
            return False
        value = _finite_array(answer)
        if value.shape != ():
            return False
        return math.isclose(float(value), float(expected()), rel_tol=rtol, abs_tol=atol)

    judge.tolerance = _within(rtol, atol)
    judge.expects, judge.takes = "one number (an int or a float)", _is_number
    return judge


def numbers_near(expected: Callable[[], Any], rtol: float = 1e-6, atol: float = 0.0) -> Callable[[Any], bool]:
    """A judge: the answer is an array of ``expected()``'s shape, each entry within ``rtol`` or ``atol``."""
    expected = _callable("expected", expected)
    rtol, atol = positive_number("rtol", rtol, allow_zero=True), positive_number("atol", atol, allow_zero=True)

    def judge(answer) -> bool:
        target = np.asarray(expected(), dtype=float)
        value = _finite_array(answer)
        return value.shape == target.shape and bool(np.allclose(value, target, rtol=rtol, atol=atol))

    judge.tolerance = _within(rtol, atol) + " in each entry"
    judge.expects, judge.takes = "numbers (a tuple, list or array of them)", _is_numbers
    return judge


def number_between(low: float, high: float) -> Callable[[Any], bool]:
    """A judge: the answer is one real number in ``[low, high]`` (for measured quantities with a spread)."""
    low, high = real_number("low", low), real_number("high", high)
    if low > high:
        raise ValueError(f"low must be at most high, got low={low} > high={high}")

    def judge(answer) -> bool:
        if isinstance(answer, bool):
            return False
        value = _finite_array(answer)
        return value.shape == () and low <= float(value) <= high

    judge.tolerance = "within the range the exercise allows"  # the bounds themselves would give the answer away
    judge.expects, judge.takes = "one number (an int or a float)", _is_number
    return judge


def exactly(expected: Callable[[], Any]) -> Callable[[Any], bool]:
    """A judge: the answer equals ``expected()`` exactly (an integer, a string, a tuple of choices)."""
    expected = _callable("expected", expected)

    def judge(answer) -> bool:
        if isinstance(answer, str):
            return answer.strip().lower() == str(expected()).strip().lower()
        return answer == expected()

    def takes(answer) -> bool:
        target = expected()
        if _is_number(target):
            return _is_number(answer)
        if isinstance(target, (str, tuple, list)):
            return isinstance(answer, str) if isinstance(target, str) else isinstance(answer, (tuple, list))
        return True

    def expects() -> str:
        target = expected()
        if _is_number(target):
            return "one number (an int or a float)"
        return "a str" if isinstance(target, str) else "a tuple or list" if isinstance(target, (tuple, list)) else ""

    judge.tolerance = "exactly"
    judge.expects, judge.takes = expects, takes
    return judge


def same_names(expected: Callable[[], Any]) -> Callable[[Any], bool]:
    """A judge: the answer is a tuple, list or set of names (strings) holding the names of ``expected()`` and no
    other, in any order, in any case."""
    expected = _callable("expected", expected)

    def normal(names) -> set[str]:
        return {name.strip().lower() for name in names}

    def takes(answer) -> bool:
        return isinstance(answer, (tuple, list, set, frozenset)) and all(isinstance(name, str) for name in answer)

    def judge(answer) -> bool:
        return takes(answer) and normal(answer) == normal(expected())

    judge.tolerance = "as a set (any order)"
    judge.expects, judge.takes = "names (a tuple, list or set of str)", takes
    return judge
