"""The course pack: a student and an instructor edition of the book, built from the same chapter sources.

``make course`` (``python _ext/course.py``, after the site is built) writes under the published site:

- ``course/student/``: the student edition's pages, a second build of the book from the stored executions
  (no chapter runs again) with sphinx-exercise's ``hide_solutions``, which drops every ``{solution}`` before it
  reaches a page, the search index or a cross-reference; the edition ships no page source and no source archive
  (both hold the solutions), and its build writes its own downloads without them (``notebook_download.offer``);
- ``course/student/pdf/`` and ``course/instructor/pdf/``: a PDF of each chapter and one of the book, printed by
  the Chromium the site tests drive (``site_tests/browser.py``), from the student pages and from the published
  pages with every solution expanded;
- each chapter's executed notebook in plain Markdown, without and with its solutions: the downloads the student
  build and the published site wrote (``course/student/_sources/<page>.ipynb`` and ``_sources/<page>.ipynb``,
  references resolved by Sphinx, glued values filled in, the install cell first), which each chapter page links.

The instructor edition's pages are the published site itself (solutions in dropdowns). ``tests/test_course.py``
checks the pack: no solution in any student file, every solution in the instructor's, every PDF page filled.
"""

from __future__ import annotations

import argparse
import base64
import filecmp
import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
COURSE_FOLDER = "course"
EDITIONS = ("student", "instructor")
EDITION_TITLES = {"student": "Student edition", "instructor": "Instructor edition"}
BOOK_PDF = "book.pdf"
# The Sphinx setting that tells the book's extension which edition it builds ("student", or "" for the
# published site); it decides what the "Run it yourself" paragraph under each chapter's title links.
EDITION_SETTING = "course_edition"
# A4, with room above and below the text for Chromium's header and footer.
PAPER = {"paperWidth": 8.27, "paperHeight": 11.69, "marginTop": 0.75, "marginBottom": 0.7, "marginLeft": 0.55,
         "marginRight": 0.55}
# Chromium prints a 60-page chapter in about ten seconds; the DevTools reply waits this long at most.
PRINT_TIMEOUT_S = 300


@dataclass(frozen=True)
class Chapter:
    number: int
    name: str       # notebooks/<name>.py
    page: str       # the page's docname, notebooks/<name>
    title: str


def chapters(root: Path = ROOT) -> list[Chapter]:
    """The numbered chapters in the order of the table of contents, titled as the registry titles them."""
    sys.path.insert(0, str(root / "src"))
    from icllib import claims

    titles = {header["page"]: header["title"] for header in claims.registry().chapters.values()}
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    pages = [entry["file"] for part in toc.get("parts", []) if part.get("numbered")
             for entry in part.get("chapters", [])]
    return [Chapter(number, Path(page).name, page, titles[page])
            for number, page in enumerate((page for page in pages if page in titles), start=1)]


def book_title(root: Path = ROOT) -> str:
    return yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["title"]


def pdf_name(chapter: Chapter) -> str:
    return f"{chapter.name}.pdf"


def course_link(edition: str, kind: str, file_name: str) -> str:
    """Where a course file lies, relative to the published site's root: ``course/<edition>/<kind>/<file>``."""
    return f"{COURSE_FOLDER}/{edition}/{kind}/{file_name}"


def tag_the_edition(app, config):
    """Sphinx ``config-inited``: the tags the book's pages test with ``{only}``: ``student`` in the student
    edition, ``course_pack`` where the site carries the course pack (the home page's part for teachers)."""
    if config.course_edition == "student":
        app.tags.add("student")
    if config.course_pack:
        app.tags.add("course_pack")


# --- the student edition's pages ---------------------------------------------------------------------------

