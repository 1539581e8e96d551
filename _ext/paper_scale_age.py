"""How old the archived paper-scale runs are, in one sentence for the status page: how many commits each is behind
the code, and whether what changed since in its chapter's code can change what the checks measure or only what the
page shows.

A changed file of a chapter's code (``paper_scale.code_since``) is sorted by what changed in it:

- ``prose``: nothing but comments, markdown and docstrings (the file's syntax tree, docstrings left out, is the
  same at the run's commit and now);
- ``display``: the figures, the claim cards and the exercises (``icllib/plotting.py``, ``icllib/cards.py``, the
  exercises' modules), or, in a notebook, only lines that draw (``ax.``, ``plt.``, ``fig``, a caption);
- ``checks``: anything else, which may change what a check measures: a line of a notebook's code that is not
  drawing, any other ``icllib`` module. A change the sorting cannot place counts here, never as a harmless one.
"""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

KINDS = ("checks", "display", "prose")
DISPLAY_MODULES = re.compile(r"icllib/(plotting|cards|exercises)\.py$|exercises\.py$")
CHECK_LINE = re.compile(r"check_claim|show_archived_check|CHECKS|check_args|check_arguments|\bC\[")
PLOT_LINE = re.compile(r"\bax(es)?\b|\bax\.|plt\.|\bfig\b|figure|plotting|legend|caption|draw|colou?r|label")


def _git(root: Path, *arguments: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), *arguments], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None


def commits_behind(commit: str, root: Path) -> int | None:
    """How many commits of ``root``'s history follow ``commit`` up to HEAD; None when git does not know it (or
    ``root`` is not a git checkout). A run of uncommitted changes (``<commit>+dirty``) counts from its commit.

    Raises ``ValueError`` naming ``commit`` for anything but a commit's hexadecimal id."""
    if not isinstance(commit, str) or not re.fullmatch(r"[0-9a-f]{4,40}(\+dirty)?", commit):
        raise ValueError(f"commit must be a commit's id (hexadecimal), got {commit!r}")
    counted = _git(Path(root), "rev-list", "--count", f"{commit.split('+')[0]}..HEAD")
    return int(counted) if counted and counted.strip().isdigit() else None


def line_kind(line: str) -> str:
    """What a changed line of a chapter notebook (py:percent) is: ``prose``, ``display`` or ``checks``."""
    text = line.strip()
    if not text or text.startswith("#"):
        return "prose"
    if CHECK_LINE.search(text):
        return "checks"
    return "display" if PLOT_LINE.search(text) else "checks"


def code_without_prose(source: str) -> str | None:
    """The syntax tree of a Python file without its docstrings and comments (``ast.dump``); None for a file that
    does not parse (then it counts as changed in what it runs)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


def change_kind(path: str, commit: str, root: Path) -> str:
    """What the changes to ``path`` (relative to ``root``) since ``commit`` touch: ``prose``, ``display`` or
    ``checks`` (see the module's docstring)."""
    root = Path(root)
    before = _git(root, "show", f"{commit.split('+')[0]}:{path}")
    after = (root / path).read_text(encoding="utf-8") if (root / path).is_file() else None
    if before is not None and after is not None and code_without_prose(before) is not None \
            and code_without_prose(before) == code_without_prose(after):
        return "prose"
    if DISPLAY_MODULES.search(path):
        return "display"
    if not path.startswith("notebooks/"):
        return "checks"
    diff = _git(Path(root), "diff", "-U0", commit.split("+")[0], "--", path) or ""
    lines = [line[1:] for line in diff.splitlines()
             if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    kinds = {line_kind(line) for line in lines} or {"prose"}
    return next(kind for kind in KINDS if kind in kinds)


def _range(numbers: list[int]) -> str:
    low, high = min(numbers), max(numbers)
    return f"{low}" if low == high else f"{low} to {high}"


def age_sentence(runs: dict[str, dict], root: Path) -> str:
    """One sentence on the archived runs (``paper_scale.chapter_runs``): how many commits behind the code they
    are, the oldest named, and whether the chapters' code changed since in ways that touch the checks or only
    the plots and prose, naming the chapters of the first kind."""
    if not runs:
        return "No paper-scale run is archived yet (make paper-scale)."
    behind = {chapter: commits_behind(run["commit"], root) for chapter, run in runs.items()}
    known = {chapter: count for chapter, count in behind.items() if count is not None}
    if not known:
        return (f"The {len(runs)} archived paper-scale runs were made at commits this checkout's git history does "
                "not hold, so how far behind the code they are is unknown.")
    oldest = max(known, key=known.get)
    age = (f"The {len(runs)} archived paper-scale runs are {_range(list(known.values()))} commits behind the code "
           f"(the oldest, {oldest}, ran on {runs[oldest]['date'][:10]})")
    touched: dict[str, set[str]] = {}
    for chapter, run in runs.items():
        code = run.get("code") or {}
        for path in code.get("changed", []):
            touched.setdefault(chapter, set()).add(change_kind(path, run["commit"], root))
    checks = sorted(chapter for chapter, kinds in touched.items() if "checks" in kinds)
    if not touched:
        return age + ", and no chapter's code changed since its run."
    if not checks:
        return age + ("; the changes since touch only what the pages show (prose, figures, cards, exercises), not "
                      "what the checks measure.")
    others = sorted(set(touched) - set(checks))
    whose = "all of them" if len(checks) == len(runs) else f"{len(checks)} of them ({', '.join(checks)})"
    return (age + f"; since then the code that the checks of {whose} run has changed, not only their prose or "
            "figures, so their archived numbers describe older code and may differ from a run of today's"
            + (f", and that of {', '.join(others)} only in what the pages show (prose, figures, cards, exercises)"
               if others else "") + ".")
