"""The law of balance (Ziyin, Li, Ueda) in the two-layer attention network of App. B.11.

Theorem B.3 (= Theorem 3.1, Eq. 108) of the paper: if the per-sample loss obeys
``l(u, w, v, x) = l(lambda u, w / lambda, v, x)`` for every ``lambda > 0``, then under the SGD-as-SDE model
``d theta = -grad L dt + sqrt(T C) dW`` with ``T = lr / batch``::

    d/dt (|u|^2 - |w|^2) = -T (u^T C1 u - w^T C2 w)

and the two quadratic forms are gradient noises *crossed over*: ``u^T C1 u = tr Cov[grad_w l]`` and
``w^T C2 w = tr Cov[grad_u l]``. The closed forms, the linear model and the SymPy identities of the proof are
in ``icllib.balance.theory``; this module holds the attention network, read top to bottom as the chapter
(``notebooks/balance.py``) uses it:

1. the chapter's App. B.11 setting, named once (``B11_PAPER``, and per run mode ``B11_BY_MODE``);
2. the two-layer attention network of App. B.11, its data (:func:`icl_regression_batch`), its per-sample
   gradients, its gradient derived by hand (:func:`attention_loss_and_grads`, the SGD loop's), and the terms
   ``g_K^i, g_Q^i`` of Fig. 6 computed both ways (variances and C1, C2);
3. integrators for the conservation experiment (gradient descent, implicit midpoint);
4. the online SGD run of App. B.11 with the exact per-step bookkeeping of ``D_i = |W_K^i|^2 - |W_Q^i|^2``,
   and what the chapter reads from it (:func:`rank_agreement`, :func:`gap_summary`; the law's drift along a run
   is ``icllib.balance.theory.law_prediction``).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch.func import grad, vmap

from icllib import config
from icllib.config import progress
from icllib.validation import (array_like, numpy_generator_arg, positive_int, positive_number, real_array, tensor_arg,
                               torch_generator_arg)

LAYERS = (0, 1)
PARAM_NAMES = ("Wq0", "Wk0", "Wv0", "Wq1", "Wk1", "Wv1")

# --- 1. The chapter's App. B.11 setting, named once ---------------------------------------------------------

# App. B.11 at the paper's batch: the chapter's full-mode setting (section 5), which the deciding runs
# (icllib.deciding), tools/b11_divergence.py and benchmarks/kernels_balance.py read.
B11_PAPER = {"batch_size": 200, "lr": 4e-3, "checkpoint_every": 20_000, "g_samples": 20_000, "g_chunk": 2_000,
             "imbalance": 2.0}
B11_FULL_STEPS = 400_000  # the full-mode run's length (the archived run diverged at step 268 178)
B11_SEEDS = {"weights": 1, "data": 2}  # torch_generator seeds of the chapter's run (the deciding runs' seed 1)
# The chapter's run per mode: quick and default at the higher temperature S = 20 (T = 2e-4), whose balancing a
# build can afford; full at the paper's setting. Twenty checkpoints a run in every mode.
B11_BOOK_BATCH = 20
B11_BY_MODE = {
    "quick": dict(B11_PAPER, batch_size=B11_BOOK_BATCH, steps=4_000, checkpoint_every=200, g_samples=1_000,
                  g_chunk=500),
    "default": dict(B11_PAPER, batch_size=B11_BOOK_BATCH, steps=20_000, checkpoint_every=1_000, g_samples=8_000),
    "full": dict(B11_PAPER, steps=B11_FULL_STEPS),
}


# --- 2. App. B.11: in-context linear regression with a two-layer softmax attention network ------------------


def icl_regression_batch(batch_size, *, generator, n_context=49, d=5, noise_std=0.1, dtype=torch.float32):
    """Eq. 113: ``batch_size`` sequences ``X`` of shape ``(n_context + 1, d + 1)`` and query labels ``y``.

    Columns ``0..d-1`` are features ~ N(0, 1); column ``d`` of the context rows holds ``x . w* + eps`` with
    ``eps ~ N(0, noise_std^2)``; the query row's label slot is 0 and its label ``x_query . w*`` is returned
    as ``y`` (noise-free). ``w* ~ N(0, I_d)`` is drawn afresh for every sequence (the paper says only
    "a ground truth vector"; a fresh one per sequence makes the task in-context). Drawn on the generator's
    device.
    Returns ``(X, y)`` of shapes ``(batch_size, n_context + 1, d + 1)`` and ``(batch_size,)``.
    """
    batch_size = positive_int("batch_size", batch_size)
    n_context = positive_int("n_context", n_context)
    d = positive_int("d", d)
    noise_std = positive_number("noise_std", noise_std, allow_zero=True)
    generator = torch_generator_arg("generator", generator)
    on = {"generator": generator, "dtype": dtype, "device": generator.device}
    features = torch.randn(batch_size, n_context + 1, d, **on)
    w_star = torch.randn(batch_size, d, **on)
    eps = noise_std * torch.randn(batch_size, n_context, **on)
    clean = torch.einsum("btd,bd->bt", features, w_star)
    labels = torch.cat([clean[:, :n_context] + eps, torch.zeros(batch_size, 1, dtype=dtype, device=clean.device)],
                       dim=1)
    return torch.cat([features, labels[..., None]], dim=2), clean[:, n_context]


def init_attention(*, generator, width=6, imbalance=1.0, dtype=torch.float32):
    """Weights ``W_Q, W_K, W_V`` of both layers, i.i.d. N(0, 1/width), then ``W_K -> imbalance W_K``,
    ``W_Q -> W_Q / imbalance`` (the symmetry itself: the same function with imbalanced norms). On the
    generator's device."""
    width = positive_int("width", width)
    imbalance = positive_number("imbalance", imbalance)
    generator = torch_generator_arg("generator", generator)
    scale = {"Wq": 1.0 / imbalance, "Wk": imbalance, "Wv": 1.0}
    return {
        name: scale[name[:2]] * torch.randn(width, width, generator=generator, dtype=dtype,
                                            device=generator.device) / math.sqrt(width)
        for name in PARAM_NAMES
    }


