"""Sphinx glue for the book: the chapter pages (checking cells, alt text, how to run a chapter, its
citation), build facts, notebook downloads and the repository's buttons. The ledger's and errata's pages
are ``ledger_page``'s, the site's static assets ``site_assets``'.

Directives (used in ``book/*.md`` and in chapter notebooks):

- ``cite-this-chapter``: a BibTeX entry for the current page, generated from ``CITATION.cff``.
- ``build-info``: the run mode, the package versions and the latest benchmark results.
- ``paper-scale-age``: how far behind the code the archived paper-scale runs are, in one sentence.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from importlib import metadata
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import course
import executions
import exercise_pages
import figure_pages
import ledger_files
import ledger_page
import math_typesetting
import notebook_download
import notebook_install
import paper_scale
import paper_scale_age
import run_times
import site_assets
import source_archive
from icllib import cards
from icllib import claims as claims_module
from icllib.config import mode
from ledger_page import check_anchor, format_number, table

logger = logging.getLogger(__name__)

KEY_PACKAGES = ("icllib", "numpy", "scipy", "sympy", "torch", "matplotlib", "jupyter-book", "sphinx",
                "myst-nb", "jupytext")


CHECKED_CLAIM = re.compile(r"(?:check_claim|show_archived_check)\(\s*[\"']([^\"']+)[\"']")
ARCHIVED_CARD = re.compile(r"show_archived_check\(\s*[\"']([^\"']+)[\"']")


def anchor_checking_cells(app, doctree):
    """Give each code cell that calls ``check_claim("<id>", ...)`` (or, for a check run at paper scale only,
    ``show_archived_check("<id>")``) the id ``check-<id>`` (the ledger links to it); remember which page holds
    it."""
    checking = app.env.icl_checking_cells = getattr(app.env, "icl_checking_cells", {})
    for cell in doctree.findall(lambda node: isinstance(node, nodes.container)
                                and node.get("nb_element") == "cell_code"):
        source = next(cell.findall(nodes.literal_block), None)
        code = source.astext() if source is not None else ""
        archived = app.env.icl_archived_cards = getattr(app.env, "icl_archived_cards", {})
        archived.update(dict.fromkeys(ARCHIVED_CARD.findall(code), app.env.docname))
        for claim_id in CHECKED_CLAIM.findall(code):
            if claim_id not in checking:
                cell["ids"].append(check_anchor(claim_id))
                checking[claim_id] = app.env.docname


def alt_text_from_captions(app, doctree):
    """Screen readers get a figure's caption, not its file path; an image with neither is flagged. (A figure's own
    one-line alt text, ``figure_pages``, comes first.)"""
    for image in doctree.findall(nodes.image):
        if image.get("alt"):
            continue
        figure = image.parent
        while figure is not None and not isinstance(figure, nodes.figure):
            figure = figure.parent
        caption = next(figure.findall(nodes.caption), None) if figure is not None else None
        if caption is None:
            logger.warning("an image has no caption to serve as its alt text (give the cell a "
                           "mystnb figure caption)", location=image)
            continue
        image["alt"] = " ".join(caption.astext().split())


def check_the_cite_section(app, doctree):
    """A chapter's BibTeX goes under its own top-level heading "Cite this chapter" (not under Exercises)."""
    blocks = doctree.findall(lambda node: isinstance(node, nodes.literal_block) and "chapter-bibtex" in node["classes"])
    for block in blocks:
        section = block.parent
        top_level = isinstance(section, nodes.section) and section.parent is doctree[0]
        if not top_level or section[0].astext() != "Cite this chapter":
            logger.warning("cite-this-chapter belongs under the chapter's top-level heading '## Cite this chapter'",
                           location=block)


def _links(paragraph: nodes.paragraph, label: str, links: list[tuple[str, str, str]]) -> None:
    """``label: a · b · c`` into ``paragraph``; each link is (text, target, tooltip)."""
    paragraph += nodes.emphasis(text=f"{label}: ")
    for index, (text, target, title) in enumerate(links):
        if index:
            paragraph += nodes.Text(" · ")
        paragraph += nodes.reference(text=text, refuri=target, reftitle=title)


