"""The experiments of the chapter ``lsa``, section by section: the loops and bookkeeping that turn the model
(:mod:`icllib.lsa.model`) and the closed forms (:mod:`icllib.lsa.theory`) into the numbers the chapter checks.

Zhang, Frei and Bartlett, *Trained Transformers Learn Linear Models In-Context* (JMLR 2024); equation numbers
refer to the paper. Each function serves one step of the chapter and says which; the chapter shows its
one-line call, its parameters and the check. Randomness enters through ``generator`` arguments, drawn in a
fixed order, so the chapter's records do not depend on where a loop lives.

1. The model (section "The model and its reduction"): :func:`running_covariance`, :func:`fill_irrelevant`, :func:`negative_eigenvalue_counts`
   (below Lemma 5.1), :func:`on_invariant_set`, :func:`invariant_set_gradient` and :func:`gradient_z_scores`
   (Lemma 5.2 against Monte Carlo).
2. Theorem 4.1 and finite steps: :func:`theorem41_flows`, :func:`corollary_a2_errors`, :func:`sgd_table`.
3. Random covariances (Theorem 4.5, Appendix C): :func:`mc_random_cov_loss`, :func:`lemma_c1_c3_errors`,
   :func:`lemma_c4_errors`, :func:`lemma_c6_c8_runs`, :func:`one_third_estimates`.
4. Corollary 4.3: :func:`corollary43_audit`.
5. Appendix D: :func:`lemma_d1_errors`, :func:`lemma_d2_error`, :func:`lemma_d3_slack`, :func:`lemma_d4_ratios`.
"""

from __future__ import annotations

import copy

import numpy as np
import torch

from icllib.lsa import model as lsa
from icllib.lsa import theory as lsat
from icllib.validation import (non_empty, numpy_generator_arg, positive_int, positive_number, real_array,
                               real_number, torch_generator_arg)

# --------------------------------------------------------------------------------------------------
# 1. The model and its reduction

# The running example of the chapter (its first section, reused by the flows, finite steps, the initialisation
# and Theorem 4.2): d = 4 and training prompts of length N = 15, with :func:`running_covariance`.
RUNNING_EIGENVALUES = (0.25, 0.5, 1.0, 2.0)


def running_covariance() -> np.ndarray:
    """The covariance of the chapter's running example: the eigenvalues ``RUNNING_EIGENVALUES`` in a random
    rotated basis (:func:`~icllib.lsa.model.make_lambda` with the generator seeded 14), so that Lambda is neither
    isotropic nor diagonal."""
    return lsa.make_lambda(list(RUNNING_EIGENVALUES), generator=np.random.default_rng(14))


def _matrix_pair(W_KQ, W_PV) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``W_KQ`` and ``W_PV`` as float64 (d+1, d+1) matrices of one shape (d >= 1)."""
    K, P = (real_array(n, W).copy() for n, W in (("W_KQ", W_KQ), ("W_PV", W_PV)))
    for name, W in (("W_KQ", K), ("W_PV", P)):
        if W.ndim != 2 or W.shape[0] != W.shape[1] or W.shape[0] < 2:
            raise ValueError(f"{name} must be a (d+1, d+1) matrix with d >= 1, got shape {W.shape}")
    if K.shape != P.shape:
        raise ValueError(f"W_KQ and W_PV must have the same shape, got {K.shape} and {P.shape}")
    return K, P


def fill_irrelevant(W_KQ, W_PV, *, generator: np.random.Generator, scale=10.0) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``W_KQ`` and ``W_PV`` whose entries outside Eq. (3.6) (:func:`~icllib.lsa.model.relevant_mask`) are
    replaced by i.i.d. N(0, scale^2) "junk" (the chapter's test of Eq. 3.6: y-hat must not change)."""
    K, P = _matrix_pair(W_KQ, W_PV)
    scale = positive_number("scale", scale)
    gen = numpy_generator_arg("generator", generator)
    mask_KQ, mask_PV = lsa.relevant_mask(K.shape[0] - 1)
    K[~mask_KQ.numpy()] = gen.standard_normal(int((~mask_KQ).sum())) * scale
    P[~mask_PV.numpy()] = gen.standard_normal(int((~mask_PV).sum())) * scale
    return K, P


