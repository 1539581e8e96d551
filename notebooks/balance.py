# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # The law of balance in attention
#
# Attention logits see the query and key weights only through the product $W_Q W_K^\top$, so each
# column pair $(W_K^i, W_Q^i)$ can be rescaled, $W_K^i \to \lambda W_K^i$, $W_Q^i \to W_Q^i/\lambda$,
# without changing the network. Gradient flow then conserves $\|W_K^i\|^2 - \|W_Q^i\|^2$ forever. What
# does the *noise* of SGD do along such a direction? Ziyin, Li and Ueda {cite}`ziyin2025noise` answer
# with a "law of balance" (their Theorem 3.1 = B.3): the imbalance moves at rate $T = \eta/S$ (learning
# rate over batch size, our reading of their $T$: {ref}`balance.N3 <balance-n3>`) toward the point where the two weights carry **equal gradient noise**, and their
# Fig. 6 shows the two noise terms of every query/key column pair of a two-layer attention network
# converging. This chapter derives the law, checks each step exactly (symbolically and to $10^{-12}$ in
# float64), tests it quantitatively on a linear model whose noise matrices are closed forms (the
# balanced ratio is $d_o/d$, not 1, and the time to reach it scales as batch$/\eta^2$), and runs the
# attention experiment of the paper's App. B.11. There the law's direction and rate hold pair by pair; the
# approach and overlap of Fig. 6 are claims about the paper's batch size 200, which a book build cannot
# afford (the ledger names the deciding run and its cost), so they stay open, and the book's
# run at ten times the paper's temperature shows the approach but not yet the overlap. The ledger of this
# chapter: {ledger-counts}`balance`. What you see was executed in the
# run mode printed below (`default` for the book, `quick` in the tests, `full` at the paper's batch size).

# %% tags=["hide-input"]
import math
import time

import matplotlib.ticker
import numpy as np
import torch

from icllib import balance
from icllib.claims import archived_arrays, check_claim, save_arrays
from icllib.config import by_mode, device, mode, rng, run_line, torch_generator
from icllib.plotting import PALETTE, figure, legend

torch.set_num_threads(1)  # small tensors: one thread is several times faster on two shared cores
print(run_line())

# %% [markdown]
# ## 1. The symmetry in a two-layer attention network
#
# App. B.11 trains "a two-layer single-head self-attention network without MLP in between" on in-context
# linear regression. The appendix leaves the architecture and parts of the data open
# ({ref}`balance.N6 <balance-n6>`); the choices made here are each the plainest
# reading:
#
# | open choice | this chapter | why |
# |---|---|---|
# | layer | residual, $H \leftarrow H + \mathrm{softmax}(H W_Q W_K^\top H^\top/\sqrt 6)\,H W_V$ | "self-attention network"; the residual keeps the tokens for the second layer |
# | sizes | $W_Q, W_K, W_V \in \mathbb R^{6\times 6}$, no $W_O$, no mask, no LayerNorm | the paper says $W_K, W_Q \in \mathbb R^{6\times 6}$; $W_O$ would add a second symmetry |
# | read-out | $\hat y = H_2[50, 6]$, the label slot of the query token | no head is mentioned |
# | data | a fresh $w^* \sim N(0, I_5)$ per sequence, label noise $N(0, 0.1^2)$ on the 49 context labels, query label slot 0 | fresh $w^*$ makes the task in-context; the noise level is not given |
# | loss | $(\hat y - y)^2$, mean over the batch | not given; $\tfrac12$ would halve every $T$-effect |
# | init | i.i.d. $N(0, 1/6)$, then $W_K^i \to 2W_K^i$, $W_Q^i \to W_Q^i/2$ | the same function with imbalanced norms, so that balancing is visible |
#
# The logits are $H W_Q W_K^\top H^\top = H \big(\sum_{i=1}^{6} W_Q^i (W_K^i)^\top\big) H^\top$, so each of the
# **6 column pairs of each layer** is a rescaling symmetry with $u = W_K^i$, $w = W_Q^i$ (the paper's line 45:
# "for every $i \in [6]$, there is a rescaling symmetry between $W_K^i$ and $(W_Q^i)^T$"). Theorem B.3 needs it
# for every sample $x$, so we check it sample by sample in float64: rescale every pair by its own random
# $\lambda$ and compare the per-sample losses.

# %%
gen = torch_generator(0)
params64 = balance.init_attention(generator=gen, imbalance=2.0, dtype=torch.float64)
X_check, y_check = balance.icl_regression_batch(
    by_mode(quick=128, default=512, full=512), generator=gen, dtype=torch.float64
)
# Eq. 113's layout: the 49 context rows carry x . w* + eps in column 6, the query's label is x_50 . w*.
# Least squares on each sequence's context rows must then predict its query label to within the noise.
w_fitted = torch.linalg.lstsq(X_check[:, :-1, :5], X_check[:, :-1, 5:]).solution[..., 0]
query_error = (((X_check[:, -1, :5] * w_fitted).sum(-1) - y_check) ** 2).mean() / y_check.var()
print(
    "relative error of least squares from the 49 context rows on the query label:"
    f" {query_error:.1e}"
)
check_claim(
    "balance.b11-setup",
    query_error.item(),
    upper=0.01,
    why=(
        "with label noise 0.1 the least-squares error is about 0.01 x 5/43 / |w*|^2 ~ 2e-4; labels"
        " in the wrong slot or a query label other than x_50 . w* give an error of order 1"
    ),
)
lambdas = torch.exp(torch.randn(2, 6, generator=gen, dtype=torch.float64))
loss_before = balance.attention_loss(params64, X_check, y_check).item()
per_sample_before = (balance.attention_forward(params64, X_check) - y_check) ** 2
per_sample_after = (
    balance.attention_forward(balance.rescale_columns(params64, lambdas), X_check) - y_check
) ** 2
symmetry_error = (
    (per_sample_after - per_sample_before).abs().max() / per_sample_before.max()
).item()
print(
    f"largest per-sample loss change {symmetry_error:.1e} (relative to the largest loss) over "
    f"{len(y_check)} samples, lambda in [{lambdas.min():.2f}, {lambdas.max():.2f}]"
)
check_claim(
    "balance.symmetry-loss",
    symmetry_error,
    expected=0.0,
    atol=1e-13,
    why=(
        "float64 round-off of a loss built from ~10^4 operations; logits through W_K W_Q would"
        " change it by O(1)"
    ),
)

# %% [markdown]
# Each pair on its own is a symmetry too (this is the count the appendix gets wrong,
# {ref}`balance.E1 <balance-e1>`): we
# rescale one column at a time by $\lambda = 3$ and count the pairs that leave the loss unchanged.

# %%
single_changes = np.empty((2, 6))
for layer in range(2):
    for column in range(6):
        one = torch.ones(2, 6, dtype=torch.float64)
        one[layer, column] = 3.0
        changed = balance.attention_loss(
            balance.rescale_columns(params64, one), X_check, y_check
        ).item()
        single_changes[layer, column] = abs(changed - loss_before) / loss_before
pairs_per_layer = int((single_changes < 1e-13).sum()) / 2
print("relative loss change per single-column rescaling:\n", single_changes)
check_claim(
    "balance.symmetry-count",
    pairs_per_layer,
    expected=6,
    atol=0,
    why="a count; the paper says 5 per layer (erratum balance.E1), W_K, W_Q in R^{6x6} give 6",
)

# %% [markdown]
# Eq. 114 writes the loss as $\ell(W_K W_Q)$, but its right-hand side $\sum_i W_K^i (W_Q^i)^\top$ is $W_K W_Q^\top$,
# and the product $W_K W_Q$ is not what the network sees ({ref}`balance.E2 <balance-e2>`):
# we build a second parameter set with the same $W_K W_Q$ but a different $W_Q W_K^\top$ (multiply
# $W_Q \to A W_Q$, $W_K \to W_K A^{-1}$), and a third with the same $W_Q W_K^\top$
# ($W_Q \to W_Q B$, $W_K \to W_K B^{-\top}$).

