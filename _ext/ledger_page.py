"""The ledger's pages: the claims ledger (the table, its summary, counts and legend, its history and its
machine-readable copies ledger.json, ledger.csv and ledger.schema.json) and the errata list.

Directives (used in ``book/*.md``):

- ``claims-ledger``: one row per registered claim, filled in after every chapter has executed.
- ``errata-list``: every erratum, then every note, of the registry, grouped by paper.
- ``verdict-legend``: the seven verdicts and what each means.
- ``ledger-summary``: each chapter's rows by verdict, in book order.
- ``{ledger-counts}`chapter```: inline, a chapter's rows by verdict ("23 ledger rows: 12 reproduced, ...").

The statements' and quotes' text (typesetting) is ``ledger_text``'s; the verdicts' history is
``ledger_history``'s; the records the ledger reads and the machine-readable copies it writes are ``ledger_files``'.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import yaml
from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

import ledger_files
import ledger_history
import ledger_text
import paper_scale
from icllib import claim_registry
from icllib import claims as claims_module
from icllib import coverage as coverage_module
from icllib.cards import readable_number
from icllib.config import mode

logger = logging.getLogger(__name__)

# The status page's paragraph on the archived paper-scale runs (book_ext.BuildInfo), which the ledger's marks link.
PAPER_SCALE_STATUS = "paper-scale-runs"

LEDGER_COLUMNS = ("Claim", "Paper, location", "Statement", "Verdict", "Measured", "Check", "Mode", "Paper scale")


class ledger_placeholder(nodes.General, nodes.Element):
    """Stands where the ledger table goes until every chapter has run."""


def table(header: tuple[str, ...], rows: list[list[nodes.Node | list | str]], widths=None, classes=(),
           row_ids=None, row_classes=None, column_classes=None) -> nodes.table:
    """A docutils table; ``row_ids``/``row_classes`` (one per row) and ``column_classes`` (one per column)
    become HTML ids and classes, for anchors, colours and the phone layout."""
    table = nodes.table(classes=[*classes, "colwidths-given"] if widths else list(classes))
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths or [1] * len(header):
        group += nodes.colspec(colwidth=width)

    def row_of(cells, ids=(), classes=()):
        row = nodes.row(ids=list(ids), classes=list(classes))
        for column, cell in enumerate(cells):
            entry = nodes.entry(classes=[column_classes[column]] if column_classes else [])
            if isinstance(cell, list):
                entry.extend(cell)
            else:
                entry += cell if isinstance(cell, nodes.Node) else nodes.paragraph(text=str(cell))
            row += entry
        return row

    head = nodes.thead()
    head += row_of(header)
    body = nodes.tbody()
    for index, cells in enumerate(rows):
        body += row_of(cells, [row_ids[index]] if row_ids else (), row_classes[index] if row_classes else ())
    group += head
    group += body
    return table


def format_number(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    return f"{value:.6g}"


def _anchor(identifier: str) -> str:
    """The label of an erratum or note: ``balance.E1`` -> ``balance-e1`` (cite it with ``{ref}``).

    Every character but a lower-case letter, a digit and "-" becomes "-" (for a registered id, "." and "_"): the
    label is written as raw Markdown (``(balance-e1)=``) and as HTML ids, where nothing else can stand safely.
    """
    return re.sub(r"[^a-z0-9-]", "-", identifier.lower())


def claim_anchor(claim_id: str) -> str:
    """The HTML id (and Sphinx label) of a claim's ledger row: ``balance.E1`` -> ``claim-balance-e1``."""
    return "claim-" + _anchor(claim_id)


def check_anchor(claim_id: str) -> str:
    """The HTML id of the chapter cell that checks a claim."""
    return "check-" + _anchor(claim_id)


def _escape_markdown(text: str) -> str:
    """A quote set as literal text: MyST would read ``$``, ``*``, ``_`` and backquotes as markup."""
    return "".join(f"\\{char}" if char in "\\`*_$[]<>{}|#" else char for char in text)


def _toc_files(app) -> list[str]:
    """The documents of the table of contents, in book order."""
    toc_path = Path(getattr(app.config, "external_toc_path", "") or Path(app.srcdir) / "_toc.yml")
    if not toc_path.is_absolute():
        toc_path = Path(app.srcdir) / toc_path
    files: list[str] = []

    def walk(node):
        if isinstance(node, dict):
            for key in ("root", "file"):
                if isinstance(node.get(key), str):
                    files.append(str(Path(node[key]).with_suffix("")))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load(toc_path.read_text(encoding="utf-8")))
    return files


