"""The claims registry and its reading: what each chapter claims of its paper, with where it stands.

The registry is one YAML file per chapter in ``icllib/registry/``. Each file names its chapter and
lists its claims and errata::

    chapter: balance                      # the chapter module's name
    title: The law of balance in attention
    page: notebooks/balance               # the chapter's document name in the book
    paper: ziyin2023balance               # a key of book/references.bib
    paper_file: <text file>               # the paper's text extraction (the machine fields' line numbers refer to it)
    other_paper_files: []                 # optional: other extractions of the same paper (same numbering)
    part_of: balance                      # optional: a later page of that chapter (a long chapter read in parts);
                                          # its exercises and self-checks are on the chapter's first page
    claims:
      - id: balance.euler-identity
        location: Theorem B.3, Eq. 108     # the published paper's own numbering (section, theorem, equation,
                                          # figure, appendix) of the result(s) the row covers, and where that is
                                          # not enough a short verbatim phrase in “ ” that a search in the PDF finds
        statement: The loss is invariant under $W_K \\to \\lambda W_K$, $W_Q \\to W_Q / \\lambda$.   # the paper's words,
                                          # its mathematics in TeX between $...$, each formula whole
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
        location: App. B.11, Eq. 114      # as a claim's: the paper's numbering, never a line of the extraction
        line: 41                          # machine field: the line of paper_file where the quote starts (the
                                          # coverage tests find the quote there; no page shows it)
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
- ``corrected``: the paper's words are wrong; an erratum quotes them verbatim with their place in the paper, gives the
  fix and a check that fails on the printed version.
- ``clarified``: the paper is right but ambiguous or easy to misread; a note, not an erratum.
- ``not reproduced``: run at the paper's own settings (named in ``run``), the result differs.
- ``inconclusive``: not run at the paper's settings, or too few runs to tell; ``deciding_run`` names the
  run that would decide it and its cost.
- ``beyond the paper``: the book's own result; the paper does not state it.
- ``out of scope``: not checked, for the ``reason`` given.

The rules that decide between them are ``VERDICT_RULES`` (also on the ledger page); ``verdict_problems()``
enforces their mechanical part on the registry and the archived paper-scale runs.

A reader has the published paper, not the book's text extraction of it, so no field that a page, a card, a download
or a PDF shows cites a line of that extraction (the word "line" or "lines" and a number, ``LINE_LOCATOR``): the
registry refuses one. Extraction lines live only in the machine fields the coverage tests read (an erratum's or a
note's ``line``; ``text_claims/*.yaml``).

:func:`registry` reads every chapter's file (``ICLLIB_REGISTRY`` names another folder); :mod:`icllib.claims`
checks the claims against measured values and records the checks.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from icllib.config import MODES

VERDICTS = ("reproduced", "corrected", "clarified", "not reproduced", "inconclusive",
            "beyond the paper", "out of scope")
VERDICT_MEANINGS = {
    "reproduced": "the paper states it; a check that could fail passes at the paper's setting or at a "
                  "setting the paper's statement covers (rule R2), and no archived paper-scale check of it "
                  "failed (R1)",
    "corrected": "the paper's words are wrong, however small the slip (R3); an erratum quotes them with their place, "
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
    "is for a right statement that can be misread, or a choice the paper states. One fact is read one way "
    "wherever the paper prints it: each passage that states it wrongly is an erratum.",
    "R4. Every erratum says whether its error could be the text extraction's (a dropped minus sign, repeated "
    "rows, a lost comma or bracket): where it could, the passage is a note saying so, unless the paper's own "
    "surrounding mathematics (named by place) proves the printed version wrong: other passages repeat it or build on "
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
# A line of the text extraction cited as a place in the paper: the reader's PDF has no such numbers.
LINE_LOCATOR = re.compile(r"\blines? \d+", re.IGNORECASE)
# The text fields the published pages, cards and downloads show, per kind of entry.
SHOWN_FIELDS = {"claim": ("location", "statement", "evidence", "run", "deciding_run", "reason", "setting"),
                "passage": ("location", "quote", "correction", "clarification", "evidence")}


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


def _no_line_locator(entry: dict, where: str, kind: str) -> None:
    """Refuse a shown field that cites a line of the text extraction (see ``LINE_LOCATOR``)."""
    texts = [(key, entry.get(key)) for key in SHOWN_FIELDS[kind]]
    if kind == "passage" and isinstance(entry.get("extraction"), dict):
        texts.append(("extraction", entry["extraction"].get("why")))
    for key, text in texts:
        found = LINE_LOCATOR.search(text) if isinstance(text, str) else None
        if found:
            raise ValueError(f"{where}: field {key!r} cites {found.group()!r} of the text extraction, which a reader's "
                             f"PDF does not have: name the paper's section, theorem, equation, figure or appendix, "
                             f"or quote a short verbatim phrase (lines belong in the machine field 'line')")


def _passage(entry: dict, header: dict, where: str, kind: str) -> Erratum:
    """An erratum or a note: a verbatim quote at a line of the paper, with what to make of it."""
    _no_line_locator(entry, where, "passage")
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


def _header(document: dict, path: Path) -> dict:
    """A registry file's header: its chapter, title, page, paper and paper files."""
    header = {key: _require(document, key, path.name) for key in ("chapter", "title", "page", "paper")}
    for key, pattern in HEADER_PATTERNS.items():
        if not pattern.fullmatch(header[key]):
            raise ValueError(f"{path.name}: {key} {header[key]!r} must match {pattern.pattern}")
    header["paper_file"] = document.get("paper_file", "")
    if not isinstance(header["paper_file"], str):
        raise ValueError(f"{path.name}: paper_file must be a file name, got {header['paper_file']!r}")
    header["other_paper_files"] = _string_list(document, "other_paper_files", path.name, ())
    header["part_of"] = _optional(document, "part_of", path.name)
    if header["part_of"] is not None and not HEADER_PATTERNS["chapter"].fullmatch(header["part_of"]):
        raise ValueError(f"{path.name}: part_of {header['part_of']!r} must name a chapter "
                         f"({HEADER_PATTERNS['chapter'].pattern})")
    return header


def _claim(entry: dict, header: dict, where: str) -> Claim:
    """One row of a registry file, with the fields its verdict requires."""
    _no_line_locator(entry, where, "claim")
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
    return claim


def _check_verdict(claim: Claim, where: str) -> None:
    """The verdict is one of VERDICTS, with the field it requires, and the modes are run modes."""
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
        header = _header(document, path)
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
            claim = _claim(entry, header, where)
            if claim.id in claims:
                raise ValueError(f"{where}: duplicate claim id")
            _check_verdict(claim, where)
            claims[claim.id] = claim
    errata, notes = passages["erratum"], passages["note"]
    for claim in claims.values():
        if claim.erratum and claim.erratum not in errata:
            raise ValueError(f"claim {claim.id!r} names unknown erratum {claim.erratum!r}")
        if claim.note and claim.note not in notes:
            raise ValueError(f"claim {claim.id!r} names unknown note {claim.note!r}")
    for name, header in chapters.items():
        if header["part_of"] is not None and chapters.get(header["part_of"], {}).get("part_of", "") is not None:
            raise ValueError(f"chapter {name}: part_of {header['part_of']!r} is not a chapter's first page")
    return Registry(claims=claims, errata=errata, notes=notes, chapters=chapters)


@cache
def _cached_registry(files: tuple[Path, ...]) -> Registry:
    return parse_registry(list(files))


def registry() -> Registry:
    """The registry of every chapter (re-read when the set of files changes)."""
    return _cached_registry(tuple(_registry_files()))

