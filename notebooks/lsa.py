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
# # LSA convergence and distribution shifts
#
# Zhang, Frei and Bartlett {cite}`zhang2024trained` ask what a single linear self-attention (LSA) layer
# learns when it is trained by gradient flow on random linear-regression prompts, and how the trained
# layer behaves on prompts from other distributions. Their answer: from a balanced, block-structured
# initialisation the flow converges to an explicit global minimum whose prediction is a preconditioned
# one-step gradient estimate $x_q^\top\Gamma^{-1}\frac1M\sum_i y_ix_i$; its error is the best linear error
# plus $O(1/M)+O(1/N^2)$; it tolerates task and independent query shifts but not covariate shifts. This
# chapter re-derives and checks all of that with **exact population quantities** (closed forms built from
# Gaussian moments, the flow solved as an ODE), using Monte Carlo through the literal model only as a
# z-score-tested confirmation, and it checks the lemmas of the appendices one by one. We find the
# convergence theorem holds, with a much faster rate than the paper's constant and well outside its
# initialisation condition; that a generic initialisation can stop at a **spurious local minimum** (so
# Assumption 3.3 does real work); that the "zero prediction for orthogonal queries" holds only for isotropic
# covariances; that the limit (C.15) of Theorem 4.5 is misprinted and an identity in the proof of Lemma C.6
# is off by a factor $\mathbb E[\lambda^2]/\mathbb E[\lambda]^2$; that the "1/3" of Section 4.3 is the mean for a
# fixed query and becomes 2/3 when the query follows the prompt's covariance; and that the sample sizes of
# Corollary 4.3 are too small (a false inequality). The ledger of this chapter: {ledger-counts}`lsa`.
# What you read was executed in the `default` run mode unless the build says otherwise (sizes come from
# `icllib.config.by_mode`; the status page has the measured run times; `full` multiplies the Monte-Carlo
# sizes by 5 to 20, runs 60 generic initialisations and 30 000 SGD steps per seed).

# %% tags=["hide-input"]
import numpy as np
import torch

from icllib import lsa
from icllib import lsa_theory as lsat
from icllib.claims import check_claim
from icllib.config import by_mode, run_line, torch_generator
from icllib.plotting import figure, legend

torch.set_num_threads(1)  # small tensors: a second thread was up to 14x slower on these machines
print(run_line())

# %% [markdown]
# ## The model and its reduction
#
# The LSA layer maps the embedding $E\in\mathbb R^{(d+1)\times(M+1)}$ (columns $(x_i;y_i)$ and
# $(x_q;0)$, Eq. 3.4) to $f_{\rm LSA}(E)=E+W^{PV}E\,\frac{E^\top W^{KQ}E}{\rho}$ (Eq. 3.3) and reads the
# prediction in the bottom-right entry. The normalisation is the width of $E$ minus one (line 114): $\rho=N$
# for training prompts and $\rho=M$ for a test prompt of length $M$, as in (4.2)-(4.3) and `lsa.predict`.
# Lemma 5.1 rewrites the prediction as a quadratic form $u^\top H u$ in the $(d+1)^2$ entries that matter
# (Eq. 3.6); the other $(d+1)^2$ entries never enter. We check all three forms on random prompts with
# random "junk" in the entries that should not matter. Training data: $w\sim\mathcal N(0,I_d)$,
# $x\sim\mathcal N(0,\Lambda)$ with an anisotropic, rotated (non-diagonal) $\Lambda$.

# %%
d, N = 4, 15
Lam = lsa.make_lambda([0.25, 0.5, 1.0, 2.0], generator=np.random.default_rng(14))
W_KQ_star, W_PV_star = lsat.global_minimum(Lam, N)
rng = np.random.default_rng(0)
W_KQ = rng.standard_normal((d + 1, d + 1)) * 0.5
W_PV = rng.standard_normal((d + 1, d + 1)) * 0.5
X, w, x_q = lsa.sample_prompts(200, N, Lam, torch_generator(1))
y = (X @ w[:, :, None])[..., 0]
literal = lsa.lsa_forward(W_KQ, W_PV, lsa.embed(X, y, x_q), rho=N)[:, -1, -1]
err_predict = float((lsa.predict(W_KQ, W_PV, X, y, x_q) - literal).abs().max())
err_quadratic = float((lsa.quadratic_form_prediction(W_KQ, W_PV, X, y, x_q) - literal).abs().max())
junk_KQ, junk_PV = W_KQ.copy(), W_PV.copy()
mask_KQ, mask_PV = lsa.relevant_mask(d)
junk_KQ[~mask_KQ.numpy()] = rng.standard_normal(int((~mask_KQ).sum())) * 10
junk_PV[~mask_PV.numpy()] = rng.standard_normal(int((~mask_PV).sum())) * 10
err_junk = float(
    (lsa.lsa_forward(junk_KQ, junk_PV, lsa.embed(X, y, x_q), rho=N)[:, -1, -1] - literal)
    .abs()
    .max()
)
print(
    f"max |predict - literal| = {err_predict:.1e}, |u^T H u - literal| = {err_quadratic:.1e}, "
    f"junk entries change y-hat by {err_junk:.1e} (|y-hat| up to {float(literal.abs().max()):.1f})"
)
check_claim(
    "lsa.lemma51",
    err_quadratic,
    upper=1e-10,
    why="float64 round-off of a (d+1)^2-term quadratic form with entries of order 10",
)
check_claim(
    "lsa.eq36",
    max(err_junk, err_predict),
    upper=1e-10,
    why=(
        "float64 round-off; the junk entries are of size 10, so any dependence would show at"
        " order 1"
    ),
)

# %% [markdown]
# Below Lemma 5.1 the paper shows that the quadratic form is not convex: the eigenvalues of
# $H_\tau=\frac12X_\tau\otimes\frac{E_\tau E_\tau^\top}N$ are products of those of $\frac12X_\tau$ (one negative, $-\|x_q\|/2$) and
# of the positive semi-definite $E_\tau E_\tau^\top/N$, so $H_\tau$ has at least $d+1$ negative eigenvalues (line 356).

# %%
E_h = lsa.embed(X[:20], y[:20], x_q[:20])
S_h = E_h @ E_h.transpose(1, 2) / N
X_h = torch.zeros(20, d + 1, d + 1, dtype=torch.float64)
X_h[:, :d, d] = X_h[:, d, :d] = x_q[:20]
eig_H = torch.linalg.eigvalsh(torch.stack([0.5 * torch.kron(a, b) for a, b in zip(X_h, S_h)]))
n_negative = (eig_H < -1e-12 * eig_H.abs().amax(-1, keepdim=True)).sum(-1)
print(
    f"negative eigenvalues of H over 20 prompts: {sorted(set(n_negative.tolist()))} (d + 1 ="
    f" {d + 1})"
)
check_claim(
    "lsa.nonconvex",
    int(n_negative.min()),
    lower=d + 1,
    why=(
        "eigenvalues of 25 x 25 symmetric matrices in float64; 'negative' means below -1e-12 times"
        " the largest"
    ),
)

# %% [markdown]
# **The population loss in closed form.** On the invariant set $u_{12}=u_{21}=0$ of Lemma 5.2 the
# prediction is $u_{-1}w^\top\hat\Lambda U_{11}x_q$ with $\hat\Lambda=\frac1N\sum_ix_ix_i^\top$. Averaging
# over $w$ and $x_q$ and using the Gaussian fourth moment of Lemma D.2,
# $\mathbb E[\hat\Lambda C\hat\Lambda]=\Lambda C\Lambda+\frac1N(\Lambda C^\top\Lambda+{\rm tr}(C\Lambda)\Lambda)$, gives
#
# $$\begin{gathered}L(U_{11},u_{-1})=\tfrac12u_{-1}^2{\rm tr}(\Gamma\Lambda U_{11}\Lambda U_{11}^\top)-u_{-1}{\rm tr}(\Lambda^2U_{11}^\top)
# +\tfrac12{\rm tr}\Lambda,\\ \Gamma=(1+\tfrac1N)\Lambda+\tfrac{{\rm tr}\Lambda}{N}I_d,\end{gathered}$$
#
# which is $\tilde\ell$ of Eq. (5.5) plus a constant. Beyond the paper, `lsa.population_loss` evaluates
# the loss for **every** parameter: off the invariant set a part even in $w$ appears, whose square needs
# Gaussian moments up to order six (the formulas are in the module's source). We compare both with Monte
# Carlo through the literal model, at a point of the invariant set (with junk in the irrelevant entries)
# and at a generic point. The tolerance is a z-score: four standard errors of the Monte-Carlo mean.

# %%
n_mc = by_mode(quick=50_000, default=400_000, full=4_000_000)
U_test = W_KQ_star[:d, :d] * 1.3
inv_KQ, inv_PV = junk_KQ.copy(), junk_PV.copy()
inv_KQ[:, :d] = 0
inv_KQ[:d, :d] = U_test
inv_PV[d, :] = 0
inv_PV[d, d] = W_PV_star[d, d] * 0.7
exact_restricted = lsat.restricted_loss(U_test, inv_PV[d, d], Lam, N)
mc_restricted = lsa.mc_loss_and_gradient(
    inv_KQ, inv_PV, Lam, N, n=n_mc, generator=torch_generator(2)
)
z_restricted = (mc_restricted["loss"] - exact_restricted) / mc_restricted["loss_se"]
exact_full = float(lsat.population_loss(W_KQ, W_PV, Lam, N))
mc_full = lsa.mc_loss_and_gradient(W_KQ, W_PV, Lam, N, n=n_mc, generator=torch_generator(3))
z_full = (mc_full["loss"] - exact_full) / mc_full["loss_se"]
print(
    f"invariant set: exact {exact_restricted:.5f}, MC {mc_restricted['loss']:.5f} ±"
    f" {mc_restricted['loss_se']:.5f} (z = {z_restricted:+.2f})"
)
print(
    f"generic point: exact {exact_full:.4f}, MC {mc_full['loss']:.4f} ± {mc_full['loss_se']:.4f} (z"
    f" = {z_full:+.2f})"
)
print(
    "closed form at v = u = 0 minus Eq. (5.5) + tr/2: "
    f"{float(lsat.population_loss(inv_KQ, inv_PV, Lam, N)) - exact_restricted:.1e}"
)
check_claim(
    "lsa.population-loss",
    z_restricted,
    lower=-4,
    upper=4,
    why=(
        f"z-score of a {n_mc}-prompt Monte-Carlo mean (SE {mc_restricted['loss_se']:.1e}); |z| > 4"
        " by chance has probability 6e-5, and a formula off by more than 6.3 SE passes with"
        " probability below 1 %"
    ),
)
check_claim(
    "lsa.full-loss",
    z_full,
    lower=-4,
    upper=4,
    why=(
        f"z-score of a {n_mc}-prompt Monte-Carlo mean (SE {mc_full['loss_se']:.1e}, measured: the"
        " squared error is heavy-tailed); a formula off by more than 6.3 SE passes with"
        " probability below 1 %"
    ),
)

# %% [markdown]
# **Lemma 5.2: the dynamics.** The same Monte-Carlo run also averages the gradient of the per-prompt loss
# of the literal model. On the invariant set, Lemma 5.2 says that this gradient is minus the right-hand side
# of (5.4) in the $U_{11}$ and $u_{-1}$ entries and exactly zero in the $u_{12}=w^{PV}_{21}$ and $u_{21}=w^{KQ}_{21}$
# entries (which is why those stay zero). The key moment is $\mathbb E[\hat\Lambda^2]=\Gamma\Lambda$ (line 636); as a
# control, the same test is run against the gradient with $\mathbb E[\hat\Lambda^2]$ replaced by $\Lambda^2$ (its
# $N\to\infty$ value).

