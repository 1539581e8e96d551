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


# --- exercises as cells: an answer cell after each exercise ---------------------------------------------------

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.py"))
DISCUSSION_MARK = "*For discussion: this exercise has no self-check.*"


def answer_cells(path: Path) -> dict[str, str]:
    """``{label: source of the code cell that follows the markdown cell holding the exercise}`` (an empty source
    where no code cell follows before the next markdown cell with an exercise)."""
    cells = jupytext.read(path).cells
    found = {}
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        labels = [LABEL.search(match["body"]).group(1) for match in DIRECTIVE.finditer(cell.source)
                  if match["name"] == "exercise" and LABEL.search(match["body"])]
        following = cells[index + 1] if index + 1 < len(cells) else None
        for label in labels:
            found[label] = following.source if following is not None and following.cell_type == "code" else ""
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_exercise_has_its_own_answer_cell(path):
    """Each exercise sits in a markdown cell of its own, followed by its answer cell: ``answer = ...`` then its
    check where it has a self-check, a cell for notes where it is for discussion (and its text says so)."""
    cells = answer_cells(path)
    if not cells:
        pytest.skip(f"{path.stem} holds no exercises")
    checked = {label for chapter in chapter_names() for label in self_checks(chapter).by_label}
    texts = {LABEL.search(match["body"]).group(1): match["body"] for cell in jupytext.read(path).cells
             if cell.cell_type == "markdown" for match in DIRECTIVE.finditer(cell.source)
             if match["name"] == "exercise"}
    for label, source in cells.items():
        assert source, f"{path.stem}: {label} has no answer cell after it"
        if label in checked:
            assert re.match(r"answer = \.\.\.", source), f"{label}: the answer cell starts from answer = ..."
            assert f'check("{label}", answer)' in source, f"{label}: the answer cell calls its check"
        else:
            assert source.startswith(f"# {label} is for discussion"), f"{label}: a discussion cell for notes"
            assert DISCUSSION_MARK in texts[label], f"{label}'s text does not say it is for discussion"


def test_each_markdown_cell_holds_at_most_one_exercise():
    crowded = [f"{path.stem}: {labels}" for path in NOTEBOOKS for cell in jupytext.read(path).cells
               if cell.cell_type == "markdown" and len(labels := LABEL.findall(cell.source)) > 1
               and cell.source.count("{exercise}") > 1]
    assert not crowded, f"markdown cells with several exercises: {crowded}"


def test_an_answer_cell_left_blank_runs_and_says_what_to_put_there():
    checks = self_checks("balance")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        checks.check("ex-balance-scalar", ...)
    assert "no answer yet" in printed.getvalue() and checks["ex-balance-scalar"].asks in printed.getvalue()
    assert "Hint" not in printed.getvalue()


@pytest.mark.parametrize("chapter", chapter_names())
def test_an_answer_of_the_wrong_type_is_told_the_type_the_check_takes(chapter):
    """A string, None or a dict is never "not yet": the student learns which kind of answer the check takes."""
    checks = self_checks(chapter)
    for label, entry in checks.by_label.items():
        for wrong_type in ("0.5", None, {"answer": 1.0}):
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                checks.check(label, wrong_type)
            message = printed.getvalue()
            assert "not yet" not in message and "this check takes" in message, f"{label}: {message}"
            assert type(wrong_type).__name__ in message or "None" in message, f"{label}: {message}"


def test_the_kind_a_judge_takes():
    from icllib.exercises import exactly, number_near, numbers_near, same_names

    import numpy as np
    import torch

    one = number_near(lambda: 1.0)
    assert all(one.takes(value) for value in (1, 1.0, np.float32(1), np.array(1.0), torch.tensor(1.0)))
    assert not any(one.takes(value) for value in ("1", True, [1.0], None, np.array([1.0])))
    pair = numbers_near(lambda: (1.0, 2.0))
    assert pair.takes((1, 2)) and pair.takes(np.ones(3)) and not pair.takes("1, 2") and not pair.takes(["1", "2"])
    assert exactly(lambda: 3).takes(3) and not exactly(lambda: 3).takes("3")
    assert "number" in exactly(lambda: 3).expects() and exactly(lambda: "yes").expects() == "a str"
    names = same_names(lambda: ("beta3", "beta4"))
    assert names(["Beta4", "beta3"]) and not names(["beta3"]) and not names.takes("beta3")
