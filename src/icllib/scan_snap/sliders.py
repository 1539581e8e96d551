"""The Scan and Snap chapters' figures with a slider (issue 39), each drawn from results its chapter computed:
the first-layer attention of the language model as its learning rate moves (``scan_snap_text``, *Fig. 10*); the
attention's sparsity and snapping as the ratio of the two learning rates moves (``scan_snap_sgd``); the attention
of one class over its tokens as the training time moves, through the scan and the snap (``scan_snap``); and the
speed control of Lemma 9 against its two phases as the vocabulary size moves (``scan_snap_lemmas``).
"""

from __future__ import annotations

import numpy as np
import torch

from icllib.plotting import figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import positive_int, positive_number, real_array

# Frames of the attention-over-time figure: at times evenly spread on its logarithmic axis.
TIME_FRAMES = 8
# The vocabulary sizes of the speed-control figure: the chapter's three, and two far beyond them.
SPEED_VOCABULARIES = (100, 1_000, 10_000, 1_000_000, 100_000_000)
# Points per curve of the speed-control figure over its ten decades of time: smooth on the page, light per frame.
SPEED_POINTS = 60


def first_layer_map(model, probe) -> np.ndarray:
    """The first-layer attention of a language model of ``real_text.make_transformer_lm`` on the first window of
    ``probe`` (length x batch tokens, as the chapter's validation probe), in evaluation mode (no dropout)."""
    if not hasattr(model, "first_layer_attention"):
        raise ValueError(f"model must be a language model of real_text.make_transformer_lm, got {type(model).__name__}")
    model.eval()
    with torch.no_grad():
        return model.first_layer_attention(torch.as_tensor(np.asarray(probe)[:1]))[0].numpy()


def attention_by_rate_slider(maps: dict, entropies: dict):
    """Chapter ``scan_snap_text``, *Fig. 10*: for one learning rate ``eta`` at a time, the trained model's
    first-layer attention on the validation window (``maps[eta]``, query rows over the causal past), beside the
    validation attention entropy of every rate (``entropies[eta]``) with the current one marked."""
    if not isinstance(maps, dict) or len(maps) < 2 or not isinstance(entropies, dict) or set(maps) != set(entropies):
        raise ValueError("maps and entropies must be {eta: ...} over the same two or more learning rates")
    rates = sorted(positive_number("maps", eta) for eta in maps)
    arrays = {eta: real_array("maps", maps[eta]) for eta in rates}
    if any(array.ndim != 2 for array in arrays.values()):
        raise ValueError("maps must hold 2-d attention maps (query position x key position)")
    fig, (left, right) = figure(1, 2)
    image = left.imshow(arrays[rates[0]], cmap="viridis", vmin=0.0, vmax=1.0, interpolation="none")
    left.grid(False)
    left.set(xlabel="key position", ylabel="query position")
    fig.colorbar(image, ax=left, label="attention weight", shrink=0.8)
    title = left.set_title(" ")
    values = [entropies[eta] for eta in rates]
    right.semilogx(rates, values, "o-", color="C0", label="validation entropy")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label=r"this $\eta$")
    right.set_xticks(rates, [f"{eta:g}" for eta in rates])
    right.minorticks_off()
    spread = max(values) - min(values) or 1.0
    right.set(xlabel=r"learning rate $\eta$", ylabel="attention entropy (nats)",
              ylim=(min(values) - 0.1 * spread, max(values) + 0.1 * spread), title="sparser with larger rates")
    legend(right)

    def draw(eta):
        image.set_data(arrays[eta])
        current.set_data([eta], [entropies[eta]])
        title.set_text(rf"first-layer attention after training at $\eta$ = {eta:g}")
        return [image, current, title]

    return slider_figure(fig, rates, draw, label="learning rate η", default=rates[0],
                         value_text=lambda eta: f"η = {eta:g}: attention entropy {entropies[eta]:.2f} nats",
                         alt="The trained language model's first-layer attention map on a validation window for "
                             "one learning rate at a time, beside the validation attention entropy against the "
                             "learning rate")


