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
# # Scan and Snap on real text
#
# **The question.** The previous chapter followed one attention layer through the theory of Tian et al.
# {cite}`tian2023scan` and their synthetic experiments. Here we ask the paper's last question (Sec. 8, App. G): does
# a transformer trained on real text show the same behaviour, attention in the first layer becoming sparse and then
# freezing although the learning rate stays constant, and sparser for larger learning rates?
#
# **The answer.** On a real Wikipedia sample, first-layer attention of a one-layer model becomes sparser, and
# larger learning rates end sparser. Freezing at a constant learning rate, and the sparsification of a three-layer
# model's first layer, appear at the authors' width ($d = 200$, `full` mode) but not within the budget of the
# default width ($d = 64$).
#
# What this chapter finds:
#
# - the corpus: the real Wikipedia sample shipped inside the `gensim` wheel (107 articles, a quarter of WikiText-2),
#   since our machines cannot download WikiText-2 or WikiText-103 ([the corpus](sec-scan_snap_text-corpus));
# - Fig. 7: the attention entropy of {prf:ref}`def-scan_snap_text-entropy` falls; it freezes, and a three-layer
#   model's first layer sparsifies too, only at the authors' width ([Fig. 7](sec-scan_snap_text-fig7));
# - Fig. 10: the entropy falls strictly with the learning rate, in one seed at a fixed budget
#   ([Fig. 10](sec-scan_snap_text-fig10));
# - beyond the paper, a Y/Z language model on the same text shows the $\eta_Z$ trend of Fig. 6 but no minimum at
#   $\eta_Y/\eta_Z \approx 2$ ([the Y/Z model](sec-scan_snap_text-yz)).
#
# **What it assumes.** The model of the authors' Fig. 7 notebook (the PyTorch transformer tutorial), with the sizes
# named below; the Wikipedia sample in place of WikiText-2. All of it runs on that sample, so the ledger calls the
# real-text rows inconclusive: a statement about a named corpus covers that corpus only (rule R2 of the ledger).
#
# **Run time.** This page ran in {run-time}`scan_snap_text` when the site was built (`quick`, the tests, runs every
# cell at toy scale and checks only the corpus); `full` took {run-time}`scan_snap_text full`. The
# {doc}`status page </book/status>` lists the measured times. The ledger of this chapter: {ledger-counts}`scan_snap_text`.
# What you see was executed in the run mode printed below.

# %% tags=["hide-input"]
from functools import partial

import numpy as np
import torch
from IPython.display import display
from scipy.stats import spearmanr, ttest_rel

from icllib.scan_snap import real_text as st
from icllib.scan_snap import text
from icllib.scan_snap import sliders as text_sliders
from icllib.claims import check_claim, show_archived_check
from icllib.config import by_mode, mode, rng, run_line, torch_generator
from icllib.plotting import PALETTE, figure, legend

C = st.CHECKS  # each check's tolerance and reason; the ledger and the claim cards show both
torch.set_num_threads(1)
print(run_line())
# the learning-dynamics checks need the default scale (see the cost note at the end)
checked = mode() != "quick"

# %% [markdown]
# (sec-scan_snap_text-corpus)=
# ## The corpus
#
# `icllib.scan_snap.text` reads the shortened English Wikipedia dump of the gensim test data
# (`enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2`), drops redirects and wiki markup,
# lower-cases and splits into words, numbers and punctuation (a simplified version of torchtext's
# `basic_english`), holds out the last 10% of the articles for validation, and keeps the most frequent training
# types plus `<unk>`. What differs from WikiText-2: about a quarter of the size (566k against 2.09M tokens), a
# slightly different tokenizer, no WikiText `<unk>` preprocessing, and a smaller vocabulary (WikiText-2 keeps
# about 33k types; we keep 500-2000 for speed, so 23-39% of the tokens are `<unk>`). The decoder softmax is
# cheaper and the language model weaker; the first-layer attention we study is affected mostly through the
# `<unk>` tokens, which act like one very frequent common token.

# %%
articles = text.wikipedia_sample()
n_tokens = sum(len(tokens) for _, tokens in articles)
n_types = len({token for _, tokens in articles for token in tokens})
print(f"{len(articles)} articles, {n_tokens} tokens, {n_types} types")
print("first titles:", [title for title, _ in articles[:6]])
assert (len(articles), n_tokens, n_types) == (107, 566440, 36681), "the gensim test corpus changed"

