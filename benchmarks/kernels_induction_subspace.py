"""Kernels of the chapter induction_subspace: the symmetrised gradient of a batch (2 D^2 rotated copies in one
batched forward pass) against rotating and differentiating copy by copy."""

import torch

from icllib import induction as ih
from icllib.config import torch_generator

D, N, BASE = 8, 4, 4
_generator = torch_generator(0)
X, Y = ih.sample_icl_batch(D, N, BASE, generator=_generator)
_c = 0.3 * torch.randn(19, dtype=torch.float64, generator=_generator)
W = ih.structured_weights(_c, D)


def symmetrised_fast():
    """One batched forward and backward pass over the 2 D^2 x BASE rotated sequences."""
    return ih.loss_and_grads(*ih.symmetrise(X, Y), *W)[1]


def symmetrised_reference():
    """The same average, one rotation at a time (a Python loop over the 2 D^2 group elements)."""
    E, F = ih.orbit_rotations(D)
    total = [torch.zeros_like(w) for w in W]
    for k in range(E.shape[0]):
        grads = ih.loss_and_grads(*ih.rotate_data(X, Y, E[k], F[k]), *W)[1]
        total = [t + g / E.shape[0] for t, g in zip(total, grads)]
    return tuple(total)


KERNELS = {"symmetrised gradient (D = 8)": (symmetrised_fast, symmetrised_reference)}