def _chapters_in_book_order(app, book) -> list[str]:
    order = {page: position for position, page in enumerate(_toc_files(app))}
    return sorted(book.chapters, key=lambda name: (order.get(book.chapters[name]["page"], len(order)), name))


def _papers_in_book_order(app, book) -> list[str]:
    papers: list[str] = []
    for chapter in _chapters_in_book_order(app, book):
        paper = book.chapters[chapter]["paper"]
        if paper not in papers:
            papers.append(paper)
    return papers


def _paper_title(app, key: str) -> str:
    """``Title (year)`` of a key of the book's BibTeX file, or the key itself when it is not there."""
    for bibfile in app.config.bibtex_bibfiles:
        text = (Path(app.srcdir) / bibfile).read_text(encoding="utf-8")
        entry = re.search(r"@\w+\{" + re.escape(key) + r",(.*?)\n\}", text, re.DOTALL)
        if entry:
            fields = dict(re.findall(r"(\w+)\s*=\s*\{(.*?)\},?\s*$", entry.group(1), re.MULTILINE))
            return f"{fields.get('title', key)} ({fields.get('year', 'n.d.')})"
    return key


def verdict_counts(claims) -> str:
    """``"23 ledger rows: 12 reproduced, 3 corrected, ..."`` in the order of the verdicts' legend."""
    claims = list(claims)
    counts = {verdict: sum(claim.verdict == verdict for claim in claims) for verdict in claim_registry.VERDICTS}
    parts = [f"{count} {verdict}" for verdict, count in counts.items() if count]
    noun = "ledger row" if len(claims) == 1 else "ledger rows"
    return f"{len(claims)} {noun}" + (f": {', '.join(parts)}" if parts else "")


def ledger_counts_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``{ledger-counts}`balance``` -> the chapter's rows by verdict, counted from the registry."""
    book = claims_module.registry()
    chapter = text.strip()
    if chapter not in book.chapters:
        message = inliner.reporter.error(f"ledger-counts: unknown chapter {chapter!r}", line=lineno)
        return [inliner.problematic(rawtext, rawtext, message)], [message]
    rows = [claim for claim in book.claims.values() if claim.chapter == chapter]
    return [nodes.inline(text=verdict_counts(rows), classes=["ledger-counts"])], []


class VerdictLegend(SphinxDirective):
    """The seven verdicts and what each means, from ``icllib.claim_registry.VERDICT_MEANINGS``."""

    def run(self):
        items = nodes.bullet_list()
        for verdict in claim_registry.VERDICTS:
            paragraph = nodes.paragraph()
            paragraph += nodes.strong(text=verdict)
            paragraph += nodes.Text(f": {claim_registry.VERDICT_MEANINGS[verdict]}.")
            items += nodes.list_item("", paragraph)
        return [items]


def _math_paragraph(text: str, classes=()) -> nodes.paragraph:
    """A registry sentence with its ASCII symbols typeset (``W_V^T``, ``eta_Y``, ``N^2``)."""
    paragraph = nodes.paragraph(classes=list(classes))
    paragraph.extend(_math_nodes(ledger_text.ascii_pieces(text)))
    return paragraph


def _math_nodes(pieces) -> list[nodes.Node]:
    return [nodes.Text(value) if kind == "text" else nodes.math(value, value) for kind, value in pieces]


def _verdict_chips(claims) -> nodes.paragraph:
    """``12 reproduced  3 corrected ...``: a chapter's rows by verdict, in the legend's order, each count a
    coloured chip that wraps with the column."""
    claims = list(claims)
    paragraph = nodes.paragraph(classes=["verdict-chips"])
    for verdict in claim_registry.VERDICTS:
        count = sum(claim.verdict == verdict for claim in claims)
        if count:
            paragraph += nodes.inline(text=f"{count} {verdict}", classes=["verdict-chip", _verdict_class(verdict)])
            paragraph += nodes.Text(" ")
    return paragraph