def offer_the_source(app, doctree):
    """Under each chapter's title, one line of links: run it yourself (the book's source, the executed notebook, the
    library's wheel, and how, on the home page) and, where the site carries the course pack (``make course``), the
    chapter's PDFs and notebooks of both editions. The student edition's pages offer only what holds no solution:
    its own notebook and PDFs. The line is short so that the chapter's question and answer fit the first screen of
    a phone (site_tests/test_reading.py)."""
    pages = {header["page"] for header in claims_module.registry().chapters.values()}
    if app.env.docname not in pages or not doctree.children or not isinstance(doctree[0], nodes.section):
        return
    up = "../" * app.env.docname.count("/")
    name = Path(app.env.docname).name
    paragraph = nodes.paragraph(classes=["run-it-yourself"])
    if app.config.course_edition == "student":
        _links(paragraph, "Run it yourself", [
            ("notebook", f"{up}_sources/{app.env.docname}.ipynb",
             f"{name}.ipynb: opens in plain Jupyter and installs what it needs"),
            ("PDF", f"{up}pdf/{name}.pdf", f"{name}.pdf: this chapter, printed"),
            ("book PDF", f"{up}pdf/book.pdf", "book.pdf: the whole book")])
        paragraph += nodes.Text(" (student edition: the exercises come without their solutions)")
    else:
        wheel = notebook_install.wheel_name(Path(app.srcdir))
        _links(paragraph, "Run it yourself", [
            ("source", up + source_archive.ARCHIVE_NAME,
             f"{source_archive.ARCHIVE_NAME}: the book's source, whose README runs this chapter in two commands"),
            ("notebook", f"{up}_sources/{app.env.docname}.ipynb",
             f"{name}.ipynb, executed: opens in plain Jupyter, its first cell installs the library where missing"),
            ("wheel", f"{up}{notebook_install.WHEEL_FOLDER}/{wheel}", f"{wheel}: the library the notebook installs"),
            ("how", f"{up}book/intro.html#how-to-read-and-re-run-it", "how to run a chapter, on the home page")])
        if app.config.course_pack:
            paragraph["classes"].append("course-pack")
            paragraph += nodes.Text(". ")
            course_pack_links(paragraph, up, name)
    title_index = doctree[0].first_child_matching_class(nodes.title)
    doctree[0].insert(title_index + 1, paragraph)


def course_pack_links(paragraph: nodes.paragraph, up: str, name: str) -> None:
    """For a course: the chapter's PDF and notebook in each edition (``_ext/course.py`` writes the PDFs; the
    notebooks are the editions' downloads of the page)."""
    course = f"{up}course"
    _links(paragraph, "For a course", [
        ("student PDF", f"{course}/student/pdf/{name}.pdf", "this chapter as a PDF, without solutions"),
        ("instructor PDF", f"{course}/instructor/pdf/{name}.pdf", "this chapter as a PDF, solutions expanded"),
        ("student notebook", f"{course}/student/_sources/notebooks/{name}.ipynb", "the notebook without solutions"),
        ("instructor notebook", f"{up}_sources/notebooks/{name}.ipynb", "the notebook with solutions"),
        ("student edition", f"{course}/student/notebooks/{name}.html", "the student edition of this page")])


def cards_with_todays_ledger(app, doctree, docname):
    """Each claim card of a page drawn again with the registry's verdicts and the archived paper-scale runs of
    this build (``icllib.cards.drawn_again``): a card is drawn when its chapter runs, and a verdict changed since,
    or a newer full run, reaches the page without running the chapter again."""
    folder = Path(app.srcdir).joinpath(*claims_module.ARCHIVE_FOLDER)
    book = claims_module.registry().claims
    for raw in list(doctree.findall(nodes.raw)):
        if raw.get("format") == "html" and "claim-card" in raw.astext():
            text = cards.drawn_again(raw.astext(), book,
                                     lambda claim_id: claims_module.archived_checks(claim_id, folder))
            raw.replace(raw[0], nodes.Text(text))


def forget_checking_cells(app, env, docname):
    checking = getattr(env, "icl_checking_cells", {})
    for claim_id in [claim_id for claim_id, page in checking.items() if page == docname]:
        del checking[claim_id]
    archived = getattr(env, "icl_archived_cards", {})
    for claim_id in [claim_id for claim_id, page in archived.items() if page == docname]:
        del archived[claim_id]


def warn_about_unreadable_figures(app, env):
    """A build warning for each figure whose tick labels overlap or whose legend covers data, as measured when
    its chapter drew it (icllib.plotting.layout_problems)."""
    for problem in claims_module.figure_problems(ledger_files.gather_results(app)):
        logger.warning(f"a figure that does not read: {problem}")


