"""The balance chapter's figure with a slider (issue 39): the linear model's SGD runs setting by setting (step size
and batch size), against the law's on-manifold ODE (chapter section *Balance under SGD where everything is
exact*). Drawn from the runs the chapter made (``theory.linear_balance_experiment``).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.ticker import NullFormatter
from scipy.integrate import solve_ivp

from icllib.plotting import figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import positive_int, positive_number, real_array


def linear_ode_ratio(steps, *, lr: float, ratio0: float, d: int, d_o: int, sigma: float, T: float) -> np.ndarray:
    """The ratio ``|u|^2/|w|^2`` the law predicts after each of ``steps`` SGD steps of size ``lr`` at temperature
    ``T``: Eq. 108 on the minimum manifold ``|u|^2 |w|^2 = 1``, ``d(a - 1/a)/dt = -4 T sigma^2 (d a - d_o / a)``
    with ``a = |u|^2`` and ``t = lr * steps`` (the ODE whose hitting time is ``theory.linear_balance_ode_time``)."""
    steps = real_array("steps", steps)
    if steps.ndim != 1 or np.any(steps < 0) or np.any(np.diff(steps) < 0):
        raise ValueError("steps must be a 1-d array of non-negative, increasing step numbers")
    lr, ratio0, sigma, T = (positive_number(name, value) for name, value in
                            (("lr", lr), ("ratio0", ratio0), ("sigma", sigma), ("T", T)))
    d, d_o = positive_int("d", d), positive_int("d_o", d_o)

    def rhs(_, s):                        # s = log a
        a = math.exp(s[0])
        return [-4 * T * sigma**2 * (d * a - d_o / a) / (1 + 1 / a**2) / a]

    times = lr * steps
    solution = solve_ivp(rhs, (0.0, float(times[-1])), [0.5 * math.log(ratio0)], t_eval=times, rtol=1e-10,
                         atol=1e-12)
    return np.exp(2 * solution.y[0])


# The runs' records drawn on a log axis: at most this many, evenly spaced in log(step), from this step on.
SHOWN_RECORDS, FIRST_STEP = 120, 10


def _log_spaced(times: np.ndarray) -> np.ndarray:
    """Indices of at most ``SHOWN_RECORDS`` of ``times`` (increasing record steps) evenly spread in log(step)."""
    wanted = np.geomspace(max(times[0], FIRST_STEP), times[-1], SHOWN_RECORDS)
    return np.unique(np.clip(np.searchsorted(times, wanted), 0, len(times) - 1))


def linear_balance_slider(linear: dict, *, ratio0: float, d: int, d_o: int, sigma: float):
    """Chapter *Balance under SGD where everything is exact*: for one setting ``(lr, S)`` of ``linear`` (the result
    of ``theory.linear_balance_experiment``) at a time, the runs' mean ratio ``|u|^2/|w|^2`` over the steps with
    the law's ODE (:func:`linear_ode_ratio`), beside every setting's steps to balance against ``S/lr^2`` with the
    current one marked. Settings are ordered by ``S/lr^2``, the law's time scale."""
    if not isinstance(linear, dict) or len(linear) < 2:
        raise ValueError("linear must be the {(lr, S): summary} of two or more settings")
    settings = sorted(linear, key=lambda key: key[1] / key[0] ** 2)
    shown = {key: _log_spaced(linear[key]["times"]) for key in settings}
    ode = {key: linear_ode_ratio(linear[key]["times"][shown[key]], lr=key[0], ratio0=ratio0, d=d, d_o=d_o,
                                 sigma=sigma, T=linear[key]["T"]) for key in settings}
    fig, (left, right) = figure(1, 2)
    (measured,) = left.plot([], [], color="C0", label="SGD, mean of the runs")
    (law,) = left.plot([], [], "--", color="C1", label="law (ODE)")
    left.axhline(d_o / d, color="grey", linestyle=":", label=r"$d_o/d$")
    longest = max(linear[key]["times"][-1] for key in settings)
    left.set(xlim=(FIRST_STEP, longest), ylim=(0.15, 1.3 * ratio0), xscale="log", yscale="log",
             xlabel="SGD step (log scale)",
             ylabel=r"mean $\|u\|^2/\|w\|^2$")
    scale = np.array([key[1] / key[0] ** 2 for key in settings])
    right.loglog(scale, [linear[key]["hit"] for key in settings], "o", color="C0", label="SGD, measured")
    right.loglog(scale, [linear[key]["ode"] for key in settings], "--", color="C1", label="law (ODE)")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this setting")
    right.set(xlabel=r"$S/\eta^2$", ylabel="steps to within 10 % of $d_o/d$", title="time to balance")
    # Over a decade or so matplotlib labels the minor ticks too (in default mode 3x10^3 met 4x10^3); the powers of
    # ten alone are labelled, and S/eta^2 = 10^4, the setting (0.01, 1) every mode runs, is always in range.
    right.xaxis.set_minor_formatter(NullFormatter())
    legend(left, where="below")
    legend(right)
    title = left.set_title(" ")

    def draw(key):
        lr, batch = key
        times = linear[key]["times"][shown[key]]
        measured.set_data(times, linear[key]["mean"][shown[key]])
        law.set_data(times, ode[key])
        current.set_data([batch / lr**2], [linear[key]["hit"]])
        title.set_text(rf"$\eta$ = {lr:g}, S = {batch}")
        return [measured, law, current, title]

    return slider_figure(fig, settings, draw, label="step size and batch", default=settings[0],
                         value_text=lambda key: f"η = {key[0]:g}, S = {key[1]}: S/η² = {key[1] / key[0] ** 2:,.0f}",
                         alt="The mean ratio of the squared norms of u and w over the SGD steps for one step size "
                             "and batch size at a time, with the law's prediction, beside the steps to balance "
                             "of every setting against S over eta squared")
