"""icllib.induction.sliders: the standard transformer's attention recorded during training, and its figure."""

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from icllib.config import torch_generator
from icllib.induction import sliders
from icllib.induction import subspace as isp

torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def test_the_recorder_keeps_the_attention_at_its_steps_and_changes_no_number_of_the_run():
    plain_model, plain_losses = isp.train_standard(8, steps=4, batch=4, generator=torch_generator(23))
    record, snapshots = sliders.attention_recorder([2, 4])
    model, losses = isp.train_standard(8, steps=4, batch=4, generator=torch_generator(23), on_step=record)
    assert np.array_equal(losses, plain_losses)
    assert sorted(snapshots) == [2, 4]
    assert torch.equal(snapshots[4], model.previous_position_attention())
    assert torch.equal(snapshots[4], plain_model.previous_position_attention())
    assert not torch.equal(snapshots[2], snapshots[4])


def test_the_figure_has_a_frame_per_snapshot_and_says_each_steps_loss():
    losses = np.linspace(3.5, 0.5, 6)
    snapshots = {step: torch.eye(4) * (step + 1) / 7 for step in (0, 3, 6)}
    made = sliders.standard_attention_slider(losses, snapshots, D=8)
    assert made.values == [0, 3, 6] and made.default == 2
    assert made.texts == ["step 0: the initialisation", "step 3: loss 2.30", "step 6: loss 0.50"]
    assert len(made.frame_bytes) == 3 and made.png.startswith(b"\x89PNG")


@pytest.mark.parametrize("call, name", [
    (lambda: sliders.attention_recorder([]), "steps"),
    (lambda: sliders.attention_recorder([0]), "steps"),
    (lambda: sliders.standard_attention_slider([1.0], {0: torch.eye(2), 1: torch.eye(2)}, D=8), "losses"),
    (lambda: sliders.standard_attention_slider([1.0, 2.0], {0: torch.eye(2)}, D=8), "snapshots"),
    (lambda: sliders.standard_attention_slider([1.0, 2.0], {0: torch.eye(2), 5: torch.eye(2)}, D=8), "snapshots"),
    (lambda: sliders.standard_attention_slider([1.0, 2.0], {0: torch.eye(2), 1: torch.eye(2)}, D=0), "D"),
    (lambda: isp.train_standard(8, steps=1, batch=1, generator=torch_generator(0), on_step="every step"), "on_step"),
])
def test_bad_input_raises_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()
