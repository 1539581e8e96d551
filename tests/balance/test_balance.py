"""Unit tests of icllib.balance.model and icllib.balance.theory: closed forms against autograd and Monte Carlo,
identities, the chapter's helpers, bad input."""

import math

import numpy as np
import pytest
import torch

from icllib.balance import model as balance
from icllib.balance import theory
from icllib.config import rng, torch_generator

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def setup64():
    gen = torch_generator(0)
    params = balance.init_attention(generator=gen, imbalance=2.0, dtype=torch.float64)
    X, y = balance.icl_regression_batch(64, generator=gen, dtype=torch.float64)
    return params, X, y


# --- noise_terms -------------------------------------------------------------------------------------


def test_noise_terms_crossing_matches_quadratic_forms():
    # per-sample A (dim w x dim u); grad_u = A^T w, grad_w = A u; C1, C2 with the unbiased factor
    r = rng(3)
    n, du, dw = 500, 3, 4
    A = r.standard_normal((n, dw, du)) + 0.5
    u, w = r.standard_normal(du), r.standard_normal(dw)
    grads_u = np.einsum("nki,k->ni", A, w)
    grads_w = np.einsum("nki,i->nk", A, u)
    mean = A.mean(0)
    C1 = (np.einsum("nki,nkj->ij", A, A) / n - mean.T @ mean) * n / (n - 1)
    C2 = (np.einsum("nki,nli->kl", A, A) / n - mean @ mean.T) * n / (n - 1)
    term_u, term_w = theory.noise_terms(grads_u, grads_w)
    assert term_u == pytest.approx(u @ C1 @ u, rel=1e-12)
    assert term_w == pytest.approx(w @ C2 @ w, rel=1e-12)


def test_noise_terms_accepts_torch_and_is_crossed():
    gu = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 0.0]])
    gw = torch.tensor([[1.0], [2.0], [3.0]])
    # all the noise is on w's gradient, so it shows up in the first term (the one quadratic in u)
    assert theory.noise_terms(gu, gw) == (pytest.approx(1.0), 0.0)


@pytest.mark.parametrize(
    "grads_u, grads_w, match",
    [
        (np.zeros((5, 2)), np.zeros((4, 3)), "same samples"),
        (np.zeros((1, 2)), np.zeros((1, 3)), "n >= 2"),
        (np.zeros(5), np.zeros((5, 3)), "grads_u must have shape"),
        (np.zeros((5, 2)), np.zeros((5, 3, 1)), "grads_w must have shape"),
        (np.zeros((5, 2), dtype=int), np.zeros((5, 3)), "grads_u must hold real floats"),
    ],
)
def test_noise_terms_bad_input(grads_u, grads_w, match):
    with pytest.raises(ValueError, match=match):
        theory.noise_terms(grads_u, grads_w)


# --- Eq. 7 and the linear model ------------------------------------------------------------------------


def test_eq7_bounds_isotropic_and_singular():
    assert theory.eq7_bounds(2 * np.eye(3), 6 * np.eye(4)) == pytest.approx((3.0, 3.0))
    lower, upper = theory.eq7_bounds(np.diag([0.0, 1.0]), np.eye(2))
    assert lower == pytest.approx(1.0) and upper == math.inf


@pytest.mark.parametrize("C1, C2, match", [(np.ones((2, 3)), np.eye(2), "C1"), (np.eye(2), -np.eye(2), "semi-definite"),
                                           (np.eye(2), np.array([[1.0, 2.0], [0.0, 1.0]]), "C2")])
def test_eq7_bounds_bad_input(C1, C2, match):
    with pytest.raises(ValueError, match=match):
        theory.eq7_bounds(C1, C2)


def test_linear_C1_C2_against_monte_carlo():
    r = rng(7)
    d_o, d, sigma, n = 2, 5, 0.7, 400_000
    u, w = r.standard_normal(d_o), r.standard_normal(d)
    M_star = 0.5 * np.outer(r.standard_normal(d_o), r.standard_normal(d))
    x = r.standard_normal((n, d))
    residual = x @ (np.outer(u, w) - M_star).T - sigma * r.standard_normal((n, d_o))
    A = 2 * residual[:, :, None] * x[:, None, :]                  # dl/dM per sample, (n, d_o, d)
    mean = A.mean(0)
    C1_mc = np.einsum("nai,nbi->ab", A, A) / n - mean @ mean.T      # acts on u
    C2_mc = np.einsum("nai,naj->ij", A, A) / n - mean.T @ mean      # acts on w
    C1, C2 = theory.linear_C1_C2(u, w, M_star, sigma)
    # Monte-Carlo error of fourth moments at n = 4e5: a few 1e-3 relative
    assert np.abs(C1_mc - C1).max() / np.abs(C1).max() < 2e-2
    assert np.abs(C2_mc - C2).max() / np.abs(C2).max() < 2e-2


