"""Kernels of the chapter induction_subspace.

1. The symmetrised gradient of a batch (2 D^2 rotated copies in one batched forward pass) against rotating and
   differentiating copy by copy.
2. One symmetrised-gradient step against the plain Monte-Carlo step of equal accuracy. Accuracy is the mean
   squared distance of the batch gradient from the population gradient at structured weights (estimated once,
   from 2048 symmetrised base sequences). The plain batch size of equal accuracy is measured here, at import,
   from 32 draws of each kind: symmetrising removes the off-subspace noise exactly but leaves the in-subspace
   noise of the few base sequences, so the equal-accuracy plain batch is far smaller than 2 D^2 x base.
"""

import numpy as np
import torch

from icllib.induction import model as ic
from icllib.induction import subspace as isp
from icllib.config import torch_generator

D, N, BASE = 8, 4, 4
_generator = torch_generator(0)
X, Y = ic.sample_icl_batch(D, N, BASE, generator=_generator)
_c = 0.3 * torch.randn(19, dtype=torch.float64, generator=_generator)
W = ic.structured_weights(_c, D)


def symmetrised_fast():
    """One batched forward and backward pass over the 2 D^2 x BASE rotated sequences."""
    return isp.loss_and_grads(*isp.symmetrise(X, Y), *W)[1]


def symmetrised_reference():
    """The same average, one rotation at a time (a Python loop over the 2 D^2 group elements)."""
    E, F = isp.orbit_rotations(D)
    total = [torch.zeros_like(w) for w in W]
    for k in range(E.shape[0]):
        grads = isp.loss_and_grads(*isp.rotate_data(X, Y, E[k], F[k]), *W)[1]
        total = [t + g / E.shape[0] for t, g in zip(total, grads)]
    return tuple(total)


def _population_gradient(chunks: int = 32, base_per_chunk: int = 64):
    total = [torch.zeros_like(w) for w in W]
    for _ in range(chunks):
        X_chunk, Y_chunk = ic.sample_icl_batch(D, N, base_per_chunk, generator=_generator)
        grads = isp.loss_and_grads(*isp.symmetrise(X_chunk, Y_chunk), *W)[1]
        total = [t + g / chunks for t, g in zip(total, grads)]
    return total


def _mean_squared_error(make_gradient, population, draws: int = 32) -> float:
    return float(np.mean([sum(float(((g - p) ** 2).sum()) for g, p in zip(make_gradient(), population))
                          for _ in range(draws)]))


def _equal_accuracy_batch() -> int:
    """Plain batch size whose gradient is as close to the population gradient as a symmetrised batch of BASE."""
    population = _population_gradient()
    reference_batch = 2 * D * D * BASE
    symmetrised_error = _mean_squared_error(
        lambda: isp.loss_and_grads(*isp.symmetrise(*ic.sample_icl_batch(D, N, BASE, generator=_generator)), *W)[1],
        population)
    plain_error = _mean_squared_error(
        lambda: isp.loss_and_grads(*ic.sample_icl_batch(D, N, reference_batch, generator=_generator), *W)[1],
        population)
    # The mean squared error of a plain batch falls as 1/B.
    return max(1, round(reference_batch * plain_error / symmetrised_error))


EQUAL_ACCURACY_BATCH = _equal_accuracy_batch()
X_PLAIN, Y_PLAIN = ic.sample_icl_batch(D, N, EQUAL_ACCURACY_BATCH, generator=_generator)
print(f"induction_subspace: a symmetrised batch of {BASE} x {2 * D * D} sequences estimates the population "
      f"gradient as well as a plain batch of {EQUAL_ACCURACY_BATCH}", flush=True)


def plain_equal_accuracy():
    """One plain Monte-Carlo gradient on the batch of equal accuracy (it leaves the subspace, the other does not)."""
    return isp.loss_and_grads(X_PLAIN, Y_PLAIN, *W)[1]


KERNELS = {
    "symmetrised gradient (D = 8)": (symmetrised_fast, symmetrised_reference),
    f"symmetrised step vs plain step of equal accuracy (B = {EQUAL_ACCURACY_BATCH}; D = 8)":
        (symmetrised_fast, plain_equal_accuracy),
}