def negative_eigenvalue_counts(X, y, x_query) -> torch.Tensor:
    """The number of negative eigenvalues of H_tau = X_tau (x) E_tau E_tau^T / (2N) for each prompt (below
    Lemma 5.1, Sec. 5.1): the Hessian of the quadratic form y-hat = u^T H u. "Negative" means below -1e-12
    times the largest eigenvalue in modulus, so round-off is not counted."""
    E = lsa.embed(X, y, x_query)
    n_prompts, d, N = E.shape[0], E.shape[1] - 1, E.shape[2] - 1
    S = E @ E.transpose(1, 2) / N
    X_q = torch.zeros(n_prompts, d + 1, d + 1, dtype=torch.float64)
    X_q[:, :d, d] = X_q[:, d, :d] = torch.as_tensor(x_query, dtype=torch.float64)
    eig = torch.linalg.eigvalsh(torch.stack([0.5 * torch.kron(a, b) for a, b in zip(X_q, S)]))
    return (eig < -1e-12 * eig.abs().amax(-1, keepdim=True)).sum(-1)


def on_invariant_set(W_KQ, W_PV, U, c) -> tuple[np.ndarray, np.ndarray]:
    """Copies of ``W_KQ``, ``W_PV`` moved onto the invariant set of Lemma 5.2 at (U_11, u_{-1}) = (U, c): the first
    d columns of W_KQ become [U; 0], the last row of W_PV becomes (0, c); the entries outside Eq. (3.6) are kept."""
    K, P = _matrix_pair(W_KQ, W_PV)
    d = K.shape[0] - 1
    U = lsat.square("U", U, d)
    c = real_number("c", c)
    K[:, :d] = 0
    K[:d, :d] = U
    P[d, :] = 0
    P[d, d] = c
    return K, P


def invariant_set_gradient(U, c, Lam, N) -> tuple[np.ndarray, np.ndarray]:
    """The population gradient at a point of the invariant set as full (d+1, d+1) matrices: minus the right-hand
    side of (5.4) in the U_11 block and the u_{-1} entry, zero elsewhere (Lemma 5.2)."""
    Lam = lsat.covariance(Lam)
    d = Lam.shape[0]
    dU, dc = lsat.restricted_gradient(U, c, Lam, N)
    grad_KQ, grad_PV = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1))
    grad_KQ[:d, :d], grad_PV[d, d] = dU, dc
    return grad_KQ, grad_PV


def gradient_z_scores(mc, grad_KQ, grad_PV) -> np.ndarray:
    """z-scores of the Monte-Carlo gradient ``mc`` (:func:`~icllib.lsa.model.mc_loss_and_gradient`) against an expected
    gradient, over the (d+1)^2 entries of Eq. (3.6): first those of W_KQ, then those of W_PV."""
    if not isinstance(mc, dict) or not {"grad_KQ", "grad_PV", "se_KQ", "se_PV"} <= mc.keys():
        raise ValueError("mc must be the dict of lsa.mc_loss_and_gradient (keys grad_KQ, grad_PV, se_KQ, se_PV)")
    d = mc["grad_KQ"].shape[-1] - 1
    masks = lsa.relevant_mask(d)
    z = []
    for key, expected, mask in zip(("KQ", "PV"), (grad_KQ, grad_PV), masks):
        expected = real_array(f"grad_{key}", expected)
        if expected.shape != (d + 1, d + 1):
            raise ValueError(f"grad_{key} must have shape ({d + 1}, {d + 1}), got {expected.shape}")
        m = mask.numpy()
        z.append((mc[f"grad_{key}"].numpy()[m] - expected[m]) / mc[f"se_{key}"].numpy()[m])
    return np.concatenate(z)


# --------------------------------------------------------------------------------------------------
# 2. Theorem 4.1 and finite steps