# %%
c_test = inv_PV[d, d]
dU_52, dc_52 = lsat.restricted_gradient(
    U_test, c_test, Lam, N
)  # the right-hand side of (5.4), negated
grad_KQ_52, grad_PV_52 = np.zeros((d + 1, d + 1)), np.zeros((d + 1, d + 1))
grad_KQ_52[:d, :d], grad_PV_52[d, d] = dU_52, dc_52
z_52 = np.concatenate(
    [
        (mc_restricted[f"grad_{k}"].numpy()[m] - expected[m]) / mc_restricted[f"se_{k}"].numpy()[m]
        for k, expected, m in (
            ("KQ", grad_KQ_52, mask_KQ.numpy()),
            ("PV", grad_PV_52, mask_PV.numpy()),
        )
    ]
)
dU_control = c_test**2 * Lam @ Lam @ U_test @ Lam - c_test * Lam @ Lam
z_control = (mc_restricted["grad_KQ"].numpy()[:d, :d] - dU_control) / mc_restricted[
    "se_KQ"
].numpy()[:d, :d]
print(
    f"max |z| over the {z_52.size} relevant gradient entries: {np.abs(z_52).max():.2f}; "
    f"control with E Lam-hat^2 = Lam^2: max |z| = {np.abs(z_control).max():.1f}"
)
check_claim(
    "lsa.lemma52",
    float(np.abs(z_52).max()),
    upper=4.5,
    why=(
        f"largest of {z_52.size} z-scores of {n_mc}-prompt Monte-Carlo means: fails by chance with"
        " probability about 2e-4; an entry off by more than 6.8 SE passes with probability below 1"
        " %, and the control (Gamma -> Lambda) is rejected by far"
    ),
)

# %% [markdown]
# ## Theorem 4.1 by exact gradient flow
#
# Lemma 5.2 reduces the flow from Assumption 3.3 ($W^{PV}(0)=\sigma e_{d+1}e_{d+1}^\top$,
# $W^{KQ}_{11}(0)=\sigma\Theta\Theta^\top$, everything else zero) to the ODE (5.4) in $(U_{11},u_{-1})$, the
# negative gradient of the closed form above. We solve it with LSODA at relative tolerance $10^{-11}$ (no
# Monte Carlo anywhere) from four scales $\sigma/\sigma_{\max}\in\{0.05,0.5,3,10\}$, where
# $\sigma_{\max}=\sqrt{2/(\sqrt d\|\Gamma\|_{op})}$ is the theorem's bound, and for two sizes $(d,N)$. The
# theorem predicts the limit $W^*$ of Eq. (4.1), and Lemma A.3 the balance $u_{-1}^2=\|U_{11}\|_F^2$.

# %%
sizes = by_mode(quick=[(4, 15)], default=[(3, 10), (4, 15)], full=[(3, 10), (4, 15), (5, 20)])
scales = [0.05, 0.5, 3.0, 10.0]
flows, summary = {}, []
for dd, NN in sizes:
    Lam_dd = (
        Lam
        if dd == 4
        else lsa.make_lambda(np.geomspace(0.5, 2.0, dd), generator=np.random.default_rng(13))
    )
    K_star, P_star = lsat.global_minimum(Lam_dd, NN)
    sigma_max = lsat.sigma_max(Lam_dd, NN)
    for scale in scales:
        K0, P0 = lsa.assumption33_init(dd, scale * sigma_max, generator=np.random.default_rng(7))
        run = lsa.gradient_flow(K0[:dd, :dd], P0[dd, dd], Lam_dd, NN, T=1500)
        flows[(dd, NN, scale)] = run
        summary.append(
            {
                "d": dd,
                "N": NN,
                "scale": scale,
                "sigma": scale * sigma_max,
                "Lam": Lam_dd,
                "K0": K0,
                "err_KQ": (
                    np.linalg.norm(run["U"][-1] - K_star[:dd, :dd])
                    / np.linalg.norm(K_star[:dd, :dd])
                ),
                "err_PV": abs(run["c"][-1] - P_star[dd, dd]) / P_star[dd, dd],
                "balance": np.abs(run["c"] ** 2 - (run["U"] ** 2).sum((1, 2))).max(),
                "min_c": run["c"].min(),
                "max_increase": np.diff(run["loss"]).max(),
                "drop": run["loss"][0] - run["loss"][-1],
            }
        )
for row in summary:
    print(
        "(d, N) = ({d}, {N}), sigma/sigma_max = {scale:5.2f}: rel. error W_KQ {err_KQ:.1e}, W_PV"
        " {err_PV:.1e}, max |u^2 - ||U||^2| {balance:.1e}, min u_-1 {min_c:.3f}".format(**row)
    )
inside = [r for r in summary if r["scale"] < 1]
outside = [r for r in summary if r["scale"] > 1]
check_claim(
    "lsa.thm41-limit",
    max(max(r["err_KQ"], r["err_PV"]) for r in inside),
    upper=1e-8,
    why=(
        "ODE solved at rtol 1e-11 to T = 1500, where the gap has decayed by e^-300; 1e-8 leaves"
        " room for solver error"
    ),
)
check_claim(
    "lsa.balance",
    max(r["balance"] for r in summary),
    upper=1e-8,
    why=(
        "conserved exactly by the flow; the drift measures the solver's accumulated error (rtol"
        " 1e-11)"
    ),
)
check_claim(
    "lsa.sigma-condition",
    max(max(r["err_KQ"], r["err_PV"]) for r in outside),
    upper=1e-8,
    why="same solver tolerance as inside the condition; runs start at 3 and 10 times the bound",
)

# %% [markdown]
# **Lemmas A.4 and A.5.** Inside the condition on $\sigma$ the paper keeps $u_{-1}$ away from the saddle at the
# origin: $u_{-1}(t)>0$ (Lemma A.4), and in fact
# $u_{-1}(t)\ge\big(\sigma^2\|\Lambda\Theta\|_F^2[2-\sqrt d\sigma^2\|\Gamma\|_{op}]/(2\sqrt d\|\Lambda\|_{op}^2)\big)^{1/2}$ (A.14).
# The proof of Lemma A.4 says the loss is "non-decreasing" along the flow (line 806), where the display
# that follows, $\frac{d\tilde\ell}{dt}=-\|\dot U_{11}\|_F^2-|\dot u_{-1}|^2\le0$, shows it is non-increasing
# ({ref}`lsa.E7 <lsa-e7>`). We check both on the flows above.

# %%
bound_ratios = []
for r in inside:
    dd, sig, Lam_r = r["d"], r["sigma"], r["Lam"]
    LT = (
        np.trace(Lam_r @ r["K0"][:dd, :dd] @ Lam_r) / sig
    )  # ||Lam Theta||_F^2 = tr(Lam Theta Theta^T Lam)
    G_op = np.linalg.norm(lsat.gamma_matrix(Lam_r, r["N"]), 2)
    bound = np.sqrt(
        sig**2
        * LT
        * (2 - np.sqrt(dd) * sig**2 * G_op)
        / (2 * np.sqrt(dd) * np.linalg.norm(Lam_r, 2) ** 2)
    )
    bound_ratios.append(r["min_c"] / bound)
    print(
        f"(d, N) = ({dd}, {r['N']}), sigma/sigma_max = {r['scale']}: min u_-1 = {r['min_c']:.4f},"
        f" bound (A.14) = {bound:.4f}; loss falls by {r['drop']:.3f}, largest rise"
        f" {r['max_increase']:.1e}"
    )
check_claim(
    "lsa.lemmaA4-A5",
    min(bound_ratios),
    lower=1.0,
    why=(
        "min over the flow of u_-1 divided by the bound (A.14), which is positive; ODE error is"
        " 1e-11"
    ),
)
check_claim(
    "lsa.loss-monotone",
    bool(
        max(r["max_increase"] for r in summary) < 1e-12 and min(r["drop"] for r in summary) > 0.01
    ),
    expected=True,
    why=(
        "every flow's loss falls by more than 0.01 (so it is not non-decreasing, as printed) and"
        " never rises by more than 1e-12, the float64 round-off of a loss of order 1 (so it is"
        " non-increasing)"
    ),
)

# %% [markdown]
# **Corollary A.2 and Lemma 5.3.** Completing the square, the paper writes
# $\tilde\ell-\min\tilde\ell=\frac12\|\Gamma^{1/2}(u_{-1}\Lambda^{1/2}U_{11}\Lambda^{1/2}-\Lambda\Gamma^{-1})\|_F^2$ with
# $\min\tilde\ell=-\frac12{\rm tr}(\Lambda^2\Gamma^{-1})$, so that every global minimum has $u_{-1}U_{11}=\Gamma^{-1}$
# (Lemma 5.3, tested on three different minima in the next section).
# We test the identity at random points against the closed form $L-\frac12{\rm tr}\Lambda$ checked above by Monte
# Carlo, and the minimum against the end of the exact flow (which knows nothing of the formula).


# %%
def sqrtm_psd(A):
    """The symmetric square root of a symmetric positive semi-definite matrix."""
    ev, V = np.linalg.eigh(A)
    return (V * np.sqrt(ev)) @ V.T


Lam_half, G_half = sqrtm_psd(Lam), sqrtm_psd(lsat.gamma_matrix(Lam, N))
Gi = np.linalg.inv(lsat.gamma_matrix(Lam, N))
min_A2 = -0.5 * np.trace(Lam @ Lam @ Gi)
gen_A2 = np.random.default_rng(23)
err_A2 = []
for _ in range(20):
    U_r, c_r = gen_A2.standard_normal((d, d)), gen_A2.standard_normal()
    gap_A2 = 0.5 * np.linalg.norm(G_half @ (c_r * Lam_half @ U_r @ Lam_half - Lam @ Gi)) ** 2
    err_A2.append(
        abs(lsat.restricted_loss(U_r, c_r, Lam, N) - 0.5 * np.trace(Lam) - (min_A2 + gap_A2))
    )
flow_end = flows[(4, 15, 0.5)]["loss"][-1] - 0.5 * np.trace(Lam)
print(
    f"Corollary A.2: largest error of the identity over 20 random points {max(err_A2):.1e}; "
    f"end of the flow {flow_end:.12f}, -tr(Lam^2 Gamma^-1)/2 = {min_A2:.12f}"
)
check_claim(
    "lsa.corollaryA2",
    max(max(err_A2), abs(flow_end - min_A2)),
    upper=1e-9,
    why="float64 round-off for the identity (terms of order 10); the flow has converged to 1e-11",
)

# %% [markdown]
# Why the $\sigma$ condition is not needed: under balance, $u_{-1}=0$ forces $U_{11}=0$, the origin is an
# equilibrium of (5.4), so by uniqueness of ODE solutions $u_{-1}$ never crosses zero; and
# ${\rm tr}(\Lambda^2U_{11}(0)^\top)=\sigma\|\Lambda\Theta\|_F^2>0$ pushes the run away from the origin.
#
# **The rate.** Lemma 5.4 proves the Polyak-Łojasiewicz inequality
# $\|\nabla\tilde\ell\|^2\ge\mu(\tilde\ell-\min\tilde\ell)$ with an explicit $\mu$ (Eq. 5.7), hence a loss
# gap below $e^{-\mu t}$. We check the inequality along the flow and compare $\mu$ with the measured tail
# rate of the gap and with twice the smallest non-zero Hessian eigenvalue at $W^*$.

# %%
sigma_max4 = lsat.sigma_max(Lam, N)
K0, _ = lsa.assumption33_init(d, 0.5 * sigma_max4, generator=np.random.default_rng(7))
mu = lsat.pl_constant(Lam, N, 0.5 * sigma_max4, K0)
run = flows[(4, 15, 0.5)]
gap = run["loss"] - lsat.minimum_loss(Lam, N)
tracked = gap > 1e-12
pl_ratio = (run["grad_sq"][tracked] / gap[tracked]).min()
tail = (gap > 1e-13) & (gap < 1e-6)
rate = -np.polyfit(run["t"][tail], np.log(gap[tail]), 1)[0]
hess = np.linalg.eigvalsh(lsat.restricted_hessian(W_KQ_star[:d, :d], W_PV_star[d, d], Lam, N))
lam_min = hess[hess > 1e-10].min()
print(f"mu (Eq. 5.7) = {mu:.2e}; min over the flow of ||grad||^2 / gap = {pl_ratio:.3f}")
print(
    f"tail rate of the gap = {rate:.4f}; 2 x smallest non-zero Hessian eigenvalue ="
    f" {2 * lam_min:.4f} (zero eigenvalue {hess[0]:.1e}); the paper's rate is {rate / mu:.0f} times"
    " too slow"
)
check_claim(
    "lsa.pl-inequality",
    pl_ratio / mu,
    lower=1.0,
    why=(
        "the inequality itself: the ratio must be at least 1 at every output time where the gap is"
        " resolved (> 1e-12)"
    ),
)
assert (
    abs(rate - 2 * lam_min) < 0.01 * rate
), "the tail rate should be twice the smallest non-zero Hessian eigenvalue"

