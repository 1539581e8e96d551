"""Kernels of the balance chapter.

- ``per_sample_g_terms``: g_K^i, g_Q^i of 200 sequences from per-sample gradients, ``torch.func.vmap``
  against a Python loop of autograd calls (the naive version).
- ``sgd_100_steps_batch200`` / ``sgd_100_steps_batch20``: 100 steps of the App. B.11 SGD loop with the exact
  per-step bookkeeping of D_i (two half-batch passes), against plain ``torch.optim.SGD`` without bookkeeping;
  steps per second of the chapter's loop = 100 / fast_s.
"""

import torch

from icllib import balance
from icllib.config import torch_generator

torch.set_num_threads(1)

_PARAMS = balance.init_attention(generator=torch_generator(0), imbalance=2.0)
_X, _Y = balance.icl_regression_batch(200, generator=torch_generator(1))


def _g_vmap():
    return balance.g_terms(balance.per_sample_grads(_PARAMS, _X, _Y))


def _g_loop():
    leaf = {k: v.clone().requires_grad_(True) for k, v in _PARAMS.items()}
    rows = []
    for n in range(_X.shape[0]):
        loss = (balance.attention_forward(leaf, _X[n]) - _Y[n]) ** 2
        rows.append(torch.autograd.grad(loss, [leaf[k] for k in balance.PARAM_NAMES]))
    grads = {k: torch.stack([row[i] for row in rows]) for i, k in enumerate(balance.PARAM_NAMES)}
    return balance.g_terms(grads)


def _sgd_chapter(batch_size):
    return lambda: balance.train_attention_sgd(_PARAMS, lr=4e-3, batch_size=batch_size, steps=100,
                                               generator=torch_generator(2), checkpoint_every=1000, g_samples=4)


def _sgd_plain(batch_size):
    def run():
        leaf = {k: v.clone().requires_grad_(True) for k, v in _PARAMS.items()}
        optimiser = torch.optim.SGD(list(leaf.values()), lr=4e-3)
        generator = torch_generator(2)
        for _ in range(100):
            X, y = balance.icl_regression_batch(batch_size, generator=generator)
            optimiser.zero_grad()
            balance.attention_loss(leaf, X, y).backward()
            optimiser.step()
    return run


KERNELS = {
    "per_sample_g_terms": (_g_vmap, _g_loop),
    "sgd_100_steps_batch200": (_sgd_chapter(200), _sgd_plain(200)),
    "sgd_100_steps_batch20": (_sgd_chapter(20), _sgd_plain(20)),
}