def theorem41_flows(cases, scales, *, generator: np.random.Generator, T=1500) -> tuple[dict, list[dict]]:
    """The exact flows of the section on Theorem 4.1: for each ``(Lam, N)`` of ``cases`` and each initial scale
    sigma / sigma_max of ``scales``, gradient flow (5.4) from Assumption 3.3 (:func:`~icllib.lsa.model.gradient_flow`).

    Every run of a case starts from the same direction Theta Theta^T: each draws it from a copy of
    ``generator``. Returns the runs by ``(d, N, scale)`` and one summary per run: ``d``, ``N``, ``scale``,
    ``sigma``, ``Lam``, the initial ``K0`` and the facts of :func:`~icllib.lsa.model.flow_summary`.
    """
    cases = non_empty("cases", cases)
    scales = [positive_number("scales", s) for s in non_empty("scales", scales)]
    numpy_generator_arg("generator", generator)
    flows, summary = {}, []
    for case in cases:
        if not isinstance(case, (tuple, list)) or len(case) != 2:
            raise ValueError(f"cases must hold (Lam, N) pairs, got {case!r}")
        Lam, N = lsat.covariance(case[0], "cases"), positive_int("cases", case[1])
        d = Lam.shape[0]
        K_star, P_star = lsat.global_minimum(Lam, N)
        for scale in scales:
            sigma = scale * lsat.sigma_max(Lam, N)
            K0, P0 = lsa.assumption33_init(d, sigma, generator=copy.deepcopy(generator))
            run = lsa.gradient_flow(K0[:d, :d], P0[d, d], Lam, N, T=T)
            flows[(d, N, scale)] = run
            facts = lsa.flow_summary(run, K_star, P_star)
            summary.append(dict(d=d, N=N, scale=scale, sigma=sigma, Lam=Lam, K0=K0, **facts))
    return flows, summary


def corollary_a2_errors(Lam, N, *, generator: np.random.Generator, points=20) -> list[float]:
    """``abs(L - (min + gap))`` of Corollary A.2 at ``points`` random (U_11, u_{-1}) with standard normal entries:
    the loss (5.5) against the completed square with Gamma^(1/2) and Lambda^(1/2) (Eq. A.2)."""
    Lam = lsat.covariance(Lam)
    gen = numpy_generator_arg("generator", generator)
    points = positive_int("points", points)
    d = Lam.shape[0]
    Lam_half, G_half = lsat.sqrtm_psd(Lam), lsat.sqrtm_psd(lsat.gamma_matrix(Lam, N))
    Gi = np.linalg.inv(lsat.gamma_matrix(Lam, N))
    min_A2 = -0.5 * np.trace(Lam @ Lam @ Gi)
    errors = []
    for _ in range(points):
        U_r, c_r = gen.standard_normal((d, d)), gen.standard_normal()
        gap = 0.5 * np.linalg.norm(G_half @ (c_r * Lam_half @ U_r @ Lam_half - Lam @ Gi)) ** 2
        loss = lsat.restricted_loss(U_r, c_r, Lam, N) - 0.5 * np.trace(Lam)
        errors.append(abs(loss - (min_A2 + gap)))
    return errors


SGD_TABLE_HEADER = ["seed", "‖cU − Γ⁻¹‖ / ‖Γ⁻¹‖", "off-blocks", "c", "c of the manifold point", "c of the flow",
                    "excess loss"]


