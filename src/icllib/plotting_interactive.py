"""Figures a reader can move: a slider over precomputed matplotlib frames, offline, with no kernel (issue 39).

:func:`slider_figure` draws a figure once per value of a parameter (a context length, a learning-rate ratio, a
training time) and returns a :class:`SliderFigure` to ``display``. On the page it is the figure at its default
value as inline SVG, a native ``<input type="range">`` with a ``<label>``, an ``<output>`` and ``aria-valuetext``
that say the value, and a small inline script that swaps in the other frames: only the artists that change from
one frame to the next are stored per frame (matplotlib writes each under its ``gid``), the rest once. Where no
script runs (a printed page, a PDF, a downloaded notebook that is not trusted) the default frame is plain
markup; the bundle carries an ``image/png`` of it too.

The SVG is deterministic (a fixed ``svg.hashsalt``, no date), its text is real text, and its black and white
take the page's colours (pydata-sphinx-theme's ``--pst-color-text-base`` and ``--pst-color-background``, else
JupyterLab's, else black on white), so that it reads in the light and the dark scheme. Nothing is loaded from
another site.
"""

from __future__ import annotations

import base64
import hashlib
import html
import io
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import matplotlib as mpl
import matplotlib.pyplot as plt

# matplotlib names an artist's SVG group by its gid: the changing artists of a frame are tagged with these.
PART_GID = "icl-part-{}"
# The SVG settings of every frame: ids hashed with a fixed salt (so the same figure gives the same bytes), text
# as text (a glyph defined inside a changing part would vanish with it), no creation date.
SVG_SETTINGS = {"svg.hashsalt": "icllib-slider-figure", "svg.fonttype": "none", "svg.image_inline": True}
SVG_METADATA = {"Date": None, "Creator": None}
# The page's text and background colours where the theme defines them (book site, JupyterLab), else black on white.
TEXT_COLOUR = "var(--pst-color-text-base, var(--jp-content-font-color1, #000000))"
BACKGROUND_COLOUR = "var(--pst-color-background, var(--jp-layout-color0, #ffffff))"
# The text of the figures: matplotlib's font where the reader has it, else the same kind.
FONT = "'DejaVu Sans', 'Bitstream Vera Sans', Verdana, sans-serif"
# Coordinates in points (1/72 inch), to a tenth: below a pixel on the page (at most 768 px for 10.5 inches).
COORDINATE_DECIMALS = 1
MAX_FRAMES = 64
# The still image of the default frame, for notebooks that show no HTML: 9-point text is 10 px at this resolution,
# and the image weighs half what the house style's 110 dpi would (it is kept in every downloaded notebook).
PNG_DPI = 80

# Scoped to the figure's own class; the control hides in print, where the default frame is what shows.
STYLE = """
.icl-slider { color: TEXT; --icl-slider-background: BACKGROUND; background: var(--icl-slider-background); }
.icl-slider svg { width: 100%; height: auto; }
.icl-slider svg text { fill: currentColor; font-family: FONT; }
.icl-slider-control { display: flex; flex-wrap: wrap; align-items: center; gap: 0.25rem 0.75rem; margin: 0.25rem 0; }
.icl-slider-control input { flex: 1 1 12rem; min-width: 8rem; accent-color: var(--pst-color-primary, #0072b2); }
.icl-slider-control output { font-variant-numeric: tabular-nums; min-width: 7rem; }
@media print { .icl-slider-control input { display: none; } }
""".replace("TEXT", TEXT_COLOUR).replace("BACKGROUND", BACKGROUND_COLOUR).replace("FONT", FONT)