def test_linear_balance_ratio_at_minimum_is_do_over_d():
    u, w = np.array([1.0, 0.0]), np.array([0.0, 2.0, 0.0, 0.0])
    C1, C2 = theory.linear_C1_C2(u, w, np.outer(u, w), sigma=0.3)
    assert theory.linear_balance_ratio(C1, C2, u, w) == pytest.approx(2 / 4, rel=1e-12)
    lower, upper = theory.eq7_bounds(C1, C2)
    assert lower == pytest.approx(0.5) and upper == pytest.approx(0.5)


def test_linear_balance_ratio_bad_input():
    with pytest.raises(ValueError, match="C1 must be"):
        theory.linear_balance_ratio(np.eye(3), np.eye(2), np.ones(2), np.ones(2))
    with pytest.raises(ValueError, match="non-zero"):
        theory.linear_balance_ratio(np.eye(2), np.eye(2), np.zeros(2), np.ones(2))
    with pytest.raises(ValueError, match="positive"):
        theory.linear_balance_ratio(np.zeros((2, 2)), np.eye(2), np.ones(2), np.ones(2))


def test_linear_C1_C2_bad_input():
    with pytest.raises(ValueError, match="M_star"):
        theory.linear_C1_C2(np.ones(2), np.ones(3), np.ones((3, 2)), 0.1)
    with pytest.raises(ValueError, match="sigma"):
        theory.linear_C1_C2(np.ones(2), np.ones(3), np.ones((2, 3)), -1.0)


def test_ode_time_scales_as_one_over_T():
    kwargs = dict(ratio0=16.0, target=0.25, d=8, d_o=2, sigma=0.5)
    t1 = theory.linear_balance_ode_time(T=0.01, **kwargs)
    t2 = theory.linear_balance_ode_time(T=0.005, **kwargs)
    assert t2 / t1 == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(ValueError, match="T"):
        theory.linear_balance_ode_time(T=0.0, **kwargs)


def test_linear_sgd_conserves_without_noise_and_balances_with_it():
    u0, w0 = np.array([2.0, 0.0]), np.array([0.5, 0.0, 0.0, 0.0])
    M_star = np.outer(u0, w0)
    _, frozen, _ = theory.linear_sgd_runs(u0, w0, M_star, sigma=0.0, lr=0.02, batch_size=1, steps=200, runs=2,
                                           generator=rng(0))
    assert np.all(frozen == 16.0)
    _, ratio, band = theory.linear_sgd_runs(u0, w0, M_star, sigma=1.0, lr=0.02, batch_size=1, steps=3000,
                                             runs=16, generator=rng(0), record_every=100)
    assert ratio[-1].mean() < 2.0          # far below 16, heading to d_o/d = 0.5
    assert band.shape == (ratio.shape[0], 16, 2)


def test_linear_sgd_bad_input():
    with pytest.raises(ValueError, match="batch_size"):
        theory.linear_sgd_runs(np.ones(2), np.ones(3), np.ones((2, 3)), sigma=0.1, lr=0.1, batch_size=0, steps=1,
                                runs=1, generator=rng(0))
    with pytest.raises(ValueError, match="generator"):
        theory.linear_sgd_runs(np.ones(2), np.ones(3), np.ones((2, 3)), sigma=0.1, lr=0.1, batch_size=1, steps=1,
                                runs=1, generator=0)


# --- the attention network ------------------------------------------------------------------------------


def test_icl_regression_batch_shapes_and_labels():
    X, y = balance.icl_regression_batch(4, generator=torch_generator(0), noise_std=0.0, dtype=torch.float64)
    assert X.shape == (4, 50, 6) and y.shape == (4,)
    assert torch.all(X[:, -1, -1] == 0)
    # without noise, the context labels and the query label come from one w* per sequence
    for b in range(4):
        w_star = torch.linalg.lstsq(X[b, :49, :5], X[b, :49, 5:]).solution[:, 0]
        assert torch.allclose(X[b, -1, :5] @ w_star, y[b], atol=1e-10)


