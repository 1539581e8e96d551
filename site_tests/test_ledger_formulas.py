"""Issue 37 on a built site: the registry's statements (the ledger) and the errata's and notes' corrections,
clarifications and evidence (the errata page) show each formula whole, never cut into typeset pieces with nothing
but spaces or operators between them (``\\(\\alpha(T_{1}\\)`` then ``\\(+ T_{2} + T_{3})\\)``). The registry writes
them in TeX between ``$...$`` (``tests/test_registry_tex.py``); this checks what the pages made of them."""

from __future__ import annotations

import re

import pytest

from test_site import parsed

# Nothing between two formulas but spaces and operators: one formula cut in two.
ONLY_OPERATORS = re.compile(r"[\s+\-−=<>/*^|·×≤≥≠→≈~]*")
# The errata page's items the book writes itself (the paper's words, "The paper says", are quoted as printed).
BOOK_ITEMS = ("Correction:", "Clarification:", "Evidence:")


def cut_formulas(paragraph) -> list[str]:
    """The pairs of formulas of a paragraph that stand side by side, with only spaces or operators between them."""
    cut, previous, between = [], None, ""
    for node in paragraph.children:
        if getattr(node, "name", None) == "span" and "math" in (node.get("class") or []):
            if previous is not None and ONLY_OPERATORS.fullmatch(between):
                cut.append(f"{previous}{between}{node.get_text()}")
            previous, between = node.get_text(), ""
        else:
            between += node.get_text() if hasattr(node, "get_text") else str(node)
    return cut


@pytest.mark.parametrize("page", ["book/claims.html", "book/errata.html"])
def test_no_formula_of_the_books_sentences_is_cut_in_pieces(site, page):
    html = parsed(site / page)
    if page.endswith("claims.html"):
        paragraphs = html.select("p.statement")
    else:
        paragraphs = [item.find("p") or item for item in html.select("li")
                      if item.get_text(" ", strip=True).startswith(BOOK_ITEMS)]
    assert paragraphs, f"{page}: no statement, correction or evidence found"
    assert any(paragraph.select("span.math") for paragraph in paragraphs), f"{page}: no formula"
    cut = [f"{piece}" for paragraph in paragraphs for piece in cut_formulas(paragraph)]
    assert not cut, f"{page}: {len(cut)} formulas cut in pieces:\n" + "\n".join(cut[:20])
