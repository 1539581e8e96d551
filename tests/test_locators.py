"""No place in the book cites a line of the papers' text extractions (issue 35): a reader has the published paper,
whose PDF has sections, theorems, equations, figures and words, not the extraction's line numbers. Those stay in
the registry's machine fields (an erratum's or a note's ``line``, ``text_claims/*.yaml``) that the coverage tests
read. The built site, its downloads and PDFs are checked by ``site_tests/test_locators.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from icllib import cards, claim_registry, claims

ROOT = Path(__file__).resolve().parents[1]
LOCATOR = claim_registry.LINE_LOCATOR

REGISTRY = """
chapter: demo
title: A demo chapter
page: notebooks/demo
paper: demo2026
paper_file: paper.txt
claims:
  - id: demo.theorem
    location: 'Theorem 1: “The loss decreases”'
    statement: the loss decreases
    evidence: the chapter's run
    verdict: corrected
    erratum: demo.E1
errata:
  - id: demo.E1
    location: Proof of Theorem 1
    line: 3
    quote: the constant is 2
    correction: the constant is 3
    evidence: the chapter's check fails on 2
    extraction:
      artefact: ruled out
      why: a digit in words
"""


def _book(tmp_path, text):
    (tmp_path / "demo.yaml").write_text(text, encoding="utf-8")
    return claim_registry.parse_registry([tmp_path / "demo.yaml"])


def test_the_demo_registry_reads(tmp_path):
    book = _book(tmp_path, REGISTRY)
    assert book.errata["demo.E1"].line == 3   # the machine field keeps the extraction's line


@pytest.mark.parametrize(("old", "new", "field"), [
    ("location: 'Theorem 1: “The loss decreases”'", "location: Theorem 1, line 12", "location"),
    ("statement: the loss decreases", "statement: the loss decreases (line 12)", "statement"),
    ("evidence: the chapter's run", "evidence: the chapter's run, as at lines 12-14", "evidence"),
    ("location: Proof of Theorem 1", "location: Proof of Theorem 1 (Line 3)", "location"),
    ("correction: the constant is 3", "correction: the constant is 3, as line 7 says", "correction"),
    ("evidence: the chapter's check fails on 2", "evidence: the check fails on line 3's 2", "evidence"),
    ("why: a digit in words", "why: a digit in words (lines 3 and 9)", "extraction"),
])
def test_the_registry_refuses_a_line_of_the_extraction_in_a_shown_field(tmp_path, old, new, field):
    assert old in REGISTRY
    with pytest.raises(ValueError, match=rf"field '{field}' cites '[Ll]ines? \d+' of the text extraction"):
        _book(tmp_path, REGISTRY.replace(old, new, 1))


def _shown_texts(book):
    for claim in book.claims.values():
        for name in claim_registry.SHOWN_FIELDS["claim"]:
            yield claim.id, name, getattr(claim, name)
    for passage in (*book.errata.values(), *book.notes.values()):
        for name in ("location", "quote", "correction", "evidence", "extraction_why"):
            yield passage.id, name, getattr(passage, name)


def test_no_shown_field_of_the_books_registry_cites_a_line():
    found = [f"{key}.{name}: {match.group()}" for key, name, text in _shown_texts(claims.registry())
             if isinstance(text, str) for match in [LOCATOR.search(text)] if match]
    assert not found, found


def test_no_card_cites_a_line():
    record = {"measured": 1.0, "expected": 1.0, "tolerance": "atol=0", "why": "exact", "passed": True}
    for claim in claims.registry().claims.values():
        card = cards.ClaimCard([cards.CardCheck(claim, {**record, "id": claim.id})])
        assert not LOCATOR.search(repr(card) + card._repr_html_()), claim.id


def test_no_notebook_cites_a_line():
    """Notebook prose and code cite the paper by its own numbering: a chapter's page and its downloads show both."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        # each line with the next, so that a "line" at the end of one and its number on the next are found too
        pairs = [line + " " + following.lstrip("# ") for line, following in zip(lines, [*lines[1:], ""])]
        found += [f"{path.name}:{number}: {match.group()}" for number, pair in enumerate(pairs, start=1)
                  for match in [LOCATOR.search(pair)] if match]
    assert not found, "\n".join(found)


def test_no_library_docstring_cites_a_line():
    """The API page shows the library's docstrings (and a comment says what a reader of the code reads)."""
    found = [f"{path.relative_to(ROOT)}:{number}"
             for path in sorted((ROOT / "src" / "icllib").rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if LOCATOR.search(line)]
    assert not found, found


def test_the_locator_pattern_finds_what_it_must_and_nothing_else():
    for text in ("line 59", "lines 474-487", "(Line 3)", "at lines 12 and 14"):
        assert LOCATOR.search(text), text
    for text in ("Sec. 3.1", "a line of the text", "line974_corrected", "baseline 5", "pipelines 3", "online 2"):
        assert not LOCATOR.search(text), text