# %%
A = torch.eye(6, dtype=torch.float64) + 0.3 * torch.randn(6, 6, generator=gen, dtype=torch.float64)
same_KQ = {**params64, "Wq0": A @ params64["Wq0"], "Wk0": params64["Wk0"] @ torch.linalg.inv(A)}
same_QKt = {**params64, "Wq0": params64["Wq0"] @ A, "Wk0": params64["Wk0"] @ torch.linalg.inv(A).T}
assert torch.allclose(
    same_KQ["Wk0"] @ same_KQ["Wq0"], params64["Wk0"] @ params64["Wq0"], atol=1e-12
)
change_KQ = (
    abs(balance.attention_loss(same_KQ, X_check, y_check).item() - loss_before) / loss_before
)
change_QKt = (
    abs(balance.attention_loss(same_QKt, X_check, y_check).item() - loss_before) / loss_before
)
print(f"same W_K W_Q: relative loss change {change_KQ:.2e};  same W_Q W_K^T: {change_QKt:.2e}")
check_claim(
    "balance.transpose",
    bool(change_KQ < 1e-10),
    expected=False,
    why=(
        "the loss would be unchanged if it were a function of W_K W_Q, as printed (erratum"
        " balance.E2)"
    ),
)
assert change_QKt < 1e-13, "the loss must be a function of W_Q W_K^T"

# %% [markdown]
# Differentiating $\ell(e^{s}u, e^{-s}w) = \ell(u, w)$ at $s = 0$ gives the per-sample **Euler identity**
# $u\cdot\nabla_u \ell = w\cdot\nabla_w\ell$, the first line of the theorem's proof. It must hold for every
# sample and every pair, not only on average: we check it with per-sample gradients (`torch.func.vmap`).

# %%
grads_check = balance.per_sample_grads(params64, X_check, y_check)
residuals, scale = balance.euler_residuals(grads_check, params64)
print(
    f"max |W_K^i.dl/dW_K^i - W_Q^i.dl/dW_Q^i| = {residuals.abs().max():.2e} over"
    f" {residuals.numel()} (sample, pair) values; the terms reach {scale.max():.1f}"
)
check_claim(
    "balance.euler-identity",
    residuals.abs().max().item(),
    expected=0.0,
    atol=1e-12,
    why="float64: terms up to ~10^2 times machine epsilon times the number of operations",
)

# %% [markdown]
# ## 2. The law, derived
#
# Let $\ell(u, w, v, x) = \ell(\lambda u, w/\lambda, v, x)$ for every sample $x$ and every $\lambda > 0$.
#
# **Step 1 (Euler).** $u\cdot\nabla_u\ell = w\cdot\nabla_w\ell$ per sample, hence per minibatch.
#
# **Step 2 (chain rule, the crossing).** The loss depends on $u, w$ through $M = u w^\top$; with
# $A_{ki} = \partial\ell/\partial(u_i w_k)$ (the paper's $A$, of shape $\dim w \times \dim u$),
# $\nabla_u \ell = A^\top w$ and $\nabla_w\ell = A u$. So the variance of $\nabla_w\ell$ is a quadratic
# form in $u$, and vice versa:
#
# $$ \begin{gathered} \operatorname{tr}\operatorname{Cov}[\nabla_w \ell] = u^\top\big(\mathbb E[A^\top A] - \mathbb E[A]^\top\mathbb E[A]\big)u = u^\top C_1 u,
# \\ \operatorname{tr}\operatorname{Cov}[\nabla_u \ell] = w^\top C_2 w . \end{gathered} $$
#
# **Step 3 (one step, exactly).** For a step $u' = u - \eta g_u$, $w' = w - \eta g_w$ with
# $u\cdot g_u = w\cdot g_w$ (step 1), the cross terms cancel:
#
# $$ D' - D = \eta^2\big(\|g_u\|^2 - \|g_w\|^2\big), \qquad D := \|u\|^2 - \|w\|^2 . $$
#
# **Step 4 (expectation).** For a minibatch of size $S$, $\mathbb E\|\hat g\|^2 = \|\nabla L\|^2 + \operatorname{tr}C/S$, so
#
# $$ \begin{gathered} \mathbb E[D' - D] = \eta^2\big(\|\nabla_u L\|^2 - \|\nabla_w L\|^2\big) - \eta\,T\,\big(u^\top C_1 u - w^\top C_2 w\big), \\ T = \eta/S . \end{gathered} $$
#
# Per unit time $t = \eta \times$ steps, the second term is the law (Eq. 108),
#
# $$ \frac{d}{dt}\big(\|u\|^2 - \|w\|^2\big) = -T\,\big(u^\top C_1 u - w^\top C_2 w\big), $$
#
# and the first is a finite-step term with coefficient $\eta$, not $T$, that vanishes in gradient flow; the SDE
# model of SGD, for which Eq. 108 is exact, has no such term. (The paper's footnote 7 says that a finite step is
# handled by a modified loss of its App. B.7, which is not in our excerpt: {ref}`balance.N2 <balance-n2>`.)
# Note what is balanced:
# $\|u\|^2 - \|w\|^2$ decreases while $u^\top C_1 u$, the noise of $\nabla_w \ell$, exceeds
# $w^\top C_2 w$, the noise of $\nabla_u\ell$. The fixed point is **noise balance**, not norm balance.
#
# **Step 5 (Eq. 7).** With $\lambda_{1m}, \lambda_{1M}$ the extreme eigenvalues of $C_1$ and
# $\lambda_{2m}, \lambda_{2M}$ those of $C_2$, Rayleigh quotients sandwich the right-hand side,
# $-T(\lambda_{1M}\|u\|^2 - \lambda_{2m}\|w\|^2) \le \dot D \le -T(\lambda_{1m}\|u\|^2 - \lambda_{2M}\|w\|^2)$.
# At stationarity $\dot D = 0$, so the left bracket is $\ge 0$ and the right one $\le 0$ (Eq. 109), which is
#
# $$ \frac{\lambda_{2m}}{\lambda_{1M}} \le \frac{\|u\|^2}{\|w\|^2} \le \frac{\lambda_{2M}}{\lambda_{1m}} . \tag{Eq. 7} $$
#
# The $\lambda$'s are evaluated at the stationary point itself, so Eq. 7 is a self-consistency condition
# ({ref}`balance.N5 <balance-n5>`);
# when $C_1 = c_1 I$ and $C_2 = c_2 I$ the band closes on $c_2/c_1$.
#
# SymPy checks steps 1, 3, the crossing of step 2 (three symbolic samples of a matrix $A$, $3\times 2$ in `default`) and
# the isotropic case of step 5; each residual must simplify to 0.

# %%
identities = balance.sympy_identities(
    dim_u=2, dim_w=by_mode(quick=2, default=3, full=3), n_samples=3
)
print({name: str(value) for name, value in identities.items()})
derivation_steps = ("euler", "one_step", "crossing_u", "crossing_w")
check_claim(
    "balance.derivation",
    all(identities[name] == 0 for name in derivation_steps),
    expected=True,
    why="symbolic identities: exact",
)

# %% [markdown]
# Step 5 is the paper's own derivation (Eqs. 109-112). Beyond the isotropic case, we test it on random
# stationary points: Wishart $C_1, C_2$ and a random $u$, with $w$ rescaled onto $u^\top C_1 u = w^\top C_2 w$.
# Every ratio $\|u\|^2/\|w\|^2$ must lie in the band of Eq. 112; the band with the eigenvalue indices swapped is
# a control that must miss some of them.