class CiteThisChapter(SphinxDirective):
    """A BibTeX entry for the current chapter, from ``CITATION.cff``; it goes under the chapter's own top-level
    heading "Cite this chapter"."""

    option_spec = {"paper": directives.unchanged}

    def run(self):
        citation = yaml.safe_load((Path(self.env.srcdir) / "CITATION.cff").read_text(encoding="utf-8"))
        title_node = self.state.document.next_node(nodes.title)
        chapter_title = title_node.astext() if title_node else self.env.docname
        authors = " and ".join(
            f"{author.get('family-names', '')}, {author.get('given-names', '')}".strip(", ")
            if "family-names" in author else "{" + author.get("name", "") + "}"  # an institution, not a person
            for author in citation.get("authors", [])
        )
        key = "icl-book-" + Path(self.env.docname).name.replace("_", "-")
        released = str(citation.get("date-released", ""))
        url = repository_url(self.config)
        bibtex = "\n".join([
            f"@incollection{{{key},",
            f"  title     = {{{chapter_title}}},",
            f"  booktitle = {{{citation['title']}}},",
            f"  author    = {{{authors}}},",
            f"  year      = {{{released[:4]}}},",
            f"  date      = {{{released}}},",
            f"  version   = {{{citation.get('version', '')}}},",
            *([f"  url       = {{{url}}},"] if url else []),
            f"  note      = {{Executable book chapter; source file {self.env.docname}.py}}",
            "}",
        ])
        output: list[nodes.Node] = [nodes.literal_block(bibtex, bibtex, language="bibtex",
                                                        classes=["chapter-bibtex"])]
        if "paper" in self.options:
            paragraph_lines = [f"Please cite the original paper too: {{cite:t}}`{self.options['paper']}`."]
            container = nodes.container()
            self.state.nested_parse(StringList(paragraph_lines, source="cite"), self.content_offset, container)
            output += container.children
        return output


