"""What the built site serves (_ext/site_assets.py): code without the spans that only repeat its colour."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import site_assets  # noqa: E402

PYGMENTS = """html[data-theme="light"] .highlight .n { color: #080808 } /* Name */
html[data-theme="light"] .highlight .p { color: #080808 } /* Punctuation */
html[data-theme="light"] .highlight .w { color: #080808 } /* Text.Whitespace */
html[data-theme="light"] .highlight .k { color: #0000FF } /* Keyword */
html[data-theme="dark"] .highlight .n { color: #F8F8F2 } /* Name */
html[data-theme="dark"] .highlight .p { color: #F8F8F2 } /* Punctuation */
html[data-theme="dark"] .highlight .w { color: #F8F8F2 } /* Text.Whitespace */
"""


def test_the_plain_tokens_colour_is_read_per_scheme_and_only_when_the_three_agree():
    assert site_assets.plain_token_colours(PYGMENTS) == {"light": "#080808", "dark": "#f8f8f2"}
    assert site_assets.plain_token_colours(PYGMENTS.replace(".p { color: #F8F8F2", ".p { color: #FF0000")) is None
    assert site_assets.plain_token_colours(PYGMENTS.replace('.highlight .w { color: #080808 }', "")) is None
    assert site_assets.plain_token_colours("") is None


def test_only_the_plain_tokens_spans_of_highlighted_code_go():
    page = ('<p><span class="n">prose</span></p><div class="highlight"><pre><span class="k">import</span>'
            '<span class="w"> </span><span class="nn">numpy</span><span class="p">(</span><span class="n">x</span>'
            '<span class="p">)</span></pre></div>')
    assert site_assets.without_plain_token_spans(page) == (
        '<p><span class="n">prose</span></p><div class="highlight"><pre><span class="k">import</span> '
        '<span class="nn">numpy</span>(x)</pre></div>')
