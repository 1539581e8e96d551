"""The repository URL lives in one place (``repository.url`` in ``_config.yml``), the book's in another
(``html.baseurl``); everything else follows.

A tiny book is built twice: with sample URLs, the chapter page carries the repository button, Binder and Colab
launch buttons (Colab opening the chapter's download on the published branch) and a BibTeX ``url``, and the
download installs icllib from the site; with none (as today), no page names any repository, not even the
example one that sphinx-thebe would embed, and the download installs from a wheel or archive beside it.
CITATION.cff's ``repository-code`` agrees with ``_config.yml``.
"""

import json
from pathlib import Path

import yaml
from bs4 import BeautifulSoup

from test_failing_notebook import BIN, ROOT, make_tiny_book, run

SAMPLE_URL = "https://github.com/example-org/icl-book"
SAMPLE_SITE = "https://example-org.github.io/icl-book"
# The chapters' jupytext header: the theme offers launch buttons on pages with a kernelspec.
HEADER = "# ---\n# jupyter:\n#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n\n"
CITE = "\n# %% [markdown]\n# ## Cite this chapter\n#\n# ```{cite-this-chapter}\n# ```\n"


def build_tiny_book(folder: Path, url: str, site: str = "") -> str:
    env = make_tiny_book(folder, 2.0)
    notebook = folder / "notebooks" / "tiny.py"
    notebook.write_text(HEADER + notebook.read_text() + CITE)
    config = (folder / "_config.yml").read_text()
    assert 'url: ""' in config and 'baseurl: ""' in config
    config = config.replace('baseurl: ""', f'baseurl: "{site}"', 1)
    (folder / "_config.yml").write_text(config.replace('  url: ""', f'  url: "{url}"', 1))
    build = run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], folder, env)
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return (folder / "_build" / "html" / "notebooks" / "tiny.html").read_text()


def download(folder: Path) -> dict:
    return json.loads((folder / "_build" / "html" / "_sources" / "notebooks" / "tiny.ipynb").read_text())


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
    assert f"icllib @ {SAMPLE_SITE}/wheels/icllib-" in install
    cite = "".join(next(cell["source"] for cell in notebook["cells"] if "To cite this chapter" in "".join(cell["source"])))
    assert f"url       = {{{SAMPLE_URL}}}" in cite, "the download carries the page's BibTeX entry"


def test_without_a_repository_url_no_page_names_a_repository(tmp_path):
    build_tiny_book(tmp_path, "")
    pages = {path.name: path.read_text() for path in (tmp_path / "_build" / "html").rglob("*.html")}
    for name, text in pages.items():
        for wrong in ("binder", "github.com/", "gitlab.com/"):
            assert wrong not in text.lower(), f"{name} names {wrong!r}"
    assert "url       = {" not in BeautifulSoup(pages["tiny.html"], "html.parser").get_text()
    install = "".join(download(tmp_path)["cells"][0]["source"])
    assert "http" not in install and "icl-book-source.tar.gz" in install


def test_citation_cff_names_the_configured_repository():
    configured = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation.get("repository-code", "") == configured
    assert set(citation["license"]) == {"MIT", "CC-BY-4.0"}
    assert citation["version"] and citation["date-released"]
