"""Issue 37 on a built site: claim cards led by the ledger's verdict and marking paper-scale failures, a ledger a
reader can search (ASCII and Unicode, every column, under 100 ms a keystroke with a 4x CPU throttle), no formula
cut off at 400 px on the ledger, and the status page's sentence on the archived runs' age."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from icllib.claims import registry
from test_site import chapter_pages, parsed, same_measured_value, shown_number

ROOT = Path(__file__).resolve().parents[1]
# Every keystroke's budget with the CPU slowed 4x (a mid-range phone): its handler, the filter and the layout after
# it. On the 2-core machine the tests share, the slowest keystroke of a query (the one that folds the most rows) took
# 80-580 ms at 1400 px and 60-210 ms at 400 px while a row filtered out was display: none (its boxes and typeset
# formulas torn down, and rebuilt when shown again); collapsed with its boxes kept, 35-90 ms and 20-35 ms.
KEYSTROKE_BUDGET_MS = 100
THROTTLE = 4
# The paper-scale cell of a ledger row at 1400 px: its result, date, chapter and one staleness mark (it was up to
# 464 px tall with the list of files changed since the run).
PAPER_SCALE_CELL_MAX_PX = 250


def _archived_failures() -> dict[str, list[dict]]:
    failures: dict[str, list[dict]] = {}
    for path in sorted((ROOT / "results" / "full").glob("*.json")):
        for record in json.loads(path.read_text(encoding="utf-8")).get("records", []):
            if record.get("passed") is False:
                failures.setdefault(record["id"], []).append(record)
    return failures


def _card_checks(site: Path) -> list[tuple[str, object]]:
    """Every check shown on a chapter page, as (page, the card's row or the card of one check)."""
    checks = []
    for page in chapter_pages():
        for card in parsed(site / f"{page}.html").select("div.claim-card"):
            checks += [(page, row) for row in card.select("tr.claim-card-row") or [card]]
    return checks


def test_every_card_leads_with_its_ledger_verdict_not_with_pass(site):
    book = registry().claims
    checks = _card_checks(site)
    assert checks, "no claim card on any chapter page"
    problems = []
    for page, check in checks:
        claim_id = check.select_one("a.claim-card-id").get_text(strip=True)
        chip = check.select_one("span.verdict-chip")
        first = check.find(["span", "strong", "a", "code"])
        if chip is None or first is not chip:
            problems.append(f"{page}: {claim_id}: the card does not open with its verdict chip")
        elif chip.get_text(strip=True) != book[claim_id].verdict:
            problems.append(f"{page}: {claim_id}: chip {chip.get_text(strip=True)!r}, ledger {book[claim_id].verdict!r}")
        if check.get_text(" ", strip=True).lower().startswith("pass"):
            problems.append(f"{page}: {claim_id}: the card still opens with 'pass'")
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:20])


def test_cards_say_what_was_expected_in_numbers_set_for_reading(site):
    unread = []
    for page, check in _card_checks(site):
        text = check.get_text(" ", strip=True)
        if check.name == "div" and "no paper-scale run archived" not in text and "expected" not in text:
            unread.append(f"{page}: no 'expected': {text[:80]!r}")
        if any(re.search(r"\de[-+]\d", code.get_text()) for code in check.select("code")):
            unread.append(f"{page}: a raw float: {text[:80]!r}")
    assert not unread, "\n".join(unread[:20])


def test_cards_mark_the_checks_the_archived_paper_scale_run_failed(site):
    failures = _archived_failures()
    unmarked, wrongly = set(), set()
    for _page, check in _card_checks(site):
        claim_id = check.select_one("a.claim-card-id").get_text(strip=True)
        mark = check.select_one(".claim-card-paper-scale-failed")
        if claim_id in failures and mark is None:
            unmarked.add(claim_id)
        elif claim_id not in failures and mark is not None:
            wrongly.add(claim_id)
    assert not unmarked, f"cards of checks that failed at paper scale without the mark: {sorted(unmarked)}"
    assert not wrongly, f"cards marked as failed at paper scale that did not fail there: {sorted(wrongly)}"


def test_a_check_run_only_at_paper_scale_shows_the_archived_value(site):
    book = registry().claims
    full_only = {claim_id for claim_id, claim in book.items() if list(claim.modes) == ["full"]}
    shown = {}
    for page, check in _card_checks(site):
        claim_id = check.select_one("a.claim-card-id").get_text(strip=True)
        if claim_id in full_only:
            shown[claim_id] = check.get_text(" ", strip=True)
    assert shown, "no card of a check run only at paper scale"
    for claim_id, text in shown.items():
        archived = (ROOT / "results" / "full" / f"{book[claim_id].chapter}.json").is_file()
        assert ("archived paper-scale run of" in text) if archived else ("no paper-scale run archived" in text), text


