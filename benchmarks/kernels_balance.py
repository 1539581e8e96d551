"""Kernels of the balance chapter.

- ``per_sample_g_terms``: g_K^i, g_Q^i of 200 sequences from per-sample gradients, ``torch.func.vmap``
  against a Python loop of autograd calls (the naive version).
- ``gradient_batch200``: loss and gradient of the two half batches of one App. B.11 step at batch 200, derived
  by hand (``balance.attention_loss_and_grads``) against autograd (``vmap`` of ``grad`` over the halves, what
  the loop used before).
- ``sgd_100_steps_batch200`` / ``sgd_100_steps_batch20``: 100 steps of the App. B.11 SGD loop with the exact
  per-step bookkeeping of D_i, against the same loop with the autograd gradient (the loop as it was before the
  hand-derived gradient); steps per second of the chapter's loop = 100 / fast_s.
- ``sgd_vs_plain_100_steps_batch200``: the chapter's loop against plain ``torch.optim.SGD``, no bookkeeping.

The floor of one step at batch 200 (sequences of T = 50 tokens of width d = 6), by a count of multiply-adds
per sequence: layer 1 forward 2 T^2 d + 2 T d^2 = 33,600 (scores, P0 V0; X M0, X W_V); layer 2, query row
only, about 1,000; backward 3 T^2 d + 2 T d^2 + 2 T^2 = 53,600 (G V0^T, G^T P0, X^T dA0; the softmax) and
about 1,500 for layer 2. About 90,000 in all: 18 M multiply-adds = 36 MFLOP per step, and 200 (T^2 + T) =
510,000 exponentials. One core of the book's 2-core machine (one thread) reaches about 75 GFLOP/s on a large
single-precision matmul (two 2000 x 2000 matrices; about 37 when the machine is loaded) and about 26 GFLOP/s
on the thin batched matmuls of this model (50 x 6 by 6 x 50), and computes an exponential in about 1 ns.
So no step runs faster than about 1 ms (0.5 ms of arithmetic at the large-matmul rate, 0.5 ms of
exponentials), or 2 ms at the thin-matmul rate: 500 to 1000 steps per second, before the fresh batch
(50,000 normal draws) is drawn. The rest of the chapter's step goes to the passes over the (tokens, tokens)
arrays (softmax, its backward) and to the dispatch of about 70 small tensor operations.
"""

import torch
from torch.func import grad_and_value, vmap

from icllib.balance import model as balance
from icllib.config import torch_generator

torch.set_num_threads(1)

_LR, _BATCH = balance.B11_PAPER["lr"], balance.B11_PAPER["batch_size"]  # App. B.11 at the paper's batch
_PARAMS = balance.init_attention(generator=torch_generator(0), imbalance=balance.B11_PAPER["imbalance"])
_X, _Y = balance.icl_regression_batch(_BATCH, generator=torch_generator(1))
_HALVES = _X.reshape(2, _BATCH // 2, *_X.shape[1:]), _Y.reshape(2, _BATCH // 2)


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


def _half_batch_loss(params, X, y):
    # the unchecked forward pass, as the loop used it (the checks cannot run under vmap)
    return ((balance._prediction(params, X) - y) ** 2).mean()


_autograd_halves = vmap(grad_and_value(_half_batch_loss), in_dims=(None, 0, 0))


def _gradient_by_hand():
    return balance.attention_loss_and_grads(_PARAMS, *_HALVES)


def _gradient_by_autograd():
    return _autograd_halves(_PARAMS, *_HALVES)


def _sgd_chapter(batch_size):
    return lambda: balance.train_attention_sgd(_PARAMS, lr=_LR, batch_size=batch_size, steps=100,
                                               generator=torch_generator(2), checkpoint_every=1000, g_samples=4)


def _sgd_autograd(batch_size, lr=_LR, steps=100):
    """The chapter's loop with the autograd gradient: same batches, checkpoints, bookkeeping and update."""
    def run():
        p = dict(_PARAMS)
        generator = torch_generator(2)

        def checkpoint():           # g_samples=4 in two chunks of 2, as train_attention_sgd draws them
            chunks = (balance.icl_regression_batch(2, generator=generator) for _ in range(2))
            return [balance.g_terms(balance.per_sample_grads(p, X, y)) for X, y in chunks]

        D, dD_gd, dD_noise, losses, g = [balance.column_imbalance(p)], [], [], [], checkpoint()
        for _ in range(steps):
            X, y = balance.icl_regression_batch(batch_size, generator=generator)
            halves, loss = _autograd_halves(p, X.reshape(2, batch_size // 2, *X.shape[1:]),
                                            y.reshape(2, batch_size // 2))
            ga, gb = ({name: g_[i] for name, g_ in halves.items()} for i in (0, 1))

            def columns(f):
                return lr**2 * torch.stack([f(f"Wk{l}") - f(f"Wq{l}") for l in balance.LAYERS])

            dD_gd.append(columns(lambda n: (ga[n] * gb[n]).sum(0)))
            dD_noise.append(columns(lambda n: ((ga[n] - gb[n]) ** 2).sum(0) / 4))
            p = {name: p[name] - lr * (ga[name] + gb[name]) / 2 for name in balance.PARAM_NAMES}
            losses.append(float(loss.mean()))
            D.append(balance.column_imbalance(p))
        return torch.stack(D), g + checkpoint()
    return run


def _sgd_plain(batch_size):
    def run():
        leaf = {k: v.clone().requires_grad_(True) for k, v in _PARAMS.items()}
        optimiser = torch.optim.SGD(list(leaf.values()), lr=_LR)
        generator = torch_generator(2)
        for _ in range(100):
            X, y = balance.icl_regression_batch(batch_size, generator=generator)
            optimiser.zero_grad()
            balance.attention_loss(leaf, X, y).backward()
            optimiser.step()
    return run


KERNELS = {
    "per_sample_g_terms": (_g_vmap, _g_loop),
    "gradient_batch200": (_gradient_by_hand, _gradient_by_autograd),
    "sgd_100_steps_batch200": (_sgd_chapter(_BATCH), _sgd_autograd(_BATCH)),
    "sgd_100_steps_batch20": (_sgd_chapter(balance.B11_BOOK_BATCH), _sgd_autograd(balance.B11_BOOK_BATCH)),
    "sgd_vs_plain_100_steps_batch200": (_sgd_chapter(_BATCH), _sgd_plain(_BATCH)),
}
