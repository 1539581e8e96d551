"""Self-checks for the exercises of the chapter ``scan_snap_text`` (Scan and Snap on real text, Tian et al.).

Each judge computes its expected value with the chapter's own code (``icllib.scan_snap.text``, ``icllib.scan_snap.real_text``)
or, for the chance of an ordering, by counting permutations, so that no value is written into the source.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from icllib.scan_snap import real_text as st
from icllib.scan_snap import text
from icllib.exercises import SelfCheck, SelfChecks, number_near

UNK_VOCABULARY = 2000  # ex-scan-snap-text-unk: the default mode's vocabulary
WINDOW = 35  # ex-scan-snap-text-uniform: the chapter's window (bptt) length
# ex-scan-snap-text-freeze-measure: the trajectory of the exercise, recorded every 100 steps of a 1000-step run
FREEZE_RUN_STEPS = 1000
FREEZE_STEPS = np.arange(0, FREEZE_RUN_STEPS + 1, 100)
N_RATES, RHO_THRESHOLD = 5, -0.9  # ex-scan-snap-text-chance: five learning rates, Spearman rho <= -0.9


def _uniform_entropy() -> float:
    """The chapter's attention entropy of uniform causal attention over one window."""
    causal = np.tril(np.ones((WINDOW, WINDOW)))
    return st.attention_row_entropy(causal / causal.sum(axis=1, keepdims=True))


def freeze_trajectory(steps) -> np.ndarray:
    """The entropy trajectory of ex-scan-snap-text-freeze-measure, ``1 + 1.8 exp(-k / 400)`` nats at step k."""
    return 1.0 + 1.8 * np.exp(-np.asarray(steps, dtype=float) / 400)


def _freeze_ratio() -> float:
    return st.freeze_summary(FREEZE_STEPS, freeze_trajectory(FREEZE_STEPS), run_steps=FREEZE_RUN_STEPS)[
        "freeze_ratio"]


def _chance_of_order() -> float:
    """P(Spearman rho <= RHO_THRESHOLD) for N_RATES values in an order drawn uniformly (no effect of the rate)."""
    ranks = np.arange(N_RATES)
    hits = 0
    for order in itertools.permutations(ranks):
        d = ranks - np.array(order)
        rho = 1 - 6 * np.sum(d**2) / (N_RATES * (N_RATES**2 - 1))
        hits += rho <= RHO_THRESHOLD + 1e-12
    return hits / math.factorial(N_RATES)


SELF_CHECKS = SelfChecks(
    "scan_snap_text",
    SelfCheck(
        label="ex-scan-snap-text-unk",
        asks="the <unk> rate of the validation split at vocabulary 2000, as a fraction",
        judge=number_near(lambda: text.load_corpus(UNK_VOCABULARY).unk_rate("valid"), atol=0.005),
        hint="the vocabulary is chosen on the training articles only; the check wants the other split",
        wrong=0.23,  # the training split's rate
    ),
    SelfCheck(
        label="ex-scan-snap-text-uniform",
        asks="one number in nats",
        judge=number_near(_uniform_entropy, rtol=1e-3),
        hint="row t of a causal window attends to t + 1 positions, and only rows 5 and later count",
        wrong=math.log(WINDOW),  # every row as long as the window
    ),
    SelfCheck(
        label="ex-scan-snap-text-freeze-measure",
        asks="the chapter's freeze ratio of the given trajectory",
        judge=number_near(_freeze_ratio, rtol=1e-3),
        hint="the yardstick is the whole drop from the first record to the last, not the drop over the first tenth",
        wrong=0.924,  # the drift over the second half against the drop over the first tenth
    ),
    SelfCheck(
        label="ex-scan-snap-text-chance",
        asks="a probability between 0 and 1",
        judge=number_near(_chance_of_order, rtol=1e-3),
        hint="count the orderings whose rank correlation reaches the threshold, not only the fully reversed one",
        wrong=1 / 120,  # the chance of rho = -1 alone
    ),
)

check = SELF_CHECKS.check
