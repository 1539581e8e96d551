"""What the site serves besides its pages: the book's own static files (``_ext/static``), MathJax 3 from
the site itself (no CDN), and nothing a reader's browser never asks for."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

# MathJax typesets the site's formulas when it is built (math_typesetting.py): a reader's browser needs only the
# CHTML output's woff fonts, linked from the stylesheet that step writes beside them. None of MathJax's scripts,
# nor its speech-rule engine (about 4 MB of speech maps), reaches a reader.
MATHJAX_SHIPPED = ("output/chtml/fonts/woff-v2/*.woff",)


def copy_mathjax(app, exception):
    """Serve MathJax 3's fonts from ``_static/mathjax`` (:data:`MATHJAX_SHIPPED`)."""
    if exception is not None or app.builder.format != "html":
        return
    import mathjax

    source = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    target = Path(app.outdir) / "_static" / "mathjax"
    shutil.rmtree(target, ignore_errors=True)  # no part of an earlier build's selection stays behind
    for pattern in MATHJAX_SHIPPED:
        for path in source.glob(pattern):
            relative = path.relative_to(source)
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target / relative)


# The theme draws its icons twice over: its stylesheet (pydata-sphinx-theme.css) holds Font Awesome's CSS, whose
# woff2 fonts (vendor/fontawesome/webfonts, 0.3 MB) draw every icon of the pages, and scripts/fontawesome.js
# (1.5 MB, an eighth of the site) then replaces each icon with the same glyph as inline SVG. The stylesheet's
# icons stay; the script, and the tag that loads it on every page, go. The script also hid its SVG icons from
# screen readers: the icons the stylesheet draws are hidden the same way (aria-hidden), since their glyphs sit
# in Unicode's private use area and say nothing read aloud; every button keeps its own label.
FONTAWESOME_SCRIPT = "scripts/fontawesome.js"
FONTAWESOME_SCRIPT_TAG = re.compile(
    r'<script\b[^>]*\bsrc="[^"]*_static/scripts/fontawesome\.js[^"]*"[^>]*>\s*</script>\s*')
ICON_TAG = re.compile(r'<(i|span)\b([^>]*?)\bclass="([^"]*)"([^>]*)>')
ICON_STYLES = {"fa", "fas", "far", "fab", "fa-solid", "fa-regular", "fa-brands"}


def icons_without_the_script(page: str) -> str:
    """A page's HTML without the tag that loads :data:`FONTAWESOME_SCRIPT`, its icon elements (``<i class="fa-solid
    fa-bars">``) hidden from screen readers as the script's SVG icons were."""

    def hidden(match: re.Match) -> str:
        tag, before, classes, after = match.groups()
        if not ICON_STYLES & set(classes.split()) or "aria-hidden" in before + after:
            return match.group()
        return f'<{tag}{before}class="{classes}" aria-hidden="true"{after}>'

    return ICON_TAG.sub(hidden, FONTAWESOME_SCRIPT_TAG.sub("", page))


def drop_what_serves_nobody(app, exception):
    """Source maps of the theme's scripts, message catalogues, the TrueType copies of the icon fonts (the
    theme's CSS offers woff2 first, which every browser of the last eight years reads), the icon script that
    redraws the stylesheet's icons (:data:`FONTAWESOME_SCRIPT`), and the themes' Jinja macros
    (``webpack-macros.html``, templates the build has already filled in, copied along with the themes' static
    folders): nothing a reader's browser needs."""
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    for path in [*static.rglob("*.map"), *static.rglob("*.mo"), *static.rglob("*.po"),
                 *static.glob("vendor/fontawesome/webfonts/*.ttf"), *static.glob(FONTAWESOME_SCRIPT),
                 *static.glob("*webpack-macros.html")]:
        path.unlink()
    used = set()
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lean = icons_without_the_script(text)
        if lean != text:
            page.write_text(lean, encoding="utf-8")
        used |= icon_styles(lean)
    for script in static.rglob("*.js"):
        used |= icon_styles(script.read_text(encoding="utf-8", errors="replace"))
    for style, font in ICON_FONTS.items():
        if style not in used:
            (static / font).unlink(missing_ok=True)


# Each Font Awesome style, the classes that draw with it and its font. The theme ships all three; the pages draw
# only solid icons, and a browser fetches a font only for a glyph drawn with it, so a style no page or script
# names (in the published site: regular and brands, 0.14 MB) ships no font.
ICON_FONTS = {"solid": "vendor/fontawesome/webfonts/fa-solid-900.woff2",
              "regular": "vendor/fontawesome/webfonts/fa-regular-400.woff2",
              "brands": "vendor/fontawesome/webfonts/fa-brands-400.woff2"}
ICON_STYLE_CLASS = re.compile(r"(?<![\w-])(fa-solid|fas|fa-regular|far|fa-brands|fab)(?![\w-])")
ICON_STYLE_OF_CLASS = {"fa-solid": "solid", "fas": "solid", "fa-regular": "regular", "far": "regular",
                       "fa-brands": "brands", "fab": "brands"}


def icon_styles(text: str) -> set[str]:
    """The Font Awesome styles (``solid``, ``regular``, ``brands``) whose classes ``text`` (a page, a script)
    names."""
    return {ICON_STYLE_OF_CLASS[match.group(1)] for match in ICON_STYLE_CLASS.finditer(text)}


