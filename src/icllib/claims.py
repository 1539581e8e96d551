"""The claims ledger: every number a chapter takes from a paper is checked here and recorded.

The registry of what each chapter claims, its format and the seven verdicts, is :mod:`icllib.claim_registry`'s;
the card a check shows under its cell is ``icllib.cards``'s.

:func:`check_claim` compares a measured value with the paper's value (or with bounds), appends a
record to the results file (``_build/claims/<mode>/results.jsonl`` under the book's root, or the path in
``ICLLIB_RESULTS``) and raises ``AssertionError`` quoting the claim when the check fails. The book's
ledger page is built from the registry and these records. :func:`save_arrays` records the few small
arrays a paper-scale figure is drawn from; :func:`archived_arrays` reads them back from the archive.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import os
import re
import time
import uuid
from pathlib import Path

from icllib.cards import CardCheck, queue_card
from icllib.claim_registry import STAND_IN_WORDS, WRONG_WORDS, Claim, Registry, registry
from icllib.config import mode
from icllib.validation import path_arg

RESULTS_VARIABLE = "ICLLIB_RESULTS"
# One token per Python process: the ledger shows every record of the latest run that checked a claim.
_RUN_TOKEN = uuid.uuid4().hex

def results_path() -> Path:
    """Where records go: ``ICLLIB_RESULTS``, else ``_build/claims/<mode>/results.jsonl`` under the book root.

    One file per run mode, and none of them a book build's (a build keeps its chapters' records in a folder of its
    own, ``_ext/ledger_page.py``): the notebook tests in quick mode, run while ``make book`` builds, never reach the
    default ledger. The book root is the nearest folder above the working directory that holds ``_config.yml``;
    without one, the working directory.
    """
    override = os.environ.get(RESULTS_VARIABLE)
    if override:
        return Path(override)
    return _book_root() / "_build" / "claims" / mode() / "results.jsonl"


def _book_root() -> Path:
    here = Path.cwd().resolve()
    return next((folder for folder in (here, *here.parents) if (folder / "_config.yml").is_file()), here)


def _append(record: dict) -> None:
    """Append one record (a check, saved arrays, a figure's layout) to the results file."""
    path = results_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as stream:
        stream.write(json.dumps(record) + "\n")


def _read_records(path: Path | None):
    """Every record of the results file at ``path`` (default :func:`results_path`), in the order written."""
    path = path or results_path()
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                yield json.loads(line)


def _as_number(name: str, value) -> float | bool:
    """A finite float or a bool from a Python, NumPy or torch scalar; anything else is a ValueError."""
    if not isinstance(value, (bool, numbers.Real)) and hasattr(value, "item"):
        try:
            value = value.item()
        except (TypeError, ValueError, RuntimeError):
            pass
    if isinstance(value, bool):
        return value
    if not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number or a bool, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name} must be finite, got {number!r}")
    return number


def _describe_tolerance(rtol, atol, lower, upper) -> str:
    parts = []
    if rtol is not None:
        parts.append(f"rtol={rtol:.3g}")
    if atol is not None:
        parts.append(f"atol={atol:.3g}")
    if lower is not None:
        parts.append(f">= {lower:.6g}")
    if upper is not None:
        parts.append(f"<= {upper:.6g}")
    return ", ".join(parts)


