"""The built site: every page is there, the ledger is complete, nothing loads from the network, math
renders in a real browser, and every chapter offers its executed notebook."""

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from icllib.claims import registry

ROOT = Path(__file__).resolve().parents[1]
EXTERNAL = re.compile(r"^(https?:)?//", re.IGNORECASE)
CSS_EXTERNAL_URL = re.compile(r"(url\(\s*['\"]?(https?:)?//|@import\s+['\"](https?:)?//)", re.IGNORECASE)


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", [{"chapters": toc.get("chapters", [])}]):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def chapter_pages() -> list[str]:
    return [name for name in toc_files() if name.startswith("notebooks/")]


def soup(path: Path) -> BeautifulSoup:
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def test_every_toc_entry_produced_a_page(site):
    missing = [name for name in toc_files() if not (site / f"{name}.html").is_file()]
    assert not missing, f"no page for: {missing}"


def test_the_ledger_has_one_row_per_registered_claim(site):
    tables = soup(site / "book" / "claims.html").select("table.ledger-table")
    papers = {claim.paper for claim in registry().claims.values()}
    assert len(tables) == len(papers), "one ledger table per paper"
    ids = [cell.get_text(strip=True) for table in tables for cell in table.select("tbody p.claim-id")]
    assert sorted(ids) == sorted(registry().claims)
    assert not any("FAILED" in table.get_text() for table in tables)


def test_the_ledger_states_the_seven_verdicts_and_each_papers_coverage(site):
    from icllib.claims import VERDICTS

    text = soup(site / "book" / "claims.html").get_text(" ", strip=True)
    assert all(verdict in text for verdict in VERDICTS)
    papers = {claim.paper for claim in registry().claims.values()}
    assert text.count("Coverage:") == len(papers)


def test_the_errata_page_lists_every_erratum_and_note_in_its_own_section(site):
    page = soup(site / "book" / "errata.html")
    text = page.get_text()
    missing = [passage_id for passage_id in (*registry().errata, *registry().notes) if passage_id not in text]
    assert not missing
    headings = [heading.get_text(strip=True).rstrip("#") for heading in page.select("h2")]
    assert headings[:2] == ["Errata", "Notes"]


def test_no_page_loads_a_script_stylesheet_or_font_from_the_network(site):
    offenders = []
    for page in site.rglob("*.html"):
        document = soup(page)
        for tag in document.find_all("script", src=True):
            if EXTERNAL.match(tag["src"]):
                offenders.append(f"{page.relative_to(site)}: script {tag['src']}")
        for tag in document.find_all("link", href=True):
            relations = set(tag.get("rel", []))
            if relations & {"stylesheet", "preload", "modulepreload", "icon"} and EXTERNAL.match(tag["href"]):
                offenders.append(f"{page.relative_to(site)}: link {tag['href']}")
        for tag in document.find_all("style"):
            if CSS_EXTERNAL_URL.search(tag.get_text()):
                offenders.append(f"{page.relative_to(site)}: inline style with an external URL")
    for stylesheet in site.rglob("*.css"):
        if CSS_EXTERNAL_URL.search(stylesheet.read_text(encoding="utf-8", errors="replace")):
            offenders.append(f"{stylesheet.relative_to(site)}: external url() or @import")
    assert not offenders, "\n".join(offenders)


def test_mathjax_is_served_locally(site):
    sources = [tag["src"] for page in site.rglob("*.html") for tag in soup(page).find_all("script", src=True)]
    mathjax = [src for src in sources if "mathjax" in src.lower()]
    assert mathjax, "no page loads MathJax"
    assert not [src for src in mathjax if EXTERNAL.match(src)], "MathJax is loaded from the network"
    assert (site / "_static" / "mathjax" / "tex-mml-chtml.js").is_file()
    assert (site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").is_dir()


def find_browser() -> str | None:
    return next((path for name in ("chromium", "chromium-browser", "google-chrome")
                 if (path := shutil.which(name))), None)


def test_math_renders_in_a_headless_browser_offline(site):
    browser = find_browser()
    if browser is None:
        if os.environ.get("ICLLIB_REQUIRE_BROWSER"):
            pytest.fail("ICLLIB_REQUIRE_BROWSER is set but no chromium is installed")
        pytest.skip("no chromium on this machine (CI installs it and sets ICLLIB_REQUIRE_BROWSER)")
    page = site / f"{chapter_pages()[0]}.html"
    with tempfile.TemporaryDirectory() as profile:
        result = subprocess.run(
            [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
    dom = result.stdout
    assert result.returncode == 0, result.stderr[-2000:]
    assert dom.count("<mjx-container") > 0, "MathJax rendered nothing"
    assert dom.count("<mjx-merror") == 0, "MathJax reported an error"


@pytest.mark.parametrize("chapter", chapter_pages())
def test_every_chapter_offers_its_executed_notebook(site, chapter):
    page = soup(site / f"{chapter}.html")
    links = [tag.get("href", "") for tag in page.find_all("a")]
    assert any(href.endswith(f"_sources/{chapter}.ipynb") for href in links), "no .ipynb download link"
    notebook = json.loads((site / "_sources" / f"{chapter}.ipynb").read_text())
    code_cells = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"]
    assert code_cells and any(cell.get("outputs") for cell in code_cells), "the notebook has no outputs"
    outputs = [output for cell in code_cells for output in cell.get("outputs", [])]
    assert not [output for output in outputs if output.get("name") == "stderr"], "stderr (progress bars) kept"
    assert "Cite this chapter" in page.get_text()


def test_the_status_page_says_where_every_chapters_outputs_come_from(site):
    """Every chapter on the site was read from a stored execution of today's code, named on the status page."""
    text = soup(site / "book" / "status.html").get_text(" ", strip=True)
    assert "Chapter executions behind this site" in text
    for page in chapter_pages():
        assert re.search(rf"\b{re.escape(Path(page).name)}\s+\d+(\.\d+)?\s", text), page