# %% [markdown]
# The vocabulary is cut to the most frequent types by mode; the rest become `<unk>`. Training text is cut into 20
# columns, validation text into 10:

# %%
vocab_size = by_mode(quick=500, default=2000, full=5000)
corpus = text.load_corpus(vocab_size)
train_source = text.batchify(corpus.train, 20)
valid_source = text.batchify(corpus.valid, 10)
print(
    f"vocabulary {corpus.vocab_size}: <unk> rate {corpus.unk_rate('train'):.1%} (train), "
    f"{corpus.unk_rate('valid'):.1%} (validation); {len(corpus.train)} training tokens, "
    f"validation articles {corpus.valid_titles[:3]}..."
)

# %% [markdown]
# (sec-scan_snap_text-fig7)=
# ## Fig. 7: first-layer attention during training at a constant learning rate
#
# The model is the one of the authors' Fig. 7 notebook, the PyTorch transformer tutorial: embeddings scaled by
# $\sqrt d$, sinusoidal positional encoding (so Assumption 1(a) does not hold, {ref}`scan_snap.N11 <scan-snap-n11>`),
# one post-LN encoder layer with one
# head and a causal mask, dropout 0.3, a linear decoder; batches of 20 columns, windows of 35 tokens, plain SGD
# with learning rate 5 (10 for the feed-forward layer, as in the authors' run), gradient-norm clipping at 0.5,
# no decay. Every 100 steps we measure the mean entropy of the first layer's attention rows (rows 5 and later)
# on a fixed validation window. Sizes: $d = 64$, vocabulary 2000, 1000 steps for one layer and 500 for three
# layers in `default`; $d = 200$, vocabulary 5000, 1500 steps for both in `full`.
#
# ```{prf:definition} Attention entropy
# :label: def-scan_snap_text-entropy
# For the attention weights $a_{ts}$ of query position $t$ over the positions $s \le t$ of a window, the attention
# entropy is the mean, over query positions $t \ge 5$ (counting from 0) and over windows, of
#
# $$ H_t = -\sum_{s \le t} a_{ts}\ln a_{ts} , $$ (scan_snap_text-entropy)
#
# in nats: $\ln(t+1)$ for uniform attention, 0 when one key takes all the weight.
# ```
#
# The sizes of the run, by mode:

# %%
d_model = by_mode(quick=32, default=64, full=200)
lm_steps = by_mode(quick=60, default=1000, full=1500)
deep_steps = by_mode(quick=10, default=500, full=1500)
record_every = by_mode(quick=20, default=100, full=100)
# every transformer of the chapter: the tutorial's model at this width, trained on the same text
new_lm = partial(
    st.make_transformer_lm, corpus.vocab_size, d_model=d_model, d_hidden=d_model, dropout=0.3
)
train_lm = partial(
    st.train_transformer_lm, train_source=train_source, valid_source=valid_source[:400]
)

# %% [markdown]
# A fixed validation window is the probe whose attention entropy is recorded; each model starts from seed 0:

# %%
probe = valid_source[:35].T
trajectories = {}
for n_layers, n_steps in ((1, lm_steps), (3, deep_steps)):
    generator = torch_generator(0)
    model = new_lm(n_layers=n_layers, generator=generator)
    lm_run = train_lm(
        model, steps=n_steps, lr=5.0, lr_ffn=10.0, record_every=record_every, probe=probe,
        generator=generator,
    )  # fmt: skip
    trajectories[n_layers] = (lm_run.steps, lm_run.entropies, model)
    print(f"{n_layers} layer(s): entropy {np.round(lm_run.entropies, 3).tolist()}")
    print(f"validation loss {lm_run.valid_loss:.3f}")

# %% [markdown]
# {numref}`fig-scan_snap_text-entropy` draws the recorded entropies of both models against the step.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "The mean attention entropy of the first layer (defined above) on a fixed validation window of the Wikipedia sample during SGD at a constant learning rate of 5, as in the paper's Fig. 7. With one layer the entropy falls from its initial value (attention becomes sparser); at the default width $d = 64$ it keeps drifting down instead of freezing within the budget, and the three-layer model's first layer stays at its initial entropy. At the paper's width (`full` mode) both fall, and the one-layer curve flattens out near 0.", "name": "fig-scan_snap_text-entropy"}, "image": {"alt": "One panel: first-layer attention entropy over SGD steps on Wikipedia text, for one and for two layers."}}
fig, ax = figure(1, 1, width=5.5)
for colour, (n_layers, (steps, entropies, _)) in zip(PALETTE, trajectories.items()):
    ax.plot(
        steps,
        entropies,
        "o-",
        color=colour,
        label=f"{n_layers} layer(s), $d = {d_model}$",
    )
