"""The repository URL lives in one place (``repository.url`` in ``_config.yml``), the book's in another
(``html.baseurl``); everything else follows.

A tiny book is built twice: with sample URLs, the chapter page carries the repository button, Binder and Colab
launch buttons (Colab opening the chapter's download on the published branch) and a BibTeX ``url``, and the
download installs icllib from the site; with none (as today), no page names any repository, not even the
example one that sphinx-thebe would embed, and the download installs from a wheel or archive beside it.
CITATION.cff's ``repository-code`` agrees with ``_config.yml``.
"""

import json
import sys
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

from test_failing_notebook import BIN, ROOT, make_tiny_book, run

SAMPLE_URL = "https://github.com/example-org/icl-book"
SAMPLE_SITE = "https://example-org.github.io/icl-book"
# The chapters' jupytext header: the theme offers launch buttons on pages with a kernelspec.
HEADER = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"
CITE = "\n# %% [markdown]\n# ## Cite this chapter\n#\n# ```{cite-this-chapter}\n# ```\n"
# Numbered results, a labelled equation and exercises, cited from the prose: the download must number them as the
# page does, under a numbered table of contents ("Exercise 1.2").
RESULTS = """
# %% [markdown]
# ## Results
#
# By {prf:ref}`thm-tiny`, {eq}`tiny-eq` holds; try {ref}`the second exercise <tiny-ex-two>`.
#
# ```{prf:theorem} Tiny
# :label: thm-tiny
# Two is two.
# ```
#
# $$ 2 = 2 $$ (tiny-eq)
#
# ```{exercise}
# :label: tiny-ex-one
# Check that two is two.
# ```
#
# ```{exercise}
# :label: tiny-ex-two
# Check it again.
# ```
#
# ```{solution} tiny-ex-two
# :class: dropdown
# It is.
# ```
"""
NUMBERED_TOC = """format: jb-book
root: book/intro
parts:
  - caption: Chapters
    numbered: true
    chapters:
      - file: notebooks/tiny
  - caption: The rest
    chapters:
      - file: book/claims
      - file: book/refs
"""


def build_tiny_book(folder: Path, url: str, site: str = "") -> str:
    env = make_tiny_book(folder, 2.0)
    notebook = folder / "notebooks" / "tiny.py"
    notebook.write_text(HEADER + notebook.read_text(encoding="utf-8") + RESULTS + CITE, encoding="utf-8")
    (folder / "_toc.yml").write_text(NUMBERED_TOC, encoding="utf-8")
    config = (folder / "_config.yml").read_text(encoding="utf-8")
    assert 'url: ""' in config and 'baseurl: ""' in config
    config = config.replace('baseurl: ""', f'baseurl: "{site}"', 1)
    (folder / "_config.yml").write_text(config.replace('  url: ""', f'  url: "{url}"', 1), encoding="utf-8")
    build = run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], folder, env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return (folder / "_build" / "html" / "notebooks" / "tiny.html").read_text(encoding="utf-8")


def download(folder: Path) -> dict:
    return json.loads((folder / "_build" / "html" / "_sources" / "notebooks" / "tiny.ipynb").read_text(encoding="utf-8"))


def test_a_repository_url_gives_the_buttons_and_the_bibtex_url(tmp_path):
    page = build_tiny_book(tmp_path, SAMPLE_URL, SAMPLE_SITE)
    assert f'href="{SAMPLE_URL}"' in page, "no repository button"
    assert "https://mybinder.org/v2/gh/example-org/icl-book/main?urlpath=tree/notebooks/tiny.py" in page
    colab = ("https://colab.research.google.com/github/example-org/icl-book/blob/gh-pages/_sources/notebooks/"
             "tiny.ipynb")
    assert colab in page
    assert "blob/main/notebooks/tiny.py" not in page, "the theme's Colab link to the .py, which Colab cannot open"
    bibtex = BeautifulSoup(page, "html.parser").select_one("div.chapter-bibtex").get_text()
    assert f"url       = {{{SAMPLE_URL}}}" in bibtex
    notebook = download(tmp_path)
    install = "".join(notebook["cells"][0]["source"])
    # this tiny book has no src/ and offers no wheel, so its install cell names none it could not pin by hash (the
    # book's own cells install the site's wheel: tests/test_downloads.py)
    assert "/wheels/" not in install and "icl-book-source.tar.xz" in install
    cite = "".join(next(cell["source"] for cell in notebook["cells"] if "To cite this chapter" in "".join(cell["source"])))
    assert f"url       = {{{SAMPLE_URL}}}" in cite, "the download carries the page's BibTeX entry"


@pytest.fixture(scope="module")
def without_url(tmp_path_factory) -> Path:
    """The tiny book built once without a repository URL, as today (two tests read it)."""
    folder = tmp_path_factory.mktemp("no-url")
    build_tiny_book(folder, "")
    return folder


def test_without_a_repository_url_no_page_names_a_repository(without_url):
    tmp_path = without_url
    pages = {path.name: path.read_text(encoding="utf-8") for path in (tmp_path / "_build" / "html").rglob("*.html")}
    for name, text in pages.items():
        for wrong in ("binder", "github.com/", "gitlab.com/"):
            assert wrong not in text.lower(), f"{name} names {wrong!r}"
    assert "url       = {" not in BeautifulSoup(pages["tiny.html"], "html.parser").get_text()
    install = "".join(download(tmp_path)["cells"][0]["source"])
    assert "http" not in install and "icl-book-source.tar.xz" in install


def test_citation_cff_names_the_configured_repository():
    configured = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation.get("repository-code", "") == configured
    assert set(citation["license"]) == {"MIT", "CC-BY-4.0"}
    assert citation["version"] and citation["date-released"]


def test_the_download_numbers_results_equations_and_exercises_as_the_page_does(without_url):
    tmp_path = without_url
    page = BeautifulSoup((tmp_path / "_build" / "html" / "notebooks" / "tiny.html").read_text(encoding="utf-8"),
                         "html.parser")
    on_page = " ".join(page.get_text(" ").split())
    assert "Exercise 1.1" in on_page and "Exercise 1.2" in on_page and "Theorem 1.1" in on_page
    assert "(1.1)" in on_page
    markdown = "\n".join("".join(cell["source"]) for cell in download(tmp_path)["cells"]
                          if cell["cell_type"] == "markdown")
    assert "By Theorem 1.1, (1.1) holds; try the second exercise." in markdown
    assert "**Exercise 1.1**" in markdown and "**Exercise 1.2**" in markdown
    assert "> **Theorem 1.1** (Tiny)." in markdown and "\\tag{1.1}" in markdown
    assert "**Solution to Exercise 1.2**" in markdown
    sys.path.insert(0, str(ROOT / "_ext"))
    import notebook_conversion

    assert not notebook_conversion.raw_myst(markdown)