# %%
in_band_share, in_swapped_share = [], []
for size in range(2, 7):
    ratio, eig_C1, eig_C2 = balance.random_stationary_points(size, 400, generator=rng(4 + size))
    in_band_share.append(
        np.mean(
            (eig_C2[:, 0] / eig_C1[:, -1] <= ratio * (1 + 1e-12))
            & (ratio <= eig_C2[:, -1] / eig_C1[:, 0] * (1 + 1e-12))
        )
    )
    in_swapped_share.append(
        np.mean((eig_C2[:, 0] / eig_C1[:, 0] <= ratio) & (ratio <= eig_C2[:, -1] / eig_C1[:, -1]))
    )
print(
    f"share inside Eq. 112's band, sizes 2-6: {np.round(in_band_share, 3)}; "
    f"inside the swapped band: {np.round(in_swapped_share, 3)}"
)
assert (
    min(in_swapped_share) < 0.9
), "the swapped band must miss some stationary points, or the test has no power"
check_claim(
    "balance.eq7-derivation",
    bool(min(in_band_share) == 1.0 and identities["isotropic"] == 0),
    expected=True,
    why=(
        "an inequality between exact eigenvalues, 1e-12 relative slack for round-off; the swapped"
        " band misses stationary points in every size"
    ),
)

# %% [markdown]
# The crossing on the attention network: $g_K^i = (W_K^i)^\top C_1 W_K^i$ through the paper's matrices
# (per-sample $A = \partial\ell/\partial (W_Q W_K^\top)$, one $C_1, C_2$ per layer), against
# $\operatorname{tr}\operatorname{Cov}[\partial\ell/\partial W_Q^i]$ from per-sample gradients. These are the
# two quantities the paper plots in Fig. 6 (its "Eq. (35)" is not in our excerpt; we read them as the two
# terms of Eq. 108: {ref}`balance.N1 <balance-n1>`). Note the crossing: $g_K^i$ is the gradient noise of
# $W_Q^i$.

# %%
gK_var, gQ_var = balance.g_terms(grads_check)
gK_C, gQ_C = balance.g_terms_via_C(params64, X_check, y_check)
crossing_error = max(
    ((gK_C - gK_var).abs() / gK_var).max().item(), ((gQ_C - gQ_var).abs() / gQ_var).max().item()
)
print(f"max relative difference between the two routes: {crossing_error:.1e}")
check_claim(
    "balance.crossing",
    crossing_error,
    expected=0.0,
    atol=1e-12,
    why=(
        "float64 round-off; two independent autograd routes (per-sample dl/dW vs dl/dM), equal only"
        " if the crossing holds"
    ),
)

# %% [markdown]
# ## 3. Without noise, the imbalance is conserved exactly
#
# With $T = 0$ the law says every $D_i = \|W_K^i\|^2 - \|W_Q^i\|^2$ is constant. Gradient descent, a
# finite-step approximation of the flow, drifts by step 3: $\Delta D_i = \eta^2(\ldots)$ per step, that is
# $O(\eta)$ over a fixed time. An integrator that preserves *quadratic* invariants exactly, the implicit
# midpoint rule $\theta' = \theta - h\nabla L\big((\theta + \theta')/2\big)$, should keep all 12 $D_i$ to
# round-off at a finite step: $D(\theta') - D(\theta) = (\theta' - \theta)^\top S(\theta' + \theta) =
# -2h\,\nabla L(m)^\top S m = 0$ at the midpoint $m$, by the Euler identity. We use a fixed training set
# (full batch), float64, and the imbalanced init.

# %%
n_flow, flow_time = by_mode(quick=32, default=64, full=200), by_mode(
    quick=0.06, default=0.5, full=1.0
)
gd_rates = (4e-3, 2e-3, 1e-3)
# In full mode the loss falls further and the flow stiffens: at h = 2.5e-3 the fixed-point iteration needs
# over 100 iterations a step by t = 0.8 (54 at t = 0.75) and then stalls; at h = 1e-3 it needs at most 22.
midpoint_step = by_mode(quick=2.5e-3, default=2.5e-3, full=1e-3)
X_flow, y_flow = balance.icl_regression_batch(n_flow, generator=gen, dtype=torch.float64)
gd_runs = {
    lr: balance.gradient_descent_run(params64, X_flow, y_flow, lr=lr, steps=round(flow_time / lr))
    for lr in gd_rates
}
midpoint = balance.implicit_midpoint_run(
    params64, X_flow, y_flow, h=midpoint_step, steps=round(flow_time / midpoint_step)
)
gd_drift = {lr: (run["D"][-1] - run["D"][0]).abs().max().item() for lr, run in gd_runs.items()}
midpoint_drift = (midpoint["D"] - midpoint["D"][0]).abs().max().item()
print(
    f"loss {gd_runs[1e-3]['loss'][0]:.3f} -> {gd_runs[1e-3]['loss'][-1]:.3f} over t = {flow_time}; "
    f"D_i between {midpoint['D'][0].min():.2f} and {midpoint['D'][0].max():.2f}"
)
for lr, drift in gd_drift.items():
    print(f"GD lr={lr:g}: max_i |Delta D_i| = {drift:.2e}   (drift / lr = {drift / lr:.3f})")
print(
    f"implicit midpoint h={midpoint_step:g}: max_i |Delta D_i| = {midpoint_drift:.1e} "
    f"({midpoint['iterations'].mean():.1f} fixed-point iterations per step)"
)
norm_moves = max(
    ((midpoint["params"][f"Wk{l}"] ** 2).sum(0) - (params64[f"Wk{l}"] ** 2).sum(0))
    .abs()
    .max()
    .item()
    for l in (0, 1)
)
print(f"control: along the same midpoint path |W_K^i|^2 alone moves by up to {norm_moves:.1e}")
assert (
    norm_moves > 1e-6
), "the flow must move the individual norms, or conserving their difference says nothing"
check_claim(
    "balance.gradient-flow",
    midpoint_drift,
    expected=0.0,
    atol=1e-12,
    why=(
        "the midpoint rule keeps exactly the quadratic invariants of the flow (float64 round-off"
        " over a few hundred steps); a quadratic that is not invariant, |W_K^i|^2 alone, moves by"
        " orders of magnitude more"
    ),
)

# %%
drift_slope = float(np.polyfit(np.log(gd_rates), np.log(list(gd_drift.values())), 1)[0])
print(f"log-log slope of GD drift against lr: {drift_slope:.3f}")
check_claim(
    "balance.gd-drift",
    drift_slope,
    expected=1.0,
    atol=0.1,
    why=(
        "first-order method: drift = c lr + O(lr^2); 0.1 allows the O(lr^2) term over a factor 4"
        " in lr"
    ),
)
finite_step_excess = min(gd_drift.values()) / max(midpoint_drift, 1e-16)
print(f"the smallest GD step drifts D_i {finite_step_excess:.1e} times more than the midpoint rule")
check_claim(
    "balance.finite-step",
    finite_step_excess,
    lower=1e3,
    why=(
        "without noise (T = 0) the continuous-time law conserves D_i; a finite step still moves it,"
        " by O(lr) over a fixed time (note balance.N2), a thousand times above round-off at lr ="
        " 1e-3"
    ),
)

# %% [markdown]
# And step 3 along these real runs: the accumulated $\sum_k \eta^2(\|g_{K^i}\|^2 - \|g_{Q^i}\|^2)$ must equal
# the change of every $D_i$.

# %%
identity_error = max(
    (run["D"][-1] - run["D"][0] - run["identity"]).abs().max().item() for run in gd_runs.values()
)
print(f"max |D_end - D_0 - sum lr^2(|g_K|^2 - |g_Q|^2)| = {identity_error:.1e}")
check_claim(
    "balance.step-identity",
    identity_error,
    expected=0.0,
    atol=1e-12,
    why="float64 round-off accumulated over at most a few hundred steps",
)