@pytest.mark.parametrize("kwargs, match", [({"batch_size": 0}, "batch_size"), ({"batch_size": 2, "d": 0}, "d"),
                                           ({"batch_size": 2, "noise_std": -1}, "noise_std"),
                                           ({"batch_size": 2, "generator": 3}, "generator")])
def test_icl_regression_batch_bad_input(kwargs, match):
    kwargs = {"generator": torch_generator(0), **kwargs}
    with pytest.raises(ValueError, match=match):
        balance.icl_regression_batch(**kwargs)


def test_symmetry_euler_and_crossing(setup64):
    params, X, y = setup64
    lam = torch.exp(torch.randn(2, 6, generator=torch_generator(1), dtype=torch.float64))
    assert balance.attention_loss(balance.rescale_columns(params, lam), X, y).item() == pytest.approx(
        balance.attention_loss(params, X, y).item(), rel=1e-13)
    grads = balance.per_sample_grads(params, X, y)
    residual, _ = balance.euler_residuals(grads, params)
    assert residual.abs().max() < 1e-12
    gK, gQ = balance.g_terms(grads)
    gK_C, gQ_C = balance.g_terms_via_C(params, X, y)
    assert torch.allclose(gK, gK_C, rtol=1e-12) and torch.allclose(gQ, gQ_C, rtol=1e-12)


def test_per_sample_grads_match_autograd(setup64):
    params, X, y = setup64
    grads = balance.per_sample_grads(params, X, y)
    leaf = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    full = torch.autograd.grad(balance.attention_loss(leaf, X, y), [leaf[k] for k in balance.PARAM_NAMES])
    for name, g in zip(balance.PARAM_NAMES, full):
        assert torch.allclose(grads[name].mean(0), g, rtol=1e-10, atol=1e-12)


def _autograd(params, X, y):
    leaf = {k: v.clone().requires_grad_(True) for k, v in params.items()}
    loss = balance.attention_loss(leaf, X, y)
    grads = torch.autograd.grad(loss, [leaf[k] for k in balance.PARAM_NAMES])
    return loss.detach(), dict(zip(balance.PARAM_NAMES, grads))


@pytest.mark.parametrize("seed, imbalance, weight_scale, groups", [
    (0, 2.0, 1.0, ()),            # the chapter's imbalanced init, one batch
    (1, 1.0, 1.0, (2,)),          # balanced init, two half batches as the SGD loop passes them
    (2, 2.0, 3.0, (3, 2)),        # larger weights: peaked softmax in both layers
    (3, 0.5, 1.0, (24,)),         # one sample per batch (per-sample gradients)
])
def test_hand_gradient_matches_autograd(seed, imbalance, weight_scale, groups):
    # to 1e-12 of each gradient's largest entry: where a softmax is nearly one-hot, both routes (one formula)
    # lose digits to cancellation in its small entries, and an entrywise tolerance would test that round-off
    gen = torch_generator(seed)
    params = balance.init_attention(generator=gen, imbalance=imbalance, dtype=torch.float64)
    lambdas = torch.exp(torch.randn(2, 6, generator=gen, dtype=torch.float64))
    params = balance.rescale_columns({k: weight_scale * v for k, v in params.items()}, lambdas)
    X, y = balance.icl_regression_batch(24, generator=gen, dtype=torch.float64)
    n = 24 // math.prod(groups)
    loss, grads = balance.attention_loss_and_grads(params, X.reshape(*groups, n, *X.shape[1:]),
                                                   y.reshape(*groups, n))
    assert loss.shape == groups and all(g.shape == (*groups, 6, 6) for g in grads.values())
    for at, Xg, yg in zip(np.ndindex(groups), X.split(n), y.split(n), strict=True):
        expected_loss, expected = _autograd(params, Xg, yg)
        assert float(loss[at]) == pytest.approx(float(expected_loss), rel=1e-12)
        for name in balance.PARAM_NAMES:
            torch.testing.assert_close(grads[name][at], expected[name], rtol=0,
                                       atol=1e-12 * float(expected[name].abs().max()))


