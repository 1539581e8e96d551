"""The chapter ``lsa``: a single linear self-attention (LSA) layer trained on linear regression prompts.

Zhang, Frei and Bartlett, *Trained Transformers Learn Linear Models In-Context* (JMLR 2024). Equation
numbers refer to that paper; "spec" refers to the replication spec of the chapter. The closed forms (the
constants of Theorem 4.1, exact population losses, test-time errors) are in :mod:`icllib.lsa.theory`.

The module reads top to bottom in the order of the chapter:

1. covariances: :func:`make_lambda`;
2. data and the model: :func:`sample_prompts`, :func:`embed` (Eq. 3.4), :func:`lsa_forward` (Eq. 3.3),
   :func:`predict` (bottom-right entry, rho = prompt length), :func:`quadratic_form_prediction` (Lemma 5.1),
   :func:`ols_predict`;
3. training: :func:`assumption33_init` (Eq. 3.10), :func:`gradient_flow` (Eq. 5.4, exact),
   :func:`restricted_gd` (finite steps), :func:`gradient_descent` and :func:`full_gradient_flow` (exact loss,
   many runs at once), :func:`sgd_full` (Monte Carlo, literal model), :func:`balance_gap`,
   :func:`newton_refine`, :func:`mc_loss_and_gradient`, with :func:`flow_summary` (what the chapter reads off
   a flow of Theorem 4.1) and :func:`generic_init` (generic starts);
4. test-time error by Monte Carlo: :func:`mc_prediction_error`, for the shifts of :func:`shift_scenarios`;
5. random covariances (Theorem 4.5): :func:`sample_random_cov_prompts`, :func:`random_cov_flow` (Eq. C.4).

Array conventions: ``Lam`` is a ``(d, d)`` symmetric positive-definite covariance; parameters ``W_KQ`` and
``W_PV`` are ``(..., d+1, d+1)``; prompts are ``X (B, M, d)``, ``y (B, M)``, ``x_query (B, d)``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy.integrate import solve_ivp

from icllib.config import progress
from icllib.lsa.theory import (covariance, moment_triple, parameter_pair, population_loss, random_cov_gradient,
                               random_cov_loss, restricted_gradient, restricted_loss, square)
from icllib.validation import (array_like, numpy_generator_arg, one_of, positive_int, positive_number, real_array,
                               real_number, torch_generator_arg)

# --------------------------------------------------------------------------------------------------
# Input checks


def _prompt(X, y, x_query) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    for name, value in (("X", X), ("y", y), ("x_query", x_query)):
        array_like(name, value)
    X = torch.as_tensor(X)
    dtype = X.dtype if X.dtype in (torch.float32, torch.float64) else torch.float64
    X, y, x_query = (torch.as_tensor(t, dtype=dtype) for t in (X, y, x_query))
    if X.ndim != 3 or X.shape[1] < 1:
        raise ValueError(f"X must have shape (B, M, d) with M >= 1, got {tuple(X.shape)}")
    B, M, d = X.shape
    if tuple(y.shape) != (B, M):
        raise ValueError(f"y must have shape (B, M) = {(B, M)}, got {tuple(y.shape)}")
    if tuple(x_query.shape) != (B, d):
        raise ValueError(f"x_query must have shape (B, d) = {(B, d)}, got {tuple(x_query.shape)}")
    return X, y, x_query


def _runs(W_KQ, W_PV) -> tuple[torch.Tensor, torch.Tensor]:
    """Parameters of R independent runs, both of shape ``(R, d+1, d+1)``."""
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    if W_KQ.ndim != 3 or W_PV.shape != W_KQ.shape:
        raise ValueError(f"W_KQ and W_PV must both have shape (R, d+1, d+1), got {tuple(W_KQ.shape)}, "
                         f"{tuple(W_PV.shape)}")
    return W_KQ, W_PV


# --------------------------------------------------------------------------------------------------
# 1. Covariances


def make_lambda(eigenvalues, *, generator: np.random.Generator | None = None) -> np.ndarray:
    """A covariance with the given eigenvalues, rotated by a Haar-random orthogonal matrix drawn from
    ``generator`` if one is given (diagonal otherwise).

    A rotated (non-diagonal) Lambda checks that nothing relies on Lambda being diagonal.
    """
    eigenvalues = real_array("eigenvalues", eigenvalues)
    if eigenvalues.ndim != 1 or eigenvalues.size < 1 or not np.all(np.isfinite(eigenvalues)) or eigenvalues.min() <= 0:
        raise ValueError(f"eigenvalues must be a non-empty 1-d array of positive numbers, got {eigenvalues!r}")
    if generator is None:
        return np.diag(eigenvalues)
    generator = numpy_generator_arg("generator", generator)
    Q, R = np.linalg.qr(generator.standard_normal((eigenvalues.size,) * 2))
    Q = Q * np.sign(np.diag(R))  # sign fix makes Q Haar-distributed
    Lam = (Q * eigenvalues) @ Q.T
    return (Lam + Lam.T) / 2


# --------------------------------------------------------------------------------------------------
# 2. Data and the model


def sample_prompts(B, M, Lam, generator: torch.Generator, *, w=None, dtype=torch.float64):
    """Draw ``B`` prompts of length ``M``: x_i, x_query ~ N(0, Lam) and w ~ N(0, I_d) unless ``w`` is given.

    Returns ``(X, w, x_query)`` of shapes (B, M, d), (B, d), (B, d); labels are ``y = X @ w`` (Section 3).
    A given ``w`` may be (d,) (one task for all prompts) or (B, d).
    """
    B, M = positive_int("B", B), positive_int("M", M)
    Lam = covariance(Lam)
    generator = torch_generator_arg("generator", generator)
    d = Lam.shape[0]
    L = torch.as_tensor(np.linalg.cholesky(Lam), dtype=dtype)
    # one 2-d product: a batched matmul with a tiny inner dimension is many times slower
    X = (torch.randn(B * M, d, generator=generator, dtype=dtype) @ L.T).reshape(B, M, d)
    x_query = torch.randn(B, d, generator=generator, dtype=dtype) @ L.T
    if w is None:
        w = torch.randn(B, d, generator=generator, dtype=dtype)
    else:
        w = torch.as_tensor(w, dtype=dtype)
        if w.shape not in ((d,), (B, d)):
            raise ValueError(f"w must have shape (d,) or (B, d), got {tuple(w.shape)}")
        w = w.expand(B, d).clone()
    return X, w, x_query


def embed(X, y, x_query) -> torch.Tensor:
    """The embedding E(P) of Eq. (3.4): columns (x_i; y_i) and (x_query; 0), shape (B, d+1, M+1)."""
    X, y, x_query = _prompt(X, y, x_query)
    B, M, d = X.shape
    E = torch.zeros(B, d + 1, M + 1, dtype=X.dtype)
    E[:, :d, :M] = X.transpose(1, 2)
    E[:, :d, M] = x_query
    E[:, d, :M] = y
    return E


def lsa_forward(W_KQ, W_PV, E, rho) -> torch.Tensor:
    """The whole output f_LSA(E) = E + W_PV E (E^T W_KQ E) / rho of Eq. (3.3), shape (B, d+1, M+1)."""
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    E = torch.as_tensor(array_like("E", E))
    if E.ndim != 3 or E.shape[1] != W_KQ.shape[-1]:
        raise ValueError(f"E must have shape (B, d+1, M+1) with d+1 = {W_KQ.shape[-1]}, got {tuple(E.shape)}")
    rho = positive_number("rho", rho)
    W_KQ, W_PV = W_KQ.to(E.dtype), W_PV.to(E.dtype)
    return E + W_PV @ E @ (E.transpose(1, 2) @ W_KQ @ E) / rho


def predict(W_KQ, W_PV, X, y, x_query) -> torch.Tensor:
    """y-hat_query = [f_LSA(E)]_{d+1, M+1} of Eq. (3.3) with rho = M, the prompt length; shape (B,).

    The entry is evaluated as ``W_PV[d, :] (E E^T / M) W_KQ E[:, M]``, the same product as (3.3) grouped
    so that no (M+1) x (M+1) matrix is formed (the residual E contributes the query label 0), with E E^T
    assembled from its blocks and E[:, M] = (x_query; 0). The paper takes rho = the width of E minus one
    (Sec. 3.2): N during training and M at test time (Eqs. 4.2-4.3).
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    X, y, x_query = _prompt(X, y, x_query)
    if W_KQ.ndim != 2 or W_KQ.shape[-1] != X.shape[2] + 1:
        raise ValueError(f"W_KQ and W_PV must be (d+1, d+1) with d = {X.shape[2]}, got {tuple(W_KQ.shape)}")
    W_KQ, W_PV = W_KQ.to(X.dtype), W_PV.to(X.dtype)
    B, M, d = X.shape
    # E E^T assembled from its blocks [X^T X + x_q x_q^T, X^T y; y^T X, y^T y] without forming E
    S = torch.empty(B, d + 1, d + 1, dtype=X.dtype)
    S[:, :d, :d] = X.transpose(1, 2) @ X + x_query[:, :, None] * x_query[:, None, :]
    S[:, :d, d] = S[:, d, :d] = (X.transpose(1, 2) @ y[:, :, None])[..., 0]
    S[:, d, d] = (y * y).sum(1)
    return torch.einsum("i,bij,jk,bk->b", W_PV[-1], S / M, W_KQ[:, :d], x_query)


