"""Unit tests of icllib.lsa.model: closed forms against autograd and Monte Carlo, the model's forms, bad input."""

import math

import numpy as np
import pytest
import torch

from icllib.lsa import model as lsa
from icllib.lsa import theory as lsat
from icllib.config import rng, torch_generator

torch.set_num_threads(1)

LAM = lsa.make_lambda([0.5, 1.0, 2.0], generator=rng(13))
D, N = 3, 10


def random_params(seed, scale=0.5, d=D):
    gen = np.random.default_rng(seed)
    return gen.standard_normal((d + 1, d + 1)) * scale, gen.standard_normal((d + 1, d + 1)) * scale


def test_make_lambda_and_gamma():
    assert np.allclose(np.linalg.eigvalsh(LAM), [0.5, 1.0, 2.0])
    assert not np.allclose(LAM, np.diag(np.diag(LAM)))  # rotated: not diagonal
    G = lsat.gamma_matrix(np.eye(2), 4)
    assert np.allclose(G, (1 + 1 / 4 + 2 / 4) * np.eye(2))


def test_global_minimum_matches_eq41():
    K, P = lsat.global_minimum(LAM, N)
    Gi = np.linalg.inv(lsat.gamma_matrix(LAM, N))
    scale = np.trace(Gi @ Gi) ** 0.25
    assert np.allclose(K[:D, :D] * scale, Gi) and np.allclose(P[D, D], scale)
    assert np.count_nonzero(K[D]) == 0 and np.count_nonzero(K[:, D]) == 0 and np.count_nonzero(P[:D]) == 0
    assert math.isclose(float(lsat.population_loss(K, P, LAM, N)), lsat.minimum_loss(LAM, N), rel_tol=1e-12)


def test_forward_forms_agree():
    K, P = random_params(0)
    X, w, xq = lsa.sample_prompts(64, 7, LAM, torch_generator(0))
    y = (X @ w[:, :, None])[..., 0]
    literal = lsa.lsa_forward(K, P, lsa.embed(X, y, xq), rho=7)[:, -1, -1]
    assert torch.allclose(lsa.predict(K, P, X, y, xq), literal, atol=1e-12)
    assert torch.allclose(lsa.quadratic_form_prediction(K, P, X, y, xq), literal, atol=1e-12)


def test_restricted_gradient_is_autograd_of_population_loss():
    U = np.random.default_rng(1).standard_normal((D, D))
    c = 0.7
    K = torch.zeros(D + 1, D + 1, dtype=torch.float64)
    P = torch.zeros_like(K)
    K[:D, :D] = torch.as_tensor(U)
    P[D, D] = c
    K.requires_grad_(True)
    P.requires_grad_(True)
    loss = lsat.population_loss(K, P, LAM, N)
    loss.backward()
    loss = loss.detach()
    dU, dc = lsat.restricted_gradient(U, c, LAM, N)
    assert math.isclose(loss.item(), lsat.restricted_loss(U, c, LAM, N), rel_tol=1e-12)
    assert np.allclose(K.grad[:D, :D].numpy(), dU, atol=1e-12) and math.isclose(float(P.grad[D, D]), dc, rel_tol=1e-12)


def test_population_loss_batched_equals_single():
    pairs = [random_params(s) for s in range(3)]
    batched = lsat.population_loss(np.stack([k for k, _ in pairs]), np.stack([p for _, p in pairs]), LAM, N)
    single = torch.stack([lsat.population_loss(k, p, LAM, N) for k, p in pairs])
    assert torch.allclose(batched, single, rtol=1e-13)


def test_population_loss_against_monte_carlo():
    """Closed form for generic parameters vs the literal model; a wrong sixth-moment term shows as |z| >> 4."""
    K, P = random_params(2, scale=0.4)
    exact = float(lsat.population_loss(K, P, LAM, N))
    mc = lsa.mc_loss_and_gradient(K, P, LAM, N, n=200_000, generator=torch_generator(5))
    assert abs(mc["loss"] - exact) < 4 * mc["loss_se"]
    Kt = torch.tensor(K, requires_grad=True)
    Pt = torch.tensor(P, requires_grad=True)
    lsat.population_loss(Kt, Pt, LAM, N).backward()
    mask_KQ, mask_PV = lsa.relevant_mask(D)
    z = torch.cat([((mc["grad_KQ"] - Kt.grad) / mc["se_KQ"])[mask_KQ], ((mc["grad_PV"] - Pt.grad) / mc["se_PV"])[mask_PV]])
    assert float(z.abs().max()) < 4.5
    # the irrelevant entries get exactly zero gradient, sample by sample
    assert float(mc["grad_KQ"][~mask_KQ].abs().max()) == 0.0 and float(mc["grad_PV"][~mask_PV].abs().max()) == 0.0


