"""Coverage of the ledger: every numbered result of every paper has a row, and every quote is verbatim.

A *numbered result* is a Theorem, Lemma, Proposition, Corollary, Hypothesis, Assumption, Remark, Figure
or Table that a paper's text names with a number (``Lemma 3``, ``Lemma A.5``, ``Fig. 6``). A ledger row
covers the results its ``location`` names (``Lemmas 13-17``, ``Figs. 15 and 16`` expand), unless its
verdict is ``beyond the paper``: the book's own result covers nothing of the paper's.

Errata and notes quote the paper verbatim at a line; :func:`quote_problems` finds each quote in the
paper's text (whitespace aside; `` ... `` marks an elision) within a few lines of the line given (the ``line``
field, a machine field: no page shows the extraction's line numbers). A row's location may quote a short phrase
in “ ” for a search in the PDF; :func:`location_phrase_problems` finds it in the text.

The paper texts live outside the repository (``$ICLLIB_PAPERS``, else a folder of texts beside the
checkout). The list of numbered results each text names is also committed, with the text's SHA-256, in
``registry/paper_results.json``: where the texts are absent (a fresh clone, CI) the rows are checked
against that list and the quotes cannot be; where they are present, a list that no longer matches its
text is itself a failure (refresh it with ``--update-list``).

Papers also claim results in their running text (sections, figure discussions, remarks in prose). Each
such claim is listed in ``registry/text_claims/<paper file stem>.yaml``, with the text's SHA-256: its line,
the paper's words (verbatim, `` ... `` for an elision), and either the ledger ``rows`` that check it, with how much of
it they test (``tested: full``, or ``tested: part`` and what is ``untested`` and why), or the ``reason`` it is out of
scope. :func:`text_claim_problems` checks the list against the registry always and
against each text present (hash and quotes).

Run ``python -m icllib.coverage [--papers DIR] [--update-list]`` to print the coverage of every paper and
exit non-zero when a result has no row, a quote is not in the paper, an erratum or note belongs to no row,
a committed list is stale, or an in-text claim has neither a row nor a reason. Texts missing from the folder
are named; the quotes of those present are checked.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from icllib.claims import Registry, registry
from icllib.validation import directory_arg, path_arg, positive_int, str_list

# Each spelling of a kind, singular and plural, mapped to the name the ledger uses.
KINDS = {
    "Theorem": "Theorem", "Theorems": "Theorem",
    "Lemma": "Lemma", "Lemmas": "Lemma",
    "Proposition": "Proposition", "Propositions": "Proposition",
    "Corollary": "Corollary", "Corollaries": "Corollary",
    "Hypothesis": "Hypothesis", "Hypotheses": "Hypothesis",
    "Assumption": "Assumption", "Assumptions": "Assumption",
    "Remark": "Remark", "Remarks": "Remark",
    "Figure": "Figure", "Figures": "Figure", "Fig.": "Figure", "Figs.": "Figure",
    "Table": "Table", "Tables": "Table",
}
LABEL = r"(?:[A-Z]\.)?\d+(?:\.\d+)*"
_KIND = "|".join(sorted((re.escape(kind) for kind in KINDS), key=len, reverse=True))
# "Lemma 3", "Lemma~A.5", "Figs. 6-14", "Propositions 1, 2 and 4"; a lone letter label needs its dot.
_MENTION = re.compile(rf"(?<![A-Za-z])({_KIND})[~\s]+({LABEL}(?:\s*(?:,|and|&|-|–|to)\s*{LABEL})*)(?![\w.]*\d)")
_SINGLE = re.compile(rf"(?<![A-Za-z])({_KIND})[~\s]+({LABEL})(?![\d])")
# The book's own numbering ("Proposition 2 of this chapter") names no result of the paper.
_OWN = re.compile(r"^\s*of this (chapter|book)")
PAPERS_VARIABLE = "ICLLIB_PAPERS"
DEFAULT_PAPERS = Path(__file__).resolve().parents[3] / "shared" / "papers"
RESULTS_LIST = Path(__file__).resolve().parent / "registry" / "paper_results.json"
TEXT_CLAIMS = Path(__file__).resolve().parent / "registry" / "text_claims"  # one <paper file stem>.yaml each
QUOTE_WINDOW = 3  # lines either side of the stated line where a quote may start


def _expand(first: str, last: str) -> list[str]:
    """The labels of a range ``first-last`` that share a prefix (``13-17``, ``C.3-C.8``, ``C.3-8``)."""
    head_first, _, number_first = first.rpartition(".")
    head_last, _, number_last = last.rpartition(".")
    if not head_last:
        head_last = head_first
    if head_first != head_last or not (number_first.isdigit() and number_last.isdigit()):
        return [first, last]
    prefix = f"{head_first}." if head_first else ""
    return [f"{prefix}{number}" for number in range(int(number_first), int(number_last) + 1)]


def named_results(text: str) -> set[str]:
    """The numbered results a piece of text names, e.g. ``{"Lemma 13", ..., "Lemma 17", "Figure 6"}``."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    found: set[str] = set()
    for match in _MENTION.finditer(text):
        if _OWN.match(text[match.end():]):
            continue
        kind = KINDS[match.group(1)]
        labels = re.findall(rf"{LABEL}|-|–|to", match.group(2))
        previous = None
        pending_range = False
        for token in labels:
            if token in ("-", "–", "to"):
                pending_range = True
                continue
            if pending_range and previous is not None:
                found.update(f"{kind} {label}" for label in _expand(previous, token))
            else:
                found.add(f"{kind} {token}")
            previous, pending_range = token, False
    return found


