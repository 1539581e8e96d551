import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from icllib import plotting


def test_figure_applies_the_house_style_and_sizes_panels():
    fig, axes = plotting.figure(1, 2)
    assert axes.shape == (2,)
    assert tuple(fig.get_size_inches()) == pytest.approx((2 * plotting.PANEL_SIZE[0], plotting.PANEL_SIZE[1]))
    assert matplotlib.rcParams["axes.spines.top"] is False
    assert matplotlib.rcParams["axes.prop_cycle"].by_key()["color"][0] == plotting.PALETTE[0]


def test_a_wide_figure_keeps_its_tick_labels_at_9_px_on_the_page():
    fig, _ = plotting.figure(1, 3)
    width_px = fig.get_size_inches()[0] * matplotlib.rcParams["figure.dpi"]
    tick_px = matplotlib.rcParams["xtick.labelsize"] / 72 * matplotlib.rcParams["figure.dpi"]
    assert tick_px * min(1.0, 768 / width_px) >= 9.0


@pytest.mark.parametrize("kwargs", [{"nrows": 0}, {"ncols": 1.5}, {"width": 12.6}, {"width": -1.0}])
def test_figure_rejects_bad_grids_and_widths(kwargs):
    with pytest.raises(ValueError, match="nrows|ncols|width"):
        plotting.figure(**kwargs)


def test_log_log_slope_recovers_a_power_law():
    x = np.array([2.0, 4.0, 8.0, 16.0])
    assert plotting.log_log_slope(x, 3 * x**2) == pytest.approx(2.0, abs=1e-12)


@pytest.mark.parametrize(("x", "y"), [([1.0], [1.0]), ([1.0, 2.0], [1.0]), ([1.0, -2.0], [1.0, 2.0])])
def test_log_log_slope_rejects_bad_input(x, y):
    with pytest.raises(ValueError):
        plotting.log_log_slope(x, y)