def test_gradient_flow_reaches_w_star_and_conserves_balance():
    K0, P0 = lsa.assumption33_init(D, 0.3, generator=rng(3))
    run = lsa.gradient_flow(K0[:D, :D], P0[D, D], LAM, N, T=600)
    K, P = lsat.global_minimum(LAM, N)
    assert np.allclose(run["U"][-1], K[:D, :D], atol=1e-8) and math.isclose(run["c"][-1], P[D, D], rel_tol=1e-8)
    assert np.abs(run["c"] ** 2 - (run["U"] ** 2).sum((1, 2))).max() < 1e-8
    assert np.diff(run["loss"]).max() < 1e-12


def test_pl_constant_is_a_valid_lower_bound():
    K0, _ = lsa.assumption33_init(D, 0.3, generator=rng(3))
    mu = lsat.pl_constant(LAM, N, 0.3, K0)
    run = lsa.gradient_flow(K0[:D, :D], 0.3, LAM, N, T=100)
    gap = run["loss"] - lsat.minimum_loss(LAM, N)
    assert mu > 0 and np.all(run["grad_sq"][gap > 1e-12] >= mu * gap[gap > 1e-12])


def test_gradient_descent_and_full_flow_agree_on_the_invariant_set():
    K0, P0 = lsa.assumption33_init(D, 0.3, generator=rng(4))
    gd = lsa.gradient_descent(torch.as_tensor(K0)[None], torch.as_tensor(P0)[None], LAM, N, lr=0.05, steps=400)
    flow = lsa.full_gradient_flow(torch.as_tensor(K0)[None], torch.as_tensor(P0)[None], LAM, N, T=20.0)
    ode = lsa.gradient_flow(K0[:D, :D], P0[D, D], LAM, N, T=20.0)
    assert math.isclose(float(flow["loss"][0]), float(ode["loss"][-1]), rel_tol=1e-5)
    assert math.isclose(float(gd["loss"][0]), float(ode["loss"][-1]), rel_tol=1e-2)  # GD with step 0.05 tracks the flow
    assert abs(float(flow["W_PV"][0, D, D]) - ode["c"][-1]) < 1e-4


def test_newton_refine_finds_the_minimum():
    K, P = lsat.global_minimum(LAM, N)
    out = lsa.newton_refine(K + 1e-3, P + 1e-3, LAM, N, steps=6)
    assert out["grad_norm"] < 1e-9 and abs(out["loss"] - lsat.minimum_loss(LAM, N)) < 1e-12


def test_restricted_hessian_has_one_zero_eigenvalue_at_w_star():
    K, P = lsat.global_minimum(LAM, N)
    eig = np.linalg.eigvalsh(lsat.restricted_hessian(K[:D, :D], P[D, D], LAM, N))
    assert abs(eig[0]) < 1e-12 and eig[1] > 1e-3


@pytest.mark.parametrize("task,noise", [("linear", 0.0), ("linear", 0.5), ("relu", 0.0), ("quadratic", 0.0)])
def test_task_moments_against_monte_carlo(task, noise):
    w = np.array([1.0, -0.5, 0.8])
    a, Sigma, best = lsat.task_moments(task, w, LAM, noise=noise)
    gen = torch_generator(7)
    x = torch.randn(400_000, D, generator=gen, dtype=torch.float64) @ torch.as_tensor(np.linalg.cholesky(LAM)).T
    z = x @ torch.as_tensor(w)
    y = {"linear": z + noise * torch.randn(z.shape, generator=gen, dtype=torch.float64),
         "relu": z.clamp_min(0), "quadratic": z**2}[task]
    xy = (x * y[:, None]).numpy()
    a_mc = np.linalg.solve(LAM, xy.mean(0))
    scale = np.sqrt(np.abs(np.diag(Sigma)).max())
    assert np.abs(a_mc - a).max() < 5 * scale / np.sqrt(len(y)) * np.abs(np.linalg.inv(LAM)).sum(1).max()
    assert np.allclose(np.cov(xy.T), Sigma, rtol=0.05, atol=0.05 * np.abs(Sigma).max())


