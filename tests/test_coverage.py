"""The coverage script: numbered results of a paper text, the rows that cover them, verbatim quotes."""

import hashlib
import json

import pytest

from icllib import claim_registry, coverage

PAPER = """Theorem 1. The loss decreases.
By Lemma 2 and Lemma~A.5, see Fig. 3.
Proof of Theorem 1: the constant is $C_0 = 2$,
which, with Assumption 1, gives the rate in Figure 3.
"""

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
    verdict: reproduced
  - id: demo.lemmas
    location: Lemmas 2 and A.5
    statement: two lemmas
    verdict: out of scope
    reason: not checked
  - id: demo.constant
    location: Proof of Theorem 1
    statement: the constant
    verdict: corrected
    erratum: demo.E1
  - id: demo.own
    location: Fig. 3 (the book's own limit)
    statement: the book's own limit of Fig. 3
    verdict: beyond the paper
errata:
  - id: demo.E1
    location: Proof of Theorem 1
    line: 3
    quote: the constant is $C_0 = 2$, which ... gives the rate
    correction: the constant is 3
    evidence: the chapter's check fails on 2
"""


# The claims the demo paper makes in its running text: one checked by a row, one out of scope.
TEXT_CLAIMS = """
paper_file: paper.txt
sha256: {sha}
claims:
  - line: 1
    quote: The loss decreases.
    rows: [demo.theorem]
    tested: full
  - line: 4
    quote: gives the rate in Figure 3
    reason: the rate is not stated
"""


@pytest.fixture
def demo(tmp_path):
    (tmp_path / "paper.txt").write_text(PAPER, encoding="utf-8")
    (tmp_path / "demo.yaml").write_text(REGISTRY, encoding="utf-8")
    return tmp_path, claim_registry.parse_registry([tmp_path / "demo.yaml"])


def test_paper_results_finds_every_numbered_result():
    assert coverage.paper_results(PAPER) == {"Theorem 1", "Lemma 2", "Lemma A.5", "Figure 3", "Assumption 1"}


@pytest.mark.parametrize(("location", "expected"), [
    ("Lemmas 13-17, line 861", {f"Lemma {n}" for n in range(13, 18)}),
    ("App. C, Figs. 6-14; Sec. 4", {f"Figure {n}" for n in range(6, 15)}),
    ("Propositions 1, 2 and 4", {"Proposition 1", "Proposition 2", "Proposition 4"}),
    ("Lemmas C.3-C.8", {f"Lemma C.{n}" for n in range(3, 9)}),
    ("Theorem 4.1, Eq. 4.1, line 170", {"Theorem 4.1"}),
    ("Proposition 2 of this chapter (sharpens Theorem 2)", {"Theorem 2"}),
    ("Sec. 8, line 264", set()),
])
def test_named_results_expands_lists_and_ranges(location, expected):
    assert coverage.named_results(location) == expected


def test_a_result_without_a_row_is_reported(demo):
    folder, book = demo
    (entry,) = coverage.paper_coverage(folder, book)
    # Figure 3 is named only by a row of the book's own: that covers nothing of the paper's.
    assert entry.missing == ("Assumption 1", "Figure 3")
    assert entry.rows["Theorem 1"] == ("demo.theorem", "demo.constant")
    assert coverage.quote_problems(folder, book) == []


def test_a_quote_that_is_not_verbatim_is_reported(demo, tmp_path):
    folder, _ = demo
    text = REGISTRY.replace("quote: the constant is $C_0 = 2$", "quote: the constant C_0 is 2")
    (tmp_path / "demo.yaml").write_text(text, encoding="utf-8")
    book = claim_registry.parse_registry([tmp_path / "demo.yaml"])
    (problem,) = coverage.quote_problems(folder, book)
    assert problem.startswith("demo.E1: quote not found verbatim near line 3")


def test_a_quote_far_from_its_line_is_reported(demo, tmp_path):
    folder, _ = demo
    lines = PAPER.splitlines()
    quote = "the constant is $C_0 = 2$"
    assert coverage.quote_found(lines, quote, 3)
    assert not coverage.quote_found(["filler"] * 20 + lines, quote, 3)


def test_an_orphan_erratum_is_reported(demo, tmp_path):
    folder, _ = demo
    text = REGISTRY.replace("    verdict: corrected\n    erratum: demo.E1\n", "    verdict: reproduced\n")
    (tmp_path / "demo.yaml").write_text(text, encoding="utf-8")
    book = claim_registry.parse_registry([tmp_path / "demo.yaml"])
    assert coverage.quote_problems(folder, book) == ["demo.E1: no ledger row names this erratum"]


@pytest.fixture
def demo_list(demo, monkeypatch, tmp_path):
    """The demo registry as the book's, with its committed list of numbered results in a temporary file."""
    folder, book = demo
    monkeypatch.setenv("ICLLIB_REGISTRY", str(folder))
    listing = tmp_path / "paper_results.json"
    listing.write_text(json.dumps(coverage.results_list_from_texts(folder, book)), encoding="utf-8")
    monkeypatch.setattr(coverage, "RESULTS_LIST", listing)
    texts = tmp_path / "text_claims"
    texts.mkdir()
    (texts / "paper.yaml").write_text(TEXT_CLAIMS.format(sha=hashlib.sha256(PAPER.encode()).hexdigest()), encoding="utf-8")
    monkeypatch.setattr(coverage, "TEXT_CLAIMS", texts)
    return folder, book, listing


def test_the_script_exits_non_zero_on_a_missing_row(demo_list, capsys):
    folder, _, _ = demo_list
    assert coverage.main(["--papers", str(folder)]) == 1
    output = capsys.readouterr().out
    assert "3 of 5 numbered results have a row" in output and "no row: Assumption 1" in output
    assert "does not match" not in output


def test_without_the_texts_the_committed_list_decides(demo_list, tmp_path, capsys):
    folder, book, _ = demo_list
    assert coverage.paper_coverage(None, book)[0].missing == coverage.paper_coverage(folder, book)[0].missing
    assert coverage.main(["--papers", str(tmp_path / "absent")]) == 1
    output = capsys.readouterr().out
    assert "quotes not checked" in output and "no row: Assumption 1" in output


def test_a_list_that_no_longer_matches_its_text_fails(demo_list, capsys):
    folder, _, listing = demo_list
    (folder / "paper.txt").write_text(PAPER + "Lemma 9 is new.\n", encoding="utf-8")
    assert coverage.main(["--papers", str(folder)]) == 1
    assert "does not match the paper texts" in capsys.readouterr().out
    assert coverage.main(["--papers", str(folder), "--update-list"]) == 0
    assert "Lemma 9" in json.loads(listing.read_text(encoding="utf-8"))["paper.txt"]["results"]


@pytest.mark.parametrize(("call", "error"), [
    (lambda: coverage.paper_results(None), TypeError),
    (lambda: coverage.named_results(3), TypeError),
    (lambda: coverage.quote_found(["a"], "a", 0), ValueError),
    (lambda: coverage.quote_found(["a"], " ... ", 1), ValueError),
])
def test_bad_input_raises(call, error):
    with pytest.raises(error):
        call()


def test_the_in_text_claims_are_checked_against_the_rows_and_the_text(demo_list, capsys):
    folder, book, _ = demo_list
    assert coverage.text_claim_problems(folder, book) == []
    assert coverage.text_claim_problems(None, book) == []
    path = coverage.TEXT_CLAIMS / "paper.yaml"
    good = path.read_text(encoding="utf-8")
    for old, new, message in [
        ("rows: [demo.theorem]", "rows: [demo.nowhere]", "row 'demo.nowhere' is not in the registry"),
        ("rows: [demo.theorem]", "rows: []", "needs either the ledger rows"),
        ("    reason: the rate is not stated\n", "", "needs either the ledger rows"),
        ("quote: The loss decreases.", "quote: The loss increases.", "quote not found verbatim"),
        ("line: 4", "line: 0", "needs a positive line"),
    ]:
        path.write_text(good.replace(old, new), encoding="utf-8")
        problems = coverage.text_claim_problems(folder, book)
        assert len(problems) == 1 and message in problems[0], (old, problems)
    # A list made on another version of the text is stale; without the text only the rows are checked.
    path.write_text(good, encoding="utf-8")
    (folder / "paper.txt").write_text(PAPER + "Lemma 9 is new.\n", encoding="utf-8")
    (problem,) = coverage.text_claim_problems(folder, book)
    assert "made on another version of the text" in problem
    path.unlink()
    assert coverage.text_claim_problems(None, book) == [
        "text_claims/paper.yaml: no list of the claims the paper makes in its running text"]
    assert coverage.main(["--papers", str(folder)]) == 1
    assert "no list of the claims" in capsys.readouterr().out


OTHER_CHAPTER = """
chapter: other
title: A second chapter on a paper whose text is absent
page: notebooks/other
paper: other2026
paper_file: absent.txt
claims:
  - id: other.result
    location: Theorem 1
    statement: a result
    verdict: reproduced
"""


def test_with_some_texts_absent_the_missing_are_named_and_the_present_quotes_checked(demo_list, capsys):
    """Issue 29: with one of two paper texts present, the check names the absent one and still checks the quotes of
    the present one (it used to say that the texts were absent and skip every quote)."""
    folder, _, listing = demo_list
    (folder / "other.yaml").write_text(OTHER_CHAPTER, encoding="utf-8")
    committed = json.loads(listing.read_text(encoding="utf-8"))
    committed["absent.txt"] = {"sha256": "0" * 64, "results": ["Theorem 1"]}
    listing.write_text(json.dumps(committed), encoding="utf-8")
    (coverage.TEXT_CLAIMS / "absent.yaml").write_text(
        "paper_file: absent.txt\nsha256: unknown\nclaims:\n  - line: 1\n    quote: a result\n"
        "    rows: [other.result]\n    tested: full\n", encoding="utf-8")
    book = claim_registry.parse_registry([folder / "demo.yaml", folder / "other.yaml"])
    assert coverage.missing_texts(folder, book) == ["absent.txt"]
    assert not coverage.texts_at_hand(folder, book)
    (folder / "demo.yaml").write_text(REGISTRY.replace("quote: the constant is $C_0 = 2$", "quote: the constant C_0 is 2"),
                                      encoding="utf-8")
    book = claim_registry.parse_registry([folder / "demo.yaml", folder / "other.yaml"])
    (problem,) = coverage.quote_problems(folder, book)
    assert problem.startswith("demo.E1: quote not found verbatim")
    assert coverage.text_claim_problems(folder, book) == []   # the absent text's list is checked against the rows
    assert coverage.main(["--papers", str(folder)]) == 1
    output = capsys.readouterr().out
    assert "Paper texts not in" in output and "absent.txt" in output and "the quotes of the texts present are" in output
    assert "demo.E1: quote not found verbatim" in output
    assert "does not match" not in output


def test_the_books_in_text_claims_name_rows_and_quote_their_papers():
    """Every paper has its list of in-text claims, each entry names registered rows or gives a reason; with the
    texts at hand (shared/papers beside the checkout), each quote stands near its line of the hashed text."""
    assert coverage.text_claim_problems(None) == []
    if coverage.DEFAULT_PAPERS.is_dir() and coverage.texts_at_hand(coverage.DEFAULT_PAPERS):
        assert coverage.text_claim_problems(coverage.DEFAULT_PAPERS) == []


def test_a_locations_phrase_must_be_verbatim_in_the_paper(demo, tmp_path):
    folder, book = demo
    assert coverage.location_phrase_problems(folder, book) == []
    text = REGISTRY.replace("“The loss decreases”", "“The loss falls”")
    (tmp_path / "demo.yaml").write_text(text, encoding="utf-8")
    book = claim_registry.parse_registry([tmp_path / "demo.yaml"])
    assert coverage.location_phrase_problems(folder, book) == [
        "demo.theorem: the location's phrase is not verbatim in paper.txt: 'The loss falls'"]


def test_the_books_location_phrases_are_verbatim_in_the_papers():
    """With the texts at hand (shared/papers beside the checkout), every phrase a location quotes is in its paper."""
    if coverage.DEFAULT_PAPERS.is_dir() and coverage.texts_at_hand(coverage.DEFAULT_PAPERS):
        assert coverage.location_phrase_problems(coverage.DEFAULT_PAPERS) == []


@pytest.mark.parametrize(("fields", "expected"), [
    ({"rows": ["demo.theorem"], "tested": "full"}, []),
    ({"rows": ["demo.theorem"], "tested": "part", "untested": "the rate: not measured"}, []),
    ({"rows": ["demo.theorem"]}, ["'tested' must say whether its rows test the claim in full or in part"]),
    ({"rows": ["demo.theorem"], "tested": "most"}, ["'tested' must say"]),
    ({"rows": ["demo.theorem"], "tested": "part"}, ["tested in part: 'untested' must say"]),
    ({"rows": ["demo.theorem"], "tested": "part", "untested": " "}, ["tested in part: 'untested' must say"]),
    ({"rows": ["demo.theorem"], "tested": "full", "untested": "x"}, ["tested in full, so it has no 'untested'"]),
    ({"reason": "not stated", "tested": "full"}, ["an entry without rows has no 'tested'"]),
    ({"reason": "not stated"}, []),
])
def test_an_in_text_claims_rows_say_how_much_of_it_they_test(fields, expected):
    problems = coverage._tested_problems({"line": 1, "quote": "The loss decreases.", **fields})
    assert len(problems) == len(expected) and all(p.startswith(e) for p, e in zip(problems, expected)), problems


def test_every_in_text_mapping_of_the_book_carries_its_flag():
    """Each entry of every paper's list that names rows says whether they test the claim in full or in part."""
    listing = coverage.committed_text_claims()
    assert listing
    for name, entry in listing.items():
        for item in entry["claims"]:
            if item.get("rows"):
                assert item.get("tested") in coverage.TESTED, (name, item["line"], item["quote"][:60])
                assert (item["tested"] == "part") == bool(item.get("untested")), (name, item["line"])