def _check_params(params) -> None:
    if not isinstance(params, dict) or set(params) != set(PARAM_NAMES) \
            or not all(isinstance(p, torch.Tensor) for p in params.values()):
        raise ValueError(f"params must be a dict of tensors with keys {PARAM_NAMES}")
    shape = params["Wq0"].shape
    if len(shape) != 2 or shape[0] != shape[1] or any(p.shape != shape for p in params.values()):
        raise ValueError("params must hold square matrices of one shape")


def _check_data(params, X, y) -> None:
    _check_params(params)
    width = params["Wq0"].shape[0]
    tensor_arg("X", X, what=f"of shape (n, tokens, {width})")
    if X.ndim != 3 or X.shape[2] != width:
        raise ValueError(f"X must have shape (n, tokens, {width}), got {tuple(X.shape)}")
    tensor_arg("y", y, what=f"of shape ({X.shape[0]},)")
    if y.shape != X.shape[:1]:
        raise ValueError(f"y must have shape ({X.shape[0]},), got {tuple(y.shape)}")


def _forward_logits(logit_matrices, values, X):
    """Two residual softmax attention layers, no MLP, no mask, no LayerNorm (spec section 5.2).

    Layer l: ``H <- H + softmax(H M_l H^T / sqrt(width)) H W_V^l`` with ``M_l = W_Q^l W_K^l^T``; the
    prediction is the label slot of the query token, ``H[-1, -1]``. ``X``: ``(..., tokens, width)``.
    """
    H = X
    scale = 1.0 / math.sqrt(X.shape[-1])
    for M, Wv in zip(logit_matrices, values):
        scores = (H @ M @ H.transpose(-1, -2)) * scale            # (..., tokens, tokens)
        H = H + torch.softmax(scores, dim=-1) @ (H @ Wv)
    return H[..., -1, -1]


def attention_forward(params, X):
    """The network of App. B.11; its logits see ``W_Q^l, W_K^l`` only through ``W_Q^l W_K^l^T`` (Eq. 114)."""
    _check_params(params)
    width = params["Wq0"].shape[0]
    tensor_arg("X", X, min_ndim=2, what=f"of shape (..., tokens, {width})")
    if X.shape[-1] != width:
        raise ValueError(f"X must have shape (..., tokens, {width}), got {tuple(X.shape)}")
    return _prediction(params, X)


def _prediction(params, X):
    """:func:`attention_forward` without the checks (it runs under ``vmap`` and in every step)."""
    return _forward_logits(
        [params[f"Wq{l}"] @ params[f"Wk{l}"].T for l in LAYERS], [params[f"Wv{l}"] for l in LAYERS], X
    )


def attention_loss(params, X, y):
    """Mean over the batch of the per-sample squared error ``(y_hat - y)^2``."""
    _check_data(params, X, y)
    return ((_prediction(params, X) - y) ** 2).mean()


def _sample_loss(params, x, target):
    return (_prediction(params, x) - target) ** 2


def per_sample_grads(params, X, y):
    """``d l / d W`` for every sample and every weight matrix: a dict of ``(n, width, width)`` tensors."""
    _check_data(params, X, y)
    return vmap(grad(_sample_loss), in_dims=(None, 0, 0))(params, X, y)


def attention_loss_and_grads(params, X, y):
    """The loss of :func:`attention_loss` and its gradient in every weight matrix, derived by hand.

    ``X`` has shape ``(..., n, tokens, width)`` and ``y`` ``(..., n)``: the leading axes hold independent
    batches (the SGD loop passes its two half batches as ``(2, n, ...)``), each with its own mean loss.
    Returns ``(loss, grads)``: the losses, shape ``(...)``, and a dict of ``(..., width, width)`` gradients.
    Equal to autograd up to round-off (unit test) and several times faster, which is what makes App. B.11's
    batch 200 affordable (benchmark ``balance.sgd_100_steps_batch200``).
    """
    _check_params(params)
    width = params["Wq0"].shape[0]
    what = f"of shape (..., n, tokens, {width})"
    tensor_arg("X", X, min_ndim=3, what=what)
    if X.shape[-1] != width:
        raise ValueError(f"X must have shape {what}, got {tuple(X.shape)}")
    tensor_arg("y", y, what=f"of shape {tuple(X.shape[:-2])}")
    if y.shape != X.shape[:-2]:
        raise ValueError(f"y must have shape {tuple(X.shape[:-2])}, got {tuple(y.shape)}")
    loss, grads = _loss_and_grads([params[name] for name in PARAM_NAMES], X, y)
    return loss, dict(zip(PARAM_NAMES, grads.unbind(-3)))