def sgd_table(runs, Lam, N) -> list[list]:
    """One row per SGD run ``(W_KQ, W_PV)`` of the section on finite steps, under the column names ``SGD_TABLE_HEADER``: the
    relative distance of cU to Gamma^-1, the largest off-diagonal block entry, c against the point of the
    minimum manifold for the run's own imbalance (:func:`~icllib.lsa.theory.manifold_point`) and the flow's c,
    and the excess population loss."""
    runs = non_empty("runs", runs)
    Lam = lsat.covariance(Lam)
    d = Lam.shape[0]
    Gi = np.linalg.inv(lsat.gamma_matrix(Lam, N))
    c_flow = lsat.global_minimum(Lam, N)[1][d, d]
    rows = []
    for seed, run in enumerate(runs):
        if not isinstance(run, (tuple, list)) or len(run) != 2:
            raise ValueError(f"runs must hold (W_KQ, W_PV) pairs, got {run!r}")
        K, P = (real_array("runs", W) for W in run)
        if K.shape != (d + 1, d + 1) or P.shape != (d + 1, d + 1):
            raise ValueError(f"runs must hold ({d + 1}, {d + 1}) matrices, got {K.shape} and {P.shape}")
        _, c_manifold = lsat.manifold_point(Lam, N, float(lsa.balance_gap(K, P)))
        excess = float(lsat.population_loss(K, P, Lam, N)) - lsat.minimum_loss(Lam, N)
        off_blocks = max(np.abs(K[d, :d]).max(), np.abs(P[d, :d]).max())
        distance = np.linalg.norm(P[d, d] * K[:d, :d] - Gi) / np.linalg.norm(Gi)
        rows.append([seed, f"{distance:.2%}", f"{off_blocks:.1e}", f"{P[d, d]:.4f}", f"{c_manifold:.4f}",
                     f"{c_flow:.4f}", f"{excess:.1e}"])
    return rows


# --------------------------------------------------------------------------------------------------
# 3. Random covariances (Theorem 4.5, Appendix C)


def _c4_rhs_as_printed(U, c, gamma, xi, zeta):
    """The right-hand side of (C.4), entry by entry as printed (independent of theory.random_cov_gradient)."""
    dd = len(xi)
    dU = np.array([[-gamma[i] * c**2 * U[i, i] + xi[i] * c if i == j else -zeta[i, j] * c**2 * U[i, j]
                    for j in range(dd)] for i in range(dd)])
    dc = (-sum(gamma[i] * c * U[i, i] ** 2 for i in range(dd))
          - sum(zeta[i, j] * c * U[i, j] ** 2 for i in range(dd) for j in range(dd) if i != j)
          + sum(xi[i] * U[i, i] for i in range(dd)))
    return dU, dc


def _c5_loss_as_printed(U, c, gamma, xi, zeta):
    """l_rdm of (C.5), second line as printed, in torch (so that autograd can differentiate it)."""
    off = ~torch.eye(len(xi), dtype=torch.bool)
    return (0.5 * c**2 * (torch.as_tensor(gamma) * torch.diagonal(U) ** 2).sum()
            + 0.5 * c**2 * (torch.as_tensor(zeta)[off] * U[off] ** 2).sum()
            - c * (torch.as_tensor(xi) * torch.diagonal(U)).sum())


def lemma_c1_c3_errors(gamma, xi, zeta, *, generator: np.random.Generator, points=10) -> list[float]:
    """Lemmas C.1-C.3: the largest entry of (C.4) as printed plus the autograd gradient of (C.5) as printed, at
    ``points`` random (U_11, u_{-1}); zero when (C.4) is gradient flow on (C.5)."""
    gamma, xi, zeta = lsat.moment_triple(gamma, xi, zeta)
    gen = numpy_generator_arg("generator", generator)
    points = positive_int("points", points)
    d = xi.size
    errors = []
    for _ in range(points):
        U_r = torch.tensor(gen.standard_normal((d, d)), requires_grad=True)
        c_r = torch.tensor(gen.standard_normal(), dtype=torch.float64, requires_grad=True)
        g_U, g_c = torch.autograd.grad(_c5_loss_as_printed(U_r, c_r, gamma, xi, zeta), (U_r, c_r))
        rhs_U, rhs_c = _c4_rhs_as_printed(U_r.detach().numpy(), c_r.item(), gamma, xi, zeta)
        errors.append(max(np.abs(rhs_U + g_U.numpy()).max(), abs(rhs_c + g_c.item())))
    return errors