def ledger_summary_table(app, book, link=None) -> nodes.table:
    """Each chapter's rows by verdict, in book order, then the whole book: three columns (chapter, rows, rows
    by verdict) that fit a phone's column. ``link(chapter)`` gives the chapter's title a target."""
    rows = []
    for chapter in _chapters_in_book_order(app, book):
        header = book.chapters[chapter]
        claims = [claim for claim in book.claims.values() if claim.chapter == chapter]
        title = _math_paragraph(header["title"])
        if link is not None:
            reference = nodes.reference(refuri=link(chapter))
            reference.extend(title.children)
            title = nodes.paragraph("", "", reference)
        rows.append([title, len(claims), _verdict_chips(claims)])
    rows.append([nodes.paragraph(text="All chapters"), len(book.claims), _verdict_chips(book.claims.values())])
    return table(("Chapter", "Rows", "By verdict"), rows, widths=[5, 1, 8], classes=["ledger-summary"])


class LedgerSummary(SphinxDirective):
    """One line per chapter, in book order: its rows by verdict (for the intro page)."""

    def run(self):
        return [ledger_summary_table(self.env.app, claims_module.registry())]


class ClaimsLedger(SphinxDirective):
    """The ledger: a placeholder filled at doctree-resolved, once every chapter has executed. Each row's
    anchor is registered as a label, so ``{ref}`text <claim-balance-e1>``` links to it from any page."""

    def run(self):
        std = self.env.get_domain("std")
        for claim in claims_module.registry().claims.values():
            label = claim_anchor(claim.id)
            std.anonlabels[label] = (self.env.docname, label)
            std.labels[label] = (self.env.docname, label, claim.id)
        # The rows' mathematics is added once every chapter has run; MathJax is loaded on a page whose
        # doctree holds mathematics when it is read, hence this placeholder's (never shown) math node.
        return [ledger_placeholder("", nodes.math("x", "x"))]


ERRATA_LIST = re.compile(r"^```\{errata-list\}[ \t]*\n```[ \t]*$", re.MULTILINE)


def errata_markdown(app) -> str:
    """Errata (the paper is wrong as written) and notes (right but easy to misread), grouped by paper, as the
    page's own Markdown: each entry is a heading with its anchor (``balance-e1``), so that the page's contents
    list every one; quotes and corrections have their mathematics typeset (``ledger_text``)."""
    book = claims_module.registry()
    rows_naming: dict[str, list[str]] = {}
    for claim in book.claims.values():
        for passage_id in (claim.erratum, claim.note):
            if passage_id:
                rows_naming.setdefault(passage_id, []).append(claim.id)
    lines: list[str] = []
    for heading, passages, fix in (("Errata", book.errata, "Correction"),
                                   ("Notes", book.notes, "Clarification")):
        lines += [f"## {heading}", ""]
        if heading == "Errata":
            lines += ["The paper's words, quoted verbatim, are wrong as written; the chapter has a check that "
                      "fails on the printed version.", ""]
        else:
            lines += ["The paper is right, but ambiguous or easy to misread; these are not errata.", ""]
        papers = [paper for paper in _papers_in_book_order(app, book)
                  if any(passage.paper == paper for passage in passages.values())]
        for paper in papers:
            lines += [f"### {_escape_markdown(_paper_title(app, paper))}", "", f"{{cite:t}}`{paper}`.", ""]
            for passage in (p for p in passages.values() if p.paper == paper):
                rows = ", ".join(f"{{ref}}`{claim_id} <{claim_anchor(claim_id)}>`"
                                 for claim_id in rows_naming.get(passage.id, []))
                where = passage.location
                quote = ledger_text.pieces_markdown(ledger_text.quote_pieces(passage.quote), _escape_markdown)
                lines += [
                    f"({_anchor(passage.id)})=",
                    f"#### {_escape_markdown(passage.id)}" + (f": {_escape_markdown(where)}" if where else ""),
                    "",
                    f"- **The paper says** ({_escape_markdown(passage.location)}): “{quote}”",
                    f"- **{fix}:** {ledger_text.ascii_markdown(passage.correction, _escape_markdown)}",
                    f"- **Evidence:** {ledger_text.ascii_markdown(passage.evidence, _escape_markdown)} "
                    f"({_chapter_link(app, passage)})",
                    f"- **Ledger rows:** {rows or 'none'}",
                    "",
                ]
        if not papers:
            lines += [f"No {heading.lower()[:-1] if heading == 'Notes' else 'erratum'} is registered.", ""]
    return "\n".join(lines)


