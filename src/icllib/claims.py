"""The claims ledger: every number a chapter takes from a paper is checked here and recorded.

The registry is one YAML file per chapter in ``icllib/registry/``. Each file names its chapter and
lists its claims and errata::

    chapter: balance                      # the chapter module's name
    title: The law of balance in attention
    page: notebooks/balance               # the chapter's document name in the book
    paper: ziyin2023balance               # a key of book/references.bib
    paper_file: <text file>               # the paper's text (line numbers refer to it)
    other_paper_files: []                 # optional: other extractions of the same paper (same numbering)
    claims:
      - id: balance.euler-identity
        location: Theorem B.3, line 14     # names the numbered result(s) the row covers
        statement: The loss is invariant under W_K -> lambda W_K, W_Q -> W_Q / lambda.   # the paper's words
        evidence: ...                     # optional: what the book checks, where sharper than the statement
        verdict: reproduced               # one of VERDICTS, below
        erratum: balance.E1               # required when the verdict is "corrected" (and only then)
        note: balance.N1                  # required when the verdict is "clarified"
        run: full mode, B = 200, seeds 0-2, 2026-11-22   # required for "not reproduced"
        deciding_run: full mode at B = 200 (about 1 h on 2 cores)  # required for "inconclusive"
        reason: ...                       # required when the verdict is "out of scope"
        modes: [default, full]            # optional: the run modes whose sizes can test it (default: all)
        setting: "covered: ..."           # optional: how the setting checked relates to the paper's: "paper",
                                          # "covered: <why the statement covers it>" or "other: <what differs>"
    errata:                               # the paper's words are wrong
      - id: balance.E1
        location: App. B.11, Eq. 114
        line: 41                          # the line of paper_file where the quote starts
        quote: the paper's words, verbatim (" ... " marks an elision)
        correction: what holds instead
        evidence: how the chapter shows it (a check that fails on the printed version)
        extraction:                       # required for an erratum: could the error be the text extraction's?
          artefact: ruled out             # "ruled out" or "possible" (then the passage is a note)
          why: the kind of error, and the paper's own lines that prove the printed version wrong
    notes:                                # the paper is right but ambiguous or easy to misread
      - id: balance.N1
        location: App. B.11
        line: 45
        quote: the paper's words, verbatim
        clarification: how to read them
        evidence: how the chapter shows it

The verdicts mean one thing each (the ledger page shows this legend):

- ``reproduced``: the paper states it; a check that could fail passes at the paper's setting or at a
  setting the paper's statement covers.
- ``corrected``: the paper's words are wrong; an erratum quotes them verbatim with the line, gives the
  fix and a check that fails on the printed version.
- ``clarified``: the paper is right but ambiguous or easy to misread; a note, not an erratum.
- ``not reproduced``: run at the paper's own settings (named in ``run``), the result differs.
- ``inconclusive``: not run at the paper's settings, or too few runs to tell; ``deciding_run`` names the
  run that would decide it and its cost.
- ``beyond the paper``: the book's own result; the paper does not state it.
- ``out of scope``: not checked, for the ``reason`` given.

The rules that decide between them are ``VERDICT_RULES`` (also on the ledger page); ``verdict_problems()``
enforces their mechanical part on the registry and the archived paper-scale runs.

:func:`check_claim` compares a measured value with the paper's value (or with bounds), appends a
record to the results file (``_build/claims/<mode>/results.jsonl`` under the book's root, or the path in
``ICLLIB_RESULTS``) and raises ``AssertionError`` quoting the claim when the check fails. The book's
ledger page is built from the registry and these records. :func:`save_arrays` records the few small
arrays a paper-scale figure is drawn from; :func:`archived_arrays` reads them back from the archive.
"""

from __future__ import annotations

import html
import json
import math
import numbers
import os
import re
import time
import uuid
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from icllib.config import MODES, mode

VERDICTS = ("reproduced", "corrected", "clarified", "not reproduced", "inconclusive",
            "beyond the paper", "out of scope")