class BuildInfo(SphinxDirective):
    def run(self):
        versions = []
        for package in KEY_PACKAGES:
            try:
                versions.append([package, metadata.version(package)])
            except metadata.PackageNotFoundError:
                versions.append([package, "not installed"])
        output = [
            nodes.paragraph(text=(
                f"Built in mode '{mode()}' on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
                f"Python {platform.python_version()}, {os.cpu_count()} CPU cores."
            )),
            table(("Package", "Version"), versions),
        ]
        output.extend(self._chapter_executions())
        output.extend(self._paper_scale())
        output.extend(self._build_times())
        output.extend(self._other_kernels())
        benchmark_file = Path(self.env.srcdir) / "benchmarks" / "results.json"
        if benchmark_file.is_file():
            results = json.loads(benchmark_file.read_text(encoding="utf-8"))
            output.append(nodes.rubric(text="Benchmarks (python -m benchmarks)"))
            recorded = f"{results.get('date', '?')} on {results.get('machine', '?')}"
            output.append(nodes.paragraph(text=(
                f"Chapters recorded {recorded}; each kernel's fast and reference versions are timed in the same "
                "run, on the machine and at the date of its row."
            )))
            rows = [[name, *(format_number(times.get(run_mode)) for run_mode in ("quick", "default", "full"))]
                    for name, times in results.get("chapters", {}).items()]
            output.append(table(("Chapter", "quick (s)", "default (s)", "full (s, where measured)"), rows))
            kernel_rows = [[name, format_number(entry["fast_s"]), format_number(entry.get("reference_s")),
                            format_number(entry.get("speedup")),
                            f"{entry['date']}, {entry['machine']}" if "date" in entry else recorded]
                           for name, entry in results.get("kernels", {}).items()]
            if kernel_rows:
                output.append(table(("Kernel", "fast (s)", "reference (s)", "speed-up", "when, where"),
                                     kernel_rows))
        return output


    def _chapter_executions(self) -> list[nodes.Node]:
        """Where each chapter's outputs on this site come from: the stored execution the build read."""
        root = Path(self.env.srcdir)
        rows = []
        for name, header in claims_module.registry().chapters.items():
            source = root / f"{header['page']}.py"
            if not source.is_file():
                continue
            execution = executions.load(executions.read_source(source), mode())
            if execution is None:
                continue
            facts = execution.facts
            slowest = facts.get("slowest cells") or []
            rows.append([name, format_number(facts.get("seconds")),
                         facts.get("executed by", f"make book, chapters side by side, {facts.get('threads', '?')} "
                                                  "thread each"),
                         "; ".join(f"cell {cell['cell']}: {cell['seconds']:.0f} s" for cell in slowest),
                         f"{facts.get('date', '')}, {facts.get('machine', '')}"])
        if not rows:
            return []
        return [nodes.rubric(text=f"Chapter executions behind this site (mode '{mode()}')"),
                nodes.paragraph(text="Each chapter's outputs come from its stored execution for today's code "
                                     "(_ext/executions.py): a chapter runs again only when its code cells, the icllib "
                                     "modules it imports, the registry or the pins change."),
                table(("Chapter", "seconds", "executed by", "slowest cells", "when, where"), rows)]

    def _paper_scale(self) -> list[nodes.Node]:
        folder = Path(self.env.srcdir).joinpath(*claims_module.ARCHIVE_FOLDER)
        return [nodes.rubric(text="Paper scale (make paper-scale)", ids=[ledger_page.PAPER_SCALE_STATUS]),
                nodes.paragraph(text="Each chapter's last run in 'full' mode, archived in results/full/ with its "
                                     "check records (shown in the ledger's Paper scale column), or, where none is "
                                     "archived yet, its estimated cost. Full runs are never part of make test or "
                                     "make book. A run stopped before its last cell and archived as it was is "
                                     "marked partial. The last column says whether the chapter's code (its "
                                     "notebook and the icllib modules it imports) changed since the run's commit, "
                                     "and which files: where it did, the archived numbers describe older code."),
                table(tuple(paper_scale.STATUS_HEADER), paper_scale.status_rows(folder))]

    def _other_kernels(self) -> list[nodes.Node]:
        report_file = Path(self.env.srcdir) / "benchmarks" / "capabilities.json"
        if not report_file.is_file():
            return []
        report = json.loads(report_file.read_text(encoding="utf-8"))
        runs = "; ".join(f"{name}: {run['kernels'].get('torch', '?')} in PyTorch, NumPy up to "
                         f"{run['kernels'].get('numpy', '?')}" for name, run in report["runs"].items())
        return [nodes.rubric(text="On other CPUs' kernels (python -m benchmarks.capabilities report)"),
                nodes.paragraph(text=(
                    f"Every chapter in {report['mode']} mode, measured {report['date']} on {report['machine']}, "
                    f"run again with PyTorch, NumPy, MKL and OpenBLAS set as a CPU of another kind would run them "
                    f"({runs}). "
                    "Per check, the largest difference from the native run is compared with the room the native "
                    "value leaves before its check fails; a difference of a tenth of that room or more counts as a "
                    "thin margin (benchmarks/capabilities.md lists every check). CI runs the notebook tests again "
                    "without SIMD (make test-kernels).")),
                table(("Chapter", "profile", "checks", "thin or unmatched", "smallest margin"), _kernel_rows(report))]

    def _build_times(self) -> list[nodes.Node]:
        times_file = Path(self.env.srcdir) / "benchmarks" / "build_times.json"
        if not times_file.is_file():
            return []
        times = json.loads(times_file.read_text(encoding="utf-8"))
        before, after = times["before"], times["after"]
        rows = []
        for command, target in times["targets_s"].items():
            if command in after:
                earlier = before.get(command, {}).get("seconds")
                rows.append([command, format_number(earlier), format_number(after[command]["seconds"]),
                             format_number(target), format_number(times["speed-up"].get(command))])
        return [nodes.rubric(text="Build times (python -m benchmarks.build_times)"),
                nodes.paragraph(text=(
                    f"Measured {times['date']} on {times['machine']}, each commit on a fresh clone (make test "
                    f"includes installing the environment from a warm pip cache): "
                    + (f"before = {before['commit']}, " if before else "")
                    + f"after = {after['commit']}. A prose edit adds a sentence to a chapter's markdown and to the "
                    f"home page.")),
                table(("Command", "before (s)", "after (s)", "target (s)", "speed-up"), rows)]


class PaperScaleAge(SphinxDirective):
    """One sentence: how many commits behind the code the archived paper-scale runs are, and whether the chapters'
    code changed since in what their checks measure or only in figures and prose (``paper_scale_age``)."""

    def run(self):
        root = Path(self.env.srcdir)
        runs = paper_scale.chapter_runs(root.joinpath(*claims_module.ARCHIVE_FOLDER))
        paragraph = nodes.paragraph(classes=["paper-scale-age"])
        paragraph += nodes.Text(paper_scale_age.age_sentence(runs, root) + " ")
        paragraph += nodes.reference(text="Each run and the files changed since", refuri=f"#{ledger_page.PAPER_SCALE_STATUS}")
        paragraph += nodes.Text(" are listed below.")
        return [paragraph]