def test_hand_gradient_bad_input(setup64):
    params, X, y = setup64
    with pytest.raises(ValueError, match="X must"):
        balance.attention_loss_and_grads(params, X[0], y[0])
    with pytest.raises(ValueError, match="X must"):
        balance.attention_loss_and_grads(params, X[..., :5], y)
    with pytest.raises(ValueError, match="y must"):
        balance.attention_loss_and_grads(params, X.reshape(2, 32, *X.shape[1:]), y)
    with pytest.raises(ValueError, match="params"):
        balance.attention_loss_and_grads({"Wq0": params["Wq0"]}, X, y)


def test_a_broken_symmetry_is_detected(setup64):
    # the Euler residual must be non-zero when the pair is not a symmetry (here: W_V against W_Q)
    params, X, y = setup64
    grads = balance.per_sample_grads(params, X, y)
    fake = {**params, "Wk0": params["Wv0"]}
    fake_grads = {**grads, "Wk0": grads["Wv0"]}
    residual, _ = balance.euler_residuals(fake_grads, fake)
    assert residual.abs().max() > 1e-3


def test_gradient_descent_identity_and_midpoint_conservation(setup64):
    params, X, y = setup64
    gd = balance.gradient_descent_run(params, X[:16], y[:16], lr=2e-3, steps=20)
    assert torch.allclose(gd["D"][-1] - gd["D"][0], gd["identity"], atol=1e-13)
    assert (gd["D"][-1] - gd["D"][0]).abs().max() > 1e-9          # GD does drift
    mid = balance.implicit_midpoint_run(params, X[:16], y[:16], h=2e-3, steps=5)
    assert (mid["D"] - mid["D"][0]).abs().max() < 1e-13


def test_sgd_bookkeeping():
    params = balance.init_attention(generator=torch_generator(0), imbalance=2.0, dtype=torch.float64)
    run = balance.train_attention_sgd(params, lr=4e-3, batch_size=8, steps=30, generator=torch_generator(1),
                                      checkpoint_every=10, g_samples=40, g_chunk=20)
    assert run["identity_residual"] < 1e-12
    assert run["D"].shape == (31, 2, 6) and run["gK"].shape == (4, 2, 6)
    predicted, measured, noise = theory.law_prediction(run, lr=4e-3, batch_size=8)
    assert predicted.shape == measured.shape == noise.shape == (2, 6)
    np.testing.assert_allclose(run["D"][-1], balance.column_imbalance(run["params"]), rtol=0, atol=1e-13)


def test_sgd_takes_autograds_steps():
    # the loop's fresh batches (drawn after the first checkpoint's two chunks), stepped with autograd
    params = balance.init_attention(generator=torch_generator(0), imbalance=2.0, dtype=torch.float64)
    run = balance.train_attention_sgd(params, lr=4e-3, batch_size=8, steps=5, generator=torch_generator(1),
                                      checkpoint_every=10, g_samples=4, g_chunk=2)
    gen = torch_generator(1)
    for _ in range(2):
        balance.icl_regression_batch(2, generator=gen, dtype=torch.float64)
    p = params
    for k in range(5):
        X, y = balance.icl_regression_batch(8, generator=gen, dtype=torch.float64)
        loss, grads = _autograd(p, X, y)
        assert run["loss"][k] == pytest.approx(float(loss), rel=1e-12)
        p = {name: p[name] - 4e-3 * grads[name] for name in balance.PARAM_NAMES}
    for name in balance.PARAM_NAMES:
        torch.testing.assert_close(run["params"][name], p[name], rtol=1e-12, atol=1e-13)



