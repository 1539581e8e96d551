import math

import numpy as np
import pytest

from icllib.validation import positive_int, positive_number


def test_positive_int_accepts_python_and_numpy_integers():
    assert positive_int("n", 3) == 3 and positive_int("n", np.int64(3)) == 3
    assert positive_int("seed", 0, minimum=0) == 0


@pytest.mark.parametrize("value", [0, -1, 2.0, True, "3", None])
def test_positive_int_rejects_and_names_the_parameter(value):
    with pytest.raises(ValueError, match=r"^batch_size must be an integer >= 1"):
        positive_int("batch_size", value)


def test_positive_number_accepts_reals_and_zero_on_request():
    assert positive_number("lr", 0.5) == 0.5 and positive_number("lr", np.float32(2)) == 2.0
    assert positive_number("noise", 0, allow_zero=True) == 0.0


@pytest.mark.parametrize("value", [0.0, -1e-9, math.nan, math.inf, "1", None, True])
def test_positive_number_rejects_and_names_the_parameter(value):
    with pytest.raises(ValueError, match=r"^eta_Y must be"):
        positive_number("eta_Y", value)
