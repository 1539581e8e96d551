"""The download's conversion: a chapter's MyST as the plain Jupyter Markdown every notebook front end renders.

The site's pages are MyST: roles (``{ref}``, ``{numref}``, ``{eq}``, ``{prf:ref}``, ``{cite:t}``, ``{doc}``,
``{glue:text}``, ``{ledger-counts}``, ...), directives (``{exercise}``, ``{solution}``, ``{prf:theorem}``,
``{note}``, ``{math}``, ``{cite-this-chapter}``, ...), targets ``(label)=`` and labelled equations
``$$ ... $$ (label)``. Jupyter, Colab and Binder show all of these raw. :func:`plain_notebook` turns them into
the Markdown every notebook front end renders; ``notebook_install`` puts the cell first that installs the book's
library, and ``notebook_download`` writes each page's download with both.

Numbers follow the site: a chapter's number is its place among the numbered chapters of ``_toc.yml``, and its
figures, labelled equations, exercises and each kind of ``prf`` result are numbered in order of appearance
("Exercise 5.3", "Figure 5.2", "(5.4)", "Theorem 5.1"), as Sphinx numbers them with ``numfig_secnum_depth`` 1.
A reference to something outside the chapter (the ledger, the errata, another chapter) takes its text from the
resolver the build passes in (:func:`sphinx_resolver`, Sphinx's own resolution), else from its explicit title.
"""

from __future__ import annotations

import copy
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Mapping

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]