# %% mystnb={"figure": {"caption": "Exact gradient flow of Theorem 4.1 (d = 4, N = 15, rotated anisotropic Lambda). Left: the loss gap falls to round-off from every initial scale, including 3 and 10 times the theorem's bound; the tail is the local rate 2 lambda_min, far faster than the guaranteed exp(-mu t). Right: the balance u_-1^2 - ||U_11||^2 stays at solver precision.", "name": "fig-lsa-flow"}}
fig, (ax_gap, ax_bal) = figure(1, 2)
for scale in scales:
    r = flows[(4, 15, scale)]
    g = r["loss"] - lsat.minimum_loss(Lam, N)
    keep = r["t"] > 0
    ax_gap.semilogy(r["t"][keep], np.maximum(g[keep], 1e-16), label=f"σ = {scale:g} σ_max")
    ax_bal.semilogx(
        r["t"][keep],
        r["c"][keep] ** 2 - (r["U"][keep] ** 2).sum((1, 2)),
        label=f"σ = {scale:g} σ_max",
    )
t_line = np.linspace(0, 200, 50)
ax_gap.semilogy(
    t_line, gap[1] * np.exp(-mu * t_line), "k--", label="Lemma 5.4 guarantee (σ = 0.5 σ_max)"
)
ax_gap.set(xlim=(0, 200), ylim=(1e-16, 1e4), xlabel="time t", ylabel="loss gap L - L*")
ax_bal.set(xlabel="time t", ylabel="u_-1² - ||U_11||²_F")
legend(ax_gap)
legend(ax_bal)

# %% [markdown]
# **What we saw.** Every run reaches $W^*$ to about $10^{-11}$, balance holds to $10^{-10}$, and the
# condition on $\sigma$ is not needed. The PL inequality holds, but its constant is hundreds of times
# smaller than the actual rate, which is set by the smallest non-zero curvature at the minimum (the zero
# eigenvalue is the rescaling $W^{KQ}\to W^{KQ}/s$, $W^{PV}\to sW^{PV}$ that leaves the function unchanged;
# the balance picks the point $W^*$ on that line).

# %% [markdown]
# ## Finite steps: the same function, another point of the minimum manifold
#
# Theorem 4.1 is about gradient flow; the paper leaves finite step sizes open (line 412). The loss only
# depends on the product $cU$ ($c=u_{-1}$), so the global minima form the curve $cU=\Gamma^{-1}$; the flow
# picks the point with $c^2=\|U\|_F^2$ because it conserves the imbalance $\delta=c^2-\|U\|_F^2$. A gradient
# step changes it by exactly $\eta^2\big((\partial_cL)^2-\|\partial_UL\|_F^2\big)$, so gradient descent ends at the
# point of the curve with the accumulated $\delta$: $c^2=\frac12(\delta+\sqrt{\delta^2+4\|\Gamma^{-1}\|_F^2})$. We run
# exact gradient descent (no sampling noise) from the same start as above.

# %%
K0, P0 = lsa.assumption33_init(d, 0.5 * sigma_max4, generator=np.random.default_rng(7))
gd_rows = []
for lr, n_steps in [(0.01, 16000), (0.05, 4000), (0.2, 8000)]:
    gd = lsa.restricted_gd(K0[:d, :d], P0[d, d], Lam, N, lr=lr, steps=n_steps)
    _, c_pred = lsat.manifold_point(Lam, N, gd["delta_predicted"])
    gd_rows.append((lr, gd, c_pred))
    print(
        f"lr {lr:4}: gap {gd['loss'] - lsat.minimum_loss(Lam, N):.1e}, |cU - Gamma^-1|"
        f" {np.abs(gd['c'] * gd['U'] - Gi).max():.1e}, c = {gd['c']:.6f} (flow:"
        f" {W_PV_star[d, d]:.6f}), predicted from delta: {c_pred:.6f}"
    )
lr_big, gd_big, c_big = gd_rows[-1]
check_claim(
    "lsa.finite-step",
    abs(gd_big["c"] - c_big),
    upper=1e-6,
    why=(
        "the run has converged (gap at round-off); the prediction is exact, so the difference is"
        " the remaining distance to the manifold"
    ),
)
assert abs(gd_big["c"] - W_PV_star[d, d]) > 0.5

# %% [markdown]
# The three runs end at three *different* global minima (different $c$), which is a test of Lemma 5.3: each
# must satisfy $cU=\Gamma^{-1}$.

# %%
gd_gaps = [gd["loss"] - lsat.minimum_loss(Lam, N) for _, gd, _ in gd_rows]
gd_dist = [np.linalg.norm(gd["c"] * gd["U"] - Gi) / np.linalg.norm(Gi) for _, gd, _ in gd_rows]
print(
    f"c at the end: {[round(gd['c'], 4) for _, gd, _ in gd_rows]}; loss gaps {max(gd_gaps):.1e} or"
    f" less; relative distance of cU to Gamma^-1 at most {max(gd_dist):.1e}"
)
assert max(gd_gaps) < 1e-12, "each run must have reached a global minimum"
check_claim(
    "lsa.lemma53",
    max(gd_dist),
    upper=1e-6,
    why=(
        "three converged runs (loss gap below 1e-12) at different points of the minimum set; a"
        " minimum with cU != Gamma^-1 would show at order 1"
    ),
)

# %% [markdown]
# **Monte-Carlo SGD on the full matrices.** Finally the training the paper leaves open: stochastic gradient
# descent on fresh batches of prompts (1024 per step, float32), through the literal model, on all
# $2(d+1)^2$ entries of $W^{KQ}$ and $W^{PV}$, from the same kind of start ($d=3$, $N=10$), for several seeds.
# (This minimises the empirical risk (3.7) of the objective (3.1); on the reference to (4.8) at line 84 see
# {ref}`lsa.N1 <lsa-n1>`.) We ask that the seed average of $cU$ be within 2 % of $\Gamma^{-1}$: a single seed
# scatters by about 1 % at this step size and batch, while the $N\to\infty$ predictor $\Lambda^{-1}$ is tens of
# per cent away. (A self-normalised test such as the ratio
# of the seed average's error to the single seeds' errors cannot fail with 3 or 4 seeds: by Cauchy-Schwarz
# it is at most the number of seeds.)

# %%
d3, N3 = 3, 10
Lam3 = lsa.make_lambda([0.5, 1.0, 2.0], generator=np.random.default_rng(13))
Gi3 = np.linalg.inv(lsat.gamma_matrix(Lam3, N3))
sigma_max3 = lsat.sigma_max(Lam3, N3)
K03, P03 = lsa.assumption33_init(d3, 0.5 * sigma_max3, generator=np.random.default_rng(7))
seeds, sgd_steps = by_mode(quick=3, default=4, full=8), by_mode(
    quick=2000, default=3000, full=30000
)
products, sgd_runs = [], []
for seed in range(seeds):
    out = lsa.sgd_full(
        K03,
        P03,
        Lam3,
        N3,
        lr=0.01,
        batch=1024,
        steps=sgd_steps,
        generator=torch_generator(300 + seed),
    )
    K_s3, P_s3 = out["W_KQ"].numpy(), out["W_PV"].numpy()
    products.append(P_s3[d3, d3] * K_s3[:d3, :d3])
    sgd_runs.append((K_s3, P_s3))
    _, c_manifold = lsat.manifold_point(Lam3, N3, float(lsa.balance_gap(K_s3, P_s3)))
    print(
        f"seed {seed}: |cU - Gamma^-1| / |Gamma^-1| ="
        f" {np.linalg.norm(products[-1] - Gi3) / np.linalg.norm(Gi3):.2%}, off-blocks max"
        f" {max(np.abs(K_s3[d3, :d3]).max(), np.abs(P_s3[d3, :d3]).max()):.1e}, c ="
        f" {P_s3[d3, d3]:.4f} (manifold point for its imbalance: {c_manifold:.4f}; flow:"
        f" {lsat.global_minimum(Lam3, N3)[1][d3, d3]:.4f}), excess loss"
        f" {float(lsat.population_loss(K_s3, P_s3, Lam3, N3)) - lsat.minimum_loss(Lam3, N3):.1e}"
    )
products = np.array(products)
err_mean = np.linalg.norm(products.mean(0) - Gi3) / np.linalg.norm(Gi3)
err_alternative = np.linalg.norm(np.linalg.inv(Lam3) - Gi3) / np.linalg.norm(Gi3)
untouched = all(
    np.array_equal(K[~mask.numpy()], K03[~mask.numpy()])
    and np.array_equal(P[~maskP.numpy()], P03[~maskP.numpy()])
    for (K, P), mask, maskP in zip(
        sgd_runs, [lsa.relevant_mask(d3)[0]] * seeds, [lsa.relevant_mask(d3)[1]] * seeds
    )
)
print(
    f"seed average: |mean cU - Gamma^-1| / |Gamma^-1| = {err_mean:.2%} (Lambda^-1 is"
    f" {err_alternative:.0%} away); irrelevant entries untouched by SGD: {untouched}"
)
assert untouched
check_claim(
    "lsa.sgd-predictor",
    err_mean,
    upper=0.02,
    why=(
        f"seed average of {seeds} runs; single seeds scatter by about 1 % (printed), the"
        " alternative Lambda^-1 is tens of per cent away (printed)"
    ),
)

# %% [markdown]
# **What we saw.** Every step size reaches a global minimum with $cU=\Gamma^{-1}$, i.e. the same trained
# predictor, but the individual matrices depend on the step size: at $\eta=0.2$ the value $c$ is about half
# the flow's, exactly where the accumulated imbalance puts it. SGD on the full matrices reaches the same
# predictor to within its seed-to-seed scatter; its scale $c$ ends below the flow's, on the manifold point of its own
# imbalance, which the gradient noise pushes negative (the entries outside Eq. 3.6 never move). Statements about $W^*$ itself (rather than
# about the function it computes) are statements about gradient flow only.

# %% [markdown]
# ## Beyond the paper: the initialisation matters
#
# Theorem 4.1 claims a *global* minimum of (3.8), but its proof minimises only on the invariant set.
# The closed form for all parameters closes the gap: writing $A=cU+vu^\top$, the loss is
# (odd part) + (even part) $\ge$ (odd part) $=\tilde\ell(A)+\frac12{\rm tr}\Lambda\ge L^*$, so the restricted
# minimum is global. Gradient flow also conserves $\delta=\|(v,c)\|^2-\|[U;u^\top]\|_F^2$ for any start,
# since the prediction is bilinear in the last row of $W^{PV}$ and the first columns of $W^{KQ}$.
#
# The paper leaves "more general initializations" open (line 412). We draw every relevant entry i.i.d.
# $\mathcal N(0,0.05^2)$, a batch of seeds at once, and run the exact gradient flow on the closed-form
# loss (a stiff ODE: BDF with the autograd Hessian as Jacobian; plain gradient descent needs about $10^5$
# steps to get as far).


# %%
def generic_init(d, runs, scale, seed):
    gen = np.random.default_rng(seed)
    m_KQ, m_PV = lsa.relevant_mask(d)
    K = torch.zeros(runs, d + 1, d + 1, dtype=torch.float64)
    P = torch.zeros_like(K)
    K[:, m_KQ] = torch.as_tensor(gen.standard_normal((runs, int(m_KQ.sum()))) * scale)
    P[:, m_PV] = torch.as_tensor(gen.standard_normal((runs, int(m_PV.sum()))) * scale)
    return K, P


runs = by_mode(quick=4, default=24, full=60)
T_flow = by_mode(quick=500, default=600, full=2000)
flow_aniso = lsa.full_gradient_flow(
    *generic_init(d, runs, 0.05, seed=100), Lam, N, T=T_flow, rtol=1e-6, atol=1e-9
)
flow_iso = lsa.full_gradient_flow(
    *generic_init(d, runs, 0.05, seed=100), np.eye(d), N, T=T_flow, rtol=1e-6, atol=1e-9
)
gap_aniso = (flow_aniso["loss"] - lsat.minimum_loss(Lam, N)).numpy()
gap_iso = (flow_iso["loss"] - lsat.minimum_loss(np.eye(d), N)).numpy()
print("anisotropic Lambda, final gaps:", np.round(np.sort(gap_aniso), 3))
print("isotropic Lambda, final gaps:  ", np.round(np.sort(gap_iso), 3))
stuck = gap_aniso > 0.3
print(
    f"stuck far from the minimum: {stuck.sum()}/{runs} (anisotropic),"
    f" {(gap_iso > 0.3).sum()}/{runs} (isotropic)"
)

