"""Unit tests of icllib.induction: the Eq. 1 model, the closed forms of App. B.3-B.5, the flow, bad input."""

import math

import numpy as np
import pytest
import torch

from icllib import induction as ih
from icllib.config import torch_generator

torch.set_num_threads(1)


# --- the task and the model -------------------------------------------------------------------------


def test_rotation_M_is_a_symmetric_involution_with_zero_trace():
    M = ih.rotation_M(8)
    assert torch.equal(M, M.T)
    assert torch.equal(M @ M, torch.eye(8, dtype=torch.float64))
    assert float(torch.trace(M)) == 0.0


def test_orthonormal_task_satisfies_assumptions_7_and_8():
    N, D = 3, 8
    X, y = ih.orthonormal_task(N, D, generator=torch_generator(0))
    assert X.shape == (2 * N + 1, 2 * D) and y.shape == (D,)
    content = torch.cat([X[0:2 * N:2, :D], X[1:2 * N:2, :D]])    # a_1..a_N, b_1..b_N
    positions = torch.cat([X[0:2 * N:2, D:], X[1:2 * N:2, D:]])  # p_1..p_N, p_1 M..p_N M
    eye = torch.eye(2 * N, dtype=torch.float64)
    assert torch.allclose(content @ content.T, eye, atol=1e-12)
    assert torch.allclose(positions @ positions.T, eye, atol=1e-12)
    assert torch.equal(X[-1, :D], X[2 * N - 2, :D]) and torch.equal(y, X[2 * N - 1, :D])  # q = N
    assert torch.all(X[-1, D:] == 0)


def test_sample_icl_batch_shapes_and_query():
    X, y = ih.sample_icl_batch(6, 4, 5, generator=torch_generator(1))
    assert X.shape == (5, 9, 12) and y.shape == (5, 6) and X.dtype == torch.float64
    for k in range(5):
        # the query repeats one item's content, and the target is that item's label
        matches = [i for i in range(4) if torch.equal(X[k, -1, :6], X[k, 2 * i, :6])]
        assert len(matches) == 1 and torch.equal(y[k], X[k, 2 * matches[0] + 1, :6])
    assert torch.all(X[:, -1, 6:] == 0)                       # the query has no position
    M = ih.rotation_M(6)
    assert torch.equal(X[:, 1:8:2, 6:], X[:, 0:8:2, 6:] @ M)  # labels carry p_i M


def test_sample_icl_batch_orthonormal_and_query_last():
    N, D = 3, 8
    X, y = ih.sample_icl_batch(D, N, 4, generator=torch_generator(2), orthonormal=True, query_last=True)
    eye = torch.eye(2 * N, dtype=torch.float64)
    for k in range(4):
        content = torch.cat([X[k, 0:2 * N:2, :D], X[k, 1:2 * N:2, :D]])
        positions = torch.cat([X[k, 0:2 * N:2, D:], X[k, 1:2 * N:2, D:]])
        assert torch.allclose(content @ content.T, eye, atol=1e-12)
        assert torch.allclose(positions @ positions.T, eye, atol=1e-12)
    assert torch.equal(X[:, -1, :D], X[:, 2 * N - 2, :D]) and torch.equal(y, X[:, 2 * N - 1, :D])
    single, target = ih.orthonormal_task(N, D, generator=torch_generator(2))
    first, first_target = ih.sample_icl_batch(D, N, 1, generator=torch_generator(2), orthonormal=True,
                                              query_last=True)
    assert torch.equal(single, first[0]) and torch.equal(target, first_target[0])


def test_query_is_uniform_over_the_items():
    X, y = ih.sample_icl_batch(4, 3, 3000, generator=torch_generator(3))
    index = torch.stack([(X[:, -1, :4] == X[:, 2 * i, :4]).all(-1) for i in range(3)], dim=1).double().argmax(1)
    counts = torch.bincount(index, minlength=3).double() / 3000
    assert torch.allclose(counts, torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.04)  # 4 sigma = 0.034