# Pygments wraps every name, punctuation mark and space of the pages' code in a span of its own (22,000 spans, 0.5 MB
# of the site and as much of the course pack), and the theme's pygments.css draws those three in the code's own
# colour. Where it does so in each colour scheme, the spans go and the code's <pre> takes that colour itself (the
# theme gives a <pre> its text colour, not the code's): the same pixels from a lighter page.
PLAIN_TOKENS = ("n", "p", "w")
PYGMENTS_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight \.(\w+) \{ color: (#[0-9A-Fa-f]{3,8}) \}')
CODE_BLOCK = re.compile(r'(<div class="highlight"><pre>)(.*?)(</pre>)', re.DOTALL)
PLAIN_TOKEN_SPAN = re.compile(r'<span class="(?:' + "|".join(PLAIN_TOKENS) + r')">([^<]*)</span>')


def plain_token_colours(css: str) -> dict[str, str] | None:
    """``{scheme: colour}`` when pygments.css (``css``) draws names, punctuation and spaces alike in each of its
    colour schemes, else None (then the spans stay)."""
    rules: dict[str, dict[str, str]] = {}
    for scheme, token, colour in PYGMENTS_RULE.findall(css):
        rules.setdefault(scheme, {})[token] = colour.lower()
    colours = {}
    for scheme, tokens in rules.items():
        drawn = {tokens.get(token) for token in PLAIN_TOKENS}
        if len(drawn) != 1 or None in drawn:
            return None
        colours[scheme] = drawn.pop()
    return colours or None


def without_plain_token_spans(page: str) -> str:
    """``page`` with the spans of :data:`PLAIN_TOKENS` inside its highlighted code replaced by their text."""
    return CODE_BLOCK.sub(lambda match: match.group(1) + PLAIN_TOKEN_SPAN.sub(r"\1", match.group(2)) + match.group(3),
                          page)


def plain_code_tokens(app, exception):
    """The pages' code without the spans that only repeat the code's colour (:data:`PLAIN_TOKENS`)."""
    if exception is not None or app.builder.format != "html":
        return
    stylesheet = Path(app.outdir) / "_static" / "pygments.css"
    css = stylesheet.read_text(encoding="utf-8") if stylesheet.is_file() else ""
    colours = plain_token_colours(css)
    if colours is None:
        return
    stylesheet.write_text(css + "".join(f'html[data-theme="{scheme}"] .highlight pre {{ color: {colour} }}\n'
                                        for scheme, colour in sorted(colours.items())), encoding="utf-8")
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        lean = without_plain_token_spans(text)
        if lean != text:
            page.write_text(lean, encoding="utf-8")


def bibliography_roles(app, exception):
    """The references page's entries are list items of its citation list: docutils marks them
    ``doc-biblioentry``, a role that ARIA 1.2 deprecates and that accessibility engines (axe-core) no longer
    count as a list item, so the list looked empty of items to them; ``listitem`` says the same and is read."""
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        if 'role="doc-biblioentry"' in text:
            page.write_text(text.replace('role="doc-biblioentry"', 'role="listitem"'), encoding="utf-8")


def et_al(app, doctree, docname):
    """BibTeX's ``and others`` (an author list the paper's first version leaves open) as the reader expects it:
    "Musat et al.", in the in-text citations and the references alike (pybtex writes "Musat and others")."""
    from docutils import nodes

    for text in list(doctree.findall(nodes.Text)):
        parent, value = text.parent, str(text)
        if parent is None or "others" not in value:
            continue
        fixed = value.replace(" and others.", " et al.").replace(" and others", " et al.")
        index = parent.index(text)
        previous = parent[index - 1] if index > 0 else None
        if value.startswith("others") and isinstance(previous, nodes.Text) and str(previous).endswith(" and "):
            parent.replace(previous, nodes.Text(str(previous)[:-len(" and ")]))
            rest = value[len("others"):]
            fixed = (" et al" if rest.startswith(".") else " et al.") + rest
        if fixed != value:
            parent.replace(text, nodes.Text(fixed))


def add_static_files(app, config):
    config.html_static_path.append(str(Path(__file__).parent / "static"))


PROVENANCE_FOLDER = "provenance"   # in the site: the runs' RO-Crate with the archives it describes
CRATE_FILE = "ro-crate-metadata.json"


def copy_run_crate(app, exception):
    """The archived runs' RO-Crate (``results/ro-crate-metadata.json``, written by ``tools/ro_crate.py``) on the
    site, in ``provenance/`` with every archive it describes at the path it names: the crate read from the site
    is whole, as in the source archive."""
    if exception is not None or app.builder.format != "html":
        return
    results = Path(app.srcdir) / "results"
    if not (results / CRATE_FILE).is_file():
        return
    target = Path(app.outdir) / PROVENANCE_FOLDER
    shutil.rmtree(target, ignore_errors=True)   # no archive of an earlier build stays behind
    target.mkdir(parents=True)
    shutil.copy2(results / CRATE_FILE, target / CRATE_FILE)
    for entity in json.loads((results / CRATE_FILE).read_text(encoding="utf-8"))["@graph"]:
        if entity.get("@type") == "File":
            (target / entity["@id"]).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(results / entity["@id"], target / entity["@id"])