# %% [markdown]
# These flows also test the first claim of Theorem 4.1 over **all** parameters: none may end below $L^*$.
# Near $W^*$ we add random perturbations of all entries and the Hessian of the exact loss over the
# $(d+1)^2$ relevant entries, which must be positive semi-definite at a minimum.

# %%
hess_star = lsa.newton_refine(W_KQ_star, W_PV_star, Lam, N, steps=1)["hessian_eigenvalues"].numpy()
pert = 1e-3 * torch.as_tensor(np.random.default_rng(8).standard_normal((2, 2000, d + 1, d + 1)))
gap_pert = (
    lsat.population_loss(
        torch.as_tensor(W_KQ_star) + pert[0], torch.as_tensor(W_PV_star) + pert[1], Lam, N
    )
    - lsat.minimum_loss(Lam, N)
).numpy()
print(
    f"Hessian at W*: smallest eigenvalues {np.sort(hess_star)[:2]} (the first is the rescaling"
    f" direction); smallest gap of 2000 perturbations {gap_pert.min():.1e}; of the {2 * runs}"
    f" generic flows {min(gap_aniso.min(), gap_iso.min()):.1e}"
)
assert (
    hess_star.min() > -1e-10 * hess_star.max()
), "the Hessian at W* must be positive semi-definite"
check_claim(
    "lsa.global-minimum",
    float(min(gap_aniso.min(), gap_iso.min(), gap_pert.min())),
    lower=-1e-9,
    why=(
        "no flow from a generic start and no perturbation of W* goes below L*; 1e-9 covers the ODE "
        "solver's tolerance (atol 1e-9)"
    ),
)

# %% [markdown]
# The runs split into two groups. To show that the upper group sits at a genuine local minimum (and is not
# merely slow), we take the first stuck run, polish it with Newton steps on the exact loss, and look at its
# gradient and Hessian. Then we confirm the point independently with Monte Carlo through the literal
# model: its loss and each of the $2(d+1)^2$ gradient entries, as z-scores.

# %%
first = int(np.flatnonzero(stuck)[0]) if stuck.any() else 0
spurious = lsa.newton_refine(flow_aniso["W_KQ"][first], flow_aniso["W_PV"][first], Lam, N, steps=8)
eig = spurious["hessian_eigenvalues"].numpy()
spur_gap = spurious["loss"] - lsat.minimum_loss(Lam, N)
mc_spur = lsa.mc_loss_and_gradient(
    spurious["W_KQ"],
    spurious["W_PV"],
    Lam,
    N,
    n=by_mode(quick=50_000, default=200_000, full=2_000_000),
    generator=torch_generator(4),
)
z_loss = (mc_spur["loss"] - spurious["loss"]) / mc_spur["loss_se"]
z_grad = torch.cat(
    [
        (mc_spur["grad_KQ"] / mc_spur["se_KQ"])[mask_KQ],
        (mc_spur["grad_PV"] / mc_spur["se_PV"])[mask_PV],
    ]
)
print(
    f"loss gap {spur_gap:.5f}, gradient norm {spurious['grad_norm']:.1e}, Hessian eigenvalues "
    f"{eig.min():.1e} (scaling direction), next {np.sort(eig)[1]:.3f} ... {eig.max():.2f}"
)
print(
    f"Monte Carlo: loss z = {z_loss:+.2f}, max |z| over the {z_grad.numel()} relevant gradient"
    f" entries = {float(z_grad.abs().max()):.2f} (expected about"
    f" {np.sqrt(2 * np.log(z_grad.numel())):.1f} for pure noise)"
)
check_claim(
    "lsa.spurious-minimum",
    bool(
        stuck.any()
        and spurious["grad_norm"] < 1e-10
        and eig.min() > -1e-10
        and spur_gap > 0.3
        and (gap_iso < 1e-2).all()
        and abs(z_loss) < 4
        and float(z_grad.abs().max()) < 4.5
    ),
    expected=True,
    why=(
        "all of: gradient below 1e-10 (round-off), Hessian spectrum above -1e-10, gap above 0.3, no"
        " isotropic run stuck, Monte-Carlo loss and gradient z-scores below 4 (4.5 for the max of"
        " ~30 entries)"
    ),
)

# %% mystnb={"figure": {"caption": "Exact gradient flow from generic random initialisations (all relevant entries N(0, 0.05^2)), d = 4, N = 15. With an anisotropic Lambda a share of the runs lingers near a saddle (gap 0.60) and then settles at a spurious local minimum (gap 0.572); with Lambda = I every run reaches the global minimum.", "name": "fig-lsa-basins"}}
fig, ax = figure()
for j in range(runs):
    ax.semilogy(
        flow_aniso["t"][1:],
        np.maximum((flow_aniso["history"][1:, j] - lsat.minimum_loss(Lam, N)).numpy(), 1e-12),
        color="C1",
        alpha=0.6,
        lw=1,
        label="anisotropic Λ" if j == 0 else None,
    )
    ax.semilogy(
        flow_iso["t"][1:],
        np.maximum((flow_iso["history"][1:, j] - lsat.minimum_loss(np.eye(d), N)).numpy(), 1e-12),
        color="C0",
        alpha=0.6,
        lw=1,
        label="Λ = I" if j == 0 else None,
    )
ax.set_xscale("log")
ax.set(xlabel="time t of the gradient flow", ylabel="loss gap L - L* (floored at 1e-12)")
legend(ax)

# %% [markdown]
# **What we saw.** With an anisotropic $\Lambda$ a large share of generic starts stops at a second
# critical point with zero gradient (to round-off), a positive semi-definite Hessian whose only zero
# eigenvalue is the rescaling direction, and a loss about 0.57 above the minimum; Monte Carlo through the
# literal model sees a vanishing gradient there too. None of the isotropic runs does. The zero
# off-diagonal blocks of Assumption 3.3 are therefore not a convenience of the proof: they keep the flow
# on the set where the loss has no spurious minima. (In `quick` mode the batch is small; the share of
# stuck runs in `default` mode is printed above.)

# %% [markdown]
# ## Theorem 4.2: error on new tasks
#
# At $W^*$ and with $\rho=M$ the prediction is $x_q^\top\Gamma^{-1}\frac1M\sum_iy_ix_i$ (Eq. 4.3). For any
# distribution with $x\sim\mathcal N(0,\Lambda)$, with $a=\Lambda^{-1}\mathbb E[xy]$ and $\Sigma={\rm Cov}(xy)$,
# Theorem 4.2 states
#
# $$\begin{aligned}\mathbb E(\hat y_q-y_q)^2={}&\inf_w\mathbb E(\langle w,x_q\rangle-y_q)^2+\tfrac1M{\rm tr}(\Sigma\Gamma^{-2}\Lambda)\\
# &+\tfrac1{N^2}\big[\|a\|^2_{\Gamma^{-2}\Lambda^3}+2{\rm tr}\Lambda\|a\|^2_{\Gamma^{-2}\Lambda^2}+({\rm tr}\Lambda)^2\|a\|^2_{\Gamma^{-2}\Lambda}\big].\end{aligned}$$
#
# We compute $(a,\Sigma)$ in closed form for four tasks $y=f(\langle w,x\rangle)$ (linear, noisy linear,
# ReLU, quadratic; decompose $x$ along $\Lambda w$) and compare with Monte Carlo through `lsa.predict`.

# %%
M_43 = 40  # a test prompt longer than the training prompts (N = 15)
X_43, w_43, q_43 = lsa.sample_prompts(200, M_43, Lam, torch_generator(43))
y_43 = (X_43 @ w_43[:, :, None])[..., 0]
literal_43 = lsa.lsa_forward(W_KQ_star, W_PV_star, lsa.embed(X_43, y_43, q_43), rho=M_43)[:, -1, -1]
formula_43 = (
    q_43[:, None, :] @ torch.as_tensor(Gi) @ (X_43.transpose(1, 2) @ y_43[:, :, None]) / M_43
)[:, 0, 0]
err_43 = float((literal_43 - formula_43).abs().max())
print(
    f"max |literal f_LSA(W*) - Eq. (4.3)| = {err_43:.1e} (|y-hat| up to"
    f" {float(literal_43.abs().max()):.1f})"
)
check_claim(
    "lsa.eq43",
    err_43,
    upper=1e-10,
    why=(
        "float64 round-off of the literal (d+1) x (M+1) products; a wrong factor or normalisation"
        " shows at order 1"
    ),
)

w_task = np.array([1.029, 1.642, 1.147, -0.973])
n_task = by_mode(quick=10_000, default=100_000, full=1_000_000)
tasks = [("linear", 0.0), ("linear", 0.5), ("relu", 0.0), ("quadratic", 0.0)]
Ms = [5, 20, 100]
rows_42 = []
for k, (task, noise) in enumerate(tasks):
    a, Sigma, best = lsat.task_moments(task, w_task, Lam, noise=noise)
    for M in Ms:
        exact = lsat.prediction_error(Lam, N, M, a=a, Sigma=Sigma, best=best)
        mc = lsa.mc_prediction_error(
            W_KQ_star,
            W_PV_star,
            M=M,
            n=n_task,
            generator=torch_generator(10 * k + M),
            Lam_test=Lam,
            task=task,
            w=w_task,
            noise=noise,
            ols=False,
        )
        rows_42.append(
            (f"{task}{' σ=0.5' if noise else ''}", M, exact, mc["lsa"], mc["lsa_se"], best)
        )
print(
    f"{'task':14s} {'M':>4s} {'Eq. (4.6)':>10s} {'Monte Carlo':>20s} {'z':>6s} {'best linear':>11s}"
)
for name, M, exact, mean, se, best in rows_42:
    print(
        f"{name:14s} {M:4d} {exact:10.4f} {mean:12.4f} ± {se:6.4f} {(mean - exact) / se:+6.2f}"
        f" {best:11.4f}"
    )
z_42 = np.array([(mean - exact) / se for _, _, exact, mean, se, _ in rows_42])
check_claim(
    "lsa.thm42",
    float(np.abs(z_42).max()),
    upper=4.0,
    why=(
        f"largest of 12 z-scores, each from {n_task} prompts (heavy-tailed errors, so 4 SE): fails"
        " by chance with probability about 1e-3; a row off by more than 6.3 SE passes with"
        " probability below 1 %"
    ),
)

# %% mystnb={"figure": {"caption": "Exact error (4.6) of the trained LSA for the noiseless linear task (w ~ N(0, I) averaged), as a function of the test prompt length M for several training prompt lengths N. The error falls like 1/M until it meets the 1/N^2 floor set by training; long test prompts cannot make up for short training prompts.", "name": "fig-lsa-tradeoff"}}
fig, ax = figure()
M_grid = np.unique(np.geomspace(1, 1e5, 60).astype(int))
for NN in [5, 20, 100, 1000]:
    ax.loglog(M_grid, [lsat.shift_error(Lam, NN, M, tau2=1.0) for M in M_grid], label=f"N = {NN}")
ax.loglog(M_grid, (d + 1) * np.trace(Lam) / M_grid, "k:", label="(d+1) tr Λ / M")
ax.set(xlabel="test prompt length M", ylabel="E (ŷ - <w, x_q>)²")
legend(ax)

# %% [markdown]
# **What we saw.** Eq. (4.6) matches Monte Carlo for all four tasks and prompt lengths, including the
# nonlinear ones where the best linear error is not zero. The two sample sizes play different roles: $M$
# at rate $1/M$, $N$ at rate $1/N^2$ (the bias of $\Gamma^{-1}$ against $\Lambda^{-1}$).

