import json
import math

import numpy as np
import pytest

from icllib import cards, claim_registry, claims

REGISTRY = """
chapter: demo
title: A demo chapter
page: notebooks/demo
paper: demo2026
claims:
  - id: demo.exact
    location: Eq. 1
    statement: one plus one is two
    verdict: reproduced
  - id: demo.corrected
    location: Lemma 2
    statement: the constant is 3 (the paper prints 2)
    verdict: corrected
    erratum: demo.E1
  - id: demo.big
    location: Fig. 2
    statement: a trend that needs the default scale
    verdict: reproduced
    modes: [default, full]
  - id: demo.skipped
    location: Fig. 9
    statement: a figure at GPU scale
    verdict: out of scope
    reason: needs a GPU week
  - id: demo.own
    location: Sec. 3
    statement: a limit the paper does not state
    verdict: beyond the paper
  - id: demo.ambiguous
    location: Lemma 3
    statement: the rate holds per unit time
    verdict: clarified
    note: demo.N1
  - id: demo.differs
    location: Fig. 4
    statement: the loss reaches 0.1
    verdict: not reproduced
    run: full mode, B = 200, seeds 0-2, 2026-11-22
  - id: demo.undecided
    location: Fig. 5
    statement: the head forms by step 300
    verdict: inconclusive
    deciding_run: full mode at width 2048, 3 seeds (about 3 h on 2 cores)
errata:
  - id: demo.E1
    location: Lemma 2
    line: 20
    quote: the constant is 2
    correction: the constant is 3
    evidence: SymPy derivation in the chapter
notes:
  - id: demo.N1
    location: Lemma 3
    line: 30
    quote: the rate is proportional to T
    clarification: T is lr / batch, and time counts lr x steps
    evidence: the chapter measures the rate in both units
"""


@pytest.fixture
def demo_registry(tmp_path, monkeypatch):
    folder = tmp_path / "registry"
    folder.mkdir()
    (folder / "demo.yaml").write_text(REGISTRY, encoding="utf-8")
    results = tmp_path / "results.jsonl"
    monkeypatch.setenv("ICLLIB_REGISTRY", str(folder))
    monkeypatch.setenv("ICLLIB_RESULTS", str(results))
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    return folder, results


def test_passing_claim_is_recorded(demo_registry):
    _, results = demo_registry
    assert claims.check_claim("demo.exact", 2.0 + 1e-13, expected=2, atol=1e-12, why="float") is None
    record = json.loads(results.read_text(encoding="utf-8"))
    assert record["id"] == "demo.exact" and record["passed"] and record["mode"] == "quick"
    assert record["why"] == "float" and "atol=1e-12" in record["tolerance"]


def test_failing_claim_raises_with_the_statement_and_is_recorded(demo_registry):
    _, results = demo_registry
    with pytest.raises(AssertionError, match=r"(?s)demo\.exact.*one plus one is two.*measured 2\.5"):
        claims.check_claim("demo.exact", 2.5, expected=2, rtol=0.1, why="test")
    assert json.loads(results.read_text(encoding="utf-8"))["passed"] is False


def test_relative_and_absolute_tolerances_add(demo_registry):
    claims.check_claim("demo.exact", 2.3, expected=2, rtol=0.1, atol=0.1, why="test")
    with pytest.raises(AssertionError):
        claims.check_claim("demo.exact", 2.31, expected=2, rtol=0.1, atol=0.1, why="test")


def test_bounds(demo_registry):
    claims.check_claim("demo.corrected", 3.0, lower=2.9, upper=3.1, why="test")
    with pytest.raises(AssertionError):
        claims.check_claim("demo.corrected", 3.2, upper=3.1, why="test")
    with pytest.raises(AssertionError):
        claims.check_claim("demo.corrected", 2.8, lower=2.9, why="test")


def test_bool_claims(demo_registry):
    claims.check_claim("demo.exact", np.bool_(True), expected=True)
    with pytest.raises(AssertionError):
        claims.check_claim("demo.exact", False, expected=True)
    with pytest.raises(ValueError, match="bool"):
        claims.check_claim("demo.exact", True, expected=True, atol=0, why="test")


def test_unknown_id_raises(demo_registry):
    with pytest.raises(ValueError, match=r"claim_id 'demo\.nope' is not in the claims registry"):
        claims.check_claim("demo.nope", 1.0, expected=1.0, atol=0, why="test")


