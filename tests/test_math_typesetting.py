"""The site's mathematics typeset at build time (_ext/math_typesetting.py, _ext/typeset_math.js) and the run times
a chapter quotes from the build (_ext/run_times.py)."""

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import math_typesetting  # noqa: E402
import run_times  # noqa: E402

needs_node = pytest.mark.skipif(math_typesetting.node() is None, reason="Node.js is not installed")

PAGE = """<html><head><script>window.MathJax = {"options": {"processHtmlClass": "math"}}</script>
<script defer="defer" src="../_static/mathjax/tex-mml-chtml.js"></script>
</head><body><p>Let <span class="math notranslate nohighlight">\\(a &lt; b_{1}\\)</span> hold.</p>
<div class="math notranslate nohighlight" id="equation-x">
<span class="eqno">(7.1)<a class="headerlink" href="#equation-x">#</a></span>\\[\\boldsymbol{x} = \\frac{1}{2}\\]</div>
</body></html>"""


def test_the_formulas_of_a_page_are_found_in_order_with_their_tex_unescaped():
    assert math_typesetting.formulas_of(PAGE) == [("a < b_{1}", False), ("\\boldsymbol{x} = \\frac{1}{2}", True)]


@needs_node
def test_each_formula_is_typeset_with_its_assistive_mathml_and_no_tab_stop():
    markup, css, errors = math_typesetting.typeset([("a < b_{1}", False), ("\\boldsymbol{x}", True)])
    assert not errors
    inline, display = markup[("a < b_{1}", False)], markup[("\\boldsymbol{x}", True)]
    assert inline.startswith("<mjx-container") and "<mjx-assistive-mml" in inline and "<math" in inline
    assert 'display="true"' in display and "tabindex" not in inline + display
    assert "@font-face" in css and "output/chtml/fonts/woff-v2" in css


@needs_node
def test_the_stylesheet_holds_the_characters_used_and_names_only_the_fonts_they_draw_with():
    _, css, _ = math_typesetting.typeset([("x + \\mathcal{L}", False), ("\\left( y \\right)", True)])
    css, unused = math_typesetting.without_unused_fonts(math_typesetting.minified(css))
    assert "\n" not in css.strip() and "mjx-c.mjx-c1D465.TEX-I" in css and "mjx-c.mjx-c1D466.TEX-I" in css
    assert "mjx-c.mjx-c1D467" not in css          # z is not used: the stylesheet is adaptive
    named = {family for family, _ in math_typesetting.FONT_FACE.findall(css)}
    assert {"MJXZERO", "MJXTEX", "MJXTEX-I", "MJXTEX-C", "MJXTEX-S1"} <= named
    assert "MJXTEX-FR" not in named and any(url.endswith("MathJax_Fraktur-Regular.woff") for url in unused)


@needs_node
def test_a_formula_mathjax_cannot_read_is_reported():
    _, _, errors = math_typesetting.typeset([("\\frac{1}{", False)])
    assert len(errors) == 1 and "\\\\frac{1}{" in errors[0]


@needs_node
def test_the_compact_form_gives_back_mathjaxs_markup_less_what_no_page_needs():
    formulas = [("\\sum_{i=1}^N x_i^2 \\le \\mathbb E[\\lambda]", False), ("\\text{a~b} \\sim c", True)]
    markup, _, _ = math_typesetting.typeset(formulas)
    for chtml in markup.values():
        stored = math_typesetting.compact(chtml)
        assert len(stored) < len(chtml) / 2
        assert math_typesetting.expand(stored) == math_typesetting.REDUNDANT.sub("", chtml)


def test_a_literal_tilde_and_a_character_code_survive_the_compact_form():
    markup = '<mjx-mi class="mjx-i"><mjx-c class="mjx-c1D44E TEX-I"></mjx-c></mjx-mi><mo>~c3D;</mo><mi>~</mi>'
    assert math_typesetting.expand(math_typesetting.compact(markup)) == markup


def test_a_page_keeps_its_tex_beside_the_stored_formula_and_loads_no_mathjax():
    stored = {("a < b_{1}", False): "~B&'x", ("\\boldsymbol{x} = \\frac{1}{2}", True): "~Bd"}
    page = math_typesetting.typeset_page(PAGE, stored, "../")
    # an incremental build reads the formulas of a page it typeset before, for the stylesheet
    assert math_typesetting.typeset_formulas_of(page) == math_typesetting.formulas_of(PAGE)
    assert math_typesetting.formulas_of(page) == []
    assert "tex-mml-chtml.js" not in page and "window.MathJax" not in page
    assert '<link rel="stylesheet" type="text/css" href="../_static/mathjax/chtml.css" />' in page
    assert '<script defer="defer" src="../_static/mathjax/chtml.js"></script>' in page
    assert """<span class="math notranslate nohighlight" data-chtml='~B&amp;&#39;x'>\\(a &lt; b_{1}\\)</span>""" in page
    assert "data-chtml='~Bd'>\n<span class=\"eqno\">(7.1)" in page and "\\[\\boldsymbol{x}" in page


def test_the_expander_script_knows_every_code():
    script = math_typesetting.expander_script()
    assert all(f'"{key}":' in script for key in math_typesetting.KEYS)
    assert len(set(math_typesetting.KEYS)) == len(math_typesetting.KEYS) == len(math_typesetting.TOKENS)
    assert "c" not in math_typesetting.KEYS and "~" not in math_typesetting.KEYS


@pytest.mark.parametrize(("seconds", "said"), [(48.4, "48 s"), (125, "2 min 05 s"), (3725, "1 h 02 min")])
def test_a_run_time_is_said_as_a_reader_says_it(seconds, said):
    assert run_times.duration(seconds) == said


def test_a_run_time_names_a_chapter_or_its_archived_full_run():
    with pytest.raises(ValueError, match="'<chapter>' or '<chapter> full'"):
        run_times.quoted("balance quick")
    assert run_times.quoted("no_such_chapter") is None
    archived = run_times.quoted("balance full")
    assert archived is None or "the archived full run of" in archived


def test_no_chapter_types_its_run_time_by_hand():
    """A run time in a chapter's prose comes from the build ({run-time}), never typed: "152 s", "about 80 s",
    "9 min on one thread" went stale as the code changed."""
    import re

    typed = re.compile(r"\b\d+(\.\d+)? ?(s|min|minutes|seconds|h)\b( on| in the (build|timing))")
    found = [f"{path.name}:{number}: {line.strip()[:80]}" for path in sorted((ROOT / "notebooks").glob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if line.startswith("#") and typed.search(line)]
    assert not found, found
