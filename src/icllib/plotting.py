"""The book's house style for figures.

Call :func:`figure` for every figure: it applies the style, sizes the figure in the book's units and
returns ``(fig, axes)``; place legends with :func:`legend`, beside a panel or below the figure, never where
matplotlib finds room in today's data. Figures are shown inline by the notebook; nothing is saved to disk.
Captions belong to the notebook cell (myst-nb ``figure`` metadata), not to the plot.

Every figure made by :func:`figure` is checked each time it is drawn (:func:`layout_problems`: overlapping
tick labels, a legend over data, over a panel or placed by the data) and the result recorded with the
chapter's claims, on the figure as drawn and with its data moved by a relative 1e-6 and 1e-3
(:func:`robust_layout_problems`); the notebook tests fail and the book build warns on a figure that does not
read, on this CPU or on one whose last digits differ.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg
import numpy as np

from icllib import figure_screens
from icllib.validation import positive_number, real_array

# Colour-blind-safe qualitative palette (Okabe and Ito), in the order the series are drawn.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")

# One panel is 4.2 x 3.2 inches; wider figures tile panels.
PANEL_SIZE = (4.2, 3.2)
# The site shows a figure at most 768 px wide (its column at 1400 px). A figure of width w inches is shrunk by
# 768 / (110 w) when wider, so 9-point tick labels (13.75 px at 110 dpi) stay at 9 px or more on the page
# only up to w = 768 / 110 * 13.75 / 9 = 10.7 inches: no figure is wider than this.
MAX_WIDTH = 10.5

HOUSE_STYLE = {
    "figure.dpi": 110,
    "savefig.dpi": 110,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8.5,
    "legend.frameon": False,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.25,
    "lines.linewidth": 1.6,
    "image.cmap": "viridis",
    "axes.prop_cycle": mpl.cycler(color=PALETTE),
    "figure.constrained_layout.use": True,
}


def use_house_style() -> None:
    """Apply the house style to matplotlib's global settings."""
    mpl.rcParams.update(HOUSE_STYLE)


def figure(nrows: int = 1, ncols: int = 1, *, width: float | None = None, height: float | None = None,
           **subplot_kw):
    """A new figure in the house style with ``nrows x ncols`` panels; returns ``(fig, axes)``.

    ``axes`` is a single Axes for one panel, else a NumPy array of shape ``(nrows, ncols)`` flattened
    when one of them is 1 (as ``plt.subplots`` does). The width is ``ncols`` panels, at most ``MAX_WIDTH``
    inches, so that tick labels are at least 9 px on the page.
    """
    for name, value in (("nrows", nrows), ("ncols", ncols)):
        if not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if width is not None and not 0 < width <= MAX_WIDTH:
        raise ValueError(f"width must be in (0, {MAX_WIDTH}] inches (wider figures shrink their tick labels "
                         f"below 9 px on the page), got {width!r}")
    use_house_style()
    size = (width or min(PANEL_SIZE[0] * ncols, MAX_WIDTH), height or PANEL_SIZE[1] * nrows)
    fig, axes = plt.subplots(nrows, ncols, figsize=size, squeeze=True, **subplot_kw)
    global _figures_made
    _figures_made += 1
    fig._icllib_number = _figures_made
    fig.canvas.mpl_connect("draw_event", _check_layout_when_drawn)
    figure_screens.offer_stacked_variants()
    return fig, axes


_figures_made = 0   # in this process (a chapter's kernel): names a figure in the layout records


def _check_layout_when_drawn(event) -> None:
    """Record :func:`layout_problems` and the labels' :func:`icllib.figure_screens.label_problems` each time the
    notebook draws the figure with a new result; its stacked variant for phones is a figure of its own here."""
    from icllib.claims import record_figure_check

    fig = event.canvas.figure
    if getattr(fig, "_icllib_placing", False):
        return
    variant = getattr(fig, "_icllib_variant", "")
    attribute = f"_icllib_{variant}_layout_problems" if variant else "_icllib_layout_problems"
    problems = robust_layout_problems(fig, event.renderer)
    if not variant:   # a variant shows the same labels
        problems += figure_screens.label_problems(fig)
    if problems != getattr(fig, attribute, None):
        setattr(fig, attribute, problems)
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        record_figure_check(f"{fig._icllib_number}{f' {variant}' if variant else ''} ("
                            + (", ".join(map(repr, titles[:4])) or "no panel titles") + ")", problems)


# --- Figures that read: no overlapping tick labels, no legend over data ------------------------------------

