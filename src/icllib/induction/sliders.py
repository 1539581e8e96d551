"""The induction chapters' figures with a slider (issue 39): the N² law as the context length moves
(``induction_emergence``, *The N² law and its constants*) and the weights' block pattern as training goes on
(``induction_subspace``, *The weights during training*) and the standard transformer's first layer becoming a
previous-token head (``induction_subspace_standard``). Each is drawn from results its chapter computed.
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

from icllib.induction.emergence import flow_trajectory
from icllib.plotting import block_heatmap, figure, legend
from icllib.plotting_interactive import slider_figure
from icllib.validation import positive_int, real_array

# Points per loss curve: the drop spans a few per cent of the time axis, which 300 samples resolve.
CURVE_POINTS = 300
# Each curve runs to this multiple of its own loss-drop time, past the end of the drop.
CURVE_END = 3.0
# Powers of ten as plain text (10⁴): matplotlib's default log labels are mathtext, whose parsing, repeated for
# every frame's SVG, took most of a figure's time.
SUPERSCRIPTS = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")
POWERS_OF_TEN = FuncFormatter(lambda value, _: "10" + str(round(np.log10(value))).translate(SUPERSCRIPTS))


def _plain_log_ticks(*axes) -> None:
    """Major ticks at powers of ten labelled as text, minor ticks unlabelled."""
    for axis in axes:
        axis.set_major_locator(LogLocator(base=10))
        axis.set_major_formatter(POWERS_OF_TEN)
        axis.set_minor_formatter(NullFormatter())


# The early part of a curve, sampled apart (the flow's samples are evenly spaced, a log axis stretches the start).
EARLY_START, EARLY_SHARE = 1.0, 0.01


def _loss_curve(N: int, drop_time: float) -> tuple[np.ndarray, np.ndarray]:
    """``(t, loss)`` along the flow from ``EARLY_START`` to ``CURVE_END`` times the loss-drop time."""
    early = flow_trajectory(N, EARLY_SHARE * drop_time, num=CURVE_POINTS // 4)
    late = flow_trajectory(N, CURVE_END * drop_time, num=CURVE_POINTS)
    t = np.concatenate([early[0], late[0][late[0] > early[0][-1]]])
    loss = np.concatenate([early[4], late[4][late[0] > early[0][-1]]])
    return t[t >= EARLY_START], loss[t >= EARLY_START]


def emergence_slider(times: dict, N_values):
    """Chapter *The N² law*: the loss along the flow (App. B.5) for one context length ``N`` at a time, on a time
    axis common to all, beside the emergence times ``T_alpha`` and ``T_L`` of every ``N`` with the current one
    marked. ``times`` is ``{N: crossing_times(N)}`` as the chapter computed it, over ``N_values``."""
    N_values = [positive_int("N_values", N, 1) for N in N_values]
    if not isinstance(times, dict) or any(N not in times or "loss" not in times[N] for N in N_values):
        raise ValueError("times must be {N: crossing_times(N)} for every N of N_values")
    curves = {N: _loss_curve(N, times[N]["loss"]) for N in N_values}
    fig, (left, right) = figure(1, 2)
    (loss_line,) = left.plot([], [], color="k", label="loss")
    drop_line = left.axvline(1.0, color="C1", linewidth=0.9, label=r"$T_L$")
    emerged_line = left.axvline(1.0, color="C0", linewidth=0.9, label=r"$T_\alpha$")
    left.set(xscale="log", xlim=(EARLY_START, CURVE_END * times[max(N_values)]["loss"]), ylim=(0.0, 1.02),
             xlabel=r"time $t$ (log scale)", ylabel="loss")
    n = np.array(N_values, dtype=float)
    drops = np.array([times[N]["loss"] for N in N_values])
    emerged = np.array([times[N]["alpha"] for N in N_values])
    right.loglog(n, drops, "o", color="C1", markersize=4, label=r"$T_L$")
    right.loglog(n, emerged, "s", color="C0", markersize=4, label=r"$T_\alpha$")
    right.loglog(n, drops[-1] * (n / n[-1]) ** 2, "--", color="grey", linewidth=0.9, label=r"$\propto N^2$")
    (current,) = right.plot([], [], "o", markersize=11, markerfacecolor="none", markeredgecolor="k",
                            label="this $N$")
    right.set(xlabel="context length $N$", ylabel="time", title=r"the $N^2$ law")
    _plain_log_ticks(left.xaxis, right.xaxis, right.yaxis)
    legend(left)
    legend(right)
    title = left.set_title(" ")

    def draw(N):
        loss_line.set_data(*curves[N])
        drop_line.set_xdata([times[N]["loss"]] * 2)
        emerged_line.set_xdata([times[N]["alpha"]] * 2)
        current.set_data([N, N], [times[N]["loss"], times[N]["alpha"]])
        title.set_text(f"loss along the flow, N = {N}")
        return [loss_line, drop_line, emerged_line, current, title]

    default = N_values[len(N_values) // 2]
    return slider_figure(fig, N_values, draw, label="context length N", default=default,
                         value_text=lambda N: f"N = {N}: loss drop at t = {times[N]['loss']:,.0f}",
                         alt="Loss along the gradient flow for one context length N at a time, with the "
                             "emergence time of alpha and the loss-drop time, beside all drop times against N "
                             "with an N squared guide")


def training_snapshot_steps(steps, frames: int = 4) -> list[int]:
    """The steps of a run's snapshots for :func:`weights_slider`: ``frames`` evenly spaced steps up to the last of
    ``steps`` and ``steps`` themselves (App. C's), sorted."""
    steps = [positive_int("steps", step, 1) for step in steps]
    frames = positive_int("frames", frames, 2)
    if not steps:
        raise ValueError("steps must name at least one step")
    grid = np.linspace(0, max(steps), frames + 1)[1:].round().astype(int)
    return sorted(set(steps) | {int(step) for step in grid})


MATRIX_LABELS = (r"$W^{(1)}$", r"$W^{(2)}$", r"$W^{(3)}$")


def weights_slider(run: dict, block: int, N: int):
    """Chapter *The weights during training*: ``W1, W2, W3`` of one run of ``train_sgd`` at each of its snapshots
    (``run["snapshots"]``, ``{step: (W1, W2, W3)}``), each on the symmetric colour scale of its last snapshot, so
    that the pattern grows in place; ``block`` is the size of the blocks the lines separate, ``N`` names the run."""
    if not isinstance(run, dict) or len(run.get("snapshots", {})) < 2:
        raise ValueError("run must be a train_sgd result with two or more snapshots")
    block, N = positive_int("block", block, 1), positive_int("N", N, 1)
    steps = sorted(run["snapshots"])
    last = [W.numpy() for W in run["snapshots"][steps[-1]]]
    fig, axes = figure(1, 3, height=3.4)
    images = [block_heatmap(ax, W, block, title=name, xlabel="column", ylabel="row", colorbar=False)
              for ax, W, name in zip(axes, last, MATRIX_LABELS)]
    for image in images:
        image.set_interpolation("none")   # one pixel per weight in the SVG, not one per screen pixel
    heading = fig.suptitle(" ")

    def draw(step):
        for image, W in zip(images, run["snapshots"][step]):
            image.set_data(W.numpy())
        loss = float(run["loss"][min(step, len(run["loss"]) - 1)])
        heading.set_text(f"N = {N}, after {step} SGD steps (batch loss {loss:.2f})")
        return [*images, heading]

    return slider_figure(fig, steps, draw, label="SGD step", default=steps[-1],
                         value_text=lambda step: f"step {step}",
                         alt=f"The three weight matrices of the N = {N} run as heat maps in blocks of {block}, "
                             "one SGD step at a time, each on the colour scale of its last step")


def attention_recorder(steps):
    """``(record, snapshots)`` for :func:`icllib.induction.subspace.train_standard`: passed as its ``on_step``,
    ``record`` keeps layer 1's positional attention (``previous_position_attention``) after each of ``steps`` in
    ``snapshots`` (``{step: (n, n) tensor}``); it reads the model and draws nothing."""
    wanted = {positive_int("steps", step, 1) for step in steps}
    if not wanted:
        raise ValueError("steps must name at least one step")
    snapshots = {}

    def record(step, model):
        if step in wanted:
            snapshots[step] = model.previous_position_attention()

    return record, snapshots


def standard_attention_slider(losses, snapshots: dict, *, D: int):
    """Chapter page *The standard transformer of Sec. 2*: layer 1's attention between positions (query by row, key
    by column) after one AdamW step of ``snapshots`` at a time (``{step: (n, n) attention}``, step 0 the
    initialisation), beside the batch losses ``losses`` of the run with that step marked; ``D`` names the width."""
    losses = real_array("losses", losses)
    D = positive_int("D", D, 1)
    if losses.ndim != 1 or len(losses) < 2:
        raise ValueError(f"losses must be a run's batch losses (one per step, two or more), got shape {losses.shape}")
    if not isinstance(snapshots, dict) or len(snapshots) < 2:
        raise ValueError("snapshots must be {step: attention} with two or more steps")
    steps = sorted(snapshots)
    if steps[0] < 0 or steps[-1] > len(losses):
        raise ValueError(f"snapshots' steps must lie in 0..{len(losses)} (the run's steps), got {steps[0]}..{steps[-1]}")
    fig, (left, right) = figure(1, 2)
    left.plot(np.arange(1, len(losses) + 1), losses, color="C0", linewidth=0.8, label="batch loss (NLL)")
    left.axhline(np.log(32), color="black", linestyle=":", label=r"$\ln 32$ (chance)")
    now = left.axvline(0.0, color="C1", linewidth=1.2, label="this step")
    left.set(xlim=(0, len(losses)), xlabel="AdamW step", ylabel="negative log-likelihood")
    legend(left)
    image = right.imshow(np.asarray(snapshots[steps[-1]]), cmap="viridis", vmin=0.0, vmax=1.0,
                         interpolation="none")
    right.grid(False)
    right.set(xlabel="key position $j$", ylabel="query position $i$")
    fig.colorbar(image, ax=right, shrink=0.8, label="attention weight")
    title = right.set_title(" ")

    def draw(step):
        image.set_data(np.asarray(snapshots[step]))
        now.set_xdata([step, step])
        title.set_text("initialisation" if step == 0 else f"layer 1 after {step} steps")
        return [image, now, title]

    return slider_figure(fig, steps, draw, label="AdamW step", default=steps[-1],
                         value_text=lambda step: (f"step {step}: loss {losses[step - 1]:.2f}" if step
                                                  else "step 0: the initialisation"),
                         alt=f"The standard transformer's (width {D}) first-layer attention between positions as a "
                             "heat map, one training step at a time, beside its batch loss with that step marked")