def test_prediction_error_equals_shift_error_without_shift():
    w = np.array([1.0, -0.5, 0.8])
    a, Sigma, best = lsat.task_moments("linear", w, LAM)
    assert math.isclose(lsat.prediction_error(LAM, N, 17, a=a, Sigma=Sigma, best=best),
                        lsat.shift_error(LAM, N, 17, w=w), rel_tol=1e-12)


def test_prediction_error_against_monte_carlo():
    K, P = lsat.global_minimum(LAM, N)
    w = np.array([1.0, -0.5, 0.8])
    a, Sigma, best = lsat.task_moments("relu", w, LAM)
    exact = lsat.prediction_error(LAM, N, 12, a=a, Sigma=Sigma, best=best)
    mc = lsa.mc_prediction_error(K, P, M=12, n=100_000, generator=torch_generator(8), Lam_test=LAM, task="relu",
                                 w=w, ols=False)
    assert abs(mc["lsa"] - exact) < 4 * mc["lsa_se"] and math.isnan(mc["ols"])


def test_shift_error_against_monte_carlo_and_ols():
    K, P = lsat.global_minimum(LAM, N)
    exact = lsat.shift_error(LAM, N, 20, tau2=1.0, Lam_test=4 * LAM, Lam_query=np.eye(D))
    mc = lsa.mc_prediction_error(K, P, M=20, n=100_000, generator=torch_generator(9), Lam_test=4 * LAM,
                                 Lam_query=np.eye(D))
    assert abs(mc["lsa"] - exact) < 4 * mc["lsa_se"] and mc["ols"] < 1e-20


def test_orthogonal_query_is_zero_only_for_isotropic_lambda():
    for Lam, zero in ((np.eye(5), True), (lsa.make_lambda([0.2, 0.5, 1, 2, 5], generator=rng(1)), False)):
        K, P = lsat.global_minimum(Lam, 10)
        out = lsa.mc_prediction_error(K, P, M=2, n=500, generator=torch_generator(1), Lam_test=Lam, query="orthogonal")
        assert (out["max_abs_lsa"] < 1e-10) == zero


def test_corollary43_thresholds():
    th = lsat.corollary43_thresholds(np.eye(10), 0.01)
    assert th == {"M": 22000, "N_paper": 229, "N_corrected": 492}
    assert lsat.shift_error(np.eye(10), th["N_paper"], th["M"], tau2=1.0) > 0.01
    assert lsat.shift_error(np.eye(10), th["N_corrected"], th["M"], tau2=1.0) <= 0.01


def test_exp1_moments_against_monte_carlo():
    d, NN = 3, 20
    gamma, xi, zeta = lsat.exp1_moments(d, NN)
    lam = np.random.default_rng(0).exponential(size=(2_000_000, d))
    s = lam.sum(1)
    g1 = (NN + 1) / NN * lam[:, 0] ** 3 + lam[:, 0] ** 2 * s / NN
    z12 = (NN + 1) / NN * lam[:, 0] ** 2 * lam[:, 1] + lam[:, 0] * lam[:, 1] * s / NN
    assert abs(g1.mean() - gamma[0]) < 4 * g1.std() / np.sqrt(len(g1))
    assert abs(z12.mean() - zeta[0, 1]) < 4 * z12.std() / np.sqrt(len(z12))
    assert np.allclose(xi, 2.0)


def test_random_cov_flow_limit_is_eq411():
    gamma, xi, zeta = lsat.exp1_moments(3, 20)
    K0, P0 = lsa.assumption33_init(3, 0.1, generator=rng(2))
    out = lsa.random_cov_flow(K0[:3, :3], P0[3, 3], gamma, xi, zeta, T=3000)
    D_diag = xi / gamma
    assert math.isclose(out["c"], np.linalg.norm(D_diag) ** 0.5, rel_tol=1e-8)
    assert np.allclose(out["U"], np.diag(D_diag) / np.linalg.norm(D_diag) ** 0.5, atol=1e-8)