def student_config(root: Path, target: Path) -> Path:
    """The book's ``_config.yml`` with the solutions hidden and the edition named: the student build's config."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    # jupyter-book finds a local extension's folder from the config file's: name it absolutely.
    config["sphinx"]["local_extensions"] = {name: str((root / folder).resolve())
                                            for name, folder in config["sphinx"]["local_extensions"].items()}
    sphinx_config = config["sphinx"].setdefault("config", {})
    sphinx_config["hide_solutions"] = True
    sphinx_config[EDITION_SETTING] = "student"
    # The page sources (.py, .md) hold the solutions: the student edition does not copy them.
    sphinx_config["html_copy_source"] = False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return target


def build_student_site(root: Path, work: Path) -> Path:
    """A second build of the book, from the stored executions, with the solutions hidden; returns its HTML."""
    config = student_config(root, work / "_config.student.yml")
    shutil.rmtree(work / "_build", ignore_errors=True)
    command = [str(Path(sys.executable).parent / "jupyter-book"), "build", str(root), "--config", str(config),
               "--path-output", str(work), "-W", "-n", "--keep-going", "--quiet"]
    subprocess.run(command, cwd=root, check=True)
    return work / "_build" / "html"


def without_solutions_in_the_files(site: Path) -> None:
    """What in the student build's output still holds solutions: the book's source archive (its notebooks) goes.
    The pages' downloads (``_sources/<page>.ipynb``) are the student notebooks, which the build wrote without
    solutions; anything else there (no build writes any: ``html_copy_source`` is off) goes too."""
    import source_archive

    (site / source_archive.ARCHIVE_NAME).unlink(missing_ok=True)
    for path in sorted((site / "_sources").rglob("*")):
        if path.is_file() and path.suffix != ".ipynb":
            path.unlink()


SHARED_FOLDERS = ("_static", "_images")
SHARED_LINK = re.compile(r'((?:href|src|srcset)=")((?:\.\./)*)((?:_static|_images)/[^"?#]+)')


def share_the_published_files(student: Path, site: Path) -> int:
    """The student pages lie in ``<site>/course/student/``; most of their style sheets, scripts, MathJax and
    figures are the published site's, byte for byte (the same theme, extensions and stored executions): the pages
    link those and the copies go (about 5 MB of MathJax and fonts alone). A file of their own (the edition's
    ``documentation_options.js``, which says it ships no page sources) stays. Returns the bytes saved."""
    shared, saved = set(), 0
    for folder in SHARED_FOLDERS:
        for path in sorted((student / folder).rglob("*")):
            published = site / path.relative_to(student)
            if path.is_file() and published.is_file() and filecmp.cmp(path, published, shallow=False):
                shared.add(path.relative_to(student).as_posix())
                saved += path.stat().st_size
                path.unlink()
        for folder_left in sorted((student / folder).rglob("*"), reverse=True):
            if folder_left.is_dir() and not any(folder_left.iterdir()):
                folder_left.rmdir()
    up = "../" * len(student.relative_to(site).parts)

    def relink(match: re.Match) -> str:
        return match.group(1) + match.group(2) + up + match.group(3) if match.group(3) in shared else match.group(0)

    for page in student.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        linked = SHARED_LINK.sub(relink, text)
        if linked != text:
            page.write_text(linked, encoding="utf-8")
    return saved


# --- notebooks ---------------------------------------------------------------------------------------------

def notebook_of(pages: Path, chapter: Chapter) -> Path:
    """The chapter's notebook in an edition whose pages lie in ``pages`` (the published site, or the student
    edition's folder): the download of its page (``_sources/<page>.ipynb``, ``notebook_download.offer``), as it
    reads in plain Jupyter, with the cell that installs icllib first. The published site writes it with its
    solutions, the student edition's build without them; the chapter pages link it (``book_ext``), so the pack
    holds no second copy (2 MB an edition)."""
    return pages / "_sources" / f"{chapter.page}.ipynb"


def notebooks(pages: Path) -> list[Path]:
    """Each chapter's notebook of the edition in ``pages`` (:func:`notebook_of`); stops where one is missing."""
    found = []
    for chapter in chapters():
        download = notebook_of(pages, chapter)
        if not download.is_file():
            raise SystemExit(f"{download} is missing: the build wrote no download for {chapter.page}")
        found.append(download)
    return found