def test_sgd_stops_where_the_loss_stops_being_finite():
    # at lr = 1 the weights explode within a few steps; the run stops at the first non-finite loss
    params = balance.init_attention(generator=torch_generator(0), imbalance=2.0, dtype=torch.float64)
    run = balance.train_attention_sgd(params, lr=1.0, batch_size=8, steps=12, generator=torch_generator(1),
                                      checkpoint_every=2, g_samples=4, g_chunk=2)
    k = run["diverged_at"]
    assert isinstance(k, int) and 2 < k < 12
    assert np.all(np.isfinite(run["loss"][:k])) and np.all(np.isnan(run["loss"][k:]))
    assert np.all(np.isnan(run["D"][k + 1:])) and np.isfinite(run["identity_residual"])
    assert list(run["checkpoints"]) == list(range(0, 13, 2)) and run["gK"].shape == (7, 2, 6)
    assert np.all(np.isnan(run["gK"][run["checkpoints"] > k]))
    cut = balance.finite_part(run)
    end = cut["checkpoints"][-1]
    assert 0 < end < k and len(cut["loss"]) == end and len(cut["D"]) == end + 1
    for key in ("gK", "gQ", "gK_se", "gQ_se", "D", "loss", "dD_gd", "dD_noise"):
        assert np.all(np.isfinite(cut[key])), key
    assert np.all(np.isfinite(theory.law_prediction(cut, lr=1.0, batch_size=8, skip=0)[0]))
    fine = balance.train_attention_sgd(params, lr=4e-3, batch_size=8, steps=4, generator=torch_generator(1),
                                       checkpoint_every=2, g_samples=4, g_chunk=2)
    assert fine["diverged_at"] is None and balance.finite_part(fine) is fine
    with pytest.raises(ValueError, match="run"):
        balance.finite_part({"loss": run["loss"]})

@pytest.mark.parametrize("kwargs, match", [({"batch_size": 3}, "even"), ({"batch_size": 1}, "batch_size"),
                                           ({"lr": 0.0}, "lr"), ({"g_samples": 1}, "g_samples"),
                                           ({"g_samples": 5, "g_chunk": 2}, "whole number of chunks")])
def test_train_attention_sgd_bad_input(kwargs, match):
    params = balance.init_attention(generator=torch_generator(0))
    args = dict(lr=1e-3, batch_size=4, steps=1, generator=torch_generator(0), checkpoint_every=1, g_samples=4)
    with pytest.raises(ValueError, match=match):
        balance.train_attention_sgd(params, **{**args, **kwargs})


def test_attention_bad_input(setup64):
    params, X, y = setup64
    with pytest.raises(ValueError, match="X must have shape"):
        balance.attention_loss(params, X[..., :5], y)
    with pytest.raises(ValueError, match="y must have shape"):
        balance.attention_loss(params, X, y[:3])
    with pytest.raises(ValueError, match="params"):
        balance.attention_loss({"Wq0": params["Wq0"]}, X, y)
    with pytest.raises(ValueError, match="lambdas"):
        balance.rescale_columns(params, -torch.ones(2, 6))
    with pytest.raises(ValueError, match="n >= 2"):
        balance.g_terms_via_C(params, X[:1], y[:1])
    with pytest.raises(ValueError, match="imbalance"):
        balance.init_attention(generator=torch_generator(0), imbalance=0)
    with pytest.raises(ValueError, match="grads"):
        balance.g_terms({"Wq0": X})


def test_sympy_identities_all_vanish():
    assert all(value == 0 for value in theory.sympy_identities().values())
    with pytest.raises(ValueError, match="n_samples"):
        theory.sympy_identities(n_samples=1)


# --- the pair-by-pair test of the law ---------------------------------------------------------------------


def test_rank_agreement_ordered_and_reversed():
    x = np.arange(12.0)
    rho, p = balance.rank_agreement(x, 3 * x + 1, generator=rng(0), permutations=5_000)
    assert rho == pytest.approx(1.0) and p < 2e-3
    rho, p = balance.rank_agreement(x, -x, generator=rng(0), permutations=5_000)
    assert rho == pytest.approx(-1.0) and p == pytest.approx(1.0)


def test_rank_agreement_false_pass_rate_is_at_most_alpha():
    # unrelated values: the p-value must fall below 0.05 in about 5 % of draws, not more
    r = rng(11)
    p_values = np.array([balance.rank_agreement(r.standard_normal(12), r.standard_normal(12), generator=r,
                                                permutations=1_000)[1] for _ in range(400)])
    assert np.mean(p_values <= 0.05) < 0.05 + 3 * math.sqrt(0.05 * 0.95 / 400)


@pytest.mark.parametrize("x, y, kwargs, match", [
    (np.ones(4), np.ones(5), {}, "same number"),
    (np.ones(2), np.ones(2), {}, "same number"),
    (np.array([1.0, np.nan, 2.0]), np.ones(3), {}, "finite"),
    (np.arange(3.0), np.ones(3), {}, "constant"),
    (np.arange(3.0), np.arange(3.0), {"permutations": 0}, "permutations"),
])
def test_rank_agreement_bad_input(x, y, kwargs, match):
    with pytest.raises(ValueError, match=match):
        balance.rank_agreement(x, y, generator=rng(0), **kwargs)


