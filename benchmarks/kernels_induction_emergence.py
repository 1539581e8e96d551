"""Kernels of the chapter induction_emergence: the flow of App. B.5 for every power of two N up to 4096,
and gradient descent on (alpha, beta, gamma) for several N (App. F, Fig. 5)."""

import math

import numpy as np
from scipy.integrate import solve_ivp

from icllib.induction import model as ic
from icllib.induction import emergence as ie

FLOW_N = [2**k for k in range(1, 13)]
GD_N = [2, 4, 8, 16, 32, 64]
GD_ETA = ie.APP_F.eta


def flow_fast():
    """The chapter's solver: LSODA (stiff-aware) with the closed form inlined for scalars, event location."""
    return [ie.crossing_times(N) for N in FLOW_N]


def flow_reference():
    """A plain integration: the same LSODA and events, on the generic vectorised right-hand side
    ``three_param_flow`` (argument checks and NumPy calls on 3-vectors at every evaluation).

    Explicit RK45 is no reference here: the flow is stiff (gamma relaxes at rate 1/N, alpha and beta move on
    the scale N^2) and RK45 needed 39 000 steps and 18 s for N = 256 alone."""
    results = []
    for N in FLOW_N:
        events = []
        for index in range(3):
            event = (lambda t, y, i=index: y[i] - 0.5)
            event.direction = 1.0
            events.append(event)
        loss_event = (lambda t, y, N=N: float(ic.three_param_loss(y[0], y[1], y[2], N)) - 0.5)
        loss_event.direction = -1.0
        solution = solve_ivp(lambda t, y, N=N: ie.three_param_flow(y, N), (0.0, 3.5 * N * N + 20.0), np.zeros(3),
                             method="LSODA", rtol=ie.RTOL, atol=ie.ATOL, events=events + [loss_event])
        first = [float(times[0]) if times.size else math.inf for times in solution.t_events]
        results.append(dict(zip(("alpha", "beta", "gamma", "loss"), first)))
    return results


def gd_fast():
    """Gradient descent for all N at once (one vectorised update per step)."""
    return ie.gradient_descent_times(GD_N, eta=GD_ETA)


def gd_reference():
    """The same gradient descent, one N at a time."""
    runs = [ie.gradient_descent_times([N], eta=GD_ETA) for N in GD_N]
    return np.concatenate([steps for steps, _ in runs]), np.concatenate([diverged for _, diverged in runs])


KERNELS = {
    "flow_all_N_to_4096": (flow_fast, flow_reference),
    "gradient_descent_N_to_64": (gd_fast, gd_reference),
}