def _loss_and_grads(weights, X, y):
    """:func:`attention_loss_and_grads` without the checks; ``weights`` and the gradients, stacked on axis
    -3, in the order of ``PARAM_NAMES``.

    The forward pass is :func:`_forward_logits`, except that layer 2 is computed for the query row only, the
    one the prediction reads. The backward pass uses the same symbols with ``d`` for ``dL/d``; ``G = dL/dH1``;
    and through ``M_l = W_Q^l W_K^l^T``, ``dL/dW_Q^l = dL/dM_l W_K^l`` and ``dL/dW_K^l = dL/dM_l^T W_Q^l``.
    """
    Wq0, Wk0, Wv0, Wq1, Wk1, Wv1 = weights
    scale = 1.0 / math.sqrt(X.shape[-1])
    M0, M1 = Wq0 @ Wk0.T, Wq1 @ Wk1.T
    # layer 1, every token: H1 = X + P0 V0, P0 = softmax(X M0 X^T / sqrt(width)), V0 = X W_V^0
    P0 = torch.softmax(X @ (scale * M0) @ X.mT, dim=-1)               # (..., n, tokens, tokens)
    V0 = X @ Wv0
    PV = (V0.mT @ P0.mT).mT          # P0 V0: MKL's batched matmul is several times faster thin factor first
    H1 = X + PV
    # layer 2, query row h only: scores a = H1 r / sqrt(width) with r = M1^T h, prediction h[-1] + p . (H1 c)
    h = H1[..., -1, :]                                                 # (..., n, width)
    r = h @ M1
    p = torch.softmax((H1 @ (scale * r)[..., None])[..., 0], dim=-1)   # (..., n, tokens)
    c = Wv1[:, -1]
    v = H1 @ c
    error = h[..., -1] + (p * v).sum(-1) - y

    delta = 2 * error / X.shape[-3]                                    # dL/dy_hat, L the mean over n
    dv = delta[..., None] * p
    dp = delta[..., None] * v
    da = p * (dp - (p * dp).sum(-1, keepdim=True))                     # through the softmax
    dr = scale * (da[..., None, :] @ H1)[..., 0, :]
    dh = dr @ M1.T
    dh[..., -1] += delta
    G = dv[..., None] * c + (scale * da)[..., None] * r[..., None, :]  # through the values and the keys,
    G[..., -1, :] += dh                                                # and the query row
    # dP0 = G V0^T, and through the softmax dA0 = P0 * (dP0 - rowsum(P0 * dP0)), whose row sums are those of
    # G * (P0 V0). In place: a fresh (tokens, tokens) buffer costs as much in page faults as in arithmetic.
    dA0 = (G @ V0.mT).sub_((G * PV).sum(-1, keepdim=True)).mul_(P0)
    dM0 = scale * ((X.mT @ dA0) @ X).sum(-3)
    dWv0 = ((G.mT @ P0) @ X).sum(-3).mT                                # sum over n of (P0 X)^T G
    dM1 = h.mT @ dr
    dWv1 = torch.zeros_like(dWv0)
    dWv1[..., -1] = (dv[..., None, :] @ H1)[..., 0, :].sum(-2)         # only the column c is read
    grads = (dM0 @ Wk0, dM0.mT @ Wq0, dWv0, dM1 @ Wk1, dM1.mT @ Wq1, dWv1)
    return (error**2).mean(-1), torch.stack(grads, dim=-3)


def rescale_columns(params, lambdas):
    """The symmetry of Eq. 114, one factor per column pair: ``W_K^i -> lambda W_K^i``, ``W_Q^i -> W_Q^i / lambda``.

    ``lambdas`` has shape ``(2, width)`` (layer, column) and must be positive.
    """
    _check_params(params)
    lambdas = torch.as_tensor(array_like("lambdas", lambdas), dtype=params["Wq0"].dtype)
    width = params["Wq0"].shape[0]
    if lambdas.shape != (len(LAYERS), width) or not bool((lambdas > 0).all()):
        raise ValueError(f"lambdas must be positive with shape (2, {width}), got {tuple(lambdas.shape)}")
    out = dict(params)
    for l in LAYERS:
        out[f"Wk{l}"] = params[f"Wk{l}"] * lambdas[l]
        out[f"Wq{l}"] = params[f"Wq{l}"] / lambdas[l]
    return out


def column_imbalance(params):
    """``D_i = |W_K^i|^2 - |W_Q^i|^2`` for every layer and column: shape ``(2, width)``."""
    _check_params(params)
    return torch.stack([(params[f"Wk{l}"] ** 2).sum(0) - (params[f"Wq{l}"] ** 2).sum(0) for l in LAYERS])


def euler_residuals(grads, params):
    """Per-sample ``W_K^i . dl/dW_K^i - W_Q^i . dl/dW_Q^i`` (Eq. 26 of the paper's proof): ``(n, 2, width)``.

    Zero for every sample when the symmetry holds per sample. Also returns the scale
    ``|W_K^i . dl/dW_K^i|`` for a relative reading.
    """
    _check_params(params)
    if not isinstance(grads, dict) or set(grads) != set(PARAM_NAMES):
        raise ValueError(f"grads must be a dict with keys {PARAM_NAMES}")
    k_terms = torch.stack([(params[f"Wk{l}"] * grads[f"Wk{l}"]).sum(-2) for l in LAYERS], dim=-2)
    q_terms = torch.stack([(params[f"Wq{l}"] * grads[f"Wq{l}"]).sum(-2) for l in LAYERS], dim=-2)
    return k_terms - q_terms, k_terms.abs()


