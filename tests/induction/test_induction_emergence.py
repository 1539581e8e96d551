"""Unit tests of icllib.induction.emergence (the flow of App. B.5, its times and bounds, GD, the large-N limits)
and of the closed forms of App. B.3-B.4 in icllib.induction.model that the flow integrates; bad input."""

import math

import numpy as np
import pytest
import torch

from icllib.induction import model as ic
from icllib.induction import emergence as ie
from icllib.config import torch_generator

torch.set_num_threads(1)


def test_full_matrix_step_moves_pseudo_parameters_at_rate_lr_over_D():
    X, y = ic.orthonormal_task(2, 8, generator=torch_generator(3))
    moved = ie.full_matrix_step(0.2, 0.5, 0.9, X, y, lr=3.0)
    predicted = np.array([0.2, 0.5, 0.9]) - 3.0 / 8 * np.array(ic.three_param_grad(0.2, 0.5, 0.9, 2))
    assert np.allclose(moved, predicted, atol=1e-13)


# --- closed forms -----------------------------------------------------------------------------------


def _loss_literal(alpha, beta, gamma, N):
    """B.3 typed as printed, for comparison with the overflow-free evaluation."""
    s = math.exp(beta * math.exp(alpha) / (math.exp(alpha) + 2 * N - 2))
    return gamma**2 * (s**2 + 2 * N - 1) / (s + 2 * N - 1) ** 2 - 2 * gamma * s / (s + 2 * N - 1) + 1


def test_loss_matches_the_printed_formula_and_known_values():
    for alpha, beta, gamma, N in [(0.0, 0.0, 1.0, 4), (1.0, 2.0, 1.0, 4), (-0.5, 3.0, 0.7, 1), (2.0, 5.0, 1.2, 9)]:
        assert float(ic.three_param_loss(alpha, beta, gamma, N)) == pytest.approx(
            _loss_literal(alpha, beta, gamma, N), rel=1e-13)
    assert float(ic.three_param_loss(0, 0, 0, 7)) == 1.0
    assert float(ic.three_param_loss(0, 0, 1, 7)) == pytest.approx(1 - 1 / 14, abs=1e-15)


def test_gradient_matches_finite_differences_and_broadcasts():
    point, h = np.array([0.3, 1.7, 0.8]), 1e-6
    for N in (1, 2, 10):
        grad = np.array(ic.three_param_grad(*point, N))
        for k in range(3):
            step = np.zeros(3)
            step[k] = h
            numeric = (ic.three_param_loss(*(point + step), N) - ic.three_param_loss(*(point - step), N)) / (2 * h)
            assert grad[k] == pytest.approx(float(numeric), abs=1e-8)
    grads = ic.three_param_grad(np.zeros(4), np.zeros(4), np.zeros(4), np.array([1, 2, 3, 4]))
    assert all(g.shape == (4,) for g in grads)
    assert np.allclose(grads[2], -1 / np.array([1, 2, 3, 4]))    # gamma-dot(0) = 1/N


def test_closed_forms_do_not_overflow_for_large_parameters():
    loss = ic.three_param_loss(800.0, 900.0, 1.0, 16)
    grads = ic.three_param_grad(800.0, 900.0, 1.0, 16)
    assert np.isfinite(loss) and all(np.isfinite(g) for g in grads)
    assert float(loss) == pytest.approx(0.0, abs=1e-12)


def test_flow_is_minus_the_gradient():
    state = np.array([[0.1, 0.4], [0.2, 1.0], [0.3, 0.9]])
    assert np.allclose(ie.three_param_flow(state, 5), -np.stack(ic.three_param_grad(*state, 5)))


# --- integration ------------------------------------------------------------------------------------


def test_emergence_times_small_N_and_the_phase_one_solution():
    times = ie.emergence_times(8)
    assert times["gamma"] < times["beta"] < times["alpha"]
    # gamma = 1 - exp(-t/N) up to O(1/N^2) corrections in phase 1
    assert times["gamma"] / 8 == pytest.approx(math.log(2), rel=5e-3)
    assert math.isinf(ie.emergence_times(1)["alpha"])
    assert ie.emergence_times(8, thresholds=(0.1, 0.1, 0.5))["alpha"] < times["alpha"]


def test_loss_drop_time_is_after_emergence_and_near_sqrt_2pi_N2():
    N = 64
    drop = ie.loss_drop_time(N)
    assert drop > ie.emergence_times(N)["alpha"]
    assert drop / N**2 == pytest.approx(math.sqrt(2 * math.pi), rel=0.03)
    assert ie.loss_drop_time(N, level=0.9) < drop