def test_out_of_scope_claim_cannot_be_checked(demo_registry):
    with pytest.raises(ValueError, match="out of scope"):
        claims.check_claim("demo.skipped", 1.0, expected=1.0, atol=0, why="test")


@pytest.mark.parametrize("value", [math.nan, np.nan, math.inf, -np.inf])
def test_non_finite_measured_value_raises(demo_registry, value):
    with pytest.raises(ValueError, match="measured must be finite"):
        claims.check_claim("demo.exact", value, expected=2, atol=1, why="test")


def test_non_numeric_measured_value_raises(demo_registry):
    with pytest.raises(ValueError, match="measured must be a real number"):
        claims.check_claim("demo.exact", "2", expected=2, atol=1, why="test")


def test_missing_tolerance_raises(demo_registry):
    with pytest.raises(ValueError, match="tolerance"):
        claims.check_claim("demo.exact", 2.0, expected=2.0)


def test_missing_criterion_raises(demo_registry):
    with pytest.raises(ValueError, match="expected .* or lower/upper"):
        claims.check_claim("demo.exact", 2.0)


@pytest.mark.parametrize("kwargs", [{"rtol": -0.1}, {"atol": math.nan}, {"atol": True}])
def test_bad_tolerance_raises(demo_registry, kwargs):
    with pytest.raises(ValueError, match="rtol|atol"):
        claims.check_claim("demo.exact", 2.0, expected=2.0, **kwargs)


def test_inverted_bounds_raise(demo_registry):
    with pytest.raises(ValueError, match="lower"):
        claims.check_claim("demo.exact", 2.0, lower=3.0, upper=1.0, why="test")


@pytest.mark.parametrize("bound", [{"expected": 2, "atol": 0}, {"lower": 1.0}, {"upper": 3.0},
                                   {"expected": 2, "rtol": 0.1, "why": "  "}])
def test_a_tolerance_or_bound_without_why_raises(demo_registry, bound):
    with pytest.raises(ValueError, match="why="):
        claims.check_claim("demo.exact", 2.0, **bound)


def test_an_exact_bool_check_needs_no_why(demo_registry):
    assert claims.check_claim("demo.exact", True, expected=True) is None


def test_read_all_results_keeps_every_record_of_the_latest_run(demo_registry, monkeypatch):
    _, results = demo_registry
    claims.check_claim("demo.exact", 2.0, expected=2, atol=0, why="first site")
    monkeypatch.setattr(claims, "_RUN_TOKEN", "a later run")
    claims.check_claim("demo.exact", 2.0, expected=2, atol=1e-12, why="first site")
    claims.check_claim("demo.exact", 2.0 + 1e-14, expected=2, atol=1e-12, why="second site")
    records = claims.read_all_results(results)["demo.exact"]
    assert [record["why"] for record in records] == ["first site", "second site"]
    assert all(record["run"] == "a later run" for record in records)


def test_saved_arrays_are_recorded_beside_the_checks_and_skipped_by_the_ledger(demo_registry):
    _, results = demo_registry
    claims.check_claim("demo.exact", 2.0, expected=2, atol=0, why="exact")
    claims.save_arrays("series", steps=[0, 5], values=[[1.0, 2.0], [math.pi, 4.0]])
    saved = json.loads(results.read_text(encoding="utf-8").splitlines()[1])
    assert saved["arrays"] == "series" and saved["shapes"] == {"steps": [2], "values": [2, 2]}
    assert saved["values"]["values"] == [1.0, 2.0, 3.14159, 4.0]
    assert list(claims.read_all_results(results)) == ["demo.exact"]


def test_saved_arrays_keep_a_non_finite_value_as_null(demo_registry):
    _, results = demo_registry
    claims.save_arrays("diverged", loss=[1.0, math.inf, math.nan])
    assert json.loads(results.read_text(encoding="utf-8"))["values"]["loss"] == [1.0, None, None]


@pytest.mark.parametrize(("arrays", "message"), [
    ({}, "at least one array"), ({"x": ["a"]}, "'x' is not numeric"), ({"x": [0.0] * 20_001}, "subsample")])