def _chapter_link(app, passage) -> str:
    """A link to the chapter, or its title alone when a partial build leaves that chapter out."""
    title = claims_module.registry().chapters[passage.chapter]["title"]
    if passage.page in app.env.found_docs:
        # A role's text is not Markdown: a backslash would show, so the title goes in as it is (Sphinx takes the
        # target after the last "<"); only a backquote, which would end the role, is left to the page's own title.
        if "`" in title:
            return f"chapter {{doc}}`/{passage.page}`"
        return f"chapter {{doc}}`{title} </{passage.page}>`"
    return f"chapter *{_escape_markdown(title)}*"


def expand_errata_list(app, docname, source):
    """The ``errata-list`` block of a page becomes the errata's Markdown before the page is parsed: its
    headings are then the page's own sections (a directive's headings would be rubrics, out of the contents)."""
    if ERRATA_LIST.search(source[0]):
        source[0] = ERRATA_LIST.sub(lambda _match: errata_markdown(app), source[0])


def _papers_folder(app) -> Path:
    return Path(os.environ.get(coverage_module.PAPERS_VARIABLE) or Path(app.srcdir).parent / "shared" / "papers")


def _coverage_paragraph(app, book, paper: str) -> nodes.paragraph:
    """How many of the paper's numbered results have a row, from the paper texts when they are at hand."""
    chapters = {name for name, header in book.chapters.items() if header["paper"] == paper}
    files = {book.chapters[name]["paper_file"] for name in chapters}
    folder = _papers_folder(app)
    at_hand = coverage_module.texts_at_hand(folder, book)
    parts = []
    for entry in coverage_module.paper_coverage(folder if at_hand else None, book):
        if entry.paper_file in files:
            covered = len(entry.results) - len(entry.missing)
            parts.append(f"{covered} of the {len(entry.results)} numbered results (theorems, lemmas, "
                         f"propositions, corollaries, hypotheses, assumptions, remarks, figures, tables) "
                         f"named in {_paper_title(app, paper)} have a row"
                         + (f"; without a row: {', '.join(entry.missing)}" if entry.missing else ""))
    source = "" if at_hand else (" (The paper texts are not in this checkout: counted from the list of their "
                                 "numbered results committed with the registry.)")
    return nodes.paragraph(text="Coverage: " + "; ".join(parts) + "." + source)


def _statement_cell(app, docname, claim) -> nodes.container:
    """The paper's statement, then what stands behind the verdict: evidence, run, erratum or note."""
    cell = nodes.container()
    cell += _math_paragraph(claim.statement, classes=["statement"])
    details = (("Evidence", claim.evidence), ("Run at the paper's settings", claim.run),
               ("Deciding run", claim.deciding_run), ("Out of scope because", claim.reason))
    for label, text in details:
        if text:
            paragraph = _math_paragraph(text)
            paragraph.insert(0, nodes.emphasis(text=f"{label}: "))
            cell += paragraph
    for passage_id in (claim.erratum, claim.note):
        if passage_id:
            paragraph = nodes.paragraph()
            paragraph += nodes.emphasis(text="Erratum: " if passage_id == claim.erratum else "Note: ")
            paragraph += nodes.reference(text=passage_id, refuri=app.builder.get_relative_uri(docname, "book/errata")
                                         + "#" + _anchor(passage_id))
            cell += paragraph
    return cell


def _describe_check(record: dict) -> str:
    expected = "" if record["expected"] is None else f"expected {format_number(record['expected'])}; "
    return expected + record["tolerance"] + (f" ({record['why']})" if record.get("why") else "")


def _paragraphs(texts) -> list[nodes.paragraph]:
    return [nodes.paragraph(text=text) for text in texts]


def _warn_about_chapters_missing_from_the_toc(app, book, docname) -> None:
    """A registered chapter left out of the book's own ``_toc.yml`` would silently vanish from the site."""
    toc_path = Path(getattr(app.config, "external_toc_path", "") or "_toc.yml")
    if not toc_path.is_absolute():
        toc_path = Path(app.srcdir) / toc_path
    if toc_path.resolve() != (Path(app.srcdir) / "_toc.yml").resolve():
        return      # a partial build (`make chapter`) leaves chapters out on purpose
    pages = set(_toc_files(app))
    for name, header in book.chapters.items():
        if header["page"] not in pages:
            logger.warning(f"chapter {name} is registered (page {header['page']}) but missing from _toc.yml",
                           location=docname)