def quadratic_form_prediction(W_KQ, W_PV, X, y, x_query) -> torch.Tensor:
    """y-hat = u^T H u of Lemma 5.1, H = X_q (x) (E E^T / M) / 2, u = Vec(U) (column-major); shape (B,).

    U = [[W_KQ_11, w_PV_21], [w_KQ_21^T, w_PV_22]] collects the only entries that enter the prediction.
    Forms the ((d+1)^2 x (d+1)^2) matrix H per prompt, so it is for checking, not for speed.
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    X, y, x_query = _prompt(X, y, x_query)
    d = X.shape[2]
    E = embed(X, y, x_query)
    S = E @ E.transpose(1, 2) / X.shape[1]
    Xq = torch.zeros(X.shape[0], d + 1, d + 1, dtype=X.dtype)
    Xq[:, :d, d] = x_query
    Xq[:, d, :d] = x_query
    H = 0.5 * torch.einsum("bij,bkl->bikjl", Xq, S).reshape(X.shape[0], (d + 1) ** 2, (d + 1) ** 2)
    U = torch.cat([W_KQ[:, :d], W_PV[d:, :].T], dim=1).to(X.dtype)  # columns: [W_KQ_{:, :d} | W_PV_{d, :}^T]
    u = U.T.reshape(-1)  # column-major Vec
    return torch.einsum("i,bij,j->b", u, H, u)


def ols_predict(X, y, x_query) -> torch.Tensor:
    """Ordinary least squares fitted on each prompt (minimum-norm when M < d), evaluated at the query; (B,)."""
    X, y, x_query = _prompt(X, y, x_query)
    w_hat = torch.linalg.pinv(X) @ y[:, :, None]
    return (x_query[:, None, :] @ w_hat)[:, 0, 0]


# --------------------------------------------------------------------------------------------------
# 3. Training


def assumption33_init(d, sigma, *, generator: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Initialisation (3.10) of Assumption 3.3: W_PV = sigma e e^T, W_KQ = sigma [Theta Theta^T 0; 0 0].

    Theta Theta^T = M M^T / ||M M^T||_F with M a standard Gaussian d x d matrix drawn from ``generator``.
    """
    d = positive_int("d", d)
    sigma = positive_number("sigma", sigma)
    M = numpy_generator_arg("generator", generator).standard_normal((d, d))
    TT = M @ M.T / np.linalg.norm(M @ M.T)
    W_KQ = np.zeros((d + 1, d + 1))
    W_KQ[:d, :d] = sigma * TT
    W_PV = np.zeros((d + 1, d + 1))
    W_PV[d, d] = sigma
    return W_KQ, W_PV


