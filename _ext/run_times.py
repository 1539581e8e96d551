"""Run times a chapter quotes, read from what the build knows, never typed by hand (issue 37: a chapter said
"152 s" where its execution in the same build took 325 s).

``{run-time}`induction_subspace``` -> how long the chapter's notebook took to run in this build's run mode, from
its stored execution (``_ext/executions.py``: the facts of the execution the page shows), e.g. "2 min 32 s in
default mode". ``{run-time}`balance full``` -> the wall time of the chapter's archived paper-scale run
(``results/full/<chapter>.json``), e.g. "54 min (the archived full run of 2026-11-26)".
"""

from __future__ import annotations

from docutils import nodes

import executions
import paper_scale
from icllib.config import mode


def duration(seconds: float) -> str:
    """``seconds`` as a reader says it: "48 s", "2 min 05 s", "1 h 02 min"."""
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def build_time(chapter: str) -> str | None:
    """How long ``notebooks/<chapter>.py`` ran in this build's mode, from its stored execution, or None."""
    source = executions.book_root() / "notebooks" / f"{chapter}.py"
    if not source.is_file():
        return None
    execution = executions.load(executions.read_source(source), mode())
    seconds = execution.facts.get("seconds") if execution is not None else None
    return f"{duration(seconds)} in {mode()} mode" if isinstance(seconds, (int, float)) else None


def archived_time(chapter: str) -> str | None:
    """The wall time of the chapter's archived full run, with its date, or None when it has none."""
    path = paper_scale.default_folder() / f"{chapter}.json"
    if not path.is_file():
        return None
    run = paper_scale.read_run(path)
    return f"{duration(run['wall_s'])} (the archived full run of {run['date'].split()[0]})"


def quoted(text: str) -> str | None:
    """What ``{run-time}`text``` reads (``chapter`` or ``chapter full``), or None when the build has no such time.
    The role and the notebooks' downloads (notebook_conversion) both say it this way."""
    chapter, _, which = text.strip().partition(" ")
    if which not in ("", "full"):
        raise ValueError(f"run-time: {text!r} is not '<chapter>' or '<chapter> full'")
    return archived_time(chapter) if which == "full" else build_time(chapter)


def run_time_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{run-time}`chapter``` or ``{run-time}`chapter full```: see the module's docstring."""
    chapter, _, which = text.strip().partition(" ")
    try:
        found = quoted(text)
    except ValueError as error:
        message = inliner.reporter.error(str(error), line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    if found is None:
        what = "no archived full run" if which == "full" else f"no stored execution in {mode()} mode"
        message = inliner.reporter.warning(f"run-time: chapter {chapter!r} has {what}", line=lineno)
        return [nodes.inline(text="not measured", classes=["run-time"])], [message]
    return [nodes.inline(text=found, classes=["run-time"])], []


def setup(app):
    app.add_role("run-time", run_time_role)