# --- PDFs --------------------------------------------------------------------------------------------------

def header_template(chapter_title: str, edition: str) -> str:
    return ("<div style='font-size:7.5pt;color:#555;width:100%;margin:0 0.55in;display:flex;"
            "justify-content:space-between;font-family:sans-serif'>"
            f"<span>{html.escape(chapter_title)}</span>"
            f"<span>{html.escape(book_title())}, {EDITION_TITLES[edition].lower()}</span></div>")


def footer_template(label: str) -> str:
    return ("<div style='font-size:7.5pt;color:#555;width:100%;text-align:center;font-family:sans-serif'>"
            f"{html.escape(label)}page <span class='pageNumber'></span> of <span class='totalPages'></span></div>")


# Every figure has loaded (a page prints what it has), and the solutions' dropdowns and the hidden outputs are open
# (the print style sheet shows them too, and drops the toggles' labels). MathJax's glyphs print as text (its fonts
# map them to characters): a formula is in the PDF's text layer as it is.
READY = r"""
Promise.all(Array.from(document.images).map((image) => image.complete ? true
  : new Promise((done) => { image.addEventListener("load", done); image.addEventListener("error", done); })))
  .then(() => { document.querySelectorAll(".toggle-hidden").forEach((node) => node.classList.remove("toggle-hidden"));
                document.querySelectorAll("details.below-input").forEach((node) => { node.open = true; });
                return document.images.length; })
"""


def print_page(browser, url: str, target: Path, *, title: str, edition: str, label: str) -> float:
    """Print one page of the site to ``target`` (MathJax typeset first: ``browser.load`` waits for it); the
    seconds it took."""
    started = time.monotonic()
    browser.load(url, 1100)
    browser.evaluate(READY, await_promise=True)
    result = browser.send("Page.printToPDF", browser.session, printBackground=True, displayHeaderFooter=True,
                          headerTemplate=header_template(title, edition), footerTemplate=footer_template(label),
                          preferCSSPageSize=False, **PAPER)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(base64.b64decode(result["data"]))
    compress(target, pdf_metadata(f"{title} ({book_title()}, {EDITION_TITLES[edition].lower()})"))
    return time.monotonic() - started


def book_authors(root: Path = ROOT) -> str:
    """The book's authors as CITATION.cff names them, joined for a PDF's Author field."""
    citation = yaml.safe_load((root / "CITATION.cff").read_text(encoding="utf-8"))
    names = [author.get("name") or " ".join(filter(None, (author.get("given-names"), author.get("family-names"))))
             for author in citation.get("authors", [])]
    return ", ".join(name for name in names if name)


def pdf_metadata(title: str) -> dict[str, str]:
    """A PDF's document information: its title, the book's authors (CITATION.cff) and what made it; Chromium
    leaves them empty. Raises ``ValueError`` naming ``title`` for an empty one."""
    if not isinstance(title, str) or not title.strip():
        raise ValueError(f"title must be the PDF's title (a non-empty str), got {title!r}")
    return {"/Title": title, "/Author": book_authors(), "/Subject": book_title(),
            "/Creator": "the book's course pack (_ext/course.py), printed by Chromium"}


