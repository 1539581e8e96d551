"""Self-checks for the exercises of the chapter ``lsa`` (notebooks/lsa.py, section "Exercises").

Each judge computes its expected value with the chapter's own functions (:mod:`icllib.lsa.model`,
:mod:`icllib.lsa.theory`, :mod:`icllib.lsa.experiments`) when the check runs, and accepts a right answer
computed another way (by hand, from a fit, at a large finite size) within the tolerance its judge states (and a wrong answer is told).
"""

from __future__ import annotations

import numpy as np
import torch

from icllib.lsa import model as lsa
from icllib.lsa import experiments as lsx
from icllib.lsa import theory as lsat
from icllib.exercises import SelfCheck, SelfChecks, number_near, numbers_near

# ex-lsa-orthogonal: a two-dimensional example, prompts of one point.
ORTHOGONAL_LAMBDA = np.diag([1.0, 4.0])
ORTHOGONAL_N = 20


def orthogonal_query_prediction() -> float:
    """The trained LSA's prediction (W* of Eq. 4.1, rho = M = 1) for x_1 = (1, 1), y_1 = 1, x_q = (1, -1)."""
    W_KQ, W_PV = lsat.global_minimum(ORTHOGONAL_LAMBDA, ORTHOGONAL_N)
    as_tensor = lambda rows: torch.tensor(rows, dtype=torch.float64)  # noqa: E731
    return float(lsa.predict(W_KQ, W_PV, as_tensor([[[1.0, 1.0]]]), as_tensor([[1.0]]), as_tensor([[1.0, -1.0]]))[0])


def corollary43_constant(d: int = 10) -> float:
    """N^2 times the w-averaged 1/N^2 term of Theorem 4.2 for Lambda = I_d, at N = 10^6 and M = 10^18 (so that
    the 1/M term is negligible): the exact error of :func:`~icllib.lsa.theory.shift_error` there."""
    N = 10**6
    return N**2 * lsat.shift_error(np.eye(d), N, 10**18, tau2=1.0)


def step_size_end_point(lr: float = 0.1, steps: int = 8000) -> float:
    """u_{-1} = c at the end of exact gradient descent with step ``lr`` from the chapter's balanced start
    (running example, sigma = sigma_max / 2, Theta from the generator seeded 7)."""
    Lam, N, d = lsx.running_covariance(), 15, 4
    K0, P0 = lsa.assumption33_init(d, 0.5 * lsat.sigma_max(Lam, N), generator=np.random.default_rng(7))
    return float(lsa.restricted_gd(K0[:d, :d], P0[d, d], Lam, N, lr=lr, steps=steps)["c"])


def isotropic_tail_rate(d: int = 4, N: int = 15) -> float:
    """The decay rate of the loss gap near W* for Lambda = I_d: twice the smallest non-zero eigenvalue of the
    Hessian of (5.5) there (:func:`~icllib.lsa.theory.restricted_hessian`)."""
    Lam = np.eye(d)
    W_KQ, W_PV = lsat.global_minimum(Lam, N)
    eigenvalues = np.linalg.eigvalsh(lsat.restricted_hessian(W_KQ[:d, :d], W_PV[d, d], Lam, N))
    return float(2 * eigenvalues[eigenvalues > 1e-10].min())


def swapped_covariates_limit() -> float:
    """The error of the trained LSA relative to E y_q^2 as M, N -> infinity, trained on Lambda = diag(1, 4) and
    tested with covariates and query from diag(4, 1): the exact formula at M = N = 10^7."""
    swapped = np.diag([4.0, 1.0])
    size = 10**7
    error = lsat.shift_error(np.diag([1.0, 4.0]), size, size, tau2=1.0, Lam_test=swapped, Lam_query=swapped)
    return error / np.trace(swapped)


