"""Pre-registered deciding runs: the runs that settle an ``inconclusive`` row, and the rules that read them.

A row of the registry that waits on compute names a ``deciding_experiment`` and states its ``deciding_rule`` in
words: which outcome gives which verdict. The rule is committed before the runs; each run archives the commit
it ran at and the SHA-256 of the rule's text, so a rule edited after the runs no longer matches them. The
verdict then follows the rule, whatever it says: :func:`rule_verdict` is the rule in code, and
``tests/test_deciding.py`` fails when a row's verdict differs from it.

Runs are archived one file each, ``results/deciding/<experiment>/<run>.json``, so that runs made on different
days and machines (a GPU for minutes, or a CPU for hours in the background) accumulate::

    python -m icllib.deciding run standard-transformer-2048 --device cuda
    python -m icllib.deciding run b11-batch200-seeds --runs seed3,seed4     # both seeds in one batched loop
    python -m icllib.deciding run b11-batch200-seeds --no-batch --executor submitit   # a Slurm job per seed
    python -m icllib.deciding verdicts

Each run (or batch of seeds) is a task of :mod:`icllib.executor`, which returns its record; this process writes
each archive atomically as its task ends, then the archives' RO-Crate (``tools/ro_crate.py``).

The experiments:

- ``standard-transformer-2048`` (row ``induction_subspace.standard-transformer-paper-width``; until 2026-11-27
  also ``fig2-subdiagonal``, whose first rule read the softmax weight): App. E's recipe at the paper's width 2048,
  under two standard initialisations (GPT-2's and PyTorch's defaults) x 3 seeds; each run measures the loss, the
  accuracy on fresh sequences and layer 1's previous-position weight.
- ``standard-transformer-2048-scores`` (row ``induction_subspace.fig2-subdiagonal``): the same recipe under
  GPT-2's initialisation, the one under which the models learned, 3 seeds; each run also archives layer 1's
  positional score block before the softmax, Fig. 2's own object, and where its rows' causal arg-max lies.
- ``b11-batch200-seeds`` (row ``balance.fig6-overlap``): the chapter's App. B.11 online SGD at the paper's
  batch 200 for 2.6e5 steps, 5 seeds; each run measures the pairs' log gaps ``log(g_K^i / g_Q^i)`` over the
  checkpoints at 2.2e5, 2.4e5 and 2.6e5 steps.
- ``fig4-batch256`` (rows ``induction_subspace.hypothesis2`` and ``hypothesis2-after-exit``): Fig. 4 at App. D's
  setting, standard and three-parameter SGD from zero on the same data stream, 3 seeds; each run measures both
  plateau exits and the ratio of the two 20-step mean losses after them.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.util
import json
import math
import os
import platform
import subprocess
import sys
import time
from importlib import resources
from pathlib import Path

import numpy as np

from icllib import config
from icllib.claim_registry import registry_document
from icllib.validation import one_of

ARCHIVE = ("results", "deciding")
COMMIT_VARIABLE = "ICLLIB_COMMIT"  # where the checkout that runs has no .git (a copy sent to a GPU machine)

# --- The experiments' settings, named once ---------------------------------------------------------------

# App. E (Sec. 2.1): D = D_H = 2048, 300 AdamW steps (lr 1e-3, weight decay 0.01) of 512 fresh sequences.
STANDARD_PAPER = {"D": 2048, "steps": 300, "batch": 512}
STANDARD_INITIALISATIONS = ("gpt2", "pytorch")
STANDARD_SEEDS = (1, 2, 3)
LEARNED_ACCURACY = 0.9        # "learns the task", as in the chapter's check
SUBDIAGONAL_SHARE = 0.9       # "dominated by the subdiagonal": the share of the task's adjacent position pairs
                              # (i - 1, i) whose query row has its causal arg-max at the previous position
TASK_BLOCK, TASK_LENGTH = 32, 17   # App. E's task as isp.standard_task draws it: 17 tokens at an offset in 32

# App. B.11 at the paper's batch: the chapter's full-mode setting, named once as icllib.balance.model.B11_PAPER (read
# when a run starts, through _chapter_module).
B11_DECIDING_STEPS = 260_000
B11_OVERLAP_CHECKPOINTS = (220_000, 240_000, 260_000)
B11_SEEDS = (1, 2, 3, 4, 5)   # seed s draws its weights from torch_generator(2s - 1), its data from (2s): seed 1
                              # is the chapter's own pair (1, 2)

# Fig. 4 at App. D's setting: D = 32, N = 16, B = 256, learning rate 1 (on the per-coordinate loss, note
# induction_subspace.N3); the paper's step range is not in its text.
FIG4_PAPER = {"D": 32, "N": 16, "batch": 256, "lr": 1.0, "steps": 600}
FIG4_SEEDS = (1, 2, 3)
EXIT_RATIO = (0.75, 1.0)      # "unaffected, even slightly accelerated": three-parameter exit over standard exit
AFTER_EXIT_WINDOW = 20        # steps per mean loss
AFTER_EXIT_ALIKE, AFTER_EXIT_APART = 2.0, 10.0   # "strikingly similar": within a factor 2; apart: above 10 at the end

EXPERIMENTS = {
    "standard-transformer-2048": {
        "chapter": "induction_subspace_standard",
        "rows": ("induction_subspace.standard-transformer-paper-width",),
        "runs": tuple(f"{init}-seed{seed}" for init in STANDARD_INITIALISATIONS for seed in STANDARD_SEEDS),
    },
    "standard-transformer-2048-scores": {
        "chapter": "induction_subspace_standard",
        "rows": ("induction_subspace.fig2-subdiagonal",),
        "runs": tuple(f"gpt2-seed{seed}" for seed in STANDARD_SEEDS),
    },
    "b11-batch200-seeds": {
        "chapter": "balance",
        "rows": ("balance.fig6-overlap",),
        "runs": tuple(f"seed{seed}" for seed in B11_SEEDS),
    },
    "fig4-batch256": {
        "chapter": "induction_subspace",
        "rows": ("induction_subspace.hypothesis2", "induction_subspace.hypothesis2-after-exit"),
        "runs": tuple(f"seed{seed}" for seed in FIG4_SEEDS),
    },
}


def _chapter_module(name: str):
    """The chapter module a runner needs, imported when it runs: a chapter that only reads the archive (through
    :func:`archived_runs`) must not depend on the other chapters' code, whose edits would re-execute it (the
    execution key follows the imports it can read in the source)."""
    return importlib.import_module(f"icllib.{name}")


# --- One run of each experiment --------------------------------------------------------------------------

def run_standard(init: str, seed: int, *, device=None, D: int | None = None, steps: int | None = None,
                 batch: int | None = None) -> dict:
    """App. E's recipe with initialisation ``init`` and seed ``seed`` on ``device`` (default ``ICLLIB_DEVICE``);
    the size arguments exist for the tests (default: the paper's). Returns the measured numbers."""
    isp = _chapter_module("induction.subspace")

    init = one_of("init", init, isp.INITIALISATIONS)
    target = config.device(device) if not hasattr(device, "type") else device
    D, steps, batch = (value if value is not None else STANDARD_PAPER[name]
                       for name, value in (("D", D), ("steps", steps), ("batch", batch)))
    untrained = isp.StandardTransformer(D, generator=config.torch_generator(seed, device=target), init=init)
    model, losses = isp.train_standard(D, steps=steps, batch=batch, init=init,
                                       generator=config.torch_generator(seed, device=target))
    scores = model.positional_scores()
    margins = isp.subdiagonal_margins(scores).numpy()
    return {
        "settings": {"init": init, "seed": seed, "D": D, "steps": steps, "batch": batch, "lr": 1e-3,
                     "weight_decay": 0.01},
        "loss_first": float(losses[0]),
        "loss_last20": float(losses[-20:].mean()),
        "accuracy": isp.standard_accuracy(model, 4096, generator=config.torch_generator(10_000 + seed)),
        "previous_weight": isp.previous_position_weight(model.previous_position_attention()),
        "previous_weight_untrained": isp.previous_position_weight(untrained.previous_position_attention()),
        "losses": [round(float(value), 5) for value in losses],
        "subdiagonal_rows": subdiagonal_reading(margins),
        "positional_scores": scores.double().numpy().round(6).tolist(),  # Fig. 2's block, for a reader to redraw
    }


def pair_use(block: int = TASK_BLOCK, length: int = TASK_LENGTH) -> np.ndarray:
    """For each query position ``i = 1 .. block - 1``, how many of the task's offsets ``0 .. block - length`` give
    a sequence holding both ``i - 1`` and ``i``: how often training sees the pair (1 at the block's ends, up to
    ``block - length + 1`` in its middle)."""
    i = np.arange(1, block)
    return np.minimum(block - length, i - 1) - np.maximum(0, i - length + 1) + 1


def subdiagonal_reading(margins) -> dict:
    """Fig. 2's subdiagonal read from the per-row margins of :func:`icllib.induction.subspace.subdiagonal_margins`:
    the rows whose arg-max is the previous position, their share weighted by :func:`pair_use`, and the smallest
    ``|margin|``, how far the nearest row is from flipping (for float32 results on other machines)."""
    margins = np.asarray(margins, dtype=float)
    use = pair_use(len(margins) + 1, TASK_LENGTH)
    return {"argmax_at_previous": int((margins > 0).sum()), "rows": len(margins),
            "share_by_use": round(float(use[margins > 0].sum() / use.sum()), 6),
            "nearest_flip": round(float(np.abs(margins).min()), 6), "margins": margins.round(6).tolist()}


def overlap_reading(run: dict, at=B11_OVERLAP_CHECKPOINTS) -> dict:
    """Fig. 6's overlap in the book's reading (note balance.N7), over the checkpoints ``at`` of a run of
    :func:`icllib.balance.model.train_attention_sgd`: per pair, the mean log gap ``L_i`` of ``log(g_K^i / g_Q^i)``
    and its standard error ``s_i`` (from the chunk errors, independent checkpoints); the pairs within a factor 2
    (``|L_i| < log 2``) and those beyond it by more than two standard errors (``|L_i| - log 2 > 2 s_i``).
    ``None`` when the run did not measure every checkpoint of ``at`` (it diverged first)."""
    checkpoints = list(np.asarray(run["checkpoints"]))
    if not set(at) <= set(checkpoints):
        return None
    rows = [checkpoints.index(step) for step in at]
    gK, gQ = np.asarray(run["gK"])[rows], np.asarray(run["gQ"])[rows]
    if not (np.isfinite(gK).all() and np.isfinite(gQ).all()):
        return None
    log_se = np.sqrt((np.asarray(run["gK_se"])[rows] / gK) ** 2 + (np.asarray(run["gQ_se"])[rows] / gQ) ** 2)
    gap = np.log(gK / gQ).mean(axis=0)
    se = np.sqrt((log_se**2).sum(axis=0)) / len(rows)
    excess = np.abs(gap) - math.log(2)
    return {"log_gap": gap.round(4).tolist(), "log_gap_se": se.round(4).tolist(),
            "within_factor_2": int((excess < 0).sum()), "beyond_two_se": int((excess > 2 * se).sum())}


def run_b11(seed: int, *, device=None, steps: int = B11_DECIDING_STEPS, g_samples: int | None = None,
            checkpoint_every: int | None = None) -> dict:
    """The chapter's App. B.11 run at batch 200 with seed ``seed`` on ``device`` (default ``ICLLIB_DEVICE``), to
    ``steps`` or its divergence; the smaller arguments exist for the tests. Returns the measured numbers."""
    balance = _chapter_module("balance.model")

    target = config.device(device) if not hasattr(device, "type") else device
    settings = dict(balance.B11_PAPER, steps=steps, seed=seed)
    if g_samples is not None:
        settings.update(g_samples=g_samples, g_chunk=g_samples // 2)
    if checkpoint_every is not None:
        settings["checkpoint_every"] = checkpoint_every
    run = balance.train_attention_sgd(
        balance.init_attention(generator=config.torch_generator(2 * seed - 1, device=target),
                               imbalance=settings["imbalance"]),
        lr=settings["lr"], batch_size=settings["batch_size"], steps=steps,
        generator=config.torch_generator(2 * seed, device=target), checkpoint_every=settings["checkpoint_every"],
        g_samples=settings["g_samples"], g_chunk=settings["g_chunk"])
    at = B11_OVERLAP_CHECKPOINTS if steps == B11_DECIDING_STEPS else tuple(int(k) for k in run["checkpoints"][-3:])
    finite = run["loss"][np.isfinite(run["loss"])]
    return {
        "settings": settings,
        "diverged_at": None if run["diverged_at"] is None else int(run["diverged_at"]),
        "loss_first100": float(finite[:100].mean()),
        "loss_last": float(finite[-settings["checkpoint_every"]:].mean()),
        "overlap_at": list(at),
        "overlap": overlap_reading(run, at),
        "series": {key: np.asarray(run[key]).round(6).tolist() for key in ("checkpoints", "gK", "gQ", "gK_se",
                                                                           "gQ_se")},
    }


def run_fig4(seed: int, *, device=None, D: int | None = None, N: int | None = None, steps: int | None = None,
             batch: int | None = None) -> dict:
    """Fig. 4 at App. D's setting with seed ``seed``: standard and three-parameter SGD from zero on the same data
    stream (:func:`icllib.induction.subspace.train_sgd`, CPU code); the sizes exist for the tests (default: the
    paper's). Returns the measured numbers: each run's plateau exit (first batch loss at most D/2, ``None`` if it
    never comes), the after-exit reading (:func:`after_exit_reading`) and the losses."""
    isp = _chapter_module("induction.subspace")
    if str(config.device(device) if not hasattr(device, "type") else device) != "cpu":
        raise ValueError(f"device must be the CPU for fig4-batch256 (train_sgd runs there), got {device!r}")
    settings = {name: value if value is not None else FIG4_PAPER[name]
                for name, value in (("D", D), ("N", N), ("steps", steps), ("batch", batch))}
    settings.update(lr=FIG4_PAPER["lr"], seed=seed)
    losses, exits = {}, {}
    for training in ("full", "three"):
        run = isp.train_sgd(settings["N"], settings["D"], steps=settings["steps"], batch=settings["batch"],
                            lr=settings["lr"], generator=config.torch_generator(seed), training=training)
        losses[training] = np.asarray(run["loss"], dtype=float)
        below = np.flatnonzero(losses[training] <= settings["D"] / 2)
        exits[training] = int(below[0]) if len(below) else None
    return {"settings": settings, "exits": exits,
            "after_exit": after_exit_reading(losses["full"], losses["three"], exits),
            "losses": {training: [round(float(value), 5) for value in loss] for training, loss in losses.items()}}


def after_exit_reading(full, three, exits: dict, window: int = AFTER_EXIT_WINDOW) -> dict | None:
    """The ratio of the ``window``-step mean losses, standard (``full``) over three-parameter (``three``), over
    every window that starts at or after the later of the two plateau ``exits``: its largest, smallest and last
    value. ``None`` when a run never left the plateau or no window fits after the exits."""
    if exits["full"] is None or exits["three"] is None:
        return None
    start, kernel = max(exits.values()), np.ones(window) / window
    means = [np.convolve(np.asarray(loss, dtype=float), kernel, mode="valid")[start:] for loss in (full, three)]
    if not len(means[0]):
        return None
    ratio = means[0] / means[1]
    return {"from_step": int(start), "largest": round(float(ratio.max()), 6), "smallest": round(float(ratio.min()), 6),
            "last": round(float(ratio[-1]), 6)}


def run_b11_seeds(seeds, *, device=None, steps: int = B11_DECIDING_STEPS, g_samples: int | None = None,
                  checkpoint_every: int | None = None) -> dict[int, dict]:
    """:func:`run_b11` for several seeds at once, one step of all of them per step of the loop: on a GPU five
    processes of one seed each share the chip by time slices (134 steps a second each on an H200, seed 2's
    archived run), while here the step is one batched call (:func:`torch.func.vmap` of the chapter's
    hand-derived gradient), so the cost of launching kernels is paid once for every seed. Each seed draws from
    its own generators exactly as in :func:`run_b11`, in the same order; only the summation order of the batched
    kernels differs, so a seed's numbers agree with its single run to float32 rounding over the first steps (the
    unit test), not bit for bit.

    Returns ``{seed: measured}`` in the format of :func:`run_b11`. A seed whose loss stops being finite is
    recorded as diverged at that step; it keeps stepping (as NaN, alone: the seeds share no arithmetic) and
    measures nothing after it.
    """
    import torch
    from torch.func import vmap

    balance = _chapter_module("balance.model")

    seeds = [int(seed) for seed in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct seed numbers, got {seeds!r}")
    target = config.device(device) if not hasattr(device, "type") else device
    settings = _b11_settings(balance.B11_PAPER, steps, g_samples, checkpoint_every)
    batch, lr, every = settings["batch_size"], settings["lr"], settings["checkpoint_every"]
    data = [config.torch_generator(2 * seed, device=target) for seed in seeds]
    weights = torch.stack([torch.stack([initial[name] for name in balance.PARAM_NAMES]) for initial in (
        balance.init_attention(generator=config.torch_generator(2 * seed - 1, device=target),
                               imbalance=settings["imbalance"]) for seed in seeds)])     # (seeds, 6, width, width)
    step = vmap(lambda w, X, y: balance._loss_and_grads(w.unbind(), X, y))
    loss = torch.full((steps, len(seeds)), math.nan, device=target, dtype=weights.dtype)
    diverged = [None] * len(seeds)
    series = [{"checkpoints": [], "gK": [], "gQ": [], "gK_se": [], "gQ_se": []} for _ in seeds]

    def checkpoint(k):
        for index, generator in enumerate(data):
            if diverged[index] is not None:
                continue
            p = dict(zip(balance.PARAM_NAMES, weights[index]))
            chunks = []
            for _ in range(settings["g_samples"] // settings["g_chunk"]):
                X, y = balance.icl_regression_batch(settings["g_chunk"], generator=generator)
                chunks.append(balance.g_terms(balance.per_sample_grads(p, X, y)))
            gK, gQ = (torch.stack([chunk[side] for chunk in chunks]).double().cpu() for side in (0, 1))
            for key, value in (("gK", gK.mean(0)), ("gQ", gQ.mean(0)), ("gK_se", gK.std(0) / len(chunks) ** 0.5),
                               ("gQ_se", gQ.std(0) / len(chunks) ** 0.5)):
                series[index][key].append(value.numpy())
            series[index]["checkpoints"].append(k)

    for k in config.progress(range(steps), total=steps, desc=f"SGD batch={batch}, seeds {seeds}"):
        if k % every == 0:
            checkpoint(k)
        drawn = [balance.icl_regression_batch(batch, generator=generator) for generator in data]
        X = torch.stack([X for X, _ in drawn]).reshape(len(seeds), 2, batch // 2, *drawn[0][0].shape[1:])
        y = torch.stack([y for _, y in drawn]).reshape(len(seeds), 2, batch // 2)
        losses, grads = step(weights, X, y)
        loss[k] = losses.mean(-1)
        if not bool(torch.isfinite(loss[k]).all()):
            for index, finite in enumerate(torch.isfinite(loss[k]).tolist()):
                if not finite and diverged[index] is None:
                    diverged[index] = k
        weights = weights - lr * grads.mean(1)
    checkpoint(steps)

    return _b11_seed_results(seeds, series, loss.double().cpu().numpy(), diverged, settings)


def _b11_settings(paper: dict, steps: int, g_samples: int | None, checkpoint_every: int | None) -> dict:
    """The settings of a batched B.11 run: the chapter's ``paper`` setting, with the sizes the tests pass."""
    settings = dict(paper, steps=steps)
    if g_samples is not None:
        settings.update(g_samples=g_samples, g_chunk=g_samples // 2)
    if checkpoint_every is not None:
        settings["checkpoint_every"] = checkpoint_every
    return settings


def _b11_seed_results(seeds: list[int], series: list[dict], loss, diverged: list, settings: dict) -> dict[int, dict]:
    """:func:`run_b11_seeds`'s ``{seed: measured}`` from each seed's checkpoints, the loss of every step
    (steps x seeds) and the step each seed diverged at."""
    steps, every = settings["steps"], settings["checkpoint_every"]
    results = {}
    for index, seed in enumerate(seeds):
        run = {key: np.asarray(value) for key, value in series[index].items()}
        at = B11_OVERLAP_CHECKPOINTS if steps == B11_DECIDING_STEPS else tuple(int(k) for k in run["checkpoints"][-3:])
        trace = loss[:diverged[index], index] if diverged[index] is not None else loss[:, index]
        results[seed] = {
            "settings": dict(settings, seed=seed, batched_with=seeds),
            "diverged_at": diverged[index],
            "loss_first100": float(trace[:100].mean()),
            "loss_last": float(trace[-every:].mean()),
            "overlap_at": list(at),
            "overlap": overlap_reading(run, at) if len(run["checkpoints"]) else None,
            "series": {key: np.asarray(value).round(6).tolist() for key, value in run.items()},
        }
    return results


# --- The rules ---------------------------------------------------------------------------------------------

def _majority(runs: list[dict], passes, inits=STANDARD_INITIALISATIONS) -> dict[str, int]:
    return {init: sum(bool(passes(run)) for run in runs if run["settings"]["init"] == init) for init in inits}


def rule_verdict(row: str, runs: list[dict]) -> tuple[str, str]:
    """The verdict the pre-registered rule of ``row`` gives for the archived ``runs`` of its experiment, and why.

    Raises ``ValueError`` naming ``row`` if it has no rule here, and naming ``runs`` if the experiment's runs
    are not all there (a rule reads the whole pre-registered set, never a part chosen afterwards).
    """
    experiment = next((name for name, spec in EXPERIMENTS.items() if row in spec["rows"]), None)
    if experiment is None:
        raise ValueError(f"row {row!r} has no deciding rule; rows with one: "
                         f"{', '.join(r for spec in EXPERIMENTS.values() for r in spec['rows'])}")
    have = sorted(run["run"] for run in runs)
    if have != sorted(EXPERIMENTS[experiment]["runs"]):
        raise ValueError(f"runs must be the {len(EXPERIMENTS[experiment]['runs'])} runs of {experiment} "
                         f"({', '.join(EXPERIMENTS[experiment]['runs'])}), got {', '.join(have) or 'none'}")
    if experiment == "standard-transformer-2048":
        counts = _majority(runs, lambda run: run["accuracy"] >= LEARNED_ACCURACY)
        held = [init for init, count in counts.items() if count >= 2]
        why = "; ".join(f"{init}: {count} of 3 seeds with accuracy >= {LEARNED_ACCURACY}" for init, count in
                        counts.items())
        verdict = {2: "reproduced", 1: "clarified", 0: "not reproduced"}[len(held)]
        return verdict, why
    if experiment == "standard-transformer-2048-scores":
        return _subdiagonal_verdict(runs)
    if experiment == "fig4-batch256":
        return _fig4_verdict(row, runs)
    readings = [run["overlap"] for run in runs]
    overlaps = sum(1 for reading in readings if reading is not None and reading["within_factor_2"] == 12)
    misses = sum(1 for reading in readings if reading is not None and reading["beyond_two_se"] > 0)
    undecided = sum(reading is None for reading in readings)
    why = (f"{overlaps} of 5 seeds with all 12 pairs within a factor 2, {misses} with a pair beyond it by more "
           f"than two standard errors, {undecided} diverged before {B11_OVERLAP_CHECKPOINTS[-1]} steps")
    if overlaps >= 4:
        return "reproduced", why
    if misses == 5:
        return "not reproduced", why
    return "inconclusive", why


def _subdiagonal_verdict(runs: list[dict]) -> tuple[str, str]:
    """The rule of ``fig2-subdiagonal`` (2026-11-27): of the runs that learned the task, those whose positional
    scores have the previous position as the causal arg-max in rows holding at least ``SUBDIAGONAL_SHARE`` of the
    task's adjacent pairs. Only runs at the paper's setting count."""
    off = [run["run"] for run in runs if any(run["settings"].get(key) != value for key, value in STANDARD_PAPER.items())]
    if off:
        raise ValueError(f"runs must be at the paper's setting {STANDARD_PAPER}; not: {', '.join(off)}")
    learned = [run for run in runs if run["accuracy"] >= LEARNED_ACCURACY]
    shown = [run for run in learned if run["subdiagonal_rows"]["share_by_use"] >= SUBDIAGONAL_SHARE]
    why = (f"{len(learned)} of {len(runs)} runs learned the task (accuracy >= {LEARNED_ACCURACY}); "
           f"{len(shown)} of them have the previous position as the arg-max of the positional scores in rows "
           f"holding at least {SUBDIAGONAL_SHARE:.0%} of the task's adjacent pairs (" + ", ".join(
               f"{run['run']}: {run['subdiagonal_rows']['share_by_use']:.0%}, "
               f"{run['subdiagonal_rows']['argmax_at_previous']} of {run['subdiagonal_rows']['rows']} rows"
               for run in runs) + ")")
    if len(shown) >= 2:
        return "reproduced", why
    if len(learned) - len(shown) >= 2:
        return "not reproduced", why
    return "inconclusive", why


def _fig4_reading(row: str, run: dict) -> str:
    """One seed of fig4-batch256 read by ``row``'s rule: ``alike``, ``differs`` or ``undecided``."""
    if row == "induction_subspace.hypothesis2":
        full, three = run["exits"]["full"], run["exits"]["three"]
        if full is None and three is None:
            return "undecided"
        if full is None or three is None:
            return "differs"
        return "alike" if EXIT_RATIO[0] <= three / full <= EXIT_RATIO[1] else "differs"
    reading = run["after_exit"]
    if reading is None:
        return "undecided"
    if reading["largest"] <= AFTER_EXIT_ALIKE and reading["smallest"] >= 1 / AFTER_EXIT_ALIKE:
        return "alike"
    return "differs" if reading["last"] > AFTER_EXIT_APART else "undecided"


def _fig4_verdict(row: str, runs: list[dict]) -> tuple[str, str]:
    """The rules of ``hypothesis2`` and ``hypothesis2-after-exit`` (2026-11-27): at least 2 of the 3 seeds alike,
    reproduced; at least 2 that differ, not reproduced; else inconclusive. Only runs at App. D's setting count."""
    off = [run["run"] for run in runs
           if any(run["settings"].get(key) != value for key, value in FIG4_PAPER.items())]
    if off:
        raise ValueError(f"runs must be at App. D's setting {FIG4_PAPER}; not: {', '.join(off)}")
    readings = {run["run"]: _fig4_reading(row, run) for run in runs}
    alike, differs = (sum(value == kind for value in readings.values()) for kind in ("alike", "differs"))
    why = "; ".join(f"{name}: {value} (exits {run['exits']}, after the exit {run['after_exit']})"
                    for (name, value), run in zip(readings.items(), runs))
    if alike >= 2:
        return "reproduced", why
    if differs >= 2:
        return "not reproduced", why + " (learning rate 1 on the per-coordinate loss is the book's reading, note N3)"
    return "inconclusive", why


# --- The archive -------------------------------------------------------------------------------------------

def book_root() -> Path:
    return Path(__file__).resolve().parents[2]


def archive_folder(experiment: str, root: Path | None = None) -> Path:
    experiment = one_of("experiment", experiment, EXPERIMENTS)
    return (Path(root) if root is not None else book_root()).joinpath(*ARCHIVE, experiment)


def registry_rows(chapter: str, registry_folder: Path | None = None) -> dict[str, dict]:
    """The claim rows of one chapter's registry file, by id, as written (with their deciding fields)."""
    folder = Path(registry_folder) if registry_folder is not None else Path(str(resources.files("icllib") / "registry"))
    document = registry_document(folder / f"{chapter}.yaml")  # the registry's one loader (icllib.claims)
    return {entry.get("id"): entry for entry in document.get("claims") or []}


def rule_hash(rule: str) -> str:
    """SHA-256 of a rule's text with its whitespace normalised (YAML folding must not count as an edit)."""
    return hashlib.sha256(" ".join(rule.split()).encode()).hexdigest()


def _rule_hashes(experiment: str, registry_folder: Path | None = None) -> dict[str, str]:
    rows = registry_rows(EXPERIMENTS[experiment]["chapter"], registry_folder)
    hashes = {}
    for row in EXPERIMENTS[experiment]["rows"]:
        rule = rows.get(row, {}).get("deciding_rule")
        if not isinstance(rule, str) or not rule.strip():
            raise ValueError(f"row {row!r} has no deciding_rule in the registry: a deciding run needs its rule "
                             "committed first")
        hashes[row] = rule_hash(rule)
    return hashes


def _commit(root: Path) -> str:
    if os.environ.get(COMMIT_VARIABLE):  # a machine without the checkout's .git cannot tell a dirty tree
        return f"{os.environ[COMMIT_VARIABLE]} (declared by the runner)"
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "src"], capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + ("+dirty" if dirty else "")


def measure_runs(experiment: str, names, *, device=None, **sizes) -> dict[str, dict]:
    """One task of the executor (:mod:`icllib.executor`): the runs ``names`` of ``experiment`` on ``device``
    (default ``ICLLIB_DEVICE``), on whichever machine runs the task; several seeds of ``b11-batch200-seeds`` run
    in one batched loop. Returns each run's record as it is archived, but for its rule's hash: the commit, date
    (when it ended), device, machine and wall time are those of where it ran."""
    import torch

    experiment = one_of("experiment", experiment, EXPERIMENTS)
    if isinstance(names, str) or not names:
        raise ValueError(f"names must be a list of run names of {experiment}, got {names!r}")
    names = [one_of("names", name, EXPERIMENTS[experiment]["runs"]) for name in names]
    target = config.device(device) if not hasattr(device, "type") else device
    records = {}

    def record(name, measured, started):
        records[name] = {"experiment": experiment, "run": name, "commit": _commit(book_root()),
                         "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                         "device": config.device_description(target),
                         "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                         "versions": {"python": platform.python_version(), "torch": torch.__version__},
                         "wall_s": round(time.perf_counter() - started, 1), **measured}

    if experiment == "b11-batch200-seeds" and len(names) > 1:  # all seeds in one batched loop
        started = time.perf_counter()
        measured = run_b11_seeds([int(name.removeprefix("seed")) for name in names], device=target, **sizes)
        for name in names:
            record(name, measured[int(name.removeprefix("seed"))], started)
        return records
    for name in names:
        started = time.perf_counter()
        if experiment.startswith("standard-transformer-2048"):
            init, _, seed = name.partition("-seed")
            record(name, run_standard(init, int(seed), device=target, **sizes), started)
        elif experiment == "fig4-batch256":
            record(name, run_fig4(int(name.removeprefix("seed")), device=target, **sizes), started)
        else:
            record(name, run_b11(int(name.removeprefix("seed")), device=target, **sizes), started)
    return records


def run_and_archive(experiment: str, names=None, *, device=None, root: Path | None = None, executor=None,
                    jobs: int = 1, batched: bool = True, **sizes) -> list[Path]:
    """Run the named runs of ``experiment`` (default: all not yet archived) and write each to its own file as
    soon as its task ends. Checks first that the rules exist and the folder is writable.

    Each run is a task of ``executor`` (:func:`icllib.executor.run_tasks`: ``local``, a pool of ``jobs``
    processes, by default; ``submitit`` for Slurm), except that the seeds of ``b11-batch200-seeds`` share one
    batched task unless ``batched`` is false. A failed task is named at the end (``TasksFailed``), after the other
    runs were archived. The RO-Crate of the archives (``tools/ro_crate.py``) is written again at the end."""
    from icllib.executor import Task, executor_kind, run_tasks, write_atomically

    experiment = one_of("experiment", experiment, EXPERIMENTS)
    known = EXPERIMENTS[experiment]["runs"]
    folder = archive_folder(experiment, root)
    names = [name for name in known if not (folder / f"{name}.json").is_file()] if names is None else list(names)
    for name in names:
        one_of("names", name, known)
    hashes = _rule_hashes(experiment)
    folder.mkdir(parents=True, exist_ok=True)
    if not os.access(folder, os.W_OK):
        raise ValueError(f"root: the archive folder {folder} is not writable")
    if executor_kind(executor) == "local" and not hasattr(device, "type"):
        config.device(device)  # a bad device stops here, not in a task (a Slurm node checks its own)
    groups = [names] if experiment == "b11-batch200-seeds" and batched and len(names) > 1 else [[n] for n in names]
    tasks = [Task(f"{experiment} {','.join(group)}", "icllib.deciding:measure_runs", (experiment, group),
                  dict(device=device, **sizes)) for group in groups]
    written = []

    def archive(task, records):
        for name, measured in records.items():
            path = write_atomically((folder / f"{name}.json").absolute(), json.dumps(
                {**measured, "rule_sha256": hashes}, sort_keys=True, indent=1) + "\n")
            print(f"[deciding] {experiment} {name}: {measured['wall_s']} s on {measured['device']}; wrote {path}",
                  flush=True)
            written.append(path)

    try:
        if tasks:
            run_tasks(tasks, archive, executor=executor, jobs=jobs)
    finally:
        _write_crate(root)
    return written


def _write_crate(root: Path | None) -> None:
    """The archives' RO-Crate written again by ``tools/ro_crate.py``, where the checkout has that tool."""
    tool = book_root() / "tools" / "ro_crate.py"
    if tool.is_file():
        spec = importlib.util.spec_from_file_location("ro_crate", tool)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.write_crate((Path(root) if root is not None else book_root()) / ARCHIVE[0])


def archived_runs(experiment: str, root: Path | None = None) -> list[dict]:
    """Every archived run of ``experiment``; raises ``ValueError`` naming a file that is not a run of it."""
    runs = []
    for path in sorted(archive_folder(experiment, root).glob("*.json")):
        try:
            run = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not a JSON file ({error})") from None
        for field in ("experiment", "run", "rule_sha256", "commit", "device", "settings"):
            if field not in run:
                raise ValueError(f"{path}: field {field!r} is missing")
        if run["experiment"] != experiment or path.stem != run["run"]:
            raise ValueError(f"{path}: holds run {run['run']!r} of {run['experiment']!r}")
        runs.append(run)
    return runs


def verdicts(root: Path | None = None, registry_folder: Path | None = None) -> dict[str, dict]:
    """Per row with a deciding rule: the registry's verdict, and the rule's verdict when every run is archived
    under the rule's current text (else ``None``, with what is missing)."""
    table = {}
    for experiment, spec in EXPERIMENTS.items():
        runs = archived_runs(experiment, root)
        rows = registry_rows(spec["chapter"], registry_folder)
        hashes = _rule_hashes(experiment, registry_folder)
        for row in spec["rows"]:
            stale = [run["run"] for run in runs if run["rule_sha256"].get(row) != hashes[row]]
            missing = sorted(set(spec["runs"]) - {run["run"] for run in runs})
            entry = {"registry": rows[row]["verdict"], "rule": None, "why": ""}
            if stale:
                entry["why"] = f"runs made under another text of the rule: {', '.join(stale)}"
            elif missing:
                entry["why"] = f"runs not archived yet: {', '.join(missing)}"
            else:
                entry["rule"], entry["why"] = rule_verdict(row, runs)
            table[row] = entry
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m icllib.deciding", description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="run an experiment's runs and archive each")
    run.add_argument("experiment", choices=sorted(EXPERIMENTS))
    run.add_argument("--runs", help="comma-separated run names (default: those not archived)")
    run.add_argument("--device", default=None, help="cpu, cuda, cuda:N or auto (default: ICLLIB_DEVICE)")
    run.add_argument("--executor", default=None, help="local (default) or submitit (default: ICLLIB_EXECUTOR)")
    run.add_argument("--jobs", type=int, default=1, help="processes of the local executor (default 1)")
    run.add_argument("--no-batch", action="store_true", help="one task per seed of b11-batch200-seeds")
    commands.add_parser("verdicts", help="each row's verdict and its rule's")
    arguments = parser.parse_args(argv)
    if arguments.command == "run":
        names = arguments.runs.split(",") if arguments.runs else None
        from icllib.executor import TasksFailed

        try:
            run_and_archive(arguments.experiment, names, device=arguments.device, executor=arguments.executor,
                            jobs=arguments.jobs, batched=not arguments.no_batch)
        except TasksFailed as error:
            print(f"[deciding] {error}", file=sys.stderr, flush=True)
            return 1
        return 0
    for row, entry in verdicts().items():
        print(f"{row}: registry {entry['registry']}, rule {entry['rule']} ({entry['why']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