# %% mystnb={"figure": {"caption": "Gradient flow conserves every query/key imbalance. Left: the 12 D_i along gradient descent (lr = 4e-3, dashed) and the implicit midpoint rule (solid) while the loss falls; the midpoint curves are flat to round-off. Right: the final drift of gradient descent is proportional to the step (slope 1 in log-log), that of the midpoint rule is at round-off.", "name": "fig-balance-conservation"}}
fig, (ax_d, ax_s) = figure(1, 2)
t_mid = np.arange(len(midpoint["D"])) * midpoint_step
t_gd = np.arange(len(gd_runs[4e-3]["D"])) * 4e-3
for index in range(12):
    layer, column = divmod(index, 6)
    colour = PALETTE[index % len(PALETTE)]
    ax_d.plot(
        t_mid, midpoint["D"][:, layer, column] - midpoint["D"][0, layer, column], color=colour, lw=1
    )
    ax_d.plot(
        t_gd,
        gd_runs[4e-3]["D"][:, layer, column] - gd_runs[4e-3]["D"][0, layer, column],
        color=colour,
        ls="--",
        lw=1,
    )
ax_d.plot([], [], "k-", label="implicit midpoint")
ax_d.plot([], [], "k--", label="gradient descent, lr 4e-3")
ax_d.set(xlabel="time t = lr x steps", ylabel="D_i(t) - D_i(0)", title="12 column pairs")
legend(ax_d)
ax_s.loglog(
    gd_rates, list(gd_drift.values()), "o-", label=f"gradient descent (slope {drift_slope:.2f})"
)
ax_s.axhline(
    max(midpoint_drift, 1e-17),
    color=PALETTE[1],
    ls=":",
    label=f"implicit midpoint, h = {midpoint_step:g}",
)
ax_s.set(
    xlabel="learning rate", ylabel="max_i |D_i(end) - D_i(0)|", title=f"drift at t = {flow_time}"
)
ax_s.minorticks_off()  # a factor 4 on a log axis: label the three rates, not crowded minor ticks
ax_s.set_xticks(gd_rates, labels=[f"{rate:g}" for rate in gd_rates])
legend(ax_s)

# %% [markdown]
# What we saw: the loss falls while no $D_i$ moves under the midpoint rule (to ~$10^{-15}$); gradient
# descent drifts in exact proportion to its step, and the drift is exactly the sum of the step-3
# identity. Any systematic change of $D_i$ under SGD must therefore come from the noise.
#
# ## 4. Balance under SGD where everything is exact: a linear model
#
# Take $f(x) = u\,(w^\top x)$ with $u \in \mathbb R^{d_o}$, $w \in \mathbb R^{d}$, $\ell = \|f(x) - y\|^2$,
# $y = M^* x + \epsilon$, $M^* = u^* w^{*\top}$ of unit norm, $x \sim N(0, I_d)$, $\epsilon \sim N(0, \sigma^2 I)$.
# With $\Delta = u w^\top - M^*$, Isserlis' theorem gives
#
# $$ \begin{gathered} C_1 = 4\big[(d+1)\Delta\Delta^\top + d\sigma^2 I_{d_o}\big], \\ C_2 = 4\big[(\|\Delta\|_F^2 + d_o\sigma^2) I_d + \Delta^\top\Delta\big]. \end{gathered} $$
#
# At a minimum ($\Delta = 0$) both are isotropic, Eq. 7's band closes and the law predicts
# $\|u\|^2/\|w\|^2 \to d_o/d$, **not 1**. Along the minimum manifold $\|u\|^2\|w\|^2 = 1$ the law is the ODE
# $\frac{d}{dt}(a - 1/a) = -4T\sigma^2(d\,a - d_o/a)$ for $a = \|u\|^2$, so the number of steps to balance is
# $\propto 1/(\eta T) = S/\eta^2$. First, the closed forms against a Monte-Carlo estimate at a point off the minimum.

# %%
d_in, d_out = 8, 2
sigma_lin = by_mode(quick=1.0, default=0.5, full=0.5)
lin_rng = rng(1)
u_star = lin_rng.standard_normal(d_out)
u_star /= np.linalg.norm(u_star)
w_star = lin_rng.standard_normal(d_in)
w_star /= np.linalg.norm(w_star)
M_star = np.outer(u_star, w_star)
u_test, w_test = u_star + 0.3 * lin_rng.standard_normal(
    d_out
), w_star + 0.3 * lin_rng.standard_normal(d_in)
n_mc = by_mode(quick=100_000, default=400_000, full=400_000)
x_mc = lin_rng.standard_normal((n_mc, d_in))
residual_mc = x_mc @ (np.outer(u_test, w_test) - M_star).T - sigma_lin * lin_rng.standard_normal(
    (n_mc, d_out)
)
grad_u_mc = 2 * (x_mc @ w_test)[:, None] * residual_mc
grad_w_mc = 2 * (residual_mc @ u_test)[:, None] * x_mc
term_u_mc, term_w_mc = balance.noise_terms(grad_u_mc, grad_w_mc)
C1_test, C2_test = balance.linear_C1_C2(u_test, w_test, M_star, sigma_lin)
closed = (u_test @ C1_test @ u_test, w_test @ C2_test @ w_test)
mc_error = max(abs(term_u_mc / closed[0] - 1), abs(term_w_mc / closed[1] - 1))
print(
    f"u^T C1 u: closed form {closed[0]:.3f}, Monte Carlo {term_u_mc:.3f};  "
    f"w^T C2 w: closed form {closed[1]:.3f}, Monte Carlo {term_w_mc:.3f}"
)
assert mc_error < 30 / math.sqrt(
    n_mc
), f"closed-form C1, C2 off by {mc_error:.1e} (Monte-Carlo error ~ {1 / math.sqrt(n_mc):.1e})"

# %% [markdown]
# Now 64 independent SGD runs per setting, started **on the minimum** at ratio 16 ($u = 2u^*$, $w = w^*/2$),
# for 12 relaxation times of the linearised law, at several $(\eta, S)$. The control has no noise: exact
# (population) gradient descent, started **off** the minimum so that its gradient does not vanish. With $T = 0$
# the law conserves $D = \|u\|^2 - \|w\|^2$ (up to the finite-step drift of section 3), so it must land on the
# minimum $\|u\|^2\|w\|^2 = 1$ at $a - 1/a = D$ for $a = \|u\|^2$, that is at the ratio $a^2$, not at $d_o/d$.