def test_rank_agreement_needs_a_generator():
    with pytest.raises(ValueError, match="generator"):
        balance.rank_agreement(np.arange(3.0), np.arange(3.0), generator=0)


def test_random_stationary_points_lie_on_the_stationary_set_and_reject_bad_input():
    ratio, eig_C1, eig_C2 = theory.random_stationary_points(3, 50, generator=np.random.default_rng(0))
    assert ratio.shape == (50,) and eig_C1.shape == eig_C2.shape == (50, 3)
    assert np.all(np.diff(eig_C1, axis=1) >= 0) and np.all(ratio > 0)
    for kwargs, name in (({"size": 0, "count": 5}, "size"), ({"size": 2, "count": 2.5}, "count")):
        with pytest.raises(ValueError, match=name):
            theory.random_stationary_points(**kwargs, generator=np.random.default_rng(0))
    with pytest.raises(ValueError, match="generator"):
        theory.random_stationary_points(2, 5, generator=0)


# --- the chapter's helpers (notebooks/balance.py) ------------------------------------------------------


def test_b11_setting_is_named_once():
    assert balance.B11_PAPER == {"batch_size": 200, "lr": 4e-3, "checkpoint_every": 20_000, "g_samples": 20_000,
                                 "g_chunk": 2_000, "imbalance": 2.0}
    assert balance.B11_FULL_STEPS % balance.B11_PAPER["checkpoint_every"] == 0
    by_mode = balance.B11_BY_MODE
    assert set(by_mode) == {"quick", "default", "full"}
    assert by_mode["full"] == dict(balance.B11_PAPER, steps=balance.B11_FULL_STEPS)
    for setting in by_mode.values():
        # twenty checkpoints a run, whole chunks of g samples, the paper's lr and imbalance in every mode
        assert setting["steps"] == 20 * setting["checkpoint_every"]
        assert setting["g_samples"] % setting["g_chunk"] == 0
        assert (setting["lr"], setting["imbalance"]) == (balance.B11_PAPER["lr"], balance.B11_PAPER["imbalance"])
    assert by_mode["quick"]["batch_size"] == by_mode["default"]["batch_size"] == balance.B11_BOOK_BATCH


def test_checks_carry_a_reason_and_a_bound():
    for claim, check in theory.CHECKS.items():
        assert claim.startswith("balance.") and len(check["why"]) > 20, claim
        assert set(check) - {"why"} <= {"expected", "rtol", "atol", "lower", "upper"}, claim
    assert set(theory.CHECKS["balance.controls"]) == {"why"}  # its bounds come from the run


def test_query_lstsq_error_sees_the_layout(setup64):
    _, X, y = setup64
    assert balance.query_lstsq_error(X, y) < 0.01
    assert balance.query_lstsq_error(X, y.flip(0)) > 0.5      # another sequence's label: of order 1
    with pytest.raises(ValueError, match="y"):
        balance.query_lstsq_error(X, y[:3])


def test_symmetry_helpers(setup64):
    params, X, y = setup64
    lambdas = torch.full((2, 6), 1.7, dtype=torch.float64)
    assert balance.symmetry_error(params, X, y, lambdas) < 1e-13
    changes = balance.single_column_changes(params, X, y, factor=3.0)
    assert changes.shape == (2, 6) and changes.max() < 1e-13
    A = torch.eye(6, dtype=torch.float64) + 0.3 * torch.randn(6, 6, generator=torch_generator(5), dtype=torch.float64)
    change_KQ, change_QKt = balance.transpose_controls(params, X, y, A)
    assert change_KQ > 1e-6 and change_QKt < 1e-13
    with pytest.raises(ValueError, match="A"):
        balance.transpose_controls(params, X, y, A[:3])
    with pytest.raises(ValueError, match="factor"):
        balance.single_column_changes(params, X, y, factor=0.0)


def test_conservation_summary(setup64):
    params, X, y = setup64
    gd = {1e-3: balance.gradient_descent_run(params, X[:8], y[:8], lr=1e-3, steps=3)}
    mid = balance.implicit_midpoint_run(params, X[:8], y[:8], h=1e-3, steps=3)
    flow = balance.conservation_summary(gd, mid, params)
    assert flow["midpoint_drift"] < 1e-13 < flow["gd_drift"][1e-3] and flow["identity_error"] < 1e-13
    assert flow["norm_moves"] > 0
    with pytest.raises(ValueError, match="gd_runs"):
        balance.conservation_summary({}, mid, params)