def g_terms(grads):
    """``g_K^i = tr Cov[dl/dW_Q^i]`` and ``g_Q^i = tr Cov[dl/dW_K^i]`` (Fig. 6): two ``(2, width)`` tensors.

    The crossing of ``icllib.balance.theory.noise_terms``, applied to all column pairs at once
    (``u = W_K^i``, ``w = W_Q^i``).
    """
    if not isinstance(grads, dict) or set(grads) != set(PARAM_NAMES):
        raise ValueError(f"grads must be a dict with keys {PARAM_NAMES}")
    if grads["Wq0"].shape[0] < 2:
        raise ValueError("grads must hold n >= 2 samples for a covariance")
    gK = torch.stack([grads[f"Wq{l}"].var(dim=0).sum(0) for l in LAYERS])
    gQ = torch.stack([grads[f"Wk{l}"].var(dim=0).sum(0) for l in LAYERS])
    return gK, gQ


def g_terms_via_C(params, X, y):
    """``g_K^i = W_K^i^T C1 W_K^i`` and ``g_Q^i = W_Q^i^T C2 W_Q^i`` through the paper's matrices (Eq. 108).

    ``A = dl/dM_l`` per sample with ``M_l = W_Q^l W_K^l^T`` the argument of the logits (so that
    ``A_{ki} = dl/d(u_i w_k)`` for ``u = W_K^i``, ``w = W_Q^i``); ``C1 = E[A^T A] - E[A]^T E[A]``,
    ``C2 = E[A A^T] - E[A] E[A]^T``, both with the unbiased ``n / (n - 1)`` factor. One C1, C2 per layer
    serves all its columns.
    """
    _check_data(params, X, y)
    n = X.shape[0]
    if n < 2:
        raise ValueError(f"X must hold n >= 2 samples for a covariance, got {n}")
    Ms = [params[f"Wq{l}"] @ params[f"Wk{l}"].T for l in LAYERS]
    values = [params[f"Wv{l}"] for l in LAYERS]

    def loss_of_M(Ms_, x, target):
        return (_forward_logits(Ms_, values, x) - target) ** 2

    As = vmap(grad(loss_of_M), in_dims=(None, 0, 0))(Ms, X, y)
    gK, gQ = [], []
    for l, A in zip(LAYERS, As):                                   # A: (n, width, width)
        mean = A.mean(0)
        C1 = (torch.einsum("nab,nac->bc", A, A) / n - mean.T @ mean) * n / (n - 1)
        C2 = (torch.einsum("nab,ncb->ac", A, A) / n - mean @ mean.T) * n / (n - 1)
        Wk, Wq = params[f"Wk{l}"], params[f"Wq{l}"]
        gK.append(torch.einsum("ai,ab,bi->i", Wk, C1, Wk))
        gQ.append(torch.einsum("ai,ab,bi->i", Wq, C2, Wq))
    return torch.stack(gK), torch.stack(gQ)


def query_lstsq_error(X, y):
    """Chapter section 1, the data layout of Eq. 113: least squares on each sequence's context rows (features in
    columns 1-5, the label in column 6) predicts its query label ``y``; returns the mean squared error relative to
    the labels' variance (about 2e-4 at label noise 0.1, of order 1 with a label in the wrong slot)."""
    X, y = tensor_arg("X", X, min_ndim=3), tensor_arg("y", y, min_ndim=1)
    if y.shape != X.shape[:1] or X.shape[-1] < 2:
        raise ValueError(f"X must be (batch, tokens, d + 1) and y (batch,), got {tuple(X.shape)}, {tuple(y.shape)}")
    d = X.shape[-1] - 1
    w_fitted = torch.linalg.lstsq(X[:, :-1, :d], X[:, :-1, d:]).solution[..., 0]
    return float((((X[:, -1, :d] * w_fitted).sum(-1) - y) ** 2).mean() / y.var())


def symmetry_error(params, X, y, lambdas):
    """Chapter section 1: the largest change of a per-sample loss when every column pair is rescaled by its own
    ``lambdas[layer, i]``, relative to the largest per-sample loss (Theorem B.3 needs the symmetry per sample)."""
    _check_data(params, X, y)
    before = (attention_forward(params, X) - y) ** 2
    after = (attention_forward(rescale_columns(params, lambdas), X) - y) ** 2
    return ((after - before).abs().max() / before.max()).item()


def single_column_changes(params, X, y, *, factor=3.0):
    """Chapter section 1 (erratum E1, the count): the relative change of the loss when one column pair at a time is
    rescaled by ``factor``; an array ``(layers, width)``, zero to round-off where the pair is a symmetry."""
    factor = positive_number("factor", factor)
    _check_data(params, X, y)
    loss_before = attention_loss(params, X, y).item()
    width = params["Wq0"].shape[1]
    changes = np.empty((len(LAYERS), width))
    for layer in LAYERS:
        for column in range(width):
            one = torch.ones(len(LAYERS), width, dtype=params["Wq0"].dtype)
            one[layer, column] = factor
            changed = attention_loss(rescale_columns(params, one), X, y).item()
            changes[layer, column] = abs(changed - loss_before) / loss_before
    return changes