def test_save_arrays_refuses_what_an_archive_should_not_hold(demo_registry, arrays, message):
    with pytest.raises(ValueError, match=message):
        claims.save_arrays("series", **arrays)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda text: text.replace("verdict: reproduced", "verdict: fine"), "verdict 'fine'"),
        (lambda text: text.replace("    erratum: demo.E1\n", ""), "must name its erratum"),
        (lambda text: text.replace("    reason: needs a GPU week\n", ""), "must give its reason"),
        (lambda text: text.replace("erratum: demo.E1", "erratum: demo.E9"), "unknown erratum"),
        (lambda text: text.replace("demo.corrected", "demo.exact"), "duplicate claim id"),
        (lambda text: text.replace("    statement: one plus one is two\n", ""), "'statement' is missing"),
        (lambda text: text.replace("page: notebooks/demo\n", ""), "'page' is missing"),
        (lambda text: text.replace("page: notebooks/demo\n", "page: notebooks/demo\npart_of: other\n"),
         "part_of 'other' is not a chapter's first page"),
        (lambda text: text.replace("page: notebooks/demo\n", "page: notebooks/demo\npart_of: [demo]\n"),
         "'part_of' must be text"),
        (lambda text: text.replace("modes: [default, full]", "modes: [fast]"), "modes"),
        (lambda text: text.replace("modes: [default, full]", "modes: []"), "modes"),
        (lambda text: text.replace("    note: demo.N1\n", ""), "must name its note"),
        (lambda text: text.replace("note: demo.N1", "note: demo.N7"), "unknown note"),
        (lambda text: text.replace("    run: full mode, B = 200, seeds 0-2, 2026-11-22\n", ""), "run at the paper"),
        (lambda text: text.replace("    deciding_run: full mode at width 2048, 3 seeds (about 3 h on 2 cores)\n", ""),
         "would decide"),
        (lambda text: text.replace("    statement: one plus one is two\n",
                                   "    statement: one plus one is two\n    erratum: demo.E1\n"),
         "only a corrected claim names an erratum"),
        (lambda text: text.replace("    line: 20\n", "    line: zero\n"), "'line' must be"),
        (lambda text: text.replace("    quote: the constant is 2\n", ""), "'quote' is missing"),
        (lambda text: text.replace("    clarification: T is lr / batch, and time counts lr x steps\n", ""),
         "'clarification' is missing"),
    ],
)
def test_malformed_registry_is_rejected(tmp_path, edit, message):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(REGISTRY), encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        claim_registry.parse_registry([path])


def test_the_book_registry_is_valid_and_every_claim_is_checked_somewhere():
    """Every registered, checkable claim id appears in a chapter, and every id a chapter uses is registered."""
    import re
    from pathlib import Path

    registry = claim_registry.parse_registry(sorted(Path(claims.__file__).parent.joinpath("registry").glob("*.yaml")))
    root = Path(__file__).resolve().parents[1]
    used = set()
    for notebook in (root / "notebooks").glob("*.py"):
        used |= set(re.findall(r"check_claim\(\s*[\"']([^\"']+)[\"']", notebook.read_text(encoding="utf-8")))
    checkable = {cid for cid, claim in registry.claims.items() if claim.verdict != "out of scope"}
    assert used <= set(registry.claims), f"unregistered claim ids: {sorted(used - set(registry.claims))}"
    assert checkable <= used, f"registered claims no chapter checks: {sorted(checkable - used)}"


