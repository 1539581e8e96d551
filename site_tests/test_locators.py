"""No place of the built site cites a line of the papers' text extractions (issue 35): pages, cards, the ledger's
downloads, the downloadable notebooks and the PDFs of the course pack cite the published paper by its section,
theorem, equation, figure, appendix and a short verbatim phrase. ``pytest site_tests/test_locators.py --site=...``

Left out, on purpose: the source archive (the repository, whose registry keeps the extraction's lines in the machine
fields the coverage tests read) and the archived full-mode runs (``provenance/``: each is the
record of a past run, byte for byte as its RO-Crate hashes it, messages included)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from icllib.claim_registry import LINE_LOCATOR

ARCHIVES = ("provenance", "_static", "wheels")


def _site_folder(site: Path, path: Path) -> str:
    """The top folder of ``path`` within its edition: the course pack's student edition (``course/student/``) is
    a site of its own, with the same archives."""
    parts = path.relative_to(site).parts
    return parts[2] if parts[:2] == ("course", "student") and len(parts) > 3 else parts[0]


def _published(site: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(path for path in site.rglob("*") if path.is_file() and path.suffix in suffixes
                  and _site_folder(site, path) not in ARCHIVES)


def _found(name: str, text: str) -> list[str]:
    return [f"{name}: …{text[max(0, match.start() - 40):match.end() + 20]!r}…" for match in LINE_LOCATOR.finditer(text)]


def test_no_page_cites_a_line_of_the_extraction(site, measured):
    pages = _published(site, (".html",))
    found = []
    for page in pages:
        document = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for hidden in document.find_all(["script", "style"]):
            hidden.decompose()
        found += _found(str(page.relative_to(site)), " ".join(document.get_text(" ").split()))
    measured["line locators"] = [f"{len(pages)} pages read, {len(found)} cite a line of an extraction"]
    assert not found, "\n".join(found[:20])


def test_no_download_cites_a_line_of_the_extraction(site):
    """The ledger's JSON and CSV, and every notebook a reader downloads (the pages' sources and the course pack's)."""
    downloads = _published(site, (".json", ".csv", ".ipynb", ".py", ".md"))
    assert any(path.name == "ledger.json" for path in downloads), "the ledger's JSON is not on the site"
    found = []
    for path in downloads:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".ipynb":   # the cells' text, not JSON's escapes
            text = "\n".join("".join(cell.get("source", "")) for cell in json.loads(text).get("cells", []))
        # a "line" at the end of one line and its number on the next count too (comment marks aside)
        found += _found(str(path.relative_to(site)), " ".join(text.replace("\n# ", "\n").split()))
    assert not found, "\n".join(found[:20])


def test_no_pdf_cites_a_line_of_the_extraction(site):
    pdfs = _published(site, (".pdf",))
    if not pdfs:
        pytest.skip("this site has no PDFs (the course pack is built apart)")
    from pypdf import PdfReader

    found = []
    for path in pdfs:
        text = " ".join(page.extract_text() or "" for page in PdfReader(path).pages)
        found += _found(str(path.relative_to(site)), " ".join(text.split()))
    assert not found, "\n".join(found[:20])