def _kernel_rows(report: dict) -> list[list[str]]:
    """One row per chapter and profile of ``benchmarks/capabilities.json``."""
    rows = []
    for chapter, profiles in report.get("chapters", {}).items():
        for profile, found in profiles.items():
            smallest = found.get("smallest margin")
            rows.append([chapter, profile, str(found["checks"]), str(len(found["thin"]) + len(found["unmatched"])),
                         f"{smallest['check']} ({smallest['share']:.2g} of its slack)" if smallest else "no check"])
    return rows


def offer_executed_notebook(app, pagename, templatename, context, doctree):
    """The executed notebook as the page's download (``_sources/<page>.ipynb``, the theme's download button):
    in plain Jupyter Markdown, with a first cell that installs icllib where it is missing
    (``notebook_download.offer``)."""
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    notebook_download.offer(app, pagename, executed, doctree)
    context["ipynb_source"] = f"{pagename}.ipynb"


def repository_url(config) -> str:
    """``repository.url`` of ``_config.yml`` (jupyter-book passes it on as a theme option), or ``""``."""
    return (config.html_theme_options.get("repository_url") or "").strip()


def follow_the_repository_url(app, config):
    """With a repository URL, the repository button and the launch buttons: Binder, and on GitHub Colab (which
    opens the chapter's download, ``notebook_download.launch_the_download``); without one, nothing on any
    page names a repository: sphinx-thebe (loaded by jupyter-book, unused here) would otherwise embed a
    Binder configuration for its own example repository in every page."""
    options = config.html_theme_options
    url = repository_url(config)
    if url:
        options["use_repository_button"] = True
        launch = options.setdefault("launch_buttons", {})
        launch["binderhub_url"] = "https://mybinder.org"
        if notebook_download.colab_url(url, "main", "index") is not None:
            launch["colab_url"] = notebook_download.COLAB
        return
    options.pop("repository_url", None)
    for event, listeners in app.events.listeners.items():
        for listener in list(listeners):
            if getattr(listener.handler, "__module__", "") == "sphinx_thebe" and event != "builder-inited":
                app.disconnect(listener.id)


def setup(app):
    app.connect("config-inited", site_assets.add_static_files)
    app.connect("config-inited", follow_the_repository_url)
    app.add_css_file("book.css")
    app.add_css_file("print.css", media="print")
    # Which edition this build is ("student" in the course pack's second build, "" for the published site) and
    # whether the course pack will lie beside it (make book builds it last): the chapters' links follow.
    app.add_config_value("course_edition", "", "env")
    app.add_config_value("course_pack", os.environ.get("ICLLIB_COURSE_PACK") == "1", "env")
    app.connect("config-inited", course.tag_the_edition)
    app.add_js_file("ledger.js")
    app.add_js_file("fit_equations.js")
    app.add_directive("cite-this-chapter", CiteThisChapter)
    app.add_directive("build-info", BuildInfo)
    app.add_directive("paper-scale-age", PaperScaleAge)
    ledger_page.setup(app)
    figure_pages.setup(app)
    exercise_pages.setup(app)
    run_times.setup(app)
    app.connect("doctree-read", anchor_checking_cells)
    app.connect("doctree-read", alt_text_from_captions)
    app.connect("doctree-read", offer_the_source)
    app.connect("doctree-read", check_the_cite_section)
    app.connect("doctree-resolved", cards_with_todays_ledger)
    app.connect("doctree-resolved", site_assets.et_al)
    app.connect("env-purge-doc", forget_checking_cells)
    app.connect("env-updated", warn_about_unreadable_figures)
    app.connect("html-page-context", offer_executed_notebook, priority=450)
    app.connect("html-page-context", notebook_download.launch_the_download, priority=510)
    app.connect("build-finished", site_assets.copy_mathjax)
    app.connect("build-finished", math_typesetting.typeset_the_site)
    app.connect("build-finished", site_assets.drop_what_serves_nobody)
    # after pydata-sphinx-theme's own build-finished handler, which writes the pygments.css the pages load
    app.connect("build-finished", site_assets.plain_code_tokens, priority=900)
    app.connect("build-finished", site_assets.bibliography_roles)
    app.connect("build-finished", source_archive.archive_at_build_end)
    app.connect("build-finished", notebook_install.wheel_at_build_end)
    app.connect("build-finished", notebook_download.drop_the_text_sources)
    app.connect("build-finished", site_assets.copy_run_crate)
    app.connect("build-finished", ledger_files.copy_paper_scale_records)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
