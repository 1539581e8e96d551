"""The chapters as notebooks a reader downloads: plain Jupyter Markdown (``notebook_conversion``), and a first cell
that installs ``icllib`` (``notebook_install``).

Each build writes its pages' downloads (:func:`offer`, from ``book_ext.offer_executed_notebook``): the published
site's with the solutions, the course pack's student edition's without (``_ext/course.py`` takes both editions'
notebooks from these); the page's Colab button opens that download (:func:`launch_the_download`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat

from notebook_conversion import Resolver, chapter_numbers, plain_notebook, raw_myst, sphinx_resolver
from notebook_install import add_install_cell, wheel_digest, wheel_name, write_compact

ROOT = Path(__file__).resolve().parents[1]


# The build: the downloads on the site

def site_url(config) -> str | None:
    """The book's public URL, ``html.baseurl`` of ``_config.yml`` (Sphinx's ``html_baseurl``), or None."""
    url = (getattr(config, "html_baseurl", "") or "").strip()
    return url.rstrip("/") or None


def executed_glue(executed: Path) -> dict[str, str]:
    """``{name: plain text}`` of the values an executed chapter glued, from the ``<chapter>.glue.json`` myst-nb
    writes beside it (the executed notebook itself no longer holds them); empty when there is none."""
    glue_file = Path(executed).with_suffix(".glue.json")
    glued = {}
    if glue_file.is_file():
        for name, output in json.loads(glue_file.read_text(encoding="utf-8")).items():
            plain = [value for key, value in output.get("data", {}).items() if key.endswith("text/plain")]
            if plain:
                glued[name] = "".join(plain[0]) if isinstance(plain[0], list) else plain[0]
    return glued


def downloadable(executed: Path, *, solutions: bool, site_url: str | None, page: str, chapter: int | None = None,
                 resolve: Resolver | None = None, bibtex: str | None = None, root: Path = ROOT
                 ) -> nbformat.NotebookNode:
    """The download of an executed chapter (``_build/.../jupyter_execute/<page>.ipynb``) in one call: its values
    glued in (:func:`executed_glue`), :func:`plain_notebook` with or without solutions, and the install cell first
    (:func:`add_install_cell`). The site's pages and the course editions both write theirs with it."""
    notebook = nbformat.read(executed, as_version=4)
    for cell in notebook.cells:
        for output in cell.get("outputs", []):   # a figure's stacked variant serves the pages' phones only
            output.get("metadata", {}).get("image/png", {}).pop("stacked", None)
    plain = plain_notebook(notebook, solutions=solutions, site_url=site_url, page=page,
                           chapter=chapter if chapter is not None else chapter_numbers(root / "_toc.yml").get(page),
                           resolve=resolve, bibtex=bibtex, glued=executed_glue(executed),
                           bib_file=root / "book" / "references.bib")
    return add_install_cell(still_figures(plain), wheel_name=wheel_name(root), wheel_sha256=wheel_digest(root),
                            site_url=site_url)


# The mark of a figure with a slider (icllib.plotting_interactive) in an output's HTML.
SLIDER_FIGURE = 'class="icl-slider"'