def paper_results(text: str) -> set[str]:
    """The numbered results a paper's text names anywhere (its statements, proofs and cross-references)."""
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return {f"{KINDS[kind]} {label}" for kind, label in _SINGLE.findall(text)}


def _normalise(text: str) -> str:
    return " ".join(text.split())


def quote_found(paper_lines: list[str], quote: str, line: int, window: int = QUOTE_WINDOW) -> bool:
    """Whether ``quote`` stands verbatim in the paper from about ``line`` on (1-based; whitespace aside).

    `` ... `` in the quote marks an elision: its parts must appear in order, the first near ``line``.
    """
    paper_lines = str_list("paper_lines", paper_lines)
    if not isinstance(quote, str):
        raise TypeError(f"quote must be a str, got {type(quote).__name__}")
    line = positive_int("line", line)
    parts = [_normalise(part) for part in re.split(r"\s*(?:\.\.\.|…)\s*", quote) if part.strip()]
    if not parts:
        raise ValueError("quote must hold some words of the paper")
    low, high = max(0, line - 1 - window), min(len(paper_lines), line + window)
    text = _normalise(" ".join(paper_lines[low:high + 60]))
    latest_start = len(_normalise(" ".join(paper_lines[low:high])))
    start = text.find(parts[0])
    while start != -1 and start <= latest_start:
        position = start + len(parts[0])
        for part in parts[1:]:
            position = text.find(part, position)
            if position == -1:
                break
            position += len(part)
        else:
            return True
        start = text.find(parts[0], start + 1)
    return False


@dataclass(frozen=True)
class PaperCoverage:
    """What one paper file names, which of it the ledger covers, and by which rows."""

    paper_file: str
    chapters: tuple[str, ...]
    results: tuple[str, ...]
    rows: dict[str, tuple[str, ...]]

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(result for result in self.results if not self.rows.get(result))


def _sort_key(result: str):
    kind, label = result.split(" ", 1)
    return kind, [(0, int(part), "") if part.isdigit() else (1, 0, part) for part in label.split(".")]


def _chapters_by_paper_file(book: Registry) -> dict[str, list[str]]:
    by_file: dict[str, list[str]] = {}
    for chapter, header in book.chapters.items():
        for name in (header["paper_file"], *header["other_paper_files"]):
            if name:
                by_file.setdefault(name, []).append(chapter)
    return dict(sorted(by_file.items()))