def _checkable(claim_id) -> Claim:
    """The registered claim ``claim_id`` names, if a run in this mode may check it."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a str (a claim's id in the registry), got {type(claim_id).__name__}")
    claims = registry().claims
    if claim_id not in claims:
        raise ValueError(f"claim_id {claim_id!r} is not in the claims registry (icllib/registry/*.yaml)")
    claim = claims[claim_id]
    if claim.verdict == "out of scope":
        raise ValueError(f"claim_id {claim_id!r} is registered as out of scope and cannot be checked")
    if mode() not in claim.modes:
        raise ValueError(f"claim_id {claim_id!r} is checked only in modes {', '.join(claim.modes)}; "
                         f"this run is in mode {mode()!r}")
    return claim


def _criterion(measured, expected, rtol, atol, lower, upper) -> tuple:
    """Whether ``measured`` meets the check's criterion, with ``expected``, ``lower`` and ``upper`` as numbers
    (see :func:`check_claim`)."""
    for name, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and (_as_number(name, value) < 0 or isinstance(value, bool)):
            raise ValueError(f"{name} must be a non-negative number, got {value!r}")
    lower = None if lower is None else float(_as_number("lower", lower))
    upper = None if upper is None else float(_as_number("upper", upper))
    if expected is None and lower is None and upper is None:
        raise ValueError("check_claim needs expected (with rtol/atol) or lower/upper bounds")

    passed = True
    if expected is not None:
        expected = _as_number("expected", expected)
        if isinstance(expected, bool):
            if rtol is not None or atol is not None:
                raise ValueError("a bool expected value takes no rtol or atol")
            passed = measured is expected
        else:
            if rtol is None and atol is None:
                raise ValueError("expected needs a tolerance: give rtol and/or atol (atol=0 for equality)")
            if isinstance(measured, bool):
                raise ValueError("measured is a bool but expected is a number")
            passed = abs(measured - expected) <= (atol or 0.0) + (rtol or 0.0) * abs(expected)
    if lower is not None or upper is not None:
        if isinstance(measured, bool):
            raise ValueError("bounds need a numeric measured value, got a bool")
        if lower is not None and upper is not None and lower > upper:
            raise ValueError(f"lower ({lower}) is above upper ({upper})")
        passed = passed and (lower is None or measured >= lower) and (upper is None or measured <= upper)
    return passed, expected, lower, upper


def check_claim(
    claim_id: str,
    measured,
    *,
    expected=None,
    rtol: float | None = None,
    atol: float | None = None,
    lower: float | None = None,
    upper: float | None = None,
    why: str | None = None,
) -> None:
    """Check a registered claim against a measured value and record the result.

    It returns nothing, so a chapter cell that ends with a check echoes no bare number under its code.

    - With ``expected``, the check is ``|measured - expected| <= atol + rtol * |expected|``; at least one
      of ``rtol`` and ``atol`` must be given (``atol=0`` asks for equality). A bool ``expected`` asks for
      exactly that truth value and takes no tolerance.
    - With ``lower`` and/or ``upper``, the check is ``lower <= measured <= upper``.
    - ``why`` says where the tolerance comes from (float precision, Monte-Carlo error, the mode, ...) and,
      for a statistical check, its false-pass rate; it is required whenever a tolerance or bound is given.
      The ledger shows it, and every record of a claim checked in several places.

    Raises ``ValueError`` for an unknown id, a claim registered for other run modes, a non-finite or non-numeric value, a missing or negative
    tolerance, a tolerance or bound without ``why``, or no criterion at all; raises ``AssertionError`` quoting the claim when the check fails.
    The record is written before the assertion, so failures are in the results file too.
    """
    claim = _checkable(claim_id)
    measured = _as_number("measured", measured)
    passed, expected, lower, upper = _criterion(measured, expected, rtol, atol, lower, upper)
    has_tolerance = any(value is not None for value in (rtol, atol, lower, upper))
    if has_tolerance and not (isinstance(why, str) and why.strip()):
        raise ValueError(f"check_claim({claim_id!r}) gives a tolerance or bound, so why= must say where it comes from")

    record = {
        "id": claim_id,
        "measured": measured,
        "expected": expected,
        "tolerance": _describe_tolerance(rtol, atol, lower, upper),
        # the same criterion as numbers, for tools/compare_records.py's margins
        "criterion": {"rtol": rtol, "atol": atol, "lower": lower, "upper": upper},
        "why": why,
        "passed": bool(passed),
        "verdict": claim.verdict,
        "mode": mode(),
        "time": time.time(),
        "run": _RUN_TOKEN,
    }
    _append(record)
    queue_card(CardCheck(claim, record, archived=archived_checks(claim_id)))

    if not passed:
        target = f"expected {expected!r}" if expected is not None else "expected"
        raise AssertionError(
            f"claim {claim_id} ({claim.location}) failed: {claim.statement!r}\n"
            f"  measured {measured!r}, {target} within {record['tolerance']}"
            + (f" ({why})" if why else "")
        )


def check_arguments(checks: dict, key, /, parameter: str = "claim_id", **fields) -> dict:
    """The keyword arguments of ``check_claim`` kept for ``key`` in a chapter's table ``checks`` (tolerance or
    bounds, and ``why``), with the fields its reason names in braces filled in from ``fields`` (a Monte-Carlo
    size, a standard error measured in the run). The chapters' ``check_args`` are this on their own table.

    Raises ``TypeError`` or ``ValueError`` naming ``parameter`` for a key that is not a str or not in ``checks``,
    and ``ValueError`` naming ``fields`` when they do not fill the reason.
    """
    if not isinstance(key, str):
        raise TypeError(f"{parameter} must be a str naming a check of the chapter, got {type(key).__name__}")
    if key not in checks:
        raise ValueError(f"{parameter} {key!r} is not a check of the chapter; checks: {', '.join(sorted(checks))}")
    arguments = dict(checks[key])
    try:
        arguments["why"] = arguments["why"].format(**fields)
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(f"fields must fill the reason of {key!r}: {arguments['why']!r} needs {error}") from None
    return arguments


# --- Arrays for figures at paper scale ---------------------------------------------------------------------
# A chapter's `full` run can leave a few small arrays next to its check records (the series a figure is drawn
# from); `make paper-scale` archives them in results/full/<chapter>.json and the default-mode page draws the
# paper-scale figure from there. The cap keeps the archive at numbers, not data sets.
ARRAYS_MAX_VALUES = 20_000
ARCHIVE_FOLDER = ("results", "full")


def save_arrays(name: str, **arrays) -> None:
    """Record small numeric arrays under ``name`` in the results file (any run mode; a paper-scale run archives
    them). Values are kept to 6 significant digits; a non-finite value (a run that diverged is evidence too) is
    kept as null, which JSON can hold, and :func:`archived_arrays` reads it back as NaN.

    Raises ``ValueError`` for a ``name`` that is not a non-empty identifier, no arrays, a non-numeric array,
    or more than ``ARRAYS_MAX_VALUES`` (20,000) values in all.
    """
    import numpy as np

    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be an identifier such as 'fig6', got {name!r}")
    if not arrays:
        raise ValueError("save_arrays needs at least one array (given as keyword arguments)")
    values = {}
    for key, array in arrays.items():
        try:
            array = np.asarray(array, dtype=np.float64)
        except (TypeError, ValueError) as error:
            raise ValueError(f"array {key!r} is not numeric: {error}") from None
        values[key] = array
    total = sum(array.size for array in values.values())
    if total > ARRAYS_MAX_VALUES:
        raise ValueError(f"arrays {name!r} hold {total} values, over the {ARRAYS_MAX_VALUES} an archive keeps: "
                         "subsample them")
    record = {"arrays": name, "mode": mode(), "run": _RUN_TOKEN,
              "values": {key: [float(f"{x:.6g}") if math.isfinite(x) else None for x in array.ravel()]
                         for key, array in values.items()},
              "shapes": {key: list(array.shape) for key, array in values.items()}}
    _append(record)


def archive_path(chapter: str) -> Path:
    """``results/full/<chapter>.json`` under the book root (see :func:`results_path`)."""
    if not isinstance(chapter, str) or not chapter.isidentifier():
        raise ValueError(f"chapter must be a chapter's name such as 'balance', got {chapter!r}")
    return _book_root().joinpath(*ARCHIVE_FOLDER, f"{chapter}.json")


def archived_arrays(chapter: str, name: str) -> dict | None:
    """The arrays ``name`` archived by the last paper-scale run of ``chapter``, as numpy arrays, with that run's
    ``date``, ``commit`` and ``machine``; None when there is no archived run or it saved no such arrays."""
    import numpy as np

    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be the identifier the arrays were saved under, got {name!r}")
    path = archive_path(chapter)
    if not path.is_file():
        return None
    run = json.loads(path.read_text(encoding="utf-8"))
    saved = run.get("arrays", {}).get(name)
    if saved is None:
        return None
    arrays = {key: np.asarray(saved["values"][key], dtype=np.float64).reshape(shape)   # null -> NaN
              for key, shape in saved["shapes"].items()}
    return {**arrays, "date": run["date"], "commit": run["commit"], "machine": run["machine"]}


def archived_checks(claim_id: str, folder: Path | None = None) -> dict | None:
    """The records of ``claim_id`` in the archived paper-scale runs (the ``*.json`` of ``folder``, default
    ``results/full`` under the book root: a chapter read in parts checks some claims in the run of the page that
    held them then), with that run's ``date`` and ``commit``: ``{"date", "commit", "records"}``, or None when no
    archived run checked the claim. A claim card marks a check the archived run failed."""
    if not isinstance(claim_id, str) or claim_id not in registry().claims:
        raise ValueError(f"claim_id {claim_id!r} is not in the claims registry (icllib/registry/*.yaml)")
    folder = _book_root().joinpath(*ARCHIVE_FOLDER) if folder is None else path_arg("folder", folder)
    paths = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for path in paths:
        run = _read_archive(path, path.stat().st_mtime_ns)
        records = [record for record in run.get("records", []) if record.get("id") == claim_id]
        if records:
            return {"date": run.get("date", "?"), "commit": run.get("commit", "?"), "records": records}
    return None


@functools.lru_cache(maxsize=32)
def _read_archive(path: Path, _modified: int) -> dict:
    """An archived run, read once per version of the file (a build draws every card of a chapter from it)."""
    return json.loads(path.read_text(encoding="utf-8"))


def show_archived_check(claim_id: str) -> None:
    """Show, in a mode that does not run it, the card of a check that runs only at paper scale (``modes: [full]``):
    the values its chapter's archived full run measured (:func:`archived_checks`), or a card saying that no run
    is archived yet. It records nothing: the ledger reads the archive itself (its Paper scale column), and the book
    draws the card again from the archive of its day (``icllib.cards.drawn_again``).

    Raises ``ValueError`` for an id that is not registered, and for a run in a mode that checks the claim (call
    :func:`check_claim` there)."""
    if not isinstance(claim_id, str) or claim_id not in registry().claims:
        raise ValueError(f"claim_id {claim_id!r} is not in the claims registry (icllib/registry/*.yaml)")
    claim = registry().claims[claim_id]
    if mode() in claim.modes:
        raise ValueError(f"claim_id {claim_id!r} is checked in mode {mode()!r}: call check_claim there")
    archived = archived_checks(claim_id)
    for record in (archived or {}).get("records") or [None]:
        queue_card(CardCheck(claim, record, archived=archived, from_archive=True))


# --- Figures that read -------------------------------------------------------------------------------------
# Every figure of icllib.plotting.figure records what icllib.plotting.layout_problems found when it was drawn,
# clean or not, so that a chapter's latest run replaces the verdicts of its earlier ones.
CHAPTER_VARIABLE = "ICLLIB_CHAPTER"


def record_figure_check(figure: str, problems: list[str]) -> None:
    """Record the layout check of one drawn figure (``figure``: how to find it, e.g. its number in the chapter
    and panel titles) of the chapter that ``ICLLIB_CHAPTER`` names; ``problems`` empty for a figure that reads
    well."""
    if not isinstance(figure, str):
        raise ValueError(f"figure must be a str that names the figure, got {figure!r}")
    if not isinstance(problems, (list, tuple)) or not all(isinstance(problem, str) for problem in problems):
        raise ValueError(f"problems must be a list of str, got {problems!r}")
    record = {"figure": figure, "problems": list(problems), "chapter": os.environ.get(CHAPTER_VARIABLE, ""),
              "mode": mode(), "run": _RUN_TOKEN}
    _append(record)


def figure_problems(path: Path | None = None) -> list[str]:
    """The layout problems of every chapter's figures, each as last drawn in that chapter's latest run, one
    line each ("<chapter>: figure <figure>: <problem>")."""
    latest: dict[str, dict[str, dict]] = {}
    for record in _read_records(path):
        if "figure" in record:
            figures = latest.setdefault(record["chapter"], {})
            if figures and next(iter(figures.values()))["run"] != record["run"]:
                figures.clear()
            figures[record["figure"]] = record   # the figure as last drawn
    return [f"{chapter or 'a notebook'}: figure {figure}: {problem}"
            for chapter, figures in latest.items() for figure, record in figures.items()
            for problem in record["problems"]]


def read_all_results(path: Path | None = None) -> dict[str, list[dict]]:
    """Every record of each claim id from the latest run that checked it, in the order they were made.

    A run is one Python process (one executed notebook); records of earlier runs of the same claim, left
    in the file by a rebuild, are dropped, and so is a second copy of a record (a stored execution read
    again by an incremental build).
    """
    runs: dict[str, list[dict]] = {}
    for record in _read_records(path):
        if "id" not in record:  # arrays (save_arrays) or a figure's layout, not a check
            continue
        earlier = runs.get(record["id"], [])
        if earlier and earlier[-1].get("run") == record.get("run"):
            if record not in earlier:
                earlier.append(record)
        else:
            runs[record["id"]] = [record]
    return runs



# --- The verdict rules ------------------------------------------------------------------------------------

def _archived_failures(folder: Path | None) -> dict[str, list[str]]:
    """``{claim id: [date of each archived run whose check of it failed]}`` from ``results/full/*.json``."""
    folder = Path(folder) if folder is not None else _book_root().joinpath(*ARCHIVE_FOLDER)
    failures: dict[str, list[str]] = {}
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
        run = json.loads(path.read_text(encoding="utf-8"))
        for record in run.get("records", []):
            if record.get("passed") is False:
                failures.setdefault(record["id"], []).append(f"{path.name} of {run.get('date', '?')}")
    return failures


def verdict_problems(book: Registry | None = None, archive: Path | None = None) -> dict[str, list[str]]:
    """The rows, errata and notes that break a mechanical part of ``VERDICT_RULES``: ``{id: [problem]}``.

    - R1: a ``reproduced`` or ``clarified`` row with a failed check in an archived paper-scale run (the files
      ``*.json`` of ``archive``, default ``results/full`` under the book root);
    - R2: a ``reproduced`` row whose ``setting`` is ``other: ...``, or whose statement or evidence says it ran on
      a stand-in (``STAND_IN_WORDS``) and that names no ``setting``;
    - R3: a note whose clarification calls the printed text wrong (``WRONG_WORDS``) and does not say the
      slip may be the extraction's;
    - R4: an erratum that does not say whether its error could be the extraction's (``extraction``), or says it
      could (then it is a note);
    - R5: an ``inconclusive`` row whose deciding run names another row of the registry: the run was made and
      that row holds it, so this one shadows it.
    """
    book = book or registry()
    if not isinstance(book, Registry):
        raise TypeError(f"book must be a Registry, got {type(book).__name__}")
    problems: dict[str, list[str]] = {}
    failures = _archived_failures(archive)
    for claim in book.claims.values():
        found = problems.setdefault(claim.id, [])
        if claim.id in failures and claim.verdict in ("reproduced", "clarified"):
            found.append(f"R1: {claim.verdict} although its check failed in the archived paper-scale run "
                         f"({', '.join(failures[claim.id])})")
        if claim.verdict == "reproduced":
            kind = (claim.setting or "").split(":")[0].strip()
            words = f"{claim.statement} {claim.evidence or ''}".lower()
            if kind == "other":
                found.append(f"R2: reproduced at a setting the paper's statement does not cover ({claim.setting})")
            elif not claim.setting and any(word in words for word in STAND_IN_WORDS):
                found.append("R2: reproduced on a stand-in for the paper's setting without saying whether the "
                             "statement covers it (setting: covered: ... or other: ...)")
        if claim.verdict == "inconclusive" and claim.deciding_run:
            others = [other for other in book.claims if other != claim.id
                      and re.search(rf"{re.escape(other)}(?![\w-])", claim.deciding_run)]
            if others:
                found.append(f"R5: its deciding run is held by {', '.join(others)}: fold this row into it or "
                             f"retire it")
    for passage in book.errata.values():
        found = problems.setdefault(passage.id, [])
        if passage.extraction is None:
            found.append("R4: the erratum does not say whether its error could be the text extraction's "
                         "(extraction: artefact, why)")
        elif passage.extraction == "possible":
            found.append("R4: the error could be the text extraction's, so the passage is a note, not an erratum")
    for passage in book.notes.values():
        words = passage.correction.lower()
        if any(word in words for word in WRONG_WORDS) and passage.extraction != "possible":
            problems.setdefault(passage.id, []).append(
                "R3: the note calls the printed text wrong: an inaccurate statement is an erratum (or, where the "
                "slip may be the extraction's, the note says so: extraction: artefact: possible)")
    return {key: value for key, value in problems.items() if value}