def test_random_cov_gradient_is_the_gradient_of_random_cov_loss():
    gamma, xi, zeta = lsat.exp1_moments(3, 20)
    gen = np.random.default_rng(4)
    U, c = gen.standard_normal((3, 3)), 0.7
    dU, dc = lsat.random_cov_gradient(U, c, gamma, xi, zeta)
    h = 1e-6
    for i, j in [(0, 0), (1, 2), (2, 1)]:
        E = np.zeros((3, 3))
        E[i, j] = h
        fd = (lsat.random_cov_loss(U + E, c, gamma, xi, zeta) - lsat.random_cov_loss(U - E, c, gamma, xi, zeta)) / (2 * h)
        assert math.isclose(dU[i, j], fd, rel_tol=1e-6, abs_tol=1e-8)  # central differences, h = 1e-6
    fd_c = (lsat.random_cov_loss(U, c + h, gamma, xi, zeta) - lsat.random_cov_loss(U, c - h, gamma, xi, zeta)) / (2 * h)
    assert math.isclose(dc, fd_c, rel_tol=1e-7)


def test_random_cov_flow_path_decreases_the_loss():
    gamma, xi, zeta = lsat.exp1_moments(3, 20)
    K0, P0 = lsa.assumption33_init(3, 0.1, generator=rng(2))
    out = lsa.random_cov_flow(K0[:3, :3], P0[3, 3], gamma, xi, zeta, T=100, n_eval=50)
    assert out["U_path"].shape == (50, 3, 3) and out["c_path"].shape == out["t"].shape == out["loss"].shape == (50,)
    assert np.diff(out["loss"]).max() < 1e-12 and out["balance"] < 1e-9
    assert math.isclose(out["c_path"][0], 0.1) and out["c"] == out["c_path"][-1]


def test_balance_gap():
    K, P = lsat.global_minimum(LAM, N)
    assert abs(float(lsa.balance_gap(K, P))) < 1e-12


def test_restricted_gd_tracks_the_imbalance_and_lands_on_the_manifold():
    K0, P0 = lsa.assumption33_init(D, 0.3, generator=rng(5))
    out = lsa.restricted_gd(K0[:D, :D], P0[D, D], LAM, N, lr=0.2, steps=6000)
    assert abs(out["delta"] - out["delta_predicted"]) < 1e-10 and abs(out["delta"]) > 1e-3
    U, c = lsat.manifold_point(LAM, N, out["delta"])
    assert np.allclose(c * U, np.linalg.inv(lsat.gamma_matrix(LAM, N)), atol=1e-12)
    assert math.isclose(c**2 - np.sum(U**2), out["delta"], abs_tol=1e-12)
    assert math.isclose(out["c"], c, rel_tol=1e-6) and np.allclose(out["U"], U, atol=1e-6)


def test_sgd_full_lowers_the_loss_and_leaves_irrelevant_entries():
    K0, P0 = lsa.assumption33_init(D, 0.3, generator=rng(5))
    K0[:D, D] = 0.7  # an irrelevant entry (last column of W_KQ) that must not move
    out = lsa.sgd_full(K0, P0, LAM, N, lr=0.01, batch=256, steps=300, generator=torch_generator(3))
    before = float(lsat.population_loss(K0, P0, LAM, N))
    after = float(lsat.population_loss(out["W_KQ"], out["W_PV"], LAM, N))
    assert after < 0.5 * before
    mask_KQ, _ = lsa.relevant_mask(D)
    assert np.array_equal(out["W_KQ"].numpy()[~mask_KQ.numpy()], K0[~mask_KQ.numpy()].astype(np.float32).astype(np.float64))


def test_sample_random_cov_prompts():
    X, w, xq, lam = lsa.sample_random_cov_prompts(20_000, 5, 3, torch_generator(0), w=np.ones(3))
    assert X.shape == (20_000, 5, 3) and w.shape == (20_000, 3) and xq.shape == (20_000, 3) and lam.shape == (20_000, 3)
    assert torch.all(w == 1.0)
    assert abs(float(lam.mean()) - 1.0) < 4 * float(lam.std()) / math.sqrt(lam.numel())  # Exponential(1) mean
    ratio = (X**2).mean(1) / lam  # E[x^2 | lambda] = lambda
    assert abs(float(ratio.mean()) - 1.0) < 4 * float(ratio.std()) / math.sqrt(ratio.numel())


# ------------------------------------------------------------------------------------------------
# Bad input


@pytest.mark.parametrize("Lam", [np.array([[1.0, 0.5], [0.0, 1.0]]), -np.eye(2), np.ones((2, 3)), np.eye(2) * np.nan])
def test_bad_covariance(Lam):
    with pytest.raises(ValueError, match="Lam"):
        lsat.gamma_matrix(Lam, 5)
    with pytest.raises(ValueError, match="Lam"):
        lsat.population_loss(np.eye(3), np.eye(3), Lam, 5)


