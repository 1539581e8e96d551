"""The Scan and Snap chapters' figures with a slider (issue 39), each drawn from results its chapter computed:
the first-layer attention of the language model as its learning rate moves (``scan_snap_text``, *Fig. 10*), and
the attention's sparsity and snapping as the ratio of the two learning rates moves (``scan_snap``).
"""

from __future__ import annotations

import numpy as np
import torch

from icllib.plotting import figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import positive_number, real_array


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