ax.set(
    xlabel="SGD step",
    ylabel="first-layer attention entropy (nats)",
    title="constant learning rate 5",
)
legend(ax)

# %% [markdown]
# {numref}`fig-scan_snap_text-maps` shows where the trained one-layer model looks: its first-layer attention on the
# first validation window.

# %%
model = trajectories[1][2]
model.eval()
with torch.no_grad():
    attention_map = model.first_layer_attention(torch.as_tensor(probe[:1]))[0].numpy()

# %% tags=["hide-input"] mystnb={"figure": {"caption": "First-layer attention maps of the one-layer model on the validation window (batch element 0) at the end of training: rows are query positions, columns the causal past. Compare the paper's Fig. 7: a few tokens take most of the weight in many rows.", "name": "fig-scan_snap_text-maps"}, "image": {"alt": "A heat map of the one-layer model's attention: query positions down, key positions across, weight only on the causal past."}}
fig, ax = figure(1, 1, width=4.2, height=4.0)
image = ax.imshow(attention_map, cmap="viridis")
ax.set(xlabel="key position", ylabel="query position", title=f"after {lm_steps} steps")
ax.grid(False)
fig.colorbar(image, ax=ax, label="attention weight")

# %% [markdown]
# **Sparser.** The entropy {eq}`scan_snap_text-entropy` after training, averaged over the last three records,
# against the initial value.
# **Frozen?** The paper (Sec. 8) says the first-layer attention "freezes at some point, even if the learning
# rate remains the same". We compare the size of the drift over the second half of training with the whole drop
# from start to end; a frozen map would have a ratio near 0 (we take below 0.2 as frozen, the spec's provisional
# threshold). The whole drop, not the first tenth's, is the yardstick: a map that starts moving late (the
# three-layer model below) has no early drop, and a drift of either sign counts.

# %%
steps, entropies, _ = trajectories[1]
one_layer = st.freeze_summary(steps, entropies, run_steps=lm_steps)
print({name: round(float(value), 3) for name, value in one_layer.items()})

# %% [markdown]
# Sparsity is checked in `default` and `full`, the freeze only at the authors' width (`full`), for the reasons given
# below:

# %%
if checked:
    sparsity = one_layer["initial"] - one_layer["late"]
    check_claim("scan_snap.text-sparse", sparsity, **C["text-sparse"])
if mode() == "full":
    check_claim("scan_snap.text-freeze", one_layer["freeze_ratio"], **C["text-freeze"])
else:  # the authors' width: the archived full run's values
    show_archived_check("scan_snap.text-freeze")

# %% [markdown]
# The three-layer model is the bottom row of Fig. 7. At the default width its first layer does not move at all
# within 500 steps (the entropy stays at its initial value, and the validation loss stays well above the one-layer
# model's, 4.75 against 4.21): with post-LN layers, learning rate 5 and gradient clipping, the deeper model's
# attention does not start to learn in this budget. At the authors' width and length (`full`) it does: in the run
# of 2026-11-22 the first-layer entropy stayed near 2.8 for about 300 steps and then fell to 0.09 by step 1500,
# as the paper's bottom row shows. The ledger checks the statement at the authors' width only; since that run is
# on the Wikipedia sample and not on the paper's WikiText-2, the row stays inconclusive, with WikiText-2 as the
# deciding run (rule R2 of the ledger's legend: a statement about a named corpus covers that corpus only).

# %%
deep_steps_recorded, deep_entropies, _ = trajectories[3]
three_layers = st.freeze_summary(deep_steps_recorded, deep_entropies, run_steps=deep_steps)
deep_drop = three_layers["initial"] - three_layers["late"]
print(f"3 layers: first-layer entropy {three_layers['initial']:.3f} -> {three_layers['late']:.3f}")
if mode() == "full":
    check_claim("scan_snap.text-sparse-deep", deep_drop, **C["text-sparse-deep"])
else:
    show_archived_check("scan_snap.text-sparse-deep")

# %% [markdown]
# Sec. 8 says the first layer freezes "in both cases (1-layer and multi-layer)". The same measure as for one
# layer, the size of the drift over the second half of training against the whole drop, on the three-layer
# model; it is checked at the authors' width and length only (`full`), since at the default width the deeper
# model's first layer has not moved, so there is no drop to compare with.