@pytest.mark.parametrize("bad_N", [0, -3, 2.5, True])
def test_bad_N(bad_N):
    with pytest.raises(ValueError, match="N"):
        lsat.gamma_matrix(np.eye(2), bad_N)
    with pytest.raises(ValueError, match="N"):
        lsat.global_minimum(np.eye(2), bad_N)


def test_bad_shapes():
    K, P = lsat.global_minimum(np.eye(2), 5)
    X, w, xq = lsa.sample_prompts(4, 3, np.eye(2), torch_generator(0))
    y = (X @ w[:, :, None])[..., 0]
    with pytest.raises(ValueError, match="y"):
        lsa.predict(K, P, X, y[:, :2], xq)
    with pytest.raises(ValueError, match="x_query"):
        lsa.predict(K, P, X, y, xq[:2])
    with pytest.raises(ValueError, match="X"):
        lsa.predict(K, P, X[0], y, xq)
    with pytest.raises(ValueError, match="W_KQ"):
        lsa.predict(np.eye(4), np.eye(4), X, y, xq)
    with pytest.raises(ValueError, match="W_KQ and W_PV"):
        lsat.population_loss(np.eye(3), np.eye(4), np.eye(2), 5)
    with pytest.raises(ValueError, match="W_KQ"):
        lsat.population_loss(np.eye(4), np.eye(4), np.eye(2), 5)
    with pytest.raises(ValueError, match="E"):
        lsa.lsa_forward(K, P, torch.zeros(2, 5, 4), rho=3)
    with pytest.raises(ValueError, match="rho"):
        lsa.lsa_forward(K, P, lsa.embed(X, y, xq), rho=0)


def test_bad_arguments():
    with pytest.raises(ValueError, match="eigenvalues"):
        lsa.make_lambda([1.0, -1.0])
    with pytest.raises(ValueError, match="generator"):
        lsa.make_lambda([1.0, 2.0], generator=-1)
    with pytest.raises(ValueError, match="sigma"):
        lsa.assumption33_init(2, 0.0, generator=rng(1))
    with pytest.raises(ValueError, match="generator"):
        lsa.assumption33_init(2, 0.1, generator=-1)
    with pytest.raises(ValueError, match="generator"):
        lsa.sample_prompts(2, 3, np.eye(2), generator=0)
    with pytest.raises(ValueError, match="w"):
        lsa.sample_prompts(2, 3, np.eye(2), torch_generator(0), w=np.ones(3))
    with pytest.raises(ValueError, match="task"):
        lsat.task_moments("cubic", np.ones(2), np.eye(2))
    with pytest.raises(ValueError, match="noise"):
        lsat.task_moments("relu", np.ones(2), np.eye(2), noise=0.1)
    with pytest.raises(ValueError, match="exactly one"):
        lsat.shift_error(np.eye(2), 5, 5)
    with pytest.raises(ValueError, match="M"):
        lsat.shift_error(np.eye(2), 5, 0, tau2=1.0)
    with pytest.raises(ValueError, match="a must"):
        lsat.prediction_error(np.eye(2), 5, 5, a=np.ones(3), Sigma=np.eye(2))
    with pytest.raises(ValueError, match="eps"):
        lsat.corollary43_thresholds(np.eye(2), -0.1)
    K, P = lsat.global_minimum(np.eye(3), 5)
    with pytest.raises(ValueError, match="M < d"):
        lsa.mc_prediction_error(K, P, M=3, n=10, generator=torch_generator(0), Lam_test=np.eye(3), query="orthogonal")
    with pytest.raises(ValueError, match="query"):
        lsa.mc_prediction_error(K, P, M=3, n=10, generator=torch_generator(0), Lam_test=np.eye(3), query="other")
    with pytest.raises(ValueError, match="lr"):
        lsa.gradient_descent(torch.as_tensor(K)[None], torch.as_tensor(P)[None], np.eye(3), 5, lr=-1, steps=2)
    with pytest.raises(ValueError, match="R, d\\+1"):
        lsa.full_gradient_flow(K, P, np.eye(3), 5, T=1.0)
    with pytest.raises(ValueError, match="U0"):
        lsa.gradient_flow(np.eye(2), 1.0, np.eye(3), 5, T=1.0)
    with pytest.raises(ValueError, match="zeta"):
        lsa.random_cov_flow(np.eye(2), 1.0, np.ones(2), np.ones(2), 2 * np.ones((2, 2)), T=1.0)
    with pytest.raises(ValueError, match="d"):
        lsat.exp1_moments(0, 5)
    with pytest.raises(ValueError, match="steps"):
        lsa.restricted_gd(np.eye(3), 1.0, np.eye(3), 5, lr=0.1, steps=0)
    with pytest.raises(ValueError, match="batch"):
        lsa.sgd_full(K, P, np.eye(3), 5, lr=0.1, batch=0, steps=1, generator=torch_generator(0))
    with pytest.raises(ValueError, match="generator"):
        lsa.sample_random_cov_prompts(2, 3, 2, generator=None)
    with pytest.raises(ValueError, match="n"):
        lsa.mc_loss_and_gradient(K, P, np.eye(3), 5, n=0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="N"):
        lsa.sgd_full(K, P, np.eye(3), 0, lr=0.1, batch=1, steps=1, generator=torch_generator(0))