def attention_by_ratio_slider(sweep, *, eta_Z: float | None = None):
    """Chapter ``scan_snap``, *The Syn-Medium sweep (Fig. 6)*: at the sweep's largest size and the decoder rate
    ``eta_Z``, for one ratio ``eta_Y/eta_Z`` at a time, the final attention ``c_1`` of class 1 over its contextual
    tokens (mean over seeds; common tokens, then distinct ones by increasing ``P(l|1)``), beside the entropy on
    distinct tokens (the Fig. 6 metric) against the ratio for every ``eta_Z``, the current one marked.
    ``sweep`` is the ``model.fig6_sweep`` result the chapter computed; ``eta_Z`` defaults to its rate closest to 1."""
    from icllib.scan_snap.model import syn_medium

    if not all(hasattr(sweep, name) for name in ("grid", "entropy", "attention")):
        raise ValueError(f"sweep must be a model.fig6_sweep result, got {type(sweep).__name__}")
    grid = sweep.grid
    if eta_Z is None:
        eta_Z = min(grid.eta_Z, key=lambda rate: abs(np.log(rate)))
    if eta_Z not in grid.eta_Z:
        raise ValueError(f"eta_Z must be one of the sweep's {grid.eta_Z}, got {eta_Z!r}")
    size, column = len(grid.num_last) - 1, grid.eta_Z.index(eta_Z)
    spec = syn_medium(grid.num_last[size])
    tokens = np.flatnonzero(spec.P[0] > 0)
    tokens = tokens[np.lexsort((spec.P[0, tokens], spec.distinct[0, tokens]))]   # common first, then by P
    distinct = spec.distinct[0, tokens]
    attention = {ratio: sweep.attention[size][column, k].mean(axis=0)[0, tokens] for k, ratio in
                 enumerate(grid.ratios)}
    mean_entropy = sweep.entropy[size].mean(axis=-1)                                 # (eta_Z, ratio)
    fig, (left, right) = figure(1, 2)
    x = np.arange(len(tokens))
    stems = left.vlines(x, 0, 0, colors=np.where(distinct, "C0", "C1"), linewidth=3)
    left.plot([], [], color="C1", linewidth=3, label="common tokens")
    left.plot([], [], color="C0", linewidth=3, label="distinct tokens")
    top = max(float(values.max()) for values in attention.values())
    left.set(xlim=(-1, len(tokens)), ylim=(0, 1.05 * top), xlabel=r"contextual token of class 1 (distinct: by $P(l|1)$)",
             ylabel=r"final attention $c_1$")
    legend(left, where="below")
    for j, rate in enumerate(grid.eta_Z):
        right.plot(grid.ratios, mean_entropy[j], "o-", color=f"C{j}", label=rf"$\eta_Z$ = {rate:g}")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this figure")
    right.set(xscale="log", xlabel=r"$\eta_Y/\eta_Z$", ylabel="entropy on distinct tokens (nats)",
              title=f"K = {spec.K}, mean over seeds")
    right.set_xticks(grid.ratios, [f"{ratio:g}" for ratio in grid.ratios])
    right.minorticks_off()
    legend(right)
    title = left.set_title(" ")

    def draw(ratio):
        stems.set_segments([[(position, 0.0), (position, value)] for position, value in zip(x, attention[ratio])])
        current.set_data([ratio], [mean_entropy[column, grid.ratios.index(ratio)]])
        title.set_text(rf"$\eta_Y/\eta_Z$ = {ratio:g}, $\eta_Z$ = {eta_Z:g}")
        return [stems, current, title]

    return slider_figure(fig, list(grid.ratios), draw, label="ratio η_Y/η_Z", default=grid.ratios[0],
                         value_text=lambda ratio: (f"η_Y/η_Z = {ratio:g}: entropy on distinct tokens "
                                                   f"{mean_entropy[column, grid.ratios.index(ratio)]:.3f} nats"),
                         alt="The final attention of class 1 over its common and distinct tokens for one ratio of "
                             "the two learning rates at a time, beside the entropy on distinct tokens against "
                             "the ratio for each decoder learning rate")


def _class_attention(P, z):
    """The contextual tokens of class 1 (common ones first, then distinct ones by increasing ``P(l|1)``), which of
    them are common, and the attention ``c_1`` over them at each row of ``z`` (Eq. 5)."""
    tokens = np.flatnonzero(P[0] > 0)
    common = (P[:, tokens] > 0).sum(axis=0) > 1
    order = np.lexsort((P[0, tokens], ~common))
    tokens, common = tokens[order], common[order]
    weights = P[0, tokens] * np.exp(z[:, tokens] - z[:, tokens].max(axis=1, keepdims=True))
    return tokens, common, weights / weights.sum(axis=1, keepdims=True)


