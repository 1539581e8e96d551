"""The chapter ``induction_emergence``: the gradient flow of the three-parameter model (Musat 2025,
``musat2025induction``, Theorem 2, App. B.5-B.8 and App. F) and its large-N limits.

Read top to bottom:

1. one step on the full matrices at a three-parameter point, which App. F's learning rate acts on;
2. the gradient flow of App. B.5, integrated from zero: crossing and emergence times (Definition 1), the
   loss-drop time, trajectories, and the quantities bounded in the proof of Theorem 2 (App. B.6-B.8);
3. gradient descent on (alpha, beta, gamma), the discrete counterpart of App. F (Fig. 5);
4. the large-N limits of the emergence times, derived in the chapter (its Propositions 1-3);
5. the chapter's bookkeeping: :func:`richardson`, the tables :func:`crossing_table` and :func:`bounds_table`
   (with :data:`PAPER_BOUNDS`, the bounds of App. B.6-B.8 as the paper states them, and :func:`worst_over_n`), and ``CHECKS`` with
   :func:`check_args`, the tolerance and its reason for each of the chapter's checks, so that a check in the
   chapter is one line while the ledger and the claim cards still show both.

The model, the task and the closed-form loss and gradient of App. B.3-B.4 are in
:mod:`icllib.induction.model`. The chapter's settings are named here: :data:`DEFINITION1_THRESHOLDS`
(Definition 1), :data:`FIG5_THRESHOLDS` and :data:`APP_F` (App. F).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import torch
from scipy.integrate import solve_ivp
from scipy.special import erf

from icllib.claims import check_arguments
from icllib.induction.model import (disentangled_forward, induction_coordinates, induction_weights,
                                     three_param_grad, three_param_loss, three_param_point)
from icllib.validation import int_array, positive_int, positive_number, real_array, tensor_arg

#: Definition 1's emergence thresholds for (alpha, beta, gamma).
DEFINITION1_THRESHOLDS = (0.5, 0.5, 0.5)
#: The thresholds of App. F and Fig. 5 for (alpha, beta, gamma).
FIG5_THRESHOLDS = (0.1, 0.1, 0.5)
#: The loss level whose first crossing is the loss-drop time (the loss starts at 1).
LOSS_DROP_LEVEL = 0.5


@dataclass(frozen=True)
class AppendixF:
    """App. F's training setting: width ``D``, learning rate ``lr`` on the full matrices; on
    (alpha, beta, gamma) that is the step ``eta = lr / D`` (see :func:`full_matrix_step`)."""

    D: int = 256
    lr: float = 100.0

    @property
    def eta(self) -> float:
        return self.lr / self.D


#: App. F's setting, D = 256 and learning rate 100 on the full matrices.
APP_F = AppendixF()


def _thresholds(thresholds) -> tuple[float, float, float]:
    try:
        values = tuple(thresholds)
    except TypeError:
        raise ValueError(f"thresholds must be three numbers (alpha, beta, gamma), got {thresholds!r}") from None
    if len(values) != 3:
        raise ValueError(f"thresholds must be three numbers (alpha, beta, gamma), got {thresholds!r}")
    return tuple(positive_number(f"thresholds[{k}]", v) for k, v in enumerate(values))


def _loss_level(level) -> float:
    level = positive_number("level", level)
    if level >= 1.0:
        raise ValueError(f"level must be in (0, 1): the loss starts at 1, got {level!r}")
    return level


# ---------------------------------------------------------------------------------------------------
# 1. One step on the full matrices (App. F)


def full_matrix_step(alpha: float, beta: float, gamma: float, X: torch.Tensor, y: torch.Tensor, *, lr: float):
    """One gradient step of size ``lr`` on the full matrices ``W1, W2, W3`` of Eq. 1 at the three-parameter
    weights, projected back onto the three-parameter subspace (App. F "constrains the parameters").

    Returns the new ``(alpha, beta, gamma)``. Since ``<grad_W L, B_k> = dL/dc_k`` and ``||B_k||_F^2 = D``,
    the pseudo-parameters move by ``-(lr / D) dL/dc_k``: a learning rate ``lr`` on the matrices is a rate
    ``lr / D`` on (alpha, beta, gamma).
    """
    lr = positive_number("lr", lr)
    point = three_param_point(alpha, beta, gamma, X)
    tensor_arg("y", y, shape=(X.shape[-1] // 2,), what=f"of shape (D,) = ({X.shape[-1] // 2},)")
    weights = [W.detach().requires_grad_(True) for W in induction_weights(*point, X.shape[-1] // 2)]
    loss = ((y - disentangled_forward(X, *weights)) ** 2).sum()
    grads = torch.autograd.grad(loss, weights)
    return induction_coordinates(*(W.detach() - lr * g for W, g in zip(weights, grads)))

# ---------------------------------------------------------------------------------------------------
# 2. The gradient flow of App. B.5 from zero


def three_param_flow(state, N):
    """Right-hand side of the gradient flow of App. B.5, ``d(alpha, beta, gamma)/dt = -grad L``.

    ``state`` has shape ``(3, ...)``; returns an array of the same shape.
    """
    state = real_array("state", state)
    if state.ndim < 1 or state.shape[0] != 3:
        raise ValueError(f"state must have shape (3, ...), got {state.shape}")
    return -np.stack(three_param_grad(state[0], state[1], state[2], N))


#: LSODA's tolerances for the flow (the chapter's checks go down to 1e-12).
RTOL, ATOL = 1e-10, 1e-13


def _rhs(N: int):
    F = 2.0 * N - 1.0
    log_F, log_2N2 = math.log(F), (math.log(2.0 * N - 2.0) if N > 1 else -math.inf)

    def rhs(_t, y):
        # The closed form of three_param_grad inlined for scalars: the solver calls this ~10^3 times.
        alpha, beta, gamma = y
        w = 1.0 / (1.0 + math.exp(log_2N2 - alpha)) if N > 1 else 1.0
        x = beta * w
        u = 1.0 / (1.0 + math.exp(min(log_F - x, 700.0)))
        v = 1.0 - u if u < 0.5 else 1.0 / (1.0 + math.exp(min(x - log_F, 700.0)))
        s_dL_ds = 2 * u * v * (gamma * gamma * (u - v / F) - gamma)
        dbeta = -s_dL_ds * w
        return [dbeta * beta * (1 - w), dbeta, 2 * u - 2 * gamma * (u * u + v * v / F)]

    return rhs


def _t_max(N: int) -> float:
    # Everything of interest happens before t = 3 N^2 (the loss drops near sqrt(2 pi) N^2, the chapter's
    # Proposition 3); N = 1 has no N^2 scale, hence the floor.
    return 3.5 * N * N + 20.0


def _crossing_events(N: int, thresholds, level):
    events = []
    for index, threshold in enumerate(thresholds):
        event = (lambda t, y, i=index, c=threshold: y[i] - c)
        event.direction = 1.0
        events.append(event)

    def loss_event(_t, y):
        return float(three_param_loss(y[0], y[1], y[2], N)) - level
    loss_event.direction = -1.0
    return events + [loss_event]


def crossing_times(N: int, *, thresholds=DEFINITION1_THRESHOLDS, level: float = LOSS_DROP_LEVEL,
                   max_time_factor: float = 64.0) -> dict[str, float]:
    """First times at which the gradient flow of App. B.5 from zero reaches the thresholds.

    Returns ``{"alpha": T_alpha, "beta": T_beta, "gamma": T_gamma, "loss": T_L}``: the first ``t`` with
    ``alpha >= thresholds[0]`` (resp. beta, gamma), and the first ``t`` with loss ``<= level``. Integrated
    with LSODA (rtol 1e-10, atol 1e-13) in the paper's time (unit learning rate). A time not reached
    before ``max_time_factor * (3.5 N^2 + 20)`` is ``inf``: alpha never moves when ``N = 1`` (the factor
    ``2N - 2`` of B.5 vanishes).

    The integration is deterministic, so its result is kept: the chapter asks for the same N in several
    sections (and :func:`proof_bounds` needs the emergence times), and each gets the one integration.
    """
    N = positive_int("N", N, 1)
    thresholds = _thresholds(thresholds)
    level = _loss_level(level)
    max_time_factor = positive_number("max_time_factor", max_time_factor)
    return dict(_integrate_crossings(N, thresholds, level, max_time_factor))


@lru_cache(maxsize=None)
def _integrate_crossings(N: int, thresholds: tuple, level: float, max_time_factor: float) -> dict[str, float]:
    names = ("alpha", "beta", "gamma", "loss")
    found = {name: math.inf for name in names}
    events = _crossing_events(N, thresholds, level)
    rhs = _rhs(N)
    state, start, chunk = np.zeros(3), 0.0, _t_max(N)
    horizon = max_time_factor * chunk
    while start < horizon:
        wanted = [name for name in names if math.isinf(found[name]) and not (name == "alpha" and N == 1)]
        if not wanted:
            break
        stop = min(start + chunk, horizon)
        solution = solve_ivp(rhs, (start, stop), state, method="LSODA", rtol=RTOL, atol=ATOL, events=events)
        if solution.status < 0:
            raise RuntimeError(f"integration failed for N = {N}: {solution.message}")
        for name, times in zip(names, solution.t_events):
            if math.isinf(found[name]) and times.size:
                found[name] = float(times[0])
        state, start, chunk = solution.y[:, -1], stop, 2 * chunk
    return found


def emergence_times(N: int, *, thresholds=DEFINITION1_THRESHOLDS) -> dict[str, float]:
    """Emergence times of Definition 1 under the flow of App. B.5 from zero (Assumptions 5-6).

    ``thresholds`` are in the order (alpha, beta, gamma) of App. F; the paper's Definition 1 uses 1/2
    for all three and App. F uses (0.1, 0.1, 0.5). Returns ``{"gamma": T_gamma, "beta": T_beta,
    "alpha": T_alpha}`` in gradient-flow time with unit learning rate; ``T_alpha = inf`` when ``N = 1``.
    """
    times = crossing_times(N, thresholds=thresholds)
    return {name: times[name] for name in ("gamma", "beta", "alpha")}


def loss_drop_time(N: int, *, level: float = LOSS_DROP_LEVEL) -> float:
    """First time the loss of App. B.3 along the flow of App. B.5 from zero falls to ``level``."""
    return crossing_times(N, level=level)["loss"]


def flow_trajectory(N: int, t_end: float, num: int = 2001):
    """The flow of App. B.5 from zero sampled at ``num`` equally spaced times in ``[0, t_end]``.

    Returns ``(t, alpha, beta, gamma, loss)``, each an array of length ``num``.
    """
    N = positive_int("N", N, 1)
    t_end = positive_number("t_end", t_end)
    num = positive_int("num", num, 2)
    t = np.linspace(0.0, t_end, num)
    solution = solve_ivp(_rhs(N), (0.0, t_end), np.zeros(3), method="LSODA", rtol=RTOL, atol=ATOL, t_eval=t)
    if solution.status < 0:
        raise RuntimeError(f"integration failed for N = {N}: {solution.message}")
    alpha, beta, gamma = solution.y
    return t, alpha, beta, gamma, three_param_loss(alpha, beta, gamma, N)


def proof_bounds(N: int, num: int = 20001) -> dict[str, float]:
    """The quantities bounded in the proof of Theorem 2 (App. B.6-B.8), measured along the flow.

    Phases: 1 is ``gamma < 1/2``; 2 is ``gamma >= 1/2, beta < 1/2``; 3 is ``beta >= 1/2, alpha < 1/2``.
    Keys and the paper's bound: ``N*gammadot phase1 min`` (>= 1/2, B.6.1), ``N*gammadot phase1 max``
    (<= 1, B.6.1), ``N*alpha(T_gamma)`` and ``N*beta(T_gamma)`` (O(1), B.6.2), ``gamma max phase2``
    (<= 3/2, B.7.1), ``alphadot/betadot max phase2`` (< 1, B.7.3), ``8N^2*alphadot min phase3`` (> 1,
    B.8.1), ``betadot/(3sqrt(e)/(4N^2)) max phase3`` (< 1, B.8.2), ``beta(T_alpha)`` (< 5.45, B.8.2).
    Extremes are taken over ``num`` samples per phase. Needs ``N >= 2`` (alpha never emerges for N = 1).
    """
    N = positive_int("N", N, 2)
    num = positive_int("num", num, 3)
    times = emergence_times(N)
    rhs = _rhs(N)
    edges = (0.0, times["gamma"], times["beta"], times["alpha"])
    phases = []
    state = np.zeros(3)
    for start, stop in zip(edges[:-1], edges[1:]):
        t = np.linspace(start, stop, num)
        solution = solve_ivp(rhs, (start, stop), state, method="LSODA", rtol=RTOL, atol=ATOL, t_eval=t)
        y = solution.y[:, :-1]                                      # the half-open phase [start, stop)
        phases.append((y, three_param_flow(y, N)))
        state = solution.y[:, -1]
    (y1, d1), (y2, d2), (y3, d3) = phases
    return {
        "N*gammadot phase1 min": float(N * d1[2].min()),
        "N*gammadot phase1 max": float(N * d1[2].max()),
        "N*alpha(T_gamma)": float(N * y2[0, 0]),
        "N*beta(T_gamma)": float(N * y2[1, 0]),
        "gamma max phase2": float(y2[2].max()),
        "alphadot/betadot max phase2": float(np.max(d2[0][1:] / d2[1][1:])),
        "8N^2*alphadot min phase3": float(8 * N**2 * d3[0].min()),
        "betadot/(3sqrt(e)/(4N^2)) max phase3": float(d3[1].max() / (3 * math.sqrt(math.e) / (4 * N**2))),
        "beta(T_alpha)": float(state[1]),
    }


# ---------------------------------------------------------------------------------------------------
# 3. Gradient descent on (alpha, beta, gamma) (App. F, Fig. 5)


def gradient_descent_times(Ns, *, eta: float, thresholds=FIG5_THRESHOLDS, max_steps: int = 10**6):
    """Gradient descent ``theta <- theta - eta grad L`` on (alpha, beta, gamma) from zero, all N at once.

    The discrete counterpart of App. F (orthonormal inputs and q = N make the loss data-independent, so
    the batch size plays no role). Returns ``(steps, diverged)``: ``steps`` has shape ``(len(Ns), 3)`` with
    the first step count at which alpha, beta, gamma reach their thresholds (``inf`` if never), and
    ``diverged`` flags runs whose parameters left ``[-1e6, 1e6]`` or became non-finite before reaching all
    three thresholds. A run stops once it has reached them all (later steps are not examined). Multiply the
    steps by ``eta`` to compare with gradient-flow time.
    """
    N = int_array("Ns", Ns)
    if N.ndim != 1 or N.size == 0:
        raise ValueError(f"Ns must be a non-empty 1-d list of integers >= 1, got {Ns!r}")
    eta = positive_number("eta", eta)
    limits = np.array(_thresholds(thresholds))[:, None]
    max_steps = positive_int("max_steps", max_steps, 1)
    theta = np.zeros((3, N.size))
    steps = np.full((3, N.size), np.inf)
    diverged = np.zeros(N.size, dtype=bool)
    active = np.ones(N.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(1, max_steps + 1):
            update = eta * np.stack(three_param_grad(theta[0], theta[1], theta[2], N))
            theta = np.where(active, theta - update, theta)        # finished or diverged runs stay frozen
            bad = active & ~np.all(np.isfinite(theta) & (np.abs(theta) <= 1e6), axis=0)
            diverged |= bad
            theta[:, bad] = 0.0
            reached = (theta >= limits) & np.isinf(steps) & active & ~bad
            steps[reached] = step
            active &= ~bad & ~np.all(np.isfinite(steps), axis=0)
            if not active.any():
                break
    return steps.T, diverged


# ---------------------------------------------------------------------------------------------------
# 4. Large-N limits (Propositions 1-3 of the chapter)


def emergence_asymptotics(*, thresholds=DEFINITION1_THRESHOLDS, level: float = LOSS_DROP_LEVEL) -> dict[str, float]:
    """Closed-form large-N limits of the emergence and loss-drop times (chapter, Propositions 1-3).

    Phase 1 (t = O(N)): gamma = 1 - e^{-t/N}, so ``T_gamma/N -> ln(1/(1 - c_gamma))``. Phase 2 (tau = t/N^2):
    ``dbeta/dtau = e^alpha/2``, ``dalpha/dtau = beta e^alpha/2``, so ``alpha = beta^2/2`` (the slow manifold)
    and ``tau(beta) = sqrt(2 pi) erf(beta/sqrt 2)``; hence ``T_beta/N^2 -> sqrt(2 pi) erf(c_beta/sqrt 2)``,
    ``T_alpha/N^2 -> sqrt(2 pi) erf(sqrt(c_alpha))``. tau(beta) has the finite limit sqrt(2 pi) as beta
    grows: the reduced flow blows up there and the loss falls, for any level in (0, 1 - 1/(2N)), at
    ``loss_drop/N^2 -> sqrt(2 pi)``. ``T_gamma/N`` needs ``c_gamma < 1`` (gamma tends to 1 in phase 1).
    """
    c_alpha, c_beta, c_gamma = _thresholds(thresholds)
    level = _loss_level(level)
    if c_gamma >= 1.0:
        raise ValueError(f"thresholds[2] (gamma) must be below 1 for a phase-1 limit, got {c_gamma!r}")
    root = math.sqrt(2 * math.pi)
    return {
        "T_gamma/N": math.log(1.0 / (1.0 - c_gamma)),
        "T_beta/N^2": root * float(erf(c_beta / math.sqrt(2.0))),
        "T_alpha/N^2": root * float(erf(math.sqrt(c_alpha))),
        "loss_drop/N^2": root,
    }


# --------------------------------------------------------------------------------------------------
# 5. The chapter's bookkeeping: Richardson extrapolation, tables, and the tolerance of each check


def richardson(values) -> float:
    """One Richardson step ``2 f(N) - f(N/2)`` from the last two entries of a sequence at doubling N: it removes
    an O(1/N) term and leaves O(1/N^2) (section 4 of the chapter)."""
    values = real_array("values", values)
    if values.ndim != 1 or values.size < 2:
        raise ValueError(f"values must be a sequence of at least two numbers, got shape {values.shape}")
    return 2 * values[-1] - values[-2]


def _n_values(N_values) -> list[int]:
    array = np.atleast_1d(int_array("N_values", N_values))
    if array.ndim != 1:
        raise ValueError(f"N_values must be a sequence of integers, got shape {array.shape}")
    return [int(N) for N in array]


def crossing_table(times, N_values) -> tuple[list[str], list[list]]:
    """Header and rows of the chapter's table of crossing times (:func:`crossing_times` for each N), raw and
    rescaled by N or N^2, for :func:`icllib.plotting.show_table`."""
    N_values = _n_values(N_values)
    if not isinstance(times, dict) or any(N not in times for N in N_values):
        raise ValueError("times must map every N of N_values to its crossing_times(N)")
    header = ["N", "T_γ", "T_β", "T_α", "T_L", "T_γ/N", "T_β/N²", "T_α/N²", "T_L/N²"]
    rows = []
    for N in N_values:
        t = times[N]
        rows.append([N, f"{t['gamma']:.4g}", f"{t['beta']:.6g}", f"{t['alpha']:.6g}", f"{t['loss']:.6g}",
                     f"{t['gamma'] / N:.4f}", f"{t['beta'] / N**2:.4f}", f"{t['alpha'] / N**2:.4f}",
                     f"{t['loss'] / N**2:.4f}"])
    return header, rows


#: The quantities of :func:`proof_bounds` with the paper's statement about each: (statement, "lower" or "upper"
#: or None for an order O(1), the bound's value).
PAPER_BOUNDS = {
    "N*gammadot phase1 min": (">= 1/2 (B.6.1)", "lower", 0.5),
    "N*gammadot phase1 max": ("<= 1 (B.6.1)", "upper", 1.0),
    "N*alpha(T_gamma)": ("O(1) (B.6.2)", None, None),
    "N*beta(T_gamma)": ("O(1) (B.6.2)", None, None),
    "gamma max phase2": ("<= 3/2 (B.7.1)", "upper", 1.5),
    "alphadot/betadot max phase2": ("< 1 (B.7.3)", "upper", 1.0),
    "8N^2*alphadot min phase3": ("> 1 (B.8.1)", "lower", 1.0),
    "betadot/(3sqrt(e)/(4N^2)) max phase3": ("< 1 (B.8.2)", "upper", 1.0),
    "beta(T_alpha)": ("< 5.45 (B.8.2)", "upper", 5.45),
}


def _bounds_for(bounds, N_values) -> list[int]:
    N_values = _n_values(N_values)
    if not isinstance(bounds, dict) or any(N not in bounds for N in N_values):
        raise ValueError("bounds must map every N of N_values to its proof_bounds(N)")
    return N_values


def worst_over_n(bounds, N_values) -> dict[str, float]:
    """For each bounded quantity of :data:`PAPER_BOUNDS`, its value at the worst N (``bounds[N]`` from
    :func:`proof_bounds`): the smallest for a lower bound, the largest for an upper bound; an order O(1) is left
    out. The chapter's checks of App. B.6-B.8 ("The proof, step by step") test these values."""
    N_values = _bounds_for(bounds, N_values)
    worst = {}
    for key, (_, kind, _) in PAPER_BOUNDS.items():
        if kind is not None:
            worst[key] = (min if kind == "lower" else max)(bounds[N][key] for N in N_values)
    return worst