def compress(path: Path, metadata: dict[str, str] | None = None) -> None:
    """Chromium gives each page its own copies of the fonts and figures it uses: the same pages written afresh
    with the identical objects shared are less than half the size; ``metadata`` sets the document's title and
    author."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.append(str(path))
    if metadata:
        writer.add_metadata(metadata)
    writer.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)
    with open(path, "wb") as handle:
        writer.write(handle)


def print_edition(browser, pages_root: Path, target: Path, edition: str) -> dict[str, float]:
    """The PDF of each chapter of one edition, from its pages, and the book's, the chapters' PDFs merged with a
    bookmark each (page numbers count within a chapter, as the footer says)."""
    from pypdf import PdfWriter

    seconds = {}
    for chapter in chapters():
        url = (pages_root / f"{chapter.page}.html").resolve().as_uri()
        seconds[chapter.name] = print_page(browser, url, target / pdf_name(chapter), title=chapter.title,
                                           edition=edition, label=f"Chapter {chapter.number}, ")
    book = PdfWriter()
    for chapter in chapters():
        book.append(str(target / pdf_name(chapter)), outline_item=f"{chapter.number}. {chapter.title}")
    book.add_metadata(pdf_metadata(f"{book_title()} ({EDITION_TITLES[edition].lower()})"))
    book.compress_identical_objects(remove_duplicates=True, remove_unreferenced=True)
    with open(target / BOOK_PDF, "wb") as handle:
        book.write(handle)
    return seconds


def open_browser():
    sys.path.insert(0, str(ROOT / "site_tests"))
    from browser import Chromium, find_chromium

    binary = find_chromium()
    if binary is None:
        raise SystemExit("the course's PDFs are printed by Chromium, and none is installed "
                         "(Debian: apt-get install chromium)")
    return Chromium(binary, timeout_s=PRINT_TIMEOUT_S)


# --- the whole pack ----------------------------------------------------------------------------------------

def folder_size(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def build_course(site: Path, work: Path) -> dict:
    """Both editions under ``<site>/course/``; returns what it measured (seconds, bytes)."""
    site, work = site.resolve(), work.resolve()
    if not (site / "index.html").is_file():
        raise SystemExit(f"{site} holds no built site: build it first (make book)")
    facts: dict = {"seconds": {}}
    course = site / COURSE_FOLDER
    shutil.rmtree(course, ignore_errors=True)

    started = time.monotonic()
    student_html = build_student_site(ROOT, work)
    facts["seconds"]["student pages"] = round(time.monotonic() - started, 1)
    without_solutions_in_the_files(student_html)
    shutil.copytree(student_html, course / "student")
    facts["bytes shared with the published site"] = share_the_published_files(course / "student", site)

    edition_notebooks = {"instructor": notebooks(site), "student": notebooks(course / "student")}

    browser = open_browser()
    try:
        started = time.monotonic()
        facts["seconds"]["student PDFs"] = print_edition(browser, course / "student", course / "student" / "pdf",
                                                         "student")
        facts["seconds"]["instructor PDFs"] = print_edition(browser, site, course / "instructor" / "pdf",
                                                            "instructor")
        facts["seconds"]["all PDFs"] = round(time.monotonic() - started, 1)
    finally:
        browser.close()
    notebook_bytes = {edition: sum(path.stat().st_size for path in edition_notebooks[edition]) for edition in EDITIONS}
    facts["bytes"] = {"course pack": folder_size(course),
                      "student pages": folder_size(course / "student") - folder_size(course / "student" / "pdf")
                      - notebook_bytes["student"],
                      **{f"{edition} PDFs": folder_size(course / edition / "pdf") for edition in EDITIONS},
                      **{f"{edition} notebooks": notebook_bytes[edition] for edition in EDITIONS},
                      "site without the course pack": folder_size(site) - folder_size(course)}
    (work / "facts.json").write_text(json.dumps(facts, indent=1), encoding="utf-8")
    return facts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html",
                        help="the built site to add the course pack to (default: _build/html)")
    parser.add_argument("--work", type=Path, default=ROOT / "_build" / "course",
                        help="where the student edition is built before it is copied (default: _build/course)")
    arguments = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "_ext"))
    facts = build_course(arguments.site, arguments.work)
    print(json.dumps(facts, indent=1))


if __name__ == "__main__":
    os.environ.setdefault("ICLLIB_MODE", "default")
    main()
