"""Self-checks for the exercises of the chapter ``balance`` (the law of balance, Ziyin, Li and Ueda).

Each judge computes its expected value with the chapter's own closed forms (``icllib.balance.theory``), so that
the value is nowhere written into the source; the tolerances admit a right answer reached another way (another
seed, a hand calculation, a numerical ODE solver).
"""

from __future__ import annotations

import numpy as np

from icllib.balance import theory
from icllib.exercises import SelfCheck, SelfChecks, number_near, numbers_near

# ex-balance-eq7-band: the two noise matrices of the exercise.
EQ7_C1 = np.diag([1.0, 2.0, 4.0])
EQ7_C2 = np.array([[3.0, 1.0], [1.0, 3.0]])

# ex-balance-linear-ratio: the linear model of the chapter with d = 6 inputs and d_o = 3 outputs.
LINEAR_D, LINEAR_D_OUT = 6, 3

# ex-balance-scalar: the scalar model's noise and the SGD setting of the exercise.
SCALAR_SIGMA, SCALAR_LR, SCALAR_BATCH = 0.5, 0.01, 2

# ex-balance-rate-exponent: the settings (lr, S) of the exercise and its linear model (d = 8, d_o = 2).
RATE_SETTINGS = ((0.02, 1), (0.02, 2), (0.01, 1))
RATE_SIGMA, RATE_D, RATE_D_OUT = 1.0, 8, 2


def _balanced_ratio(d: int, d_out: int) -> float:
    """The law's fixed point |u|^2/|w|^2 on the minimum of the linear model (C1, C2 of Eq. balance-linear-C)."""
    u, w = np.eye(d_out)[0], np.eye(d)[0]
    C1, C2 = theory.linear_C1_C2(u, w, np.outer(u, w), sigma=0.5)
    return theory.linear_balance_ratio(C1, C2, u, w)


def _scalar_time_constant() -> float:
    """Steps for |D| to fall by a factor e under the law in the scalar model on its minimum: dD/dt = -T C0 D,
    with C0 the noise of dl/d(uw) (the chapter's C1 with d = d_o = 1) and t = lr x steps."""
    one = np.ones(1)
    C1, _ = theory.linear_C1_C2(one, one, np.ones((1, 1)), sigma=SCALAR_SIGMA)
    temperature = SCALAR_LR / SCALAR_BATCH
    return 1.0 / (SCALAR_LR * temperature * float(C1[0, 0]))


def _law_exponent() -> float:
    """The exponent of the law's steps-to-balance (the on-manifold ODE) against S/lr^2 over RATE_SETTINGS."""
    scale, steps = [], []
    for lr, batch in RATE_SETTINGS:
        time = theory.linear_balance_ode_time(ratio0=16.0, target=RATE_D_OUT / RATE_D, d=RATE_D, d_o=RATE_D_OUT,
                                              sigma=RATE_SIGMA, T=lr / batch)
        scale.append(batch / lr**2)
        steps.append(time / lr)
    return float(np.polyfit(np.log(scale), np.log(steps), 1)[0])


SELF_CHECKS = SelfChecks(
    "balance",
    SelfCheck(
        label="ex-balance-eq7-band",
        asks="the pair (lower, upper) of Eq. 7's band",
        judge=numbers_near(lambda: theory.eq7_bounds(EQ7_C1, EQ7_C2), rtol=1e-3),
        hint="the lower bound pairs the smallest noise of one weight with the largest of the other; the "
             "eigenvalues of C2 are not its diagonal entries",
        wrong=(2.0, 1.0),  # the band with the eigenvalue indices swapped
    ),
    SelfCheck(
        label="ex-balance-linear-ratio",
        asks="the late mean of |u|^2/|w|^2 over your runs, one number (the tolerance allows for the "
             "finite step, which moves it by about 1 %)",
        judge=number_near(lambda: _balanced_ratio(LINEAR_D, LINEAR_D_OUT), rtol=0.05),
        hint="SGD balances the two noise terms of the law, not the two norms: on the minimum C1 and C2 are "
             "multiples of the identity, with factors set by the dimensions",
        wrong=1.0,  # norm balance
    ),
    SelfCheck(
        label="ex-balance-scalar",
        asks="the number of SGD steps for |D| to fall by a factor e under the law",
        judge=number_near(_scalar_time_constant, rtol=0.02),
        hint="the law gives a rate per unit time t; convert with t = lr x steps, and remember that the "
             "temperature is lr / S",
        wrong=1.0 / (SCALAR_LR * SCALAR_LR * 4 * SCALAR_SIGMA**2),  # T = lr, the batch size forgotten
    ),
    SelfCheck(
        label="ex-balance-rate-exponent",
        asks="the fitted exponent of steps-to-balance against S/lr^2",
        judge=number_near(_law_exponent, atol=0.2),
        hint="per unit time the law relaxes at a rate proportional to T = lr/S, and one step is lr of time",
        wrong=2.0,
    ),
)

check = SELF_CHECKS.check