# --- helpers of the chapter's checks (issue 24: bookkeeping out of the notebook) -----------------------------


def test_sqrtm_psd_is_the_symmetric_root():
    S = lsat.sqrtm_psd(LAM)
    assert np.allclose(S, S.T) and np.allclose(S @ S, LAM, atol=1e-13)
    assert np.linalg.eigvalsh(S).min() > 0
    with pytest.raises(ValueError, match="A"):
        lsat.sqrtm_psd(-np.eye(2))


def test_a14_bound_holds_along_the_flow_and_needs_the_condition():
    sigma = 0.5 * lsat.sigma_max(LAM, N)
    K0, P0 = lsa.assumption33_init(D, sigma, generator=rng(7))
    run = lsa.gradient_flow(K0[:D, :D], P0[D, D], LAM, N, T=200.0, n_eval=200)
    bound = lsat.a14_bound(LAM, N, sigma, K0[:D, :D])
    assert 0 < bound <= run["c"].min()
    with pytest.raises(ValueError, match="sigma"):
        lsat.a14_bound(LAM, N, 1.01 * lsat.sigma_max(LAM, N), K0[:D, :D])


def test_flow_summary_of_a_converged_flow():
    K0, P0 = lsa.assumption33_init(D, 0.5 * lsat.sigma_max(LAM, N), generator=rng(7))
    run = lsa.gradient_flow(K0[:D, :D], P0[D, D], LAM, N, T=1500.0)
    summary = lsa.flow_summary(run, *lsat.global_minimum(LAM, N))
    assert set(summary) == {"err_KQ", "err_PV", "balance", "min_c", "max_increase", "drop"}
    assert summary["err_KQ"] < 1e-8 and summary["err_PV"] < 1e-8 and summary["balance"] < 1e-8
    assert summary["drop"] > 0 and summary["max_increase"] < 1e-12 and summary["min_c"] > 0
    with pytest.raises(ValueError, match="W_KQ_star"):
        lsa.flow_summary(run, np.eye(2), lsat.global_minimum(LAM, N)[1])


def test_generic_init_fills_only_the_relevant_entries():
    K, P = lsa.generic_init(D, 5, generator=rng(100))
    K2, _ = lsa.generic_init(D, 5, generator=rng(100))
    m_KQ, m_PV = lsa.relevant_mask(D)
    assert K.shape == (5, D + 1, D + 1) and torch.equal(K, K2)
    assert (K[:, ~m_KQ] == 0).all() and (P[:, ~m_PV] == 0).all() and (K[:, m_KQ] != 0).all()
    assert 0.02 < float(K[:, m_KQ].std()) < 0.1  # scale 0.05


def test_shift_scenarios_share_their_arguments_between_formula_and_monte_carlo():
    scenarios = lsa.shift_scenarios(LAM)
    assert len(scenarios) == 9 and len({name for name, _ in scenarios}) == 9
    for _, kw in scenarios:
        exact_kw = {"tau2": 1.0, **kw} if "w" not in kw else kw
        assert math.isfinite(lsat.shift_error(LAM, 20, 40, **exact_kw))


def test_checks_name_registered_claims_and_fill_their_reasons():
    from icllib.claims import registry

    claims = registry().claims
    assert all(claim_id in claims for claim_id in lsat.CHECKS)
    assert all(entry["why"] for entry in lsat.CHECKS.values())
    args = lsat.check_args("lsa.population-loss", n=1000, se=0.01)
    assert args["lower"] == -4 and "1000-prompt" in args["why"] and "SE 1.0e-02" in args["why"]
    assert "{" not in lsat.check_args("lsa.lemma51")["why"]
    with pytest.raises(ValueError, match="fields"):
        lsat.check_args("lsa.population-loss")
    with pytest.raises(ValueError, match="claim_id"):
        lsat.check_args("lsa.no-such-check")