# Swaps a frame's parts into the SVG when the slider moves (keyboard or pointer: both fire "input").
SCRIPT = """
(function () {
  var root = document.getElementById("ROOT");
  if (!root || root.getAttribute("data-ready")) return;
  root.setAttribute("data-ready", "1");
  var data = JSON.parse(root.querySelector("script.icl-slider-frames").textContent);
  var input = root.querySelector("input"), output = root.querySelector("output");
  data.parts[data.shown] = data.gids.map(function (gid) {
    return document.getElementById("ROOT-" + gid).outerHTML;
  });
  root.iclSlider = data;
  input.addEventListener("input", function () {
    var index = Number(input.value), parts = data.parts[index];
    for (var k = 0; k < parts.length; k++) {
      var shown = document.getElementById("ROOT-" + data.gids[k]);
      if (shown) shown.outerHTML = parts[k];
    }
    output.textContent = data.texts[index];
    input.setAttribute("aria-valuetext", data.texts[index]);
  });
})();
"""


@dataclass(frozen=True)
class SliderFigure:
    """A figure with a slider, as :func:`slider_figure` made it: ``display`` it in a notebook cell.

    ``html`` is the page's markup (default frame, control, frames, script), ``png`` the default frame as an image,
    ``values`` and ``texts`` the frames' values and what the control says of each, ``default`` the index shown
    first, ``frame_bytes`` the size of each frame's changing parts in the page, ``alt`` the figure's description.
    """

    html: str
    png: bytes
    values: list
    texts: list[str]
    default: int
    frame_bytes: list[int]
    alt: str

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {"text/html": self.html, "image/png": self.png,
                "text/plain": f"Figure with a slider over {len(self.values)} frames: {self.alt}"}


def _check_arguments(fig, values, draw, label: str, alt: str, default) -> int:
    """The index of ``default`` in ``values``, once every argument is checked (ValueError naming it)."""
    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure (from icllib.plotting.figure), got {type(fig).__name__}")
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence) or not 2 <= len(values) <= MAX_FRAMES:
        raise ValueError(f"values must be a sequence of 2 to {MAX_FRAMES} frame values, got {values!r:.80}")
    if len(set(map(repr, values))) != len(values):
        raise ValueError("values must be distinct: each is one position of the slider")
    if not callable(draw):
        raise ValueError(f"draw must be a function of one value returning the artists it changed, got {draw!r}")
    for name, text in (("label", label), ("alt", alt)):
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"{name} must be a non-empty str, got {text!r}")
    if len(alt.strip()) < 15:
        raise ValueError(f"alt must describe the figure for a reader who cannot see it (15 characters or more), "
                         f"got {alt!r}")
    if default is None:
        return 0
    matches = [index for index, value in enumerate(values) if value == default]
    if not matches:
        raise ValueError(f"default must be one of values, got {default!r}")
    return matches[0]


def _describe(value) -> str:
    return f"{value:g}" if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)


def _changed_artists(draw, value) -> list:
    """``draw(value)``'s artists, tagged ``PART_GID`` in order; ValueError unless it returned a list of them."""
    changed = draw(value)
    artists = list(changed) if isinstance(changed, (list, tuple)) else None
    if not artists or not all(isinstance(artist, mpl.artist.Artist) for artist in artists):
        raise ValueError(f"draw must return the list of matplotlib artists it changed, got {changed!r:.80} "
                         f"for the value {value!r}")
    for number, artist in enumerate(artists):
        artist.set_gid(PART_GID.format(number))
    return artists


def _figure_svg(fig) -> str:
    """The whole figure as SVG markup."""
    buffer = io.StringIO()
    with mpl.rc_context(SVG_SETTINGS):
        fig.savefig(buffer, format="svg", metadata=SVG_METADATA)
    return buffer.getvalue()


def _parts_svg(fig, artists) -> list[str]:
    """The SVG markup of ``artists`` alone, each drawn as in the whole figure's SVG (:func:`_figure_svg`: the
    figure at 72 dpi, images at the figure's dpi, the same hash salt, so the same clip paths' ids), and far faster
    than drawing the whole figure again for each frame."""
    from matplotlib.backends.backend_mixed import MixedModeRenderer
    from matplotlib.backends.backend_svg import RendererSVG

    buffer, dpi = io.StringIO(), fig.dpi
    width, height = fig.get_size_inches()
    with mpl.rc_context(SVG_SETTINGS):
        fig.dpi = 72
        try:
            renderer = MixedModeRenderer(fig, width, height, dpi,
                                         RendererSVG(width * 72, height * 72, buffer, image_dpi=dpi))
            for artist in artists:
                artist.draw(renderer)
            renderer.finalize()
        finally:
            fig.dpi = dpi
    return _split_parts(buffer.getvalue(), len(artists))