# %% [markdown]
# ## Distribution shifts, next to ordinary least squares
#
# Section 4.2 discusses task shifts (other $w$, label noise), query shifts and covariate shifts. For an
# independent query $x_q\sim\mathcal N(0,\Lambda_q)$, test covariates $x_i\sim\mathcal N(0,\Lambda_t)$ and label
# noise $\sigma$, the prediction $x_q^\top\Gamma^{-1}\hat g$ with $\hat g=\frac1M\sum_iy_ix_i$ has the exact error
#
# $$\begin{aligned}\mathcal E(w)={}&(Kw)^\top\Lambda_q(Kw)\\&+\tfrac1M{\rm tr}\big(\Gamma^{-1}\Lambda_q\Gamma^{-1}[(\|w\|^2_{\Lambda_t}+\sigma^2)\Lambda_t+\Lambda_tww^\top\Lambda_t]\big),\\
# &K=\Gamma^{-1}\Lambda_t-I,\end{aligned}$$
#
# (plus $\sigma^2$ when the target is noisy too) since $\mathbb E\hat g=\Lambda_tw$ and ${\rm Cov}\,\hat g$ is the
# Gaussian fourth moment over $M$. OLS fitted on the same prompt is shown alongside (minimum-norm when
# $M<d$). Training: $N=20$; test prompts of length $M=40$; $w\sim\mathcal N(0,I)$ unless stated.

# %%
N_s, M_s = 20, 40
K_s, P_s = lsat.global_minimum(Lam, N_s)
n_shift = by_mode(quick=10_000, default=100_000, full=1_000_000)
scenarios = [
    ("baseline", {}, {}),
    ("task: label noise σ = 1", {"noise": 1.0}, {"noise": 1.0}),
    ("task: w ~ N(0, 25 I)", {"tau2": 25.0}, {"tau2": 25.0}),
    ("task: fixed w = 3·1", {"w": 3 * np.ones(d)}, {"w": 3 * np.ones(d)}),
    ("query ~ N(0, 4 I)", {"Lam_query": 4 * np.eye(d)}, {"Lam_query": 4 * np.eye(d)}),
    ("query ~ N(0, 9 Λ)", {"Lam_query": 9 * Lam}, {"Lam_query": 9 * Lam}),
    (
        "covariates × 0.5",
        {"Lam_test": 0.25 * Lam, "Lam_query": 0.25 * Lam},
        {"Lam_test": 0.25 * Lam, "Lam_query": 0.25 * Lam},
    ),
    (
        "covariates × 2",
        {"Lam_test": 4 * Lam, "Lam_query": 4 * Lam},
        {"Lam_test": 4 * Lam, "Lam_query": 4 * Lam},
    ),
    (
        "covariates: Λ_t = I",
        {"Lam_test": np.eye(d), "Lam_query": np.eye(d)},
        {"Lam_test": np.eye(d), "Lam_query": np.eye(d)},
    ),
]
shift_rows = []
for k, (name, exact_kw, mc_kw) in enumerate(scenarios):
    exact_kw = {"tau2": 1.0, **exact_kw} if "w" not in exact_kw else exact_kw
    exact = lsat.shift_error(Lam, N_s, M_s, **exact_kw) + exact_kw.get("noise", 0.0) ** 2
    mc_kw = {"Lam_test": Lam, **mc_kw}
    mc = lsa.mc_prediction_error(
        K_s, P_s, M=M_s, n=n_shift, generator=torch_generator(100 + k), **mc_kw
    )
    shift_rows.append((name, exact, mc))
mc_dep = lsa.mc_prediction_error(
    K_s, P_s, M=M_s, n=n_shift, generator=torch_generator(99), Lam_test=Lam, query="first"
)
print(
    f"{'scenario':26s} {'exact LSA':>10s} {'MC LSA':>18s} {'z':>6s} {'MC OLS':>8s} {'E y_q²':>7s}"
)
for name, exact, mc in shift_rows:
    print(
        f"{name:26s} {exact:10.4f} {mc['lsa']:9.4f} ± {mc['lsa_se']:6.4f}"
        f" {(mc['lsa'] - exact) / mc['lsa_se']:+6.2f} {mc['ols']:8.4f} {mc['y2']:7.2f}"
    )
print(
    f"{'query = x_1 (dependent)':26s} {'-':>10s} {mc_dep['lsa']:9.4f} ± {mc_dep['lsa_se']:6.4f}"
    f" {'':6s} {mc_dep['ols']:8.4f} {mc_dep['y2']:7.2f}"
)
z_shift = np.array([(mc["lsa"] - exact) / mc["lsa_se"] for _, exact, mc in shift_rows])
assert np.abs(z_shift).max() < 4.5, "every row of the shift table must agree with the exact formula"

# %% [markdown]
# The table validates the exact formula (every $|z|<4.5$). The paper's claims are about long prompts:
# under task shifts and independent query shifts the error tends to that of the best linear predictor
# ($\sigma^2$ for label noise, 0 otherwise). We evaluate the formula's excess error, relative to
# $\mathbb E\,y_q^2$ (noise excluded), at $M=N=10^6$; under the covariate shifts of the table the same measure
# tends to $(c^2-1)^2\ge0.56$ instead (checked below).

# %%
big, tr_L = 10**6, np.trace(Lam)
task_limits = {
    "label noise σ = 1": lsat.shift_error(Lam, big, big, tau2=1.0, noise=1.0) / tr_L,
    "w ~ N(0, 25 I)": lsat.shift_error(Lam, big, big, tau2=25.0) / (25 * tr_L),
    "fixed w = 3·1": (
        lsat.shift_error(Lam, big, big, w=3 * np.ones(d)) / (9 * np.ones(d) @ Lam @ np.ones(d))
    ),
}
query_limits = {
    "x_q ~ N(0, 4 I)": lsat.shift_error(Lam, big, big, tau2=1.0, Lam_query=4 * np.eye(d)) / (4 * d),
    "x_q ~ N(0, 9 Λ)": lsat.shift_error(Lam, big, big, tau2=1.0, Lam_query=9 * Lam) / (9 * tr_L),
}
for name, value in {**task_limits, **query_limits}.items():
    print(f"{name:18s}: excess error / E y_q² at M = N = 1e6 is {value:.1e}")
check_claim(
    "lsa.task-shift",
    max(task_limits.values()),
    upper=1e-4,
    why=(
        "exact formula (validated by Monte Carlo above) at M = N = 1e6: what remains is O(1/M +"
        " 1/N), about 1e-5; an untolerated shift stays of order 1 (covariate scaling gives 0.56 or"
        " more)"
    ),
)
check_claim(
    "lsa.query-shift",
    max(query_limits.values()),
    upper=1e-4,
    why=(
        "exact formula (validated by Monte Carlo above) at M = N = 1e6: what remains is O(1/M +"
        " 1/N), about 1e-5; an untolerated shift stays of order 1 (covariate scaling gives 0.56 or"
        " more)"
    ),
)

# %% [markdown]
# The task rows confirm the paper: with label noise or a different task distribution the LSA error is that
# of its fixed predictor (4.3), and the independent-query rows show that the query law does not matter
# beyond its second moment. Note, however, that the LSA does not *adapt*: its error scales with
# $\|w\|^2$ and never reaches OLS, which is exact on noiseless prompts.
#
# **Queries orthogonal to the prompt.** The paper says that a query orthogonal to the span of the $x_i$
# gets prediction zero (line 258). This needs $M<d$ (otherwise the span is all of $\mathbb R^d$), and the
# prediction $x_q^\top\Gamma^{-1}\hat g$ vanishes for every such query only if $\Gamma\propto I$, i.e. for an
# isotropic $\Lambda$: in general the condition is $\Gamma^{-1}x_q\perp{\rm span}\{x_i\}$ ({ref}`lsa.E8 <lsa-e8>`).

# %%
d_o, M_o, N_o = 8, 4, 20
orth = {}
for label, Lam_o in [
    ("isotropic", np.eye(d_o)),
    (
        "anisotropic",
        lsa.make_lambda(np.geomspace(0.25, 4.0, d_o), generator=np.random.default_rng(3)),
    ),
]:
    K_o, P_o = lsat.global_minimum(Lam_o, N_o)
    orth[label] = lsa.mc_prediction_error(
        K_o,
        P_o,
        M=M_o,
        n=by_mode(quick=5_000, default=50_000, full=200_000),
        generator=torch_generator(7),
        Lam_test=Lam_o,
        query="orthogonal",
    )
    r = orth[label]
    print(
        f"{label:11s}: max |y-hat| = {r['max_abs_lsa']:.1e}; MSE LSA {r['lsa']:.3f}, min-norm OLS"
        f" {r['ols']:.3f}, E y_q² {r['y2']:.3f}"
    )
check_claim(
    "lsa.query-orthogonal",
    orth["anisotropic"]["max_abs_lsa"],
    lower=1.0,
    why=(
        "the paper's statement predicts 0; anything above 1 (predictions are O(1)) refutes it,"
        " while the isotropic case stays below 1e-10"
    ),
)
assert orth["isotropic"]["max_abs_lsa"] < 1e-10

# %% [markdown]
# **Covariate scaling.** With $x_i,x_q$ scaled by $c$, $\hat g\approx c^2\Lambda w$ and so
# $\hat y\approx c^2\langle w,x_q\rangle$ for large $M,N$: the normalised error tends to $(c^2-1)^2$ while OLS
# is unaffected. We evaluate the exact formula at $M=N=10^6$ and show the slope $c^2$ on simulated prompts.

# %%
limits = {
    c: (
        lsat.shift_error(Lam, 10**6, 10**6, tau2=1.0, Lam_test=c**2 * Lam, Lam_query=c**2 * Lam)
        / (c**2 * np.trace(Lam))
    )
    for c in (0.5, 2.0, 3.0)
}
for c, value in limits.items():
    print(f"c = {c}: error / E y² at M = N = 1e6 is {value:.4f}; (c² - 1)² = {(c**2 - 1)**2:.4f}")
shift_mc = {name: mc for name, _, mc in shift_rows}
ols_cov = max(shift_mc["covariates × 0.5"]["ols"], shift_mc["covariates × 2"]["ols"])
check_claim(
    "lsa.covariate-scaling",
    max(abs(v - (c**2 - 1) ** 2) / (c**2 - 1) ** 2 for c, v in limits.items()),
    upper=1e-4,
    why=(
        "the exact error at finite M = N = 1e6 differs from the limit by O(1/M + 1/N), about 1e-5"
        " relative"
    ),
)
assert ols_cov < 1e-12, "OLS is exact on noiseless scaled prompts"

# %% mystnb={"figure": {"caption": "Covariate shift: predictions of the trained LSA (N = 20) against the true value <w, x_q> on test prompts (M = 200) whose covariates are scaled by c. The points follow slope c^2 (dashed), not 1: the layer has baked the training covariance into Gamma^-1. OLS would lie on the diagonal.", "name": "fig-lsa-covariate"}}
fig, ax = figure()
for k, c in enumerate((0.5, 1.0, 2.0)):
    Xc, wc, qc = lsa.sample_prompts(400, 200, c**2 * Lam, torch_generator(200 + k))
    yc = (Xc @ wc[:, :, None])[..., 0]
    truth = (wc * qc).sum(1)
    ax.scatter(
        truth, lsa.predict(K_s, P_s, Xc, yc, qc), s=4, alpha=0.5, color=f"C{k}", label=f"c = {c:g}"
    )
    line = np.linspace(-8, 8, 2)
    ax.plot(
        line,
        c**2 * line * np.trace(np.linalg.inv(lsat.gamma_matrix(Lam, N_s)) @ Lam) / d,
        "--",
        color=f"C{k}",
    )
ax.set(xlim=(-8, 8), ylim=(-20, 20), xlabel="<w, x_q>", ylabel="LSA prediction ŷ")
legend(ax)