def transpose_controls(params, X, y, A):
    """Chapter section 1 (erratum E2, the transpose): the relative loss changes ``(same W_K W_Q, same W_Q W_K^T)``
    when layer 1 is changed by an invertible ``A`` keeping ``W_K W_Q`` (``W_Q -> A W_Q``, ``W_K -> W_K A^-1``) or
    keeping ``W_Q W_K^T`` (``W_Q -> W_Q A``, ``W_K -> W_K A^-T``)."""
    _check_data(params, X, y)
    A = tensor_arg("A", A, shape=(params["Wq0"].shape[0],) * 2)
    inverse = torch.linalg.inv(A)
    same_KQ = {**params, "Wq0": A @ params["Wq0"], "Wk0": params["Wk0"] @ inverse}
    same_QKt = {**params, "Wq0": params["Wq0"] @ A, "Wk0": params["Wk0"] @ inverse.T}
    if not torch.allclose(same_KQ["Wk0"] @ same_KQ["Wq0"], params["Wk0"] @ params["Wq0"], atol=1e-12):
        raise ValueError("A must be well conditioned: W_K A^-1 A W_Q differs from W_K W_Q")
    loss = attention_loss(params, X, y).item()
    return tuple(abs(attention_loss(p, X, y).item() - loss) / loss for p in (same_KQ, same_QKt))


# --- 3. Gradient flow: gradient descent drifts, the implicit midpoint rule conserves D exactly --------------


def _full_gradient(params, X, y):
    loss = attention_loss(params, X, y)
    grads = torch.autograd.grad(loss, [params[k] for k in PARAM_NAMES])
    return float(loss.detach()), dict(zip(PARAM_NAMES, grads))


def _leaf(params):
    return {k: v.detach().clone().requires_grad_(True) for k, v in params.items()}


def _step_identity(grads, lr):
    """``lr^2 (|g_K^i|^2 - |g_Q^i|^2)``: the exact change of every D_i in one step (spec section 3.5)."""
    return lr**2 * torch.stack(
        [(grads[f"Wk{l}"] ** 2).sum(0) - (grads[f"Wq{l}"] ** 2).sum(0) for l in LAYERS]
    )


def gradient_descent_run(params, X, y, *, lr, steps):
    """Full-batch gradient descent; returns final params, losses, the D_i path ``(steps + 1, 2, width)`` and
    the accumulated per-step identity ``sum_k lr^2 (|g_K^i|^2 - |g_Q^i|^2)`` (which must equal ``D_end - D_0``)."""
    _check_data(params, X, y)
    lr = positive_number("lr", lr)
    steps = positive_int("steps", steps)
    p = _leaf(params)
    D, losses = [column_imbalance(p).detach()], []
    predicted = torch.zeros_like(D[0])
    for _ in progress(range(steps), desc=f"GD lr={lr:g}"):
        loss, g = _full_gradient(p, X, y)
        losses.append(loss)
        predicted += _step_identity(g, lr)
        with torch.no_grad():
            p = {k: p[k] - lr * g[k] for k in PARAM_NAMES}
        p = _leaf(p)
        D.append(column_imbalance(p).detach())
    return {"params": p, "loss": np.array(losses), "D": torch.stack(D), "identity": predicted}


def implicit_midpoint_run(params, X, y, *, h, steps, tol=1e-15, max_iter=100):
    """Implicit midpoint rule ``theta' = theta - h grad L((theta + theta') / 2)`` by fixed-point iteration.

    A Gauss-Legendre method: it keeps every quadratic invariant of the flow, so each
    ``D_i = theta^T S_i theta`` (with ``theta^T S_i grad L(theta) = 0``) is conserved up to the residual of
    the fixed-point iteration. Raises ``ValueError`` naming ``h`` if the iteration does not converge (``h``
    too large for the data).
    """
    _check_data(params, X, y)
    h = positive_number("h", h)
    steps = positive_int("steps", steps)
    max_iter = positive_int("max_iter", max_iter)
    theta = {k: v.detach().clone() for k, v in params.items()}
    D, losses, iterations = [column_imbalance(theta)], [], []
    for _ in progress(range(steps), desc=f"midpoint h={h:g}"):
        loss, g = _full_gradient(_leaf(theta), X, y)
        losses.append(loss)
        nxt = {k: theta[k] - h * g[k] for k in PARAM_NAMES}
        for it in range(1, max_iter + 1):
            _, g = _full_gradient(_leaf({k: (theta[k] + nxt[k]) / 2 for k in PARAM_NAMES}), X, y)
            new = {k: theta[k] - h * g[k] for k in PARAM_NAMES}
            change = max(float((new[k] - nxt[k]).abs().max()) for k in PARAM_NAMES)
            nxt = new
            if change <= tol:
                break
        else:
            raise ValueError(f"h = {h} is too large: the implicit midpoint's fixed point was not reached in "
                             f"{max_iter} iterations")
        iterations.append(it)
        theta = {k: v.detach() for k, v in nxt.items()}
        D.append(column_imbalance(theta))
    return {"params": theta, "loss": np.array(losses), "D": torch.stack(D), "iterations": np.array(iterations)}