def still_figures(notebook: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The figures with a slider as their default frame alone: each such output keeps its ``image/png`` and loses
    its ``text/html`` (the frames, the control and their script: about three times the image's weight, and a
    notebook that is not trusted would not run the script). A reader who wants to move the slider has the page;
    one who runs the notebook gets the slider back from the cell."""
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            html = data.get("text/html", "")
            if "image/png" in data and SLIDER_FIGURE in ("".join(html) if isinstance(html, list) else html):
                del data["text/html"]
    return notebook


STUDENT = "student"


def student_edition(config) -> bool:
    """Whether this build is the course pack's student edition (``course_edition``, ``_ext/course.py``)."""
    return getattr(config, "course_edition", "") == STUDENT


def edition_folder(config) -> str:
    """Where this build's pages lie relative to the published site's root: ``""``, or ``course/student/`` for the
    student edition (``_ext/course.py`` copies its build there)."""
    return f"course/{STUDENT}/" if student_edition(config) else ""


def offer(app, pagename: str, executed: Path, doctree) -> Path:
    """Write the download of a chapter page: its executed notebook, plain (:func:`plain_notebook`, references
    resolved by Sphinx) with the install cell first, to ``_sources/<page>.ipynb``. Solutions are kept as on the
    page, except in the course pack's student edition (``course_edition = "student"``), whose build writes its
    own downloads without them and links them to its own pages (``<baseurl>/course/student/``), and these are
    the edition's notebooks (``_ext/course.py`` copies them). A role or directive the conversion does not know
    fails the build (a warning under ``-W``)."""
    from docutils import nodes
    from sphinx.util import logging

    root = Path(app.srcdir)
    url = site_url(app.config)
    if url and student_edition(app.config):
        url = f"{url}/{edition_folder(app.config).rstrip('/')}"
    bibtex = None
    if doctree is not None:
        block = next(doctree.findall(lambda node: isinstance(node, nodes.literal_block)
                                     and "chapter-bibtex" in node.get("classes", [])), None)
        bibtex = block.astext() if block is not None else None
    plain = downloadable(executed, solutions=not student_edition(app.config), site_url=url, page=pagename,
                         chapter=chapter_numbers(root / "_toc.yml").get(pagename),
                         resolve=sphinx_resolver(app, pagename), bibtex=bibtex, root=root)
    left = sorted({found for cell in plain.cells if cell.cell_type == "markdown" for found in raw_myst(cell.source)})
    unconverted = plain.metadata.get("icl_book", {}).get("unconverted", [])
    if left or unconverted:
        logging.getLogger(__name__).warning(
            f"the download {pagename}.ipynb keeps MyST that plain Jupyter shows raw: {left + unconverted} "
            "(give it a conversion in _ext/notebook_conversion.py)")
    return write_compact(plain, Path(app.outdir) / "_sources" / f"{pagename}.ipynb")


COLAB = "https://colab.research.google.com"


def colab_url(repository: str, branch: str, pagename: str, folder: str = "") -> str | None:
    """Colab opens notebooks from GitHub only: the chapter's download as published on ``branch`` (the branch the
    site is served from), under ``folder`` of the site (``course/student/`` for the student edition's), or None
    for a repository elsewhere."""
    match = re.match(r"^https?://github\.com/(?P<org>[^/\s]+)/(?P<repo>[^/\s]+?)(\.git)?/?$", repository.strip())
    if match is None:
        return None
    return f"{COLAB}/github/{match['org']}/{match['repo']}/blob/{branch}/{folder}_sources/{pagename}.ipynb"


def launch_the_download(app, pagename, templatename, context, doctree):
    """Sphinx ``html-page-context``, after the theme's buttons, on a page with a download: the Colab button opens
    the chapter's plain notebook (the theme's would open the jupytext ``.py``, which Colab cannot read), and the
    download menu offers that notebook but not the ``.py`` source (MyST that Jupyter shows raw; the source archive
    holds it, and :func:`drop_the_text_sources` takes its 0.4 MB of copies off the site). In the student edition
    Colab opens the edition's own download (no solutions), and there is no Binder button: Binder opens the
    repository's text notebook, solutions and all."""
    if not context.get("ipynb_source"):
        return
    options = app.config.html_theme_options
    branch = (options.get("launch_buttons", {}).get("colab_branch") or "gh-pages").strip()
    url = colab_url(options.get("repository_url", "") or "", branch, pagename, edition_folder(app.config))
    student = student_edition(app.config)
    for group in context.get("header_buttons", []):
        if not isinstance(group, dict):
            continue
        kept = []
        for button in group.get("buttons", []):
            if button.get("text") == "Colab":
                if url is None:
                    continue
                button["url"] = url
            if button.get("text") == "Binder" and student:
                continue
            if button.get("label") == "download-source-button" and button.get("text") == ".py":
                continue
            kept.append(button)
        if "buttons" in group:
            group["buttons"] = kept


def drop_the_text_sources(app, exception):
    """Sphinx ``build-finished``: the ``_sources/`` copy of each chapter's jupytext ``.py`` goes where the page offers
    its notebook instead (:func:`launch_the_download`): nothing links to it any more."""
    if exception is not None or app.builder.format != "html":
        return
    for notebook in (Path(app.outdir) / "_sources").rglob("*.ipynb"):
        notebook.with_suffix(".py").unlink(missing_ok=True)