# --- the ledger in a browser -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def chromium():
    from browser import open_chromium

    browser = open_chromium(timeout_s=120)
    yield browser
    browser.close()


# The rows a reader sees: those that take room on the page and are not invisible (a row the search leaves out is
# collapsed with its boxes kept, not removed).
SHOWN = """Array.from(document.querySelectorAll("tr.ledger-row"))
  .filter((row) => row.getBoundingClientRect().height > 0 && getComputedStyle(row).visibility === "visible")
  .map((row) => row.id)"""

# Types a query one key at a time, as a reader does, then erases it one key at a time; waits after each key for the
# filter (debounced) and the next frame; reports per keystroke the input handler's time, the filter's, and the
# layout and paint of the frame after it, with the rows shown once the whole query was typed.
TYPE = r"""
(async (query) => {
  const input = document.getElementById("ledger-search");
  const frame = () => new Promise((done) => requestAnimationFrame(() => setTimeout(done, 0)));
  const typed = Array.from(query, (key, end) => query.slice(0, end + 1));
  const values = [...typed, ...typed.slice(0, -1).reverse(), ""];
  const keys = [];
  let shown = null;
  for (const value of values) {
    const filtered = new Promise((done) => document.addEventListener("ledger-filtered",
      (event) => done(event.detail.ms), {once: true}));
    const started = performance.now();
    input.value = value;
    input.dispatchEvent(new Event("input", {bubbles: true}));
    const handler = performance.now() - started;
    const filter = await filtered;
    const before = performance.now();
    document.body.getBoundingClientRect();
    const layout = performance.now() - before;
    await frame();
    keys.push({value, handler, filter, layout, frame: performance.now() - before});
    if (value === query) shown = SHOWN;
  }
  return JSON.stringify({keys, shown});
})
""".replace("SHOWN", SHOWN)


def _slowest_work(typed: dict) -> float:
    return max(key["handler"] + key["filter"] + key["layout"] for key in typed["keys"])


def _type(chromium, query: str) -> dict:
    return json.loads(chromium.evaluate(f"{TYPE}({json.dumps(query)})", await_promise=True))


def _ledger_json(site: Path) -> list[dict]:
    return json.loads((site / "book" / "ledger.json").read_text(encoding="utf-8"))["rows"]


def _anchor(claim_id: str) -> str:
    return "claim-" + re.sub(r"[^a-z0-9-]", "-", claim_id.lower())


def test_the_search_bar_is_under_the_title_and_the_rules_are_folded(site, chromium):
    chromium.load((site / "book" / "claims.html").as_uri(), 400)
    layout = json.loads(chromium.evaluate("""JSON.stringify({
      bar: document.querySelector("fieldset.ledger-filter").getBoundingClientRect().top,
      title: document.querySelector("article section > h1").getBoundingClientRect().bottom,
      rules: Array.from(document.querySelectorAll("details.verdict-rules")).map((node) => node.open),
      screen: window.innerHeight})"""))
    assert layout["title"] <= layout["bar"] < layout["screen"], layout
    assert layout["rules"] == [False], layout