def test_each_claim_is_registered_for_the_page_that_checks_it():
    """A long chapter read in parts (``part_of``) keeps each row in the registry file of the page whose notebook
    checks it, so that the ledger's "Check" link and the page's claim card meet on one page."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    misplaced = []
    for claim in claims.registry().claims.values():
        notebook = root / f"{claim.page}.py"
        text = notebook.read_text(encoding="utf-8") if notebook.is_file() else ""
        checked = set(re.findall(r"check_claim\(\s*[\"']([^\"']+)[\"']", text))
        if claim.verdict != "out of scope" and claim.id not in checked:
            misplaced.append(f"{claim.id} (registered for {claim.page})")
    assert not misplaced, f"rows whose page does not check them: {misplaced}"


def test_numpy_and_torch_scalars_are_accepted_and_arrays_are_not(demo_registry):
    import torch

    claims.check_claim("demo.exact", np.float32(2.0), expected=2, atol=0, why="test")
    claims.check_claim("demo.exact", torch.tensor(2.0, dtype=torch.float64), expected=2, atol=0, why="test")
    with pytest.raises(ValueError, match="measured must be a real number"):
        claims.check_claim("demo.exact", np.array([2.0, 2.0]), expected=2, atol=0, why="test")


def test_a_claim_is_checked_only_in_its_registered_modes(demo_registry, monkeypatch):
    with pytest.raises(ValueError, match=r"demo\.big.*only in modes default, full.*'quick'"):
        claims.check_claim("demo.big", 1.0, lower=0.5, why="test")
    monkeypatch.setenv("ICLLIB_MODE", "default")
    assert claims.check_claim("demo.big", 1.0, lower=0.5, why="test") is None
    assert claims.registry().claims["demo.exact"].modes == ("quick", "default", "full")


# --- The verdict rules (icllib.claim_registry.VERDICT_RULES, verdict_problems) -------------------------------------

RULES_REGISTRY = """
chapter: rules
title: A chapter that follows the verdict rules
page: notebooks/rules
paper: rules2026
paper_file: paper.txt
claims:
  - id: rules.exact
    location: Theorem 1
    statement: the loss decreases
    verdict: reproduced
  - id: rules.stand-in
    location: Fig. 2
    statement: on WikiText-2 the attention becomes sparse
    evidence: on another corpus instead of WikiText-2
    setting: "other: another corpus"
    verdict: inconclusive
    deciding_run: the same run on WikiText-2 (30 min)
  - id: rules.covered
    location: Theorem 2
    statement: for every distribution meeting Assumption 1 the attention becomes sparse
    evidence: on a synthetic corpus instead of the paper's, which meets Assumption 1
    setting: "covered: the statement is made of every distribution meeting Assumption 1"
    verdict: reproduced
  - id: rules.sign
    location: Eq. 8
    statement: the sign of the q_0 term
    verdict: clarified
    note: rules.N1
  - id: rules.constant
    location: Eq. 9
    statement: the constant
    verdict: corrected
    erratum: rules.E1
errata:
  - id: rules.E1
    location: Eq. 9
    line: 30
    quote: the constant is 2
    correction: the constant is 3
    evidence: the chapter's check fails on 2
    extraction:
      artefact: ruled out
      why: a digit printed the same in three displays (Eqs. 9, 10 and 12)
notes:
  - id: rules.N1
    location: Eq. 8
    line: 20
    quote: + q_0
    clarification: the sign may be the extraction's; the derivation gives minus
    evidence: the chapter's check
    extraction:
      artefact: possible
      why: a single sign on a line whose brackets the extraction garbled