def _invariant_set_flow(gradient, U0, c0, *, T, n_eval, rtol, atol):
    """Gradient flow of a loss of (U_11, u_{-1}) from (U0, c0), solved by LSODA; ``gradient(U, c)`` returns
    (dL/dU, dL/dc). Returns the times (0, then log-spaced from 1e-3 to T), U (n_eval, d, d) and c (n_eval,)."""
    d = U0.shape[0]

    def rhs(_, z):
        dU, dc = gradient(z[:-1].reshape(d, d), z[-1])
        return -np.append(dU.ravel(), dc)

    t_eval = np.concatenate([[0.0], np.geomspace(1e-3, T, n_eval - 1)])
    sol = solve_ivp(rhs, (0.0, T), np.append(U0.ravel(), real_number("c0", c0)), method="LSODA", t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"gradient flow failed: {sol.message}")
    return sol.t, sol.y[:-1].T.reshape(-1, d, d), sol.y[-1]


def gradient_flow(U0, c0, Lam, N, *, T, n_eval=400, rtol=1e-11, atol=1e-13) -> dict:
    """Exact gradient flow (5.4) on the population loss from (U_11, u_{-1}) = (U0, c0), solved by LSODA.

    Returns ``t`` (n_eval,), ``U`` (n_eval, d, d), ``c`` (n_eval,), ``loss`` (n_eval,) and ``grad_sq``
    (n_eval,), the squared gradient norm ||dL/dU||_F^2 + (dL/dc)^2 used by the PL inequality (5.8).
    Time points are log-spaced from 1e-3 to T (and t = 0).
    """
    Lam = covariance(Lam)
    d = Lam.shape[0]
    U0 = square("U0", U0, d)
    T = positive_number("T", T)
    n_eval = positive_int("n_eval", n_eval)

    t, U, c = _invariant_set_flow(lambda U, c: restricted_gradient(U, c, Lam, N), U0, c0, T=T, n_eval=n_eval,
                                  rtol=rtol, atol=atol)
    loss = np.array([restricted_loss(Ui, ci, Lam, N) for Ui, ci in zip(U, c)])
    grads = [restricted_gradient(Ui, ci, Lam, N) for Ui, ci in zip(U, c)]
    grad_sq = np.array([np.sum(g**2) + gc**2 for g, gc in grads])
    return {"t": t, "U": U, "c": c, "loss": loss, "grad_sq": grad_sq}