# {name}`content`, not inside a code span (a preceding backtick).
ROLE = re.compile(r"(?<!`)\{(?P<name>[A-Za-z][\w:+.-]*)\}`(?P<content>[^`]*)`")
DIRECTIVE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})\{(?P<name>[^}\s]+)\}[ \t]*(?P<argument>.*?)\s*$")
CODE_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})")
TARGET = re.compile(r"^\s*\((?P<label>[^()\s]+)\)=\s*$")
OPTION = re.compile(r"^:(?P<key>[\w-]+):\s*(?P<value>.*)$")
LABELLED_DISPLAY_END = re.compile(r"\$\$[ \t]*\((?P<label>[^()\s]+)\)[ \t]*$", re.MULTILINE)
HEADING = re.compile(r"^(?P<hashes>#{1,6})\s+(?P<text>.+?)\s*#*\s*$")
# [text](target): a target with no scheme, no slash and no dot is a MyST label.
MARKDOWN_LINK = re.compile(r"(?<!!)\[(?P<text>[^\]]*)\]\((?P<target>[^()\s]+)\)")
EXPLICIT_TITLE = re.compile(r"^(?P<title>.*?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)
# What :func:`raw_myst` finds: a role, a directive fence, a target, a labelled display equation, or a link to a
# MyST label (a target with no scheme, dot or slash, which plain Markdown reads as a missing file).
RAW_MYST = re.compile(
    r"(?<!`)\{[A-Za-z][\w:+.-]*\}`|^ {0,3}(`{3,}|:{3,})\{[^}\s]+\}|^\s*\([^()\s]+\)=\s*$|\$\$[ \t]*\([^()\s]+\)[ \t]*$"
    r"|\]\(#?[A-Za-z][\w-]*\)",
    re.MULTILINE)

REFERENCE_ROLES = {"ref", "numref", "doc", "eq", "prf:ref", "any", "term", "std:ref", "std:doc"}
CITATION_ROLES = {"cite", "cite:p", "cite:t", "cite:ps", "cite:ts", "cite:author", "cite:year", "cite:alp",
                  "cite:label", "footcite", "footcite:t", "footcite:p"}
CODE_ROLES = {"code", "literal", "samp", "file", "command", "kbd", "py:func", "py:class", "py:mod", "py:meth",
              "py:attr", "py:data", "py:obj", "func", "class", "mod", "meth", "attr", "data", "obj", "envvar"}
GLUE_ROLES = {"glue", "glue:", "glue:text", "glue:any", "glue:md"}
OTHER_ROLES = {"math", "sub", "sup", "abbr", "index", "ledger-counts", "run-time", "download", "emphasis",
               "strong"}
KNOWN_ROLES = REFERENCE_ROLES | CITATION_ROLES | CODE_ROLES | GLUE_ROLES | OTHER_ROLES

ADMONITIONS = {"note", "tip", "hint", "important", "warning", "caution", "attention", "danger", "error", "seealso",
               "admonition", "margin", "sidebar", "topic"}
PROOF_KINDS = {"theorem", "lemma", "proposition", "corollary", "definition", "conjecture", "axiom", "criterion",
               "remark", "example", "observation", "property", "algorithm", "assumption", "notation"}
EXERCISE_DIRECTIVES = {"exercise", "solution", "exercise-start", "exercise-end", "solution-start", "solution-end"}
KNOWN_DIRECTIVES = (ADMONITIONS | {f"prf:{kind}" for kind in PROOF_KINDS} | EXERCISE_DIRECTIVES
                    | {"prf:proof", "dropdown", "math", "figure", "image", "code-block", "code", "sourcecode",
                       "cite-this-chapter", "glue:math", "glue:md", "glue:", "glue", "glue:figure", "epigraph",
                       "toctree", "tableofcontents", "bibliography", "raw", "build-info", "div", "container",
                       "only"})

Resolver = Callable[[str, str, "str | None"], "Reference | None"]


@dataclass(frozen=True)
class Reference:
    """What a cross-reference reads as (``text``) and where it points (``path``: a site page relative to the site's
    root, with its anchor, e.g. ``notebooks/balance.html#fig-balance-drift``; None when it has no page)."""

    text: str
    path: str | None = None


# ---------------------------------------------------------------------------------------------------------------
# Numbers, as the site shows them


def chapter_numbers(toc_file: Path = ROOT / "_toc.yml") -> dict[str, int]:
    """``{docname: number}`` for the chapters of the numbered parts of ``_toc.yml`` (each numbered toctree counts
    from 1, as Sphinx numbers it)."""
    toc = yaml.safe_load(Path(toc_file).read_text(encoding="utf-8"))
    numbers: dict[str, int] = {}
    for part in toc.get("parts", []):
        if part.get("numbered"):
            for index, chapter in enumerate(part.get("chapters", []), start=1):
                numbers[str(Path(chapter["file"]).with_suffix("")) if "." in Path(chapter["file"]).name
                        else chapter["file"]] = index
    return numbers


def _split_directive(lines: list[str], start: int) -> tuple[dict, int] | None:
    """The directive opening at ``lines[start]``: its name, argument, options, body lines and the index after its
    closing fence; None when ``lines[start]`` opens none."""
    opening = DIRECTIVE_OPEN.match(lines[start])
    if opening is None:
        return None
    fence = opening["fence"]
    closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
    end = start + 1
    while end < len(lines) and not closing.match(lines[end]):
        end += 1
    body = [line[len(opening["indent"]):] if line.startswith(opening["indent"]) else line
            for line in lines[start + 1:end]]
    options: dict[str, str] = {}
    if body and body[0].strip() == "---":   # options as a YAML block
        stop = next((index for index in range(1, len(body)) if body[index].strip() == "---"), None)
        if stop is not None:
            options = {str(key): "" if value is None else str(value)
                       for key, value in (yaml.safe_load("\n".join(body[1:stop])) or {}).items()}
            body = body[stop + 1:]
    else:
        while body and OPTION.match(body[0]):
            option = OPTION.match(body[0])
            options[option["key"]] = option["value"].strip()
            body = body[1:]
    directive = {"name": opening["name"], "argument": opening["argument"], "options": options, "body": body}
    return directive, min(end + 1, len(lines))


def _walk_markdown(text: str) -> Iterable[tuple[str, object]]:
    """The parts of a MyST text in order: ("directive", directive), ("code", lines) for a plain fenced code block,
    ("line", line) otherwise; directives' bodies are walked again by whoever renders them."""
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        split = _split_directive(lines, index)
        if split is not None:
            yield "directive", split[0]
            index = split[1]
            continue
        fence = CODE_FENCE_OPEN.match(lines[index])
        if fence is not None:
            closing = re.compile(rf"^ {{0,3}}{re.escape(fence['fence'][0])}{{{len(fence['fence'])},}}\s*$")
            end = index + 1
            while end < len(lines) and not closing.match(lines[end]):
                end += 1
            yield "code", lines[index:end + 1]
            index = end + 1
            continue
        yield "line", lines[index]
        index += 1


@dataclass
class _Numbering:
    chapter: int | None
    counters: dict
    labels: dict

    def next(self, kind: str, label: str | None, text_format: str, page: str | None, anchor: str | None) -> str:
        self.counters[kind] = self.counters.get(kind, 0) + 1
        number = f"{self.chapter}.{self.counters[kind]}" if self.chapter else str(self.counters[kind])
        text = text_format.format(number=number)
        if label:
            self.labels[label] = Reference(text, f"{page}.html#{anchor or label}" if page else None)
        return text


def _number_markdown(text: str, numbering: _Numbering, page: str | None, headings: dict) -> None:
    pending_target = None
    for kind, part in _walk_markdown(text):
        if kind == "directive":
            name, options = part["name"], part["options"]
            label = options.get("label") or options.get("name")
            if name in ("exercise", "exercise-start") and "nonumber" not in options:
                numbering.next("exercise", label, "Exercise {number}", page, label)
            elif name.startswith("prf:") and name[4:] in PROOF_KINDS and "nonumber" not in options:
                numbering.next(name, label, name[4:].capitalize() + " {number}", page, label)
            elif name in ("figure", "glue:figure") and label:
                numbering.next("figure", label, "Figure {number}", page, label)
            elif name == "math" and label:
                numbering.next("equation", label, "({number})", page, f"equation-{label}")
            _number_markdown("\n".join(part["body"]), numbering, page, headings)
        elif kind == "line":
            target = TARGET.match(part)
            heading = HEADING.match(part)
            equation = LABELLED_DISPLAY_END.search(part)
            if target:
                pending_target = target["label"]
            elif heading and pending_target:
                headings[pending_target] = Reference(_strip_markup(heading["text"]),
                                                     f"{page}.html#{pending_target}" if page else None)
                pending_target = None
            elif part.strip():
                pending_target = None
            if equation:
                numbering.next("equation", equation["label"], "({number})", page, f"equation-{equation['label']}")


def local_references(notebook, *, chapter: int | None, page: str | None) -> dict[str, Reference]:
    """``{label: Reference}`` for what the notebook itself labels, numbered as the site numbers it: figures (a code
    cell's ``mystnb.figure.name``, a ``{figure}``), labelled equations, exercises, each kind of ``prf`` result,
    and sections (a ``(label)=`` target before a heading, read as the heading's text)."""
    numbering = _Numbering(chapter, {}, {})
    headings: dict[str, Reference] = {}
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            _number_markdown(cell.source, numbering, page, headings)
        elif cell.cell_type == "code":
            name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
            if name:
                numbering.next("figure", name, "Figure {number}", page, name)
    return {**headings, **numbering.labels}


def _strip_markup(text: str) -> str:
    return re.sub(r"[*_`]", "", ROLE.sub(lambda match: _split_title(match["content"])[0] or match["content"],
                                         text)).strip()


def _split_title(content: str) -> tuple[str | None, str]:
    """``"text <target>"`` -> ("text", "target"); ``"target"`` -> (None, "target")."""
    match = EXPLICIT_TITLE.match(content.strip())
    if match and match["title"]:
        return match["title"], match["target"].strip()
    return None, content.strip()


# ---------------------------------------------------------------------------------------------------------------
# Citations, glued values, ledger counts


def _bibliography(bib_file: Path) -> dict[str, dict]:
    """``{key: {"authors": [family names], "year": ...}}`` from a BibTeX file (pybtex, as sphinxcontrib-bibtex)."""
    if not Path(bib_file).is_file():
        return {}
    from pybtex.database import parse_file

    entries = {}
    for key, entry in parse_file(str(bib_file)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        family = [" ".join(person.last_names).replace("{", "").replace("}", "") for person in people]
        entries[key] = {"authors": family, "year": entry.fields.get("year", "n.d."),
                        "title": entry.fields.get("title", key).replace("{", "").replace("}", "")}
    return entries


def _authors(family: list[str]) -> str:
    if not family:
        return "?"
    if len(family) > 1 and family[-1] == "others":   # BibTeX's "and others"
        return f"{family[0]} et al."
    if len(family) == 1:
        return family[0]
    if len(family) == 2:
        return f"{family[0]} and {family[1]}"
    return f"{family[0]} et al."


def _citation(role: str, keys: str, bibliography: Mapping[str, dict]) -> str:
    """Author-year text as the site's ``bibtex_reference_style: author_year`` writes it ("Tian et al. [2023]",
    "[Ziyin et al., 2025]"), but "et al." where the entry ends in BibTeX's "and others"."""
    parts = []
    for key in [key.strip() for key in keys.split(",") if key.strip()]:
        entry = bibliography.get(key, {"authors": [key], "year": "n.d."})
        authors = _authors(entry["authors"])
        if role.endswith(":t") or role.endswith(":ts"):
            parts.append(f"{authors} [{entry['year']}]")
        elif role.endswith(":author"):
            parts.append(authors)
        elif role.endswith(":year"):
            parts.append(str(entry["year"]))
        else:
            parts.append(f"{authors}, {entry['year']}")
    if role.endswith((":t", ":ts", ":author", ":year")):
        return ", ".join(parts)
    return "[" + "; ".join(parts) + "]"


def glued_values(notebook) -> dict[str, str]:
    """``{name: plain text}`` of the values the chapter glued (myst-nb's ``glue``), read from its outputs."""
    values = {}
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            if name:
                plain = [value for key, value in output.get("data", {}).items() if key.endswith("text/plain")]
                if plain:
                    values[name] = "".join(plain[0]) if isinstance(plain[0], list) else plain[0]
    return values


def _glue(content: str, values: Mapping[str, str]) -> str:
    name, _, spec = content.strip().partition(":")
    value = values.get(name)
    if value is None:
        return name
    if spec:
        try:
            return format(float(value), spec)
        except ValueError:
            return value
    return value.strip("'\"")


def _ledger_counts(chapter: str) -> str:
    import ledger_page  # the build's own wording of the counts
    from icllib import claims

    rows = [claim for claim in claims.registry().claims.values() if claim.chapter == chapter.strip()]
    return ledger_page.verdict_counts(rows)


# ---------------------------------------------------------------------------------------------------------------
# The conversion


@dataclass
class _Context:
    page: str | None
    site_url: str | None
    solutions: bool
    resolve: Resolver | None
    local: dict
    bibliography: dict
    glued: dict
    bibtex: str | None
    unknown: set

    def link(self, text: str, path: str | None) -> str:
        if not self.site_url or not path:
            return text
        return f"[{text}]({self.site_url.rstrip('/')}/{path})"

    def reference(self, role: str, content: str) -> str:
        title, target = _split_title(content)
        label = target.lstrip("#")
        found = self.local.get(label) if role != "doc" else None
        if self.resolve is not None:
            resolved = self.resolve(role, target, title)
            if resolved is not None and found is not None and title is None and not re.search(r"\d", resolved.text) \
                    and re.search(r"\d", found.text):
                # sphinx-proof writes "Theorem " without its number under a numbered toctree: the page's own
                # number, counted as the site counts its headings, keeps the download readable
                resolved = Reference(found.text, resolved.path)
            found = resolved or found
        if found is None:
            text = title or (Path(target).name if role == "doc" else label)
            path = None
            if role == "doc" and self.page is not None:
                path = posixpath.normpath(
                    target.lstrip("/") if target.startswith("/") else
                    posixpath.join(posixpath.dirname(self.page), target)) + ".html"
            return self.link(text, path)
        text = found.text
        if title and role == "numref":
            number = re.search(r"[\d.]*\d", found.text)
            text = title.replace("%s", number.group(0) if number else "").replace(
                "{number}", number.group(0) if number else "")
        elif title and self.resolve is None:
            text = title
        return self.link(text, found.path)


def _convert_role(match: re.Match, context: _Context) -> str:
    name, content = match["name"], match["content"]
    if name in REFERENCE_ROLES:
        return context.reference(name.removeprefix("std:"), content)
    if name in CITATION_ROLES:
        return context.link(_citation(name, content, context.bibliography), "book/references.html")
    if name in GLUE_ROLES:
        return _glue(content, context.glued)
    if name in CODE_ROLES:
        return f"`{_split_title(content)[0] or content}`"
    if name == "math":
        return f"${content}$"
    if name in ("sub", "sup"):
        return f"<{name}>{content}</{name}>"
    if name == "abbr":
        return content.split("(")[0].strip()
    if name == "index":
        return ""
    if name == "ledger-counts":
        return _ledger_counts(content)
    if name == "run-time":
        import run_times  # the build's own reading of the time

        return run_times.quoted(content) or "not measured"
    if name in ("emphasis", "strong"):
        return ("*" if name == "emphasis" else "**") + content + ("*" if name == "emphasis" else "**")
    if name == "download":
        title, target = _split_title(content)
        return title or target
    context.unknown.add(f"role {name}")
    return _split_title(content)[0] or content


def _convert_links(line: str, context: _Context) -> str:
    """MyST links to labels (``[section 1](sec-balance-symmetry)``, ``[x](#label)``) become links to the site (or
    their text); links to ``.md`` or ``.py`` pages of the book become links to the site's ``.html``."""
    def replace(match: re.Match) -> str:
        text, target = match["text"], match["target"]
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):   # a URL: http(s), mailto, ...
            return match.group(0)
        if target.startswith("#") or ("/" not in target and "." not in target):
            label = target.lstrip("#")
            found = context.local.get(label)
            if context.resolve is not None:
                found = context.resolve("ref", label, text) or found
            return context.link(text, found.path if found else None)
        page, _, anchor = target.partition("#")
        if page.endswith((".md", ".py", ".ipynb")) and context.page is not None:
            page = posixpath.normpath(posixpath.join(posixpath.dirname(context.page), page))
            path = page.rsplit(".", 1)[0] + ".html" + (f"#{anchor}" if anchor else "")
            return context.link(text, path)
        return match.group(0)
    return MARKDOWN_LINK.sub(replace, line)


def _convert_line(text: str, context: _Context) -> str:
    """Roles, labelled display equations and MyST links of some lines of prose."""
    text = ROLE.sub(lambda match: _convert_role(match, context), text)

    def numbered(equation: re.Match) -> str:
        number = context.local.get(equation["label"])
        return (rf" \tag{{{number.text.strip('()')}}}" if number else "") + " $$"
    text = LABELLED_DISPLAY_END.sub(numbered, text)
    return _convert_links(text, context)


def _quoted(lines: list[str]) -> list[str]:
    return [f"> {line}" if line.strip() else ">" for line in lines]


def _render_directive(directive: dict, context: _Context) -> list[str]:
    name, argument, options = directive["name"], directive["argument"], directive["options"]
    body = _convert_text("\n".join(directive["body"]), context).split("\n")
    while body and not body[-1].strip():
        body.pop()
    while body and not body[0].strip():
        body.pop(0)
    label = options.get("label") or options.get("name")
    title = _convert_line(argument, context) if argument else ""
    rendered = _render_text_block(name, argument, label, title, body, context)
    if rendered is None:
        rendered = _render_other(directive, label, title, body, context)
    return rendered


def _render_text_block(name: str, argument: str, label, title: str, body: list[str], context: _Context
                       ) -> list[str] | None:
    """An exercise, a solution, a proof or result, an admonition or a dropdown as Markdown; None for another
    directive."""
    if name == "exercise":
        heading = context.local.get(label, Reference("Exercise")).text if label else "Exercise"
        return [f"**{heading}**" + (f" ({title})" if title else ""), "", *body]
    if name == "exercise-start":
        heading = context.local.get(label, Reference("Exercise")).text if label else "Exercise"
        return [f"**{heading}**" + (f" ({title})" if title else "")]
    if name in ("exercise-end", "solution-end"):
        return []
    if name in ("solution", "solution-start"):
        if not context.solutions:
            return []
        exercise = context.local.get(argument.strip())
        heading = f"**Solution to {exercise.text if exercise else 'the exercise'}**"
        return [heading] if name == "solution-start" else [heading, "", *body]
    if name.startswith("prf:"):
        kind = name[4:]
        if kind == "proof":
            return ["*Proof.*" + (f" ({title})" if title else ""), "", *body, "", "$\\blacksquare$"]
        heading = (context.local.get(label).text if label in context.local else kind.capitalize())
        return _quoted([f"**{heading}**" + (f" ({title})" if title else "") + ".", "", *body])
    if name in ADMONITIONS:
        heading = title if name == "admonition" or (name in ("sidebar", "topic") and title) else name.capitalize()
        if name == "seealso":
            heading = "See also"
        return _quoted([f"**{heading}**", "", *body])
    if name == "dropdown":
        return [f"**{title or 'Details'}**", "", *body]
    return None


def _render_other(directive: dict, label, title: str, body: list[str], context: _Context) -> list[str]:
    """Any other directive (math, figures, code, the citation block, glued values, layout) as Markdown; one the
    conversion does not know keeps its body and is named in ``context.unknown``."""
    name, argument, options = directive["name"], directive["argument"], directive["options"]
    if name in ("math", "glue:math"):
        content = "\n".join(body) if name == "math" else _glue(argument, context.glued)
        number = context.local.get(label) if label else None
        tag = rf" \tag{{{number.text.strip('()')}}}" if number else ""
        return ["$$", content + tag, "$$"]
    if name in ("figure", "image"):
        caption = " ".join(line for line in body if line.strip())
        number = context.local.get(label) if label else None
        lines = [f"![{_strip_markup(caption) or options.get('alt', '')}]({argument.strip()})"]
        if name == "figure" and (caption or number):
            lines += ["", f"**{number.text if number else 'Figure'}.** {caption}".rstrip()]
        return lines
    if name in ("code-block", "code", "sourcecode"):
        return [f"```{argument.strip()}", *directive["body"], "```"]
    if name == "cite-this-chapter":
        lines = ["To cite this chapter:", "", "```bibtex", *context.bibtex.split("\n"), "```"] if context.bibtex \
            else [f"To cite this chapter, use the BibTeX entry on its {context.link('page', f'{context.page}.html')}"
                  " or the book's `CITATION.cff`."]
        if options.get("paper"):
            lines += ["", "Please cite the original paper too: "
                      + context.link(_citation("cite:t", options["paper"], context.bibliography),
                                     "book/references.html") + "."]
        return lines
    if name in ("glue:md", "glue:", "glue"):
        return [_glue(argument, context.glued)]
    if name == "epigraph":
        return _quoted(body)
    if name in ("toctree", "tableofcontents", "bibliography", "build-info", "glue:figure"):
        return []
    if name == "raw":
        return directive["body"] if argument.strip() in ("html", "markdown") else []
    if name in ("div", "container", "only"):
        return body
    context.unknown.add(f"directive {name}")
    return [f"**{name.capitalize()}**" + (f" {title}" if title else ""), "", *body]


def _convert_text(text: str, context: _Context) -> str:
    output: list[str] = []
    prose: list[str] = []   # consecutive lines, converted together: a role may wrap onto the next line

    def flush():
        if prose:
            output.extend(_convert_line("\n".join(prose), context).split("\n"))
            prose.clear()

    for kind, part in _walk_markdown(text):
        if kind == "line":
            if not (TARGET.match(part) or part.startswith("%") or part.strip() == "+++"):
                prose.append(part)   # a MyST target, comment or block break shows nothing
            continue
        flush()
        if kind == "directive":
            rendered = _render_directive(part, context)
            if rendered:
                if output and output[-1].strip():
                    output.append("")
                output += [*rendered, ""]   # what follows starts a paragraph of its own
        else:
            output += part
    flush()
    return re.sub(r"\n{3,}", "\n\n", "\n".join(output)).strip("\n")


def raw_myst(text: str) -> list[str]:
    """The MyST roles, directive fences, targets and labelled equations left in Markdown ``text`` (code blocks
    and code spans excluded): empty for a notebook that reads cleanly in plain Jupyter."""
    found = []
    for kind, part in _walk_markdown(text):
        if kind == "directive":
            found.append(f"```{{{part['name']}}}")
        elif kind == "line":
            without_code = re.sub(r"``[^`]+``|`[^`]+`", "", part)
            found += [match.group(0) for match in RAW_MYST.finditer(without_code)]
    return found


def _is_gated(source: str, name: str) -> str | None:
    match = re.search(rf"^ {{0,3}}(`{{3,}}|:{{3,}})\{{{name}\}}[ \t]*(?P<argument>.*)$", source, re.MULTILINE)
    return match["argument"].strip() if match else None


def plain_notebook(notebook, *, solutions: bool, site_url: str | None, page: str | None = None,
                   chapter: int | None = None, resolve: Resolver | None = None, bibtex: str | None = None,
                   glued: Mapping[str, str] | None = None, bib_file: Path = ROOT / "book" / "references.bib"
                   ) -> nbformat.NotebookNode:
    """A copy of a chapter's (executed) ``notebook`` that reads cleanly in plain Jupyter, Colab or Binder.

    Guarantees, for every markdown cell (what :func:`raw_myst` checks, and ``tests/test_downloads.py`` on all
    chapters):

    - no MyST role, directive fence, ``(label)=`` target or ``$$ ... $$ (label)`` is left;
    - ``solutions=False`` drops every ``{solution}`` directive and everything between ``{solution-start}`` and
      ``{solution-end}`` (code cells included), and a markdown cell left empty; ``solutions=True`` keeps each as
      **Solution to Exercise N.k** and its body;
    - exercises read **Exercise N.k** (title), N the chapter's number (``chapter``, or looked up from ``page``
      in ``_toc.yml``) and k its place in the chapter, as on the site; each ``prf`` result reads **Theorem
      N.k** (title) in a blockquote, a proof *Proof.* ... ∎, an admonition a blockquote under its bold title;
    - a labelled display equation gets its number as ``\\tag{N.k}``, and a figure cell (``mystnb.figure``) is
      followed by a markdown cell **Figure N.k.** with its caption;
    - a cross-reference reads as the site writes it ("Figure 5.2", "(5.3)", "Theorem 5.1", a section's
      title): from ``resolve(role, target, explicit_title)`` when given (the build passes Sphinx's own,
      :func:`sphinx_resolver`), else from the notebook's own numbering, else its explicit title or target;
    - with ``site_url`` every reference, citation and page link is a Markdown link to the site's page and
      anchor; without it, plain text (no link that would not resolve);
    - citations read author-year from ``bib_file``; glued values and ``{ledger-counts}`` are filled in.

    Code cells, their outputs and the notebook's metadata are kept as they are (apart from the dropped solution
    cells). ``glued`` adds glued values (``{name: plain text}``) to those found in the outputs (myst-nb keeps an
    executed chapter's in ``<chapter>.glue.json`` beside it). ``page`` is the site's docname (``notebooks/balance``); ``bibtex`` the chapter's BibTeX entry for
    ``{cite-this-chapter}`` (without it, a pointer to the chapter's page). Raises ``ValueError`` naming the
    parameter for a notebook that is not one or a malformed ``site_url``.
    """
    if not isinstance(notebook, Mapping) or "cells" not in notebook:
        raise ValueError("notebook must be an nbformat notebook (a mapping with 'cells')")
    if site_url is not None and (not isinstance(site_url, str)
                                 or not re.match(r"^https?://[^\s/]+", site_url.strip())):
        raise ValueError(f"site_url={site_url!r} must be an http(s) URL or None")
    if chapter is None and page is not None:
        chapter = chapter_numbers().get(page)
    notebook = nbformat.from_dict(copy.deepcopy(dict(notebook)))
    context = _Context(page=page, site_url=site_url.strip() if site_url else None, solutions=solutions,
                       resolve=resolve, local=local_references(notebook, chapter=chapter, page=page),
                       bibliography=_bibliography(bib_file), glued={**glued_values(notebook), **(glued or {})},
                       bibtex=bibtex,
                       unknown=set())
    cells = []
    in_solution = False
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            source = cell.source
            solution_start = _is_gated(source, "solution-start")
            if solution_start is not None:
                in_solution = True
            ends = _is_gated(source, "solution-end") is not None
            if in_solution and not solutions:
                in_solution = not ends
                continue
            if ends:
                in_solution = False
            cell.source = _convert_text(source, context).strip("\n")
            if cell.source.strip():
                cells.append(cell)
            continue
        if in_solution and not solutions:
            continue
        cells.append(cell)
        figure = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}) if cell.cell_type == "code" else {}
        if figure.get("caption") or figure.get("name"):
            number = context.local.get(figure.get("name", ""))
            caption = _convert_text(str(figure.get("caption", "")), context).strip()
            caption_cell = nbformat.v4.new_markdown_cell(
                f"**{number.text if number else 'Figure'}.** {caption}".rstrip())
            if "id" in cell:   # nbformat 4.5 wants an id, unique in the notebook
                caption_cell.id = f"{cell.id}-caption"
            else:
                caption_cell.pop("id", None)
            cells.append(caption_cell)
    notebook.cells = cells
    notebook.metadata.setdefault("icl_book", {})["unconverted"] = sorted(context.unknown)
    if not context.unknown:
        del notebook.metadata["icl_book"]["unconverted"]
    if not notebook.metadata["icl_book"]:
        del notebook.metadata["icl_book"]
    return notebook