def test_weights_411_and_gauss_hermite_helpers():
    K, P = lsat.weights_411([0.5, 0.5])
    assert np.allclose(P[-1, -1] * K[:-1, :-1], np.diag([0.5, 0.5])) and P[-1, -1] ** 2 == pytest.approx(np.sqrt(0.5))
    nodes, wts = lsat.gaussian_rule(LAM, 3)
    assert nodes.shape == (27, 3) and wts.sum() == pytest.approx(1.0)
    assert np.allclose(np.einsum("s,si,sj->ij", wts, nodes, nodes), LAM)
    assert lsat.isserlis_error(LAM, 3) < 1e-12 < 0.1 < lsat.isserlis_error(LAM, 2)
    with pytest.raises(ValueError, match="D_diag"):
        lsat.weights_411([1.0, -1.0])


# --- icllib.lsa.experiments: the chapter's loops -------------------------------------------------------------


def test_junk_in_the_irrelevant_entries_changes_nothing_and_only_those_entries():
    from icllib.lsa import experiments as lsx

    K, P = random_params(1)
    junk_K, junk_P = lsx.fill_irrelevant(K, P, generator=rng(2), scale=10.0)
    mask_K, mask_P = (m.numpy() for m in lsa.relevant_mask(D))
    assert np.array_equal(junk_K[mask_K], K[mask_K]) and np.array_equal(junk_P[mask_P], P[mask_P])
    assert np.abs(junk_K[~mask_K] - K[~mask_K]).min() > 0 and np.abs(junk_P[~mask_P]).max() > 1
    X, w, x_q = lsa.sample_prompts(5, 6, LAM, generator=torch_generator(0))
    y = (X @ w[:, :, None])[..., 0]
    assert torch.allclose(lsa.predict(junk_K, junk_P, X, y, x_q), lsa.predict(K, P, X, y, x_q), atol=1e-10)
    with pytest.raises(ValueError, match="W_KQ and W_PV"):
        lsx.fill_irrelevant(np.eye(3), np.eye(4), generator=rng(0))


def test_hessian_of_the_quadratic_form_has_d_plus_1_negative_eigenvalues():
    from icllib.lsa import experiments as lsx

    X, w, x_q = lsa.sample_prompts(4, 6, LAM, generator=torch_generator(3))
    counts = lsx.negative_eigenvalue_counts(X, (X @ w[:, :, None])[..., 0], x_q)
    assert counts.shape == (4,) and int(counts.min()) >= D + 1


def test_invariant_set_point_and_gradient_agree_with_the_general_loss():
    from icllib.lsa import experiments as lsx

    K, P = random_params(4)
    U, c = np.random.default_rng(5).standard_normal((D, D)), 0.7
    K_inv, P_inv = lsx.on_invariant_set(K, P, U, c)
    assert float(lsat.population_loss(K_inv, P_inv, LAM, N)) == pytest.approx(lsat.restricted_loss(U, c, LAM, N))
    K_t, P_t = (torch.tensor(W, requires_grad=True) for W in (K_inv, P_inv))
    g_K, g_P = torch.autograd.grad(lsat.population_loss(K_t, P_t, LAM, N), (K_t, P_t))
    grad_K, grad_P = lsx.invariant_set_gradient(U, c, LAM, N)
    mask_K, mask_P = (m.numpy() for m in lsa.relevant_mask(D))
    assert np.allclose(g_K.numpy()[mask_K], grad_K[mask_K]) and np.allclose(g_P.numpy()[mask_P], grad_P[mask_P])


def test_gradient_z_scores_are_zero_against_the_monte_carlo_mean_itself():
    from icllib.lsa import experiments as lsx

    K, P = random_params(6)
    mc = lsa.mc_loss_and_gradient(K, P, LAM, N, n=64, generator=torch_generator(1))
    z = lsx.gradient_z_scores(mc, mc["grad_KQ"].numpy(), mc["grad_PV"].numpy())
    assert z.shape == ((D + 1) ** 2,)  # the first d columns of W_KQ and the last row of W_PV
    assert np.array_equal(z, np.zeros_like(z))
    with pytest.raises(ValueError, match="mc"):
        lsx.gradient_z_scores({"grad_KQ": 1}, np.zeros((4, 4)), np.zeros((4, 4)))


