"""The site's mathematics typeset once, when the site is built, instead of in every reader's browser.

MathJax typesetting a chapter in the browser took 15-31 s on a phone-speed CPU (Chromium with a 4x CPU throttle),
with raw ``\\(...\\)`` on screen until then, and its menu made every formula a keyboard tab stop (issue 37). At
``build-finished`` this step hands every formula of the built pages (Sphinx's ``span.math`` and ``div.math``) to
MathJax 3 under Node (``typeset_math.js``, with the es5 folder of the PyPI ``mathjax`` package the site already
pins: nothing is downloaded) and stores MathJax's CHTML output, with its assistive MathML for screen readers, in the
page. The output is about twenty times the TeX, so each formula's markup is stored in a compact form
(:func:`compact`: the most frequent tags and each character's element as short codes) in a ``data-chtml``
attribute beside its TeX, and ``_static/mathjax/chtml.js`` (a few lines, written here with the codes) puts it in
place when the page is read: no layout is computed in the browser, and a page without JavaScript still shows the
TeX. One stylesheet, ``_static/mathjax/chtml.css``, holds the rules of the characters the site's formulas use (the
whole TeX font's rules weighed 0.24 MB, a fiftieth of the site), with whitespace dropped; MathJax's scripts are no
longer shipped, and no
formula is in the keyboard's tab order.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

SCRIPT = Path(__file__).with_name("typeset_math.js")
STYLESHEET = "mathjax/chtml.css"          # under _static
EXPANDER = "mathjax/chtml.js"             # under _static
TIMEOUT_S = 600
# Sphinx writes inline mathematics as <span class="math notranslate nohighlight">\(tex\)</span> and display
# mathematics as <div class="math notranslate nohighlight" id=...>, an optional equation number, then \[tex\].
# A formula typeset already (its data-chtml attribute, an incremental build's unchanged page) is not matched.
INLINE = re.compile(r'<span class="math notranslate nohighlight">(\\\((.*?)\\\))</span>', re.DOTALL)
DISPLAY = re.compile(r'<div class="math notranslate nohighlight"((?:(?!data-chtml)[^>])*)>(\s*(?:<span class="eqno">.*?</span>)?)'
                     r'(\\\[(.*?)\\\])(\s*</div>)', re.DOTALL)
MATHJAX_TAGS = re.compile(r'<script>window\.MathJax = .*?</script>\s*'
                          r'|<script\b[^>]*src="[^"]*_static/mathjax/[^"]*"[^>]*>\s*</script>\s*', re.DOTALL)
# What CHTML writes that a page needs nowhere: the container's relative position (book.css sets it for every
# container), the MathML namespace (the HTML parser gives <math> its own), MathJax's internal TeX classes.
REDUNDANT = re.compile(r' style="position: relative;"| xmlns="http://www\.w3\.org/1998/Math/MathML"'
                       r'| data-mjx-[a-z-]+="[^"]*"| unselectable="on"')
# A character: <mjx-c class="mjx-c1D44E TEX-I"></mjx-c> is stored as ~c1D44E.I; (~c3D; without a variant).
CHARACTER = re.compile(r'<mjx-c class="mjx-c([0-9A-F]+)(?: TEX-([A-Z0-9]+))?"></mjx-c>')
# The tags the site's formulas use most (counted on the built site), each stored as ~ and one character of KEYS.
TOKENS = (
    "<mjx-math class=\" MJX-TEX\" aria-hidden=\"true\">",
    "<mjx-container class=\"MathJax\" jax=\"CHTML\">",
    "<mjx-mi class=\"mjx-i\">",
    "<mjx-assistive-mml display=\"inline\">",
    "<mjx-mo class=\"mjx-n\">",
    "</mjx-assistive-mml>",
    "</mjx-mi>",
    "<mjx-TeXAtom size=\"s\" texclass=\"ORD\">",
    "<mjx-script style=\"vertical-align: -0.15em;\">",
    "</mjx-container>",
    "</mjx-mo>",
    "</mjx-script>",
    "<mo stretchy=\"false\">",
    "<mjx-mo class=\"mjx-n\" space=\"4\">",
    "</mjx-math>",
    "</mjx-TeXAtom>",
    "<mjx-mn class=\"mjx-n\">",
    "<mjx-mi class=\"mjx-i\" size=\"s\">",
    "</mi>",
    "<mjx-script style=\"vertical-align: 0.363em;\">",
    "<mjx-mn class=\"mjx-n\" size=\"s\">",
    "<mjx-TeXAtom texclass=\"ORD\">",
    "</mjx-mn>",
    "<mi mathvariant=\"normal\">",
    "</math>",
    "</mjx-msub>",
    "</mo>",
    "<mi>",
    "<mjx-mo class=\"mjx-n\" space=\"3\">",
    "<math>",
    "<mjx-mn class=\"mjx-n\" space=\"4\">",
    "</mrow>",
    "<mjx-msub>",
    "<mjx-mi class=\"mjx-n\">",
    "<mjx-spacer style=\"margin-top: 0.18em;\">",
    "<mrow>",
    "<mo fence=\"false\" stretchy=\"false\">",
    "</mjx-msup>",
    "</msub>",
    "</mn>",
    "<mjx-script style=\"vertical-align: 0.363em; margin-left: 0.054em;\">",
    "<mjx-script style=\"vertical-align: -0.15em; margin-left: -0.104em;\">",
    "<msub>",
    "<mjx-msup>",
    "<mjx-script style=\"vertical-align: -0.15em; margin-left: -0.12em;\">",
    "<mjx-mi class=\"mjx-n\" size=\"s\">",
    "<mo>",
    "<mjx-mo class=\"mjx-n\" style=\"width: 0; margin-left: -0.25em;\">",
    "<mjx-script style=\"vertical-align: 0.363em; margin-left: 0.055em;\">",
    "<mn>",
    "<mjx-script style=\"vertical-align: 0.363em; margin-left: 0.051em;\">",
    "</msup>",
    "<mjx-mi class=\"mjx-i\" space=\"4\">",
    "<mjx-script style=\"vertical-align: -0.15em; margin-left: -0.045em;\">",
    "</mjx-msubsup>",
    "<msup>",
    "</mjx-spacer>",
    "<mjx-TeXAtom size=\"s\" texclass=\"ORD\" style=\"margin-left: 0.225em;\">",
    "<mjx-mn class=\"mjx-n\" space=\"3\">",
    "<mjx-msubsup>",
    "<mjx-mi class=\"mjx-i\" space=\"3\">",
    "<mjx-mi class=\"mjx-i\" space=\"2\">",
)
KEYS = "ABCDEFGHIJKLMNOPQRSTUVWXYZabdefghijklmnopqrstuvwxyz0123456789_"   # not c, nor ~ (escapes)
STORED_CODE = re.compile(r"~(?:c([0-9A-F]+)(?:\.([A-Z0-9]+))?;|(.))")
SHORT = re.compile("|".join(re.escape(token) for token in sorted(TOKENS, key=len, reverse=True)))


def node() -> str | None:
    return shutil.which("node") or shutil.which("nodejs")


def mathjax_es5() -> Path:
    import mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


# The same formulas once typeset (typeset_page): an incremental build rewrites only its changed pages, and the
# stylesheet must still hold the characters of the pages it leaves as they were.
TYPESET_INLINE = re.compile(r"""<span class="math notranslate nohighlight" data-chtml='[^']*'>\\\((.*?)\\\)</span>""",
                            re.DOTALL)