# %% [markdown]
# (The dashed lines use the finite-$N$ slope $c^2\,{\rm tr}(\Gamma^{-1}\Lambda)/d$, slightly below $c^2$.)
#
# ## Theorem 4.5: random covariances and the factor 1/3
#
# If every training prompt draws its own $\Lambda_\tau={\rm diag}(\lambda_{\tau,1},\ldots,\lambda_{\tau,d})$, the flow
# converges (Theorem 4.5) to (4.11): $W^{KQ}_{11}\propto D:=[\mathbb E\Lambda_\tau^2][\mathbb E\Gamma_\tau\Lambda_\tau^2]^{-1}$
# with $u_{-1}=\|D\|_F^{1/2}$. For $\lambda_i\sim{\rm Exp}(1)$ the moments (C.3) are exact:
# $\gamma_i=6+\frac{2d+10}N$, $\xi_i=2$, $\zeta_{ij}=2+\frac{d+4}N$, so $D=\frac{2}{6+(2d+10)/N}I$. The paper then
# says $\mathbb E\hat y\to\frac13\langle w,x_q\rangle$ as $M,N\to\infty$ (line 316). Three remarks, each checked below:
# (C.15) prints the limit of $u_{-1}$ as $[\sum_i\xi_i/\gamma_i]^{1/4}$ instead of $[\sum_i\xi_i^2/\gamma_i^2]^{1/4}$
# (as in (C.17) and (4.11); {ref}`lsa.E13 <lsa-e13>`); since $\mathbb E[\hat\Lambda_M\mid\Lambda_{\rm new}]=\Lambda_{\rm new}$, only
# $N\to\infty$ is needed; and the $\frac13$ is the mean prediction for a query held fixed, as the paper's display
# holds it. Under the sampling the paragraph starts from, $x_q\sim\mathcal N(0,\Lambda_{\rm new})$, the regression
# slope of $\hat y$ on $y=\langle w,x_q\rangle$ is $\mathbb E[\lambda^2]/\mathbb E[\lambda]\cdot D_{ii}=\frac23$ ({ref}`lsa.N2 <lsa-n2>`).
#
# The theorem asks $\sigma^2<2\|\mathbb E\Lambda_\tau\Theta\|_F^2/(\sqrt d\,\mathbb E\|\Gamma_\tau\|_{op}\|\Lambda_\tau\|_F^2)$ (4.10). The
# expectation in the denominator has no simple closed form for exponential $\lambda_i$; we estimate it from
# $10^6$ draws of $\Lambda_\tau$ (relative standard error about $2\cdot10^{-3}$).

# %%
d7, N7, M7 = 3, 20, 20
gamma7, xi7, zeta7 = lsat.exp1_moments(d7, N7)
lam_draws = np.random.default_rng(3).exponential(size=(10**6, d7))
G_op_draws = (N7 + 1) / N7 * lam_draws.max(1) + lam_draws.sum(
    1
) / N7  # ||Gamma_tau||_op for diagonal Lambda_tau
K_410 = float(np.mean(G_op_draws * (lam_draws**2).sum(1)))  # E ||Gamma_tau||_op ||Lambda_tau||_F^2
K7, P7 = lsa.assumption33_init(d7, 0.16, generator=np.random.default_rng(2))
TT7 = K7[:d7, :d7] / 0.16  # Theta Theta^T
ELT7 = float(
    np.trace(TT7)
)  # ||E Lambda_tau Theta||_F^2 = tr((E Lambda_tau)^2 Theta Theta^T), with E Lambda_tau = I
sigma_410 = np.sqrt(2 * ELT7 / (np.sqrt(d7) * K_410))
print(f"sigma = 0.16; the bound (4.10) is {sigma_410:.4f}")
assert (
    0.16 < 0.95 * sigma_410
), "the initial scale must satisfy (4.10) with room for the estimate's error"
flow7 = lsa.random_cov_flow(K7[:d7, :d7], P7[d7, d7], gamma7, xi7, zeta7, T=3000)
D7 = xi7 / gamma7
U_411, c_411 = np.diag(D7) / np.linalg.norm(D7) ** 0.5, np.linalg.norm(D7) ** 0.5
c_printed = np.sum(xi7 / gamma7) ** 0.25
err_411 = max(
    np.abs(flow7["U"] - U_411).max() / np.abs(U_411).max(), abs(flow7["c"] - c_411) / c_411
)
print(
    f"flow of (C.4): relative distance to (4.11) {err_411:.1e}, balance {flow7['balance']:.1e}; "
    f"u_-1 = {flow7['c']:.6f}, (4.11) gives {c_411:.6f}, (C.15) as printed gives {c_printed:.6f}"
)
check_claim(
    "lsa.thm45-limit",
    err_411,
    upper=1e-8,
    why="LSODA at rtol 1e-11 to T = 3000, far past the slowest time scale",
)
check_claim(
    "lsa.c15",
    abs(c_printed - flow7["c"]),
    lower=0.1,
    why=(
        "the printed limit must be refuted by a margin far above the solver error (1e-8); it is off"
        " by about 0.25"
    ),
)

# %% [markdown]
# ### Appendix C, lemma by lemma
#
# **Lemmas C.1-C.3.** Conditioning on $\Lambda_\tau$ and averaging the dynamics of Lemma 5.2 gives (C.1); for
# diagonal $\Lambda_\tau$ it decouples entry by entry into (C.4) with the moments (C.3), and (C.4) is gradient flow
# on $\ell_{\rm rdm}$ of (C.5). We write the right-hand side of (C.4) out as printed and compare it with minus the
# autograd gradient of (C.5) at random points. That (C.5) is the population loss (4.9) itself, up to the
# constant $\frac12\mathbb E\,y_q^2=\frac12\mathbb E\,{\rm tr}\Lambda_\tau=d/2$, we check by Monte Carlo through the literal model, at
# a point with non-zero off-diagonal $U_{11}$ so that all three kinds of moment enter.


# %%
def c4_rhs(U, c, gamma, xi, zeta):
    """The right-hand side of (C.4), entry by entry as printed."""
    dd = len(xi)
    dU = np.array(
        [
            [
                -gamma[i] * c**2 * U[i, i] + xi[i] * c if i == j else -zeta[i, j] * c**2 * U[i, j]
                for j in range(dd)
            ]
            for i in range(dd)
        ]
    )
    dc = (
        -sum(gamma[i] * c * U[i, i] ** 2 for i in range(dd))
        - sum(zeta[i, j] * c * U[i, j] ** 2 for i in range(dd) for j in range(dd) if i != j)
        + sum(xi[i] * U[i, i] for i in range(dd))
    )
    return dU, dc


def c5_loss(U, c, gamma, xi, zeta):
    """l_rdm of (C.5), second line, in torch."""
    off = ~torch.eye(len(xi), dtype=torch.bool)
    return (
        0.5 * c**2 * (torch.as_tensor(gamma) * torch.diagonal(U) ** 2).sum()
        + 0.5 * c**2 * (torch.as_tensor(zeta)[off] * U[off] ** 2).sum()
        - c * (torch.as_tensor(xi) * torch.diagonal(U)).sum()
    )


gen_C = np.random.default_rng(21)
err_C3 = []
for _ in range(10):
    U_r = torch.tensor(gen_C.standard_normal((d7, d7)), requires_grad=True)
    c_r = torch.tensor(gen_C.standard_normal(), dtype=torch.float64, requires_grad=True)
    g_U, g_c = torch.autograd.grad(c5_loss(U_r, c_r, gamma7, xi7, zeta7), (U_r, c_r))
    rhs_U, rhs_c = c4_rhs(U_r.detach().numpy(), c_r.item(), gamma7, xi7, zeta7)
    err_C3.append(max(np.abs(rhs_U + g_U.numpy()).max(), abs(rhs_c + g_c.item())))
print(
    f"(C.4) against minus the gradient of (C.5): largest difference {max(err_C3):.1e} over 10"
    " random points"
)
check_claim(
    "lsa.lemmaC1-C3",
    max(err_C3),
    upper=1e-12,
    why="float64 round-off of terms of order 10; a wrong factor in (C.4) would show at order 1",
)

