"""icllib.plotting_interactive: a slider over precomputed frames (issue 39)."""

import json
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from icllib import plotting
from icllib.plotting_interactive import PART_GID, SliderFigure, slider_figure

X = np.linspace(0.0, 1.0, 50)


@pytest.fixture(autouse=True)
def close_figures():
    """Each test's figures closed after it, a refused one's too: pyplot keeps them, and more than 20 open in one
    worker turn its warning into an error (pyproject's filterwarnings)."""
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def sine_figure():
    """A figure with fixed limits and one line whose frequency the slider moves, and its draw function."""
    fig, ax = plotting.figure()
    (line,) = ax.plot(X, np.sin(X), label="sine")
    ax.set(xlim=(0, 1), ylim=(-1.1, 1.1), xlabel="x", ylabel="y")
    title = ax.set_title("k = 1")

    def draw(k):
        line.set_ydata(np.sin(k * X))
        title.set_text(f"k = {k}")
        return [line, title]

    return fig, draw


def frames_of(made: SliderFigure) -> dict:
    found = re.search(r'<script type="application/json" class="icl-slider-frames">(.*?)</script>', made.html, re.S)
    return json.loads(found.group(1))


def test_the_bundle_carries_the_control_the_default_frame_and_a_png():
    fig, draw = sine_figure()
    made = slider_figure(fig, [1, 2, 4, 8], draw, label="frequency k", alt="A sine wave whose frequency moves",
                         default=2)
    bundle = made._repr_mimebundle_()
    assert bundle["image/png"].startswith(b"\x89PNG")
    page = bundle["text/html"]
    assert '<input type="range"' in page and 'min="0" max="3"' in page and 'value="1"' in page
    assert re.search(r'<label for="([^"]+)">frequency k</label>', page)
    assert 'aria-valuetext="frequency k = 2"' in page and ">frequency k = 2</output>" in page
    # the default frame is plain markup in the page: the title of k = 2 is drawn before any script runs
    svg = page[page.index("<svg"):page.index("</svg>")]
    assert ">k = 2</text>" in svg and 'role="img"' in svg
    assert frames_of(made)["texts"] == [f"frequency k = {k}" for k in (1, 2, 4, 8)]


def test_only_the_changing_artists_are_stored_per_frame():
    fig, draw = sine_figure()
    made = slider_figure(fig, [1, 2, 4], draw, label="k", alt="A sine wave whose frequency moves")
    data = frames_of(made)
    assert data["gids"] == [PART_GID.format(0), PART_GID.format(1)]
    assert len(data["parts"]) == 3 and all(len(parts) == 2 for parts in data["parts"][1:])
    assert ">k = 4</text>" in data["parts"][2][1] and data["parts"][0] is None
    assert data["parts"][1][0] != data["parts"][2][0]
    # the axes (tick labels) are in the page once, not in the frames
    assert ">0.50</text>" in made.html   # a tick label of y: drawn once, in the page
    assert not any(">0.50</text>" in part for parts in data["parts"][1:] for part in parts)
    assert max(made.frame_bytes) < len(made.html) / 3


def test_a_frame_drawn_alone_is_the_markup_of_the_whole_figure_at_that_value():
    from icllib.plotting_interactive import _changed_artists, _compact, _figure_svg, _parts_svg, _split_parts

    fig, draw = sine_figure()
    artists = _changed_artists(draw, 4)
    fig.canvas.draw()
    fig.set_layout_engine("none")   # as slider_figure freezes it
    alone = [_compact(part) for part in _parts_svg(fig, artists)]
    assert alone == [_compact(part) for part in _split_parts(_figure_svg(fig), len(artists))]


def test_the_default_frame_is_stored_once_in_the_page_and_not_among_the_frames():
    fig, draw = sine_figure()
    made = slider_figure(fig, [1, 2, 4], draw, label="k", alt="A sine wave whose frequency moves", default=4)
    data = frames_of(made)
    assert data["shown"] == 2 and data["parts"][2] is None and all(data["parts"][:2])
    assert ">k = 4</text>" in made.html[made.html.index("<svg"):made.html.index("</svg>")]


def test_the_markup_is_deterministic_themed_and_self_contained():
    pages = []
    for _ in range(2):
        fig, draw = sine_figure()
        pages.append(slider_figure(fig, [1, 3], draw, label="k", alt="A sine wave whose frequency moves").html)
    assert pages[0] == pages[1]
    page = pages[0]
    assert "#000000" not in page.replace("#000000)", "")    # black only as the fallback of the theme's colour
    assert "var(--pst-color-text-base" in page and "var(--pst-color-background" in page
    assert not re.search(r"(src|href)=\"(https?:)?//", page)
    assert "<?xml" not in page and "<metadata>" not in page and "Date" not in page
    # the frames' JSON cannot end its <script> element early
    body = re.search(r'class="icl-slider-frames">(.*?)</script>', page, re.S).group(1)
    assert "</" not in body and "<!--" not in body


def test_two_figures_on_a_page_share_no_id():
    fig, draw = sine_figure()
    first = slider_figure(fig, [1, 3], draw, label="k", alt="A sine wave whose frequency moves")
    fig, draw = sine_figure()
    second = slider_figure(fig, [1, 5], draw, label="k", alt="A sine wave whose frequency moves")
    ids = lambda page: set(re.findall(r'\bid="([^"]+)"', page))  # noqa: E731
    assert ids(first.html) and not ids(first.html) & ids(second.html)


def test_a_figure_whose_axes_move_between_frames_is_refused():
    fig, ax = plotting.figure()
    (line,) = ax.plot(X, X)

    def draw(scale):
        line.set_ydata(scale * X)
        ax.relim()
        ax.autoscale_view()
        return [line]

    with pytest.raises(ValueError, match="draw must change only the artists it returns.*limits moved"):
        slider_figure(fig, [1, 100], draw, label="scale", alt="A line whose slope moves with the slider")


@pytest.mark.parametrize("change, parameter", [
    (dict(fig="not a figure"), "fig"),
    (dict(values=[1]), "values"),
    (dict(values="12"), "values"),
    (dict(values=[1, 1]), "values"),
    (dict(draw=42), "draw"),
    (dict(label=""), "label"),
    (dict(alt="a figure"), "alt"),
    (dict(default=7), "default"),
    (dict(value_text="k"), "value_text"),
    (dict(value_text=lambda value: ""), "value_text"),
])
def test_bad_input_raises_a_value_error_naming_the_parameter(change, parameter):
    fig, draw = sine_figure()
    arguments = dict(fig=fig, values=[1, 2], draw=draw, label="k", alt="A sine wave whose frequency moves")
    arguments.update(change)
    with pytest.raises(ValueError, match=f"^{parameter} "):
        slider_figure(arguments.pop("fig"), arguments.pop("values"), arguments.pop("draw"), **arguments)


def test_a_draw_that_returns_no_artists_is_refused():
    fig, _ = plotting.figure()
    with pytest.raises(ValueError, match="^draw must return"):
        slider_figure(fig, [1, 2], lambda value: None, label="k", alt="A figure that draws nothing at all")