def test_strict_mask_excludes_self_and_zeroes_the_first_row():
    weights = ih.causal_softmax(torch.zeros(4, 4, dtype=torch.float64))
    expected = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0]],
                            dtype=torch.float64)
    assert torch.allclose(weights, expected)
    ordinary = ih.causal_softmax(torch.zeros(3, 3, dtype=torch.float64), strict=False)
    assert torch.allclose(ordinary[0], torch.tensor([1.0, 0, 0], dtype=torch.float64))


def test_structured_weights_shapes_and_coordinates():
    W1, W2, W3 = ih.induction_weights(0.3, -0.7, 1.1, 6)
    assert W1.shape == (12, 12) and W2.shape == (24, 24) and W3.shape == (48, 6)
    assert np.allclose(ih.induction_coordinates(W1, W2, W3), (0.3, -0.7, 1.1), atol=1e-15)
    full = ih.structured_weights({name: k + 1.0 for k, name in enumerate(ih.PSEUDO_PARAMETERS)}, 4)
    assert sum(W.numel() for W in full) == 28 * 4**2
    assert ih.pseudo_params(*full) == pytest.approx({name: k + 1.0 for k, name in enumerate(ih.PSEUDO_PARAMETERS)},
                                                    abs=1e-14)


@pytest.mark.parametrize("N, D", [(1, 2), (2, 4), (3, 8), (5, 10)])
def test_full_model_matches_closed_forms(N, D):
    X, y = ih.orthonormal_task(N, D, generator=torch_generator(N))
    for alpha, beta, gamma in [(0.0, 0.0, 0.0), (0.4, 1.3, -0.8), (-1.5, 2.5, 2.0)]:
        loss, grad = ih.full_model_loss_and_grad(alpha, beta, gamma, X, y)
        assert loss == pytest.approx(float(ih.three_param_loss(alpha, beta, gamma, N)), abs=1e-12)
        assert np.allclose(grad, ih.three_param_grad(alpha, beta, gamma, N), atol=1e-12)


def test_the_ordinary_mask_breaks_the_closed_form():
    X, y = ih.orthonormal_task(3, 6, generator=torch_generator(2))
    loss, _ = ih.full_model_loss_and_grad(0.5, 1.0, 1.0, X, y, strict=False)
    assert abs(loss - float(ih.three_param_loss(0.5, 1.0, 1.0, 3))) > 1e-3


def test_full_matrix_step_moves_pseudo_parameters_at_rate_lr_over_D():
    X, y = ih.orthonormal_task(2, 8, generator=torch_generator(3))
    moved = ih.full_matrix_step(0.2, 0.5, 0.9, X, y, lr=3.0)
    predicted = np.array([0.2, 0.5, 0.9]) - 3.0 / 8 * np.array(ih.three_param_grad(0.2, 0.5, 0.9, 2))
    assert np.allclose(moved, predicted, atol=1e-13)


# --- closed forms -----------------------------------------------------------------------------------


def _loss_literal(alpha, beta, gamma, N):
    """B.3 typed as printed, for comparison with the overflow-free evaluation."""
    s = math.exp(beta * math.exp(alpha) / (math.exp(alpha) + 2 * N - 2))
    return gamma**2 * (s**2 + 2 * N - 1) / (s + 2 * N - 1) ** 2 - 2 * gamma * s / (s + 2 * N - 1) + 1


def test_loss_matches_the_printed_formula_and_known_values():
    for alpha, beta, gamma, N in [(0.0, 0.0, 1.0, 4), (1.0, 2.0, 1.0, 4), (-0.5, 3.0, 0.7, 1), (2.0, 5.0, 1.2, 9)]:
        assert float(ih.three_param_loss(alpha, beta, gamma, N)) == pytest.approx(
            _loss_literal(alpha, beta, gamma, N), rel=1e-13)
    assert float(ih.three_param_loss(0, 0, 0, 7)) == 1.0
    assert float(ih.three_param_loss(0, 0, 1, 7)) == pytest.approx(1 - 1 / 14, abs=1e-15)