def attention_over_time_slider(P, t, z, *, t0: float, frames: int = TIME_FRAMES):
    """Chapter ``scan_snap``, *Snap: the transition and the frozen composition*: from a solution ``z`` of Eq. 10 at
    the times ``t`` (``theory.integrate_scan``, rows of ``z`` at the positive, increasing ``t``; one query token
    shared by the classes of ``P``, as ``dynamics.one_query_probabilities`` makes it), for one time at a time (the
    ``frames`` times of ``t`` nearest to evenly spread ones on a log scale, the first and last among them), the
    attention ``c_1`` of class 1 over its contextual tokens (Eq. 5: ``c_1l`` proportional to ``P(l|1) exp(z_l)``;
    common tokens first, then distinct ones by increasing ``P(l|1)``), beside each token's weight against ``t``
    with the transition time ``t0`` (Lemma 8) marked."""
    P, t, z = real_array("P", P), real_array("t", t), real_array("z", z)
    if P.ndim != 2 or P.shape[0] < 2 or np.any(P < 0) or not np.allclose(P.sum(axis=1), 1.0):
        raise ValueError(f"P must be a (K, M) array of K >= 2 distributions P(l|n), got shape {P.shape}")
    if t.ndim != 1 or t.size < 2 or not np.all(np.isfinite(t)) or np.any(t <= 0) or np.any(np.diff(t) <= 0):
        raise ValueError("t must hold two or more positive, increasing times (the time axis is logarithmic)")
    if z.shape != (t.size, P.shape[1]) or not np.all(np.isfinite(z)):
        raise ValueError(f"z must hold the finite logits at each time, shape ({t.size}, {P.shape[1]}), got {z.shape}")
    t0, frames = positive_number("t0", t0), positive_int("frames", frames, minimum=2)
    tokens, common, weights = _class_attention(P, z)
    spread = np.log(np.geomspace(t[0], t[-1], frames))
    shown = sorted({int(np.argmin(np.abs(np.log(t) - time))) for time in spread})
    fig, (left, right) = figure(1, 2)
    x, colours = np.arange(len(tokens)), np.where(common, "C1", "C0")
    stems = left.vlines(x, 0, 0, colors=colours, linewidth=3)
    left.plot([], [], color="C1", linewidth=3, label="common tokens")
    left.plot([], [], color="C0", linewidth=3, label="distinct tokens")
    left.plot(x, P[0, tokens], "_", color="grey", markersize=14, markeredgewidth=1.5, label=r"start: $P(l|1)$")
    left.set(xlim=(-0.7, len(tokens) - 0.3), ylim=(0, 1.08 * max(weights.max(), P[0, tokens].max())),
             xlabel=r"token $l$ of class 1 (distinct: by $P(l|1)$)", ylabel=r"attention $c_{1l}$")
    left.set_xticks(x, [str(position + 1) for position in x])
    legend(left, where="below")
    for column, colour in enumerate(colours):
        right.plot(t, weights[:, column], color=colour, linewidth=1.2)
    right.axvline(t0, color="grey", linestyle=":", label=r"transition $t_0$")
    (current,) = right.plot([], [], "o", markersize=7, markerfacecolor="none", markeredgecolor="k",
                            label=r"this $t$")
    right.set(xscale="log", xlim=(t[0], t[-1]), ylim=left.get_ylim(), xlabel="time $t$",
              title="each token's weight over time")
    right.minorticks_off()   # six decades of minor ticks weigh more than a frame
    legend(right)
    title = left.set_title(" ")

    def draw(index):
        stems.set_segments([[(position, 0.0), (position, value)] for position, value in zip(x, weights[index])])
        current.set_data(np.full(len(tokens), t[index]), weights[index])
        title.set_text(f"t = {t[index]:.3g}, {'before' if t[index] < t0 else 'after'} the transition")
        return [stems, current, title]

    return slider_figure(fig, shown, draw, label="time t", default=shown[0],
                         value_text=lambda index: (f"t = {t[index]:.3g}: the common tokens hold "
                                                   f"{weights[index, common].sum():.2f} of the attention"),
                         alt="The attention of one class over its common and distinct tokens at one training "
                             "time at a time, beside each token's weight over time with the transition marked")


def _speed_curves(K: int, eta_Y: float, M_values) -> dict:
    """For each ``M``: the times ``t`` (``SPEED_POINTS``, the range of ``lemmas.speed_control_ratios``), ``gamma``
    there, the transition ``t0``, and the largest ratios of ``gamma`` to Lemma 9's second phase and to the printed
    one after ``t0`` (``lemma9``, ``printed``) on that function's finer grid."""
    from icllib.scan_snap import lemmas
    from icllib.scan_snap import theory as sst

    ratios = lemmas.speed_control_ratios(K, eta_Y, M_values)
    t = np.geomspace(1e-2, 1e8, SPEED_POINTS)
    return {M: dict(t=t, gamma=sst.speed_control_gamma(t, K, M, eta_Y), lemma9=float(lemma9.max()),
                    t0=sst.transition_time(K=K, M=M, eta_Y=eta_Y), printed=float(printed.max()))
            for M, lemma9, printed in zip(M_values, ratios.phase2_by_M, ratios.printed_by_M)}