# %%
print({name: round(float(value), 4) for name, value in three_layers.items()})
if mode() == "full":
    check_claim("scan_snap.text-freeze", three_layers["freeze_ratio"], **C["text-freeze#2"])

# %% [markdown]
# At the `default` scale ($d = 64$, 1000 steps) the attention of the one-layer model is still moving at the end
# of the budget, so the "freeze" of Sec. 8 does not show there. Two differences may matter: the authors
# trained a wider model ($d = 200$) on four times more text for 1500 steps (0.5 epoch of WikiText-2, against
# several epochs of our sample), and our small vocabulary turns a quarter of the tokens into `<unk>`. `full`
# mode runs the authors' width and length, and there the map does freeze: in a `full` run on 2026-11-22 the
# entropy fell from 2.815 to 0.014 and the ratio above was 0.04, well under 0.2. The ledger therefore checks the
# statement at the authors' width only, for one layer and for three; the default width is a smaller model than
# the authors', and its drift is printed above as an observation, not checked. Freezing is a matter of scale
# here, not a failure of the mechanism. All of it uses the Wikipedia sample, so the row stays inconclusive
# until a run on WikiText-2 itself, which needs the download.

# %% [markdown]
# (sec-scan_snap_text-fig10)=
# ## Fig. 10: larger learning rates give sparser attention
#
# App. G trains the same 1-layer model with one learning rate $\eta$ for all parameters (the caption's
# "$\eta_Y$ and $\eta_Z$" change together, {ref}`scan_snap.N12 <scan-snap-n12>`) and reports that the validation
# attention entropy is lower for larger $\eta$ (Sec. 6: a larger $B_n$ means sparser attention). We train one seed
# for a fixed number of steps on the Wikipedia sample (the paper trains five seeds "until convergence" on
# WikiText-2 and WikiText-103, so the ledger row stays inconclusive) with $\eta \in \{0.25, 0.5, 1, 2, 5\}$ and
# average the first-layer attention entropy over the
# validation windows. We ask for a strictly decreasing entropy: if the rate did not matter, five runs would come
# out in that order with probability $1/5! < 1\%$.

# %%
lr_values = (0.25, 0.5, 1.0, 2.0, 5.0)
lr_steps = by_mode(quick=10, default=250, full=800)
valid_entropy, attention_maps = {}, {}
for lr in lr_values:
    generator = torch_generator(0)
    model = new_lm(n_layers=1, generator=generator)
    lm_run = train_lm(model, steps=lr_steps, lr=lr, record_every=lr_steps, generator=generator)
    valid_entropy[lr] = lm_run.valid_entropy
    attention_maps[lr] = text_sliders.first_layer_map(model, probe)
    print(f"eta = {lr}: validation attention entropy {valid_entropy[lr]:.3f}", end=", ")
    print(f"validation loss {lm_run.valid_loss:.3f}")

# %% [markdown]
# The learning rates' order against the entropies':

# %%
rho = spearmanr(lr_values, [valid_entropy[lr] for lr in lr_values])[0]
if checked:
    check_claim("scan_snap.fig10-lr", rho, **C["fig10-lr"])

# %% [markdown]
# {numref}`fig-scan_snap_text-rate-slider` shows what the entropy measures: the trained model's first-layer
# attention on the validation window, one learning rate at a time.

# %% mystnb={"figure": {"caption": "Move the learning rate $\\eta$ with the slider (arrow keys, Home and End, or drag) from 0.25 to 5: the first-layer attention of the model trained at that rate (left; rows are query positions, columns the causal past) concentrates on fewer keys, and its validation entropy (right, circled) falls. In the tests' `quick` mode the models train for only a few steps and the maps barely differ.", "name": "fig-scan_snap_text-rate-slider"}, "image": {"alt": "First-layer attention map of the language model trained at one learning rate at a time, beside the entropy against the rate"}}
display(text_sliders.attention_by_rate_slider(attention_maps, valid_entropy))

