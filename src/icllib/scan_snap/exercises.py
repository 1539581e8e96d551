"""Self-checks for the exercises of the chapter ``scan_snap`` (Scan and Snap, Tian, Wang, Chen and Du).

Each judge computes its expected value with the chapter's own closed forms and dynamics
(``icllib.scan_snap.theory``, ``icllib.scan_snap.dynamics``), so that the value is nowhere written into the
source; the tolerances admit a right answer reached another way (a root finder of one's own, a hand-written
recursion, a grid scan).
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq

from icllib.scan_snap import dynamics
from icllib.scan_snap import theory as sst
from icllib.exercises import SelfCheck, SelfChecks, number_near

# ex-scan-snap-omega1 and ex-scan-snap-steps: the vocabulary, rate and residual of the exercises.
OMEGA_M = 1000
STEPS_M, STEPS_ETA_Y, STEPS_EPS = 1000, 0.5, 0.01

# ex-scan-snap-t0: the setting of the paper's Fig. 9 at eta_Z = 1 (so eta_Y = 2).
T0_K, T0_M, T0_ETA_Y, T0_ETA_Z = 10, 1000, 2.0, 1.0

# ex-scan-snap-asymmetric: the negative control of the chapter's scan section. Common token A has P = 0.3 in both
# classes, common token B has P = 0.01 in class 0 and P = p in class 1; the chapter's five distinct tokens per class.
CONTROL_A, CONTROL_B0 = 0.3, 0.01


def _b_drift(p: float) -> float:
    """dz_B/dt at z = 0 (gamma = eta_Z = 1) when token B has probability ``p`` in class 1."""
    P = dynamics.one_query_probabilities([[CONTROL_A, CONTROL_B0], [CONTROL_A, p]], dynamics.DISTINCT_WEIGHTS, 2)
    return float(sst.population_zdot(P, np.zeros(P.shape[1]), gamma=1.0, eta_Z=1.0)[0][1])


def _sign_change() -> float:
    """The probability of B in class 1 at which its drift at z = 0 changes sign (positive at 0.4, negative just
    above the symmetric point 0.01)."""
    return brentq(_b_drift, 0.011, 0.4, xtol=1e-12)


def _b_at_transition() -> float:
    """B_n(t_0) of Theorem 4 at the exercise's setting (corrected closed form, C_0 = 1)."""
    t0 = sst.transition_time(K=T0_K, M=T0_M, eta_Y=T0_ETA_Y)
    return float(sst.snap_B(t0, K=T0_K, M=T0_M, eta_Y=T0_ETA_Y, eta_Z=T0_ETA_Z))


def _b_at_transition_swapped() -> float:
    """The typical slip: the ratio taken the other way round (eta_Y = 1, eta_Z = 2)."""
    t0 = sst.transition_time(K=T0_K, M=T0_M, eta_Y=T0_ETA_Z)
    return float(sst.snap_B(t0, K=T0_K, M=T0_M, eta_Y=T0_ETA_Z, eta_Z=T0_ETA_Y))


SELF_CHECKS = SelfChecks(
    "scan_snap",
    SelfCheck(
        label="ex-scan-snap-omega1",
        asks="omega_1 of Lemma 8 at M = 1000, one number",
        judge=number_near(lambda: sst.lemma8_omegas(OMEGA_M)[1], rtol=1e-4),
        hint="solve e^{Mh} = (M-1) M h exactly, with h = (1 + omega) ln M / M, on a bracket that leaves out the "
             "tiny zero omega_0; the leading order ln ln M / ln M is not the zero itself",
        wrong=float(np.log(np.log(OMEGA_M)) / np.log(OMEGA_M)),
    ),
    SelfCheck(
        label="ex-scan-snap-steps",
        asks="the number of steps S_n (an integer; one step either way is accepted)",
        judge=number_near(lambda: float(sst.steps_to_residual(STEPS_EPS, STEPS_M, STEPS_ETA_Y)), atol=1.0),
        hint="iterate the discrete clock of Eq. 33 from h* = 0 and stop at the first step whose residual "
             "(M-1) sqrt(M/(M-1)) / ((M-1) + e^{M h*}) is at most eps; Corollary 1's bound is an upper bound, not "
             "the count",
        wrong=float(np.ceil(np.log(STEPS_M / STEPS_EPS) / (STEPS_EPS * STEPS_ETA_Y))),
    ),
    SelfCheck(
        label="ex-scan-snap-t0",
        asks="B_n(t_0) at K = 10, M = 1000, eta_Y = 2, eta_Z = 1 (C_0 = 1), one number",
        judge=number_near(_b_at_transition, rtol=1e-3),
        hint="t_0 = 2(1 + omega_1) K ln M / eta_Y with eta_Y the decoder's rate, and Gamma carries "
             "eta_Z / eta_Y, not its inverse",
        wrong=_b_at_transition_swapped(),
    ),
    SelfCheck(
        label="ex-scan-snap-asymmetric",
        asks="the probability of token B in class 1 at which dz_B/dt at z = 0 changes sign",
        judge=number_near(_sign_change, atol=0.003),
        hint="renormalise the distinct tokens for each value, evaluate the drift of B at z = 0 with "
             "sst.population_zdot, and look for the sign change above 0.01, not at it",
        wrong=CONTROL_B0,
    ),
)

check = SELF_CHECKS.check