def speed_control_slider(*, K: int, eta_Y: float, M_values=SPEED_VOCABULARIES):
    """Chapter ``scan_snap_lemmas``, *Lemma 9: the speed control*: for one vocabulary size ``M`` of ``M_values`` at
    a time, the speed control ``gamma(t)`` of Eq. 85 on the continuous clock (``theory.speed_control_gamma``) with
    ``K`` classes and decoder rate ``eta_Y``, against Lemma 9's first phase ``eta_Y t/K``, its second phase
    ``K ln(M eta_Y t/K)/(eta_Y t)`` and the second phase as Theorem 1(b) prints it (without ``M``) after the
    transition ``t_0``; beside the largest ratio of ``gamma`` to each second-phase form after ``t_0`` against ``M``
    (``lemmas.speed_control_ratios``, the chapter's measure), the current ``M`` marked."""
    K, eta_Y = positive_int("K", K), positive_number("eta_Y", eta_Y)
    M_values = sorted({positive_int("M_values", M, minimum=3) for M in M_values})
    if len(M_values) < 2:
        raise ValueError("M_values must hold two or more vocabulary sizes")
    curves = _speed_curves(K, eta_Y, M_values)
    t = curves[M_values[0]]["t"]
    fig, (left, right) = figure(1, 2)
    (curve,) = left.plot([], [], color="C0", label=r"$\gamma(t)$ (Eq. 85)")
    left.plot(t, eta_Y * t / K, ":", color="grey", label="phase 1 (Lemma 9)")
    (lemma9,) = left.plot([], [], "--", color="C1", label="phase 2 (Lemma 9)")
    (printed,) = left.plot([], [], "-.", color="C2", label="phase 2 as printed")
    transition = left.axvline(curves[M_values[0]]["t0"], color="k", linestyle=":", linewidth=0.8,
                              label="transition (Lemma 8)")
    top = max(float(curve_data["gamma"].max()) for curve_data in curves.values())
    left.set(xscale="log", yscale="log", xlim=(t[0], t[-1]), ylim=(1e-6, 3 * top), xlabel="time $t$",
             ylabel=r"speed control $\gamma(t)$")
    left.minorticks_off()   # ten decades of minor ticks weigh more than a frame
    legend(left, where="below")
    for key, style, colour, label in (("lemma9", "o-", "C1", "Lemma 9's form"),
                                      ("printed", "s-", "C2", "the printed form")):
        right.plot(M_values, [curves[M][key] for M in M_values], style, color=colour, label=label)
    right.axhline(2.0, color="grey", linestyle=":", label="a factor 2")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this $M$")
    right.set(xscale="log", ylim=(0, 1.1 * max(curves[M]["printed"] for M in M_values)),
              xlabel="vocabulary size $M$", ylabel="largest ratio after the transition",
              title="ratio to each phase-2 form")
    right.minorticks_off()
    legend(right)
    title = left.set_title(" ")

    def draw(M):
        late = t >= curves[M]["t0"]
        curve.set_data(t, curves[M]["gamma"])
        lemma9.set_data(t[late], K * np.log(M * eta_Y * t[late] / K) / (eta_Y * t[late]))
        printed.set_data(t[late], K * np.log(eta_Y * t[late] / K) / (eta_Y * t[late]))
        transition.set_xdata([curves[M]["t0"]] * 2)
        current.set_data([M, M], [curves[M]["lemma9"], curves[M]["printed"]])
        title.set_text(f"M = {M:,}")
        return [curve, lemma9, printed, transition, current, title]

    return slider_figure(fig, M_values, draw, label="vocabulary size M", default=M_values[0],
                         value_text=lambda M: (f"M = {M:,}: γ is at most {curves[M]['lemma9']:.2f} times Lemma 9's "
                                               f"form and {curves[M]['printed']:.2f} times the printed one"),
                         alt="The speed control over time for one vocabulary size at a time, against the two "
                             "phases of Lemma 9 and the printed form, beside the largest ratio to each form "
                             "against the vocabulary size")
