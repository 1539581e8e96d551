"""Self-checks for the exercises of the chapter ``induction_emergence`` (the three-parameter flow of App. B.5).

Each judge computes its expected value with the chapter's own functions (:mod:`icllib.induction.emergence`):
the integrated flow, its closed-form limits (the chapter's Propositions 1-3) or gradient descent on
(alpha, beta, gamma). The chapter's Exercises section imports ``check``.
"""

from __future__ import annotations

from scipy.optimize import brentq

from icllib.induction import emergence as ie
from icllib.exercises import SelfCheck, SelfChecks, exactly, number_near

#: The common threshold the order-flip exercise searches: Definition 1's 1/2 up to well past the flip.
_FLIP_BRACKET = (0.5, 4.0)
#: The values of N the learning-rate exercise scans around the linear prediction N > eta / 2 = 50.
_LR_SCAN = range(30, 71)


def _t_gamma_over_n_at_2() -> float:
    return ie.emergence_times(2)["gamma"] / 2


def _fig5_asymptote_ratio() -> float:
    limits = ie.emergence_asymptotics(thresholds=ie.FIG5_THRESHOLDS)
    return limits["T_alpha/N^2"] / limits["T_beta/N^2"]


def _order_flip_threshold() -> float:
    def alpha_minus_beta(c: float) -> float:
        limits = ie.emergence_asymptotics(thresholds=(c, c, 0.5))
        return limits["T_alpha/N^2"] - limits["T_beta/N^2"]

    return brentq(alpha_minus_beta, *_FLIP_BRACKET, xtol=1e-12)


def _smallest_stable_n() -> int:
    scanned = list(_LR_SCAN)
    _, diverged = ie.gradient_descent_times(scanned, eta=ie.APP_F.lr)
    smallest = None
    for N, bad in reversed(list(zip(scanned, diverged))):  # from the stable end down to the first divergence
        if bad:
            break
        smallest = N
    return smallest


def _alpha_at_t_beta(N: int = 64) -> float:
    t_beta = ie.crossing_times(N)["beta"]
    return float(ie.flow_trajectory(N, t_beta, num=2)[1][-1])


SELF_CHECKS = SelfChecks(
    "induction_emergence",
    SelfCheck(
        label="ex-induction-emergence-phase1",
        asks="T_gamma / N at N = 2 from the integrated flow (one number)",
        judge=number_near(_t_gamma_over_n_at_2, rtol=1e-3),
        hint="integrate the whole flow of B.5 at N = 2 (the phase-1 formula is only its large-N limit) and divide the "
             "first time gamma reaches 1/2 by N",
        wrong=0.6931471805599453,  # ln 2, the large-N limit of Proposition 1
    ),
    SelfCheck(
        label="ex-induction-emergence-threshold",
        asks="the ratio T_alpha / T_beta of the large-N limits at App. F's thresholds",
        judge=number_near(_fig5_asymptote_ratio, rtol=1e-3),
        hint="on the slow manifold alpha = beta^2 / 2, so alpha reaches c when beta reaches sqrt(2c); use "
             "Proposition 2's tau(beta) at App. F's thresholds, not at Definition 1's",
        wrong=1.7828,  # the ratio at Definition 1's thresholds (1/2, 1/2)
    ),
    SelfCheck(
        label="ex-induction-emergence-n1",
        asks="the first time the loss reaches 1/2 along the flow at N = 1",
        judge=number_near(lambda: ie.loss_drop_time(1), rtol=1e-3),
        hint="the N^2 law is a large-N statement; at N = 1 integrate the two-parameter flow of (beta, gamma) itself",
        wrong=2.5066282746310002,  # sqrt(2 pi) N^2 at N = 1, the large-N law extrapolated
    ),
    SelfCheck(
        label="ex-induction-emergence-lr",
        asks="the smallest N from which on gradient descent with eta = 100 on (alpha, beta, gamma) reaches App. F's "
             "thresholds without diverging (an integer)",
        judge=exactly(_smallest_stable_n),
        hint="the linear stability argument gives a bound; run gradient_descent_times over a range of N around it, "
             "because a run stops once all three thresholds are reached",
        wrong=51,  # the linear prediction eta < 2N
    ),
    SelfCheck(
        label="ex-induction-emergence-order-flip",
        asks="the common threshold c for alpha and beta above which beta emerges after alpha in the large-N limit",
        judge=number_near(_order_flip_threshold, rtol=1e-6),
        hint="compare Proposition 2's two limits with the same threshold for both and solve for equality",
        wrong=1.0,  # the threshold at which they coincide when alpha uses half of beta's threshold
    ),
    SelfCheck(
        label="ex-induction-emergence-manifold",
        asks="alpha at the time T_beta, integrated at N = 64",
        judge=number_near(_alpha_at_t_beta, rtol=1e-3),
        hint="integrate the flow of B.5 up to the first time beta reaches 1/2 and read alpha there; the slow manifold "
             "is only the large-N limit",
        wrong=0.125,  # beta^2 / 2 at beta = 1/2, the limit of Proposition 2
    ),
)
check = SELF_CHECKS.check
