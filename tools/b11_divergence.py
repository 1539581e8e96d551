"""Where and why the full-mode B.11 run of the balance chapter diverges, and whether float64 would save it.

    python tools/b11_divergence.py            # about an hour on one CPU core (2026-11-26: 60 min, AMD EPYC)
    python tools/b11_divergence.py --seed 2 --device cuda   # the deciding run's seed 2, on an H200 as archived

Seed s is the deciding runs' (icllib.deciding.run_b11): weights from torch_generator(2s - 1), data from
torch_generator(2s), on ``--device``; seed 1 on the CPU is the chapter's own run. A seed run on a GPU drew its
batches from CUDA's generator (Philox), which the CPU cannot reproduce: its replay needs a GPU, and the same
model of GPU (seed 2: an NVIDIA H200), since another one may sum in another order and so take another path.
Before replaying, the rerun is compared with the archive it must match: the chapter's loss trace for seed 1 on
the CPU, and for a deciding seed its archive ``results/deciding/b11-batch200-seeds/seed<s>.json`` (the step its
loss stopped being finite and the mean loss of its first 100 steps); a mismatch stops the script.

Replays the chapter's online SGD at the paper's setting (batch 200, lr 4e-3, the chapter's seeds and its
checkpoints' draws from the generator, without estimating g there) and stops at the first non-finite loss.
Its loss agrees with the archived run's trace (``results/full/balance.json``, block means of 1000 steps), which
the script checks. From the weights and the generator 2000-3000 steps before the divergence it then replays
the same batches twice, in float32 (the chapter's arithmetic) and in float64, and prints the last steps of
each: the loss, the largest entry of the gradient and the norms of the six weight matrices, and at the paper's
lr keeps them in ``results/replays/b11-divergence-seed<s>.json`` (commit, device, date) for the ledger to cite.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from icllib.balance import model as balance
from icllib.claims import archived_arrays
from icllib.config import torch_generator

# The chapter's full-mode cell (notebooks/balance.py, section 5).
BATCH, LR, CHECKPOINT_EVERY, G_SAMPLES, G_CHUNK = (balance.B11_PAPER[key] for key in (
    "batch_size", "lr", "checkpoint_every", "g_samples", "g_chunk"))
STEPS = balance.B11_FULL_STEPS
BLOCK = 1000  # the archived loss trace holds means over blocks of this many steps
HALVES = (2, BATCH // 2)


def step(params, X, y, lr):
    """One step of the chapter's SGD (the mean gradient of two half batches, in the same order of operations):
    the loss, the largest entry of the gradient and the new weights."""
    losses, grads = balance.attention_loss_and_grads(params, X.reshape(*HALVES, *X.shape[1:]), y.reshape(HALVES))
    gradient = {name: (grads[name][0] + grads[name][1]) / 2 for name in balance.PARAM_NAMES}
    largest = max(float(g.abs().max()) for g in gradient.values())
    return float(losses.mean()), largest, {name: params[name] - lr * gradient[name] for name in params}


def run_to_divergence(lr, steps, seed=1, device=None):
    """The chapter's run (seed 1) or a deciding run's seed until its loss is not finite: that step (None if
    none), the per-step losses, and the weights and generator state at the start of the block two blocks
    before."""
    params = balance.init_attention(generator=torch_generator(2 * seed - 1, device=device),
                                    imbalance=balance.B11_PAPER["imbalance"])
    generator = torch_generator(2 * seed, device=device)
    snapshots, losses = [], np.full(steps, np.nan)
    for k in tqdm(range(steps), desc="B.11 SGD", mininterval=10):
        if k % CHECKPOINT_EVERY == 0:  # the g estimates' draws, so that the batches are the chapter's
            for _ in range(G_SAMPLES // G_CHUNK):
                balance.icl_regression_batch(G_CHUNK, generator=generator)
        if k % BLOCK == 0:
            snapshots = [*snapshots, (k, dict(params), generator.get_state())][-3:]
        losses[k], _, params = step(params, *balance.icl_regression_batch(BATCH, generator=generator), lr)
        if not math.isfinite(losses[k]):
            return k, losses, snapshots[0]
    return None, losses, snapshots[0]


def compare_with_archive(losses, archived=None):
    """The block means of the loss against the archived run's (``archived``, read from the archive if None),
    over the whole blocks before a non-finite loss."""
    if archived is None:
        series = archived_arrays("balance", "fig6")
        if series is None:
            print("no archived Fig. 6 series to compare with")
            return
        archived = series["loss"]
    finite = np.isfinite(losses)
    blocks = (len(losses) if finite.all() else int(np.argmin(finite))) // BLOCK
    ours = losses[: blocks * BLOCK].reshape(blocks, BLOCK).mean(axis=1)
    gap = np.max(np.abs(ours - archived[:blocks]) / archived[:blocks])
    print(f"loss block means against the archived run over {blocks} blocks: largest relative gap {gap:.1e}")
    if not gap < 1e-4:  # the archive rounds to 6 significant digits
        sys.exit("the replay is not the archived run")


def compare_with_deciding_archive(seed, diverged_at, losses, device, root=None):
    """The rerun of deciding seed ``seed`` against its archived run: the same step of divergence and the same mean
    loss over the first 100 steps (to float32 rounding). Stops the script on a mismatch or when the archived run
    ran on another kind of device (its batches came from another generator)."""
    path = (Path(root) if root else Path(__file__).resolve().parents[1]).joinpath(
        "results", "deciding", "b11-batch200-seeds", f"seed{seed}.json")
    if not path.is_file():
        print(f"no archived deciding run for seed {seed} ({path}): nothing to compare with")
        return
    archived = json.loads(path.read_text(encoding="utf-8"))
    kind = "cuda" if str(device).startswith("cuda") else "cpu"
    if ("cuda" in archived["device"]) != (kind == "cuda"):
        sys.exit(f"seed {seed} was archived on {archived['device']}: rerun it there (--device), not on {kind}")
    if kind == "cuda":
        here = torch.cuda.get_device_name(torch.device(device))
        print(f"archived on {archived['device']}; rerun on {here}")
        if here not in archived["device"]:
            print("another GPU model: its sums may run in another order; the comparison below decides")
    horizon = archived["settings"]["steps"]  # the archived run stopped there; this one may run longer
    needed = horizon if archived["diverged_at"] is None else archived["diverged_at"] + 1
    if len(losses) < needed:
        sys.exit(f"--steps must reach the archived run's {needed} steps to compare with it")
    diverged_at = diverged_at if diverged_at is not None and diverged_at < horizon else None
    first100 = float(np.mean(losses[np.isfinite(losses)][:100]))
    gap = abs(first100 - archived["loss_first100"]) / archived["loss_first100"]
    print(f"against {path.name}: diverged at {diverged_at} (archived {archived['diverged_at']}), mean loss of the"
          f" first 100 steps {first100:.6g} (archived {archived['loss_first100']:.6g}, relative gap {gap:.1e})")
    if diverged_at != archived["diverged_at"] or not gap < 1e-4:
        sys.exit("the rerun is not the archived run")


def replay(start, params, generator_state, until, dtype, lr):
    """The same batches from ``start`` on, in ``dtype``: (step, loss, largest gradient entry, weight norms)."""
    generator = torch.Generator(device=next(iter(params.values())).device)
    generator.set_state(generator_state)
    params, trace = {name: value.to(dtype) for name, value in params.items()}, []
    for k in range(start, until):
        X, y = balance.icl_regression_batch(BATCH, generator=generator)
        loss, largest, new_params = step(params, X.to(dtype), y.to(dtype), lr)
        trace.append((k, loss, largest, [float(params[name].norm()) for name in balance.PARAM_NAMES]))
        if not math.isfinite(loss):
            break
        params = new_params
    return trace


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lr", type=float, default=LR, help="a larger one diverges sooner (a smoke test)")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--seed", type=int, default=1, help="a deciding run's seed (1: the chapter's run)")
    parser.add_argument("--device", default=None, help="where to run (a seed's batches depend on it): cpu, cuda")
    args = parser.parse_args()
    torch.set_num_threads(1)
    diverged_at, losses, (start, params, generator_state) = run_to_divergence(args.lr, args.steps, args.seed,
                                                                              args.device)
    if args.lr == LR and args.seed == 1 and args.device in (None, "cpu"):
        compare_with_archive(losses)
    elif args.lr == LR:
        compare_with_deciding_archive(args.seed, diverged_at, losses, args.device or "cpu")
    if diverged_at is None:
        print(f"no divergence in {args.steps} steps")
        return
    print(f"the loss is not finite at step {diverged_at}; replaying from step {start}")
    replays = {}
    for dtype in (torch.float32, torch.float64):
        trace = replay(start, params, generator_state, diverged_at + 3000, dtype, args.lr)
        gradients = np.array([largest for _, loss, largest, _ in trace if math.isfinite(loss)])
        print(f"{dtype}: last step {trace[-1][0]} (loss {trace[-1][1]:.3g}); median largest gradient entry"
              f" {np.median(gradients):.2f}")
        for k, loss, largest, norms in trace[-12:]:
            print(f"  step {k}: loss {loss:.4g}, largest gradient entry {largest:.3g}, weight norms"
                  f" {[float(f'{n:.3g}') for n in norms]}")
        replays[str(dtype).removeprefix("torch.")] = {
            "last_step": trace[-1][0], "median_largest_gradient": float(np.median(gradients)),
            "last_steps": [{"step": k, "loss": finite_or_none(loss), "largest_gradient": finite_or_none(largest),
                            "weight_norms": [finite_or_none(norm) for norm in norms]} for k, loss, largest, norms in
                           trace[-12:]]}
    if args.lr == LR:
        archive(args.seed, args.device or "cpu", diverged_at, start, replays)


def finite_or_none(value):
    """A number JSON can hold: a non-finite one (the blow-up's last steps) as null."""
    return float(value) if math.isfinite(value) else None


def archive(seed, device, diverged_at, start, replays):
    """Keep a replay at the paper's lr: ``results/replays/b11-divergence-seed<s>.json``, with where it ran."""
    import platform
    import subprocess
    import time

    root = Path(__file__).resolve().parents[1]
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout
    where = torch.cuda.get_device_name(torch.device(device)) if str(device).startswith("cuda") else platform.machine()
    path = root / "results" / "replays" / f"b11-divergence-seed{seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"tool": "tools/b11_divergence.py", "seed": seed, "device": f"{device} ({where})",
              "commit": commit.strip() or "unknown", "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "torch": torch.__version__, "diverged_at": diverged_at, "replayed_from": start, "replays": replays}
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"archived in {path}")


if __name__ == "__main__":
    main()
