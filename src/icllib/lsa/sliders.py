"""The LSA chapters' figures with a slider (issue 39): what gradient flow finds as the training prompts' length
``N`` moves (chapter ``lsa``, section *Theorem 4.1 by exact gradient flow*), from exact flows run for the figure
against the closed forms of ``theory``; and the trained layer's predictions and its exact error as the test
covariates are scaled by ``c`` (chapter ``lsa_shifts``, section *Distribution shifts, next to ordinary least
squares*), from prompts sampled for the figure and the exact formula ``theory.shift_error``.
"""

from __future__ import annotations

import copy

import numpy as np

from icllib.lsa.model import assumption33_init, gradient_flow, predict, sample_prompts
from icllib.lsa.theory import (covariance, gamma_matrix, minimum_loss, restricted_loss, shift_error,
                               sigma_max)
from icllib.plotting import figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import numpy_generator_arg, positive_int, positive_number, real_array

# Prompts drawn per scale: enough to show the slope, few enough that each frame stays a few kilobytes.
PROMPTS = 50
# Truth and prediction are drawn within these limits (the largest scale's predictions are clipped, not rescaled).
LIMIT = 8.0
# The error axis starts here: (c^2 - 1)^2 falls to 0 at c = 1, the exact error at finite M, N does not.
ERROR_FLOOR = 1e-2
# The scales of the covariates the slider offers: none (1) and shrinking or growing up to three-fold.
COVARIATE_SCALES = (0.5, 0.7, 1.0, 1.4, 2.0, 3.0)
# The training lengths N the slider offers: from two points per prompt to far past the chapter's N = 15.
TRAINING_LENGTHS = (2, 4, 8, 15, 40, 120, 500)
# The flows of the figure are solved to 1e-8 (the chapter's own flows to 1e-11): the figure needs three digits,
# and there each flow's end matches the closed form to 1e-9 or better.
FIGURE_FLOW_TOLERANCE = dict(rtol=1e-8, atol=1e-10)


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


def _flow_ends(Lam, N_values, *, scale: float, generator, T: float) -> tuple[dict, dict]:
    """For each ``N``: the end at ``T`` of the exact flow (5.4) from Assumption 3.3 at ``scale * sigma_max``, as
    the predictor ``c U`` along each eigenvector of ``Lam`` (ascending eigenvalues) and the loss there."""
    d = Lam.shape[0]
    _, V = np.linalg.eigh(Lam)
    predictor, loss = {}, {}
    for N in N_values:
        K0, P0 = assumption33_init(d, scale * sigma_max(Lam, N), generator=copy.deepcopy(generator))
        # n_eval=3: the times 0, 1e-3 and T, of which the figure needs only the last.
        run = gradient_flow(K0[:d, :d], P0[d, d], Lam, N, T=T, n_eval=3, **FIGURE_FLOW_TOLERANCE)
        predictor[N] = np.einsum("ij,ik,kj->j", V, run["c"][-1] * run["U"][-1], V)
        loss[N] = float(run["loss"][-1])
    return predictor, loss


def training_length_slider(Lam, *, generator, scale: float = 0.5, N_values=TRAINING_LENGTHS, default: int = 15,
                           T: float = 1500.0):
    """Chapter ``lsa``, *Theorem 4.1 by exact gradient flow*: for one training length ``N`` of ``N_values`` at a
    time, the end at time ``T`` of the exact gradient flow (5.4) from Assumption 3.3 with ``sigma = scale *
    sigma_max(Lam, N)`` (its direction ``Theta`` drawn from a copy of ``generator``, the same for every ``N``, as
    ``experiments.theorem41_flows`` draws it): the trained predictor ``c U`` in each eigendirection ``v_i`` of
    ``Lam``, ``v_i^T c U v_i``, against the eigenvalue ``lambda_i``, with Theorem 4.1's ``Gamma^-1`` (eigenvalues
    ``1/((1 + 1/N) lambda + tr(Lam)/N)``) and the ``N -> infinity`` predictor ``Lam^-1``; beside the loss at the
    flow's end against ``N``, with the closed form ``L*`` of Corollary A.2 and the loss of ``Lam^-1`` at the same
    ``N``, the current ``N`` marked."""
    Lam = covariance(Lam)
    numpy_generator_arg("generator", generator)
    scale, T = positive_number("scale", scale), positive_number("T", T)
    N_values = sorted({positive_int("N_values", N) for N in N_values})
    if len(N_values) < 2:
        raise ValueError("N_values must hold two or more training lengths")
    if default not in N_values:
        raise ValueError(f"default must be one of N_values {N_values}, got {default!r}")
    predictor, loss = _flow_ends(Lam, N_values, scale=scale, generator=generator, T=T)
    lam, trace = np.linalg.eigvalsh(Lam), float(np.trace(Lam))
    fig, (left, right) = figure(1, 2)
    grid = np.geomspace(0.8 * lam[0], 1.25 * lam[-1], 40)
    left.plot(grid, 1.0 / grid, ":", color="grey", label=r"$\Lambda^{-1}$ ($N\to\infty$)")
    (closed,) = left.plot([], [], "--", color="C1", label=r"$\Gamma^{-1}$ (Theorem 4.1)")
    (ends,) = left.plot([], [], "o", color="C0", label="end of the flow")
    left.set(xscale="log", xlim=(grid[0], grid[-1]), ylim=(0, 1.05 / grid[0]),
             xlabel=r"eigenvalue $\lambda_i$ of $\Lambda$", ylabel=r"trained $v_i^\top cU v_i$")
    left.set_xticks(lam, [f"{value:.3g}" for value in lam])
    left.minorticks_off()
    legend(left, where="below")
    lengths = np.unique(np.geomspace(N_values[0], N_values[-1], 40).round().astype(int))
    right.plot(lengths, [minimum_loss(Lam, N) for N in lengths], color="C1", label="closed form (Cor. A.2)")
    right.plot(lengths, [restricted_loss(np.linalg.inv(Lam), 1.0, Lam, N) for N in lengths], "--", color="grey",
               label=r"with $\Lambda^{-1}$")
    right.plot(N_values, [loss[N] for N in N_values], "o", color="C0", label="end of the flow")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this $N$")
    right.set(xscale="log", yscale="log", xlabel=r"training length $N$", ylabel="population loss",
              title="the trained layer's loss")
    right.set_xticks(N_values, [str(N) for N in N_values])
    right.minorticks_off()
    legend(right)
    title = left.set_title(" ")

    def draw(N):
        closed.set_data(grid, 1.0 / ((1 + 1 / N) * grid + trace / N))
        ends.set_data(lam, predictor[N])
        current.set_data([N], [loss[N]])
        title.set_text(f"trained at N = {N}")
        return [closed, ends, current, title]

    return slider_figure(fig, N_values, draw, label="training length N", default=default,
                         value_text=lambda N: (f"N = {N}: along the smallest eigenvalue the trained predictor is "
                                               f"{predictor[N][0] * lam[0]:.2f} of 1/λ; loss {loss[N]:.3g}"),
                         alt="The trained linear self-attention's predictor along each eigendirection of the "
                             "covariance for one training length at a time, against the closed form, beside its "
                             "loss against the training length")