# Every query at a phone's width, where the throttle stands for a phone's CPU; at 1400 px, where the ledger is one
# wide table, the queries that fold the most rows and bring the most sections into view.
@pytest.mark.parametrize("query, expect, width", [
    ("eta_y", "ascii", 400), ("ηY", "ascii", 400), ("η_Y", "ascii", 400), ("inconclusive", "verdict", 400),
    ("App. B.11", "location", 400), ("rtol", "check", 400),
    ("eta_y", "ascii", 1400), ("inconclusive", "verdict", 1400), ("rtol", "check", 1400),
])
def test_the_ledger_search_finds_rows_by_every_column_in_ascii_and_unicode_within_budget(site, chromium, query,
                                                                                         expect, width, measured):
    rows = _ledger_json(site)
    by_column = {
        "ascii": [row["id"] for row in rows if "eta_y" in json.dumps(row, ensure_ascii=False).lower()],
        "verdict": [row["id"] for row in rows if "inconclusive" in (row["verdict"],
                                                                    *(c["to"] for c in row["verdict_history"]))
                    or "inconclusive" in json.dumps(row).lower()],
        "location": [row["id"] for row in rows if "app. b.11" in json.dumps(row).lower()],
        "check": [row["id"] for row in rows if "rtol" in " ".join(row["check"]).lower()],
    }[expect]
    assert by_column, f"no row of ledger.json holds what {query!r} looks for"
    # Each try is a reader's first search on a freshly loaded page (no row laid out by an earlier search); the
    # best of three, as the 2-core machine the tests share runs other work beside the browser.
    typings = []
    for _ in range(3):
        chromium.load((site / "book" / "claims.html").as_uri(), width)
        chromium.send("Emulation.setCPUThrottlingRate", chromium.session, rate=THROTTLE)
        try:
            typings.append(_type(chromium, query))
        finally:
            chromium.send("Emulation.setCPUThrottlingRate", chromium.session, rate=1)
        if _slowest_work(typings[-1]) < KEYSTROKE_BUDGET_MS:
            break
    typed = min(typings, key=_slowest_work)
    assert {_anchor(claim_id) for claim_id in by_column} <= set(typed["shown"]), (
        f"{query!r}: rows missing: {sorted({_anchor(c) for c in by_column} - set(typed['shown']))[:10]}")
    if expect == "verdict":
        verdicts = {row["id"]: row["verdict"] for row in rows}
        assert sum(verdicts[claim_id] == "inconclusive" for claim_id in by_column) == sum(
            verdict == "inconclusive" for verdict in verdicts.values())
    assert typed["keys"][-1]["value"] == "" and len(typed["keys"]) == 2 * len(query)
    # the work a keystroke sets off: its handler, then (debounced) the filter and the layout of the page after it;
    # the frame adds painting and the wait for the screen's next refresh, which a busy machine stretches (reported)
    work = [key["handler"] + key["filter"] + key["layout"] for key in typed["keys"]]
    frames = [key["handler"] + key["filter"] + key["frame"] for key in typed["keys"]]
    measured.setdefault(f"ledger search, {THROTTLE}x CPU throttle, typed and erased (ms a keystroke)", []).append(
        f"{query!r} at {width} px: work slowest {max(work):.0f} (tries: "
        f"{', '.join(f'{_slowest_work(typing):.0f}' for typing in typings)}), median {statistics.median(work):.0f}; "
        f"to the next frame slowest {max(frames):.0f}, median {statistics.median(frames):.0f}; "
        f"{len(typed['shown'])} rows")
    slow = [f"{key['value']!r}: {ms:.0f} ms" for key, ms in zip(typed["keys"], work) if ms >= KEYSTROKE_BUDGET_MS]
    assert not slow, f"{query!r} at {width} px, keystrokes over {KEYSTROKE_BUDGET_MS} ms: {slow}; {typed['keys']}"


def test_the_ledger_shows_measured_values_set_for_reading(site):
    """As a claim's card does (icllib.cards.readable_number): 4.441 × 10⁻¹⁶, not 4.44089e-16; ledger.json keeps 6
    significant digits."""
    kept = {_anchor(row["id"]): row["measured"] for row in _ledger_json(site)}
    problems = []
    scientific = 0
    for row in parsed(site / "book" / "claims.html").select("tr.ledger-row"):
        shown = [p.get_text(strip=True) for p in row.select("td.ledger-measured p")]
        scientific += sum(" × 10" in text or bool(re.fullmatch("10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", text)) for text in shown)
        for text in shown:
            number = shown_number(text)     # fails on a raw float (4.44089e-16)
            if isinstance(number, float) and not number.is_integer():
                digits = re.match(r"-?([\d.]+)", text)[1].replace(".", "").lstrip("0")
                if len(digits) > 4:
                    problems.append(f"{row['id']}: {text!r} has {len(digits)} significant digits")
        if len(shown) != len(kept[row["id"]]) or not all(map(same_measured_value, shown, kept[row["id"]])):
            problems.append(f"{row['id']}: shows {shown}, ledger.json {kept[row['id']]}")
    assert not problems, "Measured cells not set for reading:\n" + "\n".join(problems[:20])
    tiny = sum(value not in ("True", "False") and 0 < abs(float(value)) < 1e-4
               for values in kept.values() for value in values)
    assert scientific >= tiny, f"{tiny} values below 10⁻⁴ but {scientific} cells in powers of ten"


def test_the_ledger_search_finds_a_value_as_its_cell_shows_it_and_as_ledger_json_keeps_it(site, chromium):
    kept = {_anchor(row["id"]): row["measured"] for row in _ledger_json(site)}
    rows = parsed(site / "book" / "claims.html").select("tr.ledger-row")
    row, text = next((row, p.get_text(strip=True)) for row in rows for p in row.select("td.ledger-measured p")
                     if " × 10" in p.get_text())
    chromium.load((site / "book" / "claims.html").as_uri(), 400)
    for query in (text, kept[row["id"]][0]):
        shown = json.loads(chromium.evaluate(f"""(() => {{ const input = document.getElementById("ledger-search");
          input.value = {json.dumps(query)}; input.dispatchEvent(new KeyboardEvent("keydown", {{key: "Enter"}}));
          return JSON.stringify({SHOWN}); }})()"""))
        assert row["id"] in shown, f"{query!r} does not find {row['id']}: {shown[:10]}"