def conservation_summary(gd_runs, midpoint, params):
    """Chapter section 3: what the runs of :func:`gradient_descent_run` (``{lr: run}``) and
    :func:`implicit_midpoint_run` from ``params`` did to the ``D_i``. Returns ``gd_drift`` (``{lr: max_i |Delta
    D_i|}``), ``midpoint_drift``, ``norm_moves`` (the largest move of one ``|W_K^i|^2`` along the midpoint path, a
    control) and ``identity_error`` (the step identity's residual over the gradient-descent runs)."""
    if not isinstance(gd_runs, dict) or not gd_runs or not all(isinstance(r, dict) and "identity" in r
                                                               for r in gd_runs.values()):
        raise ValueError("gd_runs must be {lr: run of gradient_descent_run}")
    if not isinstance(midpoint, dict) or not {"D", "params"} <= set(midpoint):
        raise ValueError("midpoint must be a run of implicit_midpoint_run")
    _check_params(params)
    return {
        "gd_drift": {lr: (run["D"][-1] - run["D"][0]).abs().max().item() for lr, run in gd_runs.items()},
        "midpoint_drift": (midpoint["D"] - midpoint["D"][0]).abs().max().item(),
        "norm_moves": max(((midpoint["params"][f"Wk{l}"] ** 2).sum(0) - (params[f"Wk{l}"] ** 2).sum(0))
                          .abs().max().item() for l in LAYERS),
        "identity_error": max((run["D"][-1] - run["D"][0] - run["identity"]).abs().max().item()
                              for run in gd_runs.values()),
    }


# --- 4. Online SGD on App. B.11 with exact bookkeeping of every D_i -----------------------------------------


def train_attention_sgd(params, *, lr, batch_size, steps, generator, checkpoint_every, g_samples,
                        g_chunk=2000, noise_std=0.1):
    """Online SGD (fresh batch every step) with the exact per-step split of ``Delta D_i`` (spec section 3.5-3.6).

    Each step computes the gradients of the two half batches ``a, b`` in one call of the hand-derived
    :func:`attention_loss_and_grads` (the step uses their mean). With ``|g|^2 = g_a . g_b + |g_a - g_b|^2 / 4``,
    the exact ``Delta D_i = lr^2 (|g_K^i|^2 - |g_Q^i|^2)`` splits into a *GD part* (``g_a . g_b``, unbiased for
    the full-gradient term) and a *noise part* (``|g_a - g_b|^2 / 4``, unbiased for ``-lr T (g_K^i - g_Q^i)``,
    the law). Every ``checkpoint_every`` steps, ``g_K^i, g_Q^i`` are estimated from ``g_samples`` fresh
    sequences (per-sample gradients, in whole chunks of ``g_chunk``, at least two; the spread of the
    per-chunk values gives the error bar).

    Returns a dict of numpy arrays: ``loss`` (steps,), ``D`` (steps + 1, 2, width), ``dD_gd``, ``dD_noise``
    (steps, 2, width), ``identity_residual`` (accumulated ``|D_k - D_0 - sum dD|`` max, to the end of
    :func:`finite_part`), ``checkpoints``, ``gK``, ``gQ`` (checkpoints, 2, width) and their chunk standard
    errors ``gK_se``, ``gQ_se``; and ``diverged_at``, the first step whose loss is not finite, or None. A run
    that diverges stops there: every later entry is NaN (no checkpoint is estimated on weights that are no
    longer numbers), and :func:`finite_part` cuts it to what was measured.

    The run follows its weights' device; its batches are drawn there (:func:`icllib.config.generator_on`).
    """
    _check_params(params)
    lr, batch_size, steps, checkpoint_every, g_samples, g_chunk = _sgd_settings(
        lr, batch_size, steps, checkpoint_every, g_samples, g_chunk)
    dtype, device = params["Wq0"].dtype, params["Wq0"].device
    generator = config.generator_on(torch_generator_arg("generator", generator), device)
    half = batch_size // 2
    weights = torch.stack([params[name].detach() for name in PARAM_NAMES])          # (6, width, width)
    keys, queries = ([PARAM_NAMES.index(f"{w}{l}") for l in LAYERS] for w in ("Wk", "Wq"))

    def columns(t):
        """Per layer and column ``i``: ``t`` summed over ``W_K^i`` minus over ``W_Q^i``, ``(2, width)``."""
        return t[keys].sum(-2) - t[queries].sum(-2)

    D = torch.empty(steps + 1, len(LAYERS), weights.shape[-1], dtype=dtype, device=device)
    D[0] = columns(weights**2)
    loss, dD_gd, dD_noise = (torch.empty(steps, dtype=dtype, device=device), torch.empty_like(D[1:]),
                             torch.empty_like(D[1:]))
    accumulated = torch.zeros_like(D[0], dtype=torch.float64)
    out = {"checkpoints": [], "gK": [], "gQ": [], "gK_se": [], "gQ_se": []}
    accumulated_at = {}  # step -> the accumulated Delta D up to it

    def checkpoint(k):
        accumulated_at[k] = accumulated.clone()
        out["checkpoints"].append(k)
        estimates = _g_estimates(dict(zip(PARAM_NAMES, weights)), g_samples, g_chunk, generator, noise_std, dtype)
        for key, value in zip(("gK", "gQ", "gK_se", "gQ_se"), estimates):
            out[key].append(value)

    diverged_at = None
    for k in progress(range(steps), desc=f"SGD batch={batch_size}"):
        if k % checkpoint_every == 0:
            checkpoint(k)
        X, y = icl_regression_batch(batch_size, generator=generator, noise_std=noise_std, dtype=dtype)
        halves = X.reshape(2, half, *X.shape[1:]), y.reshape(2, half)
        losses, (ga, gb) = _loss_and_grads(weights.unbind(), *halves)
        loss[k] = losses.mean()
        if not torch.isfinite(loss[k]):
            diverged_at = k
            break
        dD_gd[k] = lr**2 * columns(ga * gb)
        dD_noise[k] = lr**2 * columns((ga - gb) ** 2 / 4)
        weights = weights - lr * (ga + gb) / 2
        accumulated += (dD_gd[k] + dD_noise[k]).double()
        D[k + 1] = columns(weights**2)
    if diverged_at is None:
        checkpoint(steps)
    else:
        loss[k:], D[k + 1:], dD_gd[k:], dD_noise[k:] = math.nan, math.nan, math.nan, math.nan
        for later in [*range(0, steps, checkpoint_every), steps]:
            if later > out["checkpoints"][-1]:
                out["checkpoints"].append(later)
                for key in ("gK", "gQ", "gK_se", "gQ_se"):
                    out[key].append(torch.full_like(out[key][0], math.nan))
    return _sgd_result(out, dict(loss=loss, D=D, dD_gd=dD_gd, dD_noise=dD_noise), accumulated_at, weights, diverged_at)