TYPESET_DISPLAY = re.compile(r"""<div class="math notranslate nohighlight"[^'>]* data-chtml='[^']*'>\s*"""
                             r"""(?:<span class="eqno">.*?</span>)?\\\[(.*?)\\\]\s*</div>""", re.DOTALL)


def typeset_formulas_of(page: str) -> list[tuple[str, bool]]:
    """The TeX of each formula a page holds already typeset, with whether it is displayed."""
    return ([(html.unescape(tex), False) for tex in TYPESET_INLINE.findall(page)]
            + [(html.unescape(tex), True) for tex in TYPESET_DISPLAY.findall(page)])


def formulas_of(page: str) -> list[tuple[str, bool]]:
    """The TeX of each formula of a page's HTML, with whether it is displayed, in the order of the page."""
    found = [(match.start(), html.unescape(match.group(2)), False) for match in INLINE.finditer(page)]
    found += [(match.start(), html.unescape(match.group(4)), True) for match in DISPLAY.finditer(page)]
    return [(tex, display) for _, tex, display in sorted(found)]


def typeset(formulas: list[tuple[str, bool]]) -> tuple[dict[tuple[str, bool], str], str, list[str]]:
    """CHTML markup for each distinct formula, the stylesheet, and MathJax's errors ("tex: message")."""
    executable = node()
    if executable is None:
        raise RuntimeError("the site's mathematics is typeset at build time by Node.js, and none is installed "
                           "(Debian/Ubuntu: apt-get install nodejs)")
    distinct = sorted(set(formulas))
    request = json.dumps({"es5": str(mathjax_es5()), "formulas": [[tex, display] for tex, display in distinct]})
    result = subprocess.run([executable, str(SCRIPT)], input=request, capture_output=True, text=True,
                            timeout=TIMEOUT_S, encoding="utf-8")
    if result.returncode != 0:
        raise RuntimeError(f"typeset_math.js failed: {result.stderr.strip()[-2000:]}")
    answer = json.loads(result.stdout)
    errors = [f"{distinct[index][0]!r}: {message}" for index, message in answer["errors"]]
    return dict(zip(distinct, answer["html"])), answer["css"], errors


