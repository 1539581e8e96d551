"""The book's house style for figures.

Call :func:`figure` for every figure: it applies the style, sizes the figure in the book's units and
returns ``(fig, axes)``. Figures are shown inline by the notebook; nothing is saved to disk. Captions
belong to the notebook cell (myst-nb ``figure`` metadata), not to the plot.
"""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from icllib.validation import real_array

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
    return plt.subplots(nrows, ncols, figsize=size, squeeze=True, **subplot_kw)


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