def test_gradient_matches_finite_differences_and_broadcasts():
    point, h = np.array([0.3, 1.7, 0.8]), 1e-6
    for N in (1, 2, 10):
        grad = np.array(ih.three_param_grad(*point, N))
        for k in range(3):
            step = np.zeros(3)
            step[k] = h
            numeric = (ih.three_param_loss(*(point + step), N) - ih.three_param_loss(*(point - step), N)) / (2 * h)
            assert grad[k] == pytest.approx(float(numeric), abs=1e-8)
    grads = ih.three_param_grad(np.zeros(4), np.zeros(4), np.zeros(4), np.array([1, 2, 3, 4]))
    assert all(g.shape == (4,) for g in grads)
    assert np.allclose(grads[2], -1 / np.array([1, 2, 3, 4]))    # gamma-dot(0) = 1/N


def test_closed_forms_do_not_overflow_for_large_parameters():
    loss = ih.three_param_loss(800.0, 900.0, 1.0, 16)
    grads = ih.three_param_grad(800.0, 900.0, 1.0, 16)
    assert np.isfinite(loss) and all(np.isfinite(g) for g in grads)
    assert float(loss) == pytest.approx(0.0, abs=1e-12)


def test_flow_is_minus_the_gradient():
    state = np.array([[0.1, 0.4], [0.2, 1.0], [0.3, 0.9]])
    assert np.allclose(ih.three_param_flow(state, 5), -np.stack(ih.three_param_grad(*state, 5)))


# --- integration ------------------------------------------------------------------------------------


def test_emergence_times_small_N_and_the_phase_one_solution():
    times = ih.emergence_times(8)
    assert times["gamma"] < times["beta"] < times["alpha"]
    # gamma = 1 - exp(-t/N) up to O(1/N^2) corrections in phase 1
    assert times["gamma"] / 8 == pytest.approx(math.log(2), rel=5e-3)
    assert math.isinf(ih.emergence_times(1)["alpha"])
    assert ih.emergence_times(8, thresholds=(0.1, 0.1, 0.5))["alpha"] < times["alpha"]


def test_loss_drop_time_is_after_emergence_and_near_sqrt_2pi_N2():
    N = 64
    drop = ih.loss_drop_time(N)
    assert drop > ih.emergence_times(N)["alpha"]
    assert drop / N**2 == pytest.approx(math.sqrt(2 * math.pi), rel=0.03)
    assert ih.loss_drop_time(N, level=0.9) < drop


def test_flow_trajectory_is_consistent_with_the_emergence_time():
    times = ih.emergence_times(4)
    t, alpha, beta, gamma, loss = ih.flow_trajectory(4, times["beta"], num=3)
    assert beta[-1] == pytest.approx(0.5, abs=1e-8)
    assert loss[0] == 1.0 and t[-1] == times["beta"]


def test_proof_bounds_hold_for_a_small_N():
    bounds = ih.proof_bounds(4, num=2001)
    assert 0.5 <= bounds["N*gammadot phase1 min"] and bounds["N*gammadot phase1 max"] <= 1 + 1e-12
    assert bounds["gamma max phase2"] <= 1.5 and bounds["alphadot/betadot max phase2"] < 1
    assert bounds["8N^2*alphadot min phase3"] > 1 and bounds["beta(T_alpha)"] < 5.45


def test_gradient_descent_follows_the_flow_and_diverges_with_a_large_step():
    steps, diverged = ih.gradient_descent_times([16], 0.05, thresholds=(0.1, 0.1, 0.5))
    flow = ih.emergence_times(16, thresholds=(0.1, 0.1, 0.5))
    assert not diverged[0]
    assert steps[0, 0] * 0.05 == pytest.approx(flow["alpha"], rel=1e-3)
    _, diverged = ih.gradient_descent_times([2, 64], 100.0)
    assert diverged.tolist() == [True, False]


def test_gradient_descent_stops_each_run_at_its_thresholds():
    # N = 512 reaches the thresholds with eta = 100 but would blow up later (after the loss drop); it must
    # not be flagged because the run for N = 2048 takes longer (about 36 000 steps).
    steps, diverged = ih.gradient_descent_times([512, 2048], 100.0)
    assert diverged.tolist() == [False, False]
    assert np.all(np.isfinite(steps))