# %% [markdown]
# (sec-scan_snap_text-yz)=
# ## The Y/Z model on text: varying $\eta_Y$ and $\eta_Z$ separately
#
# In the embedding parameterisation "it is not clear how to set $\eta_Y$ and $\eta_Z$ properly" (App.
# G). The Y/Z model sets them apart: as a causal
# language model, position $t$ attends to the positions before it with logits $Z[x_t, x_s]$ (itself excluded,
# as the query in Eq. 1), the mixture of their one-hot vectors is $\ell_2$-normalised and decoded by $Y^\top$;
# $Y = Z = 0$ at the start, SGD with separate rates. This is the authors' `decoder_wiki_yz` idea at a small
# vocabulary; the paper reports no such experiment, so what follows is the book's own extension and covers no claim
# of the paper. We repeat the two trends of Fig. 6: entropy down with $\eta_Z$ at $\eta_Y/\eta_Z = 2$ (five rates,
# asked to be strictly decreasing: $1/5! < 1\%$ by chance), and the effect of $\eta_Y/\eta_Z$ at $\eta_Z = 1$.

# %%
yz_vocab = by_mode(quick=200, default=500, full=1000)
yz_steps = by_mode(quick=5, default=100, full=400)
yz_corpus = text.load_corpus(yz_vocab)
yz_train, yz_valid = (
    text.batchify(yz_corpus.train, 20),
    text.batchify(yz_corpus.valid, 10)[:400],
)
eta_Z_text, ratio_text = (0.25, 0.5, 1.0, 2.0, 4.0), (1, 2, 5, 10)
# every Y/Z run below: the same corpus and length, its own rates and seed
yz_run = partial(st.train_yz_text, yz_train, yz_valid, yz_corpus.vocab_size, steps=yz_steps)

# %% [markdown]
# First $\eta_Z$ at $\eta_Y/\eta_Z = 2$:

# %%
by_eta_Z = [yz_run(eta_Y=2 * eta_Z, eta_Z=eta_Z, generator=rng(0))[0] for eta_Z in eta_Z_text]

# %% [markdown]
# Then $\eta_Y/\eta_Z$ at $\eta_Z = 1$:

# %%
by_ratio = [yz_run(eta_Y=ratio, eta_Z=1.0, generator=rng(0))[0] for ratio in ratio_text]

# %% [markdown]
# Both series, and the $\eta_Z$ trend as a check:

# %%
print("eta_Y/eta_Z = 2, eta_Z =", eta_Z_text, ": entropy", np.round(by_eta_Z, 4).tolist())
print("eta_Z = 1, eta_Y/eta_Z =", ratio_text, ": entropy", np.round(by_ratio, 4).tolist())
falls_with_eta_Z = bool(np.all(np.diff(by_eta_Z) < 0))
if checked:
    check_claim("scan_snap.text-yz-eta-z", falls_with_eta_Z, **C["text-yz-eta-z"])

# %% [markdown]
# {numref}`fig-scan_snap_text-rates` draws both trends: the transformer's against its one learning rate, the
# Y/Z model's against $\eta_Z$ and against $\eta_Y/\eta_Z$.

# %% tags=["hide-input"] mystnb={"figure": {"caption": "Real-text versions of the trends of the paper's Fig. 6. Left: the tutorial transformer's validation attention entropy falls with the unified learning rate (the paper's Fig. 10). Right: the Y/Z language model from zero initialisation; entropy falls with $\\eta_Z$ (squares, at $\\eta_Y/\\eta_Z = 2$) and changes little with $\\eta_Y/\\eta_Z$ (circles, at $\\eta_Z = 1$); it has no minimum at ratio 2.", "name": "fig-scan_snap_text-rates"}, "image": {"alt": "Two panels: validation attention entropy against the learning rate of the transformer, and against the two rates of the Y/Z model."}}
fig, (ax_lr, ax_yz) = figure(1, 2)
ax_lr.plot(
    lr_values,
    [valid_entropy[lr] for lr in lr_values],
    "o-",
    color=PALETTE[0],
    label=r"transformer, unified $\eta$",
)
ax_lr.set(
    xscale="log",
    xlabel=r"learning rate $\eta$",
    ylabel="validation attention entropy (nats)",
    title="Paper Fig. 10",
)
legend(ax_lr)
ax_yz.plot(
    ratio_text, by_ratio, "o-", color=PALETTE[1], label=r"$\eta_Z = 1$, varying $\eta_Y/\eta_Z$"
)
ax_yz.plot(
    eta_Z_text,
    by_eta_Z,
    "s--",
    color=PALETTE[2],
    label=r"$\eta_Y/\eta_Z = 2$, varying $\eta_Z$",
)
ax_yz.set(
    xscale="log",
    xlabel=r"$\eta_Y/\eta_Z$ (circles) or $\eta_Z$ (squares)",
    ylabel="validation attention entropy",
    title="$Y/Z$ model on text",
)
legend(ax_yz)
# Less than two decades on a log axis: label the values tried, not matplotlib's crowded minor ticks.
for ax, ticks in ((ax_lr, lr_values), (ax_yz, (0.25, 0.5, 1, 2, 5, 10))):
    ax.minorticks_off()
    ax.set_xticks(ticks, labels=[f"{tick:g}" for tick in ticks])

