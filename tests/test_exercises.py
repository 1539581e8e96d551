"""The chapters' exercises: at least six per chapter, each with a solution that says what a good answer
contains, and every self-check right on the instructor's solution and wrong on a typical wrong answer.

The instructor's solution of a self-checked exercise is the ``python`` block inside its ``{solution}``
directive; it runs here (quick mode) and leaves its result in ``answer``.
"""

import contextlib
import functools
import importlib
import io
import os
import pkgutil
import re
from pathlib import Path

import jupytext
import pytest

from icllib.claims import registry

ROOT = Path(__file__).resolve().parents[1]
MINIMUM_EXERCISES = 6
# A directive's opening fence (3 or more backticks), its name and argument, its body up to the closing fence of
# the same length.
DIRECTIVE = re.compile(r"^(?P<fence>`{3,})\{(?P<name>exercise|solution)\}[ \t]*(?P<argument>\S*)[ \t]*\n"
                       r"(?P<body>.*?)^(?P=fence)[ \t]*$", re.MULTILINE | re.DOTALL)
LABEL = re.compile(r"^:label:[ \t]*(\S+)", re.MULTILINE)
PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)


def chapter_names() -> list[str]:
    """The chapters, each with its exercises on its first page (a later page, ``part_of`` it, has none)."""
    return sorted(name for name, header in registry().chapters.items() if header["part_of"] is None)


def markdown_of(chapter: str) -> str:
    page = registry().chapters[chapter]["page"]
    notebook = jupytext.read(ROOT / f"{page}.py")
    return "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def exercises(chapter: str) -> dict[str, dict]:
    """``{label: {"exercise": body, "solution": body or None}}`` in the chapter's order."""
    found: dict[str, dict] = {}
    text = markdown_of(chapter)
    for match in DIRECTIVE.finditer(text):
        body = match["body"]
        if match["name"] == "exercise":
            label = LABEL.search(body)
            assert label, f"{chapter}: an exercise without a :label: ({body[:60]!r})"
            found[label.group(1)] = {"exercise": body, "solution": None}
        else:
            assert match["argument"] in found, f"{chapter}: solution to unknown exercise {match['argument']!r}"
            found[match["argument"]]["solution"] = body
    return found


@functools.cache
def self_check_modules() -> dict[str, str]:
    """``{chapter: module}``: each chapter's self-checks live in its paper's package, in the module ``exercises``
    (``<part>_exercises`` where the paper has two chapters), whose ``SELF_CHECKS`` names the chapter."""
    import icllib

    found: dict[str, list[str]] = {}
    for info in pkgutil.walk_packages(icllib.__path__, "icllib."):
        if info.name.count(".") == 2 and info.name.rsplit(".", 1)[1].endswith("exercises"):
            checks = importlib.import_module(info.name).SELF_CHECKS
            found.setdefault(checks.chapter, []).append(info.name)
    assert all(len(modules) == 1 for modules in found.values()), f"a chapter with two self-check modules: {found}"
    return {chapter: modules[0] for chapter, modules in found.items()}


def self_checks(chapter: str):
    assert chapter in self_check_modules(), f"{chapter} has no self-check module in its paper's package"
    return importlib.import_module(self_check_modules()[chapter]).SELF_CHECKS


@pytest.mark.parametrize("chapter", chapter_names())
def test_each_chapter_has_six_exercises_with_solutions(chapter):
    found = exercises(chapter)
    assert len(found) >= MINIMUM_EXERCISES, f"{chapter} has {len(found)} exercises, needs {MINIMUM_EXERCISES}"
    prefix = f"ex-{chapter.replace('_', '-')}-"
    for label, parts in found.items():
        assert label.startswith(prefix), f"{label} should start with {prefix}"
        assert parts["solution"], f"{label} has no solution"
        assert "A good answer" in parts["solution"], f"{label}'s solution does not say what a good answer contains"


@pytest.mark.parametrize("chapter", chapter_names())
def test_self_checks_match_the_exercises(chapter):
    found = exercises(chapter)
    checks = self_checks(chapter)
    assert checks.chapter == chapter
    with_code = {label for label, parts in found.items() if PYTHON_BLOCK.search(parts["solution"] or "")}
    assert set(checks.by_label) <= set(found), f"self-checks of no exercise: {set(checks.by_label) - set(found)}"
    assert with_code == set(checks.by_label), (
        f"a solution with a python block needs a self-check and vice versa: "
        f"{sorted(with_code ^ set(checks.by_label))}")
    for label in checks.by_label:
        assert f'check("{label}"' in found[label]["exercise"], f"{label}'s text does not show how to check it"
    page = registry().chapters[chapter]["page"]
    assert f"from {self_check_modules()[chapter]} import check" in (ROOT / f"{page}.py").read_text(encoding="utf-8")


def solution_cases():
    cases = []
    for chapter in chapter_names():
        for label, parts in exercises(chapter).items():
            block = PYTHON_BLOCK.search(parts["solution"] or "")
            if block:
                cases.append(pytest.param(chapter, label, block.group(1), id=label))
    return cases


@pytest.mark.parametrize("chapter, label, code", solution_cases())
def test_self_check_accepts_the_solution_and_refuses_a_wrong_answer(chapter, label, code, monkeypatch):
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    checks = self_checks(chapter)
    namespace: dict = {}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(code, f"<solution {label}>", "exec"), namespace)
    assert "answer" in namespace, f"{label}'s solution code must leave its result in `answer`"
    assert checks.passes(label, namespace["answer"]), f"{label}: the check refuses the instructor's solution"
    assert not checks.passes(label, checks[label].wrong), f"{label}: the check accepts its wrong answer"
    assert not checks.passes(label, "not an answer")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        checks.check(label, checks[label].wrong)
    assert "not yet" in printed.getvalue() and checks[label].hint in printed.getvalue()
    assert checks[label].judge.tolerance in printed.getvalue(), f"{label}: a wrong answer is not told the tolerance"
    answer_text = str(namespace["answer"])
    if len(answer_text) >= 3:
        assert answer_text not in printed.getvalue(), f"{label}: the hint gives the answer away"


def test_an_unknown_label_is_refused_by_name():
    from icllib.exercises import SelfCheck, SelfChecks, number_near

    checks = SelfChecks("lsa", SelfCheck("ex-lsa-one", "a number", number_near(lambda: 1.0), "think", 2.0))
    with pytest.raises(ValueError, match="label"):
        checks.check("ex-lsa-two", 1.0)
    with pytest.raises(ValueError, match="label"):
        SelfChecks("lsa", SelfCheck("ex-balance-one", "a number", number_near(lambda: 1.0), "think", 2.0))
    assert checks.passes("ex-lsa-one", 1.0) and not checks.passes("ex-lsa-one", 2.0)
    assert not checks.passes("ex-lsa-one", [1.0, 1.0]) and not checks.passes("ex-lsa-one", True)