def missing_texts(papers: Path, book: Registry | None = None) -> list[str]:
    """The paper texts the registry names that are not in ``papers`` (all of them when it is not a folder)."""
    papers = path_arg("papers", papers)
    names = _chapters_by_paper_file(book or registry())
    return [name for name in names if not (papers.is_dir() and (papers / name).is_file())]


def texts_at_hand(papers: Path, book: Registry | None = None) -> bool:
    """Whether ``papers`` is a folder holding every paper text the registry names (a registry that names none,
    as a test's tiny book, has its texts at hand only where the folder exists)."""
    return path_arg("papers", papers).is_dir() and not missing_texts(papers, book)


def results_list_from_texts(papers: Path, book: Registry | None = None) -> dict[str, dict]:
    """``{paper file: {"sha256": ..., "results": [...]}}`` read from the texts in ``papers`` (those present)."""
    papers = directory_arg("papers", papers)
    book = book or registry()
    absent = set(missing_texts(papers, book))
    listing = {}
    for name in _chapters_by_paper_file(book):
        if name in absent:
            continue
        data = (Path(papers) / name).read_bytes()
        listing[name] = {"sha256": hashlib.sha256(data).hexdigest(),
                         "results": sorted(paper_results(data.decode("utf-8")), key=_sort_key)}
    return listing


def committed_results_list() -> dict[str, dict]:
    """The list of numbered results committed in ``registry/paper_results.json`` (empty if there is none)."""
    return json.loads(RESULTS_LIST.read_text(encoding="utf-8")) if RESULTS_LIST.is_file() else {}


def paper_coverage(papers: Path | None, book: Registry | None = None) -> list[PaperCoverage]:
    """The coverage of each paper file named by a chapter of the registry (primary and other extractions).

    The numbered results of each paper come from its text in ``papers`` where it is there, else from the
    committed list (``papers=None`` asks for the list throughout).
    """
    papers = None if papers is None else directory_arg("papers", papers)
    book = book or registry()
    listing = committed_results_list()
    if papers is not None:
        listing = {**listing, **results_list_from_texts(papers, book)}
    coverage = []
    for name, chapters in _chapters_by_paper_file(book).items():
        if name not in listing:
            raise FileNotFoundError(f"paper text {name} is neither in {papers} nor in the committed list "
                                    f"{RESULTS_LIST.name}")
        results = listing[name]["results"]
        rows: dict[str, list[str]] = {}
        for claim in book.claims.values():
            if claim.chapter in chapters and claim.verdict != "beyond the paper":
                for result in named_results(claim.location):
                    rows.setdefault(result, []).append(claim.id)
        coverage.append(PaperCoverage(paper_file=name, chapters=tuple(chapters), results=tuple(results),
                                      rows={result: tuple(rows.get(result, ())) for result in results}))
    return coverage


def quote_problems(papers: Path, book: Registry | None = None) -> list[str]:
    """Errata and notes whose quote is not verbatim near their line, or that no ledger row names.

    A passage whose paper text is not in ``papers`` is checked for its row only (:func:`missing_texts` names
    those texts).
    """
    papers = directory_arg("papers", papers)
    book = book or registry()
    absent = set(missing_texts(papers, book))
    problems = []
    cited = {claim.erratum for claim in book.claims.values()} | {claim.note for claim in book.claims.values()}
    for passage in (*book.errata.values(), *book.notes.values()):
        if passage.id not in cited:
            problems.append(f"{passage.id}: no ledger row names this {passage.kind}")
        if passage.paper_file in absent:
            continue
        lines = (Path(papers) / passage.paper_file).read_text(encoding="utf-8").splitlines()
        if not quote_found(lines, passage.quote, passage.line):
            problems.append(f"{passage.id}: quote not found verbatim near line {passage.line} of "
                            f"{passage.paper_file}: {passage.quote[:80]!r}")
    return problems


