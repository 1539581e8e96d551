"""What a registry entry can reach on a published page: ids are held to one shape when the registry is read, every
anchor built from an id is safe in an HTML attribute and in raw Markdown, the registry's one loader names the file
and the line of a fault and refuses duplicate keys and wrong types, a chapter title keeps its ``<`` in the errata
page's link, and no ledger.csv cell is a spreadsheet formula."""

import csv
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from icllib import cards, claim_registry, claims, deciding

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import ledger_files  # noqa: E402  (the book's Sphinx extension)
import ledger_page  # noqa: E402

REGISTRY = """\
chapter: demo
title: A demo chapter
page: notebooks/demo
paper: demo2026
claims:
  - id: demo.exact
    location: Eq. 1
    statement: one plus one is two
    verdict: reproduced
    modes: [default, full]
  - id: demo.corrected
    location: Lemma 2
    statement: the constant is 3
    verdict: corrected
    erratum: demo.E1
errata:
  - id: demo.E1
    location: Lemma 2
    line: 20
    quote: the constant is 2
    correction: the constant is 3
    evidence: SymPy derivation in the chapter
    extraction:
      artefact: ruled out
      why: the next line uses 3
"""

# Ids an editor's slip or a hostile contribution could give: each would reach a page as markup.
HOSTILE_IDS = [
    'demo.x" onmouseover="alert(1)',                 # leaves the id attribute of a claim card
    "demo.x'><script>alert(1)</script>",             # closes the tag
    "demo.E1)=\n<script>alert(1)</script>\n(demo-e2",  # new raw-Markdown lines on the errata page
    "demo.x y",                                      # a space
    "demo.x`{raw}`",                                 # a role
    "demo.café",                                     # not ASCII
    "demo",                                          # no <chapter>.<what>
    "Demo.x",                                        # the chapter part in capitals
    "demo.x\u2028y",                                 # a Unicode line separator
]


def write(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_book_registry_reads_and_every_id_has_the_shape():
    book = claims.registry()
    ids = [*book.claims, *book.errata, *book.notes]
    assert len(ids) > 200 and all(claim_registry.ID_PATTERN.fullmatch(identifier) for identifier in ids)


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_a_hostile_claim_id_is_refused_when_the_registry_is_read(tmp_path, hostile):
    # written through safe_dump, so that every shape survives YAML's quoting
    document = claim_registry.registry_document(write(tmp_path, REGISTRY))
    document["claims"][0]["id"] = hostile
    path = write(tmp_path, yaml.safe_dump(document, allow_unicode=True))
    with pytest.raises(ValueError, match=r"id .* must read <chapter>\.<what>"):
        claim_registry.parse_registry([path])


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_a_hostile_erratum_id_is_refused_when_the_registry_is_read(tmp_path, hostile):
    document = claim_registry.registry_document(write(tmp_path, REGISTRY))
    document["errata"][0]["id"] = hostile
    document["claims"][1]["erratum"] = hostile
    path = write(tmp_path, yaml.safe_dump(document, allow_unicode=True))
    with pytest.raises(ValueError, match=r"id .* must read <chapter>\.<what>"):
        claim_registry.parse_registry([path])


@pytest.mark.parametrize("hostile", HOSTILE_IDS)
def test_anchors_built_from_any_id_are_safe_in_attributes_and_raw_markdown(hostile):
    """Ids are refused before any page is built; the anchors are safe even so (a caller that bypasses the
    registry, a claim card made by hand)."""
    for anchor in (cards.card_anchor(hostile), ledger_page._anchor(hostile), ledger_page.claim_anchor(hostile)):
        assert set(anchor) <= set("abcdefghijklmnopqrstuvwxyz0123456789-"), anchor
    assert cards.card_anchor("scan_snap.fig4-winner") == "card-scan-snap-fig4-winner"
    assert ledger_page._anchor("balance.E1") == "balance-e1"


@pytest.mark.parametrize("hostile", HOSTILE_IDS[:3])
def test_a_claim_card_made_from_a_hostile_id_adds_no_attribute(hostile):
    claim = claims.Claim(id=hostile, chapter="demo", page="notebooks/demo", paper="demo2026", location="Eq. 1",
                         statement="s", verdict="reproduced")
    record = {"id": hostile, "measured": 1.0, "expected": 1.0, "tolerance": "atol=0", "why": None, "passed": True}
    page = cards.ClaimCard([cards.CardCheck(claim, record, cards.card_anchor(hostile))])._repr_html_()
    tags = []

    class Tags(HTMLParser):
        def handle_starttag(self, tag, attrs):
            tags.append((tag, dict(attrs)))

    Tags().feed(page)
    assert [tag for tag, _ in tags] == ["div", "p", "span", "a", "span", "p", "span", "code", "span", "span"]
    assert set(tags[0][1]) == {"class", "id", "data-checks", "style"} and set(tags[3][1]) == {"class", "href"}
    assert all(set(attributes) <= {"class", "style"} for _, attributes in tags[4:])


# --- The one loader ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    ("chapter: demo\ntitle: [unclosed\n", r"demo\.yaml, line 3"),
    ("chapter: demo\ntitle: one\ntitle: two\n", r"demo\.yaml, line 3: duplicate key 'title'"),
    (REGISTRY.replace("    statement: one plus one is two\n",
                      "    statement: one plus one is two\n    statement: two\n"), r"line 9: duplicate key 'statement'"),
    ("- chapter: demo\n", r"demo\.yaml: a registry file is a mapping .* got a list"),
    (REGISTRY.replace("claims:\n", "claims:\n  - demo.loose\n", 1), r"entry 1 of 'claims' must be a mapping"),
    (REGISTRY.replace("errata:\n", "errata: demo.E1\nnotes:\n", 1).split("  - id: demo.E1")[0],
     r"'errata' must be a list"),
    (REGISTRY.replace("modes: [default, full]", "modes: quick"), r"field 'modes' must be a list of names"),
    (REGISTRY.replace("paper: demo2026\n", "paper: demo2026\nother_paper_files: other.txt\n"),
     r"field 'other_paper_files' must be a list"),
    (REGISTRY.replace("erratum: demo.E1", "erratum: [demo.E1]"), r"field 'erratum' must be text"),
    (REGISTRY.replace("page: notebooks/demo", "page: notebooks/demo>`"), r"page .* must match"),
    (REGISTRY.replace("paper: demo2026", "paper: demo`2026"), r"paper .* must match"),
])
def test_the_loader_names_file_and_line_and_refuses_wrong_types(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ValueError, match=message):
        claim_registry.parse_registry([path])