"""


@pytest.fixture
def rules_book(tmp_path):
    """A scratch registry that follows every rule, and an archive folder with one passing run."""
    def book(text=RULES_REGISTRY):
        (tmp_path / "rules.yaml").write_text(text, encoding="utf-8")
        return claim_registry.parse_registry([tmp_path / "rules.yaml"])
    archive = tmp_path / "full"
    archive.mkdir()
    (archive / "rules.json").write_text(json.dumps({"chapter": "rules", "date": "2026-11-26", "records": [
        {"id": "rules.exact", "measured": 1.0, "passed": True},
        {"id": "rules.sign", "measured": 1.0, "passed": True}]}), encoding="utf-8")
    return book, archive


def test_a_registry_that_follows_the_rules_has_no_problem(rules_book):
    book, archive = rules_book
    assert claims.verdict_problems(book(), archive) == {}


def test_r1_a_failed_archived_check_is_neither_reproduced_nor_clarified(rules_book):
    book, archive = rules_book
    (archive / "rules.json").write_text(json.dumps({"chapter": "rules", "date": "2026-11-26", "records": [
        {"id": "rules.exact", "measured": 1.0, "passed": True},
        {"id": "rules.exact", "measured": 2.0, "passed": False},
        {"id": "rules.sign", "measured": 2.0, "passed": False}]}), encoding="utf-8")
    problems = claims.verdict_problems(book(), archive)
    assert set(problems) == {"rules.exact", "rules.sign"}
    assert problems["rules.exact"][0].startswith("R1: reproduced although its check failed")
    assert problems["rules.sign"][0].startswith("R1: clarified although")
    # The same failure under a verdict that does not say the paper is right is no problem.
    text = RULES_REGISTRY.replace("    verdict: reproduced\n  - id: rules.stand-in",
                                  "    verdict: not reproduced\n    run: full mode, 2026-11-26\n"
                                  "  - id: rules.stand-in", 1)
    assert "rules.exact" not in claims.verdict_problems(book(text), archive)


@pytest.mark.parametrize(("old", "new"), [
    # reproduced at a setting the statement does not cover
    ("    verdict: inconclusive\n    deciding_run: the same run on WikiText-2 (30 min)\n", "    verdict: reproduced\n"),
    # a stand-in named in the evidence, with no setting field saying whether the statement covers it
    ('    setting: "covered: the statement is made of every distribution meeting Assumption 1"\n', ""),
])
def test_r2_reproduced_needs_the_papers_setting_or_one_it_covers(rules_book, old, new):
    book, archive = rules_book
    assert old in RULES_REGISTRY
    problems = claims.verdict_problems(book(RULES_REGISTRY.replace(old, new)), archive)
    assert len(problems) == 1 and next(iter(problems.values()))[0].startswith("R2: ")


def test_r3_a_note_that_calls_the_paper_wrong_is_an_erratum(rules_book):
    book, archive = rules_book
    text = RULES_REGISTRY.replace("      artefact: possible\n      why: a single sign on a line whose brackets "
                                  "the extraction garbled\n", "").replace(
        "the sign may be the extraction's; the derivation gives minus", "a typo, the derivation gives minus")
    assert claims.verdict_problems(book(text), archive)["rules.N1"][0].startswith("R3: ")


@pytest.mark.parametrize(("old", "new"), [
    ("      artefact: ruled out\n", "      artefact: possible\n"),
    ("    extraction:\n      artefact: ruled out\n      why: a digit printed the same in three displays "
     "(Eqs. 9, 10 and 12)\n", ""),
])
def test_r4_an_erratum_rules_out_the_extraction(rules_book, old, new):
    book, archive = rules_book
    assert old in RULES_REGISTRY
    problems = claims.verdict_problems(book(RULES_REGISTRY.replace(old, new)), archive)
    assert list(problems) == ["rules.E1"] and problems["rules.E1"][0].startswith("R4: ")


def test_r5_a_row_that_shadows_another_rows_run_is_reported(rules_book):
    book, archive = rules_book
    text = RULES_REGISTRY.replace("claims:\n", """claims:
  - id: rules.exact-small
    location: Theorem 1
    statement: the loss decreases (at a smaller width)
    verdict: inconclusive
    deciding_run: the full mode, run on 2026-11-22, where it held (rules.exact)