# A row's location may end with a short verbatim phrase in typographic quotes, for a search in the paper's PDF.
LOCATION_PHRASE = re.compile(r"“([^”]+)”")


def location_phrase_problems(papers: Path, book: Registry | None = None) -> list[str]:
    """Rows whose location quotes a phrase (“...”) that is not verbatim in their paper's text (whitespace aside),
    for the texts present in ``papers``: a phrase that is not in the extraction would not be found in the PDF."""
    papers = directory_arg("papers", papers)
    book = book or registry()
    absent = set(missing_texts(papers, book))
    texts: dict[str, str] = {}
    problems = []
    for claim in book.claims.values():
        header = book.chapters[claim.chapter]
        names = [name for name in (header["paper_file"], *header["other_paper_files"]) if name and name not in absent]
        if not names:
            continue
        for name in names:
            if name not in texts:
                texts[name] = _normalise((Path(papers) / name).read_text(encoding="utf-8"))
        for phrase in LOCATION_PHRASE.findall(claim.location):
            if not any(_normalise(phrase) in texts[name] for name in names):
                problems.append(f"{claim.id}: the location's phrase is not verbatim in {names[0]}: {phrase!r}")
    return problems


def committed_text_claims() -> dict[str, dict]:
    """The committed lists of claims the papers make in their running text, ``{paper file: {"paper_file",
    "sha256", "claims"}}``, one file ``registry/text_claims/<paper file stem>.yaml`` each."""
    listing = {}
    for path in sorted(TEXT_CLAIMS.glob("*.yaml")) if TEXT_CLAIMS.is_dir() else ():
        entry = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(entry, dict) or not isinstance(entry.get("paper_file"), str):
            raise ValueError(f"{path}: must hold paper_file, sha256 and claims")
        listing[entry["paper_file"]] = {**entry, "source": path.name}
    return listing


# How much of an in-text claim its rows test: all of it, or a part (then ``untested`` says which words the rows
# leave untested and why, or which row would test them).
TESTED = ("full", "part")


def _tested_problems(item: dict) -> list[str]:
    """An entry with rows says how much of the claim they test (``tested``), and a partial one what is left
    (``untested``); an entry with a reason carries neither."""
    tested, untested = item.get("tested"), item.get("untested")
    has_untested = isinstance(untested, str) and bool(untested.strip())
    if not item.get("rows"):   # with a reason it has neither; with nothing, the missing rows are the problem
        has_reason = isinstance(item.get("reason"), str) and bool(item["reason"].strip())
        return ["an entry without rows has no 'tested' or 'untested'"] \
            if has_reason and (tested is not None or untested is not None) else []
    if tested not in TESTED:
        return [f"'tested' must say whether its rows test the claim in full or in part ({' or '.join(TESTED)}), "
                f"got {tested!r}"]
    if tested == "part" and not has_untested:
        return ["tested in part: 'untested' must say what the rows do not test, and why"]
    if tested == "full" and untested is not None:
        return ["tested in full, so it has no 'untested'"]
    return []