def bounds_table(bounds, N_values) -> tuple[list[str], list[list]]:
    """Header and rows of the chapter's table of the proof's bounds: each quantity of :data:`PAPER_BOUNDS`, the
    paper's statement, its value for each N (``bounds[N]`` from :func:`proof_bounds`) and the margin of the
    worst N to the bound (positive: the bound holds; one rounding error is shown as 0)."""
    N_values = _bounds_for(bounds, N_values)
    worst = worst_over_n(bounds, N_values)
    rows = []
    for key, (statement, kind, value) in PAPER_BOUNDS.items():
        measured = [bounds[N][key] for N in N_values]
        if kind is None:
            margin_text = "-"
        else:
            margin = worst[key] - value if kind == "lower" else value - worst[key]
            # N gammadot = 1 exactly at t = 0: a margin of one rounding error is shown as 0
            margin_text = f"{0.0 if abs(margin) < 1e-12 else margin:.3g}"
        rows.append([key, statement] + [f"{m:.4g}" for m in measured] + [margin_text])
    return ["quantity", "paper"] + [f"N = {N}" for N in N_values] + ["margin"], rows


_RICHARDSON = "Richardson from the two largest N leaves O(1/N^2) < 1e-4; 1e-3 is 8x below the removed 1/N term"

# Each check of the chapter (notebooks/induction_emergence.py): its tolerance or bound and why (the ledger and the
# claim card show both). A reason with fields in braces is completed by :func:`check_args`; an expected value or a
# tolerance computed from the run (the large-N constants, the loss-drop tolerance) is passed by the chapter.
CHECKS = {
    "induction_emergence.closed-form-loss": dict(expected=0.0, atol=1e-12, why=(
        'float64 rounding of sums over at most 2N+1 = 65 tokens; the identity is exact')),
    "induction_emergence.closed-form-grad": dict(expected=0.0, atol=1e-12, why=(
        'float64 rounding of autograd through two softmaxes; the identity is exact')),
    "induction_emergence.assumptions-needed": dict(lower=1e-06, why=(
        'the closed form holds to 1e-12 under the assumptions; a gap above 1e-6 is not rounding')),
    "induction_emergence.full-step-rate": dict(expected=0.0, atol=1e-12, why=(
        'float64 rounding; the identity <grad_W L, B_k> = dL/dc_k is exact')),
    "induction_emergence.sympy-gradient": dict(expected=True, why=(
        'exact algebra: a wrong coefficient or power in B.4.6 leaves a non-zero difference')),
    "induction_emergence.sympy-flow": dict(expected=True, why='exact algebra, as above'),
    "induction_emergence.b73-identity": dict(expected=True, why='exact algebra, as above'),
    "induction_emergence.initial-velocity": dict(expected=True, why=(
        "SymPy's derivatives of B.5 against the hand-derived constants of the text above")),
    "induction_emergence.order": dict(expected=0, atol=0, why=(
        'a count of values of N, among those integrated, at which the order fails')),
    "induction_emergence.nonnegativity": dict(lower=-1e-13, why=(
        "B.6.3 asserts >= 0; -1e-13 is the integrator's absolute tolerance")),
    "induction_emergence.t-gamma-linear": dict(expected=1.0, atol=0.01, why=(
        'T_gamma/N converges like 1/N with constant 0.02: slope error < 0.001; 0.01 is a clear margin')),
    "induction_emergence.t-beta-quadratic": dict(expected=2.0, atol=0.02, why=(
        'the 0.8/N correction of T/N^2 lowers the fitted slope by about 0.8/N_mid, 0.013 for N_mid = 64')),
    "induction_emergence.t-alpha-quadratic": dict(expected=2.0, atol=0.02, why=(
        'the 0.7/N correction of T/N^2 lowers the fitted slope by about 0.7/N_mid, 0.011 for N_mid = 64')),
    "induction_emergence.b1-summary": dict(expected=1.0, atol=0.03, why=(
        "Theorem 2's orders give +1 (the two slope tolerances above added); B.1 as printed gives -1")),
    "induction_emergence.limit-t-gamma": dict(rtol=0.001, why=_RICHARDSON),
    "induction_emergence.limit-t-beta": dict(rtol=0.001, why=_RICHARDSON),
    "induction_emergence.limit-t-alpha": dict(rtol=0.001, why=_RICHARDSON),
    "induction_emergence.limit-loss-drop": dict(why=(
        'Proposition 3: the correction is about ln(N)/N; 2 ln(N)/N at the largest N')),
    "induction_emergence.slow-manifold": dict(expected=0.5, atol=0.05, why=(
        'an O(1/N) deviation halves when N doubles; 0.05 allows the O(1/N^2) term at N >= 64')),
    "induction_emergence.b61-gamma-rate": dict(lower=-1e-12, why=(
        'margin to [1/2, 1]; N gammadot = 1 exactly at t = 0, so only float rounding is allowed')),
    "induction_emergence.b62-small-at-tgamma": dict(expected=(math.log(2) - 0.5) / 2, rtol=0.01, why=(
        'Proposition 1 sharpens O(1/N) to this constant; 1% covers the O(1/N) correction at N >= 64')),
    "induction_emergence.b71-gamma-bound": dict(upper=1.5, why="the paper's bound, no slack"),
    "induction_emergence.b73-alpha-slower": dict(upper=1.0, why="the paper's bound, no slack"),
    "induction_emergence.b81-alpha-rate": dict(lower=1.0, why="the paper's bound without its O(1/N^3) slack"),
    "induction_emergence.b82-beta-bound": dict(upper=5.45, why="the paper's bound, no slack"),
    "induction_emergence.proof-sketch-alpha-rate": dict(lower=0.5, why=(
        'o(1/N^2) sends N^2 alphadot to 0; even a decay as slow as 1/ln N would give {ratio:.2f} over N = {first}'
        ' to {last}; Theta(1/N^2) keeps the ratio near 1')),
    "induction_emergence.b81-t3-bound": dict(expected=-32.0, atol=1e-12, why=(
        'exact: the remainder of the inverted bound is -32 c N + O(1); the printed O(1/N) would give 0')),
    "induction_emergence.loss-at-t-alpha": dict(expected=math.sqrt(math.e) / 2, rtol=0.01, why=(
        'Richardson from the two largest N removes the O(1/N) term; 1% covers the rest at N >= 64')),
    "induction_emergence.fig5-thresholds": dict(rtol=0.001, why=_RICHARDSON),
    "induction_emergence.step-as-lambda-over-d": dict(upper=1.0, why=(
        'one step of quantisation plus the first-order Euler error eta/N relative to the time scale N')),
    "induction_emergence.literal-step-diverges": dict(expected=True, why=(
        'divergence is predicted for exactly the N < 50 tested; a step that were stable, or unstable, for every N'
        ' would fail')),

}


def check_args(claim_id, **fields) -> dict:
    """The keyword arguments of ``check_claim`` for ``claim_id`` (``CHECKS``), with the fields of its reason
    filled in from ``fields``."""
    return check_arguments(CHECKS, claim_id, **fields)
