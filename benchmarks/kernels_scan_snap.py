"""Kernels of the Scan and Snap chapter: the count-based simulator against the sequence-based one.

- ``lemma1_gradient_batch128``: J and Lemma 1's gradients for one Syn-Small batch (128 sequences, T = 128),
  from the count vectors (``lemma1_gradient_counts``) against the literal Eq. 3-4 on one-hot sequences
  (``lemma1_gradient_sequences``). Same batch, same numbers (checked to 1e-12 before timing).
- ``syn_small_run_100_steps``: one Fig. 4 training run (100 SGD steps), multinomial counts against explicit
  sequences. The two sample the same law with different random streams: same computation, equal in
  distribution (tests/scan_snap/test_scan_snap.py compares them).
- ``syn_medium_K20_5_steps``: 5 steps of a Fig. 6 run at the largest size (K = 20, M = 240), where the
  sequence-based step builds 128 dense M x M matrices X^T diag(b) X.
- ``fig6_sweep_640_runs``: the whole Fig. 6 sweep of the chapter's default and full modes (4 sizes x 4 eta_Z x
  4 ratios x 10 seeds) on the count simulator, timed alone (the issue's budget: under 5 minutes on 2 cores);
  its sequence-based reference would take far longer than a benchmark run, so none is timed.
"""

from dataclasses import replace

import numpy as np

from icllib.scan_snap import model as ss
from icllib.config import rng

_SPEC = ss.syn_small()
_GEN = rng(0)
_Y = _GEN.normal(size=(_SPEC.M, _SPEC.M))
_Z = 0.5 * _GEN.normal(size=(_SPEC.M, _SPEC.M))
_CLASSES, _TOKENS = ss.sample_sequences(_SPEC, 128, 128, generator=_GEN)
_COUNTS = ss.token_counts(_TOKENS, _SPEC.M)


def _gradient_counts():
    return ss.lemma1_gradient_counts(_SPEC, _Y, _Z, _CLASSES, _COUNTS)


def _gradient_sequences():
    return ss.lemma1_gradient_sequences(_SPEC, _Y, _Z, _CLASSES, _TOKENS)


_fast, _slow = _gradient_counts(), _gradient_sequences()
assert abs(_fast[0] - _slow[0]) < 1e-12 and all(np.abs(a - b).max() < 1e-12 for a, b in zip(_fast[1:], _slow[1:]))


def _run(spec, simulator, steps):
    return lambda: ss.train_yz(spec, eta_Y=1.0, eta_Z=1.0, run=replace(ss.AUTHORS_RUN, steps=steps),
                               generator=rng(0),
                               simulator=simulator, init="default")


_MEDIUM = ss.syn_medium(10)

KERNELS = {
    "lemma1_gradient_batch128": (_gradient_counts, _gradient_sequences),
    "syn_small_run_100_steps": (_run(_SPEC, "counts", 100), _run(_SPEC, "sequences", 100)),
    "syn_medium_K20_5_steps": (_run(_MEDIUM, "counts", 5), _run(_MEDIUM, "sequences", 5)),
    "fig6_sweep_640_runs": (lambda: ss.fig6_sweep(ss.FIG6),
                            None),
}
