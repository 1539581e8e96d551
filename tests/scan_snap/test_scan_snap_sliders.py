"""icllib.scan_snap.sliders: the figures with a slider of the chapters scan_snap and scan_snap_lemmas (issue 39)."""

import numpy as np
import pytest

from icllib.plotting_interactive import SliderFigure
from icllib.scan_snap import dynamics, lemmas, sliders


def _scan_solution():
    """Two classes sharing one query token, one common and two distinct tokens each, and logits that lower the
    common token at a steady rate: the attention over time without integrating Eq. 10."""
    P = dynamics.one_query_probabilities([0.4], [1.0, 3.0], 2)
    t = np.geomspace(1.0, 1e4, 9)
    z = np.zeros((t.size, P.shape[1]))
    z[:, 0] = -0.5 * np.log(t)
    return P, t, z


def test_attention_over_time_frames_say_the_common_tokens_share():
    P, t, z = _scan_solution()
    made = sliders.attention_over_time_slider(P, t, z, t0=50.0, frames=3)
    assert isinstance(made, SliderFigure) and len(made.values) == 3 and made.default == 0
    assert made.values == [0, 4, 8]   # the first, the middle and the last time on the log scale
    for index, text in zip(made.values, made.texts):
        c = P[0] * np.exp(z[index])
        share = c[0] / c.sum()
        assert text.startswith(f"t = {t[index]:.3g}: the common tokens hold {share:.2f}"), text
    assert made.html.count('class="icl-slider"') == 1 and max(made.frame_bytes) < 5_000


@pytest.mark.parametrize(("change", "name"), [
    (lambda P, t, z: (P[:1], t, z), "P"),
    (lambda P, t, z: (P, t[::-1], z), "t"),
    (lambda P, t, z: (P, -t, z), "t"),
    (lambda P, t, z: (P, t, z[:-1]), "z"),
    (lambda P, t, z: (P, t, np.full_like(z, np.nan)), "z"),
])
def test_attention_over_time_names_a_bad_argument(change, name):
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        sliders.attention_over_time_slider(*change(*_scan_solution()), t0=50.0)


@pytest.mark.parametrize(("keywords", "name"), [({"t0": -1.0}, "t0"), ({"t0": 50.0, "frames": 1}, "frames")])
def test_attention_over_time_names_a_bad_keyword(keywords, name):
    with pytest.raises(ValueError, match=name):
        sliders.attention_over_time_slider(*_scan_solution(), **keywords)


def test_speed_control_frames_quote_the_chapters_ratios():
    made = sliders.speed_control_slider(K=10, eta_Y=1.0, M_values=(1000, 100))
    assert made.values == [100, 1000] and made.default == 0
    ratios = lemmas.speed_control_ratios(10, 1.0, (100, 1000))
    for text, lemma9, printed in zip(made.texts, ratios.phase2_by_M, ratios.printed_by_M):
        assert f"{lemma9.max():.2f} times Lemma 9's form and {printed.max():.2f} times the printed" in text
    assert made.html.count('class="icl-slider"') == 1 and max(made.frame_bytes) < 5_000


@pytest.mark.parametrize(("keywords", "name"), [
    ({"K": 0, "eta_Y": 1.0}, "K"), ({"K": 10, "eta_Y": -1.0}, "eta_Y"),
    ({"K": 10, "eta_Y": 1.0, "M_values": (100, 100)}, "M_values"),
    ({"K": 10, "eta_Y": 1.0, "M_values": (2, 100)}, "M_values"),
])
def test_speed_control_names_a_bad_argument(keywords, name):
    with pytest.raises(ValueError, match=name):
        sliders.speed_control_slider(**keywords)