def lemma_c4_errors(gamma, xi, zeta, *, generator: np.random.Generator, points=20) -> list[float]:
    """Lemma C.4: ``abs(l_rdm - ((C.6) + (C.7)))`` at ``points`` random (U_11, u_{-1}), with the minimum (C.6)
    -sum_i xi_i^2 / gamma_i / 2 and the gap (C.7) from completing the square entry by entry."""
    gamma, xi, zeta = lsat.moment_triple(gamma, xi, zeta)
    gen = numpy_generator_arg("generator", generator)
    points = positive_int("points", points)
    d = xi.size
    min_C6 = -0.5 * np.sum(xi**2 / gamma)
    off = ~np.eye(d, dtype=bool)
    errors = []
    for _ in range(points):
        U_r, c_r = gen.standard_normal((d, d)), gen.standard_normal()
        diagonal_gap = 0.5 * np.sum(gamma * (np.diag(U_r) * c_r - xi / gamma) ** 2)
        gap_C7 = diagonal_gap + 0.5 * np.sum(zeta[off] * c_r**2 * U_r[off] ** 2)
        errors.append(abs(lsat.random_cov_loss(U_r, c_r, gamma, xi, zeta) - (min_C6 + gap_C7)))
    return errors


def mc_random_cov_loss(U, c, N, *, n, generator: torch.Generator, chunk=100_000) -> dict:
    """Monte-Carlo population loss (4.9) through the literal model at the invariant-set point (U_11, u_{-1}) =
    (U, c), for prompts of length ``N`` with their own covariance (lambda_i ~ Exp(1),
    :func:`~icllib.lsa.model.sample_random_cov_prompts`). Prompts come in chunks of ``chunk``, which bound the memory
    of the (chunk, N, d) prompt tensor; ``n`` must be a multiple of it. Returns ``mean`` and its standard error
    ``se``."""
    c = real_number("c", c)
    U = real_array("U", U)
    if U.ndim != 2 or U.shape[0] != U.shape[1] or U.shape[0] < 1:
        raise ValueError(f"U must be a square (d, d) matrix, got shape {U.shape}")
    d = U.shape[0]
    N, n, chunk = positive_int("N", N), positive_int("n", n), positive_int("chunk", chunk)
    if n % chunk:
        raise ValueError(f"n must be a multiple of chunk = {chunk}, got {n}")
    gen = torch_generator_arg("generator", generator)
    K, P = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1))
    K[:d, :d], P[d, d] = U, c
    sums = np.zeros(2)
    for _ in range(n // chunk):
        X, w, q, _ = lsa.sample_random_cov_prompts(chunk, N, d, gen)
        y = (X @ w[:, :, None])[..., 0]
        residual = lsa.predict(K, P, X, y, q) - (w * q).sum(1)
        per_prompt = 0.5 * residual**2
        sums += [float(per_prompt.sum()), float((per_prompt**2).sum())]
    mean = sums[0] / n
    return {"mean": mean, "se": np.sqrt((sums[1] / n - mean**2) / n)}


def lemma_c6_c8_runs(fractions, sigma_bound, W_KQ11, gamma, xi, zeta, K_410, *, T=3000) -> list[dict]:
    """Lemmas C.6-C.8 along flows (C.4) from Assumption 3.3 at ``sigma = fraction * sigma_bound`` for each of
    ``fractions`` (inside (C.10) = Eq. 4.10 when the fractions are below 1), with direction ``W_KQ11`` =
    Theta Theta^T and the estimate ``K_410`` of E[||Gamma_tau||_op ||Lambda_tau||_F^2].

    One dict per run: ``fraction``, the smallest ``min_c`` of u_{-1} along the path, the lower bounds on it as
    printed in (C.12) (``printed``, with ||E Lambda_tau Theta||_F^2 in the denominator) and as the proof ends in
    App. C.3 (``proven``, with ||E Lambda_tau^2||_op), ``pl``: the smallest ratio ||grad||^2 / gap over the
    path divided by the constant nu of (C.13) (at least 1 if Lemma C.8 holds), and the ``final_gap``.
    """
    gamma, xi, zeta = lsat.moment_triple(gamma, xi, zeta)
    d = xi.size
    TT = lsat.square("W_KQ11", W_KQ11, d)
    sigma_bound, K_410 = positive_number("sigma_bound", sigma_bound), positive_number("K_410", K_410)
    fractions = [positive_number("fractions", f) for f in non_empty("fractions", fractions)]
    ELT = float(np.trace(TT))  # ||E Lambda_tau Theta||_F^2 = tr(Theta Theta^T), since E Lambda_tau = I
    EL2_op = float(xi.max())  # ||E Lambda_tau^2||_op
    eta = float(zeta.min())  # eta of Lemma C.8: the smallest of the gamma_i and zeta_ij
    min_C6 = -0.5 * np.sum(xi**2 / gamma)
    rows = []
    for fraction in fractions:
        sig = fraction * sigma_bound
        bracket = 2 * ELT - np.sqrt(d) * sig**2 * K_410
        if not bracket > 0:
            raise ValueError(f"sigma_bound * fractions must satisfy (C.10) (2 ||E Lambda Theta||_F^2 > sqrt(d) "
                             f"sigma^2 K_410), got sigma = {sig:.4g}")
        run = lsa.random_cov_flow(sig * TT, sig, gamma, xi, zeta, T=T)
        printed = np.sqrt(sig**2 * bracket / (2 * np.sqrt(d) * ELT))  # (C.12)
        proven = np.sqrt(sig**2 * bracket / (2 * np.sqrt(d) * EL2_op))  # the bound the proof of Lemma C.7 ends with
        nu = eta * sig**2 * bracket / (2 * np.sqrt(d) * EL2_op)  # (C.13)
        gap = run["loss"] - min_C6
        resolved = gap > 1e-12
        pl = (run["grad_sq"][resolved] / gap[resolved]).min() / nu
        rows.append({"fraction": fraction, "min_c": run["c_path"].min(), "printed": printed, "proven": proven,
                     "pl": pl, "final_gap": gap[-1]})
    return rows


def one_third_estimates(D_diag, M, *, n, w, x_query, generators) -> dict:
    """The factor 1/3 of Section 4.3 by Monte Carlo at the limit (4.11) for a diagonal D
    (:func:`~icllib.lsa.theory.weights_411`), on prompts of length ``M`` with their own covariance.

    ``ratio``, ``ratio_se``: the mean of y-hat / <w, x_q> for the fixed task ``w`` and query ``x_query`` (drawn
    with the first of the two torch ``generators``); ``joint``, ``joint_se``: the regression slope of y-hat on
    y = <w, x_q> when w and x_q are drawn too (the second generator), using E y^2 = E tr(Lambda) = d.
    """
    K, P = lsat.weights_411(D_diag)
    d = K.shape[0] - 1
    M, n = positive_int("M", M), positive_int("n", n)
    w, x_query = real_array("w", w), real_array("x_query", x_query)
    if w.shape != (d,) or x_query.shape != (d,):
        raise ValueError(f"w and x_query must have shape ({d},), got {w.shape} and {x_query.shape}")
    generators = non_empty("generators", generators)
    if len(generators) != 2:
        raise ValueError(f"generators must be two torch generators, got {len(generators)}")
    fixed_gen, joint_gen = (torch_generator_arg("generators", g) for g in generators)
    X, w_t, q, _ = lsa.sample_random_cov_prompts(n, M, d, fixed_gen, w=w, x_query=x_query)
    y = (X @ w_t[:, :, None])[..., 0]
    ratio = (lsa.predict(K, P, X, y, q) / float(w @ x_query)).numpy()
    X, w_t, q, _ = lsa.sample_random_cov_prompts(n, M, d, joint_gen)
    y_q = (w_t * q).sum(1)
    joint = (lsa.predict(K, P, X, (X @ w_t[:, :, None])[..., 0], q) * y_q).numpy() / d
    return {"ratio": ratio.mean(), "ratio_se": ratio.std() / np.sqrt(n), "joint": joint.mean(),
            "joint_se": joint.std() / np.sqrt(n)}


# --------------------------------------------------------------------------------------------------
# 4. Corollary 4.3


def corollary43_audit(cases) -> list[dict]:
    """The exact error (:func:`~icllib.lsa.theory.shift_error`, w ~ N(0, I)) at the sample sizes of Corollary 4.3
    as printed and as corrected (:func:`~icllib.lsa.theory.corollary43_thresholds`), for each ``(name, Lam,
    eps)`` of ``cases`` (the chapter uses ``theory.COROLLARY43_CASES``). One dict per case:
    ``name``, ``eps``, ``M``, ``N_paper``, ``error_paper``, ``N_corrected``, ``error_corrected``."""
    rows = []
    for case in non_empty("cases", cases):
        if not isinstance(case, (tuple, list)) or len(case) != 3:
            raise ValueError(f"cases must hold (name, Lam, eps) triples, got {case!r}")
        name, Lam, eps = case
        th = lsat.corollary43_thresholds(lsat.covariance(Lam, "cases"), positive_number("cases", eps))
        rows.append({"name": name, "eps": eps, "M": th["M"], "N_paper": th["N_paper"],
                     "error_paper": lsat.shift_error(Lam, th["N_paper"], th["M"], tau2=1.0),
                     "N_corrected": th["N_corrected"],
                     "error_corrected": lsat.shift_error(Lam, th["N_corrected"], th["M"], tau2=1.0)})
    return rows


# --------------------------------------------------------------------------------------------------
# 5. Appendix D


def _leaf(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def _vec(a):
    return a.reshape(-1, order="F")  # column-major, as in the paper's notation section


def lemma_d1_errors(*, generator: np.random.Generator) -> dict[str, float]:
    """Lemma D.1's six rules of matrix calculus on random non-square, non-symmetric matrices (so that a missing
    transpose shows): the largest error of each, by its rule, against autograd or the explicit product."""
    gen = numpy_generator_arg("generator", generator)
    errors = {}
    x_d, B_d = _leaf(gen.standard_normal(4)), gen.standard_normal((4, 4))
    (g,) = torch.autograd.grad(x_d @ torch.as_tensor(B_d) @ x_d, x_d)
    errors["d(x^T B x)/dx"] = np.abs(g.numpy() - (B_d + B_d.T) @ x_d.detach().numpy()).max()
    A_d, X_d = gen.standard_normal((3, 4)), gen.standard_normal((4, 5))
    C_d = gen.standard_normal((5, 2))
    errors["Vec(AXB)"] = np.abs(_vec(A_d @ X_d @ C_d) - np.kron(C_d.T, A_d) @ _vec(X_d)).max()
    A_d, C_d = gen.standard_normal((4, 5)), gen.standard_normal((4, 5))
    errors["tr(A^T B)"] = abs(np.trace(A_d.T @ C_d) - _vec(A_d) @ _vec(C_d))
    X_t, B_d = _leaf(gen.standard_normal((3, 4))), gen.standard_normal((4, 4))
    (g,) = torch.autograd.grad(torch.trace(X_t @ torch.as_tensor(B_d) @ X_t.T), X_t)
    X_n = X_t.detach().numpy()
    errors["d tr(X B X^T)/dX"] = np.abs(g.numpy() - (X_n @ B_d.T + X_n @ B_d)).max()
    A_d, X_t = gen.standard_normal((3, 4)), _leaf(gen.standard_normal((3, 4)))
    (g,) = torch.autograd.grad(torch.trace(torch.as_tensor(A_d) @ X_t.T), X_t)
    errors["d tr(A X^T)/dX"] = np.abs(g.numpy() - A_d).max()
    A_d, B_d = gen.standard_normal((2, 3)), gen.standard_normal((4, 4))
    C_d, X_t = gen.standard_normal((3, 2)), _leaf(gen.standard_normal((3, 4)))
    A_t, B_t, C_t = (torch.as_tensor(m) for m in (A_d, B_d, C_d))
    (g,) = torch.autograd.grad(torch.trace(A_t @ X_t @ B_t @ X_t.T @ C_t), X_t)
    X_n = X_t.detach().numpy()
    rule = A_d.T @ C_d.T @ X_n @ B_d.T + C_d @ A_d @ X_n @ B_d
    errors["d tr(A X B X^T C)/dX"] = np.abs(g.numpy() - rule).max()
    return errors


def lemma_d2_error(Lam, A, n_nodes=3) -> float:
    """Lemma D.2 and Isserlis' theorem by the tensor Gauss-Hermite rule with ``n_nodes`` nodes per coordinate
    (:func:`~icllib.lsa.theory.gaussian_rule`): the larger of the errors of E[x x^T A x x^T] =
    Lam (A + A^T) Lam + tr(A Lam) Lam and of the fourth moments (:func:`~icllib.lsa.theory.isserlis_error`).
    Exact to round-off for three nodes or more, which integrate degree 5; two nodes must miss."""
    Lam = lsat.covariance(Lam)
    A = lsat.square("A", A, Lam.shape[0])
    nodes, wts = lsat.gaussian_rule(Lam, n_nodes)
    quadratic = np.einsum("si,ij,sj->s", nodes, A, nodes)
    lhs = np.einsum("s,si,sj,s->ij", wts, nodes, nodes, quadratic)
    rhs = Lam @ (A + A.T) @ Lam + np.trace(A @ Lam) * Lam
    return max(np.abs(lhs - rhs).max(), lsat.isserlis_error(Lam, n_nodes))


def lemma_d3_slack(*, generator: np.random.Generator, pairs=3000) -> np.ndarray:
    """Lemma D.3's chain tr(U^T V) <= sum_i s_i(U) s_i(V) <= s_1(U) sum_i s_i(V) <= sqrt(d) s_1(U) ||V||_F on
    ``pairs`` random pairs of random shapes: the smallest step of each chain relative to its last term
    (negative only if an inequality fails). Every third pair has V = c U, where the first step is an equality."""
    gen = numpy_generator_arg("generator", generator)
    pairs = positive_int("pairs", pairs)
    slack = []
    for k in range(pairs):
        dd = int(gen.integers(1, 6))
        U_d = gen.standard_normal((dd, dd + int(gen.integers(0, 4))))
        V_d = gen.standard_normal(U_d.shape) if k % 3 else U_d * gen.random()
        sU, sV = np.linalg.svd(U_d, compute_uv=False), np.linalg.svd(V_d, compute_uv=False)
        chain = [np.trace(U_d.T @ V_d), sU @ sV, sU[0] * sV.sum(), np.sqrt(dd) * sU[0] * np.linalg.norm(V_d)]
        slack.append(min(np.diff(chain)) / chain[-1])
    return np.array(slack)


def lemma_d4_ratios(*, generator: np.random.Generator, pairs=2000) -> tuple[np.ndarray, np.ndarray]:
    """Lemma D.4 on ``pairs`` random pairs of 4 x 4 positive semi-definite matrices (often singular): tr(AB) /
    (||A|| ||B||), which must be non-negative, and for commuting pairs (built in a shared eigenbasis) the
    lowest eigenvalue of the symmetric part of AB less its asymmetry, relative to ||AB||, which must be
    non-negative too (AB positive semi-definite)."""
    gen = numpy_generator_arg("generator", generator)
    pairs = positive_int("pairs", pairs)
    trace_ratio, eig_ratio = [], []
    for _ in range(pairs):
        F = gen.standard_normal((4, int(gen.integers(1, 5))))
        H = gen.standard_normal((4, int(gen.integers(1, 5))))
        A_p, B_p = F @ F.T, H @ H.T
        trace_ratio.append(np.trace(A_p @ B_p) / (np.linalg.norm(A_p) * np.linalg.norm(B_p)))
        Q, _ = np.linalg.qr(gen.standard_normal((4, 4)))
        A_c = (Q * (np.abs(gen.standard_normal(4)) * (gen.random(4) < 0.7))) @ Q.T
        B_c = (Q * np.abs(gen.standard_normal(4))) @ Q.T
        prod_c = A_c @ B_c
        lowest = min(np.linalg.eigvalsh((prod_c + prod_c.T) / 2).min(), -np.abs(prod_c - prod_c.T).max())
        eig_ratio.append(lowest / max(np.linalg.norm(prod_c), 1e-300))
    return np.array(trace_ratio), np.array(eig_ratio)
