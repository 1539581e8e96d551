"""Figures for every screen (icllib.figure_screens): labels in mathtext, found on the figure's own text objects,
and the stacked variant of a multi-panel figure that a phone is served."""

import matplotlib

matplotlib.use("Agg")

import base64
import io

import numpy as np
import pytest
from PIL import Image

from icllib import figure_screens, plotting

X = np.linspace(0.0, 1.0, 5)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    matplotlib.pyplot.close("all")


@pytest.mark.parametrize("text", ["eta_Y / eta_Z", "c_{l|n}", "|u|^2", "mean |u|^2 / |w|^2", r"\alpha", "D_i(t)",
                                  "learning rate eta", "1/sqrt(d)", "steps <= 10", "$x$ and W_KQ"])
def test_tex_written_as_plain_text_is_found(text):
    assert figure_screens.ascii_tex(text)


@pytest.mark.parametrize("text", [r"$\eta_Y/\eta_Z$", r"$c_{l|n}$", r"$\|u\|^2$", "SGD step (thousands)",
                                  "10 % of the runs", "the alphabet", "layer 1, $N = 8$",
                                  r"$\alpha_3, \beta_2, \gamma_3$ trained", "Paper Fig. 4"])
def test_mathtext_and_prose_are_not_flagged(text):
    assert figure_screens.ascii_tex(text) == []


def test_an_unpaired_dollar_makes_the_whole_label_plain_text():
    assert figure_screens.plain_text_parts("cost $5 at eta_Y") == ["cost $5 at eta_Y"]
    assert figure_screens.ascii_tex("cost $5 at eta_Y")


def test_label_problems_reads_every_text_of_the_figure():
    fig, (left, right) = plotting.figure(1, 2)
    left.plot(X, X, label="eta_Y / eta_Z")
    plotting.legend(left)
    left.set_xlabel(r"$\eta_Y$ step")
    right.set_title("|u|^2")
    right.set_xticks([0.0, 1.0], labels=["W_1", "$W_2$"])
    image = right.imshow(np.eye(2))
    fig.colorbar(image, ax=right, label="c_{l|n}")
    problems = figure_screens.label_problems(fig)
    for flagged in ("eta_Y / eta_Z", "|u|^2", "W_1", "c_{l|n}"):
        assert any(f"label {flagged!r}" in problem for problem in problems), (flagged, problems)
    assert not any("$W_2$" in problem or r"\eta_Y$ step" in problem for problem in problems)
    assert all("fix: write the mathematics in mathtext" in problem for problem in problems)


def test_a_drawn_figure_records_its_labels_with_its_layout(tmp_path, monkeypatch):
    from icllib import claims

    results = tmp_path / "results.jsonl"
    monkeypatch.setenv("ICLLIB_RESULTS", str(results))
    monkeypatch.setenv("ICLLIB_CHAPTER", "demo")
    fig, ax = plotting.figure()
    ax.plot(X, X)
    ax.set_ylabel("|u|^2")
    fig.canvas.draw()
    assert any("prints TeX as plain text" in problem for problem in claims.figure_problems(results))
    ax.set_ylabel(r"$\|u\|^2$")
    fig.canvas.draw()
    assert claims.figure_problems(results) == []


def test_label_problems_needs_a_figure():
    with pytest.raises(ValueError, match="fig must be a matplotlib Figure"):
        figure_screens.label_problems("a figure")
    with pytest.raises(ValueError, match="text must be a str"):
        figure_screens.plain_text_parts(3)


def png_size(data: bytes) -> tuple[int, int]:
    return Image.open(io.BytesIO(data)).size


def test_the_stacked_variant_puts_the_panels_in_one_column_at_their_own_size():
    fig, axes = plotting.figure(1, 3)
    for ax in axes:
        ax.plot(X, X)
    twin = axes[1].twinx()
    twin.plot(X, -X)
    wide = io.BytesIO()
    fig.savefig(wide, format="png", bbox_inches="tight")
    specs = [ax.get_subplotspec() for ax in fig.axes]
    size = tuple(fig.get_size_inches())
    stacked = figure_screens.stacked_variant_png(fig)
    (wide_w, wide_h), (narrow_w, narrow_h) = png_size(wide.getvalue()), png_size(stacked)
    assert narrow_w < wide_w / 2 and narrow_h > 2.5 * wide_h
    # The figure is put back as it was: grid, size and the same picture.
    assert [ax.get_subplotspec() for ax in fig.axes] == specs and tuple(fig.get_size_inches()) == size
    again = io.BytesIO()
    fig.savefig(again, format="png", bbox_inches="tight")
    assert png_size(again.getvalue()) == (wide_w, wide_h)


def test_no_stacked_variant_for_one_column_many_panels_or_spanning_panels():
    assert figure_screens.stacked_variant_png(plotting.figure(2, 1)[0]) is None
    assert figure_screens.stacked_variant_png(plotting.figure(3, 3)[0]) is None
    fig = matplotlib.pyplot.figure()
    grid = fig.add_gridspec(2, 2)
    fig.add_subplot(grid[0, :])
    fig.add_subplot(grid[1, 0])
    assert figure_screens.stacked_variant_png(fig) is None
    with pytest.raises(ValueError, match="fig must be a matplotlib Figure"):
        figure_screens.stacked_variant_png(None)


def test_the_notebook_output_carries_the_stacked_variant_in_its_metadata():
    fig, axes = plotting.figure(1, 2)
    png, metadata = figure_screens.png_with_stacked_variant(fig)
    stacked = base64.b64decode(metadata[figure_screens.STACKED_KEY])
    assert png_size(stacked)[1] > png_size(base64.b64decode(png))[1]
    single, _ = plotting.figure()
    assert isinstance(figure_screens.png_with_stacked_variant(single), str)


def test_the_stacked_variant_is_checked_as_a_figure_of_its_own(tmp_path, monkeypatch):
    from icllib import claims

    results = tmp_path / "results.jsonl"
    monkeypatch.setenv("ICLLIB_RESULTS", str(results))
    monkeypatch.setenv("ICLLIB_CHAPTER", "demo")
    fig, axes = plotting.figure(1, 2)
    for ax in axes:
        ax.plot(X, X, label="rising")
        plotting.legend(ax)
    figure_screens.png_with_stacked_variant(fig)
    names = [line for line in results.read_text(encoding="utf-8").splitlines()]
    assert any('stacked' in line for line in names) and claims.figure_problems(results) == []