def test_fig6_series_and_gap_summary():
    params = balance.init_attention(generator=torch_generator(0), imbalance=2.0)
    run = balance.train_attention_sgd(params, lr=4e-3, batch_size=4, steps=8, generator=torch_generator(1),
                                      checkpoint_every=4, g_samples=4, g_chunk=2)
    series = balance.fig6_series(run, steps=8, points=4)
    assert list(series["D_steps"]) == [0, 2, 4, 6, 8] and len(series["loss"]) == 4
    assert np.isnan(series["diverged_at"][0])
    with pytest.raises(ValueError, match="steps"):
        balance.fig6_series(run, steps=8, points=16)
    gap = np.log(run["gK"] / run["gQ"])
    start, end, within_2 = balance.gap_summary(gap, last=2)
    assert start == pytest.approx(np.abs(gap[0]).mean()) and end == pytest.approx(np.abs(gap[-2:]).mean())
    assert 0 <= within_2 <= 1
    with pytest.raises(ValueError, match="log_gap"):
        balance.gap_summary(gap[0])
    archive = dict(series, date="2026-11-26", commit="abc", machine="test", diverged_at=[6.0])
    text = balance.describe_archive(archive, {"steps": [4.0, 8.0], "rate_ratio": [1.1],
                                              "noise_part": np.ones(3), "predicted": np.ones(3)})
    assert "step 6" in text and "1.10" in text


def test_linear_helpers():
    assert theory.ratio_on_minimum(0.0) == pytest.approx(1.0)
    assert theory.ratio_on_minimum(1.5) == pytest.approx(4.0)          # a = 2: 2 - 1/2 = 1.5
    with pytest.raises(ValueError, match="D"):
        theory.ratio_on_minimum(math.nan)
    u, w = np.array([1.0, 0.0]), np.array([0.0, 1.0, 0.0])
    term_u, term_w = theory.linear_mc_noise_terms(u, w, np.outer(u, w), sigma=0.5, samples=40_000, generator=rng(0))
    C1, C2 = theory.linear_C1_C2(u, w, np.outer(u, w), 0.5)
    assert term_u == pytest.approx(u @ C1 @ u, rel=0.05) and term_w == pytest.approx(w @ C2 @ w, rel=0.05)
    M = np.outer(u, w)
    linear = theory.linear_balance_experiment(2 * u, w / 2, M, sigma=1.0, settings=[(0.02, 1)], runs=4,
                                              generator=rng(1), ratio0=16.0, relaxation_times=2)
    (summary,) = linear.values()
    assert summary["T"] == 0.02 and summary["mean"][0] == pytest.approx(16.0)
    assert len(theory.linear_rows(linear)[0]) == 7


def test_eq7_band_shares():
    band, swapped = theory.eq7_band_shares(range(2, 4), 100, generator=lambda size: rng(size))
    assert band == [1.0, 1.0] and min(swapped) < 1.0
    with pytest.raises(ValueError, match="generator"):
        theory.eq7_band_shares(range(2, 4), 10, generator=rng(0))



def test_chapter_tables():
    header, rows = theory.law_rows(-np.arange(12.0).reshape(2, 6), np.zeros((2, 6)), np.ones((2, 6)))
    assert header[:3] == ["pair", "1.1", "1.2"] and header[-1] == "2.6"
    assert [row[0] for row in rows] == ["law", "measured", "noise part"] and rows[0][-1] == "-11.000"
    with pytest.raises(ValueError, match="noise_part"):
        theory.law_rows(np.zeros((2, 6)), np.zeros((2, 6)), np.zeros((2, 5)))
    flow = {"gd_drift": {4e-3: 8e-5, 1e-3: 2e-5}, "midpoint_drift": 3e-16, "norm_moves": 0.2}
    header, rows = theory.conservation_rows(flow, midpoint_step=2.5e-3)
    assert len(header) == 3 and len(rows) == 4
    assert rows[0] == ["gradient descent, lr 0.004", "8.00e-05", "0.020"] and rows[2][0].endswith("h 0.0025")
    with pytest.raises(ValueError, match="flow"):
        theory.conservation_rows({"gd_drift": {}}, midpoint_step=1e-3)