def test_emergence_asymptotics_values():
    limits = ih.emergence_asymptotics()
    assert limits["T_gamma/N"] == pytest.approx(math.log(2), abs=1e-15)
    assert limits["T_beta/N^2"] == pytest.approx(0.9598504379, abs=1e-9)
    assert limits["T_alpha/N^2"] == pytest.approx(1.7112487838, abs=1e-9)
    assert limits["loss_drop/N^2"] == pytest.approx(math.sqrt(2 * math.pi), abs=1e-15)


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("N", [0, -3, 2.5, True, "4", None])
def test_bad_N_raises(N):
    with pytest.raises(ValueError, match="N"):
        ih.emergence_times(N)
    with pytest.raises(ValueError, match="N"):
        ih.loss_drop_time(N)
    with pytest.raises(ValueError, match="N"):
        ih.three_param_loss(0.0, 0.0, 0.0, N)
    with pytest.raises(ValueError, match="N"):
        ih.three_param_grad(0.0, 0.0, 0.0, N)


@pytest.mark.parametrize("thresholds", [(0.0, 0.5, 0.5), (0.5, -1, 0.5), (0.5, 0.5, math.inf),
                                        (0.5, math.nan, 0.5), (0.5, 0.5), "abc", 3])
def test_bad_thresholds_raise(thresholds):
    with pytest.raises(ValueError, match="thresholds"):
        ih.emergence_times(4, thresholds=thresholds)
    with pytest.raises(ValueError, match="thresholds"):
        ih.emergence_asymptotics(thresholds)


def test_other_bad_input_raises():
    with pytest.raises(ValueError, match="level"):
        ih.loss_drop_time(4, level=1.5)
    with pytest.raises(ValueError, match="level"):
        ih.loss_drop_time(4, level=0)
    with pytest.raises(ValueError, match="alpha"):
        ih.three_param_loss(math.nan, 0.0, 0.0, 2)
    with pytest.raises(ValueError, match="gamma"):
        ih.three_param_grad(0.0, 0.0, "x", 2)
    with pytest.raises(ValueError, match="state"):
        ih.three_param_flow(np.zeros(2), 3)
    with pytest.raises(ValueError, match="D"):
        ih.orthonormal_task(3, 4, generator=torch_generator(0))
    with pytest.raises(ValueError, match="D"):
        ih.rotation_M(5)
    with pytest.raises(ValueError, match="q"):
        ih.orthonormal_task(3, 6, generator=torch_generator(0), q=4)
    with pytest.raises(ValueError, match="generator"):
        ih.orthonormal_task(3, 6, generator=0)
    with pytest.raises(ValueError, match="S"):
        ih.causal_softmax(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="W2"):
        ih.disentangled_forward(torch.zeros(3, 4), torch.zeros(4, 4), torch.zeros(3, 3), torch.zeros(16, 2))
    with pytest.raises(ValueError, match="coeffs"):
        ih.structured_weights((1, 2), 4)
    with pytest.raises(ValueError, match="coeffs"):
        ih.structured_weights({"alpha_3": 1.0}, 4)
    with pytest.raises(ValueError, match="D"):
        ih.structured_weights({}, 5)
    with pytest.raises(ValueError, match="D"):
        ih.sample_icl_batch(5, 2, 3, generator=torch_generator(0))
    with pytest.raises(ValueError, match="N"):
        ih.sample_icl_batch(4, 0, 3, generator=torch_generator(0))
    with pytest.raises(ValueError, match="batch_size"):
        ih.sample_icl_batch(4, 2, 0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="D"):
        ih.sample_icl_batch(4, 3, 2, generator=torch_generator(0), orthonormal=True)
    with pytest.raises(ValueError, match="generator"):
        ih.sample_icl_batch(4, 2, 3, generator=0)
    with pytest.raises(ValueError, match="eta"):
        ih.gradient_descent_times([2], -1.0)
    with pytest.raises(ValueError, match="Ns"):
        ih.gradient_descent_times([], 1.0)
    with pytest.raises(ValueError, match="t_end"):
        ih.flow_trajectory(2, 0.0)
    with pytest.raises(ValueError, match="N"):
        ih.proof_bounds(1)
    with pytest.raises(ValueError, match="lr"):
        ih.full_matrix_step(0.0, 0.0, 0.0, torch.zeros(3, 4), torch.zeros(2), lr=0)
    with pytest.raises(ValueError, match="thresholds"):
        ih.emergence_asymptotics((0.5, 0.5, 1.0))