def test_theorem41_flows_share_theta_and_reach_the_minimum():
    from icllib.lsa import experiments as lsx

    flows, summary = lsx.theorem41_flows([(LAM, N)], [0.5, 3.0], generator=rng(7), T=1500)
    assert set(flows) == {(D, N, 0.5), (D, N, 3.0)}
    first, second = summary
    assert np.allclose(first["K0"] / first["sigma"], second["K0"] / second["sigma"])  # one direction Theta
    assert max(first["err_KQ"], second["err_PV"]) < 1e-8 and first["balance"] < 1e-8


def test_lemma_checks_hold_to_round_off_and_their_controls_fail():
    from icllib.lsa import experiments as lsx

    assert max(lsx.corollary_a2_errors(LAM, N, generator=rng(0), points=5)) < 1e-10
    moments = lsat.exp1_moments(3, 20)
    assert max(lsx.lemma_c1_c3_errors(*moments, generator=rng(1), points=3)) < 1e-12
    assert max(lsx.lemma_c4_errors(*moments, generator=rng(2), points=3)) < 1e-10
    assert max(lsx.lemma_d1_errors(generator=rng(3)).values()) < 1e-12
    A = np.random.default_rng(4).standard_normal((3, 3))
    assert lsx.lemma_d2_error(LAM, A, n_nodes=3) < 1e-12 < 0.1 < lsx.lemma_d2_error(LAM, A, n_nodes=2)
    assert lsx.lemma_d3_slack(generator=rng(5), pairs=30).min() > -1e-12
    trace_ratio, eig_ratio = lsx.lemma_d4_ratios(generator=rng(6), pairs=30)
    assert trace_ratio.min() > -1e-12 and eig_ratio.min() > -1e-12


def test_lemma_c6_c8_runs_respect_the_bounds_and_refuse_a_scale_outside_c10():
    from icllib.lsa import experiments as lsx

    moments = lsat.exp1_moments(3, 20)
    theta = np.eye(3) / np.sqrt(3)  # Theta Theta^T with unit Frobenius norm
    (row,) = lsx.lemma_c6_c8_runs([0.5], 0.2, theta, *moments, K_410=30.0, T=3000)
    assert row["min_c"] >= max(row["printed"], row["proven"]) and row["pl"] >= 1 and abs(row["final_gap"]) < 1e-10
    with pytest.raises(ValueError, match="sigma_bound"):
        lsx.lemma_c6_c8_runs([1.0], 1.0, theta, *moments, K_410=30.0)


def test_corollary43_audit_finds_the_printed_sizes_too_small():
    from icllib.lsa import experiments as lsx

    (row,) = lsx.corollary43_audit([("d=10", np.eye(10), 0.01)])
    assert row["N_paper"] < row["N_corrected"]
    assert row["error_paper"] > row["eps"] >= row["error_corrected"]


def test_one_third_estimates_at_n_infinity():
    from icllib.lsa import experiments as lsx

    est = lsx.one_third_estimates(np.full(3, 1 / 3), 20, n=20_000, w=np.ones(3), x_query=np.array([1.0, 0.5, 1.0]),
                                  generators=[torch_generator(0), torch_generator(1)])
    assert abs(est["ratio"] - 1 / 3) < 5 * est["ratio_se"]
    assert abs(est["joint"] - 2 / 3) < 5 * est["joint_se"]


def test_mc_random_cov_loss_matches_c5_and_sgd_table_reads_the_minimum():
    from icllib.lsa import experiments as lsx

    gamma, xi, zeta = lsat.exp1_moments(3, 20)
    U, c = np.diag(xi / gamma) / 0.8, 0.8
    mc = lsx.mc_random_cov_loss(U, c, 20, n=40_000, generator=torch_generator(2), chunk=20_000)
    exact = lsat.random_cov_loss(U, c, gamma, xi, zeta) + 3 / 2
    assert abs(mc["mean"] - exact) < 5 * mc["se"]
    with pytest.raises(ValueError, match="chunk"):
        lsx.mc_random_cov_loss(U, c, 20, n=10, generator=torch_generator(2), chunk=4)
    (row,) = lsx.sgd_table([lsat.global_minimum(LAM, N)], LAM, N)
    assert row[1] == "0.00%" and row[3] == row[5]
