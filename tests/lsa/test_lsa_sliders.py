"""icllib.lsa.sliders: the figure with a slider of the chapter lsa (issue 39)."""

import re

import numpy as np
import pytest

from icllib.lsa import sliders
from icllib.lsa import theory as lsat

LAM = np.diag([0.5, 1.0, 2.0])


def test_training_length_frames_end_at_theorem41s_predictor():
    made = sliders.training_length_slider(LAM, generator=np.random.default_rng(7), N_values=(20, 5), default=5)
    assert made.values == [5, 20] and made.default == 0
    for N, text in zip(made.values, made.texts):
        smallest = 0.5 / ((1 + 1 / N) * 0.5 + np.trace(LAM) / N)   # lambda_min times Gamma^-1's eigenvalue
        found = re.search(r"trained predictor is ([0-9.]+) of 1/λ; loss ([0-9.e+-]+)", text)
        assert found and float(found.group(1)) == pytest.approx(smallest, abs=0.006), text
        assert float(found.group(2)) == pytest.approx(lsat.minimum_loss(LAM, N), rel=1e-3), text
    assert made.html.count('class="icl-slider"') == 1 and max(made.frame_bytes) < 5_000


@pytest.mark.parametrize(("keywords", "name"), [
    ({"generator": None}, "generator"), ({"scale": -1.0}, "scale"), ({"T": 0.0}, "T"),
    ({"N_values": (15,)}, "N_values"), ({"N_values": (0, 15)}, "N_values"), ({"default": 7}, "default"),
])
def test_training_length_names_a_bad_argument(keywords, name):
    arguments = {"generator": np.random.default_rng(7)} | keywords
    with pytest.raises(ValueError, match=name):
        sliders.training_length_slider(LAM, **arguments)


def test_training_length_names_a_bad_covariance():
    with pytest.raises(ValueError, match="Lam"):
        sliders.training_length_slider(-LAM, generator=np.random.default_rng(7))