def _split_parts(svg: str, count: int) -> list[str]:
    """The ``count`` elements tagged ``PART_GID`` in ``svg``, in order, whole: a group (most artists) or a single
    element (an image)."""
    parts = []
    for number in range(count):
        opening = re.search(f'<(\\w+)\\b[^>]*\\bid="{re.escape(PART_GID.format(number))}"[^>]*>', svg)
        if opening is None:
            raise ValueError(f"draw returned an artist that draws nothing (the part {number} of a frame is missing "
                             "from its SVG): return only visible artists of fig")
        if opening.group(1) != "g" or opening.group().endswith("/>"):
            parts.append(opening.group())
            continue
        depth, start = 1, opening.end()
        for tag in re.finditer(r"<g[\s>]|</g>", svg[start:]):
            depth += -1 if tag.group() == "</g>" else 1
            if depth == 0:
                parts.append(svg[opening.start():start + tag.end()])
                break
    return parts


def _frame_of_axes(fig) -> list:
    """What must not move from frame to frame: each panel's place and limits."""
    return [(ax.get_position().bounds, ax.get_xlim(), ax.get_ylim()) for ax in fig.axes]


def _compact(markup: str) -> str:
    """Whitespace between elements and after path commands dropped (SVG draws the same)."""
    return re.sub(r">\s+<", "><", markup.replace(" \n", " ").replace("\n", " ")).strip()


def _number(match) -> str:
    return f"{float(match.group()):.{COORDINATE_DECIMALS}f}".rstrip("0").rstrip(".")


def _rounded(match) -> str:
    return f'{match.group(1)}="{re.sub(r"-?[0-9]+[.][0-9]+", _number, match.group(2))}"'


def _lighter(markup: str, keep: set[str]) -> str:
    """The markup with what a reader cannot see taken out: ids nothing refers to (every group of matplotlib's has
    one), the default font list on each text (the figure's style sets it once), digits of coordinates finer than
    ``COORDINATE_DECIMALS`` (of a point, 1/72 inch); black and white written as the page's text and background."""
    markup = re.sub(r' id="([^"]+)"', lambda match: match.group() if match.group(1) in keep else "", markup)
    markup = re.sub(r"font-family: 'DejaVu Sans', 'Bitstream Vera Sans'[^;\"]*(; )?", "", markup)
    markup = re.sub(r'\b(d|x|y|width|height|transform)="([^"]*)"', _rounded, markup)
    markup = re.sub(r'"data:image/png;base64,([^"]+)"', _smaller_image, markup)
    markup = re.sub(r' transform="rotate\(-?0 [^"]*\)"', "", markup)
    markup = re.sub(r"#000000\b", "currentColor", markup)
    markup = re.sub(r"fill: ?#ffffff\b", "fill: var(--icl-slider-background)", markup)
    markup = re.sub(r"<g([^>]*)>((?:<use [^>]*/>)+)</g>", _shared_style, markup)
    while True:   # groups with no attribute, innermost first: they only nest what they hold
        bare = re.sub(r"<g>((?:(?!<g[ >]|</g>).)*)</g>", r"\1", markup)
        if bare == markup:
            return markup
        markup = bare


def _smaller_image(match) -> str:
    """An embedded PNG (an image of the figure, e.g. a heat map) in at most 256 colours, when that is smaller."""
    from PIL import Image

    original = base64.b64decode(match.group(1))
    image = Image.open(io.BytesIO(original))
    if image.mode == "P" or "A" in image.mode and image.getextrema()[-1][0] < 255:
        return match.group()   # a palette already, or see-through pixels a palette would lose
    buffer = io.BytesIO()
    image.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(
        buffer, format="png", optimize=True)
    smaller = buffer.getvalue() if len(buffer.getvalue()) < len(original) else original
    return f'"data:image/png;base64,{base64.b64encode(smaller).decode()}"'