def restricted_gd(U0, c0, Lam, N, *, lr, steps) -> dict:
    """Plain gradient descent with step ``lr`` on the invariant-set loss (5.5), exact gradients (no noise).

    Returns the final ``U``, ``c``, ``loss`` and the imbalance ``delta`` = c^2 - ||U||_F^2 with its
    prediction ``delta_predicted`` = delta_0 + lr^2 sum_k ((dL/dc)^2 - ||dL/dU||_F^2), the exact per-step
    change for a loss whose prediction is bilinear in (U, c) (spec 1.6, consequence 3).
    """
    Lam = covariance(Lam)
    U = square("U0", U0, Lam.shape[0]).copy()
    c = real_number("c0", c0)
    lr = positive_number("lr", lr)
    steps = positive_int("steps", steps)
    drift = 0.0
    delta0 = c**2 - float(np.sum(U**2))
    for _ in range(steps):
        dU, dc = restricted_gradient(U, c, Lam, N)
        drift += dc**2 - float(np.sum(dU**2))
        U, c = U - lr * dU, c - lr * dc
    return {"U": U, "c": c, "loss": restricted_loss(U, c, Lam, N), "delta": c**2 - float(np.sum(U**2)),
            "delta_predicted": delta0 + lr**2 * drift}


def relevant_mask(d) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean masks of the entries that enter y-hat (Eq. 3.6): first d columns of W_KQ, last row of W_PV."""
    d = positive_int("d", d)
    m_KQ = torch.zeros(d + 1, d + 1, dtype=torch.bool)
    m_KQ[:, :d] = True
    m_PV = torch.zeros(d + 1, d + 1, dtype=torch.bool)
    m_PV[d, :] = True
    return m_KQ, m_PV


def flow_summary(run, W_KQ_star, W_PV_star) -> dict:
    """What the chapter reads off one exact flow of Theorem 4.1 (:func:`gradient_flow`): the relative errors
    ``err_KQ``, ``err_PV`` of its end point against (W*_KQ, W*_PV) of Eq. (4.1), the largest drift ``balance``
    of u_{-1}^2 - ||U_11||_F^2 (Lemma A.3), the smallest ``min_c`` of u_{-1} (Lemmas A.4-A.5), and the largest
    rise ``max_increase`` and total ``drop`` of the loss (the proof of Lemma A.4)."""
    if not isinstance(run, dict) or not {"U", "c", "loss"} <= run.keys():
        raise ValueError("run must be the dict of gradient_flow (keys U, c, loss)")
    d = np.shape(run["U"])[-1]
    K_star = real_array("W_KQ_star", W_KQ_star)
    P_star = real_array("W_PV_star", W_PV_star)
    for name, W in (("W_KQ_star", K_star), ("W_PV_star", P_star)):
        if W.shape != (d + 1, d + 1):
            raise ValueError(f"{name} must have shape ({d + 1}, {d + 1}) to match the run, got {W.shape}")
    if not P_star[d, d] > 0:
        raise ValueError(f"W_PV_star must have a positive corner (Eq. 4.1), got {P_star[d, d]}")
    return {
        "err_KQ": np.linalg.norm(run["U"][-1] - K_star[:d, :d]) / np.linalg.norm(K_star[:d, :d]),
        "err_PV": abs(run["c"][-1] - P_star[d, d]) / P_star[d, d],
        "balance": np.abs(run["c"] ** 2 - (run["U"] ** 2).sum((1, 2))).max(),
        "min_c": run["c"].min(),
        "max_increase": np.diff(run["loss"]).max(),
        "drop": run["loss"][0] - run["loss"][-1],
    }


def generic_init(d, runs, *, generator: np.random.Generator, scale=0.05) -> tuple[torch.Tensor, torch.Tensor]:
    """``runs`` generic initialisations: every entry that enters y-hat (:func:`relevant_mask`) i.i.d.
    N(0, scale^2), the others zero (the chapter's section on spurious minima). Returns W_KQ, W_PV of shape
    (runs, d+1, d+1)."""
    runs, scale = positive_int("runs", runs), positive_number("scale", scale)
    gen = numpy_generator_arg("generator", generator)
    m_KQ, m_PV = relevant_mask(d)
    K = torch.zeros(runs, d + 1, d + 1, dtype=torch.float64)
    P = torch.zeros_like(K)
    K[:, m_KQ] = torch.as_tensor(gen.standard_normal((runs, int(m_KQ.sum()))) * scale)
    P[:, m_PV] = torch.as_tensor(gen.standard_normal((runs, int(m_PV.sum()))) * scale)
    return K, P


def shift_scenarios(Lam) -> list[tuple[str, dict]]:
    """The distribution shifts of Section 4.2 the chapter tabulates, as (name, keyword arguments) shared by
    :func:`~icllib.lsa.theory.shift_error` and :func:`mc_prediction_error`: a baseline, three task shifts,
    two query shifts and three covariate shifts of the training covariance ``Lam``."""
    Lam = covariance(Lam)
    d = Lam.shape[0]
    return [
        ("baseline", {}),
        ("task: label noise σ = 1", {"noise": 1.0}),
        ("task: w ~ N(0, 25 I)", {"tau2": 25.0}),
        ("task: fixed w = 3·1", {"w": 3 * np.ones(d)}),
        ("query ~ N(0, 4 I)", {"Lam_query": 4 * np.eye(d)}),
        ("query ~ N(0, 9 Λ)", {"Lam_query": 9 * Lam}),
        ("covariates × 0.5", {"Lam_test": 0.25 * Lam, "Lam_query": 0.25 * Lam}),
        ("covariates × 2", {"Lam_test": 4 * Lam, "Lam_query": 4 * Lam}),
        ("covariates: Λ_t = I", {"Lam_test": np.eye(d), "Lam_query": np.eye(d)}),
    ]

def gradient_descent(W_KQ, W_PV, Lam, N, *, lr, steps, record_every=100) -> dict:
    """Plain gradient descent on the exact :func:`~icllib.lsa.theory.population_loss`, for a batch of runs at once.

    ``W_KQ``, ``W_PV``: (R, d+1, d+1), R independent runs (the loss is summed over runs, so each run gets
    its own gradient). Returns the final parameters, the loss every ``record_every`` steps (n, R) and the
    conserved-under-flow quantity delta = ||p||^2 - ||Q||_F^2 of spec 1.6 at the end (R,).
    """
    W_KQ, W_PV = _runs(W_KQ, W_PV)
    lr = positive_number("lr", lr)
    steps = positive_int("steps", steps)
    record_every = positive_int("record_every", record_every)
    W_KQ = W_KQ.detach().clone().requires_grad_(True)
    W_PV = W_PV.detach().clone().requires_grad_(True)
    history = []
    for step in progress(range(steps), desc="gradient descent"):
        loss = population_loss(W_KQ, W_PV, Lam, N)
        if step % record_every == 0:
            history.append(loss.detach().clone())
        g_KQ, g_PV = torch.autograd.grad(loss.sum(), (W_KQ, W_PV))
        with torch.no_grad():
            W_KQ -= lr * g_KQ
            W_PV -= lr * g_PV
    with torch.no_grad():
        final = population_loss(W_KQ, W_PV, Lam, N)
    return {"W_KQ": W_KQ.detach(), "W_PV": W_PV.detach(), "loss": final,
            "history": torch.stack(history + [final]), "delta": balance_gap(W_KQ.detach(), W_PV.detach())}


def full_gradient_flow(W_KQ, W_PV, Lam, N, *, T, n_eval=60, rtol=1e-10, atol=1e-12) -> dict:
    """Exact gradient flow on :func:`~icllib.lsa.theory.population_loss` over the relevant entries, for R runs at once.

    ``W_KQ``, ``W_PV``: (R, d+1, d+1). The runs are stacked into one ODE (they do not interact) and solved
    by LSODA, which handles the stiffness that limits plain gradient descent. Returns the final
    parameters (irrelevant entries zero), the final loss (R,), the loss at ``n_eval`` log-spaced times
    (n_eval, R) and those times.
    """
    W_KQ, W_PV = _runs(W_KQ, W_PV)
    T = positive_number("T", T)
    R, d = W_KQ.shape[0], W_KQ.shape[-1] - 1
    theta0 = _pack(W_KQ.detach(), W_PV.detach())
    p = theta0.shape[1]

    def total(z):
        return population_loss(*_unpack(z.reshape(R, p), d), Lam, N).sum()

    def rhs(_, z):
        theta = torch.as_tensor(z).requires_grad_(True)
        (g,) = torch.autograd.grad(total(theta), theta)
        return -g.numpy()

    def jac(_, z):
        # the runs do not interact, so the Hessian of the summed loss is block diagonal
        return -torch.autograd.functional.hessian(total, torch.as_tensor(z), vectorize=True).numpy()

    t_eval = np.concatenate([[0.0], np.geomspace(1e-2, T, n_eval - 1)])
    # BDF with the exact Hessian as Jacobian: the loss is stiff (curvatures from 1e-2 to about 1e2)
    sol = solve_ivp(rhs, (0.0, T), theta0.reshape(-1).numpy(), method="BDF", jac=jac, t_eval=t_eval,
                    rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"gradient flow failed: {sol.message}")
    with torch.no_grad():
        history = population_loss(*_unpack(torch.as_tensor(sol.y.T).reshape(-1, R, p), d), Lam, N)
    W_KQ, W_PV = _unpack(torch.as_tensor(sol.y[:, -1]).reshape(R, p), d)
    return {"W_KQ": W_KQ, "W_PV": W_PV, "loss": history[-1], "history": history, "t": sol.t}


def sgd_full(W_KQ, W_PV, Lam, N, *, lr, batch, steps, generator, dtype=torch.float32) -> dict:
    """Monte-Carlo SGD on the empirical risk (3.7) over the full (d+1) x (d+1) matrices, fresh prompts each step.

    The prediction is the literal bottom-right entry of (3.3) with rho = N, grouped as in :func:`predict`.
    The step size is ``lr`` for the first half and decays as lr (steps/2)/k in the second half, which
    averages out the gradient noise. Returns the final float64 parameters.
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    lr = positive_number("lr", lr)
    batch, steps = positive_int("batch", batch), positive_int("steps", steps)
    Lam = covariance(Lam)
    N = positive_int("N", N)
    generator = torch_generator_arg("generator", generator)
    chol = torch.as_tensor(np.linalg.cholesky(Lam), dtype=dtype)
    d = Lam.shape[0]
    K = W_KQ.detach().to(dtype).clone().requires_grad_(True)
    P = W_PV.detach().to(dtype).clone().requires_grad_(True)
    for k in progress(range(steps), desc="SGD"):
        X = torch.randn(batch, N, d, generator=generator, dtype=dtype) @ chol.T
        xq = torch.randn(batch, d, generator=generator, dtype=dtype) @ chol.T
        w = torch.randn(batch, d, generator=generator, dtype=dtype)
        y = (X @ w[:, :, None])[..., 0]
        E = torch.cat([torch.cat([X, xq[:, None, :]], 1).transpose(1, 2),
                       torch.cat([y, torch.zeros_like(y[:, :1])], 1)[:, None, :]], 1)
        S = E @ E.transpose(1, 2) / N
        yhat = torch.einsum("i,bij,jk,bk->b", P[-1], S, K, E[:, :, -1])
        loss = 0.5 * ((yhat - (w * xq).sum(1)) ** 2).mean()
        g_K, g_P = torch.autograd.grad(loss, (K, P))
        step = lr if k < steps // 2 else lr * (steps / 2) / k
        with torch.no_grad():
            K -= step * g_K
            P -= step * g_P
    return {"W_KQ": K.detach().double(), "W_PV": P.detach().double()}


def balance_gap(W_KQ, W_PV) -> torch.Tensor:
    """delta = ||(w_PV_21, w_PV_22)||^2 - ||[W_KQ_11; w_KQ_21^T]||_F^2, conserved by gradient flow (spec 1.6).

    Lemma A.3 is the case delta = 0 (u_{-1}^2 = ||U_11||_F^2).
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    d = W_KQ.shape[-1] - 1
    return (W_PV[..., d, :] ** 2).sum(-1) - (W_KQ[..., :, :d] ** 2).sum((-1, -2))


def _pack(W_KQ, W_PV) -> torch.Tensor:
    """The relevant entries (Eq. 3.6) of (..., d+1, d+1) parameters as one vector (..., (d+1)(d+1))."""
    d = W_KQ.shape[-1] - 1
    batch = W_KQ.shape[:-2]
    return torch.cat([W_KQ[..., :, :d].reshape(*batch, -1), W_PV[..., d, :]], dim=-1)


def _unpack(theta, d):
    """Inverse of :func:`_pack` for ``theta`` of shape (..., p), irrelevant entries set to zero."""
    k = (d + 1) * d
    batch = theta.shape[:-1]
    W_KQ = torch.cat([theta[..., :k].reshape(*batch, d + 1, d),
                      torch.zeros(*batch, d + 1, 1, dtype=theta.dtype)], dim=-1)
    W_PV = torch.cat([torch.zeros(*batch, d, d + 1, dtype=theta.dtype),
                      theta[..., k:].reshape(*batch, 1, d + 1)], dim=-2)
    return W_KQ, W_PV


def newton_refine(W_KQ, W_PV, Lam, N, *, steps=5) -> dict:
    """Newton steps (pseudo-inverse Hessian) on the exact loss over the relevant entries, from one point.

    Used to pin a critical point found by gradient descent to machine precision; returns the refined
    ``W_KQ``, ``W_PV`` (irrelevant entries set to 0), ``loss``, ``grad_norm`` and the Hessian eigenvalues.
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    if W_KQ.ndim != 2:
        raise ValueError(f"W_KQ must be one (d+1, d+1) matrix, got {tuple(W_KQ.shape)}")
    steps = positive_int("steps", steps)
    d = W_KQ.shape[-1] - 1

    def f(theta):
        return population_loss(*_unpack(theta, d), Lam, N)

    theta = _pack(W_KQ.detach(), W_PV.detach())
    hessian = torch.autograd.functional.hessian
    for _ in range(steps):
        g = torch.autograd.functional.jacobian(f, theta)
        theta = theta - torch.linalg.pinv(hessian(f, theta), rtol=1e-10, hermitian=True) @ g
    g = torch.autograd.functional.jacobian(f, theta)
    H = hessian(f, theta)
    W_KQ, W_PV = _unpack(theta, d)
    return {"W_KQ": W_KQ, "W_PV": W_PV, "loss": float(f(theta)), "grad_norm": float(g.norm()),
            "hessian_eigenvalues": torch.linalg.eigvalsh(H)}


def mc_loss_and_gradient(W_KQ, W_PV, Lam, N, *, n, generator, chunk=50_000) -> dict:
    """Monte-Carlo population loss and gradient through the literal model (:func:`predict`, rho = N).

    Returns the mean loss, its standard error, the mean gradient of the per-prompt loss for both matrices
    and the per-entry standard errors, from ``n`` fresh prompts (summed in chunks to bound memory).
    """
    W_KQ, W_PV = parameter_pair(W_KQ, W_PV)
    N, n, chunk = positive_int("N", N), positive_int("n", n), positive_int("chunk", chunk)
    s1 = s2 = 0.0
    g1 = g2 = 0.0
    done = 0
    while done < n:
        b = min(chunk, n - done)
        X, w, xq = sample_prompts(b, N, Lam, generator)
        K = W_KQ.detach().expand(b, -1, -1).clone().requires_grad_(True)
        P = W_PV.detach().expand(b, -1, -1).clone().requires_grad_(True)
        E = embed(X, (X @ w[:, :, None])[..., 0], xq)
        S = E @ E.transpose(1, 2) / N
        yhat = torch.einsum("bi,bij,bjk,bk->b", P[:, -1], S, K, E[:, :, -1])
        per = 0.5 * (yhat - (w * xq).sum(1)) ** 2
        gK, gP = torch.autograd.grad(per.sum(), (K, P))
        g = torch.cat([gK.reshape(b, -1), gP.reshape(b, -1)], 1)
        s1 += float(per.detach().sum())
        s2 += float((per.detach() ** 2).sum())
        g1 = g1 + g.sum(0)
        g2 = g2 + (g**2).sum(0)
        done += b
    mean, gmean = s1 / n, g1 / n
    se = math.sqrt(max(s2 / n - mean**2, 0.0) / n)
    gse = ((g2 / n - gmean**2).clamp_min(0) / n).sqrt()
    k = W_KQ.numel()
    return {"loss": mean, "loss_se": se, "grad_KQ": gmean[:k].reshape(W_KQ.shape),
            "grad_PV": gmean[k:].reshape(W_PV.shape), "se_KQ": gse[:k].reshape(W_KQ.shape),
            "se_PV": gse[k:].reshape(W_PV.shape)}


# --------------------------------------------------------------------------------------------------
# 4. Test-time error by Monte Carlo


def _task_labels(task, z, noise, generator):
    if task == "linear":
        return z + noise * torch.randn(z.shape, generator=generator, dtype=z.dtype) if noise else z
    if task == "relu":
        return z.clamp_min(0)
    return z**2


def mc_prediction_error(W_KQ, W_PV, *, M, n, generator, Lam_test, Lam_query=None, task="linear", w=None,
                        tau2=1.0, noise=0.0, query="independent", ols=True, chunk=20_000) -> dict:
    """Monte-Carlo error E(y-hat - y_q)^2 of the LSA (:func:`predict`, rho = M) and of OLS on the same prompts.

    Prompts: x_i ~ N(0, Lam_test); labels y = f(<w, x>) (+ N(0, noise^2) for ``task="linear"``, on the
    query label too); ``w`` fixed (d,) or w ~ N(0, tau2 I). ``query``: ``"independent"`` (x_q ~
    N(0, Lam_query)), ``"first"`` (x_q = x_1, a dependent query) or ``"orthogonal"`` (x_q ~ N(0, Lam_query)
    projected onto the orthogonal complement of span{x_i}; needs M < d). Returns the mean squared errors
    with standard errors, E y_q^2, and the largest abs(y-hat) of the LSA (OLS entries are NaN when ``ols=False``).
    """
    M, n, chunk = positive_int("M", M), positive_int("n", n), positive_int("chunk", chunk)
    Lt = covariance(Lam_test, "Lam_test")
    Lq = Lt if Lam_query is None else covariance(Lam_query, "Lam_query")
    d = Lt.shape[0]
    one_of("task", task, ("linear", "relu", "quadratic"))
    one_of("query", query, ("independent", "first", "orthogonal"))
    if query == "orthogonal" and M >= d:
        raise ValueError(f"query='orthogonal' needs M < d (the x_i span R^d otherwise), got M={M}, d={d}")
    noise = positive_number("noise", noise, allow_zero=True)
    Lq_chol = torch.as_tensor(np.linalg.cholesky(Lq))
    sums = np.zeros(6)  # lsa, lsa^2, ols, ols^2, y^2
    max_abs = 0.0
    done = 0
    while done < n:
        b = min(chunk, n - done)
        if w is None:
            X, wb, _ = sample_prompts(b, M, Lt, generator)
            wb = wb * math.sqrt(positive_number("tau2", tau2))
        else:
            X, wb, _ = sample_prompts(b, M, Lt, generator, w=w)
        xq = torch.randn(b, d, generator=generator, dtype=torch.float64) @ Lq_chol.T
        if query == "first":
            xq = X[:, 0].clone()
        elif query == "orthogonal":
            Qb, _ = torch.linalg.qr(X.transpose(1, 2))  # (b, d, M): orthonormal basis of span{x_i}
            xq = xq - (Qb @ (Qb.transpose(1, 2) @ xq[:, :, None]))[..., 0]
        y = _task_labels(task, (X @ wb[:, :, None])[..., 0], noise, generator)
        yq = _task_labels(task, (xq * wb).sum(1), noise, generator)
        lsa_pred = predict(W_KQ, W_PV, X, y, xq)
        e_lsa = (lsa_pred - yq) ** 2
        e_ols = (ols_predict(X, y, xq) - yq) ** 2 if ols else torch.full_like(e_lsa, float("nan"))
        sums += [float(e_lsa.sum()), float((e_lsa**2).sum()), float(e_ols.sum()), float((e_ols**2).sum()),
                 float((yq**2).sum()), 0.0]
        max_abs = max(max_abs, float(lsa_pred.abs().max()))
        done += b
    mean = sums / n

    def se(m1, m2):
        return math.sqrt(max(m2 - m1**2, 0.0) / n)

    return {"lsa": mean[0], "lsa_se": se(mean[0], mean[1]), "ols": mean[2], "ols_se": se(mean[2], mean[3]),
            "y2": mean[4], "max_abs_lsa": max_abs}


# --------------------------------------------------------------------------------------------------
# 5. Random covariances (Theorem 4.5)


def sample_random_cov_prompts(B, M, d, generator: torch.Generator, *, w=None, x_query=None):
    """Prompts of Theorem 4.5: Lambda = diag(lambda), lambda_i iid Exponential(1) per prompt, x_i ~ N(0, Lambda).

    ``w`` and ``x_query`` may be fixed (d,) vectors; otherwise w ~ N(0, I) and x_query ~ N(0, Lambda) (the
    joint sampling of training). Returns ``(X, w, x_query, lam)`` of shapes (B, M, d), (B, d), (B, d), (B, d).
    """
    B, M, d = positive_int("B", B), positive_int("M", M), positive_int("d", d)
    generator = torch_generator_arg("generator", generator)
    # inverse-CDF sampling keeps everything on the one torch generator
    lam = -torch.log1p(-torch.rand(B, d, generator=generator, dtype=torch.float64))
    X = torch.randn(B, M, d, generator=generator, dtype=torch.float64) * lam.sqrt()[:, None, :]
    if x_query is None:
        x_query = torch.randn(B, d, generator=generator, dtype=torch.float64) * lam.sqrt()
    else:
        x_query = torch.as_tensor(x_query, dtype=torch.float64).expand(B, d).clone()
    w = torch.randn(B, d, generator=generator, dtype=torch.float64) if w is None else (
        torch.as_tensor(w, dtype=torch.float64).expand(B, d).clone())
    if x_query.shape != (B, d) or w.shape != (B, d):
        raise ValueError(f"w and x_query must have shape ({d},)")
    return X, w, x_query, lam


def random_cov_flow(U0, c0, gamma, xi, zeta, *, T, n_eval=400, rtol=1e-11, atol=1e-13) -> dict:
    """Gradient flow (C.4) on l_rdm of (C.5) (:func:`~icllib.lsa.theory.random_cov_loss`), solved by LSODA.

    Returns the final ``U``, ``c``, the largest balance gap abs(c^2 - ||U||_F^2) along the path
    (``balance``, Lemma C.5) and the path itself at ``n_eval`` times, log-spaced from 1e-3 to T (and 0):
    ``t``, ``U_path`` (n_eval, d, d), ``c_path``, ``loss`` and ``grad_sq`` (the squared gradient norm of (C.14)).
    """
    gamma, xi, zeta = moment_triple(gamma, xi, zeta)
    d = gamma.size
    U0 = square("U0", U0, d)
    T = positive_number("T", T)
    n_eval = positive_int("n_eval", n_eval)

    t, U_path, c_path = _invariant_set_flow(lambda U, c: random_cov_gradient(U, c, gamma, xi, zeta), U0, c0,
                                            T=T, n_eval=n_eval, rtol=rtol, atol=atol)
    grads = [random_cov_gradient(Ui, ci, gamma, xi, zeta) for Ui, ci in zip(U_path, c_path)]
    return {"U": U_path[-1], "c": float(c_path[-1]),
            "balance": float(np.abs(c_path**2 - (U_path**2).sum((1, 2))).max()),
            "t": t, "U_path": U_path, "c_path": c_path,
            "loss": np.array([random_cov_loss(Ui, ci, gamma, xi, zeta) for Ui, ci in zip(U_path, c_path)]),
            "grad_sq": np.array([np.sum(g**2) + gc**2 for g, gc in grads])}