def test_show_table_escapes_cells_and_checks_row_lengths(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    plotting.show_table(["a", "b"], [[1, "<x>"]])
    assert "<td>1</td><td>&lt;x&gt;</td>" in shown[0].data
    with pytest.raises(ValueError, match="rows"):
        plotting.show_table(["a", "b"], [[1]])


def test_block_heatmap_is_symmetric_and_draws_block_lines():
    fig, ax = plotting.figure()
    matrix = np.arange(-6.0, 6.0).reshape(3, 4)
    image = plotting.block_heatmap(ax, matrix, 2, title="W", xlabel="key", ylabel="query")
    assert image.get_clim() == (-6.0, 6.0)
    assert len(ax.lines) == 2                     # one vertical line (column 2) and one horizontal (row 2)
    assert (ax.get_title(), ax.get_xlabel(), ax.get_ylabel()) == ("W", "key", "query")
    with pytest.raises(ValueError, match="matrix"):
        plotting.block_heatmap(ax, np.zeros(3), 2, title="", xlabel="", ylabel="")
    with pytest.raises(ValueError, match="block"):
        plotting.block_heatmap(ax, matrix, 0, title="", xlabel="", ylabel="")


# --- Figures that read: overlapping tick labels and legends over data ----------------------------------------

X = np.linspace(0.0, 1.0, 50)
FIX = "; fix: " + plotting.LEGEND_FIX


def test_a_legend_over_the_lines_is_found_and_one_in_an_empty_corner_is_not():
    fig, ax = plotting.figure()
    ax.plot(X, X, label="rising")
    ax.plot(X, 1 - X, label="falling")
    ax.legend(loc="center")
    assert plotting.layout_problems(fig) == ["panel 1: the legend covers 14 data segments or points" + FIX]
    ax.legend(loc="lower center")   # the lines cross at the centre; the bottom middle is empty
    ax.set_ylim(-0.5, 1.0)
    assert plotting.layout_problems(fig) == []


def test_a_segment_through_the_legend_counts_though_no_point_lies_inside():
    fig, ax = plotting.figure()
    ax.plot([0.0, 1.0], [0.5, 0.5], label="two points, one segment through the middle")
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.legend(loc="center")
    assert plotting.layout_problems(fig) == ["panel 1: the legend covers 1 data segments or points" + FIX]


def test_scatter_points_under_a_legend_are_found():
    fig, ax = plotting.figure()
    ax.scatter([0.5, 0.9], [0.5, 0.9], label="points")
    ax.set(xlim=(0, 1), ylim=(0, 1), title="scatter")
    ax.legend(loc="center")
    assert plotting.layout_problems(fig) == ["panel 1 ('scatter'): the legend covers 1 data segments or points" + FIX]


def test_overlapping_tick_labels_are_found():
    fig, ax = plotting.figure(width=1.5)
    ax.plot(X * 1e4, X)
    ax.set_xticks(np.arange(0, 10_001, 1000.0))
    problems = plotting.layout_problems(fig)
    assert len(problems) == 1 and problems[0].startswith("panel 1: x tick labels overlap: '0'/'1000'")
    ax.set_xticks([0.0, 10_000.0])
    assert plotting.layout_problems(fig) == []


def test_each_draw_records_the_figures_check_and_the_latest_run_of_a_chapter_counts(tmp_path, monkeypatch):
    from icllib import claims

    results = tmp_path / "results.jsonl"
    monkeypatch.setenv("ICLLIB_RESULTS", str(results))
    monkeypatch.setenv("ICLLIB_CHAPTER", "demo")
    fig, ax = plotting.figure()
    ax.plot(X, X, label="rising")
    ax.set_title("a title")
    ax.legend(loc="center")
    fig.canvas.draw()
    fig.canvas.draw()   # the same result again: recorded once
    assert claims.figure_problems(results) == [
        f"demo: figure {fig._icllib_number} ('a title'): panel 1 ('a title'): the legend covers 5 data segments or points"
        + FIX]
    assert len(results.read_text(encoding="utf-8").splitlines()) == 1
    monkeypatch.setattr(claims, "_RUN_TOKEN", "the next run of the chapter")
    ax.legend(loc="upper left")
    fig.canvas.draw()
    assert claims.figure_problems(results) == []


def test_layout_problems_needs_a_figure():
    with pytest.raises(ValueError, match="fig must be a matplotlib Figure"):
        plotting.layout_problems("a figure")


def test_legend_sits_beside_the_panel_whatever_the_data():
    fig, ax = plotting.figure()
    for level in np.linspace(0, 1, 12):     # horizontal lines everywhere: no clear place inside
        ax.plot(X, np.full_like(X, level), label=f"{level:.2f}")
    placed = plotting.legend(ax, ncols=2)
    fig.draw_without_rendering()
    assert placed.get_window_extent().x0 > ax.get_window_extent().x1
    assert plotting.robust_layout_problems(fig) == []


def test_a_shared_legend_below_the_figure_reads_and_is_made_once():
    fig, (left, right) = plotting.figure(1, 2)
    for ax in (left, right):
        ax.plot(X, X, label="rising")
        ax.plot(X, 1 - X, label="falling")
    placed = plotting.legend(left, where="below")
    fig.draw_without_rendering()
    assert placed.get_window_extent().y1 < min(ax.get_window_extent().y0 for ax in (left, right))
    assert plotting.robust_layout_problems(fig) == []
    with pytest.raises(ValueError, match="has it already"):
        plotting.legend(right, where="below")


def test_legend_chooses_the_place_itself():
    _, ax = plotting.figure()
    with pytest.raises(ValueError, match="legend_kw must not set loc"):
        plotting.legend(ax, loc="upper left")
    with pytest.raises(ValueError, match="where must be one of"):
        plotting.legend(ax, where="best")


def test_a_legend_placed_by_the_data_is_a_problem_though_it_covers_nothing():
    fig, ax = plotting.figure()
    ax.plot(X, X, label="rising")
    ax.legend(loc="best")
    assert plotting.layout_problems(fig) == [
        "panel 1: the legend is placed by loc='best', which follows the data's last digits" + FIX]


def test_a_legend_over_another_panel_is_a_problem():
    fig, (left, right) = plotting.figure(1, 2, width=6.0)
    fig.set_layout_engine("none")   # constrained layout would make room for the legend
    left.plot(X, X, label="rising")
    left.legend(loc="center left", bbox_to_anchor=(1.2, 0.5))
    assert plotting.layout_problems(fig) == ["panel 1: the legend overlaps panel 2" + FIX]


def test_a_legend_that_misses_the_data_by_a_hair_fails_once_the_data_move():
    """Points 0.02 px outside the legend's box: clear as drawn, covered when the data move by a relative 1e-3."""
    fig, ax = plotting.figure()
    ax.set(xlim=(0, 1), ylim=(0, 1))
    ax.plot([0.0], [0.0], label="a line")
    placed = ax.legend(loc="center")
    fig.draw_without_rendering()
    box = placed.get_window_extent().padded(-2)
    edge = np.column_stack([np.linspace(box.x0 + 5, box.x1 - 5, 40), np.full(40, box.y1 + 0.02)])
    ax.scatter(*ax.transData.inverted().transform(edge).T)
    assert plotting.layout_problems(fig) == []
    moved = plotting.perturbed_layout_problems(fig, 1e-3)
    assert len(moved) == 1 and "the legend covers" in moved[0]
    assert plotting.layout_problems(fig) == []   # the figure is put back as it was
    assert plotting.robust_layout_problems(fig)[0].endswith("(with the data moved by a relative 0.001)")


def test_the_perturbation_puts_data_and_limits_back(tmp_path):
    fig, ax = plotting.figure()
    ax.plot(X, X ** 2, label="square")
    ax.set_yscale("log")
    before = (ax.lines[0].get_xydata().copy(), ax.get_xlim(), ax.get_ylim(), ax.get_autoscaley_on())
    plotting.perturbed_layout_problems(fig, 1e-3)
    after = (ax.lines[0].get_xydata(), ax.get_xlim(), ax.get_ylim(), ax.get_autoscaley_on())
    assert np.array_equal(before[0], after[0]) and before[1:] == after[1:]
    with pytest.raises(ValueError, match="relative"):
        plotting.perturbed_layout_problems(fig, 0.5)


def test_the_check_at_each_draw_leaves_the_saved_picture_whole():
    """The perturbed checks run inside the draw that renders the figure; they must not clear its pixels."""
    from io import BytesIO

    from PIL import Image

    fig, ax = plotting.figure()
    ax.plot(X, X, label="rising")
    plotting.legend(ax)
    picture = BytesIO()
    fig.savefig(picture, format="png")
    assert Image.open(picture).convert("L").getextrema() == (0, 255)   # not one blank colour
    assert fig._icllib_layout_problems == []


def test_no_chapter_or_module_places_a_legend_by_itself():
    """Every legend goes through plotting.legend, which never asks matplotlib to find room in the data."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    sources = [*root.joinpath("notebooks").glob("*.py"), *root.joinpath("src", "icllib").rglob("*.py")]
    direct = [f"{path.relative_to(root)}:{number}" for path in sources if path.name != "plotting.py"
              for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
              if re.search(r"\.legend\(|loc=[\"']best", line)]
    assert not direct, f"legends placed outside icllib.plotting.legend: {direct}"
