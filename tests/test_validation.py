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


def test_shared_checks_name_the_parameter():
    import torch

    from icllib import validation as v

    assert v.even_int("D", 4) == 4 and v.power_of_two("d", 8) == 8 and v.fraction("delta", 0.1) == 0.1
    assert v.int_array("N", [1.0, 2.0]).tolist() == [1.0, 2.0] and v.one_of("mode", "a", ("a", "b")) == "a"
    generator = torch.Generator()
    assert v.torch_generator_arg("generator", generator) is generator
    bad = [(lambda: v.even_int("D", 3, why="Eq. 2"), r"^D must be even \(Eq. 2\)"),
           (lambda: v.power_of_two("d", 6), "^d must be a power of two"),
           (lambda: v.fraction("eps", 1.0), r"^eps must lie in \(0, 1\)"),
           (lambda: v.int_array("N", [0, 2]), "^N must be an integer"),
           (lambda: v.real_array("alpha", "x"), "^alpha must be a real"),
           (lambda: v.one_of("update", "x", ("plain",)), "^update must be one of"),
           (lambda: v.torch_generator_arg("generator", 0), "^generator must be a torch.Generator"),
           (lambda: v.numpy_generator_arg("rng", 0), "^rng must be a numpy.random.Generator"),
           (lambda: v.tensor_arg("W2", torch.zeros(2), shape=(2, 2)), "^W2 must be a tensor of shape"),
           (lambda: v.square_matrices("S", torch.zeros(2, 3)), "^S must be a tensor of square matrices"),
           (lambda: v.non_empty("seeds", ()), "^seeds must not be empty")]
    for call, message in bad:
        with pytest.raises(ValueError, match=message):
            call()