def _sgd_settings(lr, batch_size, steps, checkpoint_every, g_samples, g_chunk) -> tuple:
    """:func:`train_attention_sgd`'s settings, checked."""
    lr = positive_number("lr", lr)
    batch_size = positive_int("batch_size", batch_size, minimum=2)
    if batch_size % 2:
        raise ValueError(f"batch_size must be even (two half batches), got {batch_size}")
    steps = positive_int("steps", steps)
    checkpoint_every = positive_int("checkpoint_every", checkpoint_every)
    g_samples = positive_int("g_samples", g_samples, minimum=4)
    g_chunk = positive_int("g_chunk", min(g_chunk, g_samples // 2), minimum=2)
    if g_samples % g_chunk:
        raise ValueError(f"g_samples must be a whole number of chunks of g_chunk (each chunk one estimate), "
                         f"got g_samples = {g_samples}, g_chunk = {g_chunk}")
    return lr, batch_size, steps, checkpoint_every, g_samples, g_chunk


def _g_estimates(p, g_samples, g_chunk, generator, noise_std, dtype) -> tuple:
    """A checkpoint of :func:`train_attention_sgd`: ``g_K^i, g_Q^i`` of the weights ``p`` from ``g_samples`` fresh
    sequences, in chunks of ``g_chunk``; their means and the chunks' standard errors (``gK, gQ, gK_se, gQ_se``)."""
    chunks = []
    for start in range(0, g_samples, g_chunk):
        n = min(g_chunk, g_samples - start)
        if n < 2:
            break
        Xg, yg = icl_regression_batch(n, generator=generator, noise_std=noise_std, dtype=dtype)
        chunks.append(g_terms(per_sample_grads(p, Xg, yg)))
    gK = torch.stack([c[0] for c in chunks]).double()
    gQ = torch.stack([c[1] for c in chunks]).double()
    return gK.mean(0), gQ.mean(0), gK.std(0) / math.sqrt(len(chunks)), gQ.std(0) / math.sqrt(len(chunks))


def _sgd_result(out: dict, series: dict, accumulated_at: dict, weights, diverged_at) -> dict:
    """:func:`train_attention_sgd`'s result from its checkpoints ``out``, its per-step ``series`` (``loss``, ``D``,
    ``dD_gd``, ``dD_noise``), the accumulated ``Delta D`` at each checkpoint and its last weights."""
    result = {key: np.asarray(torch.stack(v).double().cpu()) if key != "checkpoints" else np.asarray(v)
              for key, v in out.items()}
    result.update({name: value.double().cpu().numpy() for name, value in series.items()})
    # a diverged run: up to the last checkpoint that measured finite g's, where finite_part cuts it
    last = int(result["checkpoints"][max(_measured_checkpoints(result, diverged_at), 1) - 1])
    result["identity_residual"] = float(
        np.abs(result["D"][last] - result["D"][0] - accumulated_at[last].cpu().numpy()).max())
    result["params"] = dict(zip(PARAM_NAMES, weights))
    result["diverged_at"] = diverged_at
    return result


def _measured_checkpoints(run, diverged_at):
    """How many of the first checkpoints come before ``diverged_at`` with finite ``g_K``, ``g_Q`` (all of
    them if None): near a divergence the weights are still numbers but their gradients overflow."""
    usable = np.isfinite(run["gK"]).all(axis=(1, 2)) & np.isfinite(run["gQ"]).all(axis=(1, 2))
    if diverged_at is not None:
        usable &= np.asarray(run["checkpoints"]) < diverged_at
    return len(usable) if usable.all() else int(np.argmin(usable))


def finite_part(run):
    """A run of :func:`train_attention_sgd` cut to what it measured before its loss stopped being finite.

    The run itself if it did not diverge. Otherwise the checkpoints before ``diverged_at`` up to the first
    whose ``g_K`` or ``g_Q`` is not finite, and the per-step series (``loss``, ``D``, ``dD_gd``, ``dD_noise``)
    up to the last checkpoint kept, so that ``icllib.balance.theory.law_prediction`` and the checkpoint
    comparisons of Fig. 6 read only finite values.
    """
    keys = {"checkpoints", "gK", "gQ", "gK_se", "gQ_se", "loss", "D", "dD_gd", "dD_noise", "diverged_at"}
    if not isinstance(run, dict) or not keys <= set(run):
        raise ValueError("run must be the dict train_attention_sgd returns")
    if run["diverged_at"] is None:
        return run
    kept = _measured_checkpoints(run, run["diverged_at"])
    if kept == 0:
        raise ValueError(f"run diverged at step {run['diverged_at']}, before its first finite checkpoint")
    end = int(run["checkpoints"][kept - 1])
    cut = dict(run)
    for key in ("checkpoints", "gK", "gQ", "gK_se", "gQ_se"):
        cut[key] = run[key][:kept]
    cut.update(loss=run["loss"][:end], D=run["D"][:end + 1], dD_gd=run["dD_gd"][:end],
               dD_noise=run["dD_noise"][:end])
    return cut


def rank_agreement(predicted, measured, *, generator, permutations=100_000):
    """Spearman's rank correlation of ``predicted`` with ``measured`` and its one-sided permutation p-value.

    Used to test the law pair by pair (chapter section 5): do the column pairs whose ``D_i`` the law says
    should fall fastest actually fall fastest? Under the null that the measured changes are unrelated to the
    prediction (every pairing of the two equally likely), ``P(p_value <= alpha) <= alpha``. The p-value is
    ``(1 + #{permutations with rho >= observed}) / (1 + permutations)``, so it is never below
    ``1 / (1 + permutations)``. Returns ``(rho, p_value)``.
    """
    from scipy.stats import rankdata

    x, y = (real_array(n, a).ravel() for n, a in (("predicted", predicted), ("measured", measured)))
    if x.size != y.size or x.size < 3:
        raise ValueError(f"predicted and measured must hold the same number (>= 3) of values, got {x.size} and {y.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("predicted and measured must be finite")
    generator = numpy_generator_arg("generator", generator)
    permutations = positive_int("permutations", permutations)
    rank_x, rank_y = (rankdata(a) - (a.size + 1) / 2 for a in (x, y))
    norm = math.sqrt((rank_x**2).sum() * (rank_y**2).sum())
    if norm == 0:
        raise ValueError("predicted and measured must not be constant")
    rho = float(rank_x @ rank_y / norm)
    shuffled = generator.permuted(np.tile(rank_x, (permutations, 1)), axis=1)
    null = shuffled @ rank_y / norm
    return rho, float((1 + np.sum(null >= rho - 1e-12)) / (1 + permutations))


def fig6_series(run, *, steps, points=400):
    """Chapter section 5: Fig. 6's series of a run of :func:`train_attention_sgd` of ``steps`` steps, and its
    ``D_i`` and loss at ``points`` evenly spaced steps (the loss as block means), for ``save_arrays``."""
    steps, points = positive_int("steps", steps), positive_int("points", points)
    if not isinstance(run, dict) or not {"checkpoints", "gK", "gQ", "D", "loss", "diverged_at"} <= set(run):
        raise ValueError("run must be the dict train_attention_sgd returns")
    stride = steps // points
    if stride == 0 or len(run["loss"]) % stride:
        raise ValueError(f"steps must be a multiple of points ({points}) no smaller, got {steps}")
    diverged_at = run["diverged_at"]
    return {key: run[key] for key in ("checkpoints", "gK", "gQ", "gK_se", "gQ_se")} | {
        "D_steps": np.arange(0, steps + 1, stride),
        "D": run["D"][::stride],
        "loss": run["loss"].reshape(-1, stride).mean(axis=1),
        "diverged_at": [math.nan if diverged_at is None else diverged_at],
    }


def gap_summary(log_gap, *, last=3):
    """Chapter section 5, Fig. 6's approach and overlap from ``log(g_K^i / g_Q^i)`` at the checkpoints, shape
    ``(checkpoints, layers, width)``: the mean ``|log gap|`` at the first checkpoint, over the ``last`` ones, and
    the share of pairs whose mean log gap over the ``last`` ones is within a factor 2."""
    log_gap = real_array("log_gap", log_gap)
    last = positive_int("last", last)
    if log_gap.ndim != 3 or len(log_gap) < last:
        raise ValueError(f"log_gap must be (checkpoints >= last, layers, width), got shape {log_gap.shape}")
    within_2 = float(np.mean(np.abs(log_gap[-last:].mean(axis=0)) < math.log(2)))
    return np.abs(log_gap[0]).mean(), np.abs(log_gap[-last:]).mean(), within_2


def describe_archive(paper_scale, law=None):
    """Chapter section 5: one paragraph on the archived full run whose Fig. 6 series is ``paper_scale`` (from
    ``archived_arrays("balance", "fig6")``) and, if given, its law's drift ``law`` (``"b11_law"``)."""
    if not isinstance(paper_scale, dict) or not {"gK", "gQ", "checkpoints", "diverged_at"} <= set(paper_scale):
        raise ValueError("paper_scale must be the archived fig6 arrays")
    gap = np.log(paper_scale["gK"] / paper_scale["gQ"])
    kept = np.isfinite(gap).all(axis=(1, 2))  # the checkpoints before a divergence
    start, end, within_2 = gap_summary(gap[kept])
    text = (f"archived full run of {paper_scale['date']}, commit {paper_scale['commit']}, {paper_scale['machine']}:"
            f" loss not finite from step {paper_scale['diverged_at'][0]:.0f}; over the"
            f" {paper_scale['checkpoints'][kept][-1]:.0f} steps before, mean |log(g_K/g_Q)| {start:.2f} at the"
            f" start, {end:.2f} over the last 3 checkpoints; pairs within a factor 2 at the end: {within_2:.2f}")
    if law is not None:
        text += (f"\nmeasured / law's drift over steps {law['steps'][0]:.0f} to {law['steps'][1]:.0f}:"
                 f" {law['rate_ratio'][0]:.2f}; its noise part alone:"
                 f" {law['noise_part'].sum() / law['predicted'].sum():.2f}")
    return text