# %% [markdown]
# The $\eta_Z$ trend of Fig. 6 holds on text. The minimum at $\eta_Y/\eta_Z \approx 2$ does not show: in `default`
# (vocabulary 500, 100 steps) the entropy is lowest at ratio 5 or above, and in the `full` run of 2026-11-22
# (vocabulary 1000, 400 steps) it rose steadily with the ratio from the smallest value tested, 2.631 at ratio 1 to
# 2.712 at ratio 10. Neither says the paper's threshold is absent: it concerns the snapping phase, and the
# 100-step `default` run mixes the phases. By a rough transfer of the batch-1 clock, a next token of frequency $p$
# has had about $100\,p\,\eta_Y$ of decoder learning, short of the $\ln M$ that $t'_0 = K\ln M/\eta_Y$ asks for
# unless $p$ is above 1-3 %, which holds for only a handful of the 500 next tokens (though they carry over half the
# text). Before the transition Eq. 14 has $B_n$ growing with $\eta_Y\eta_Z$, so for the other tokens a larger
# $\eta_Y$ giving sparser attention is what the paper predicts. The `full` run's rise from ratio 1 goes the way of
# Sec. 6, insight (c); only the location of the minimum differs from 2. To tell these orderings from seed noise we rerun
# ratio 2 and the ratio the earlier runs found lower
# (5 in `default`, 1 in `full`) with five fresh seeds. A seed fixes the order of the training windows, which shifts
# both ratios alike, so the test is paired: a one-sided paired t-test of "higher entropy at ratio 2", at the 1%
# level. On text the "common tokens" are not one
# designated token per class, and the synthetic sweep's threshold need not carry over.

# %%
# the ratio found below ratio 2 by the runs of 2026-11-22
rival = by_mode(quick=5, default=5, full=1)
fresh_seeds = (6, 7, 8, 9, 10)  # seeds 0-5 were looked at while designing the test
at_ratio = {
    ratio: [yz_run(eta_Y=ratio, eta_Z=1.0, generator=rng(seed))[0] for seed in fresh_seeds]
    for ratio in (2, rival)
}

# %% [markdown]
# Higher entropy at ratio 2 than at its rival, across the paired seeds:

# %%
no_threshold = ttest_rel(at_ratio[2], at_ratio[rival], alternative="greater").pvalue
print(
    f"eta_Z = 1, seeds 6-10: entropy at ratio 2 {np.round(at_ratio[2], 4).tolist()}, at ratio {rival} {np.round(at_ratio[rival], 4).tolist()}; one-sided paired t-test p = {no_threshold:.2g}"
)
if mode() == "full":
    check_claim("scan_snap.text-yz-threshold-full", no_threshold, **C["text-yz-threshold-full"])
else:
    show_archived_check("scan_snap.text-yz-threshold-full")
    if checked:
        check_claim("scan_snap.text-yz-threshold", no_threshold, **C["text-yz-threshold"])

# %% [markdown]
# ## What we saw
#
# On real Wikipedia text, the first attention layer of a small one-layer transformer does become sparser under
# SGD, and more so for larger learning rates, as Figs. 7 and 10 say (the latter with one seed and a fixed budget,
# so its ledger row stays inconclusive). At the authors' width (`full`) the map then freezes at a constant learning
# rate and the three-layer model's first layer becomes sparse too; at the default width neither happens within the
# budget, and the chapter prints those numbers without checking them. Every real-text row stays inconclusive: the
# runs are on our Wikipedia sample rather than the paper's WikiText-2, and the deciding run is WikiText-2 itself. The Y/Z model on text, the book's own extension, shows the
# $\eta_Z$ trend of Fig. 6 but no minimum at $\eta_Y/\eta_Z \approx 2$ (the short default run is, for most next
# tokens, still before the transition, where the paper predicts none). These are small models on a small corpus; they say what happens at this
# scale and nothing stronger.
#
# **Cost.** `quick` (tests) runs every cell at toy scale (vocabulary 500, $d = 32$, 5-60 steps) and checks only the
# corpus; the {doc}`status page </book/status>` has the measured `default` times; `full` ($d = 200$,
# vocabulary 5000, 1500 steps, one and three layers, 800 steps per learning rate, Y/Z at vocabulary 1000 for 400
# steps) passed every check in its run of 2026-11-22 (the ledger's deciding runs give its cost); the fifth
# learning rate of Fig. 10 and the seeded Y/Z comparison were added after that run.