def test_the_deciding_runs_read_the_registry_through_the_same_loader(tmp_path):
    write(tmp_path, REGISTRY.replace("    verdict: reproduced\n", "    verdict: reproduced\n    verdict: corrected\n"),
          "balance.yaml")
    with pytest.raises(ValueError, match=r"balance\.yaml, line \d+: duplicate key 'verdict'"):
        deciding.registry_rows("balance", tmp_path)


def test_a_registry_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "demo.yaml"
    path.write_bytes(REGISTRY.replace("A demo chapter", "A d\xe9mo chapter").encode("latin-1"))
    with pytest.raises(ValueError, match=r"demo\.yaml"):
        claim_registry.parse_registry([path])


# --- The errata page's link and ledger.csv ----------------------------------------------------------------------

def test_a_chapter_title_with_angle_brackets_keeps_them_in_the_errata_pages_link(tmp_path, monkeypatch):
    from sphinx.util.nodes import split_explicit_title

    folder = tmp_path / "registry"
    folder.mkdir()
    write(folder, REGISTRY.replace("title: A demo chapter", "title: When a < b and c > d"))
    monkeypatch.setenv("ICLLIB_REGISTRY", str(folder))
    passage = claims.registry().errata["demo.E1"]
    app = SimpleNamespace(env=SimpleNamespace(found_docs={"notebooks/demo"}))
    link = ledger_page._chapter_link(app, passage)
    assert link.startswith("chapter {doc}`") and link.endswith("`")
    explicit, title, target = split_explicit_title(link.removeprefix("chapter {doc}`")[:-1])
    assert explicit and title == "When a < b and c > d" and target == "/notebooks/demo"
    left_out = ledger_page._chapter_link(SimpleNamespace(env=SimpleNamespace(found_docs=set())), passage)
    assert left_out == r"chapter *When a \< b and c \> d*"


def test_no_ledger_csv_cell_is_a_spreadsheet_formula(tmp_path):
    row = {name: "" for name in ledger_files.LEDGER_FIELDS}
    row.update(id="demo.exact", statement="=HYPERLINK(\"http://evil.example\",\"click\")", location="+cmd|' /C calc'!A0",
               evidence="kept in json only", measured=["-0.25"], check=["-2+3", "@SUM(A1)"], verdict="reproduced",
               verdict_history=[], paper_scale_measured=[])
    release = {"book": "demo", "version": "1.0", "released": "2026-01-01", "built": "2026-01-02", "mode": "default"}
    ledger_files.write_machine_readable_ledger(tmp_path, [row], release, {})
    with open(tmp_path / "ledger.csv", newline="", encoding="utf-8") as handle:
        written = next(csv.DictReader(handle))
    assert written["statement"].startswith("'=") and written["location"].startswith("'+")
    assert written["check"] == "'-2+3 | @SUM(A1)" and written["measured"] == "-0.25"
    cells = [cell for cell in written.values() if cell]
    assert not [cell for cell in cells if cell[0] in "=+@\t\r" or (cell[0] == "-" and cell != "-0.25")], written