def _visible_tick_labels(axis) -> list:
    """The tick labels an axis draws: visible, non-empty, at a tick inside the view."""
    low, high = sorted(axis.get_view_interval())
    slack = 1e-9 * max(abs(low), abs(high), 1.0)
    index = 0 if axis.axis_name == "x" else 1
    labels = []
    for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
        label = tick.label1
        location = tick.get_loc()
        if (label.get_visible() and label.get_text().strip() and tick.get_visible() and location is not None
                and low - slack <= location <= high + slack):
            labels.append((label.get_position()[index], label))
    return [label for _, label in sorted(labels, key=lambda pair: pair[0])]


def _segments_cross_box(points: np.ndarray, box) -> int:
    """How many of the segments between consecutive ``points`` (display coordinates, NaN breaks a line) pass
    through ``box`` (Liang-Barsky clipping, vectorised)."""
    if len(points) == 1:
        return int(box.contains(*points[0]))
    start, delta = points[:-1], np.diff(points, axis=0)
    keep = np.isfinite(start).all(1) & np.isfinite(delta).all(1)
    start, delta = start[keep], delta[keep]
    p = np.stack([-delta[:, 0], delta[:, 0], -delta[:, 1], delta[:, 1]], axis=1)
    q = np.stack([start[:, 0] - box.x0, box.x1 - start[:, 0], start[:, 1] - box.y0, box.y1 - start[:, 1]], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = q / p
    parallel_outside = ((p == 0) & (q < 0)).any(1)
    enter = np.where(p < 0, ratio, -np.inf).max(1, initial=0.0)
    leave = np.where(p > 0, ratio, np.inf).min(1, initial=1.0)
    return int(np.sum(~parallel_outside & (enter <= leave)))


# What each problem asks the author to do, named in the message a failing chapter or build prints.
LEGEND_FIX = "place it outside the data with icllib.plotting.legend(ax, where='right' or 'below')"
TICKS_FIX = "fewer ticks (ax.locator_params(axis=..., nbins=...)) or a wider panel"


def layout_problems(fig, renderer=None) -> list[str]:
    """What makes a drawn figure hard to read, each with its fix: tick labels of one axis that overlap each other;
    a legend over data (a segment or marker of a plotted line, or a scatter point, inside the legend's box), over
    another panel or past the figure's edge; a legend whose place matplotlib finds from the data (``loc="best"``),
    which moves when the data's last digits do.

    Measured on the figure as last drawn (``renderer``: that draw's; default: the figure's canvas draws it).
    Shaded bands and images are not data here: a legend may sit on a band's lighter fill.
    """
    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if renderer is None:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    problems = []
    for number, ax in enumerate(fig.axes, start=1):
        if not ax.get_visible():
            continue
        panel = f"panel {number}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        for axis in (ax.xaxis, ax.yaxis):
            boxes = [(label.get_text(), label.get_window_extent(renderer).shrunk(0.95, 0.95))
                     for label in _visible_tick_labels(axis)]
            clashes = [f"{a!r}/{b!r}" for (a, box_a), (b, box_b) in zip(boxes, boxes[1:]) if box_a.overlaps(box_b)]
            if clashes:
                problems.append(f"{panel}: {axis.axis_name} tick labels overlap: {', '.join(clashes[:3])}; "
                                f"fix: {TICKS_FIX}")
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            problems += [f"{panel}: {problem}" for problem in _legend_problems(legend, ax, panels, fig, renderer)]
    for legend in fig.legends:
        if legend.get_visible():
            problems += [f"figure legend: {problem}"
                         for problem in _legend_problems(legend, None, panels, fig, renderer)]
    return problems


def _legend_problems(legend, ax, panels, fig, renderer) -> list[str]:
    """What is wrong with one legend (``ax``: the panel it belongs to, None for a figure legend)."""
    problems = []
    if legend._loc == 0:   # matplotlib's code for loc="best"
        problems.append(f"the legend is placed by loc='best', which follows the data's last digits; fix: {LEGEND_FIX}")
    box = legend.get_window_extent(renderer).padded(-2)
    covered = sum(_data_under_box(panel, box) for panel in panels)
    if covered:
        problems.append(f"the legend covers {covered} data segments or points; fix: {LEGEND_FIX}")
    overlapped = [number for number, panel in enumerate(fig.axes, start=1)
                  if panel is not ax and panel in panels and box.overlaps(panel.get_window_extent(renderer))]
    if overlapped:
        problems.append(f"the legend overlaps panel {', '.join(map(str, overlapped))}; fix: {LEGEND_FIX}")
    if not fig.bbox.padded(1).contains(box.x0, box.y0) or not fig.bbox.padded(1).contains(box.x1, box.y1):
        problems.append("the legend runs past the figure's edge; fix: fewer columns (ncols) or a wider figure")
    return problems


def _data_under_box(ax, box) -> int:
    """Segments and markers of ``ax``'s lines and scatter points inside ``box`` (display coordinates), counting
    only the part of ``box`` inside the panel: data outside a panel's limits is clipped, not drawn."""
    box = mpl.transforms.Bbox.intersection(box, ax.bbox)
    if box is None or box.width <= 0 or box.height <= 0:
        return 0
    covered = 0
    for line in ax.get_lines():
        data = line.get_xydata()
        if line.get_visible() and len(data):
            points = line.get_transform().transform(data)
            drawn = line.get_linestyle() not in ("None", "none", "", " ")
            covered += (_segments_cross_box(points, box) if drawn
                        else int(np.sum([box.contains(*point) for point in points])))
    for collection in ax.collections:
        if isinstance(collection, mpl.collections.PathCollection) and collection.get_visible():
            offsets = collection.get_offset_transform().transform(collection.get_offsets())
            covered += int(np.sum((offsets[:, 0] > box.x0) & (offsets[:, 0] < box.x1)
                                  & (offsets[:, 1] > box.y0) & (offsets[:, 1] < box.y1)))
    return covered


# --- The same rule on nearby data: a figure must read whatever the CPU's last digits ------------------------

# The relative changes a figure's data must survive: rounding level, and the spread of float32 results across
# PyTorch's CPU kernels (benchmarks/capabilities.md) with a wide margin.
PERTURBATIONS = (1e-6, 1e-3)
# The pattern of the moves is fixed, so that a figure's check gives the same answer on every run.
PERTURBATION_PATTERN = 20261127


def perturbed_layout_problems(fig, relative: float) -> list[str]:
    """:func:`layout_problems` of ``fig`` with every plotted value (lines, scatter points) and every autoscaled
    axis limit moved by up to ``relative`` of its size, in a fixed pseudo-random pattern; the figure is put back
    as it was afterwards. A figure whose check passes only at today's exact values hangs on the last digits."""
    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    relative = positive_number("relative", relative)
    if not relative < 0.1:
        raise ValueError(f"relative must be in (0, 0.1), got {relative!r}")
    rng = np.random.default_rng(PERTURBATION_PATTERN)

    def nudge(values):
        values = np.asarray(values, dtype=float)
        return values * (1 + relative * rng.uniform(-1, 1, values.shape))

    saved = []
    for ax in fig.axes:
        lines = [(line, line.get_xydata().copy()) for line in ax.get_lines()]
        scatters = [(c, np.array(c.get_offsets(), dtype=float)) for c in ax.collections
                    if isinstance(c, mpl.collections.PathCollection)]
        limits = (ax.get_xlim(), ax.get_ylim(), ax.get_autoscalex_on(), ax.get_autoscaley_on())
        saved.append((ax, lines, scatters, limits))
        for line, data in lines:
            line.set_data(*nudge(data).T)
        for collection, offsets in scatters:
            if len(offsets):
                collection.set_offsets(nudge(offsets))
        if limits[2]:
            ax.set_xlim(*_nudged_limits(ax.xaxis, limits[0], relative, rng), auto=None)
        if limits[3]:
            ax.set_ylim(*_nudged_limits(ax.yaxis, limits[1], relative, rng), auto=None)
    # Drawn on a canvas of its own: this runs inside the draw that renders the figure for the page, whose pixels
    # another draw on the figure's own canvas would clear before they are saved.
    shown_on = fig.canvas
    scratch = FigureCanvasAgg(fig)
    fig._icllib_placing = True   # these draws are not the figure as shown: record nothing
    try:
        scratch.draw()
        return layout_problems(fig, scratch.get_renderer())
    finally:
        for ax, lines, scatters, (xlim, ylim, auto_x, auto_y) in saved:
            for line, data in lines:
                line.set_data(*data.T)
            for collection, offsets in scatters:
                collection.set_offsets(offsets)
            ax.set_xlim(*xlim, auto=auto_x)
            ax.set_ylim(*ylim, auto=auto_y)
        fig.set_canvas(shown_on)
        fig._icllib_placing = False


def _nudged_limits(axis, limits, relative: float, rng) -> tuple[float, float]:
    """``limits`` moved by up to ``relative`` of their span, measured on the axis's own scale (log or linear)."""
    forward, inverse = axis.get_transform().transform, axis.get_transform().inverted().transform
    low, high = forward(np.array([[limits[0]], [limits[1]]], dtype=float)).ravel()
    span = high - low
    moved = np.array([low, high]) + relative * span * rng.uniform(-1, 1, 2)
    return tuple(float(value) for value in inverse(moved.reshape(2, 1)).ravel())


def robust_layout_problems(fig, renderer=None) -> list[str]:
    """:func:`layout_problems` of the figure as drawn, then of the figure under each of ``PERTURBATIONS``
    (each problem found there once, named with the perturbation)."""
    problems = layout_problems(fig, renderer)
    for relative in PERTURBATIONS:
        problems += [f"{problem} (with the data moved by a relative {relative:g})"
                     for problem in perturbed_layout_problems(fig, relative)
                     if problem not in problems]
    return problems


WHERE = ("right", "below")


def legend(ax, where: str = "right", **legend_kw):
    """The legend of ``ax``'s labelled artists, at a place no data can reach: ``where="right"`` beside the panel
    (outside its axes, top-aligned), ``where="below"`` under the whole figure, centred, as the figure's one shared
    legend (for panels that draw the same series). Returns the legend.

    The place is the author's choice, never found from the data: a legend that matplotlib places where it sees
    room today (``loc="best"``) moves onto a curve when a CPU's last digits move the curve.
    """
    if not isinstance(ax, mpl.axes.Axes):
        raise ValueError(f"ax must be a matplotlib Axes (from icllib.plotting.figure), got {type(ax).__name__}")
    if where not in WHERE:
        raise ValueError(f"where must be one of {', '.join(map(repr, WHERE))}, got {where!r}")
    if "loc" in legend_kw or "bbox_to_anchor" in legend_kw:
        raise ValueError("legend_kw must not set loc or bbox_to_anchor: legend() places the legend by where=")
    if where == "right":
        return ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **legend_kw)
    fig = ax.figure
    if any(getattr(placed, "_icllib_below", False) for placed in fig.legends):
        raise ValueError("where='below' is the figure's one shared legend, and this figure has it already")
    handles, labels = ax.get_legend_handles_labels()
    legend_kw.setdefault("ncols", min(len(labels), 4) or 1)
    placed = fig.legend(handles, labels, loc="outside lower center", **legend_kw)
    placed._icllib_below = True
    return placed