VERDICT_MEANINGS = {
    "reproduced": "the paper states it; a check that could fail passes at the paper's setting or at a "
                  "setting the paper's statement covers (rule R2), and no archived paper-scale check of it "
                  "failed (R1)",
    "corrected": "the paper's words are wrong, however small the slip (R3); an erratum quotes them with the line, "
                 "gives the fix and a check that fails on the printed version, and rules out the text "
                 "extraction as the source of the error (R4)",
    "clarified": "the paper is right but ambiguous or easy to misread, or its printed text may be the "
                 "extraction's slip (R4); a note, not an erratum",
    "not reproduced": "run at the paper's own settings, the result differs; the row names that run",
    "inconclusive": "not run at the paper's settings, or too few runs to tell; the row names the run that "
                    "would decide it and its cost",
    "beyond the paper": "the book's own result: the paper does not state it",
    "out of scope": "not checked, for the reason given",
}
# The rules that decide a verdict; verdict_problems() enforces their mechanical part.
VERDICT_RULES = (
    "R1. A row whose check failed in an archived paper-scale run (its chapter's file in results/full) is neither "
    "reproduced nor clarified: it is not reproduced, inconclusive (with the deciding run) or corrected.",
    "R2. Reproduced needs a passing check at the paper's setting or at one its statement covers. A statement "
    "covers another setting only where it is made of a class that holds it: another corpus is covered when "
    "the statement is about a kind of data (any distribution meeting an assumption, natural text), not when "
    "it reports what was seen on a named corpus (WikiText-2 covers WikiText-2 only); another initialisation "
    "when the statement assumes none or a class that holds ours (another seed of the paper's own scheme is "
    "the paper's setting); a smaller width, fewer steps or fewer seeds never, unless the statement is made "
    "for every size. A row checked elsewhere says so in its setting field (covered: why, or other: what "
    "differs, which makes it inconclusive).",
    "R3. An inaccurate statement (not ambiguous: wrong as printed) is an erratum whatever its size; a note "
    "is for a right statement that can be misread, or a choice the paper states.",
    "R4. Every erratum says whether its error could be the text extraction's (a dropped minus sign, repeated "
    "rows, a lost comma or bracket): where it could, the passage is a note saying so, unless the paper's own "
    "surrounding mathematics (named by line) proves the printed version wrong: other lines repeat it or build on "
    "it, or no reading that undoes the slip agrees with them.",
    "R5. One run, one row: a row that re-checks another row's run at a smaller size (a shadow row) is "
    "folded into that row or retired.",
)
EXTRACTION_VERDICTS = ("ruled out", "possible")
SETTING_KINDS = ("paper", "covered", "other")
# Words of a row that say its check ran on a stand-in for the paper's setting: such a row names its setting.
STAND_IN_WORDS = ("instead of", "not wikitext", "not at the paper", "not the paper's", "cannot be downloaded")
# Words of a note that call the printed text wrong: such a note is an erratum (R3) unless the slip may be the
# extraction's (R4).
WRONG_WORDS = ("typo", "is wrong", "are wrong", "incorrect", "is false", "misprint")
# The field a verdict requires, and what it must hold.
REQUIRED_FIELD = {
    "corrected": ("erratum", "must name its erratum"),
    "clarified": ("note", "must name its note"),
    "not reproduced": ("run", "must name the run at the paper's settings that produced it (run)"),
    "inconclusive": ("deciding_run", "must name the run that would decide it and its cost (deciding_run)"),
    "out of scope": ("reason", "must give its reason"),
}
REGISTRY_VARIABLE = "ICLLIB_REGISTRY"
RESULTS_VARIABLE = "ICLLIB_RESULTS"
# One token per Python process: the ledger shows every record of the latest run that checked a claim.
_RUN_TOKEN = uuid.uuid4().hex


@dataclass(frozen=True)
class Claim:
    """One numbered statement of a paper, with where it stands and what we concluded."""

    id: str
    chapter: str
    page: str
    paper: str
    location: str
    statement: str
    verdict: str
    evidence: str | None = None
    erratum: str | None = None
    note: str | None = None
    run: str | None = None
    deciding_run: str | None = None
    reason: str | None = None
    modes: tuple[str, ...] = MODES
    setting: str | None = None


@dataclass(frozen=True)
class Erratum:
    """A passage of a paper quoted verbatim: wrong as written (an erratum) or easy to misread (a note).

    ``correction`` holds the erratum's correction, or the note's clarification.
    """

    id: str
    chapter: str
    page: str
    paper: str
    paper_file: str
    location: str
    line: int
    quote: str
    correction: str
    evidence: str
    kind: str = "erratum"
    extraction: str | None = None       # "ruled out" or "possible" (rule R4)
    extraction_why: str | None = None