def minified(css: str) -> str:
    """MathJax's stylesheet without its line breaks and indentation (no CSS string of it holds a line break)."""
    return re.sub(r"\s*\n\s*", "", css) + "\n"


# MathJax's stylesheet names a font per variant (@font-face: MJXTEX-I is the TeX font's math italic) and gives each
# character its variant's class (mjx-c.mjx-c1D44E.TEX-I); the rest of it names families for every variant.
FONT_FACE = re.compile(r'@font-face /\* \d+ \*/ \{font-family: ([\w-]+);src: url\("([^"]+)"\) format\("woff"\);\}')
CHARACTER_VARIANT = re.compile(r"mjx-c\.mjx-c[0-9A-F]+\.TEX-([A-Z0-9]+)")
FAMILY_LIST = re.compile(r"font-family: ([^;}]*)")


def fonts_in_use(css: str) -> set[str]:
    """The font families the stylesheet ``css`` (as :func:`minified` wrote it) can draw with: the default ones
    (``MJXZERO``, ``MJXTEX``), those of its characters' variants, and those of its stretchy delimiters."""
    used = {"MJXZERO", "MJXTEX"} | {f"MJXTEX-{variant}" for variant in CHARACTER_VARIANT.findall(css)}
    for rule in re.findall(r"mjx-stretchy-[vh] mjx-c[^{]*\{([^}]*)\}", css):
        for families in FAMILY_LIST.findall(rule):
            used |= {family.strip() for family in families.replace("! important", "").split(",")}
    return used


def without_unused_fonts(css: str) -> tuple[str, list[str]]:
    """``css`` without the @font-face rules of fonts no character can use (:func:`fonts_in_use`), and the URLs
    of those fonts (relative to the stylesheet)."""
    used, unused = fonts_in_use(css), []

    def kept(match: re.Match) -> str:
        if match.group(1) in used:
            return match.group(0)
        unused.append(match.group(2))
        return ""
    return FONT_FACE.sub(kept, css), unused


def compact(markup: str) -> str:
    """``markup`` in the form ``chtml.js`` expands: ``~`` escaped as ``~~``, each character's element and each of
    :data:`TOKENS` as a short code, what no page needs (:data:`REDUNDANT`) left out."""
    markup = REDUNDANT.sub("", markup).replace("~", "~~")
    markup = CHARACTER.sub(lambda m: f"~c{m.group(1)}{'.' + m.group(2) if m.group(2) else ''};", markup)
    return SHORT.sub(lambda m: "~" + KEYS[TOKENS.index(m.group())], markup)


def expand(stored: str) -> str:
    """:func:`compact` undone (what ``chtml.js`` does in the browser; the tests compare the two)."""
    def one(match: re.Match) -> str:
        hexadecimal, variant, key = match.groups()
        if hexadecimal is not None:
            return f'<mjx-c class="mjx-c{hexadecimal}{" TEX-" + variant if variant else ""}"></mjx-c>'
        return "~" if key == "~" else TOKENS[KEYS.index(key)]
    return STORED_CODE.sub(one, stored)