def _location_cell(app, docname, book, claim, checked: bool) -> nodes.paragraph:
    """Where the paper says it (in the published paper's numbering, no line of the text extraction), and the
    chapter cell that checks it (or the chapter, when no cell does). The table's heading names the chapter."""
    location = nodes.paragraph()
    location += nodes.Text(claim.location + ". ")
    chapter_uri = app.builder.get_relative_uri(docname, claim.page)
    checking_page = getattr(app.env, "icl_checking_cells", {}).get(claim.id)
    if checked and checking_page == claim.page:
        # the check's card in that cell (icllib.claims shows one per check; the first carries card-<anchor>)
        location += nodes.reference(text="Check", refuri=f"{chapter_uri}#card-{_anchor(claim.id)}",
                                    classes=["checking-cell"])
    else:
        location += nodes.reference(text="Chapter", refuri=chapter_uri)
    return location


def _paper_scale_cell(app, docname, claim, archived) -> nodes.paragraph:
    """The archived full-mode result of a claim, linked to its run's record file in the site; where the chapter's
    code changed since that run, one mark that links the status page (which lists the files)."""
    cell = nodes.paragraph(text=paper_scale.paper_scale_summary(claim.id, archived, with_code=False))
    if claim.id in archived:
        latest = archived[claim.id][-1]
        cell += nodes.Text(" ")
        cell += nodes.reference(text="(record)", refuri=os.path.relpath(
            f"{ledger_files.PAPER_SCALE_FOLDER}/{latest['chapter']}.json", Path(docname).parent))
        code = latest.get("code") or {}
        if code.get("state") == "changed":
            status = app.builder.get_relative_uri(docname, "book/status") + "#" + PAPER_SCALE_STATUS
            mark = nodes.reference(text="code changed since", refuri=status, classes=["paper-scale-stale"],
                                   reftitle=f"{len(code['changed'])} files of the chapter's code changed since the "
                                            f"run's commit {latest['commit']}: the status page lists them")
            cell += nodes.Text(" ")
            cell += mark
    return cell


def _verdict_class(verdict: str) -> str:
    return "verdict-" + verdict.lower().replace(" ", "-")



def _history(app) -> tuple[list[dict], str]:
    """The registry's verdict changes (ledger_history), read once per build."""
    if not hasattr(app, "icl_ledger_history"):
        folder = Path(os.environ.get(claim_registry.REGISTRY_VARIABLE)
                      or Path(claims_module.__file__).parent / "registry")
        app.icl_ledger_history = ledger_history.ledger_history(folder)
    return app.icl_ledger_history


def _history_anchor(claim_id: str) -> str:
    return "history-" + _anchor(claim_id)


def _breakable_id(claim_id: str, uri: str) -> nodes.reference:
    """A link whose text is a claim id that may break after its dots and hyphens (``<wbr>``), not inside a
    word, in the ledger's narrow first column."""
    reference = nodes.reference(refuri=uri)
    for part in re.split(r"(?<=[.\-_])", claim_id):
        if len(reference):
            reference += nodes.raw("", "<wbr>", format="html")
        reference += nodes.Text(part)
    return reference


def _verdict_cell(verdict: str, failed_at_paper_scale: bool, since: dict | None) -> list[nodes.Node]:
    """The verdict, a failed check of the archived full run beside it, and when the verdict was given."""
    cell: list[nodes.Node] = [nodes.paragraph(text=verdict, classes=["verdict"])]
    if failed_at_paper_scale:
        cell.append(nodes.paragraph(text="failed at paper scale", classes=["paper-scale-failed-mark"]))
    if since is not None:
        paragraph = nodes.paragraph(classes=["verdict-since"])
        when = since["date"] or "not yet committed"
        if since["from"] is not None:
            paragraph += nodes.reference(text=f"since {when}", refuri=f"#{_history_anchor(since['id'])}")
        else:
            paragraph += nodes.Text(f"since {when}")
        cell.append(paragraph)
    return cell