@dataclass(frozen=True)
class Registry:
    """All chapters' claims and errata, keyed by id, plus each chapter's header."""

    claims: dict[str, Claim]
    errata: dict[str, Erratum]
    notes: dict[str, Erratum] = field(default_factory=dict)
    chapters: dict[str, dict] = field(default_factory=dict)


def _require(entry: dict, key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{where}: field {key!r} is missing or empty")
    return value.strip()


# --- Reading a registry file -------------------------------------------------------------------------------
# An id reaches published pages as an HTML id, a Sphinx label and raw Markdown (the errata page's `(label)=`
# lines, a claim card's attributes), so it is held to the shape every id of the book has: `<chapter>.<what>`
# in letters, digits and `_ . -`. Anything else (a quote, a newline, a `<`) is refused before a page is built.
ID_PATTERN = re.compile(r"[a-z_]+\.[A-Za-z0-9_.-]+")
# The header's names end up in links and roles too: a chapter is a module name, a page a document path, a paper
# a BibTeX key.
HEADER_PATTERNS = {"chapter": re.compile(r"[a-z_][a-z0-9_]*"), "page": re.compile(r"[A-Za-z0-9_./-]+"),
                   "paper": re.compile(r"[A-Za-z0-9_:.-]+")}


class _StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (PyYAML keeps the last silently)."""

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _value in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def registry_document(path: Path) -> dict:
    """One registry file as a mapping, read as UTF-8 by the one loader every reader of the registry uses.

    Raises ``ValueError`` naming the file and the line for a YAML error or a key given twice in one mapping, and
    naming the file for a document that is not a mapping or a section (``claims``, ``errata``, ``notes``) that is
    not a list of mappings.
    """
    path = Path(path)
    try:
        document = yaml.load(path.read_text(encoding="utf-8"), Loader=_StrictLoader)  # noqa: S506  (a safe loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = f", line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"{path}{line}: {error.problem or error.context}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not YAML: {error}") from None
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text: {error}") from None
    if document is None:
        return {}
    if not isinstance(document, dict):
        raise ValueError(f"{path}: a registry file is a mapping (chapter, title, page, paper, claims, ...), "
                         f"got a {type(document).__name__}")
    for section in ("claims", "errata", "notes"):
        entries = document.get(section)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise ValueError(f"{path}: {section!r} must be a list of entries, got a {type(entries).__name__}")
        for index, entry in enumerate(entries, start=1):
            if not isinstance(entry, dict):
                raise ValueError(f"{path}: entry {index} of {section!r} must be a mapping (id: ..., ...), "
                                 f"got {entry!r}")
    return document


def _identifier(entry: dict, where: str) -> str:
    """The entry's id, refused unless it has the shape of :data:`ID_PATTERN`."""
    identifier = _require(entry, "id", where)
    if not ID_PATTERN.fullmatch(identifier):
        raise ValueError(f"{where}: id {identifier!r} must read <chapter>.<what> in letters, digits and _ . - "
                         f"(pattern {ID_PATTERN.pattern})")
    return identifier


def _optional(entry: dict, key: str, where: str) -> str | None:
    """An optional text field: absent, or a str (a list or a number there is a slip, not a value)."""
    value = entry.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{where}: field {key!r} must be text, got {value!r}")
    return value


def _string_list(entry: dict, key: str, where: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A field that lists names (``modes: [quick]``): a bare string would be read letter by letter."""
    value = entry.get(key)
    if value is None:
        return default
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"{where}: field {key!r} must be a list of names such as [default, full], got {value!r}")
    return tuple(value)


def _registry_files() -> list[Path]:
    override = os.environ.get(REGISTRY_VARIABLE)
    if override:
        folder = Path(override)
    else:
        folder = Path(str(resources.files("icllib") / "registry"))
    return sorted(folder.glob("*.yaml"))


def _passage(entry: dict, header: dict, where: str, kind: str) -> Erratum:
    """An erratum or a note: a verbatim quote at a line of the paper, with what to make of it."""
    line = entry.get("line")
    if not isinstance(line, int) or isinstance(line, bool) or line < 1:
        raise ValueError(f"{where}: field 'line' must be the positive line number of the quote, got {line!r}")
    extraction = entry.get("extraction")
    if extraction is not None:
        if not isinstance(extraction, dict) or extraction.get("artefact") not in EXTRACTION_VERDICTS:
            raise ValueError(f"{where}: field 'extraction' must be a mapping whose 'artefact' is one of "
                             f"{EXTRACTION_VERDICTS}, got {extraction!r}")
        _require(extraction, "why", f"{where}, extraction")
    return Erratum(
        id=_identifier(entry, where),
        chapter=header["chapter"],
        page=header["page"],
        paper=header["paper"],
        paper_file=header["paper_file"],
        location=_require(entry, "location", where),
        line=line,
        quote=_require(entry, "quote", where),
        correction=_require(entry, "correction" if kind == "erratum" else "clarification", where),
        evidence=_require(entry, "evidence", where),
        kind=kind,
        extraction=extraction["artefact"] if extraction else None,
        extraction_why=extraction["why"].strip() if extraction else None,
    )


def parse_registry(files: list[Path]) -> Registry:
    """Read and validate registry files; raises ``ValueError`` naming the file and the faulty field."""
    claims: dict[str, Claim] = {}
    passages: dict[str, dict[str, Erratum]] = {"erratum": {}, "note": {}}
    chapters: dict[str, dict] = {}
    if isinstance(files, (str, Path)) or not isinstance(files, (list, tuple)) or not files \
            or not all(isinstance(path, Path) and path.is_file() for path in files):
        raise ValueError(f"files must be a non-empty list of paths of registry files, got {files!r}")
    for path in files:
        document = registry_document(path)
        header = {key: _require(document, key, path.name) for key in ("chapter", "title", "page", "paper")}
        for key, pattern in HEADER_PATTERNS.items():
            if not pattern.fullmatch(header[key]):
                raise ValueError(f"{path.name}: {key} {header[key]!r} must match {pattern.pattern}")
        header["paper_file"] = document.get("paper_file", "")
        if not isinstance(header["paper_file"], str):
            raise ValueError(f"{path.name}: paper_file must be a file name, got {header['paper_file']!r}")
        header["other_paper_files"] = _string_list(document, "other_paper_files", path.name, ())
        chapters[header["chapter"]] = header
        for kind, section in (("erratum", "errata"), ("note", "notes")):
            for entry in document.get(section) or []:
                where = f"{path.name}, {kind} {entry.get('id')!r}"
                passage = _passage(entry, header, where, kind)
                if passage.id in passages["erratum"] or passage.id in passages["note"]:
                    raise ValueError(f"{where}: duplicate {kind} id")
                passages[kind][passage.id] = passage
        for entry in document.get("claims") or []:
            where = f"{path.name}, claim {entry.get('id')!r}"
            claim = Claim(
                id=_identifier(entry, where),
                chapter=header["chapter"],
                page=header["page"],
                paper=header["paper"],
                location=_require(entry, "location", where),
                statement=_require(entry, "statement", where),
                verdict=_require(entry, "verdict", where),
                evidence=_optional(entry, "evidence", where),
                erratum=_optional(entry, "erratum", where),
                note=_optional(entry, "note", where),
                run=_optional(entry, "run", where),
                deciding_run=_optional(entry, "deciding_run", where),
                reason=_optional(entry, "reason", where),
                modes=_string_list(entry, "modes", where, MODES),
                setting=_optional(entry, "setting", where),
            )
            if claim.setting is not None and (not isinstance(claim.setting, str)
                                              or claim.setting.split(":")[0].strip() not in SETTING_KINDS):
                raise ValueError(f"{where}: setting must start with one of {SETTING_KINDS} "
                                 f"('covered: why', 'other: what differs'), got {claim.setting!r}")
            if claim.id in claims:
                raise ValueError(f"{where}: duplicate claim id")
            if claim.verdict not in VERDICTS:
                raise ValueError(f"{where}: verdict {claim.verdict!r} is not one of {VERDICTS}")
            if claim.verdict in REQUIRED_FIELD:
                name, message = REQUIRED_FIELD[claim.verdict]
                value = getattr(claim, name)
                if not isinstance(value, str) or not value.strip():
                    raise ValueError(f"{where}: a claim that is {claim.verdict} {message}")
            if claim.erratum and claim.verdict != "corrected":
                raise ValueError(f"{where}: only a corrected claim names an erratum "
                                 f"(verdict is {claim.verdict!r}); a note fits a paper that is right")
            if not claim.modes or not set(claim.modes) <= set(MODES):
                raise ValueError(f"{where}: modes {list(claim.modes)} must be a non-empty subset of {MODES}")
            claims[claim.id] = claim
    errata, notes = passages["erratum"], passages["note"]
    for claim in claims.values():
        if claim.erratum and claim.erratum not in errata:
            raise ValueError(f"claim {claim.id!r} names unknown erratum {claim.erratum!r}")
        if claim.note and claim.note not in notes:
            raise ValueError(f"claim {claim.id!r} names unknown note {claim.note!r}")
    return Registry(claims=claims, errata=errata, notes=notes, chapters=chapters)


@cache
def _cached_registry(files: tuple[Path, ...]) -> Registry:
    return parse_registry(list(files))


def registry() -> Registry:
    """The registry of every chapter (re-read when the set of files changes)."""
    return _cached_registry(tuple(_registry_files()))


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
    measured = _as_number("measured", measured)
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
    _show_card(claim, record)

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


# --- The card a check shows where the claim is made ---------------------------------------------------------
# Each check shows a compact card under its cell: the claim linked to its ledger row, the paper's location, the
# measured value against the expected one or the bounds, the tolerance and its reason, pass or fail. The first
# card of a claim on a page carries the id the ledger row links back to (card-<anchor>).
_CARDS_SHOWN: set[str] = set()


def card_anchor(claim_id: str) -> str:
    """The HTML id of a claim's first card on its chapter page: ``balance.b11-rate`` -> ``card-balance-b11-rate``."""
    if not isinstance(claim_id, str) or not claim_id.strip():
        raise TypeError(f"claim_id must be a claim's id (a non-empty str), got {claim_id!r}")
    # Every character that is not a lower-case letter, a digit or "-" becomes "-" (for a registered id, "." and
    # "_"), so that the anchor can stand in an HTML attribute and a URL whatever the id holds.
    return "card-" + re.sub(r"[^a-z0-9-]", "-", claim_id.lower())


def _number_text(value) -> str:
    return str(value) if isinstance(value, bool) else f"{value:.6g}"


@dataclass(frozen=True)
class ClaimCard:
    """What a check shows: HTML in a page or a notebook, plain text anywhere else."""

    claim: Claim
    record: dict
    anchor: str | None

    def _target(self) -> str:
        record = self.record
        if record["expected"] is None:
            return record["tolerance"]
        if isinstance(record["expected"], bool):
            return f"expected {record['expected']}"
        return f"expected {_number_text(record['expected'])}, {record['tolerance']}"

    def __repr__(self) -> str:
        outcome = "PASS" if self.record["passed"] else "FAILED"
        return (f"[{outcome}] {self.claim.id} ({self.claim.location}; ledger: {self.claim.verdict}): measured "
                f"{_number_text(self.record['measured'])}, {self._target()}"
                + (f". Why: {self.record['why']}" if self.record["why"] else ""))

    def _repr_html_(self) -> str:
        passed = self.record["passed"]
        outcome = "pass" if passed else "FAILED"
        row = "claim-" + card_anchor(self.claim.id).removeprefix("card-")
        anchor = f' id="{self.anchor}"' if self.anchor else ""
        why = html.escape(self.record["why"]) if self.record["why"] else ""
        # the border's colour is inline so that a failed check stands out in plain Jupyter too; the text keeps the
        # page's colours (the book's CSS gives the badge light and dark variants)
        colour = "#1a7f37" if passed else "#b42318"
        return (f'<div class="claim-card claim-card-{"pass" if passed else "fail"}"{anchor} '
                f'style="border-left:4px solid {colour};padding-left:.5em"><strong>{outcome}</strong> '
                f'<a class="claim-card-id" href="../book/claims.html#{row}">{html.escape(self.claim.id)}</a> '
                f'({html.escape(self.claim.location)}; ledger: {html.escape(self.claim.verdict)})<br>measured '
                f'<code>{html.escape(_number_text(self.record["measured"]))}</code>, {html.escape(self._target())}'
                f'{"<br>" if why else ""}{why}</div>')


def _show_card(claim: Claim, record: dict) -> None:
    """Display the card of a check when a notebook kernel runs it (nothing in a plain Python process)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    anchor = None if claim.id in _CARDS_SHOWN else card_anchor(claim.id)
    _CARDS_SHOWN.add(claim.id)
    display(ClaimCard(claim, record, anchor))


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
