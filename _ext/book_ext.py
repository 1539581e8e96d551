"""Sphinx glue for the book: the claims ledger, the errata list, chapter citations, build facts,
notebook downloads and offline MathJax.

Directives (used in ``book/*.md`` and in chapter notebooks):

- ``claims-ledger``: one row per registered claim, filled in after every chapter has executed.
- ``errata-list``: every erratum of the registry, grouped by paper.
- ``cite-this-chapter``: a BibTeX entry for the current page, generated from ``CITATION.cff``.
- ``build-info``: the run mode, the package versions and the latest benchmark results.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import time
from importlib import metadata
from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from icllib import claims as claims_module
from icllib.config import mode

logger = logging.getLogger(__name__)

LEDGER_COLUMNS = ("Claim", "Paper, location", "Statement", "Verdict", "Measured", "Check", "Mode")
KEY_PACKAGES = ("icllib", "numpy", "scipy", "sympy", "torch", "matplotlib", "jupyter-book", "sphinx",
                "myst-nb", "jupytext")


class ledger_placeholder(nodes.General, nodes.Element):
    """Stands where the ledger table goes until every chapter has run."""


def _table(header: tuple[str, ...], rows: list[list[nodes.Node | str]], widths=None, classes=()) -> nodes.table:
    table = nodes.table(classes=[*classes, "colwidths-given"] if widths else list(classes))
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths or [1] * len(header):
        group += nodes.colspec(colwidth=width)

    def row_of(cells):
        row = nodes.row()
        for cell in cells:
            entry = nodes.entry()
            entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
            row += entry
        return row

    head = nodes.thead()
    head += row_of(header)
    body = nodes.tbody()
    for cells in rows:
        body += row_of(cells)
    group += head
    group += body
    return table


def _format_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    return f"{value:.6g}"


class ClaimsLedger(SphinxDirective):
    def run(self):
        return [ledger_placeholder()]


class ErrataList(SphinxDirective):
    def run(self):
        registry = claims_module.registry()
        lines: list[str] = []
        papers = sorted({erratum.paper for erratum in registry.errata.values()})
        for paper in papers:
            lines += [f"## {{cite:t}}`{paper}`", ""]
            for erratum in (e for e in registry.errata.values() if e.paper == paper):
                lines += [
                    f"({erratum.id.replace('.', '-').lower()})=",
                    f"### {erratum.id}: {erratum.location}",
                    "",
                    f"- **The paper says** (line {erratum.line}): “{erratum.quote}”",
                    f"- **Correction:** {erratum.correction}",
                    f"- **Evidence:** {erratum.evidence} ({self._chapter_link(erratum)})",
                    "",
                ]
        if not lines:
            lines = ["No erratum is registered yet."]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="errata-list"), self.content_offset, container)
        return container.children

    def _chapter_link(self, erratum) -> str:
        """A link to the chapter, or its title alone when a partial build leaves that chapter out."""
        title = claims_module.registry().chapters[erratum.chapter]["title"]
        if erratum.page in self.env.found_docs:
            return f"chapter {{doc}}`{title} </{erratum.page}>`"
        return f"chapter *{title}*"


class CiteThisChapter(SphinxDirective):
    option_spec = {"paper": directives.unchanged}

    def run(self):
        citation = yaml.safe_load((Path(self.env.srcdir) / "CITATION.cff").read_text())
        title_node = self.state.document.next_node(nodes.title)
        chapter_title = title_node.astext() if title_node else self.env.docname
        authors = " and ".join(
            f"{author.get('family-names', '')}, {author.get('given-names', '')}".strip(", ")
            if "family-names" in author else "{" + author.get("name", "") + "}"  # an institution, not a person
            for author in citation.get("authors", [])
        )
        key = "icl-book-" + Path(self.env.docname).name.replace("_", "-")
        bibtex = "\n".join([
            f"@incollection{{{key},",
            f"  title     = {{{chapter_title}}},",
            f"  booktitle = {{{citation['title']}}},",
            f"  author    = {{{authors}}},",
            f"  year      = {{{str(citation.get('date-released', ''))[:4]}}},",
            f"  version   = {{{citation.get('version', '')}}},",
            f"  note      = {{Executable book chapter; source file {self.env.docname}}}",
            "}",
        ])
        section = nodes.section(ids=["cite-this-chapter"])
        section += nodes.title(text="Cite this chapter")
        section += nodes.literal_block(bibtex, bibtex, language="bibtex")
        if "paper" in self.options:
            paragraph_lines = [f"Please cite the original paper too: {{cite:t}}`{self.options['paper']}`."]
            container = nodes.container()
            self.state.nested_parse(StringList(paragraph_lines, source="cite"), self.content_offset, container)
            section += container.children
        return [section]


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
            _table(("Package", "Version"), versions),
        ]
        benchmark_file = Path(self.env.srcdir) / "benchmarks" / "results.json"
        if benchmark_file.is_file():
            results = json.loads(benchmark_file.read_text())
            output.append(nodes.rubric(text="Benchmarks (python -m benchmarks)"))
            output.append(nodes.paragraph(text=(
                f"Recorded {results.get('date', '?')} on {results.get('machine', '?')}."
            )))
            rows = [[name, *(_format_number(times.get(run_mode)) for run_mode in ("quick", "default", "full"))]
                    for name, times in results.get("chapters", {}).items()]
            output.append(_table(("Chapter", "quick (s)", "default (s)", "full (s, where measured)"), rows))
            kernel_rows = [[name, _format_number(entry["fast_s"]), _format_number(entry.get("reference_s")),
                            _format_number(entry.get("speedup"))]
                           for name, entry in results.get("kernels", {}).items()]
            if kernel_rows:
                output.append(_table(("Kernel", "fast (s)", "reference (s)", "speed-up"), kernel_rows))
        return output


def _results_file(app) -> Path:
    return Path(app.outdir).parent / "claims" / "results.jsonl"


def start_fresh_results(app):
    """Point every executed notebook at this build's results file; empty it for a fresh environment."""
    path = _results_file(app)
    os.environ[claims_module.RESULTS_VARIABLE] = str(path)
    if not app.env.all_docs and path.exists():
        path.unlink()