def test_flow_trajectory_is_consistent_with_the_emergence_time():
    times = ie.emergence_times(4)
    t, alpha, beta, gamma, loss = ie.flow_trajectory(4, times["beta"], num=3)
    assert beta[-1] == pytest.approx(0.5, abs=1e-8)
    assert loss[0] == 1.0 and t[-1] == times["beta"]


def test_proof_bounds_hold_for_a_small_N():
    bounds = ie.proof_bounds(4, num=2001)
    assert 0.5 <= bounds["N*gammadot phase1 min"] and bounds["N*gammadot phase1 max"] <= 1 + 1e-12
    assert bounds["gamma max phase2"] <= 1.5 and bounds["alphadot/betadot max phase2"] < 1
    assert bounds["8N^2*alphadot min phase3"] > 1 and bounds["beta(T_alpha)"] < 5.45


def test_gradient_descent_follows_the_flow_and_diverges_with_a_large_step():
    steps, diverged = ie.gradient_descent_times([16], eta=0.05, thresholds=(0.1, 0.1, 0.5))
    flow = ie.emergence_times(16, thresholds=(0.1, 0.1, 0.5))
    assert not diverged[0]
    assert steps[0, 0] * 0.05 == pytest.approx(flow["alpha"], rel=1e-3)
    _, diverged = ie.gradient_descent_times([2, 64], eta=100.0)
    assert diverged.tolist() == [True, False]


def test_gradient_descent_stops_each_run_at_its_thresholds():
    # N = 512 reaches the thresholds with eta = 100 but would blow up later (after the loss drop); it must
    # not be flagged because the run for N = 2048 takes longer (about 36 000 steps).
    steps, diverged = ie.gradient_descent_times([512, 2048], eta=100.0)
    assert diverged.tolist() == [False, False]
    assert np.all(np.isfinite(steps))


def test_emergence_asymptotics_values():
    limits = ie.emergence_asymptotics()
    assert limits["T_gamma/N"] == pytest.approx(math.log(2), abs=1e-15)
    assert limits["T_beta/N^2"] == pytest.approx(0.9598504379, abs=1e-9)
    assert limits["T_alpha/N^2"] == pytest.approx(1.7112487838, abs=1e-9)
    assert limits["loss_drop/N^2"] == pytest.approx(math.sqrt(2 * math.pi), abs=1e-15)


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("N", [0, -3, 2.5, True, "4", None])
def test_bad_N_raises(N):
    with pytest.raises(ValueError, match="N"):
        ie.emergence_times(N)
    with pytest.raises(ValueError, match="N"):
        ie.loss_drop_time(N)
    with pytest.raises(ValueError, match="N"):
        ic.three_param_loss(0.0, 0.0, 0.0, N)
    with pytest.raises(ValueError, match="N"):
        ic.three_param_grad(0.0, 0.0, 0.0, N)


@pytest.mark.parametrize("thresholds", [(0.0, 0.5, 0.5), (0.5, -1, 0.5), (0.5, 0.5, math.inf),
                                        (0.5, math.nan, 0.5), (0.5, 0.5), "abc", 3])
def test_bad_thresholds_raise(thresholds):
    with pytest.raises(ValueError, match="thresholds"):
        ie.emergence_times(4, thresholds=thresholds)
    with pytest.raises(ValueError, match="thresholds"):
        ie.emergence_asymptotics(thresholds=thresholds)