# %% [markdown]
# (sec-scan_snap_text-exercises)=
# ## Exercises
#
# The exercises run from reproducing a number of this chapter to experiments the paper leaves open. Those with a
# checkable answer come with a self-check: `check(label, your_answer)` says whether the answer is right and, if
# not, gives a hint, never the answer.

# %%
from icllib.scan_snap.real_text_exercises import check

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-unk
# Rebuild the corpus with vocabularies of 500, 2000 and 10000 and print the `<unk>` rate of each split. Pass the
# validation split's rate at vocabulary 2000 as a fraction, `check("ex-scan-snap-text-unk", rate)`. Why is the
# validation rate the higher one, and why does a small vocabulary look, to the attention layer, like the "common
# token" of Theorem 2(b)?
# ```
#
# ````{solution} ex-scan-snap-text-unk
# :class: dropdown
# `text.load_corpus(V).unk_rate("valid")` is 39 % at V = 500, 26 % at V = 2000 and 12 % at V = 10000 (38 %,
# 23 % and 7 % on the training articles: validation articles bring their own rare words, and the vocabulary is
# chosen on the training articles).
#
# ```python
# from icllib.scan_snap import text
#
# answer = text.load_corpus(2000).unk_rate("valid")
# ```
#
# **A good answer** gives both splits at each size, explains the gap by the vocabulary's being chosen on the
# training articles, and argues that `<unk>` then follows every query token with a similar probability: it is
# common to all "classes", so the theory predicts that its attention logit is pushed down (Theorem 2(b)).
# ````

# %%
answer = ...  # your answer
check("ex-scan-snap-text-unk", answer)

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-uniform
# What is the attention entropy of {prf:ref}`def-scan_snap_text-entropy` for uniform causal attention over one
# window of 35 tokens? Compute it from {eq}`scan_snap_text-entropy` and pass it,
# `check("ex-scan-snap-text-uniform", entropy)`. How far below it do the trained models of
# {numref}`fig-scan_snap_text-entropy` end?
# ```
#
# ````{solution} ex-scan-snap-text-uniform
# :class: dropdown
# Row $t$ attends uniformly to $t + 1$ positions, so $H_t = \ln(t+1)$, and the mean over $t = 5, \dots, 34$ is
# about 2.91 nats. The untrained models start a little below it (about 2.8 nats: their logits are not all equal),
# and the one-layer model ends far below.
#
# ```python
# import numpy as np
#
# answer = float(np.mean(np.log(np.arange(5, 35) + 1)))
# ```
#
# **A good answer** counts $t + 1$ keys in row $t$ (the query sees itself), averages over rows 5 to 34 only, and
# compares with the initial entropy of the chapter's runs rather than with $\ln 35$.
# ````

# %%
answer = ...  # your answer
check("ex-scan-snap-text-uniform", answer)

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-freeze-measure
# An entropy trajectory is recorded every 100 steps of a 1000-step run and reads $H(k) = 1 + 1.8\,e^{-k/400}$
# nats at step $k$. Compute the chapter's freeze ratio (the drift over the second half against the whole drop) by
# hand and pass it, `check("ex-scan-snap-text-freeze-measure", ratio)`. Would the chapter call this map frozen?
# Construct a trajectory that the ratio calls frozen although the map never sparsified.
# ```
#
# ````{solution} ex-scan-snap-text-freeze-measure
# :class: dropdown
# $|H(500) - H(1000)| / (H(0) - H(1000)) = 0.368 / 1.652 \approx 0.22$: above the threshold 0.2, not frozen
# yet. A map that drops by $10^{-3}$ in its first steps and then stays put has ratio near 0 although it never
# sparsified; that is why the chapter checks the drop itself (`text-sparse`) next to the ratio.
#
# ```python
# import numpy as np
#
# steps = np.arange(0, 1001, 100)
# entropy = 1 + 1.8 * np.exp(-steps / 400)
# answer = abs(entropy[5] - entropy[-1]) / (entropy[0] - entropy[-1])
# ```
#
# **A good answer** uses the whole drop as the yardstick (the first tenth's drop gives 0.92), reads the
# threshold 0.2 from the ledger row, and sees that the ratio alone cannot tell a frozen map from one that never
# moved.
# ````