def show_table(header, rows) -> None:
    """Display a table in the notebook as HTML.

    The book renders Markdown outputs as CommonMark, which has no tables; HTML renders both in Jupyter
    and in the book. Cells are shown with ``str`` and escaped.
    """
    from html import escape

    from IPython.display import HTML, display

    if isinstance(header, (str, np.ndarray)) or not isinstance(header, (list, tuple)) or not header:
        raise ValueError(f"header must be a non-empty list of column titles, got {header!r}")
    if not isinstance(rows, (list, tuple)) or not all(isinstance(row, (list, tuple)) for row in rows):
        raise ValueError(f"rows must be a list of rows (lists), got {rows!r}")
    header = list(header)
    rows = [list(row) for row in rows]
    if any(len(row) != len(header) for row in rows):
        raise ValueError(f"rows must each have {len(header)} cells, like header")

    def cells(tag, values):
        return "".join(f"<{tag}>{escape(str(value))}</{tag}>" for value in values)

    body = "".join(f"<tr>{cells('td', row)}</tr>" for row in rows)
    display(HTML(f"<table><thead><tr>{cells('th', header)}</tr></thead><tbody>{body}</tbody></table>"))


def log_log_slope(x, y) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (for scaling laws); inputs must be positive."""
    x, y = real_array("x", x), real_array("y", y)
    if x.shape != y.shape or x.ndim != 1 or x.size < 2:
        raise ValueError(f"x and y must be 1-d arrays of the same length >= 2, got {x.shape} and {y.shape}")
    if np.any(x <= 0) or np.any(y <= 0):
        raise ValueError("x and y must be positive for a log-log slope")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def block_heatmap(ax, matrix, block: int, *, title: str, xlabel: str, ylabel: str, colorbar: bool = True):
    """Draw ``matrix`` as a heat map on a symmetric diverging scale (0 is white), with lines between its
    ``block x block`` sub-blocks: the picture of weights in a block basis (e.g. App. C of Musat 2025)."""
    if not isinstance(ax, mpl.axes.Axes):
        raise TypeError(f"ax must be a matplotlib Axes (from icllib.plotting.figure), got {type(ax).__name__}")
    for name, label in (("title", title), ("xlabel", xlabel), ("ylabel", ylabel)):
        if not isinstance(label, str):
            raise TypeError(f"{name} must be a str, got {type(label).__name__}")
    values = real_array("matrix", matrix)
    if values.ndim != 2:
        raise ValueError(f"matrix must be 2-dimensional, got shape {values.shape}")
    if not isinstance(block, (int, np.integer)) or block < 1:
        raise ValueError(f"block must be a positive integer, got {block!r}")
    scale = float(np.abs(values).max()) or 1.0
    image = ax.imshow(values, cmap="RdBu_r", vmin=-scale, vmax=scale, interpolation="nearest", aspect="auto")
    ax.grid(False)
    for edge in range(block, values.shape[1], block):
        ax.axvline(edge - 0.5, color="black", lw=0.5)
    for edge in range(block, values.shape[0], block):
        ax.axhline(edge - 0.5, color="black", lw=0.5)
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.7, label="weight")
    return image
