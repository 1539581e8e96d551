"""The course pack that ``make course`` adds to a built site (``_ext/course.py``): no solution in anything the
student edition holds, every solution in the instructor's, every PDF page filled, each chapter page linking its
PDFs. The solutions' text comes from the chapter sources; the site from ``ICLLIB_COURSE_SITE``. Without a built
pack the tests that need one skip, saying so."""

from __future__ import annotations

import json
import os
import re
import sys
from functools import cache
from pathlib import Path

import jupytext
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import course  # noqa: E402

# The site whose pack is checked is named, never guessed: a pack left in _build/html by an earlier build may
# describe older sources, so `make test` skips these and `make course` (or CI) names the site it just built.
SITE = Path(os.environ.get("ICLLIB_COURSE_SITE") or "/nonexistent").resolve()
PACK = SITE / course.COURSE_FOLDER
needs_pack = pytest.mark.skipif(
    not (PACK / "student" / "index.html").is_file() or not (PACK / "instructor" / "pdf").is_dir(),
    reason="no course pack to check: ICLLIB_COURSE_SITE names no built site with one (`make course` builds the "
           "site and its pack and runs these on it)")

# A solution is recognised by its phrases: runs of this many words of its prose (never across mathematics, a
# role or markup, which print differently on a page, in a PDF and in a notebook) that no other text of the
# chapter holds, so that finding one is finding the solution.
PHRASE_WORDS = 5
SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\}[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
BREAKS = re.compile(r"^`{3,}[^\n]*$|\$\$.*?\$\$|\$[^$]+\$|\{[\w:-]+\}`[^`]*`|`[^`]*`|^:\w+:[^\n]*$|\*\*|\*|\]\([^)]*\)|[\[\]]",
                    re.MULTILINE | re.DOTALL)
MATHEMATICS = re.compile(r"\$\$.*?\$\$|\$[^$]+\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
CODE_FENCE = re.compile(r"^`{3,}[^\n]*\n(.*?)^`{3,}[ \t]*$", re.MULTILINE | re.DOTALL)
# A PDF page is filled when its content reaches this far down the text area (all but a chapter's last page).
LEAST_FILL = 0.40


def words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


def normalised(text: str) -> str:
    return " " + " ".join(words(text)) + " "


def chapter_markdown(chapter: course.Chapter) -> str:
    notebook = jupytext.read(ROOT / f"{chapter.page}.py")
    return "\n\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def book_sources() -> dict[str, str]:
    """Every text of the book a page shows: the chapters (markdown and code), the other pages, the library's
    docstrings (the API page), the registry (the ledger and errata pages) and, where a site is built, the text of
    its pages outside the solutions (which holds what the build computes: the ledger's values, the run times)."""
    from bs4 import BeautifulSoup

    sources = {}
    for chapter in course.chapters():
        notebook = jupytext.read(ROOT / f"{chapter.page}.py")
        sources[chapter.page] = "\n\n".join(cell.source for cell in notebook.cells)
    for path in [*ROOT.glob("book/*.md"), *ROOT.glob("src/icllib/**/*.py"), *ROOT.glob("src/icllib/**/*.yaml")]:
        sources[path.relative_to(ROOT).as_posix()] = path.read_text(encoding="utf-8")
    for path in SITE.glob("**/*.html") if (SITE / "index.html").is_file() else []:
        if PACK not in path.parents:
            page = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
            for solution in page.select("div.solution"):
                solution.decompose()
            sources[path.relative_to(SITE).as_posix()] = page.get_text("")
    return sources


def compact(text: str) -> str:
    """Mathematics compared without its spaces (a page's source and MathJax's input space it differently)."""
    return re.sub(r"\s+", "", text)


@cache
def solutions() -> dict[str, dict[str, list[str]]]:
    """Each solution of the book (``<chapter>: solution <n>``) with what no other text of the book holds: its
    prose phrases (found in pages, PDFs and notebooks) and its mathematics of 12 characters or more (found in
    pages and notebooks, which keep the TeX; a PDF prints glyphs)."""
    others = [SOLUTION.sub(" ", text) for text in book_sources().values()]
    rest, rest_compact = normalised("\n".join(others)), compact("\n".join(others))
    # the same texts without their mathematics, as a PDF's text layer reads them (MathJax's glyphs are not text):
    # "the paper's (4.11): $U = ...$ with $c$" elsewhere reads "paper s 4 11 with" there, as a solution does
    rest_prose = normalised(MATHEMATICS.sub(" ", "\n".join(others)))
    found = {}
    for chapter in course.chapters():
        blocks = [match.group(2) for match in SOLUTION.finditer(chapter_markdown(chapter))]
        for number, block in enumerate(blocks, start=1):
            prose, code, mathematics = [], [], []
            for kind, part in enumerate(CODE_FENCE.split(block)):
                into = code if kind % 2 else prose    # split() puts each fence's code at the odd places
                for segment in BREAKS.split(part):
                    segment_words = words(segment or "")
                    for start in range(len(segment_words) - PHRASE_WORDS + 1):
                        phrase = " ".join(segment_words[start:start + PHRASE_WORDS])
                        if f" {phrase} " not in rest and f" {phrase} " not in rest_prose and phrase not in into:
                            into.append(phrase)
            for formula in re.findall(r"\$([^$]+)\$", block):
                if len(compact(formula)) >= 12 and compact(formula) not in rest_compact:
                    mathematics.append(compact(formula))
            found[f"{chapter.name}: solution {number}"] = {"prose": prose, "code": code, "mathematics": mathematics}
    return found


def fingerprints_in(text: str, *, mathematics: bool) -> dict[str, list[str]]:
    """For each solution, which of its phrases (and code and formulas, with ``mathematics``) ``text`` holds or
    lacks."""
    prose_text, compact_text = normalised(text), compact(text)
    result = {}
    for name, prints in solutions().items():
        phrases = prints["prose"] + (prints["code"] if mathematics else [])
        found = [phrase for phrase in phrases if f" {phrase} " in prose_text]
        missing = [phrase for phrase in phrases if f" {phrase} " not in prose_text]
        if mathematics:
            found += [formula for formula in prints["mathematics"] if formula in compact_text]
            missing += [formula for formula in prints["mathematics"] if formula not in compact_text]
        result[name] = (found, missing)
    return result


def solutions_in(text: str, *, mathematics: bool = True) -> dict[str, list[str]]:
    """The solutions of which ``text`` holds a phrase or formula, with what was found. ``mathematics=False``
    for a PDF: its text comes in the order Chromium painted it, which joins the code of neighbouring cells, and
    its mathematics as glyphs; its prose is compared alone."""
    return {name: found for name, (found, _) in fingerprints_in(text, mathematics=mathematics).items() if found}


def solutions_missing_from(text: str, *, mathematics: bool = True) -> dict[str, list[str]]:
    """The solutions of which ``text`` lacks a phrase or formula, with what is missing."""
    return {name: missing for name, (_, missing) in fingerprints_in(text, mathematics=mathematics).items()
            if missing}


def pdf_pages(path: Path) -> list[str]:
    import pypdfium2

    document = pypdfium2.PdfDocument(path)
    try:
        return [page.get_textpage().get_text_range() for page in document]
    finally:
        document.close()


def html_text(path: Path) -> str:
    from bs4 import BeautifulSoup

    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").get_text("")


def notebook_text(path: Path) -> str:
    notebook = json.loads(path.read_text(encoding="utf-8"))
    parts = []
    for cell in notebook["cells"]:
        parts.append("".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"])
        for output in cell.get("outputs", []):
            for value in [output.get("text", ""), *output.get("data", {}).values()]:
                parts.append("".join(value) if isinstance(value, list) else str(value))
    return "\n\n".join(parts)


def page_fill(page) -> float:
    """How far down a printed page's text area its content reaches (0: empty, 1: to the bottom margin). The text
    area is what Chromium leaves between the margins of ``course.PAPER``; its white background and the header
    and footer in the margins are not content."""
    _, height = page.get_size()
    top = height - course.PAPER["marginTop"] * 72
    bottom = course.PAPER["marginBottom"] * 72
    lowest = top
    for item in page.get_objects(max_depth=8):
        left, low, right, high = item.get_bounds()
        if high > top + 1 or low < bottom - 1 or (high - low > 0.98 * (top - bottom)):
            continue   # in a margin, or the text area's own background
        lowest = min(lowest, low)
    return (top - lowest) / (top - bottom)


# --- the solutions, from the sources ----------------------------------------------------------------------

def test_every_solution_of_the_sources_is_found_and_has_phrases_of_its_own():
    found = solutions()
    assert len(found) >= 3 * len(course.chapters()), f"only {len(found)} solutions in the chapter sources"
    assert not [name for name, prints in found.items() if not prints["prose"] + prints["code"] + prints["mathematics"]], \
        "a solution with no phrase or formula of its own cannot be looked for"


def test_the_phrase_search_finds_a_solution_in_its_own_source_and_not_in_the_exercise_alone():
    chapter = course.chapters()[0]
    markdown = chapter_markdown(chapter)
    assert f"{chapter.name}: solution 1" in solutions_in(markdown)
    assert not [name for name in solutions_in(SOLUTION.sub(" ", markdown)) if name.startswith(f"{chapter.name}:")]


def test_the_fill_measure_finds_a_blank_page_empty(tmp_path):
    import pypdfium2
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(width=course.PAPER["paperWidth"] * 72, height=course.PAPER["paperHeight"] * 72)
    writer.write(tmp_path / "blank.pdf")
    document = pypdfium2.PdfDocument(tmp_path / "blank.pdf")
    assert page_fill(document[0]) == 0
    document.close()


# --- the student edition ----------------------------------------------------------------------------------

def student_files() -> list[Path]:
    return sorted(path for path in (PACK / "student").rglob("*") if path.is_file())


@needs_pack
def test_the_student_edition_holds_no_page_source_no_executed_notebook_and_no_source_archive():
    names = [path.relative_to(PACK / "student").as_posix() for path in student_files()]
    assert not [name for name in names if name.endswith((".py", ".md", ".tar.xz"))], names
    downloads = sorted(name for name in names if name.startswith("_sources/"))
    assert downloads == sorted(f"_sources/{chapter.page}.ipynb" for chapter in course.chapters())


@needs_pack
def test_no_student_page_search_index_or_notebook_holds_a_solution():
    leaks = {}
    for path in student_files():
        if path.suffix in {".html", ".js", ".json", ".ipynb", ".inv"} and "_static" not in path.parts:
            text = notebook_text(path) if path.suffix == ".ipynb" else (
                html_text(path) if path.suffix == ".html" else path.read_text(encoding="utf-8", errors="replace"))
            if found := solutions_in(text):
                leaks[path.relative_to(PACK).as_posix()] = found
    assert not leaks


def across_a_page_break(phrase: str, pages: list[str]) -> bool:
    """Whether ``phrase`` runs from the end of a line of one page to the start of a line of the next: Chromium
    paints a paragraph's continuation wherever it likes among the next page's blocks, so the extracted text
    splits the phrase (scan_snap's solution 7 after the page break before "Cite this chapter", 2026-11-26)."""
    phrase_words = phrase.split()
    lines = [[words(line) for line in page.splitlines() if words(line)] for page in pages]
    for this, following in zip(lines, lines[1:]):
        for cut in range(1, len(phrase_words)):
            head, tail = phrase_words[:cut], phrase_words[cut:]
            if any(line[-cut:] == head for line in this) and any(line[:len(tail)] == tail for line in following):
                return True
    return False


def test_a_phrase_across_a_page_break_is_found_and_one_missing_is_not():
    pages = ["the ratio of the neighbours of 2 against 2, with a\nChapter 1, page 1 of 2",
             "Cite this chapter\ncorrection for the number of cells, as the test does"]
    assert across_a_page_break("with a correction for the", pages)
    assert not across_a_page_break("with a correction for the", pages[::-1])
    assert not across_a_page_break("a correction for all cells", pages)


@needs_pack
def test_no_student_pdf_holds_a_solution_and_every_instructor_pdf_holds_them_all():
    for edition in course.EDITIONS:
        book = pdf_pages(PACK / edition / "pdf" / course.BOOK_PDF)
        chapters = [text for chapter in course.chapters()
                    for text in pdf_pages(PACK / edition / "pdf" / course.pdf_name(chapter))]
        for pages in (book, chapters):
            if edition == "student":
                assert not solutions_in("\n".join(pages), mathematics=False)
            else:
                missing = {name: [phrase for phrase in phrases if not across_a_page_break(phrase, pages)]
                           for name, phrases in solutions_missing_from("\n".join(pages), mathematics=False).items()}
                assert not {name: phrases for name, phrases in missing.items() if phrases}


@needs_pack
def test_the_instructor_notebooks_and_pages_hold_every_solution_and_the_students_none():
    instructor = "\n".join(notebook_text(course.notebook_of(SITE, chapter))
                           for chapter in course.chapters())
    pages = "\n".join(html_text(SITE / f"{chapter.page}.html") for chapter in course.chapters())
    student = "\n".join(notebook_text(course.notebook_of(PACK / "student", chapter))
                        for chapter in course.chapters())
    assert not solutions_missing_from(instructor)
    assert not solutions_missing_from(pages)
    assert not solutions_in(student)


def test_the_student_build_places_its_downloads_where_the_pack_puts_its_pages():
    """The student build links its downloads and its Colab button to ``<site>/course/student/``
    (``notebook_download.edition_folder``): where ``build_course`` copies that build."""
    import notebook_download

    config = type("Config", (), {course.EDITION_SETTING: "student"})
    assert notebook_download.edition_folder(config) == f"{course.COURSE_FOLDER}/student/"
    assert notebook_download.STUDENT == course.EDITIONS[0] == "student"


@needs_pack
def test_the_student_notebooks_are_the_student_pages_downloads_and_read_in_plain_jupyter():
    """The student build writes each page's download without solutions (``notebook_download.offer``, references
    resolved by Sphinx, glued values filled in, the install cell first); the pack's student notebooks are those."""
    import notebook_conversion
    import notebook_install

    for chapter in course.chapters():
        notebook = course.notebook_of(PACK / "student", chapter)
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        install = "".join(cells[0]["source"])
        assert cells[0]["metadata"].get("tags") == [notebook_install.INSTALL_MARK], chapter.name
        markdown = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "markdown"]
        assert not [found for text in markdown for found in notebook_conversion.raw_myst(text)], chapter.name
        source = chapter_markdown(chapter)
        glued = {match["content"].strip().partition(":")[0] for match in notebook_conversion.ROLE.finditer(source)
                 if match["name"] in notebook_conversion.GLUE_ROLES}
        assert not [name for name in glued if name in "\n".join(markdown)], f"{chapter.name}: a glue name unfilled"
        code = jupytext.read(ROOT / f"{chapter.page}.py")
        if notebook_install.imports_myst_nb(code):
            assert 'sys.modules["myst_nb"]' in install, f"{chapter.name}: no stand-in for myst-nb's glue"


@needs_pack
def test_the_search_index_of_the_student_edition_has_no_word_that_only_a_solution_uses():
    """Sphinx indexes stems, not phrases: the stems of the words that only solutions use (in every source of the
    book) are in the published site's index and not in the student edition's."""
    from sphinx.search.en import SearchEnglish

    everything_else = set()
    solution_words = set()
    for text in book_sources().values():
        solution_words |= {word for match in SOLUTION.finditer(text) for segment in BREAKS.split(match.group(2))
                           for word in words(segment or "")}
        everything_else |= set(words(SOLUTION.sub(" ", text)))
    stemmer = SearchEnglish({})
    # stems, not words: "account" in a solution and "accounted" elsewhere are one term of the index
    only_in_solutions = ({stemmer.stem(word) for word in solution_words if not word.isdigit()}
                         - {stemmer.stem(word) for word in everything_else})

    def terms(site: Path) -> set[str]:
        index = (site / "searchindex.js").read_text(encoding="utf-8")
        return set(json.loads(index[index.index("(") + 1:index.rindex(")")])["terms"])

    assert only_in_solutions, "no word is the solutions' own: nothing to look for"
    assert only_in_solutions & terms(SITE)
    assert not only_in_solutions & terms(PACK / "student")


# --- the PDFs ---------------------------------------------------------------------------------------------

@needs_pack
@pytest.mark.parametrize("edition", course.EDITIONS)
def test_every_pdf_page_is_at_least_40_percent_full_but_a_chapters_last(edition):
    import pypdfium2

    empty = []
    for path in sorted((PACK / edition / "pdf").glob("*.pdf")):
        document = pypdfium2.PdfDocument(path)
        for index, page in enumerate(document):
            number = re.search(r"page (\d+) of (\d+)", page.get_textpage().get_text_range())
            assert number, f"{path.name} p. {index + 1}: no page number in its footer"
            if number.group(1) == number.group(2):
                continue   # a chapter's last page
            if (fill := page_fill(page)) < LEAST_FILL:
                empty.append(f"{path.name} p. {index + 1}: {fill:.0%}")
        document.close()
    assert not empty


@needs_pack
def test_each_pdf_names_its_chapter_and_the_book_and_the_book_pdf_holds_every_chapter():
    import pypdfium2

    for edition in course.EDITIONS:
        for chapter in course.chapters():
            first = pdf_pages(PACK / edition / "pdf" / course.pdf_name(chapter))[0]
            assert chapter.title in first and course.book_title() in first and "page 1 of" in first
        book = pypdfium2.PdfDocument(PACK / edition / "pdf" / course.BOOK_PDF)
        assert [item.get_title() for item in book.get_toc()] == [
            f"{chapter.number}. {chapter.title}" for chapter in course.chapters()]
        book.close()


@needs_pack
def test_every_pdf_has_a_title_and_an_author_no_dead_toggle_and_its_formulas_in_the_text():
    from pypdf import PdfReader

    problems = []
    for edition in course.EDITIONS:
        for path in sorted((PACK / edition / "pdf").glob("*.pdf")):
            reader = PdfReader(path)
            info = reader.metadata or {}
            if not info.get("/Title") or info.get("/Author") != course.book_authors():
                problems.append(f"{edition}/{path.name}: title {info.get('/Title')!r}, author {info.get('/Author')!r}")
            text = "\n".join(page.extract_text() or "" for page in reader.pages)
            for toggle in ("Show code cell source", "Show code cell output", "Show code cell content"):
                if toggle in text:
                    problems.append(f"{edition}/{path.name}: a dead toggle prints: {toggle!r}")
        # every chapter typesets Greek letters; their characters reach the text layer
        chapter = PdfReader(PACK / edition / "pdf" / course.pdf_name(course.chapters()[0]))
        if not re.search(r"[α-ωΑ-Ω]", "".join(page.extract_text() or "" for page in chapter.pages)):
            problems.append(f"{edition}: no formula's text in the first chapter's PDF")
    assert not problems, "\n".join(problems)


def test_pdf_metadata_names_the_book_and_its_authors():
    info = course.pdf_metadata("Chapter one")
    assert info["/Title"] == "Chapter one" and info["/Author"] == course.book_authors() != ""
    assert info["/Subject"] == course.book_title()
    with pytest.raises(ValueError, match="title"):
        course.pdf_metadata(" ")


# --- the links --------------------------------------------------------------------------------------------

@needs_pack
def test_each_chapter_page_links_its_pdfs_and_notebooks_in_both_editions_and_they_exist():
    from bs4 import BeautifulSoup

    for chapter in course.chapters():
        for page, prefix in ((SITE / f"{chapter.page}.html", "course-pack"),
                             (PACK / "student" / f"{chapter.page}.html", "run-it-yourself")):
            links = [link["href"] for link in BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
                     .select(f"p.{prefix} a")]
            targets = [(page.parent / link.partition("#")[0]).resolve() for link in links]
            assert not [link for link, target in zip(links, targets) if not target.is_file()], page
            pdfs = {target.relative_to(PACK).as_posix() for target in targets if target.suffix == ".pdf"}
            wanted = {f"student/pdf/{course.pdf_name(chapter)}"}
            if prefix == "course-pack":
                wanted.add(f"instructor/pdf/{course.pdf_name(chapter)}")
            assert wanted <= pdfs, page