def _shared_style(match) -> str:
    """A group of markers (``<use>``) whose style is the same for each, with that style once on the group: fill
    and stroke are inherited, so they draw the same."""
    group, uses = match.group(1), match.group(2)
    styles = set(re.findall(r' style="([^"]*)"', uses))
    if len(styles) != 1 or "style=" in group or uses.count("<use ") != uses.count(" style="):
        return match.group()
    bare = re.sub(r' style="[^"]*"', "", uses)
    return f'<g{group} style="{styles.pop()}">{bare}</g>'


def _referenced_ids(markup: str) -> set[str]:
    """The ids that ``markup`` refers to (clip paths, markers)."""
    return set(re.findall(r"url\(#([^)]+)\)", markup)) | set(re.findall(r'href="#([^"]+)"', markup))


def _with_prefix(markup: str, names: dict[str, str]) -> str:
    """Every id of the SVG and every reference to one renamed by ``names`` (short, and prefixed by the figure's
    own key, so that two figures on a page never share one)."""
    markup = re.sub(r'\bid="([^"]+)"', lambda match: f'id="{names[match.group(1)]}"', markup)
    markup = re.sub(r"url\(#([^)]+)\)", lambda match: f"url(#{names[match.group(1)]})", markup)
    return re.sub(r'href="#([^"]+)"', lambda match: f'href="#{names[match.group(1)]}"', markup)