def expander_script() -> str:
    """``chtml.js``: each element with a ``data-chtml`` attribute gets the formula it stores in place of its TeX."""
    return (
        "// Written by _ext/math_typesetting.py: the formulas MathJax typeset when the site was built, put in place of\n"
        "// their TeX (a page without JavaScript shows the TeX). No layout is computed here.\n"
        "(function () {\n"
        f"  const TOKENS = {json.dumps(dict(zip(KEYS, TOKENS)))};\n"
        "  const expand = (stored) => stored.replace(/~(?:c([0-9A-F]+)(?:\\.([A-Z0-9]+))?;|(.))/g,\n"
        "    (all, hex, variant, key) => hex !== undefined\n"
        "      ? `<mjx-c class=\"mjx-c${hex}${variant ? \" TEX-\" + variant : \"\"}\"></mjx-c>`\n"
        "      : key === \"~\" ? \"~\" : TOKENS[key]);\n"
        "  const template = document.createElement(\"template\");\n"
        "  document.querySelectorAll(\"[data-chtml]\").forEach((element) => {\n"
        "    const tex = Array.from(element.childNodes).find((node) => node.nodeType === Node.TEXT_NODE\n"
        "      && /\\\\[([]/.test(node.textContent));\n"
        "    if (!tex) return;\n"
        "    template.innerHTML = expand(element.dataset.chtml);\n"
        "    tex.replaceWith(template.content);\n"
        "    element.removeAttribute(\"data-chtml\");\n"
        "  });\n"
        "})();\n")


def _attribute(stored: str) -> str:
    return " data-chtml='" + stored.replace("&", "&amp;").replace("'", "&#39;") + "'"


def typeset_page(page: str, stored: dict[tuple[str, bool], str], up: str) -> str:
    """The page with each formula's compact markup beside its TeX, the stylesheet and the expander linked, and
    MathJax's scripts gone."""
    page = INLINE.sub(lambda m: '<span class="math notranslate nohighlight"'
                      + _attribute(stored[(html.unescape(m.group(2)), False)]) + ">" + m.group(1) + "</span>", page)
    page = DISPLAY.sub(lambda m: f'<div class="math notranslate nohighlight"{m.group(1)}'
                       + _attribute(stored[(html.unescape(m.group(4)), True)]) + ">" + m.group(2) + m.group(3)
                       + m.group(5), page)
    page = MATHJAX_TAGS.sub("", page)
    links = (f'<link rel="stylesheet" type="text/css" href="{up}_static/{STYLESHEET}" />\n'
             f'<script defer="defer" src="{up}_static/{EXPANDER}"></script>\n')
    return page.replace("</head>", links + "</head>", 1)


def typeset_the_site(app, exception):
    """``build-finished``: every page's formulas typeset into the page (see the module's docstring)."""
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    every_page = {path: path.read_text(encoding="utf-8") for path in sorted(outdir.rglob("*.html"))}
    pages = {path: text for path, text in every_page.items() if INLINE.search(text) or DISPLAY.search(text)}
    formulas = [formula for text in pages.values() for formula in formulas_of(text)]
    typeset_before = [formula for text in every_page.values() for formula in typeset_formulas_of(text)]
    markup, css, errors = typeset(formulas + typeset_before)
    for error in errors:
        logger.warning(f"MathJax cannot typeset {error}")
    stored = {formula: compact(chtml) for formula, chtml in markup.items()}
    static = outdir / "_static"
    (static / STYLESHEET).parent.mkdir(parents=True, exist_ok=True)
    # The fonts no formula of the site draws with go (0.17 MB of the 0.36 MB), their @font-face rules with them (the
    # course pack's student edition, a subset of these formulas, keeps its own selection).
    css, _ = without_unused_fonts(minified(css))
    (static / STYLESHEET).write_text(css, encoding="utf-8")
    named = {url for _, url in FONT_FACE.findall(css)}
    folder = (static / STYLESHEET).parent
    for font in folder.rglob("*.woff"):
        if font.relative_to(folder).as_posix() not in named:
            font.unlink()
    (static / EXPANDER).write_text(expander_script(), encoding="utf-8")
    for path, text in pages.items():
        up = "../" * len(path.relative_to(outdir).parts[:-1])
        path.write_text(typeset_page(text, stored, up), encoding="utf-8")
    logger.info(f"typeset {len(formulas)} formulas ({len(markup)} distinct) on {len(pages)} pages at build time")