# %%
runs_lin = by_mode(quick=16, default=64, full=256)
settings = by_mode(
    quick=[(0.01, 1), (0.01, 2), (0.005, 1)],
    default=[(0.02, 1), (0.01, 1), (0.01, 2), (0.01, 4), (0.005, 1)],
    full=[(0.02, 1), (0.01, 1), (0.01, 2), (0.01, 4), (0.005, 1)],
)
target_ratio = d_out / d_in
u0, w0 = 2 * u_star, w_star / 2
linear = {}
for lr, batch in settings:
    T = lr / batch
    gamma = 8 * T * sigma_lin**2 * d_in * d_out / (d_in + d_out)  # linearised rate of the law
    steps = round(12 / (lr * gamma))
    times, ratio, band = balance.linear_sgd_runs(
        u0,
        w0,
        M_star,
        sigma=sigma_lin,
        lr=lr,
        batch_size=batch,
        steps=steps,
        runs=runs_lin,
        generator=lin_rng,
        record_every=max(1, steps // 600),
    )
    mean_ratio = ratio.mean(axis=1)
    inside = np.abs(mean_ratio / target_ratio - 1) < 0.1
    late = times >= steps * 2 // 3
    linear[(lr, batch)] = {
        "times": times,
        "mean": mean_ratio,
        "T": T,
        "hit": int(times[np.argmax(inside)]) if inside.any() else np.nan,
        "ode": (
            balance.linear_balance_ode_time(
                ratio0=16.0, target=target_ratio, d=d_in, d_o=d_out, sigma=sigma_lin, T=T
            )
            / lr
        ),
        "late": ratio[late].mean(),
        "late_se": ratio[late].mean(axis=0).std() / math.sqrt(runs_lin),
        "band": np.nanmean(band[late], axis=(0, 1)),
    }
u_off, w_off = u0 + 0.3 * lin_rng.standard_normal(d_out), w0 + 0.3 * lin_rng.standard_normal(d_in)
control_lr = 0.01
control = balance.linear_sgd_runs(
    u_off,
    w_off,
    M_star,
    sigma=sigma_lin,
    lr=control_lr,
    batch_size=1,
    steps=20_000,
    runs=1,
    generator=lin_rng,
    record_every=100,
    exact_gradient=True,
)
print(f"predicted balanced ratio d_o/d = {target_ratio}")
for (lr, batch), r in linear.items():
    print(
        f"lr={lr:<6g} S={batch}  T={r['T']:.4f}  late ratio {r['late']:.4f} +- {r['late_se']:.4f} "
        f" Eq. 7 band [{r['band'][0]:.3f}, {r['band'][1]:.3f}]  steps to 10%: {r['hit']:>6}  law"
        f" (ODE): {r['ode']:.0f}"
    )
print(
    f"control, exact gradient from off the minimum: ratio {control[1][0, 0]:.4f} ->"
    f" {control[1][-1, 0]:.4f}"
)

# %% [markdown]
# Eq. 7, checked as a time average: over the last third of every run the mean ratio must lie in the
# band computed from the exact $C_1, C_2$ at the visited points (snapshots fluctuate in and out of the
# band; the law is a statement about the drift). And the balanced ratio is $d_o/d$, far from 1.

# %%
in_band = np.mean([r["band"][0] <= r["late"] <= r["band"][1] for r in linear.values()])
check_claim(
    "balance.eq7-band",
    in_band,
    expected=1.0,
    atol=0,
    why="every setting; the band is wide relative to the standard error of the late mean",
)
worst_ratio_error = max(abs(r["late"] / target_ratio - 1) for r in linear.values())
print(f"largest relative deviation of the late ratio from d_o/d: {worst_ratio_error:.3f}")
check_claim(
    "balance.linear-ratio",
    worst_ratio_error,
    expected=0.0,
    atol=0.05,
    why=(
        "the fixed point shifts by O(lr S) through the finite-step term (note balance.N2); 5 %"
        " covers S <= 4, lr <= 0.02; norm balance (ratio 1) would be off by 300 %"
    ),
)
# On the minimum C1 = 4 d sigma^2 I and C2 = 4 d_o sigma^2 I, so the two noise terms of Eq. 108 stand in the ratio
# (d / d_o) |u|^2 / |w|^2: what SGD balances is this ratio, while the norms stay four to one apart.
noise_term_ratios = [d_in / d_out * r["late"] for r in linear.values()]
norm_ratios = [r["late"] for r in linear.values()]
print(
    f"late u^T C1 u / w^T C2 w: {np.round(noise_term_ratios, 3)}; late |u|^2 / |w|^2:"
    f" {np.round(norm_ratios, 3)}"
)
assert (
    max(abs(math.log(r)) for r in norm_ratios) > 1.0
), "the norms must stay apart for the contrast to mean anything"
check_claim(
    "balance.balanced-quantity",
    max(abs(r - 1) for r in noise_term_ratios),
    expected=0.0,
    atol=0.05,
    why=(
        "the balanced quantities are the noise terms (note balance.N4): their ratio is 1 within the"
        " 5 % of row balance.linear-ratio, while the norm ratio |u|^2 / |w|^2 is 0.25"
    ),
)

# %% [markdown]
# The rate. Per step the law relaxes at $\eta\gamma \propto \eta^2/S$: the steps to come within 10 % of $d_o/d$
# should scale as $S/\eta^2$ (fit the exponent), and equal the ODE's prediction as $T \to 0$.

# %%
scale_x = np.array([batch / lr**2 for lr, batch in linear])
hits = np.array([r["hit"] for r in linear.values()], dtype=float)
exponent = float(np.polyfit(np.log(scale_x), np.log(hits), 1)[0])
hit_over_ode = {key: r["hit"] / r["ode"] for key, r in linear.items()}
print(f"fitted exponent of steps-to-balance against S/lr^2: {exponent:.3f}")
print("measured / ODE:", {f"lr={k[0]:g},S={k[1]}": round(v, 3) for k, v in hit_over_ode.items()})
check_claim(
    "balance.rate-temperature",
    exponent,
    expected=1.0,
    atol=0.15,
    why=(
        "step counts read off a finite-run mean; the finite-T speed-up (up to 30 % at T = 0.02)"
        " bends the fit"
    ),
)
smallest_T = min(linear, key=lambda key: linear[key]["T"])
largest_T = max(linear, key=lambda key: linear[key]["T"])
assert abs(1 - hit_over_ode[largest_T]) > abs(
    1 - hit_over_ode[smallest_T]
), "the ODE is the small-T limit"
check_claim(
    "balance.ode-time",
    hit_over_ode[smallest_T],
    expected=1.0,
    rtol=0.2,
    why=(
        "the on-manifold ODE neglects off-minimum fluctuations, which speed SGD up at finite T (an"
        " independent prototype saw 4-20 %)"
    ),
)

# %% [markdown]
# The control: where does exact gradient descent land? The law at $T = 0$ says at the ratio fixed by the
# conserved $D$. Gradient descent drifts $D$ by $\eta^2\sum_k(\|g_u\|^2 - \|g_w\|^2)$, at most about
# $\eta\,(L_0 - L_\infty)$ by the descent lemma, with $L_0 = \|u w^\top - M^*\|_F^2$ the excess loss at the start; we
# allow twice that.


# %%
def ratio_on_minimum(D):
    """|u|^2 / |w|^2 on the minimum |u|^2 |w|^2 = 1 where |u|^2 - |w|^2 = D."""
    a = (D + math.sqrt(D**2 + 4)) / 2
    return a**2


D_off = u_off @ u_off - w_off @ w_off
drift_allowance = 2 * control_lr * np.sum((np.outer(u_off, w_off) - M_star) ** 2)
control_ratio = control[1][-1, 0]
assert abs(control[1][-2, 0] / control_ratio - 1) < 1e-9, "gradient descent must have converged"
print(
    f"exact GD ends at ratio {control_ratio:.4f}; conservation of D = {D_off:.3f} predicts"
    f" {ratio_on_minimum(D_off):.4f} (allowed: D within +-{drift_allowance:.3f}); SGD balances at"
    f" {target_ratio}"
)
check_claim(
    "balance.controls",
    control_ratio,
    lower=ratio_on_minimum(D_off - drift_allowance),
    upper=ratio_on_minimum(D_off + drift_allowance),
    why=(
        "D is conserved by the flow; GD's finite-step drift is below lr (L_0 - L_end) / (1 - lr"
        " beta / 2), allowed twice; landing at d_o/d or at 1 would fail"
    ),
)

# %% mystnb={"figure": {"caption": "SGD balances a linear model where the law can be computed exactly. Left: the mean ratio |u|^2/|w|^2 of the runs falls from 16 to d_o/d = 0.25 (dotted), not to 1; the control without noise (exact gradient descent, started off the minimum; dashed) settles where its conserved |u|^2 - |w|^2 puts it, far above. Right: steps to come within 10 % of 0.25 against batch/lr^2 (dots) follow the law's ODE (line) up to a finite-T speed-up at the largest T.", "name": "fig-balance-linear"}}
fig, (ax_r, ax_t) = figure(1, 2)
for (lr, batch), r in linear.items():
    ax_r.semilogy(r["times"] * lr * r["T"], r["mean"], label=f"lr {lr:g}, S {batch}")
ax_r.semilogy(
    control[0] * control_lr * 0.01, control[1][:, 0], "k--", label="control: exact gradient"
)
ax_r.axhline(target_ratio, color="k", ls=":", label="d_o/d (Eq. 7)")
ax_r.axhline(1.0, color="grey", lw=0.8)
ax_r.set(xlabel="T x t = lr T x steps", ylabel="mean |u|^2 / |w|^2")
legend(ax_r, fontsize=7)
order = np.argsort(scale_x)
ax_t.loglog(scale_x, hits, "o", label="SGD, measured")
ax_t.loglog(
    scale_x[order],
    np.array([r["ode"] for r in linear.values()])[order],
    "-",
    label="law (ODE on the minimum manifold)",
)
ax_t.set(
    xlabel="batch / lr^2",
    ylabel="steps to within 10 % of d_o/d",
    title=f"fitted exponent {exponent:.2f}",
)
ax_t.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
legend(ax_t)

# %% [markdown]
# What we saw: every setting settles at $d_o/d = 0.25$ inside the band of Eq. 7, the noiseless control lands
# where the conservation of $D$ puts it, and the time to balance follows $S/\eta^2$. At the largest temperature SGD balances faster than the
# on-manifold ODE (about 30 % at $T = 0.02$, a few % at $T \le 0.005$): the noise also pushes the weights off
# the minimum, where $C_1$ gains the $(d+1)\Delta\Delta^\top$ term. The late ratio sits slightly above 0.25,
# and in `default` the offset grows with the batch size at fixed $\eta$ (0.2512, 0.2526, 0.2533 for
# $S = 1, 2, 4$ at $\eta = 0.01$) while $\eta = 0.005, S = 1$ matches $\eta = 0.01, S = 1$: it tracks $\eta/T = S$,
# as the finite-step term of step 4 (coefficient $\eta$, not $T$) predicts ({ref}`balance.N2 <balance-n2>`).
#
# ## 5. The attention experiment of App. B.11 (Fig. 6)
#
# Online SGD with $\eta = 4\times 10^{-3}$ on fresh batches. At the paper's batch $S = 200$ ($T = 2\times10^{-5}$)
# the balancing takes of the order of $10^5$ steps, far beyond a book build, so
# `default` runs at the higher temperature $S = 20$ ($T = 2\times 10^{-4}$); `full` runs the paper's $S = 200$ for
# up to $4\times10^5$ steps (about 80 min at the archived run's 12 ms a step; that run stopped at its divergence
# after 54 min), and its archived run is drawn below the figure.
# Each step uses two half batches $a, b$; since $\|\hat g\|^2 = \hat g_a\cdot\hat g_b + \|\hat g_a - \hat g_b\|^2/4$,
# the exact $\Delta D_i$ splits into a finite-step part and a noise part, whose expectation is the law's
# $-\eta T(g_K^i - g_Q^i)$. At checkpoints $g_K^i, g_Q^i$ are estimated from fresh per-sample gradients;
# they are heavy-tailed, so each estimate is the mean of several chunks, whose spread gives the bands.

# %%
sgd_batch = by_mode(quick=20, default=20, full=200)
sgd_steps = by_mode(quick=4_000, default=20_000, full=400_000)
sgd_lr = 4e-3
sgd_start = time.perf_counter()
attention_run = balance.train_attention_sgd(
    balance.init_attention(generator=torch_generator(1, device=device()), imbalance=2.0),
    lr=sgd_lr,
    batch_size=sgd_batch,
    steps=sgd_steps,
    generator=torch_generator(2, device=device()),
    checkpoint_every=sgd_steps // 20,
    g_samples=by_mode(quick=1_000, default=8_000, full=20_000),
    g_chunk=by_mode(quick=500, default=2_000, full=2_000),
)
sgd_seconds = time.perf_counter() - sgd_start
# A run whose loss stops being finite stops there; the checks below read what it measured before.
diverged_at = attention_run["diverged_at"]
measured_run = balance.finite_part(attention_run)
measured_steps = measured_run["checkpoints"][-1]
if diverged_at is not None:
    print(
        f"the loss is not finite at step {diverged_at}: the run stops there, and the checks below"
        f" use its first {measured_steps} steps (its last finite checkpoint)"
    )
log_gap = np.log(measured_run["gK"] / measured_run["gQ"])  # (checkpoints, 2, 6)
print(
    f"{sgd_seconds:.0f} s including checkpoints:"
    f" {(diverged_at or sgd_steps) / sgd_seconds:.0f} SGD steps per second"
)
print(
    f"S = {sgd_batch}, {measured_steps} steps: loss {measured_run['loss'][:100].mean():.2f} -> "
    f"{measured_run['loss'][-sgd_steps // 20:].mean():.2f}"
)
print(
    f"accumulated float32 error of the one-step identity: {attention_run['identity_residual']:.1e}"
)
print("mean |log(g_K/g_Q)| at the checkpoints:", np.round(np.abs(log_gap).mean(axis=(1, 2)), 2))

# Fig. 6's series and the loss in 400 block means, saved here so that a full run archives them even when a
# later cell fails.
D_stride = sgd_steps // 400
fig6_series = {key: attention_run[key] for key in ("checkpoints", "gK", "gQ", "gK_se", "gQ_se")} | {
    "D_steps": np.arange(0, sgd_steps + 1, D_stride),
    "D": attention_run["D"][::D_stride],
    "loss": attention_run["loss"].reshape(-1, D_stride).mean(axis=1),
    "diverged_at": [math.nan if diverged_at is None else diverged_at],
}
save_arrays("fig6", **fig6_series)

# %% [markdown]
# The law's drift against the measured one, pair by pair, from the first checkpoint on (the first interval
# is a fast transient that the checkpoint spacing cannot resolve). First the direction: the pairs whose $D_i$
# the law says should fall fastest must be those that fall fastest. A sign count is too weak a test here (most
# predicted drifts are negative, so chance would agree often); we use the rank correlation of predicted and
# measured $\Delta D_i$ over the 12 pairs, with a permutation test. Then the size.

# %%
predicted, measured, noise_part = balance.law_prediction(
    measured_run, lr=sgd_lr, batch_size=sgd_batch
)
same_sign = int(np.sum(np.sign(predicted) == np.sign(measured)))
rho, p_value = balance.rank_agreement(predicted, measured, generator=rng(3))
print(
    "law's Delta D_i:\n",
    np.round(predicted, 3),
    "\nmeasured Delta D_i:\n",
    np.round(measured, 3),
    "\nof which the noise part:\n",
    np.round(noise_part, 3),
)
print(
    f"same sign in {same_sign} of 12 pairs; rank correlation {rho:.2f}, permutation p-value"
    f" {p_value:.1e}"
)
check_claim(
    "balance.b11-sign",
    p_value,
    upper=0.01,
    why=(
        "one-sided permutation test of Spearman's rho over the 12 pairs: false-pass rate at most 1"
        " % if the measured drifts were unrelated to the law's"
    ),
)
rate_ratio = measured.sum() / predicted.sum()
print(
    f"measured / predicted total drift: {rate_ratio:.2f}; its noise part alone:"
    f" {noise_part.sum() / predicted.sum():.2f}"
)
# the measured drift is a finite-step part plus the noise part, whose expectation is the law's drift
save_arrays(
    "b11_law",
    predicted=predicted,
    measured=measured,
    noise_part=noise_part,
    rate_ratio=[rate_ratio],
    steps=[float(measured_run["checkpoints"][1]), float(measured_steps)],
)
check_claim(
    "balance.b11-rate",
    rate_ratio,
    lower=1 / 1.5,
    upper=1.5,
    why=(
        "heavy-tailed per-sample gradients: finite-sample g estimates are typically low by up to"
        " x1.5 (measured on 1000-sample chunks in a prototype); a factor 2 in T (e.g. a loss with"
        " 1/2) would fail"
    ),
)

# %% [markdown]
# Fig. 6's claim: "as the training proceeds, the two quantities become closer and ultimately overlap within an
# acceptable range of uncertainty". The paper gives neither its number of steps nor its uncertainty range; we read
# "overlap" as every pair within a factor 2 over the last three checkpoints ({ref}`balance.N7 <balance-n7>`). Both
# halves are claims about batch 200, so they are checked only in `full`; at batch 20 the approach is the book's
# own result.

# %%
start_gap = np.abs(log_gap[0]).mean()
end_gap = np.abs(log_gap[-3:]).mean()
within_2 = float(np.mean(np.abs(log_gap[-3:].mean(axis=0)) < math.log(2)))
print(
    f"S = {sgd_batch}: mean |log(g_K/g_Q)| {start_gap:.2f} at the start, {end_gap:.2f} over the"
    f" last 3 checkpoints; pairs within a factor 2 at the end: {within_2:.2f}"
)
print(
    "log(g_K/g_Q) per pair over the last 3 checkpoints:\n", np.round(log_gap[-3:].mean(axis=0), 2)
)
approach_why = (
    "a 20 % shrink of the mean log gap is well outside the checkpoint-to-checkpoint scatter"
    " (~0.1-0.3 in log)"
)
if mode() == "full":
    check_claim("balance.fig6-approach", end_gap / start_gap, upper=0.8, why=approach_why)
    check_claim(
        "balance.fig6-overlap",
        within_2,
        expected=1.0,
        atol=0,
        why=(
            "every one of the 12 pairs within a factor 2, wider than the chunk standard errors"
            " (note balance.N7)"
        ),
    )
else:
    check_claim("balance.fig6-approach-batch20", end_gap / start_gap, upper=0.8, why=approach_why)


# %% mystnb={"figure": {"caption": "App. B.11 / Fig. 6 at higher temperature (batch 20 in default mode): the two noise terms of each of the 12 query/key column pairs (g_K solid, g_Q dashed, same colour for one pair; band: standard error over chunks of samples). The gaps shrink from the start; in layer 2 they close to within a factor 2, in layer 1 they do not. Right: the imbalances D_i; in layer 1, where g_K stays above g_Q, every D_i keeps falling, as the law says.", "name": "fig-balance-attention"}}
def draw_noise_balance(axes, run, drift_ratio):
    """Fig. 6's two noise terms per column pair (one panel per layer) and the imbalances D_i."""
    steps_ckpt = run["checkpoints"] / 1000
    for layer in range(2):
        for column in range(6):
            colour = PALETTE[column]
            for g, se, style in ((run["gK"], run["gK_se"], "-"), (run["gQ"], run["gQ_se"], "--")):
                axes[layer].plot(steps_ckpt, g[:, layer, column], style, color=colour, lw=1)
                axes[layer].fill_between(
                    steps_ckpt,
                    np.maximum(g[:, layer, column] - se[:, layer, column], 1e-3),
                    g[:, layer, column] + se[:, layer, column],
                    color=colour,
                    alpha=0.15,
                )
        axes[layer].set(
            yscale="log",
            xlabel="SGD step (thousands)",
            ylabel="g_K^i (solid), g_Q^i (dashed)",
            title=f"layer {layer + 1}",
        )
        axes[layer].plot([], [], "k-", label="g_K")
        axes[layer].plot([], [], "k--", label="g_Q")
        legend(axes[layer])
    for index in range(12):
        layer, column = divmod(index, 6)
        axes[2].plot(
            run["D_steps"] / 1000,
            run["D"][:, layer, column],
            color=PALETTE[column],
            ls="-" if layer == 0 else "--",
            lw=1,
        )
    axes[2].plot([], [], "k-", label="layer 1")
    axes[2].plot([], [], "k--", label="layer 2")
    axes[2].set(
        xlabel="SGD step (thousands)",
        ylabel="D_i = |W_K^i|^2 - |W_Q^i|^2",
        title=(
            f"measured/law drift {drift_ratio:.2f}" if math.isfinite(drift_ratio) else "imbalances"
        ),
    )
    legend(axes[2])


draw_noise_balance(figure(1, 3)[1], fig6_series, rate_ratio)

# %% [markdown]
# ### Fig. 6 at the paper's batch, from the archive
#
# `full` mode runs the cells above at the paper's batch $S = 200$ for up to $4\times10^5$ steps, and
# `make paper-scale CHAPTER=balance` archives its checks and the series of its figure in
# `results/full/balance.json`. The next figure is drawn from that archive, not computed in this build: the line
# above it names the run (date, commit, machine), and the ledger's Paper scale column holds its checks.
#
# The archived run (2026-11-26, 54 min on one thread of a 2-core machine, one seed) did not reach
# $4\times10^5$ steps. Its loss fell from 3.3 to about 0.27 and stayed there until step 268 170, when one batch,
# whose gradient was about 100 times the median, pushed it to 4.3; eight steps later it was no longer a number.
# The same batches replayed in float64 blow up two steps later (a replay not archived, which
# `tools/b11_divergence.py` repeats), so this is the dynamics
# at $\eta = 4\times10^{-3}$ with our choices for what the appendix leaves open, not float32 rounding; the paper
# reports no divergence ({ref}`balance.N7 <balance-n7>`). The run stops there, and its checks read the
# $2.6\times10^5$ steps up to its last checkpoint:
#
# - Fig. 6's approach holds: the mean $|\log(g_K^i/g_Q^i)|$ falls from 2.32 to 0.44, a ratio of 0.19 (0.27
#   from the second checkpoint on, past the initial transient; `balance.fig6-approach`, reproduced, one seed).
# - The overlap does not come within those steps: 9 of the 12 pairs end within a factor 2, three pairs of layer
#   2 stay at factors 2.0, 2.3 and 2.5 (only the last clearly beyond the standard errors of its estimates), and
#   the mean gap has stayed at about 0.44 since $2\times10^5$ steps (`balance.fig6-overlap`, inconclusive: one
#   seed, and the paper gives neither a range nor a number of steps).
# - The law's direction holds (rank correlation 0.92, permutation $p = 2\times10^{-5}$), but the measured drift
#   is 1.62 times the law's, outside the factor 1.5 of the check. Its noise part alone is 1.24 times the law's:
#   the rest is the finite-step term of {ref}`balance.N2 <balance-n2>`, which does not shrink with the batch and
#   at $S = 200$ is a quarter of the drift; at batch 20 (in `quick` mode 1.13 in all, 1.09 for the noise part)
#   it is about ten times smaller relative to the law (`balance.b11-rate`, clarified by
#   {ref}`balance.N3 <balance-n3>`).

# %% mystnb={"figure": {"caption": "Paper Fig. 6 at the paper's setting (batch 200, lr 4e-3, online SGD until the loss blew up at step 268 178), drawn from the archived full-mode run, not recomputed in this build. Panels as in the figure above: g_K (solid) and g_Q (dashed) of each column pair per layer, and the imbalances D_i. The gaps between g_K and g_Q shrink for about 200 000 steps and then stay: three pairs of layer 2 end at factors 2.0 to 2.5 (only the 2.5 clearly beyond its standard error).", "name": "fig-balance-attention-paper-scale"}}
paper_scale = archived_arrays("balance", "fig6") if mode() != "full" else None
if paper_scale is None:
    print(
        "No archived full run with Fig. 6's series"
        + (
            " (this run is the full one)"
            if mode() == "full"
            else ": `make paper-scale CHAPTER=balance`"
        )
    )
else:
    archived_gap = np.log(paper_scale["gK"] / paper_scale["gQ"])
    measured_checkpoints = np.isfinite(archived_gap).all(axis=(1, 2))  # those before a divergence
    archived_gap = archived_gap[measured_checkpoints]
    print(
        f"archived full run of {paper_scale['date']}, commit {paper_scale['commit']},"
        f" {paper_scale['machine']}: loss not finite from step {paper_scale['diverged_at'][0]:.0f};"
        f" over the {paper_scale['checkpoints'][measured_checkpoints][-1]:.0f} steps before, mean"
        f" |log(g_K/g_Q)| {np.abs(archived_gap[0]).mean():.2f} at the start,"
        f" {np.abs(archived_gap[-3:]).mean():.2f} over the last 3 checkpoints; pairs within a"
        f" factor 2 at the end: {np.mean(np.abs(archived_gap[-3:].mean(axis=0)) < math.log(2)):.2f}"
    )
    archived_law = archived_arrays("balance", "b11_law")
    if archived_law is not None:
        print(
            f"measured / law's drift over steps {archived_law['steps'][0]:.0f} to"
            f" {archived_law['steps'][1]:.0f}: {archived_law['rate_ratio'][0]:.2f}; its noise part"
            f" alone: {archived_law['noise_part'].sum() / archived_law['predicted'].sum():.2f}"
        )
    draw_noise_balance(
        figure(1, 3)[1],
        paper_scale,
        math.nan if archived_law is None else archived_law["rate_ratio"][0],
    )

# %% [markdown]
# What we saw: the law holds where it can be measured. The $D_i$ move in the direction of
# $g_Q^i - g_K^i$ and in the order the law predicts (the rank test above; the sign disagreements are pairs near
# noise balance, whose predicted drift is within the noise of the estimates) and, summed over the pairs, at the
# predicted rate: the measured drift is somewhat larger than
# the prediction, as expected from checkpoint estimates of heavy-tailed variances, which are typically low
# (the largest per-sample gradients carry a large share of the variance and are mostly missed by a
# finite sample). At this temperature the noise terms approach each other but do not yet overlap everywhere:
# in the `default` run the six pairs of layer 2 end within a factor 2 of noise balance,
# while in layer 1 $g_K^i$ stays several times $g_Q^i$, its $D_i$ still falling steadily as the loss keeps
# falling and the balance point keeps moving. None of this decides Fig. 6, which is a statement about batch
# 200. The archived run at the paper's batch, above, decides its approach (the gaps close by a factor of five)
# but not its overlap: the gaps then stall with three pairs at factors 2.0 to 2.5, in the one seed run so far and
# the $2.6\times10^5$ steps before its loss blew up. There the law still gives the direction of the drift and
# the size of its noise part, but not the whole drift: at $S = 200$ the finite-step term is no longer small.
#
# ## 6. Errata and notes
#
# Each is registered and listed on the errata page.
#
# - {ref}`balance.E1 <balance-e1>`, **the count.** "5 independent rescaling symmetries" per layer: there are 6
#   (one per column of $W_K, W_Q \in\mathbb R^{6\times6}$, as the paper's own "$i \in [6]$" says), 12 in the
#   network, and they are the diagonal of a $GL(6)$ symmetry.
# - {ref}`balance.E2 <balance-e2>`, **the transpose.** Eq. 114 writes $\ell(W_K W_Q)$, but its right-hand side is
#   $W_K W_Q^\top$; the network sees $W_Q W_K^\top$.
# - {ref}`balance.N1 <balance-n1>`, **"Eq. (35)".** Not in the excerpt; read as the two terms of Eq. 108
#   (variance and $C$ forms agree), with $g_K^i$ the gradient noise of $W_Q^i$.
# - {ref}`balance.N2 <balance-n2>`, **the finite step.** The modified loss of App. B.7 is not in the excerpt;
#   the discrete law is exact per step and its finite-step term scales with $\eta$, not $T$.
# - {ref}`balance.N3 <balance-n3>`, **$T$ and $t$.** Not defined in the excerpt; read as $T = \eta/S$ and
#   $t = \eta\times$steps.
# - {ref}`balance.N4 <balance-n4>`, **what is balanced.** Noise, not norms: the linear model balances at
#   $\|u\|^2/\|w\|^2 = d_o/d$; one balance condition per column pair, 12 in the network.
# - {ref}`balance.N5 <balance-n5>`, **Eq. 7's eigenvalues.** Evaluated at the stationary point itself: a
#   self-consistency condition, void above when $C_1$ is singular.
# - {ref}`balance.N6 <balance-n6>`, **the B.11 setup.** The query's label, $w^*$ per sequence or fixed, the noise
#   level and the architecture's details are left open; section 1 lists our choices.
# - {ref}`balance.N7 <balance-n7>`, **"overlap".** No uncertainty range and no number of steps are given; and at
#   the paper's lr and batch, with the book's choices of N6, online SGD blew up after 268 178 steps in the
#   book's one run.
#
# ## Exercises
#
# ```{exercise}
# :label: balance-ex-weight-decay
# Add weight decay $\frac{\gamma}{2}(\|u\|^2 + \|w\|^2)$ to the loss. How does the law change? What happens to
# $D$ under gradient flow?
# ```
#
# ```{solution} balance-ex-weight-decay
# :class: dropdown
# The decay adds $-\gamma u$ and $-\gamma w$ to the drift, so $\dot D$ gains $-2\gamma D$:
# $\dot D = -2\gamma D - T(u^\top C_1 u - w^\top C_2 w)$. Without noise $D$ decays to 0 at rate $2\gamma$
# (weight decay balances norms); with noise the fixed point is where the two effects cancel.
# ```
#
# ```{exercise}
# :label: balance-ex-scalar
# For scalars $u, w$ and $\ell = (uwx - y)^2$, show that $d|u^2 - w^2|/dt = -T C_0 |u^2 - w^2|$ with
# $C_0 = \mathrm{Var}[\partial \ell/\partial(uw)]$. What is the stationary ratio $u^2/w^2$?
# ```
#
# ```{solution} balance-ex-scalar
# :class: dropdown
# Here $A$ is a scalar, $C_1 = C_2 = C_0$, so $\dot D = -T C_0 (u^2 - w^2) = -T C_0 D$: $|D|$ decays
# exponentially and the stationary ratio is 1. Norm balance is special to $C_1 = C_2$ (compare
# {ref}`balance.N4 <balance-n4>`).
# ```
#
# ```{exercise}
# :label: balance-ex-gl
# Each attention layer has the larger symmetry $W_Q \to W_Q G$, $W_K \to W_K G^{-\top}$ for any invertible $G$.
# Which matrix does gradient flow conserve, and which column-wise quantities of this chapter are its diagonal?
# ```
#
# ```{solution} balance-ex-gl
# :class: dropdown
# Along $G = I + sE$, $\delta W_Q = W_Q E$ and $\delta W_K = -W_K E^\top$; invariance for every $E$ gives
# $W_Q^\top \nabla_{W_Q}\ell = (\nabla_{W_K}\ell)^\top W_K$. Under gradient flow this makes
# $\frac{d}{dt}W_Q^\top W_Q = \frac{d}{dt}W_K^\top W_K$, so the $6\times6$ matrix $W_K^\top W_K - W_Q^\top W_Q$ is
# conserved. Its diagonal entries are the $D_i = \|W_K^i\|^2 - \|W_Q^i\|^2$ of this chapter; the off-diagonal
# entries are conserved too (and SGD noise moves all of them).
# ```
#
# ## Cite this chapter
#
# ```{cite-this-chapter}
# :paper: ziyin2025noise
# ```