def _history_section(app, docname, book, events: list[dict], source: str) -> nodes.section:
    """Every change of a verdict, newest first, with its date, commit and reason; rows added or removed are
    counted."""
    section = nodes.section(ids=["ledger-history"])
    section += nodes.title(text="History of the verdicts")
    changes = [event for event in events if event["from"] is not None and event["to"] is not None]
    added = sum(event["from"] is None for event in events)
    removed = sum(event["to"] is None for event in events)
    origin = ("read from the git history of the claims registry (src/icllib/registry/)" if source == "git" else
              "read from the history file committed with the book (_ext/ledger_history.json), this copy of "
              "the source having no git history; changes after its last commit are marked as such")
    section += nodes.paragraph(text=(
        f"When each row got its verdict, and why: {len(changes)} changes of a verdict, {added} rows added and "
        f"{removed} removed or renamed since the registry began, {origin}. Each row's verdict cell says since when "
        "it holds its verdict; ledger.json carries each row's full history. The reason is the subject of the "
        "commit that made the change."))
    latest = ledger_history.last_changes(events)
    by_commit: dict[str, list[dict]] = {}
    for event in changes:
        by_commit.setdefault(event["commit"], []).append(event)
    rows = []
    for commit, commit_changes in reversed(list(by_commit.items())):
        cell = []
        for event in commit_changes:
            paragraph = nodes.paragraph(classes=["claim-id"])
            # the row's verdict cell links here when this is the change that gave it its verdict
            ids = [_history_anchor(event["id"])] if latest.get(event["id"]) is event else []
            if event["id"] in book.claims:
                paragraph += nodes.reference(text=event["id"], refuri=f"#{claim_anchor(event['id'])}", ids=ids)
            else:
                paragraph += nodes.inline(text=event["id"] + " (no longer a row)", ids=ids)
            paragraph += nodes.Text(f": {event['from']} → {event['to']}")
            cell.append(paragraph)
        first = commit_changes[0]
        when = first["date"] or "not committed"
        rows.append([nodes.paragraph(text=when + ("" if commit == ledger_history.UNCOMMITTED else f" ({commit})")),
                     cell, nodes.paragraph(text=first["why"])])
    section += table(("When", "Verdicts changed", "Why (the commit's subject)"), rows, widths=[3, 9, 11],
                      classes=["ledger-history"])
    return section


def _schema_section(release: dict) -> nodes.section:
    section = nodes.section(ids=["ledger-json"])
    section += nodes.title(text="ledger.json and ledger.csv, field by field")
    section += nodes.paragraph(text=(
        "ledger.json is an object: book, version, released (the book's version and release date, from "
        "CITATION.cff), built (the date of this build), mode (its run mode), fields (the table below), commits "
        "(each registry commit a row's history names: its date and why, the commit's subject) and rows, "
        "one object per ledger row in the order of the page, with the fields below. ledger.csv holds the same "
        "rows, one line each, with book_version and built added to every line and its lists joined by \" | \"; "
        "it leaves out evidence, run, deciding_run, reason, verdict_history and paper_scale_measured, which "
        "ledger.json holds; there, a text cell that starts with =, +, -, @ and is not a number gets a leading ', "
        "so that no spreadsheet reads it as a formula. ledger.schema.json states the same as a JSON Schema. "
        "This build: "
        f"version {release['version']} of {release['released']}, built {release['built']} in mode "
        f"'{release['mode']}'."))
    rows = [[nodes.paragraph("", "", nodes.literal(text=name)), kind, description]
            for name, (kind, description) in ledger_files.LEDGER_FIELDS.items()]
    section += table(("Field", "Type", "What it holds"), rows, widths=[3, 2, 12], classes=["ledger-fields"])
    return section


def _downloads_paragraph(release: dict) -> nodes.paragraph:
    downloads = nodes.paragraph()
    downloads += nodes.Text("The same rows, for scripts: ")
    downloads += nodes.reference(text="ledger.csv", refuri="ledger.csv")
    downloads += nodes.Text(", ")
    downloads += nodes.reference(text="ledger.json", refuri="ledger.json")
    downloads += nodes.Text(" (")
    downloads += nodes.reference(text="fields", refuri="#ledger-json")
    downloads += nodes.Text(f"; version {release['version']}, built {release['built']}); ")
    downloads += nodes.reference(text="the history of the verdicts", refuri="#ledger-history")
    downloads += nodes.Text(".")
    return downloads