def sphinx_resolver(app, docname: str) -> Resolver:
    """Resolve a role's target as the site does, through Sphinx's domains, relative to the site's root."""
    from docutils import nodes
    from sphinx.addnodes import pending_xref
    from sphinx.errors import NoUri

    domains = {"ref": ("std", "ref"), "numref": ("std", "numref"), "doc": ("std", "doc"), "any": ("std", "ref"),
               "term": ("std", "term"), "eq": ("math", "eq"), "prf:ref": ("prf", "ref")}
    page_folder = posixpath.dirname(docname)

    def resolve(role: str, target: str, title: str | None) -> Reference | None:
        if role not in domains:
            return None
        domain_name, kind = domains[role]
        try:
            domain = app.env.get_domain(domain_name)
        except Exception:   # a domain the build did not load (sphinx-proof absent from a tiny test book)
            return None
        if kind in ("ref", "numref", "term"):
            target = target.lower() if kind != "numref" else target
        node = pending_xref("", refdomain=domain_name, reftype=kind, reftarget=target, refdoc=docname,
                            refexplicit=title is not None, refwarn=False)
        content = nodes.inline("", title if title is not None else target)
        node += content
        try:
            resolved = domain.resolve_xref(app.env, docname, app.builder, kind, target, node, content)
        except (NoUri, KeyError, ValueError, AttributeError):
            return None
        if resolved is None:
            return None
        uri = resolved.get("refuri") or ("#" + resolved["refid"] if resolved.get("refid") else None)
        if uri is None:
            return Reference(resolved.astext())
        page, _, anchor = uri.partition("#")
        path = posixpath.normpath(posixpath.join(page_folder, page)) if page else f"{docname}.html"
        return Reference(resolved.astext(), path + (f"#{anchor}" if anchor else ""))

    return resolve