def fill_ledger(app, doctree, docname):
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    registry = claims_module.registry()
    records = claims_module.read_results(_results_file(app))
    rows = []
    verdict_counts: dict[str, int] = {}
    for claim in registry.claims.values():
        record = records.get(claim.id)
        verdict = claim.verdict
        checkable = verdict != "out of scope" and mode() in claim.modes
        if record is None and checkable and claim.page in app.env.all_docs:
            logger.warning(f"claim {claim.id} is registered but no chapter checked it in this build",
                           location=docname)
        if record is not None and not record["passed"]:
            verdict = "FAILED"
        verdict_counts[verdict] = verdict_counts.get(verdict, 0) + 1
        reference = nodes.reference(text=registry.chapters[claim.chapter]["title"],
                                    refuri=app.builder.get_relative_uri(docname, claim.page))
        location = nodes.paragraph()
        location += nodes.Text(f"{claim.location}. ")
        location += reference
        if record is None:
            measured, run_mode = "", ""
            check = claim.reason or ("" if checkable else f"checked in {', '.join(claim.modes)} mode only")
        else:
            expected = ("" if record["expected"] is None
                        else f"expected {_format_number(record['expected'])}; ")
            check = expected + record["tolerance"] + (f" ({record['why']})" if record.get("why") else "")
            measured, run_mode = _format_number(record["measured"]), record["mode"]
        rows.append([nodes.paragraph(text=claim.id, classes=["claim-id"]), location, claim.statement,
                     verdict, measured, check, run_mode])
    counts = ", ".join(f"{count} {verdict}" for verdict, count in sorted(verdict_counts.items()))
    summary = nodes.paragraph(text=f"{len(registry.claims)} claims" + (f": {counts}." if counts else "."))
    table = _table(LEDGER_COLUMNS, rows, widths=[4, 4, 7, 2, 2, 5, 1], classes=["ledger-table"])
    for placeholder in placeholders:
        placeholder.replace_self([summary, table])


def offer_executed_notebook(app, pagename, templatename, context, doctree):
    """Copy the executed notebook next to the page sources so the theme offers it as a download."""
    executed = Path(app.outdir).parent / "jupyter_execute" / f"{pagename}.ipynb"
    if not executed.is_file():
        return
    target = Path(app.outdir) / "_sources" / f"{pagename}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(executed, target)
    context["ipynb_source"] = f"{pagename}.ipynb"


def copy_mathjax(app, exception):
    """Serve MathJax 3 from ``_static/mathjax``: the CHTML build and the components it loads."""
    if exception is not None or app.builder.format != "html":
        return
    import mathjax

    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    target = Path(app.outdir) / "_static" / "mathjax"
    unused_builds = {path.name for path in source.glob("*.js")} - {"tex-mml-chtml.js"}
    shutil.copytree(source, target, dirs_exist_ok=True,
                    ignore=lambda folder, names: [n for n in names if n in unused_builds])


def add_static_files(app, config):
    config.html_static_path.append(str(Path(__file__).parent / "static"))


def setup(app):
    app.connect("config-inited", add_static_files)
    app.add_css_file("book.css")
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("errata-list", ErrataList)
    app.add_directive("cite-this-chapter", CiteThisChapter)
    app.add_directive("build-info", BuildInfo)
    app.connect("builder-inited", start_fresh_results)
    app.connect("doctree-resolved", fill_ledger)
    app.connect("html-page-context", offer_executed_notebook, priority=450)
    app.connect("build-finished", copy_mathjax)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