def _filter_data(book, sections: dict[str, str]) -> nodes.raw:
    """What ledger.js needs to build the filter bar: the verdicts in the legend's order, the chapters' titles."""
    superscripts = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")
    filter_data = {"verdicts": [*claim_registry.VERDICTS, "FAILED"],
                   "chapters": [[name, re.sub(r"\^(\d+)", lambda m: m.group(1).translate(superscripts),
                                              book.chapters[name]["title"])]
                                for name in sections]}
    return nodes.raw("", '<script type="application/json" id="ledger-filter-data">'
                     + json.dumps(filter_data).replace("<", "\\u003c") + "</script>", format="html")


# In a row's search text, the files changed since its chapter's paper-scale run: the same list in each of the
# chapter's rows, stored once in the page (it was three fifths of the search data).
CHANGED_FILES = re.compile(r"changed since [0-9a-f]+: [^ ,]+(?:, [^ ,]+)*")


def _search_data(rows: list[dict]) -> nodes.raw:
    """What ledger.js searches: each row's every column from ledger.json (``ledger_files.search_text``), by the
    row's anchor, read from the registry and the records rather than from the page's typeset text. A list of
    changed files (:data:`CHANGED_FILES`) is stored once, under ``shared``, and named in a row's text by its index
    between two NUL characters."""
    texts = {claim_anchor(row["id"]): ledger_files.search_text(row) for row in rows}
    shared = sorted({match.group() for text in texts.values() for match in CHANGED_FILES.finditer(text)})
    index = {part: number for number, part in enumerate(shared)}
    stored = {anchor: CHANGED_FILES.sub(lambda match: f"\0{index[match.group()]}\0", text)
              for anchor, text in texts.items()}
    return nodes.raw("", '<script type="application/json" id="ledger-search-data">'
                     + json.dumps({"shared": shared, "rows": stored}, ensure_ascii=False).replace("<", "\\u003c")
                     + "</script>", format="html")


def _claim_row(app, docname, book, claim, claim_records: list[dict], archived, events, since) -> tuple:
    """A claim's row of the ledger's table (its cells, id and classes), its row of ledger.json, and whether a
    check of this build failed."""
    verdict = claim.verdict
    checkable = verdict != "out of scope" and mode() in claim.modes
    if not claim_records and checkable and claim.page in app.env.all_docs:
        logger.warning(f"claim {claim.id} is registered but no chapter checked it in this build", location=docname)
    failed = not all(record["passed"] for record in claim_records)
    if failed:
        verdict = "FAILED"
    if not claim_records:
        measured, measured_shown, checks, run_mode = [], [], [], ""
        if not checkable and verdict != "out of scope":
            checks = [f"checked in {', '.join(claim.modes)} mode only"]
    else:
        # A claim checked in several places shows every check, one paragraph each. ledger.json keeps each value
        # to 6 significant digits; the page sets it for reading as the claim's card does (4.441 × 10⁻¹⁶).
        measured = [format_number(record["measured"]) for record in claim_records]
        measured_shown = [readable_number(record["measured"]) for record in claim_records]
        checks = [_describe_check(record) for record in claim_records]
        run_mode = claim_records[-1]["mode"]
    claim_id = nodes.paragraph(classes=["claim-id"])
    claim_id += _breakable_id(claim.id, f"#{claim_anchor(claim.id)}")
    full_run = paper_scale.paper_scale_summary(claim.id, archived)
    full_records = archived.get(claim.id, [])
    failed_at_paper_scale = any(not record["passed"] for record in full_records)
    # a check run at paper scale only shows its archived values on a card in the chapter (show_archived_check)
    carded = bool(claim_records) or (not checkable and claim.id in getattr(app.env, "icl_archived_cards", ()))
    cells = [claim_id, _location_cell(app, docname, book, claim, carded),
             _statement_cell(app, docname, claim),
             _verdict_cell(verdict, failed_at_paper_scale, since.get(claim.id)),
             _paragraphs(measured_shown), _paragraphs(checks), run_mode,
             _paper_scale_cell(app, docname, claim, archived)]
    classes = ["ledger-row", _verdict_class(verdict), f"chapter-{claim.chapter}",
               *(["paper-scale-failed"] if failed_at_paper_scale else [])]
    history = [{key: event[key] for key in ("commit", "from", "to")} for event in events if event["id"] == claim.id]
    row = ledger_files.ledger_row(claim, verdict, since, history, measured, checks, run_mode, full_run, full_records,
                                  failed_at_paper_scale, f"claims.html#{claim_anchor(claim.id)}")
    return cells, claim_anchor(claim.id), classes, row, failed