def uniform_eigenvalue_limits() -> tuple[float, float]:
    """Theorem 4.5 redone for lambda_i ~ Uniform(0, 2) as N -> infinity: (E y-hat / <w, x_q> for a fixed query,
    the regression slope of y-hat on y when the query follows the prompt's covariance). With Gamma_tau ->
    Lambda_tau, the moments (C.3) tend to gamma_i = E lambda^3 and xi_i = E lambda^2, and D of (4.11) to
    xi_i / gamma_i (the exponential law's 2/6 = 1/3); the slope weights it by E lambda^2 / E lambda."""
    from scipy import stats

    law = stats.uniform(loc=0.0, scale=2.0)
    fixed_query = law.moment(2) / law.moment(3)
    return float(fixed_query), float(law.moment(2) / law.moment(1) * fixed_query)


SELF_CHECKS = SelfChecks(
    "lsa",
    SelfCheck(
        label="ex-lsa-orthogonal",
        asks="the prediction for the query (1, -1), one real number",
        judge=number_near(orthogonal_query_prediction, rtol=1e-3),
        hint="at W* the prediction is x_q^T Gamma^-1 (1/M) sum_i y_i x_i; build Gamma of Theorem 4.1 for this "
             "Lambda and N, and note that it is diagonal but not a multiple of the identity",
        wrong=0.0,
    ),
    SelfCheck(
        label="ex-lsa-cor43",
        asks="the limit of N^2 times the 1/N^2 term for d = 10, one real number",
        judge=number_near(corollary43_constant, rtol=1e-3),
        hint="with Lambda = I every norm ||a||^2_B averages to tr B over w ~ N(0, I), and Gamma tends to I; add "
             "the three terms of Eq. (4.6) without bounding any of them",
        wrong=310.0,  # (1 + 2d) tr(Lambda) + d^2 kappa at d = 10: the corollary's constant
    ),
    SelfCheck(
        label="ex-lsa-step-size",
        asks="u_-1 = c at the end of the run, one real number",
        judge=number_near(step_size_end_point, rtol=1e-5),
        hint="the loss only fixes the product cU; what a gradient step changes, and what gradient flow keeps, is "
             "the imbalance c^2 - ||U||_F^2",
        wrong=float(lsat.global_minimum(lsx.running_covariance(), 15)[1][4, 4]),  # the flow's c, at W*
    ),
    SelfCheck(
        label="ex-lsa-rate",
        asks="the decay rate r of the loss gap, one real number",
        judge=number_near(isotropic_tail_rate, rtol=1e-2),
        hint="near a minimum the gap is a quadratic form in the distance, which decays at each Hessian eigenvalue; "
             "the gap is the square of that distance, and the zero eigenvalue is a direction that changes nothing",
        wrong=2.0,  # the smallest non-zero Hessian eigenvalue itself, without the factor 2 of the squared gap
    ),
    SelfCheck(
        label="ex-lsa-covariate-swap",
        asks="the limit of E(y-hat - y_q)^2 / E y_q^2, one real number",
        judge=number_near(swapped_covariates_limit, rtol=1e-3),
        hint="as M and N grow the prediction tends to x_q^T Lambda^-1 Lambda_t w: write the error with "
             "K = Lambda^-1 Lambda_t - I and average over w and x_q",
        wrong=0.0,  # the layer does not re-estimate the covariance, unlike OLS
    ),
    SelfCheck(
        label="ex-lsa-uniform",
        asks="the pair (fixed-query limit of E y-hat / <w, x_q>, regression slope of y-hat on y) as N -> infinity",
        judge=numbers_near(uniform_eigenvalue_limits, rtol=1e-3),
        hint="the factor 1/3 of Theorem 4.5 is the exponential law's E lambda^2 / E lambda^3; take the moments of "
             "Uniform(0, 2) instead, and for the slope weight by how a query's variance follows its prompt's",
        wrong=(1 / 3, 2 / 3),  # the exponential law's two numbers
    ),
)

check = SELF_CHECKS.check