# A formula is cut off when it reaches past its cell or the screen, or scrolls inside its own box by more than a
# glyph's overhang (MathJax's italic corrections stick out 2-4 px).
LEDGER_OVERFLOW = r"""
JSON.stringify(Array.from(document.querySelectorAll("table.ledger-table mjx-container")).filter((math) => {
  const box = math.getBoundingClientRect();
  const cell = math.closest("td").getBoundingClientRect();
  const scrolls = getComputedStyle(math).overflowX !== "visible" && math.scrollWidth > math.clientWidth + 4;
  return box.width > 0 && (box.right > Math.min(cell.right, window.innerWidth) + 1 || scrolls);
}).map((math) => math.closest("tr").id + ": " + (math.getAttribute("aria-label") || math.textContent).slice(0, 60)))
"""


# The ledger lays out only the cells in view (content-visibility); a measure of every row lays them all out.
RENDER_ALL = """(() => { const style = document.createElement("style");
  style.textContent = "table.ledger-table td > * { content-visibility: visible !important; }";
  document.head.append(style); return document.body.getBoundingClientRect().height; })()"""


def test_no_formula_is_cut_off_on_the_ledger_at_400_px(site, chromium):
    chromium.load((site / "book" / "claims.html").as_uri(), 400)
    chromium.evaluate(RENDER_ALL)
    cut = json.loads(chromium.evaluate(LEDGER_OVERFLOW))
    assert not cut, f"{len(cut)} formulas cut off or scrolling at 400 px:\n" + "\n".join(cut[:20])


def test_ledger_rows_are_short_and_staleness_is_one_mark_to_the_status_page(site, chromium, measured):
    ledger = parsed(site / "book" / "claims.html")
    for mark in ledger.select("a.paper-scale-stale"):
        assert mark["href"].startswith("status.html#paper-scale-runs"), mark["href"]
    cells = ledger.select("td.ledger-paper-scale")
    assert not [cell for cell in cells if "changed since" in cell.get_text() and ".py" in cell.get_text()], \
        "a row still lists the files changed since its archived run"
    chromium.load((site / "book" / "claims.html").as_uri(), 1400)
    chromium.evaluate(RENDER_ALL)
    # the height of each row and of its paper-scale cell's content (which listed up to 15 files before)
    heights = json.loads(chromium.evaluate("""JSON.stringify(Array.from(document.querySelectorAll("tr.ledger-row"))
      .map((row) => [row.offsetHeight, Array.from(row.querySelector("td.ledger-paper-scale").children)
        .reduce((height, child) => height + child.getBoundingClientRect().height, 0)]))"""))
    rows = [row for row, _ in heights]
    measured.setdefault("ledger rows at 1400 px (px)", []).append(
        f"median {statistics.median(rows):.0f}, tallest {max(rows)}; paper-scale cells at most "
        f"{max(cell for _, cell in heights):.0f}")
    assert max(cell for _, cell in heights) < PAPER_SCALE_CELL_MAX_PX, heights


def test_the_status_page_says_how_old_the_paper_scale_archives_are(site):
    page = parsed(site / "book" / "status.html")
    sentence = page.select_one("p.paper-scale-age")
    assert sentence is not None, "no sentence on the archived paper-scale runs"
    text = sentence.get_text(" ", strip=True)
    assert "commits behind the code" in text or "No paper-scale run is archived" in text, text
    assert ("checks" in text or "only what the pages show" in text or "no chapter's code changed" in text), text
    assert page.find(id="paper-scale-runs") is not None


@pytest.mark.parametrize("page", ["book/claims.html", "book/errata.html"])
def test_every_formula_of_the_ledger_and_the_errata_typesets(site, chromium, page):
    """The registry's formulas, typeset whole (ascii_formulas) or written in TeX, are TeX that MathJax reads."""
    chromium.load((site / page).as_uri(), 1400)
    errors = json.loads(chromium.evaluate("""JSON.stringify(Array.from(document.querySelectorAll("mjx-merror"))
      .map((error) => (error.getAttribute("data-mjx-error") || "") + ": "
           + (error.closest("mjx-container").getAttribute("aria-label") || "")).slice(0, 20))"""))
    assert not errors, "\n".join(errors)