def test_other_bad_input_raises():
    with pytest.raises(ValueError, match="level"):
        ie.loss_drop_time(4, level=1.5)
    with pytest.raises(ValueError, match="level"):
        ie.loss_drop_time(4, level=0)
    with pytest.raises(ValueError, match="alpha"):
        ic.three_param_loss(math.nan, 0.0, 0.0, 2)
    with pytest.raises(ValueError, match="gamma"):
        ic.three_param_grad(0.0, 0.0, "x", 2)
    with pytest.raises(ValueError, match="state"):
        ie.three_param_flow(np.zeros(2), 3)
    with pytest.raises(ValueError, match="D"):
        ic.orthonormal_task(3, 4, generator=torch_generator(0))
    with pytest.raises(ValueError, match="D"):
        ic.rotation_M(5)
    with pytest.raises(ValueError, match="q"):
        ic.orthonormal_task(3, 6, generator=torch_generator(0), q=4)
    with pytest.raises(ValueError, match="generator"):
        ic.orthonormal_task(3, 6, generator=0)
    with pytest.raises(ValueError, match="S"):
        ic.causal_softmax(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="W2"):
        ic.disentangled_forward(torch.zeros(3, 4), torch.zeros(4, 4), torch.zeros(3, 3), torch.zeros(16, 2))
    with pytest.raises(ValueError, match="coeffs"):
        ic.structured_weights((1, 2), 4)
    with pytest.raises(ValueError, match="coeffs"):
        ic.structured_weights({"alpha_3": 1.0}, 4)
    with pytest.raises(ValueError, match="D"):
        ic.structured_weights({}, 5)
    with pytest.raises(ValueError, match="D"):
        ic.sample_icl_batch(5, 2, 3, generator=torch_generator(0))
    with pytest.raises(ValueError, match="N"):
        ic.sample_icl_batch(4, 0, 3, generator=torch_generator(0))
    with pytest.raises(ValueError, match="batch_size"):
        ic.sample_icl_batch(4, 2, 0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="D"):
        ic.sample_icl_batch(4, 3, 2, generator=torch_generator(0), orthonormal=True)
    with pytest.raises(ValueError, match="generator"):
        ic.sample_icl_batch(4, 2, 3, generator=0)
    with pytest.raises(ValueError, match="eta"):
        ie.gradient_descent_times([2], eta=-1.0)
    with pytest.raises(ValueError, match="Ns"):
        ie.gradient_descent_times([], eta=1.0)
    with pytest.raises(ValueError, match="t_end"):
        ie.flow_trajectory(2, 0.0)
    with pytest.raises(ValueError, match="N"):
        ie.proof_bounds(1)
    with pytest.raises(ValueError, match="lr"):
        ie.full_matrix_step(0.0, 0.0, 0.0, torch.zeros(3, 4), torch.zeros(2), lr=0)
    with pytest.raises(ValueError, match="thresholds"):
        ie.emergence_asymptotics(thresholds=(0.5, 0.5, 1.0))


# --- the chapter's bookkeeping (issue 24) ----------------------------------------------------------------


def test_richardson_removes_a_one_over_n_term():
    n = np.array([32.0, 64.0])
    assert ie.richardson(2.0 + 3.0 / n) == pytest.approx(2.0, abs=1e-12)
    with pytest.raises(ValueError, match="values"):
        ie.richardson([1.0])


def test_tables_have_one_row_per_quantity_and_a_column_per_n():
    times = {N: ie.crossing_times(N) for N in (4, 8)}
    header, rows = ie.crossing_table(times, [4, 8])
    assert len(header) == 9 and [row[0] for row in rows] == [4, 8]
    assert float(rows[1][5]) == pytest.approx(times[8]["gamma"] / 8, abs=1e-4)
    bounds = {N: ie.proof_bounds(N, num=401) for N in (4, 8)}
    header, rows = ie.bounds_table(bounds, [4, 8])
    assert header[-1] == "margin" and len(rows) == len(ie.PAPER_BOUNDS)
    assert all(row[-1] == "-" or float(row[-1]) >= 0 for row in rows)  # every bound holds
    with pytest.raises(ValueError, match="times"):
        ie.crossing_table(times, [16])


def test_worst_over_n_takes_the_minimum_of_a_lower_bound_and_the_maximum_of_an_upper_one():
    bounds = {
        4: {key: 1.0 for key in ie.PAPER_BOUNDS} | {"8N^2*alphadot min phase3": 2.0, "beta(T_alpha)": 3.0},
        8: {key: 1.0 for key in ie.PAPER_BOUNDS} | {"8N^2*alphadot min phase3": 1.5, "beta(T_alpha)": 4.0},
    }
    worst = ie.worst_over_n(bounds, [4, 8])
    assert worst["8N^2*alphadot min phase3"] == 1.5 and worst["beta(T_alpha)"] == 4.0
    assert "N*alpha(T_gamma)" not in worst  # an order O(1) has no worst side
    assert ie.worst_over_n(bounds, [4])["beta(T_alpha)"] == 3.0
    with pytest.raises(ValueError, match="bounds"):
        ie.worst_over_n(bounds, [16])


def test_checks_name_registered_claims_and_fill_their_reasons():
    from icllib.claims import registry

    claims = registry().claims
    assert all(claim_id in claims for claim_id in ie.CHECKS)
    args = ie.check_args("induction_emergence.proof-sketch-alpha-rate", ratio=0.5, first=4, last=64)
    assert args["lower"] == 0.5 and "0.50 over N = 4 to 64" in args["why"]
    assert ie.CHECKS["induction_emergence.b62-small-at-tgamma"]["expected"] == (math.log(2) - 0.5) / 2
    with pytest.raises(ValueError, match="claim_id"):
        ie.check_args("induction_emergence.no-such-check")