def _paper_section(app, docname, book, paper: str, records, archived, events, since) -> tuple:
    """The ledger's section of one paper (its chapters' rows), its rows of ledger.json and the failed checks."""
    chapters = [name for name in _chapters_in_book_order(app, book) if book.chapters[name]["paper"] == paper]
    paper_claims = [claim for name in chapters for claim in book.claims.values() if claim.chapter == name]
    section = nodes.section(ids=[f"ledger-{_anchor(paper)}"], classes=["ledger-paper"])
    title = nodes.title()
    for index, name in enumerate(chapters):
        title.extend(([nodes.Text(", ")] if index else []) + _math_nodes(
            ledger_text.ascii_pieces(book.chapters[name]["title"])))
    section += title
    section += nodes.paragraph(text=f"Paper: {_paper_title(app, paper)}. " + verdict_counts(paper_claims) + ".")
    section += _coverage_paragraph(app, book, paper)
    rows, row_ids, row_classes, machine_readable, failed = [], [], [], [], 0
    for claim in paper_claims:
        cells, row_id, classes, row, claim_failed = _claim_row(app, docname, book, claim, records.get(claim.id, []),
                                                               archived, events, since)
        rows.append(cells)
        row_ids.append(row_id)
        row_classes.append(classes)
        machine_readable.append(row)
        failed += claim_failed
    section += table(LEDGER_COLUMNS, rows, widths=[13, 10, 30, 10, 9, 12, 6, 10], classes=["ledger-table"],
                     row_ids=row_ids, row_classes=row_classes,
                     column_classes=["ledger-" + column.split(",")[0].lower().replace(" ", "-")
                                     for column in LEDGER_COLUMNS])
    return section, machine_readable, failed


def fill_ledger(app, doctree, docname):
    placeholders = list(doctree.findall(ledger_placeholder))
    if not placeholders:
        return
    book = claims_module.registry()
    _warn_about_chapters_missing_from_the_toc(app, book, docname)
    records = claims_module.read_all_results(ledger_files.gather_results(app))
    archived = paper_scale.archived_records(Path(app.srcdir).joinpath(*claims_module.ARCHIVE_FOLDER))
    events, history_source = _history(app)
    since = ledger_history.last_changes(events)
    release = ledger_files.book_release(app)
    sections = {}
    for paper in _papers_in_book_order(app, book):
        for name in _chapters_in_book_order(app, book):
            if book.chapters[name]["paper"] == paper:
                sections[name] = f"ledger-{_anchor(paper)}"
    counts = ledger_summary_table(app, book, link=lambda chapter: "#" + sections[chapter])
    counts["classes"].append("ledger-counts-table")
    output: list[nodes.Node] = [nodes.paragraph(text=verdict_counts(book.claims.values()) + "."),
                                _downloads_paragraph(release), counts, _filter_data(book, sections)]
    machine_readable: list[dict] = []
    failed = 0
    for paper in _papers_in_book_order(app, book):
        section, rows, paper_failed = _paper_section(app, docname, book, paper, records, archived, events, since)
        output.append(section)
        machine_readable += rows
        failed += paper_failed
    output.append(_search_data(machine_readable))
    if failed:
        output.insert(1, nodes.paragraph(text=f"{failed} checks FAILED in this build."))
    output.append(_history_section(app, docname, book, events, history_source))
    output.append(_schema_section(release))
    commits = {event["commit"]: {"date": event["date"], "why": event["why"]} for event in events
               if any(event["commit"] == change["commit"] for row in machine_readable for change in row["verdict_history"])}
    ledger_files.write_machine_readable_ledger(Path(app.outdir) / Path(docname).parent, machine_readable, release,
                                               commits)
    for placeholder in placeholders:
        placeholder.replace_self(output)


def setup(app):
    """Called by book_ext's setup: the ledger's node, directives and events."""
    app.add_node(ledger_placeholder)
    app.add_directive("claims-ledger", ClaimsLedger)
    app.add_directive("verdict-legend", VerdictLegend)
    app.add_directive("ledger-summary", LedgerSummary)
    app.add_role("ledger-counts", ledger_counts_role)
    app.connect("builder-inited", ledger_files.start_fresh_results)
    app.connect("source-read", expand_errata_list)
    app.connect("doctree-resolved", fill_ledger)
