"""The LSA chapter's figure with a slider (issue 39): the trained layer's predictions and its exact error as the
test covariates are scaled by ``c`` (chapter section *Distribution shifts, next to ordinary least squares*),
from prompts sampled for the figure and the exact formula ``theory.shift_error``.
"""

from __future__ import annotations

import numpy as np

from icllib.lsa.model import predict, sample_prompts
from icllib.lsa.theory import gamma_matrix, shift_error
from icllib.plotting import figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import positive_int, positive_number, real_array

# Prompts drawn per scale: enough to show the slope, few enough that each frame stays a few kilobytes.
PROMPTS = 50
# Truth and prediction are drawn within these limits (the largest scale's predictions are clipped, not rescaled).
LIMIT = 8.0
# The error axis starts here: (c^2 - 1)^2 falls to 0 at c = 1, the exact error at finite M, N does not.
ERROR_FLOOR = 1e-2
# The scales of the covariates the slider offers: none (1) and shrinking or growing up to three-fold.
COVARIATE_SCALES = (0.5, 0.7, 1.0, 1.4, 2.0, 3.0)


def covariate_shift_slider(W_KQ, W_PV, Lam, *, N: int, M: int, generator, scales=COVARIATE_SCALES):
    """For one scale ``c`` of ``scales`` at a time: the predictions of the trained LSA (``W_KQ``, ``W_PV``, trained at
    length ``N`` on covariance ``Lam``) on ``PROMPTS`` prompts of length ``M`` whose covariates (and query) are
    ``N(0, c^2 Lam)``, against the truth ``<w, x_q>``, with the slope ``c^2 tr(Gamma^-1 Lam)/d`` the formula
    predicts; beside the exact error divided by ``E y_q^2`` against ``c`` with its large-``M, N`` limit
    ``(c^2 - 1)^2``. ``generator`` (a ``torch.Generator``) draws the prompts."""
    Lam = real_array("Lam", Lam)
    N, M = positive_int("N", N), positive_int("M", M)
    scales = [positive_number("scales", c) for c in scales]
    if len(scales) < 2 or 1.0 not in scales:
        raise ValueError("scales must hold two or more scales, 1 among them (no shift)")
    d = Lam.shape[0]
    slope = float(np.trace(np.linalg.solve(gamma_matrix(Lam, N), Lam))) / d
    points = {}
    for c in scales:
        X, w, query = sample_prompts(PROMPTS, M, c**2 * Lam, generator)
        y = (X @ w[:, :, None])[..., 0]
        points[c] = ((w * query).sum(1).numpy(), predict(W_KQ, W_PV, X, y, query).numpy())

    def normalised_error(c):
        return shift_error(Lam, N, M, tau2=1.0, Lam_test=c**2 * Lam, Lam_query=c**2 * Lam) / (c**2 * np.trace(Lam))

    fig, (left, right) = figure(1, 2)
    left.plot([-LIMIT, LIMIT], [-LIMIT, LIMIT], ":", color="grey", label="OLS (exact here)")
    (cloud,) = left.plot([], [], "o", markersize=2.5, alpha=0.6, color="C0", label="LSA on sampled prompts")
    (predicted,) = left.plot([], [], "--", color="C1", label=r"slope $c^2\,\mathrm{tr}(\Gamma^{-1}\Lambda)/d$")
    left.set(xlim=(-LIMIT, LIMIT), ylim=(-LIMIT, LIMIT), xlabel=r"truth $\langle w, x_q\rangle$",
             ylabel=r"LSA prediction $\hat y$")
    legend(left, where="below")
    grid = np.geomspace(min(scales), max(scales), 60)
    right.plot(grid, [normalised_error(c) for c in grid], color="C0", label=f"exact, M = {M}, N = {N}")
    right.plot(grid, (grid**2 - 1) ** 2, "--", color="grey", label=r"$(c^2-1)^2$, $M, N\to\infty$")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this $c$")
    right.set(xscale="log", yscale="log", ylim=(ERROR_FLOOR, None), xlabel=r"covariate scale $c$",
              ylabel=r"error / $E\,y_q^2$ (log scale)", title="exact error")
    right.set_xticks(scales, [f"{c:g}" for c in scales])
    right.minorticks_off()
    legend(right)
    title = left.set_title(" ")

    def draw(c):
        truth, prediction = points[c]
        cloud.set_data(truth, np.clip(prediction, -LIMIT, LIMIT))
        predicted.set_data([-LIMIT, LIMIT], [-LIMIT * c**2 * slope, LIMIT * c**2 * slope])
        current.set_data([c], [normalised_error(c)])
        title.set_text(f"covariates scaled by c = {c:g}")
        return [cloud, predicted, current, title]

    return slider_figure(fig, scales, draw, label="covariate scale c", default=1.0,
                         value_text=lambda c: f"c = {c:g}: error {normalised_error(c):.3g} of E y_q²",
                         alt="The trained linear self-attention's predictions against the truth on prompts "
                             "whose covariates are scaled by c, one scale at a time, beside the exact error "
                             "against c")