def _page_svg(svg: str, alt: str) -> str:
    """The SVG element alone (no XML prologue or metadata), sized by the page, labelled for screen readers."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"', r"<svg \1", svg, count=1)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{html.escape(alt)}" ', 1)


def _script_json(data) -> str:
    """JSON that cannot close the <script> element holding it."""
    return json.dumps(data, separators=(",", ":")).replace("</", "<\\/").replace("<!--", "\\u003c!--")


def slider_figure(fig, values: Sequence, draw: Callable, *, label: str, alt: str, default=None,
                  value_text: Callable | None = None) -> SliderFigure:
    """``fig`` with a slider over ``values``: ``draw(value)`` updates the figure to one value and returns the
    artists it changed (the same number each time, in the same order: a line's data, a marker, a title); the
    rest of the figure (axes, limits, ticks, legend) must not change, so fix the limits before the first frame.

    ``label`` names the parameter next to the slider, ``alt`` describes the figure to a screen reader,
    ``default`` is the value shown first and printed (the first of ``values`` unless given), ``value_text(value)``
    is what the control says of a value (default: ``f"{label} = {value:g}"``). The figure is closed: the notebook
    shows the returned :class:`SliderFigure`, not a second static copy. The house style's layout check
    (:func:`icllib.plotting.layout_problems`) sees the default frame of a figure made by
    :func:`icllib.plotting.figure`; the layout is then frozen for the other frames.
    """
    default_index = _check_arguments(fig, values, draw, label, alt, default)
    if value_text is None:
        value_text = lambda value: f"{label} = {_describe(value)}"  # noqa: E731
    elif not callable(value_text):
        raise ValueError(f"value_text must be a function of one value returning a str, got {value_text!r}")
    texts = [value_text(value) for value in values]
    if not all(isinstance(text, str) and text for text in texts):
        raise ValueError("value_text must return a non-empty str for each value")
    # The layout as the default frame has it, frozen: solved again per frame, it would move in the last digits,
    # and the clip paths' ids (hashes of their rectangles) with it. That draw is the one the house style's layout
    # check sees (icllib.plotting.layout_problems); the other frames differ from it only in draw's artists.
    _changed_artists(draw, values[default_index])
    fig.canvas.draw()
    fig.set_layout_engine("none")
    fixed, frames = _frame_of_axes(fig), []
    fig._icllib_placing = True
    try:
        for value in values:
            artists = _changed_artists(draw, value)
            if _frame_of_axes(fig) != fixed:
                raise ValueError(f"draw must change only the artists it returns, but at the value {value!r} a "
                                 "panel's limits moved: fix them (ax.set_xlim, ax.set_ylim) before the first frame")
            frames.append(_parts_svg(fig, artists))
        if len({len(parts) for parts in frames}) != 1:
            raise ValueError("draw must return the same number of artists for every value")
        _changed_artists(draw, values[default_index])
        shown = _figure_svg(fig)
        png = io.BytesIO()
        fig.savefig(png, format="png", dpi=PNG_DPI, metadata={"Software": None})
    finally:
        fig._icllib_placing = False
        plt.close(fig)
    prefix = "icl" + hashlib.sha256((shown + json.dumps(frames) + "".join(texts)).encode()).hexdigest()[:8]
    gids = [PART_GID.format(number) for number in range(len(frames[0]))]
    names = {name: f"{prefix}-{number}" for number, name in enumerate(sorted(
        _referenced_ids(shown + json.dumps(frames)) - set(gids)))} | {gid: f"{prefix}-{gid}" for gid in gids}
    parts = [[_with_prefix(_lighter(_compact(part), set(names)), names) for part in frame] for frame in frames]
    svg = _with_prefix(_lighter(_compact(_page_svg(shown, alt)), set(names)), names)
    (svg, *flat), classes = _style_classes([svg, *(part for frame in parts for part in frame)], prefix)
    parts = [flat[index:index + len(gids)] for index in range(0, len(flat), len(gids))]
    frame_bytes = [sum(len(part.encode()) for part in frame) for frame in parts]
    # The default frame is in the page already; the script takes it from there.
    frames_data = dict(parts=[None if index == default_index else frame for index, frame in enumerate(parts)],
                       texts=texts, gids=gids, shown=default_index)
    page = _markup(prefix, svg, frames_data, classes, label, texts, default_index)
    return SliderFigure(html=page, png=png.getvalue(), values=list(values), texts=texts, default=default_index,
                        frame_bytes=frame_bytes, alt=alt)


def _style_classes(markups: list[str], prefix: str) -> tuple[list[str], str]:
    """``markups`` with each style that recurs written once, as a class of the figure's own style sheet
    (``#prefix .cN``, which outranks the figure's defaults as the inline style did); and that style sheet."""
    counts: dict[str, int] = {}
    for markup in markups:
        for style in re.findall(r' style="([^"]*)"', markup):
            counts[style] = counts.get(style, 0) + 1
    names = {style: f"c{number}" for number, style in enumerate(style for style, count in counts.items()
                                                                if count > 1 and len(style) > 12)}
    def as_class(match):
        return f' class="{names[match.group(1)]}"' if match.group(1) in names else match.group()

    sheet = "".join(f"#{prefix} .{name}{{{style}}}" for style, name in names.items())
    return [re.sub(r' style="([^"]*)"', as_class, markup) for markup in markups], sheet


def _markup(prefix: str, svg: str, data: dict, classes: str, label: str, texts: list[str], default: int) -> str:
    """The figure's HTML: its default frame, the labelled control, the frames and the script."""
    shown = html.escape(texts[default])
    control = (f'<div class="icl-slider-control"><label for="{prefix}-input">{html.escape(label)}</label>'
               f'<input type="range" id="{prefix}-input" min="0" max="{len(texts) - 1}" step="1" value="{default}" '
               f'aria-valuetext="{shown}">'
               f'<output for="{prefix}-input" id="{prefix}-output" aria-live="polite">{shown}</output></div>')
    return (f'<div class="icl-slider" id="{prefix}"><style>{_compact(STYLE)}{classes}</style>{svg}{control}'
            f'<script type="application/json" class="icl-slider-frames">{_script_json(data)}</script>'
            f"<script>{_compact(SCRIPT.replace('ROOT', prefix))}</script></div>")
