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