""", 1)
    problems = claims.verdict_problems(book(text), archive)
    assert list(problems) == ["rules.exact-small"] and problems["rules.exact-small"][0].startswith("R5: ")


def test_a_malformed_extraction_or_setting_is_rejected(rules_book):
    book, _ = rules_book
    with pytest.raises(ValueError, match="extraction"):
        book(RULES_REGISTRY.replace("artefact: ruled out", "artefact: perhaps"))
    with pytest.raises(ValueError, match="setting must start with one of"):
        book(RULES_REGISTRY.replace('setting: "other: another corpus"', 'setting: "elsewhere"'))
    with pytest.raises(TypeError, match="book must be a Registry"):
        claims.verdict_problems("rules.yaml")


def test_the_book_registry_follows_the_verdict_rules():
    problems = claims.verdict_problems()
    assert not problems, "\n".join(f"{key}: {line}" for key, lines in problems.items() for line in lines)


def test_the_ledger_page_states_every_rule():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "book" / "claims.md").read_text(encoding="utf-8")
    assert all(" ".join(rule.split()) in " ".join(page.split()) for rule in claim_registry.VERDICT_RULES)


def _card_claim(verdict="not reproduced"):
    return claims.Claim(id="demo.rate", chapter="demo", page="notebooks/demo", paper="demo2026",
                        location="Thm. 1", statement="s", verdict=verdict)


def test_a_card_leads_with_the_ledger_verdict_and_stands_out_when_its_check_fails():
    claim = _card_claim()
    record = {"id": claim.id, "measured": 0.5, "expected": None, "tolerance": "<= 0.4", "why": "a <reason>",
              "passed": False}
    card = cards.ClaimCard([cards.CardCheck(claim, record, cards.card_anchor(claim.id))])
    page = card._repr_html_()
    shown = page.split(">", 1)[1]   # after the card's opening tag, which carries its checks' data
    assert shown.index("verdict-not-reproduced") < shown.index("claim-card-id") < shown.index("measured")
    assert ">not reproduced</span>" in page and ">pass<" not in page
    assert 'href="../book/claims.html#claim-demo-rate"' in page and 'id="card-demo-rate"' in page
    assert "check FAILED" in page and "claim-card-fail" in page and "at most 0.4" in page
    assert "Why this tolerance:</span> a &lt;reason&gt;" in page
    assert repr(card).startswith("[not reproduced] demo.rate (Thm. 1): measured 0.5, expected at most 0.4 "
                                 "[FAILED]")
    passing = cards.ClaimCard([cards.CardCheck(_card_claim("reproduced"),
                                               {**record, "passed": True, "expected": 4.17721e-15,
                                                "tolerance": "atol=1e-12"})])
    html = passing._repr_html_()
    shown = html.split(">", 1)[1]
    assert "claim-card-pass" in html and " id=" not in html.split(">")[0] and "check passes" in html
    assert "4.177 × 10⁻¹⁵" in shown and "e-15" not in shown and "± 10⁻¹²" in shown
    assert cards.card_anchor("scan_snap.fig4-winner") == "card-scan-snap-fig4-winner"
    with pytest.raises(TypeError, match="claim_id"):
        cards.card_anchor(None)


def test_a_card_marks_a_check_the_archived_paper_scale_run_failed():
    claim = _card_claim("inconclusive")
    record = {"id": claim.id, "measured": 1.0, "expected": 1.0, "tolerance": "rtol=0.1", "why": "w", "passed": True}
    archived = {"date": "2026-11-22 10:00 UTC", "records": [{**record, "measured": 2.0, "passed": False}]}
    page = cards.ClaimCard([cards.CardCheck(claim, record, archived=archived)])._repr_html_()
    assert "claim-card-paper-scale-failed" in page and "failed at paper scale (2026-11-22" in page
    assert "measured 2, expected 1 within 10 %" in page and "check passes" in page
    clean = {"date": "2026-11-22", "records": [record]}
    assert "paper-scale-failed" not in cards.ClaimCard([cards.CardCheck(claim, record, archived=clean)])._repr_html_()


def test_the_checks_of_one_cell_share_a_card_and_a_reason_said_once():
    shared = "float64 round-off over 10⁴ terms"
    checks = [cards.CardCheck(claims.Claim(id=f"demo.c{n}", chapter="demo", page="notebooks/demo",
                                           paper="demo2026", location=f"Lemma {n}", statement="s",
                                           verdict="reproduced"),
                              {"id": f"demo.c{n}", "measured": n + 1e-13, "expected": float(n),
                               "tolerance": "atol=1e-10", "why": shared, "passed": True},
                              cards.card_anchor(f"demo.c{n}") if n < 2 else None)
              for n in range(4)]
    page = cards.ClaimCard(checks)._repr_html_()
    assert page.count('class="claim-card ') == 1 and page.count("<tr class=\"claim-card-row\"") == 4
    assert page.count(shared) == 1 and "Why these tolerances:" in page
    assert 'id="card-demo-c0"' in page and 'id="card-demo-c1"' in page and 'id="card-demo-c2"' not in page
    checks[3] = cards.CardCheck(checks[3].claim, {**checks[3].record, "why": "another reason"})
    page = cards.ClaimCard(checks)._repr_html_()
    assert "Why this tolerance (demo.c0, demo.c1, demo.c2):" in page and "(demo.c3):</span> another" in page


def test_a_book_draws_a_card_again_with_todays_verdict_and_archive():
    claim = _card_claim("reproduced")
    record = {"id": claim.id, "measured": 1.0, "expected": 1.0, "tolerance": "rtol=0.1", "why": "w", "passed": True}
    drawn = cards.ClaimCard([cards.CardCheck(claim, record, cards.card_anchor(claim.id))])._repr_html_()
    today = {claim.id: _card_claim("inconclusive")}
    failed = {"date": "2026-11-22", "records": [{**record, "measured": 3.0, "passed": False}]}
    again = cards.drawn_again(drawn, today, lambda claim_id: failed)
    assert ">inconclusive</span>" in again and ">reproduced</span>" not in again
    assert "failed at paper scale" in again and 'id="card-demo-rate"' in again
    assert cards.drawn_again("<p>no card</p>", today, lambda claim_id: None) == "<p>no card</p>"
    assert cards.drawn_again(drawn, {}, lambda claim_id: None) == drawn   # a claim no longer registered
    archived_only = cards.ClaimCard([cards.CardCheck(claim, None, None, None, True)])._repr_html_()
    assert "no paper-scale run archived yet" in archived_only
    again = cards.drawn_again(archived_only, today, lambda claim_id: failed)
    assert "<code>3</code>" in again and "archived paper-scale run of 2026-11-22" in again


@pytest.mark.parametrize("value, text", [(4.17721e-15, "4.177 × 10⁻¹⁵"), (0.0002090855, "0.0002091"), (3.0, "3"),
                                         (123456.7, "1.235 × 10⁵"), (-2.5e-7, "-2.5 × 10⁻⁷"), (1e-12, "10⁻¹²"),
                                         (12.3456, "12.35"), (0, "0"), (True, "true")])
def test_numbers_on_a_card_are_set_for_reading(value, text):
    assert cards.readable_number(value) == text


@pytest.mark.parametrize("bad", [None, "1", float("nan"), float("inf")])
def test_readable_number_refuses_what_is_not_a_number(bad):
    with pytest.raises(ValueError, match="value"):
        cards.readable_number(bad)
    with pytest.raises(ValueError, match="digits"):
        cards.readable_number(1.0, digits=0)


@pytest.mark.parametrize("record, words", [
    ({"expected": 0.0125, "tolerance": "rtol=0.05"}, "0.0125 within 5 %"),
    ({"expected": 0.0, "tolerance": "atol=1e-12"}, "0 ± 10⁻¹²"),
    ({"expected": 3.0, "tolerance": "atol=0"}, "exactly 3"),
    ({"expected": None, "tolerance": ">= 0.5, <= 2"}, "between 0.5 and 2"),
    ({"expected": True, "tolerance": ""}, "true"),
    ({"expected": 1.0, "tolerance": "rtol=1e-06, atol=1e-09"}, "1 ± (10⁻⁹ + 0.0001 %)"),
    ({"expected": None, "tolerance": "x", "criterion": {"lower": 0.1, "upper": None}}, "at least 0.1"),
])
def test_expectation_words_read_the_criterion_or_the_older_tolerance_text(record, words):
    assert cards.expectation_words(record) == words


def test_criterion_of_refuses_a_tolerance_check_claim_never_writes():
    with pytest.raises(ValueError, match="record"):
        cards.criterion_of({"tolerance": "about right"})
    with pytest.raises(ValueError, match="record"):
        cards.criterion_of(None)


def test_archived_checks_read_the_chapters_paper_scale_archive(tmp_path, monkeypatch):
    claim = next(claim for claim in claims.registry().claims.values() if claim.verdict != "out of scope")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "_config.yml").write_text("", encoding="utf-8")
    assert claims.archived_checks(claim.id) is None
    folder = tmp_path / "results" / "full"
    folder.mkdir(parents=True)
    run = {"date": "2026-11-26 01:06 UTC", "commit": "23e27bc",
           "records": [{"id": claim.id, "measured": 1.0, "passed": False}, {"id": "other", "passed": True}]}
    (folder / f"{claim.chapter}.json").write_text(json.dumps(run), encoding="utf-8")
    assert claims.archived_checks(claim.id) == {"date": run["date"], "commit": "23e27bc",
                                               "records": [run["records"][0]]}
    with pytest.raises(ValueError, match="claim_id"):
        claims.archived_checks("no.such-claim")


def test_show_archived_check_is_for_a_claim_this_mode_does_not_check(monkeypatch):
    checked_here = next(claim for claim in claims.registry().claims.values()
                        if claim.verdict != "out of scope" and claims.mode() in claim.modes)
    with pytest.raises(ValueError, match="check_claim"):
        claims.show_archived_check(checked_here.id)
    with pytest.raises(ValueError, match="claim_id"):
        claims.show_archived_check("no.such-claim")
def test_make_chapter_builds_a_chapter_read_in_parts_with_all_its_pages():
    """Its pages cite each other: `make chapter` on any of them builds the first page and every part."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tools" / "chapter_toc.py"
    spec = importlib.util.spec_from_file_location("chapter_toc", path)
    chapter_toc = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(chapter_toc)
    parts = {name for name, header in claims.registry().chapters.items() if header["part_of"]}
    for part in parts:
        first = claims.registry().chapters[part]["part_of"]
        pages = chapter_toc.family(part)
        assert pages[0] == first and part in pages and chapter_toc.family(first) == pages
    assert chapter_toc.family("balance") == ["balance"]