# %%
answer = ...  # your answer
check("ex-scan-snap-text-freeze-measure", answer)

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-chance
# The Fig. 10 check asks for a strictly decreasing entropy over five learning rates (Spearman $\rho = -1$), which
# happens by chance with probability $1/5!$ if the rate does not matter. With what probability would a looser
# check, $\rho \le -0.9$, pass by chance? `check("ex-scan-snap-text-chance", probability)`. Is the looser check
# still below the ledger's 1 % false-pass rate?
# ```
#
# ````{solution} ex-scan-snap-text-chance
# :class: dropdown
# $\rho = 1 - 6\sum d^2/(n(n^2-1))$ with $n = 5$; $\rho \le -0.9$ needs $\sum d^2 \ge 38$, which the reversed
# order (40) and its four neighbours by one adjacent swap (38) reach: $5/120 \approx 4.2\,\%$, above 1 %.
#
# ```python
# import itertools
#
# from scipy.stats import spearmanr
#
# orders = list(itertools.permutations(range(5)))
# hits = sum(spearmanr(range(5), order)[0] <= -0.9 + 1e-9 for order in orders)
# answer = hits / len(orders)
# ```
#
# **A good answer** counts the permutations (or enumerates them), compares the result with the 1 % the ledger
# asks of a statistical check, and concludes that five learning rates leave no room for a looser threshold: a
# sixth rate or more seeds would be needed.
# ````

# %%
answer = ...  # your answer
check("ex-scan-snap-text-chance", answer)

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-freeze
# Train the one-layer model with `lr=5.0` for 3000 steps at the default width and plot the entropy. Does the
# freeze ratio fall below 0.2 with the longer run? Repeat with a learning rate decayed by 0.95 every 100 steps.
#
# *For discussion: this exercise has no self-check.*
# ```
#
# ```{solution} ex-scan-snap-text-freeze
# :class: dropdown
# Call `st.train_transformer_lm` with `steps=3000` and `st.freeze_summary` on its trajectory. With a decaying rate
# the attention freezes trivially, because the updates vanish; the paper's point is that it freezes without
# decay, through the $\ln t/t$ decay of the back-propagated signal (Sec. 6).
#
# **A good answer** reports the ratio at both lengths and for both schedules, with the run time, and separates
# the two mechanisms of freezing: a vanishing step size, and the self-limiting signal of the paper.
# ```

# %%
# ex-scan-snap-text-freeze is for discussion (no self-check): your notes or code here.

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-positions
# Our transformer has positional encodings, which the theory excludes. Remove them (set `model.positional` to
# zero) and rerun the Fig. 7 experiment. What changes in the attention maps of
# {numref}`fig-scan_snap_text-maps`?
#
# *For discussion: this exercise has no self-check.*
# ```
#
# ```{solution} ex-scan-snap-text-positions
# :class: dropdown
# `model.positional.zero_()` after `make_transformer_lm`. Without positions the attention logit of a key depends
# only on the two tokens, as in the Y/Z model: in every row, repeated occurrences of a token get the same weight,
# and the model can no longer prefer the most recent words.
#
# **A good answer** compares the maps and the entropy trajectories with and without positions on the same
# window and seed, and points at the rows where repeated tokens now share their weight.
# ```

# %%
# ex-scan-snap-text-positions is for discussion (no self-check): your notes or code here.

# %% [markdown]
# ```{exercise}
# :label: ex-scan-snap-text-seeds
# Fig. 10 is checked with one seed at a fixed budget. Rerun it with three more seeds (`torch_generator(1)` to
# `(3)`) and, for the paper's "until convergence", with twice the steps. Is the order of the five entropies
# stable? Which result would make the row's verdict change, and to what?
#
# *For discussion: this exercise has no self-check.*
# ```
#
# ```{solution} ex-scan-snap-text-seeds
# :class: dropdown
# Run the Fig. 10 cell in a loop over seeds and step counts and compute Spearman's $\rho$ for each.
#
# **A good answer** reports $\rho$ per seed and length, with the spread of the entropies at each rate, and
# notes that even a stable order on the Wikipedia sample leaves the row inconclusive: the deciding run is on
# WikiText-2 (rule R2 of the ledger).
# ```

# %%
# ex-scan-snap-text-seeds is for discussion (no self-check): your notes or code here.


# %% [markdown]
# ## Cite this chapter
#
# ```{cite-this-chapter}
# :paper: tian2023scan
# ```