# %%
U_c3 = np.array([[0.5, 0.2, -0.1], [0.15, 0.7, 0.25], [-0.2, 0.1, 0.4]])
c_c3 = 0.8
K_c3, P_c3 = np.zeros((d7 + 1, d7 + 1)), np.zeros((d7 + 1, d7 + 1))
K_c3[:d7, :d7], P_c3[d7, d7] = U_c3, c_c3
n_c3, chunk_c3 = by_mode(quick=100_000, default=400_000, full=4_000_000), 100_000
gen_c3, sums_c3 = torch_generator(72), np.zeros(2)
for _ in range(n_c3 // chunk_c3):  # chunks bound the memory of the (n, N, d) prompt tensor
    X_c3, w_c3, q_c3, _ = lsa.sample_random_cov_prompts(chunk_c3, N7, d7, gen_c3)
    per_c3 = (
        0.5
        * (
            lsa.predict(K_c3, P_c3, X_c3, (X_c3 @ w_c3[:, :, None])[..., 0], q_c3)
            - (w_c3 * q_c3).sum(1)
        )
        ** 2
    )
    sums_c3 += [float(per_c3.sum()), float((per_c3**2).sum())]
mean_c3 = sums_c3[0] / n_c3
exact_c3 = lsat.random_cov_loss(U_c3, c_c3, gamma7, xi7, zeta7) + d7 / 2
z_c3 = (mean_c3 - exact_c3) / np.sqrt((sums_c3[1] / n_c3 - mean_c3**2) / n_c3)
print(
    f"population loss (4.9): (C.5) + d/2 = {exact_c3:.4f}, Monte Carlo {mean_c3:.4f} (z ="
    f" {z_c3:+.2f})"
)
check_claim(
    "lsa.lemmaC3-loss",
    z_c3,
    lower=-4,
    upper=4,
    why=(
        f"z-score of a {n_c3}-prompt Monte-Carlo mean (heavy-tailed: products of exponential"
        " variances); |z| > 4 by chance has probability 6e-5; a formula off by more than 6.3 SE"
        " passes with probability below 1 %"
    ),
)

# %% [markdown]
# **Lemmas C.4 and C.5.** Completing the square gives the minimum (C.6), the gap (C.7) and the minimisers
# (C.8); the flow conserves the balance (C.9). We test (C.5) = (C.6) + (C.7) at random points, (C.6) and (C.8)
# at the end of the flow above, and (C.9) along its whole path.

# %%
min_C6 = -0.5 * np.sum(xi7**2 / gamma7)
err_C4 = []
for _ in range(20):
    U_r, c_r = gen_C.standard_normal((d7, d7)), gen_C.standard_normal()
    off = ~np.eye(d7, dtype=bool)
    gap_C7 = 0.5 * np.sum(gamma7 * (np.diag(U_r) * c_r - xi7 / gamma7) ** 2) + 0.5 * np.sum(
        zeta7[off] * c_r**2 * U_r[off] ** 2
    )
    err_C4.append(abs(lsat.random_cov_loss(U_r, c_r, gamma7, xi7, zeta7) - (min_C6 + gap_C7)))
err_C8 = np.abs(flow7["c"] * flow7["U"] - np.diag(xi7 / gamma7)).max()
err_C6 = abs(flow7["loss"][-1] - min_C6)
print(
    f"(C.5) = (C.6) + (C.7): largest error {max(err_C4):.1e}; end of the flow: l_rdm - (C.6) ="
    f" {err_C6:.1e}, u_-1 U_11 - (C.8) = {err_C8:.1e}; largest |u_-1^2 - ||U_11||^2| along the path"
    f" {flow7['balance']:.1e}"
)
check_claim(
    "lsa.lemmaC4",
    max(max(err_C4), err_C6, err_C8),
    upper=1e-9,
    why="float64 round-off for the identity; the flow (rtol 1e-11) has converged far past 1e-9",
)
check_claim(
    "lsa.lemmaC5",
    flow7["balance"],
    upper=1e-8,
    why=(
        "conserved exactly by the flow; the drift measures the solver's accumulated error (rtol"
        " 1e-11)"
    ),
)

# %% [markdown]
# **Lemmas C.6 and C.7: $u_{-1}$ stays away from zero.** Under (C.10) (= (4.10)) the loss starts negative and
# never increases, so $u_{-1}$ cannot reach 0. Lemma C.7 then bounds it below. Its statement (C.12) has
# $\|\mathbb E\Lambda_\tau\Theta\|_F^2$ in the denominator, while its proof ends (line 1191) with $\|\mathbb E\Lambda_\tau^2\|_{op}$,
# the factor (C.13) uses ({ref}`lsa.N3 <lsa-n3>`). We run the flow from three scales inside (C.10) and compare
# $\min_tu_{-1}(t)$ with both bounds. The proof of Lemma C.6 also writes
# $\mathbb E\,{\rm tr}[\sigma^2\Lambda_\tau^2\Theta\Theta^\top]=\sigma^2\|\mathbb E\Lambda_\tau\Theta\|_F^2$ (line 1161). The left side is
# $\sigma^2{\rm tr}(\mathbb E[\Lambda_\tau^2]\Theta\Theta^\top)$, which by Jensen is at least the right side and for exponential
# $\lambda_i$ twice as large ({ref}`lsa.E14 <lsa-e14>`); the inequality is all the proof needs, so the lemmas stand.

# %%
EL2_op = float(xi7.max())  # ||E Lambda_tau^2||_op
eta_C8 = float(zeta7.min())  # eta of Lemma C.8: the smallest of the gamma_i and zeta_ij
rows_C67 = []
for frac in (0.1, 0.5, 0.9):
    sig = frac * sigma_410
    run_C = lsa.random_cov_flow(sig * TT7, sig, gamma7, xi7, zeta7, T=3000)
    bracket = 2 * ELT7 - np.sqrt(d7) * sig**2 * K_410
    printed = np.sqrt(sig**2 * bracket / (2 * np.sqrt(d7) * ELT7))  # (C.12)
    proven = np.sqrt(sig**2 * bracket / (2 * np.sqrt(d7) * EL2_op))  # line 1191
    nu = eta_C8 * sig**2 * bracket / (2 * np.sqrt(d7) * EL2_op)  # (C.13)
    gap_C = run_C["loss"] - min_C6
    resolved = gap_C > 1e-12
    rows_C67.append(
        {
            "frac": frac,
            "min_c": run_C["c_path"].min(),
            "printed": printed,
            "proven": proven,
            "pl": (run_C["grad_sq"][resolved] / gap_C[resolved]).min() / nu,
            "final_gap": gap_C[-1],
        }
    )
    print(
        "sigma = {frac} x (C.10): min u_-1 = {min_c:.4f}, (C.12) printed {printed:.4f}, line 1191"
        " {proven:.4f}; min ||grad||^2 / gap / nu = {pl:.1f}, final gap {final_gap:.1e}".format(
            **rows_C67[-1]
        )
    )
check_claim(
    "lsa.lemmaC6-C7",
    min(r["min_c"] / max(r["printed"], r["proven"]) for r in rows_C67),
    lower=1.0,
    why=(
        "min over the path of u_-1 divided by the larger of the two bounds (both positive); ODE"
        " error 1e-11"
    ),
)
check_claim(
    "lsa.lemmaC8",
    min(r["pl"] for r in rows_C67),
    lower=1.0,
    why=(
        "the inequality (C.14) itself: the ratio must be at least 1 at every output time where the"
        " gap is resolved (> 1e-12); every run also ends at the minimum (final gaps printed)"
    ),
)
assert max(abs(r["final_gap"]) for r in rows_C67) < 1e-10

# %%
trace_left = float(
    np.mean(np.einsum("si,ii->s", lam_draws**2, TT7))
)  # E tr[Lambda_tau^2 Theta Theta^T]
trace_left_se = float(np.std(np.einsum("si,ii->s", lam_draws**2, TT7))) / np.sqrt(len(lam_draws))
ratio_C6 = (
    trace_left / ELT7
)  # ||E Lambda_tau Theta||_F^2 = tr(Theta Theta^T) exactly, since E Lambda_tau = I
print(
    f"E tr[Lam^2 Theta Theta^T] / ||E Lam Theta||_F^2 = {ratio_C6:.4f} ± {trace_left_se / ELT7:.4f}"
    " (printed: 1; with E[Lambda^2] = 2 I: 2)"
)
check_claim(
    "lsa.lemmaC6-proof",
    ratio_C6,
    expected=2.0,
    atol=float(4 * trace_left_se / ELT7),
    why=(
        "4 standard errors of a 1e6-draw Monte-Carlo mean (fails by chance with probability 6e-5);"
        " the printed identity (ratio 1) is hundreds of standard errors away"
    ),
)


# %%
def weights(D_diag):
    """(4.11) as full matrices for a diagonal D."""
    K = np.zeros((len(D_diag) + 1,) * 2)
    P = np.zeros_like(K)
    K[:-1, :-1] = np.diag(D_diag) / np.linalg.norm(D_diag) ** 0.5
    P[-1, -1] = np.linalg.norm(D_diag) ** 0.5
    return K, P


n7 = by_mode(quick=10_000, default=100_000, full=1_000_000)
w_fix, xq_fix = np.array([1.0, 1.0, 1.0]), np.array([1.0, 0.5, 1.0])
third_rows = []
for label, D_diag in [(f"N = {N7}", D7), ("N = infinity", np.full(d7, 1 / 3))]:
    K_t, P_t = weights(D_diag)
    X7, w7, q7, _ = lsa.sample_random_cov_prompts(
        n7, M7, d7, torch_generator(70), w=w_fix, x_query=xq_fix
    )
    ratio = (
        lsa.predict(K_t, P_t, X7, (X7 @ w7[:, :, None])[..., 0], q7) / float(w_fix @ xq_fix)
    ).numpy()
    X7, w7, q7, _ = lsa.sample_random_cov_prompts(n7, M7, d7, torch_generator(71))
    y7 = (w7 * q7).sum(1)
    joint = (
        lsa.predict(K_t, P_t, X7, (X7 @ w7[:, :, None])[..., 0], q7) * y7
    ).numpy() / d7  # E y^2 = E tr(Lambda) = d
    third_rows.append(
        (
            label,
            D_diag[0],
            ratio.mean(),
            ratio.std() / np.sqrt(n7),
            joint.mean(),
            joint.std() / np.sqrt(n7),
        )
    )
print(
    f"{'training':14s} {'D_ii':>7s} {'E y-hat/<w,x_q> (x_q fixed)':>30s}"
    f" {'slope under joint sampling':>28s} {'2 D_ii':>7s}"
)
for label, Dii, r_mean, r_se, j_mean, j_se in third_rows:
    print(
        f"{label:14s} {Dii:7.4f} {r_mean:21.4f} ± {r_se:.4f} {j_mean:19.4f} ± {j_se:.4f}"
        f" {2 * Dii:7.4f}"
    )
z_third = [(r_mean - Dii) / r_se for _, Dii, r_mean, r_se, _, _ in third_rows]
z_joint = [(j_mean - 2 * Dii) / j_se for _, Dii, _, _, j_mean, j_se in third_rows]
check_claim(
    "lsa.one-third",
    float(np.abs(z_third).max()),
    upper=4.0,
    why=(
        f"two z-scores of {n7}-prompt means against D_ii (0.294 at N = 20, 1/3 at N = infinity), M"
        " = 20: fail by chance with probability 1e-4; a mean off by more than 6.3 SE passes with"
        " probability below 1 %"
    ),
)
check_claim(
    "lsa.one-third-joint",
    float(np.abs(z_joint).max()),
    upper=4.0,
    why=(
        f"two z-scores of {n7}-prompt means against 2 D_ii (fail by chance with probability 1e-4);"
        " the fixed-query value 1/3 is asserted to be more than 7 standard errors away"
    ),
)
assert all(abs(j_mean - 1 / 3) > 7 * j_se for *_, j_mean, j_se in third_rows)

# %% [markdown]
# **What we saw.** The flow lands on (4.11); the printed (C.15) would give $u_{-1}\approx0.97$ instead of
# $0.71$. With the query independent of the prompt's covariance, $\mathbb E\hat y/\langle w,x_q\rangle$ equals
# $D_{ii}$ already at $M=20$: $0.294$ for $N=20$ and $\frac13$ for $N\to\infty$. With the query drawn from
# the prompt's own covariance, the slope doubles to $\frac23$, because large-variance prompts have both
# large $\hat\Lambda$ and large queries.
#
# ## Corollary 4.3: an audit
#
# Averaging the noiseless error over $w\sim\mathcal N(0,I)$, the paper bounds it by
# $\frac{(d+1){\rm tr}\Lambda}{M}+\frac1{N^2}[{\rm tr}\Lambda+2d\,{\rm tr}\Lambda+{\rm tr}(\Lambda^{-1}){\rm tr}(\Lambda)^2]$ and then
# by $\ldots+\frac{(1+2d){\rm tr}\Lambda+d^2\kappa}{N^2}$ (line 218). The last step uses
# ${\rm tr}(\Lambda^{-1}){\rm tr}(\Lambda)^2\le d^2\kappa$, which is false ($\Lambda=I_d$ gives $d^3$); the valid bound is
# $d^2\kappa\,{\rm tr}\Lambda$. Corollary 4.3's sample sizes inherit the error ({ref}`lsa.E5 <lsa-e5>`). We evaluate the
# *exact* error at the printed thresholds and at the corrected $N\ge\sqrt{2{\rm tr}\Lambda(1+2d+d^2\kappa)/\varepsilon}$.

# %%
cases = [
    ("d=1, Λ=1", np.eye(1), 0.01),
    ("d=2, Λ=I", np.eye(2), 0.01),
    ("d=10, Λ=I", np.eye(10), 0.1),
    ("d=10, Λ=I", np.eye(10), 0.01),
    ("d=10, κ=10", np.diag(np.geomspace(1, 10, 10)), 0.01),
    ("d=20, Λ=I", np.eye(20), 0.01),
]
audit = []
for name, Lam_c, eps in cases:
    th = lsat.corollary43_thresholds(Lam_c, eps)
    at_paper = lsat.shift_error(Lam_c, th["N_paper"], th["M"], tau2=1.0)
    at_fixed = lsat.shift_error(Lam_c, th["N_corrected"], th["M"], tau2=1.0)
    audit.append((name, eps, th, at_paper, at_fixed))
    print(
        f"{name:11s} eps={eps:<5g} M={th['M']:6d} N_paper={th['N_paper']:4d}: error {at_paper:.4f}"
        f" ({'VIOLATED' if at_paper > eps else 'ok'}); N_corrected={th['N_corrected']:5d}: error"
        f" {at_fixed:.4f}"
    )
worst_printed = max(at_paper / eps for _, eps, _, at_paper, _ in audit)
worst_fixed = max(at_fixed / eps for _, eps, _, _, at_fixed in audit)

# %% [markdown]
# One violation confirmed by Monte Carlo through the literal model: $d=10$, $\Lambda=I$, $\varepsilon=0.01$.

# %%
violated = ("d=10, Λ=I", 0.01)  # the case confirmed by Monte Carlo
name_v, Lam_v, eps_v = next(case for case in cases if (case[0], case[2]) == violated)
th_v = lsat.corollary43_thresholds(Lam_v, eps_v)
K_v, P_v = lsat.global_minimum(Lam_v, th_v["N_paper"])
mc_v = lsa.mc_prediction_error(
    K_v,
    P_v,
    M=th_v["M"],
    n=by_mode(quick=200, default=1_000, full=20_000),
    generator=torch_generator(11),
    Lam_test=Lam_v,
    ols=False,
    chunk=500,
)
z_v = (mc_v["lsa"] - eps_v) / mc_v["lsa_se"]
at_paper_v = next(at_paper for name, eps, _, at_paper, _ in audit if (name, eps) == violated)
print(
    f"exact {at_paper_v:.5f}, Monte Carlo {mc_v['lsa']:.5f} ± {mc_v['lsa_se']:.5f}: {z_v:.1f}"
    " standard errors above eps"
)
assert z_v > 4, "Monte Carlo through the literal model must confirm the violation"
assert worst_fixed <= 1.0, "the corrected threshold must meet eps in every case"
check_claim(
    "lsa.corollary43",
    worst_printed,
    lower=1.0,
    why=(
        "largest exact error (no sampling) at the printed M and N, divided by eps: the printed"
        " corollary promises at most 1 in every case; Monte Carlo confirms one case by more than 4"
        " standard errors"
    ),
)

# %% [markdown]
# **What we saw.** At the printed thresholds the exact error exceeds $\varepsilon$ in most cases (about 2.5
# times at $d=10$, $\varepsilon=0.01$), and the Monte-Carlo estimate sits many standard errors above
# $\varepsilon$. With the corrected $N$ every case meets its target. The $M$ part of the corollary is fine.
#
# **Notes that need no computation** (also on the errata page): line 84 cites the objective (4.8) where the
# risk (3.1) of Definition 3.1 is meant ({ref}`lsa.N1 <lsa-n1>`; (4.8) reduces to (3.1) for a fixed covariate
# distribution), and line 1177 cites Lemma D.1 for two facts that are Lemma D.4 ({ref}`lsa.N4 <lsa-n4>`).
#
# ## Appendix D: the technical lemmas
#
# The proofs rest on four tools. We check each on random inputs: the matrix-calculus rules of Lemma D.1
# against autograd (non-square, non-symmetric matrices, so that a missing transpose would show), the Gaussian
# fourth moments of Lemma D.2 and Isserlis' theorem by Gauss-Hermite quadrature (three nodes per coordinate
# integrate polynomials of degree up to five exactly, so the result is exact to round-off; two nodes, exact
# only to degree three, serve as a control that must fail), and the inequalities of Lemmas D.3 and D.4 on
# thousands of random pairs, including pairs where they are tight.

# %%
gen_D = np.random.default_rng(40)


def leaf(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def vec(a):
    return a.reshape(-1, order="F")  # column-major, as in the paper's notation section


res_D1 = {}
x_d, B_d = leaf(gen_D.standard_normal(4)), gen_D.standard_normal((4, 4))
(g,) = torch.autograd.grad(x_d @ torch.as_tensor(B_d) @ x_d, x_d)
res_D1["d(x^T B x)/dx"] = np.abs(g.numpy() - (B_d + B_d.T) @ x_d.detach().numpy()).max()
A_d, X_d, C_d = (
    gen_D.standard_normal((3, 4)),
    gen_D.standard_normal((4, 5)),
    gen_D.standard_normal((5, 2)),
)
res_D1["Vec(AXB)"] = np.abs(vec(A_d @ X_d @ C_d) - np.kron(C_d.T, A_d) @ vec(X_d)).max()
A_d, C_d = gen_D.standard_normal((4, 5)), gen_D.standard_normal((4, 5))
res_D1["tr(A^T B)"] = abs(np.trace(A_d.T @ C_d) - vec(A_d) @ vec(C_d))
X_t, B_d = leaf(gen_D.standard_normal((3, 4))), gen_D.standard_normal((4, 4))
(g,) = torch.autograd.grad(torch.trace(X_t @ torch.as_tensor(B_d) @ X_t.T), X_t)
X_n = X_t.detach().numpy()
res_D1["d tr(X B X^T)/dX"] = np.abs(g.numpy() - (X_n @ B_d.T + X_n @ B_d)).max()
A_d, X_t = gen_D.standard_normal((3, 4)), leaf(gen_D.standard_normal((3, 4)))
(g,) = torch.autograd.grad(torch.trace(torch.as_tensor(A_d) @ X_t.T), X_t)
res_D1["d tr(A X^T)/dX"] = np.abs(g.numpy() - A_d).max()
A_d, B_d, C_d, X_t = (
    gen_D.standard_normal((2, 3)),
    gen_D.standard_normal((4, 4)),
    gen_D.standard_normal((3, 2)),
    leaf(gen_D.standard_normal((3, 4))),
)
(g,) = torch.autograd.grad(
    torch.trace(torch.as_tensor(A_d) @ X_t @ torch.as_tensor(B_d) @ X_t.T @ torch.as_tensor(C_d)),
    X_t,
)
X_n = X_t.detach().numpy()
res_D1["d tr(A X B X^T C)/dX"] = np.abs(
    g.numpy() - (A_d.T @ C_d.T @ X_n @ B_d.T + C_d @ A_d @ X_n @ B_d)
).max()
for rule, err in res_D1.items():
    print(f"Lemma D.1, {rule:22s}: largest error {err:.1e}")
check_claim(
    "lsa.lemmaD1",
    max(res_D1.values()),
    upper=1e-12,
    why=(
        "float64 round-off on matrices with entries of order 1; a missing transpose would show at"
        " order 1"
    ),
)

# %%
from itertools import product

from numpy.polynomial.hermite_e import hermegauss


def gaussian_rule(Lam_g, n_nodes):
    """Nodes and weights of the tensor Gauss-Hermite rule for N(0, Lam_g)."""
    z, wz = hermegauss(n_nodes)
    nodes = np.array(list(product(z, repeat=len(Lam_g)))) @ np.linalg.cholesky(Lam_g).T
    return nodes, np.prod(np.array(list(product(wz / wz.sum(), repeat=len(Lam_g)))), axis=1)


def isserlis_error(Lam_g, n_nodes):
    nodes, wts = gaussian_rule(Lam_g, n_nodes)
    fourth = np.einsum("s,si,sj,sk,sl->ijkl", wts, nodes, nodes, nodes, nodes)
    isserlis = (
        np.einsum("ij,kl->ijkl", Lam_g, Lam_g)
        + np.einsum("ik,jl->ijkl", Lam_g, Lam_g)
        + np.einsum("il,jk->ijkl", Lam_g, Lam_g)
    )
    return np.abs(fourth - isserlis).max()


A_g = gen_D.standard_normal((d, d))  # not symmetric
nodes, wts = gaussian_rule(Lam, 3)
lhs_D2 = np.einsum("s,si,sj,s->ij", wts, nodes, nodes, np.einsum("si,ij,sj->s", nodes, A_g, nodes))
rhs_D2 = Lam @ (A_g + A_g.T) @ Lam + np.trace(A_g @ Lam) * Lam
err_D2 = max(np.abs(lhs_D2 - rhs_D2).max(), isserlis_error(Lam, 3))
print(
    f"Lemma D.2 and Isserlis: largest error {err_D2:.1e} (entries up to"
    f" {np.abs(rhs_D2).max():.1f}); control with a two-node rule: {isserlis_error(Lam, 2):.2f}"
)
assert isserlis_error(Lam, 2) > 0.1, "a rule that is not exact for degree 4 must miss"
check_claim(
    "lsa.lemmaD2",
    err_D2,
    upper=1e-12,
    why=(
        "the three-node rule is exact for these degree-4 moments, so only float64 round-off remains"
    ),
)

# %%
slack_D3 = []
for k in range(3000):
    dd = int(gen_D.integers(1, 6))
    U_d = gen_D.standard_normal((dd, dd + int(gen_D.integers(0, 4))))
    V_d = (
        gen_D.standard_normal(U_d.shape) if k % 3 else U_d * gen_D.random()
    )  # V = c U makes the first step tight
    sU, sV = np.linalg.svd(U_d, compute_uv=False), np.linalg.svd(V_d, compute_uv=False)
    chain = [
        np.trace(U_d.T @ V_d),
        sU @ sV,
        sU[0] * sV.sum(),
        np.sqrt(dd) * sU[0] * np.linalg.norm(V_d),
    ]
    slack_D3.append(min(np.diff(chain)) / chain[-1])
print(
    f"Lemma D.3: smallest relative slack of the three inequalities over {len(slack_D3)} pairs"
    f" {min(slack_D3):.1e}"
)
check_claim(
    "lsa.lemmaD3",
    min(slack_D3),
    lower=-1e-12,
    why="relative float64 round-off; a third of the pairs make the first inequality an equality",
)

# %%
trace_D4, eig_D4 = [], []
for _ in range(2000):
    F, H_d = gen_D.standard_normal((4, int(gen_D.integers(1, 5)))), gen_D.standard_normal(
        (4, int(gen_D.integers(1, 5)))
    )
    A_p, B_p = F @ F.T, H_d @ H_d.T  # positive semi-definite, often singular
    trace_D4.append(np.trace(A_p @ B_p) / (np.linalg.norm(A_p) * np.linalg.norm(B_p)))
    Q_d, _ = np.linalg.qr(gen_D.standard_normal((4, 4)))  # a shared eigenbasis: the pair commutes
    A_c = (Q_d * (np.abs(gen_D.standard_normal(4)) * (gen_D.random(4) < 0.7))) @ Q_d.T
    B_c = (Q_d * np.abs(gen_D.standard_normal(4))) @ Q_d.T
    prod_c = A_c @ B_c
    eig_D4.append(
        min(np.linalg.eigvalsh((prod_c + prod_c.T) / 2).min(), -np.abs(prod_c - prod_c.T).max())
        / max(np.linalg.norm(prod_c), 1e-300)
    )
print(
    f"Lemma D.4: smallest tr(AB) / (|A| |B|) {min(trace_D4):.1e}; commuting pairs: smallest"
    f" eigenvalue of AB, less its asymmetry, {min(eig_D4):.1e} (relative)"
)
check_claim(
    "lsa.lemmaD4",
    min(min(trace_D4), min(eig_D4)),
    lower=-1e-12,
    why=(
        "relative float64 round-off; for non-commuting pairs AB - (AB)^T = AB - BA != 0, so AB is"
        " not symmetric and the 'only if' holds by definition"
    ),
)

# %% [markdown]
# ## Exercises
#
# ```{exercise}
# :label: ex-lsa-balance
# Show that the quantity $\delta=\|(w^{PV}_{21},w^{PV}_{22})\|^2-\|[W^{KQ}_{11};(w^{KQ}_{21})^\top]\|_F^2$ is
# conserved by gradient flow for every initialisation, and deduce where on the minimum manifold
# $cU=\Gamma^{-1}$ a run with $\delta\ne0$ ends.
# ```
#
# ```{solution} ex-lsa-balance
# :class: dropdown
# The prediction is bilinear in $p=$ (last row of $W^{PV}$) and $Q=$ (first $d$ columns of $W^{KQ}$), so
# $\langle p,\nabla_pL\rangle=\langle Q,\nabla_QL\rangle$ (both equal $\mathbb E[r\hat y]$ with $r$ the residual). Then
# $\frac{d}{dt}\delta=-2\langle p,\nabla_pL\rangle+2\langle Q,\nabla_QL\rangle=0$. At a global minimum $v=u=0$ and
# $cU=\Gamma^{-1}$, so $\delta=c^2-\|\Gamma^{-1}\|_F^2/c^2$, i.e. $c^2=\frac12(\delta+\sqrt{\delta^2+4\|\Gamma^{-1}\|_F^2})$.
# With $\delta=0$ this is $c=\|\Gamma^{-1}\|_F^{1/2}=w^{PV}_{*,22}$ of Eq. (4.1).
# ```
#
# ```{exercise}
# :label: ex-lsa-orthogonal
# Take $d=2$, $M=1$, $\Lambda={\rm diag}(1,4)$ and a prompt $x_1=(1,1)$. Find a query orthogonal to $x_1$
# whose LSA prediction is not zero, and one that is orthogonal to $x_1$ after multiplying by $\Gamma^{-1}$.
# ```
#
# ```{solution} ex-lsa-orthogonal
# :class: dropdown
# $\hat y=x_q^\top\Gamma^{-1}x_1y_1$. For $x_q=(1,-1)\perp x_1$, $\Gamma^{-1}$ is diagonal with unequal entries
# (for $N$ large, about $(1,1/4)$), so $x_q^\top\Gamma^{-1}x_1\approx1-\frac14\ne0$. The prediction vanishes for
# $x_q\perp\Gamma^{-1}x_1$, e.g. $x_q\propto(\Gamma^{-1}_{22},-\Gamma^{-1}_{11})$: orthogonality must be measured in
# the metric $\Gamma^{-1}$, which is the Euclidean one only when $\Lambda\propto I$.
# ```
#
# ```{exercise}
# :label: ex-lsa-cor43
# For $\Lambda=I_d$ compute the $w$-averaged $1/N^2$ term of Theorem 4.2 exactly and find its limit
# $N^2\times(\text{term})$ as $N\to\infty$. Compare with the constant $(1+2d){\rm tr}\Lambda+d^2\kappa$ used in
# Corollary 4.3.
# ```
#
# ```{solution} ex-lsa-cor43
# :class: dropdown
# With $\Lambda=I$, $\Gamma=\frac{N+1+d}{N}I\to I$, $a=w$ and $\mathbb E\|w\|^2_{B}={\rm tr}B$: the term is
# $\frac1{N^2}[d+2d\cdot d+d^2\cdot d]\,(1+O(1/N))$, so the limit is $d+2d^2+d^3$ (1210 for $d=10$). The
# paper's constant is $(1+2d)d+d^2=d+3d^2$ (310 for $d=10$): the $d^3$ from ${\rm tr}(\Lambda^{-1}){\rm tr}(\Lambda)^2$
# was bounded by $d^2\kappa$ instead of $d^2\kappa\,{\rm tr}\Lambda$.
# ```
#
# ## Cite this chapter
#
# ```{cite-this-chapter}
# :paper: zhang2024trained
# ```