def text_claim_problems(papers: Path | None, book: Registry | None = None) -> list[str]:
    """What is wrong with the list of in-text claims: a paper without a list, an entry with neither rows nor a
    reason (or both), a row that is not in the registry or not of that paper's chapters; and, for each text
    present in ``papers``, a list made on another version of the text (its sha256) or a quote not verbatim near
    its line.
    """
    papers = None if papers is None else directory_arg("papers", papers)
    book = book or registry()
    listing = committed_text_claims()
    absent = set(missing_texts(papers, book)) if papers is not None else None
    problems = []
    chapters_of = {header["paper_file"]: [] for header in book.chapters.values() if header["paper_file"]}
    for chapter, header in book.chapters.items():
        if header["paper_file"]:
            chapters_of[header["paper_file"]].append(chapter)
    for name, chapters in sorted(chapters_of.items()):
        entry = listing.get(name)
        where = f"{TEXT_CLAIMS.name}/{Path(name).stem}.yaml"
        if not isinstance(entry, dict) or not isinstance(entry.get("claims"), list) or not entry["claims"]:
            problems.append(f"{where}: no list of the claims the paper makes in its running text")
            continue
        lines = None
        if absent is not None and name not in absent:
            data = (Path(papers) / name).read_bytes()
            if hashlib.sha256(data).hexdigest() != entry.get("sha256"):
                problems.append(f"{where}: the list was made on another version of the text (sha256 "
                                f"{str(entry.get('sha256'))[:12]}...): read the text again and update it")
            else:
                lines = data.decode("utf-8").splitlines()
        for number, item in enumerate(entry["claims"], start=1):
            label = f"{where}, claim {number}"
            if not isinstance(item, dict) or not isinstance(item.get("line"), int) or item["line"] < 1 \
                    or not isinstance(item.get("quote"), str) or not item["quote"].strip():
                problems.append(f"{label}: needs a positive line and the paper's words (quote)")
                continue
            label += f" (line {item['line']})"
            rows, reason = item.get("rows"), item.get("reason")
            if bool(rows) == bool(isinstance(reason, str) and reason.strip()):
                problems.append(f"{label}: needs either the ledger rows that check it or the reason it is out of "
                                f"scope, not both")
            problems += [f"{label}: {problem}" for problem in _tested_problems(item)]
            for row in rows or []:
                claim = book.claims.get(row)
                if claim is None:
                    problems.append(f"{label}: row {row!r} is not in the registry")
                elif claim.chapter not in chapters:
                    problems.append(f"{label}: row {row!r} belongs to chapter {claim.chapter}, not to this paper's")
            if lines is not None and not quote_found(lines, item["quote"], item["line"]):
                problems.append(f"{label}: quote not found verbatim near its line: {item['quote'][:80]!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--papers", type=Path, default=Path(os.environ.get(PAPERS_VARIABLE) or DEFAULT_PAPERS),
                        help=f"folder of the paper texts (default: ${PAPERS_VARIABLE}, else {DEFAULT_PAPERS})")
    parser.add_argument("--update-list", action="store_true",
                        help=f"rewrite {RESULTS_LIST.name} from the paper texts")
    arguments = parser.parse_args(argv)
    absent = missing_texts(arguments.papers)
    present = arguments.papers.is_dir() and len(absent) < len(_chapters_by_paper_file(registry()))
    if arguments.update_list:
        if absent:
            print(f"paper texts not in {arguments.papers}: {', '.join(absent)}: cannot update {RESULTS_LIST.name}")
            return 1
        RESULTS_LIST.write_text(json.dumps(results_list_from_texts(arguments.papers), indent=1) + "\n",
                                encoding="utf-8")
        print(f"wrote {RESULTS_LIST}")
        return 0
    failed = False
    committed = committed_results_list()
    if present:
        stale = [name for name, entry in results_list_from_texts(arguments.papers).items()
                 if committed.get(name) != entry]
        if stale:
            print(f"{RESULTS_LIST.name} does not match the paper texts in {arguments.papers} ({', '.join(stale)}): "
                  f"run python -m icllib.coverage --update-list and commit it")
            failed = True
    if absent:
        print(f"Paper texts not in {arguments.papers}: {', '.join(absent)}. For these, numbered results from the "
              f"committed {RESULTS_LIST.name}; quotes not checked"
              + (" (the quotes of the texts present are)." if present else "."))
    for paper in paper_coverage(arguments.papers if present else None):
        covered = len(paper.results) - len(paper.missing)
        print(f"{paper.paper_file} ({', '.join(paper.chapters)}): {covered} of {len(paper.results)} "
              f"numbered results have a row")
        for result in paper.missing:
            print(f"  no row: {result}")
        failed |= bool(paper.missing)
    problems = quote_problems(arguments.papers) + location_phrase_problems(arguments.papers) if present else []
    problems += text_claim_problems(arguments.papers if present else None)
    for problem in problems:
        print(f"  {problem}")
    return int(failed or bool(problems))

if __name__ == "__main__":
    sys.exit(main())
