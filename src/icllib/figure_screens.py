"""Figures for every screen: a stacked variant of a multi-panel figure for phones, and labels in mathtext.

A figure of ``icllib.plotting.figure`` with panels side by side shrinks to a third of its size in a phone's column,
its labels to 3-4 px. When a notebook shows such a figure, :func:`png_with_stacked_variant` draws it twice: as laid
out, and with its panels in one column at the same size each (:func:`stacked_variant_png`); the second rides in the
output's metadata (``{"image/png": {"stacked": <base64 PNG>}}``, which Jupyter ignores), and the book serves it to
narrow screens (``_ext/figure_pages.py``).

The mathematics of a figure is written as in the prose, in mathtext (``$\\eta_Y/\\eta_Z$``): a label that prints
TeX as ASCII (``eta_Y / eta_Z``, ``c_{l|n}``, ``|u|^2``) is a problem (:func:`label_problems`), which the figure's
check records when it is drawn (``icllib.plotting``), so that the notebook tests fail on it.
"""

from __future__ import annotations

import base64
import io
import re

import matplotlib as mpl

# A figure of more panels than this keeps one layout: stacked, it would be several phone screens tall (its page
# offers it full size instead).
MAX_STACKED_PANELS = 6
# The metadata key of the stacked variant in a notebook output's ``image/png`` metadata.
STACKED_KEY = "stacked"

# TeX written as plain text: a sub- or superscript (``x_i``, ``|u|^2``, ``c_{l|n}``), a command (``\\alpha``), a Greek
# letter spelled out as a word, a square root as a function call, a comparison typed with two characters.
ASCII_TEX = {
    "a subscript": re.compile(r"\w+_(?:\{[^}]*\}?|\w+)"),
    "a superscript": re.compile(r"[\w|)\]]+\^(?:\{[^}]*\}?|-?\w+)"),
    "a TeX command": re.compile(r"\\[A-Za-z]+"),
    "a Greek letter spelled out": re.compile(
        r"\b(?:alpha|beta|gamma|delta|epsilon|eta|theta|lambda|mu|sigma|tau|phi|chi|psi|omega|Lambda|Sigma|Delta)"
        r"\b"),
    "a square root spelled out": re.compile(r"\bsqrt\b"),
    "a comparison typed as two characters": re.compile(r"<=|>=|!="),
}
LABEL_FIX = "write the mathematics in mathtext, as in the prose (e.g. '$\\eta_Y/\\eta_Z$', '$\\|u\\|^2$')"


def plain_text_parts(text: str) -> list[str]:
    """The parts of a matplotlib text that it prints as plain text: outside pairs of unescaped ``$`` (all of it
    when the ``$`` do not pair up, as matplotlib does)."""
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    parts = re.split(r"(?<!\\)\$", text)
    if len(parts) % 2 == 0:   # an odd number of dollars: matplotlib prints the whole text as it is
        return [text]
    return parts[0::2]


def ascii_tex(text: str) -> list[str]:
    """What in ``text`` is TeX printed as plain text, e.g. ``["a subscript: 'eta_Y'"]``; empty when none."""
    found = []
    for part in plain_text_parts(text):
        for what, pattern in ASCII_TEX.items():
            found += [f"{what}: {match.group(0)!r}" for match in pattern.finditer(part)
                      if f"{what}: {match.group(0)!r}" not in found]
    return found


def label_problems(fig) -> list[str]:
    """Each visible text of ``fig`` (titles, axis labels, tick labels, legends, colour bars, annotations) that prints
    TeX as plain text, with the fix."""
    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    problems = []
    for text in fig.findobj(mpl.text.Text):
        content = text.get_text()
        if not text.get_visible() or not content.strip():
            continue
        found = ascii_tex(content)
        if found and f"label {content!r}" not in " ".join(problems):
            problems.append(f"label {content!r} prints TeX as plain text ({'; '.join(found)}); fix: {LABEL_FIX}")
    return problems


def _stacking_plan(fig):
    """``(grid, rows, columns)`` of a figure whose panels are the cells of one grid of two or more columns and at
    most ``MAX_STACKED_PANELS`` cells, each panel one cell; None for any other figure."""
    specs = [ax.get_subplotspec() for ax in fig.axes]
    specs = [spec for spec in specs if spec is not None]
    if not specs:
        return None
    grid = specs[0].get_gridspec()
    rows, columns = grid.get_geometry()
    if columns < 2 or rows * columns > MAX_STACKED_PANELS:
        return None
    if any(spec.get_gridspec() is not grid or spec.num1 != spec.num2 for spec in specs):
        return None
    return grid, rows, columns


def stacked_variant_png(fig) -> bytes | None:
    """``fig`` drawn with its panels in one column, in reading order (row by row), each panel the size it has in
    ``fig``, as PNG bytes; None for a figure of one column, of more than ``MAX_STACKED_PANELS`` panels, or with
    a panel spanning cells. Twin axes and colour bars follow their panel; the figure is put back as it was."""
    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    plan = _stacking_plan(fig)
    if plan is None:
        return None
    _, rows, columns = plan
    saved_specs = [(ax, ax.get_subplotspec()) for ax in fig.axes if ax.get_subplotspec() is not None]
    saved_size = fig.get_size_inches().copy()
    stacked = mpl.gridspec.GridSpec(rows * columns, 1, figure=fig)
    try:
        for ax, spec in saved_specs:
            ax.set_subplotspec(stacked[spec.num1])
        fig.set_size_inches(saved_size[0] / columns, saved_size[1] / rows * rows * columns)
        fig._icllib_variant = "stacked"
        buffer = io.BytesIO()
        # As the notebook's inline backend saves a figure (bbox_inches="tight"), at the house style's dpi.
        fig.savefig(buffer, format="png", bbox_inches="tight")
        return buffer.getvalue()
    finally:
        for ax, spec in saved_specs:
            ax.set_subplotspec(spec)
        fig.set_size_inches(saved_size)
        fig._icllib_variant = ""


def png_with_stacked_variant(fig):
    """IPython's ``image/png`` formatter for a figure: its PNG (base64, as the inline backend shows it) and, for a
    figure of ``icllib.plotting.figure`` with a stacked variant, the metadata that carries it."""
    from IPython.core.pylabtools import print_figure

    if not isinstance(fig, mpl.figure.Figure):
        raise ValueError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if not fig.axes:
        return None
    png = print_figure(fig, "png", base64=True, bbox_inches="tight")
    stacked = stacked_variant_png(fig) if hasattr(fig, "_icllib_number") else None
    if stacked is None:
        return png
    return png, {STACKED_KEY: base64.b64encode(stacked).decode("ascii")}


def offer_stacked_variants() -> None:
    """In an IPython kernel, show figures through :func:`png_with_stacked_variant`; elsewhere nothing."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(mpl.figure.Figure, png_with_stacked_variant)
