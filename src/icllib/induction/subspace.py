"""The chapter ``induction_subspace``: the 19-dimensional subspace of Theorem 1 (Musat 2025,
``musat2025induction``, Sec. 4, App. A, App. C-E).

Read top to bottom:

1. the subspace: the basis of Eqs. 6-8 flattened to R^{28 D^2} (Sec. 4), coordinates, projection, residual;
2. the group of data rotations of App. A.2-A.5, its action on data and on weights, and a finite set of
   rotations that averages exactly like the Haar measure (Propositions 1, 2 and 4 in exact arithmetic are in
   :mod:`icllib.induction.subspace_theory`);
3. SGD from zero on the full matrices, on the three induction-head parameters, or on symmetrised batches
   (App. C-D);
4. the standard two-layer attention-only transformer of Sec. 2 (App. E), its task and its training;
5. what the chapter reads from its runs (summaries and the rows of its tables), and the tolerance and reason of
   each check (``CHECKS``).

The model of Eq. 1, the task and the structured weights are in :mod:`icllib.induction.model`.

A triple (W1, W2, W3) is flattened to one vector of R^{28 D^2} (Sec. 4). The 19 basis triples B_k place an
I or an M in one D x D block (Eqs. 6-8); they are Frobenius-orthogonal with ||B_k||_F^2 = D (<I, M> = tr M
= 0), so the coordinates are c_k = <W, B_k>/D and the orthogonal projection is Pi(W) = sum_k c_k B_k.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from icllib.claims import check_arguments
from icllib.config import generator_on, progress
from icllib.induction.model import (INDUCTION_INDICES, PSEUDO_PARAMETERS, DisentangledTransformer, haar_rows,
                                     causal_softmax, disentangled_forward, disentangled_states, rotation_M,
                                     sample_icl_batch, structured_weights, weight_triple_D)
from icllib.validation import (even_int, non_empty, one_of, positive_int, positive_number, power_of_two, real_array,
                               square_matrices, tensor_arg, torch_generator_arg)


def _data_pair(X, y, D: int):
    """Check a batch ``X (..., 2N+1, 2D)`` with its targets ``y (..., D)``."""
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.shape[-1] != 2 * D:
        raise ValueError(f"X must be a tensor (..., 2N+1, {2 * D}), got {getattr(X, 'shape', X)!r}")
    tensor_arg("y", y, shape=tuple(X.shape[:-2]) + (D,))


# ---------------------------------------------------------------------------------------------------
# 1. The 19-dimensional subspace (Theorem 1, Sec. 4)


def parameter_count(D: int) -> int:
    """Number of raw parameters of Eq. 1: ``4D^2 + 16D^2 + 8D^2 = 28 D^2`` (Sec. 4: "Our model has a total")."""
    D = positive_int("D", D, 2)
    return sum(W.numel() for W in DisentangledTransformer(D).parameters())


def flatten_weights(W1, W2, W3) -> torch.Tensor:
    """The parameter vector ``[vec W1 | vec W2 | vec W3]`` of Sec. 4 (length 28 D^2)."""
    weight_triple_D(W1, W2, W3)
    return torch.cat([W1.reshape(-1), W2.reshape(-1), W3.reshape(-1)])


def unflatten_weights(vector: torch.Tensor, D: int):
    """Inverse of :func:`flatten_weights`."""
    D = positive_int("D", D, 2)
    tensor_arg("vector", vector, shape=(28 * D * D,))
    W1, W2, W3 = torch.split(vector, [4 * D * D, 16 * D * D, 8 * D * D])
    return W1.reshape(2 * D, 2 * D), W2.reshape(4 * D, 4 * D), W3.reshape(8 * D, D)


def subspace_basis(D: int) -> torch.Tensor:
    """The 19 basis triples of Eqs. 6-8, flattened: a ``(19, 28 D^2)`` float64 tensor, rows in the order of
    ``PSEUDO_PARAMETERS``."""
    D = even_int("D", D, why="Eq. 2")
    return torch.stack([flatten_weights(*structured_weights({name: 1.0}, D)) for name in PSEUDO_PARAMETERS])


def pseudo_parameter_vector(W1, W2, W3) -> torch.Tensor:
    """The 19 coordinates ``c_k = <W, B_k>_F / D`` of any weights (the symbols of Eqs. 6-8), as a tensor in the
    order of ``PSEUDO_PARAMETERS``.

    App. D measures "the magnitude of the parameter vector along the corresponding component", which would be
    ``<W, B_k>/||B_k|| = sqrt(D) c_k``; we keep ``c_k``, the coefficient that appears in Eqs. 6-8.
    """
    D = weight_triple_D(W1, W2, W3)
    basis = subspace_basis(D).to(W1.dtype)
    return basis @ flatten_weights(W1, W2, W3) / D


def pseudo_params(W1, W2, W3) -> dict[str, float]:
    """The 19 coordinates of any weights as a mapping ``{"alpha1": ..., ..., "gamma4": ...}``: the inverse of
    :func:`~icllib.induction.model.structured_weights` on the subspace, and the coordinates of the projection :func:`project_structured`
    off it."""
    return dict(zip(PSEUDO_PARAMETERS, pseudo_parameter_vector(W1, W2, W3).tolist()))


def project_structured(W1, W2, W3):
    """The orthogonal (Frobenius) projection ``Pi(W) = sum_k c_k B_k`` onto the 19-dimensional subspace."""
    D = weight_triple_D(W1, W2, W3)
    return structured_weights(pseudo_parameter_vector(W1, W2, W3), D)


def subspace_residual(W1, W2, W3) -> tuple[float, float, float]:
    """Per matrix, the off-subspace fraction ``r(W) = ||W - Pi(W)||_F / ||W||_F`` (0 for a zero matrix)."""
    weights = (W1, W2, W3)
    projected = project_structured(*weights)
    ratios = []
    for W, P in zip(weights, projected):
        norm = float(torch.linalg.norm(W))
        ratios.append(float(torch.linalg.norm(W - P)) / norm if norm > 0 else 0.0)
    return tuple(ratios)


# ---------------------------------------------------------------------------------------------------
# 2. The group of data rotations (App. A.2-A.5)


def _check_rotations(E, F) -> int:
    square_matrices("E", E, what="(..., D, D)")
    tensor_arg("F", F, shape=E.shape, what=f"of the shape of E {tuple(E.shape)}")
    return E.shape[-1]


def random_rotation(D: int, *, generator: torch.Generator, count: int | None = None):
    """A group element ``h = (E, F)`` of App. A.5: Haar ``E`` in O(D) (Def. 4) and a block-orthogonal
    ``F = M^s diag(E', E')`` with Haar ``E'`` in O(D/2) and a fair coin ``s`` (Def. 5); ``F`` commutes with ``M``.

    With ``count``, ``count`` independent elements as stacks ``(count, D, D)`` (drawn in one batch).
    """
    D = even_int("D", D, why="Eq. 2")
    generator = torch_generator_arg("generator", generator)
    batch = 1 if count is None else positive_int("count", count, 1)
    half = D // 2
    E = haar_rows(D, D, batch, generator)
    inner = haar_rows(half, half, batch, generator)
    F = torch.zeros(batch, D, D, dtype=torch.float64)
    F[:, :half, :half], F[:, half:, half:] = inner, inner
    swap = torch.randint(0, 2, (batch,), generator=generator).bool()
    F = torch.where(swap[:, None, None], rotation_M(D) @ F, F)
    return (E[0], F[0]) if count is None else (E, F)


def rotate_data(X: torch.Tensor, y: torch.Tensor, E: torch.Tensor, F: torch.Tensor):
    """The transformed data of App. A.5/A.6: ``X' = X diag(E, F)``, ``y' = y E``.

    ``E`` and ``F`` may be stacks ``(K, D, D)``; the result then gains a leading axis of length K.
    """
    D = _check_rotations(E, F)
    _data_pair(X, y, D)
    lead = X.ndim - 2
    # Stacked rotations broadcast against the batch axes of X: (K, 1, ..., 1, D, D).
    Ek = E.reshape(E.shape[:-2] + (1,) * lead + (D, D))
    Fk = F.reshape(F.shape[:-2] + (1,) * lead + (D, D))
    X_rot = torch.cat([X[..., :D] @ Ek, X[..., D:] @ Fk], dim=-1)
    y_rot = (y.unsqueeze(-2) @ Ek).squeeze(-2)
    return X_rot, y_rot


def rho(E: torch.Tensor, F: torch.Tensor, W1, W2, W3):
    """The action on weights, ``rho(h) W = (R1 W1 R1^T, R2 W2 R2^T, R3 W3 E^T)`` with ``R1 = diag(E, F)``,
    ``R2 = diag(E, F, E, F)``, ``R3 = diag(E, F, ..., E, F)`` (8 blocks).

    It is defined by ``L(W; X R1, y E) = L(rho(h) W; X, y)``, so the per-sample gradient transforms as
    ``g(W; h.x) = rho(h)^{-1} g(rho(h) W; x)``; the structured weights of Eqs. 6-8 are its fixed points.
    """
    D = _check_rotations(E, F)
    if E.ndim != 2:
        raise ValueError(f"E must be a single D x D matrix, got shape {tuple(E.shape)}")
    if weight_triple_D(W1, W2, W3) != D:
        raise ValueError(f"the weights have D = {W1.shape[0] // 2}, E and F have D = {D}")
    R1, R2, R3 = (torch.block_diag(*([E, F] * k)) for k in (1, 2, 4))
    return R1 @ W1 @ R1.T, R2 @ W2 @ R2.T, R3 @ W3 @ E.T


def hadamard_cyclic_group(d: int) -> torch.Tensor:
    """The ``d^2`` orthogonal matrices ``C^c diag(h_k)`` (C the cyclic shift, h_k the rows of the Sylvester
    Hadamard matrix): averaging ``E^T A E`` over them gives ``(tr A / d) I`` exactly, as the Haar average of
    Proposition 1 does. ``d`` must be a power of two."""
    d = power_of_two("d", d, why="Sylvester Hadamard matrix")
    H = torch.ones(1, 1, dtype=torch.float64)
    while H.shape[0] < d:
        H = torch.cat([torch.cat([H, H], 1), torch.cat([H, -H], 1)], 0)
    shifts = torch.stack([torch.roll(torch.eye(d, dtype=torch.float64), c, dims=0) for c in range(d)])
    return (shifts[:, None] * H[None, :, None, :]).reshape(d * d, d, d)


def orbit_rotations(D: int):
    """A finite set of ``2 D^2`` group elements ``(eps E_k, F_k)`` whose average reproduces the Haar average:
    for any weights ``W``, the mean of ``rho(h)^{-1} W`` over the set is exactly ``Pi(W)``.

    ``E_k`` runs over :func:`hadamard_cyclic_group` (D), ``F_k = M^s diag(E', E')`` over ``s`` in {0, 1} and
    ``E'`` in the group of size ``(D/2)^2`` (each twice), and ``eps = +-1`` on ``E`` cancels the blocks that
    mix contents and positions (Proposition 3). Returns stacks ``(E, F)`` of shape ``(2 D^2, D, D)``.
    """
    D = power_of_two("D", D, 2)
    E = hadamard_cyclic_group(D)
    inner = hadamard_cyclic_group(D // 2)
    blocks = torch.zeros(inner.shape[0], D, D, dtype=torch.float64)
    blocks[:, :D // 2, :D // 2] = inner
    blocks[:, D // 2:, D // 2:] = inner
    F = torch.cat([blocks, rotation_M(D) @ blocks])
    F = F[torch.arange(D * D) % F.shape[0]]
    return torch.cat([E, -E]), torch.cat([F, F])


def symmetrise(X: torch.Tensor, y: torch.Tensor):
    """A batch ``(B, 2N+1, 2D)`` replaced by its ``2 D^2 B`` images under :func:`orbit_rotations`: the gradient of
    the mean loss over it is the projection ``Pi`` of the plain batch gradient, at structured weights."""
    tensor_arg("X", X, min_ndim=3, what="batch (B, 2N+1, 2D)")
    if X.ndim != 3:
        raise ValueError(f"X must be a batch (B, 2N+1, 2D), got {tuple(X.shape)!r}")
    E, F = orbit_rotations(X.shape[-1] // 2)
    X_rot, y_rot = rotate_data(X, y, E, F)
    return X_rot.reshape(-1, *X.shape[1:]), y_rot.reshape(-1, y.shape[-1])


# ---------------------------------------------------------------------------------------------------
# 3. Losses, gradients and SGD from zero (App. C-D)


def loss_and_grads(X: torch.Tensor, y: torch.Tensor, W1, W2, W3, *, strict: bool = True):
    """Batch mean of ``||y - z||^2`` (the paper's loss, sum over the D coordinates) and its gradients in
    ``(W1, W2, W3)``; returns ``(loss, (g1, g2, g3))``. Divide by ``D`` for the per-coordinate loss."""
    D = weight_triple_D(W1, W2, W3)
    _data_pair(X, y, D)
    weights = [W.detach().requires_grad_(True) for W in (W1, W2, W3)]
    z = disentangled_forward(X, *weights, strict=strict)
    loss = ((y - z) ** 2).sum(-1).mean()
    return float(loss.detach()), tuple(torch.autograd.grad(loss, weights))


TRAINING_MODES = ("full", "three", "symmetrised")


def train_sgd(N: int, D: int, *, steps: int, batch: int, lr: float, generator: torch.Generator,
              training: str = "full", strict: bool = True, snapshots=()):
    """SGD from zero (Assumption 1) on fresh Gaussian batches of Eq. 5, as in App. C-D.

    The step is ``W <- W - lr grad(L/D)``: the per-coordinate mean loss, since ``lr = 1`` on the paper's
    ``||y - z||^2`` diverges (the gamma_1 path has curvature 2 per coordinate). ``training`` is ``"full"`` (all
    28 D^2 entries), ``"three"`` (the step projected on alpha_3, beta_2, gamma_3, App. D bottom row) or
    ``"symmetrised"`` (each batch of ``batch`` base sequences replaced by its ``2 D^2 batch`` images under
    :func:`orbit_rotations`, which makes the batch gradient a population-like, structured one).

    Returns a dict of arrays over steps ``0..steps``: ``loss`` (the paper's units, on the batch of the next
    step), ``coords`` (``(steps+1, 19)`` pseudo-parameters), ``residual`` (``(steps+1, 3)``, see
    :func:`subspace_residual`), ``w2_row2`` (max ``|W2|`` over block-row 2, the query-position rows),
    ``grad_row2`` (max ``|dL/dW2|`` there, per step) and ``weights``, the final ``(W1, W2, W3)``; with
    ``snapshots`` (step numbers in ``0..steps``), also ``snapshots``: ``{step: (W1, W2, W3)}`` (App. C's figures).
    """
    N = positive_int("N", N, 1)
    D = positive_int("D", D, 2)
    steps = positive_int("steps", steps, 1)
    batch = positive_int("batch", batch, 1)
    lr = positive_number("lr", lr)
    one_of("training", training, TRAINING_MODES)
    generator = torch_generator_arg("generator", generator)
    if training == "symmetrised" and D & (D - 1):
        raise ValueError(f"symmetrised training needs D a power of two, got {D}")
    snapshots = {positive_int("snapshots", step, 0) for step in snapshots}
    if any(step > steps for step in snapshots):
        raise ValueError(f"snapshots must be steps in 0..{steps}, got {sorted(snapshots)}")
    weights = list(structured_weights({}, D))
    basis = subspace_basis(D)[list(INDUCTION_INDICES)] if training == "three" else None
    history = {"loss": [], "coords": [], "residual": [], "w2_row2": [], "grad_row2": []}
    saved = {}
    for step in progress(range(steps + 1), total=steps + 1, desc=f"SGD ({training})"):
        X, y = sample_icl_batch(D, N, batch, generator=generator)
        if training == "symmetrised":
            X, y = symmetrise(X, y)
        loss, grads = loss_and_grads(X, y, *weights, strict=strict)
        history["loss"].append(loss)
        history["coords"].append(pseudo_parameter_vector(*weights).numpy())
        history["residual"].append(subspace_residual(*weights))
        history["w2_row2"].append(float(weights[1][D:2 * D].abs().max()))
        history["grad_row2"].append(float(grads[1][D:2 * D].abs().max()))
        if step in snapshots:
            saved[step] = tuple(weights)
        if step == steps:
            break
        if basis is not None:
            flat = basis.T @ (basis @ flatten_weights(*grads) / D)
            grads = unflatten_weights(flat, D)
        weights = [W - (lr / D) * g for W, g in zip(weights, grads)]
    result = {**{key: np.asarray(value) for key, value in history.items()}, "weights": tuple(weights)}
    return {**result, "snapshots": saved} if snapshots else result


# ---------------------------------------------------------------------------------------------------
# 4. The standard attention-only transformer of Sec. 2 (App. E), at a CPU-sized width


def standard_task(batch: int, *, generator: torch.Generator, vocab: int = 32, block: int = 32, pairs: int = 8):
    """Sequences of App. E: ``2 * pairs`` distinct tokens grouped in item-label pairs, then one of the items as
    the query; the target is its label. Each sequence (length ``2 * pairs + 1``) starts at a uniform offset in
    the block. Returns ``tokens`` and ``positions`` ``(batch, 2 pairs + 1)`` and ``target`` ``(batch,)``, on the
    generator's device."""
    batch = positive_int("batch", batch, 1)
    pairs = positive_int("pairs", pairs, 1)
    vocab = positive_int("vocab", vocab, 2 * pairs)
    block = positive_int("block", block, 2 * pairs + 1)
    generator = torch_generator_arg("generator", generator)
    # argsort of uniform noise draws 2 * pairs distinct tokens per row without a loop over sequences
    device = generator.device
    chosen = torch.rand(batch, vocab, generator=generator, device=device).argsort(dim=1)[:, :2 * pairs]
    q = torch.randint(0, pairs, (batch,), generator=generator, device=device)
    rows = torch.arange(batch, device=device)
    tokens = torch.cat([chosen, chosen[rows, 2 * q].unsqueeze(1)], dim=1)
    offset = torch.randint(0, block - 2 * pairs, (batch, 1), generator=generator, device=device)
    positions = offset + torch.arange(2 * pairs + 1, device=device)
    return tokens, positions, chosen[rows, 2 * q + 1]


# The paper states no initialisation (App. E). ``normal``: N(0, 0.02^2) for every weight, the book's choice;
# ``gpt2``: the same with the output projections W_O scaled by 1/sqrt(2 n_layers) (GPT-2's residual scaling);
# ``pytorch``: what nn.Embedding and a bias-free nn.Linear start from (N(0, 1) embeddings, U(+-1/sqrt(fan_in))
# matrices). The three draw their weights in the same order.
INITIALISATIONS = ("normal", "gpt2", "pytorch")


class StandardTransformer(torch.nn.Module):
    """Two attention-only layers with one head each, token and positional embeddings, no normalisation, no MLP,
    no weight tying (Sec. 2.1, App. E). Residual stream ``h = E[token] + P[position]``; layer ``l`` adds
    ``softmax(h W_Q^T W_K h^T / sqrt(D_H)) h W_V^T W_O^T`` under the ordinary causal mask; the output layer
    ``W_o`` reads the last position. ``init`` is one of ``INITIALISATIONS`` (the paper does not state one);
    the weights are drawn on the generator's device."""

    def __init__(self, D: int, *, generator: torch.Generator, vocab: int = 32, block: int = 32,
                 init: str = "normal"):
        super().__init__()
        D = positive_int("D", D, 1)
        vocab = positive_int("vocab", vocab, 2)
        block = positive_int("block", block, 2)
        generator = torch_generator_arg("generator", generator)
        init = one_of("init", init, INITIALISATIONS)
        on = {"generator": generator, "device": generator.device}

        def weight(*shape, embedding=False, residual_output=False):
            if init == "pytorch":
                values = (torch.randn(*shape, **on) if embedding
                          else (2 * torch.rand(*shape, **on) - 1) / math.sqrt(shape[-1]))
            else:
                values = 0.02 * torch.randn(*shape, **on)
                if init == "gpt2" and residual_output:
                    values = values / math.sqrt(2 * 2)
            return torch.nn.Parameter(values)

        self.D = D
        self.E, self.P = weight(vocab, D, embedding=True), weight(block, D, embedding=True)
        self.W_Q, self.W_K, self.W_V = (torch.nn.ParameterList([weight(D, D) for _ in range(2)]) for _ in range(3))
        self.W_O = torch.nn.ParameterList([weight(D, D, residual_output=True) for _ in range(2)])
        self.W_out = weight(vocab, D)

    def attention(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """Row-softmax attention weights of one layer, ``(batch, n, n)``, ordinary causal mask."""
        scores = (h @ self.W_Q[layer].T) @ (h @ self.W_K[layer].T).transpose(-1, -2) / math.sqrt(self.D)
        return causal_softmax(scores, strict=False)

    def residual_streams(self, tokens: torch.Tensor, positions: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream ``(batch, n, D)`` before layer 1, after it and after layer 2 (Sec. 2.2's vectors)."""
        h = self.E[tokens] + self.P[positions]
        streams = [h]
        for layer in range(2):
            h = h + self.attention(layer, h) @ h @ self.W_V[layer].T @ self.W_O[layer].T
            streams.append(h)
        return streams

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Logits of the last position, ``(batch, vocab)``: :meth:`residual_streams`' last row after layer 2, for
        that row alone (no other position's layer-2 output is read; the last position sees every key)."""
        h = self.E[tokens] + self.P[positions]
        h = h + self.attention(0, h) @ h @ self.W_V[0].T @ self.W_O[0].T
        last = h[:, -1:]
        scores = (last @ self.W_Q[1].T) @ (h @ self.W_K[1].T).transpose(-1, -2) / math.sqrt(self.D)
        last = last + torch.softmax(scores, dim=-1) @ h @ self.W_V[1].T @ self.W_O[1].T
        return last[:, 0] @ self.W_out.T

    def previous_position_attention(self) -> torch.Tensor:
        """Layer-1 attention between positions alone, ``softmax_j<=i(p_i W_Q^T W_K p_j^T / sqrt(D))`` (row: query
        ``i``, column: key ``j``; Fig. 2's bottom-right block), on the CPU wherever the model is."""
        with torch.no_grad():
            return self.attention(0, self.P.unsqueeze(0))[0].cpu()

    def positional_scores(self) -> torch.Tensor:
        """Layer 1's pre-softmax positional scores ``p_i W_Q^T W_K p_j^T / sqrt(D)`` (Fig. 2's object), on the CPU."""
        with torch.no_grad():
            return ((self.P @ self.W_Q[0].T) @ (self.P @ self.W_K[0].T).T / math.sqrt(self.D)).cpu()


def train_standard(D: int, *, steps: int, batch: int, generator: torch.Generator, lr: float = 1e-3,
                   weight_decay: float = 0.01, init: str = "normal", on_step=None):
    """AdamW on the negative log-likelihood of the target, fresh batches every step (App. E), with the model's
    initialisation ``init`` (``INITIALISATIONS``); model and batches on the generator's device. ``on_step(step,
    model)``, if given, reads the model after each step (it must neither change it nor draw from ``generator``).

    Returns ``(model, losses)``, with the loss of every step's batch (a test loss: batches are independent)."""
    steps = positive_int("steps", steps, 1)
    batch = positive_int("batch", batch, 1)
    lr = positive_number("lr", lr)
    weight_decay = positive_number("weight_decay", weight_decay, allow_zero=True)
    if on_step is not None and not callable(on_step):
        raise ValueError(f"on_step must be a function of (step, model) or None, got {on_step!r}")
    model = StandardTransformer(D, generator=generator, init=init)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for step in progress(range(1, steps + 1), total=steps, desc=f"standard transformer D = {D}"):
        tokens, positions, target = standard_task(batch, generator=generator)
        loss = torch.nn.functional.cross_entropy(model(tokens, positions), target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
        if on_step is not None:
            on_step(step, model)
    return model, np.asarray(losses)


def standard_accuracy(model: StandardTransformer, batch: int, *, generator: torch.Generator) -> float:
    """Fraction of fresh sequences whose target is the arg-max of the logits (drawn on the model's device, from
    ``generator`` itself if it is there, else through :func:`icllib.config.generator_on`)."""
    if not isinstance(model, StandardTransformer):
        raise ValueError(f"model must be a StandardTransformer, got {model!r}")
    generator = generator_on(generator, model.E.device)
    tokens, positions, target = standard_task(batch, generator=generator)
    with torch.no_grad():
        return float((model(tokens, positions).argmax(-1) == target).double().mean())


def previous_position_weight(attention: torch.Tensor) -> float:
    """Mean over query positions ``i >= 1`` of the weight on position ``i - 1`` in a row-softmax ``(n, n)``
    attention matrix (Fig. 2's subdiagonal; chance at initialisation is about 1/i)."""
    attention = tensor_arg("attention", attention, min_ndim=2, what="of shape (n, n)")
    if attention.ndim != 2 or attention.shape[0] != attention.shape[1] or attention.shape[0] < 2:
        raise ValueError(f"attention must be a square (n, n) matrix with n >= 2, got {tuple(attention.shape)}")
    rows = torch.arange(1, attention.shape[0], device=attention.device)
    return float(attention[rows, rows - 1].mean())


# ---------------------------------------------------------------------------------------------------
# 5. The chapter's bookkeeping: summaries of its runs and the tolerances of its checks
# ---------------------------------------------------------------------------------------------------

def _triple(weights, D: int | None = None):
    """``weights`` as a checked triple ``(W1, W2, W3)`` (of size ``D`` if given) and its ``D``."""
    if not isinstance(weights, (tuple, list)) or len(weights) != 3 or D not in (None, weight_triple_D(*weights)):
        raise ValueError(f"weights must be a triple (W1, W2, W3) of the model of Eq. 1, got {weights!r:.80}")
    return tuple(weights), weight_triple_D(*weights)


def basis_errors(coefficients: torch.Tensor, weights, D: int) -> tuple[float, float, float]:
    """Chapter, *Nineteen basis directions*: ``|Gram - D I|``, the round trip of ``coefficients``, and
    ``Pi(Pi W) - Pi W`` at ``weights``."""
    basis = subspace_basis(D)
    coefficients = tensor_arg("coefficients", coefficients, shape=(19,))
    weights, _ = _triple(weights, D)
    gram = float((basis @ basis.T - D * torch.eye(19, dtype=torch.float64)).abs().max())
    trip = float((pseudo_parameter_vector(*structured_weights(coefficients, D)) - coefficients).abs().max())
    once = project_structured(*weights)
    return gram, trip, max(float((a - b).abs().max()) for a, b in zip(once, project_structured(*once)))


def equivariance_error(weights, *, strict: bool, generator: torch.Generator, N: int = 4) -> float:
    """Chapter, *The inductive step* (Eq. 9): the largest relative error of ``g(W; h.x) = rho(h)^{-1} g(W; x)``, one
    sample."""
    weights, D = _triple(weights)
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be True or False, got {strict!r}")
    X, y = sample_icl_batch(D, N, 1, generator=generator)
    E, F = random_rotation(D, generator=generator)
    _, g = loss_and_grads(X, y, *weights, strict=strict)
    _, g_rot = loss_and_grads(*rotate_data(X, y, E, F), *weights, strict=strict)
    return max(float((a - b).norm() / b.norm()) for a, b in zip(rho(E, F, *g_rot), g))


def a73_chain_rule_error(X: torch.Tensor, y: torch.Tensor, weights) -> float:
    """Chapter, *The inductive step* (A.7.3): the relative error of ``dL/dW1_ij = X_i^T (dL/dS) X_j`` against
    autograd."""
    weights, D = _triple(weights)
    _data_pair(X, y, D)
    W = tuple(w.clone().requires_grad_(True) for w in weights)
    states = disentangled_states(X, *W)
    states["S"].retain_grad()
    ((y - states["z"]) ** 2).sum(-1).mean().backward()
    dS, blocks = states["S"].grad, (X[..., :D], X[..., D:])  # X = [X_1 | X_2]
    return max(float((torch.einsum("bki,bkl,blj->ij", blocks[i], dS, blocks[j])
                      - W[0].grad[D * i:D * i + D, D * j:D * j + D]).abs().max() / W[0].grad.abs().max())
               for i in range(2) for j in range(2))


def haar_z_score(samples: torch.Tensor, target: torch.Tensor) -> float:
    """Chapter, *Propositions 1-4 of App. A*: the largest entry error of the mean of ``samples`` from ``target``, in
    standard errors."""
    if (samples := tensor_arg("samples", samples, min_ndim=3)).shape[0] < 2:
        raise ValueError(f"samples must hold at least 2 samples, got {samples.shape[0]}")
    target = tensor_arg("target", target, shape=tuple(samples.shape[1:]))
    standard_error = samples.std(0) / np.sqrt(samples.shape[0])
    return float(((samples.mean(0) - target).abs() / standard_error).max())


def orbit_average_error(A: torch.Tensor, E: torch.Tensor, F: torch.Tensor) -> float:
    """Chapter, *Propositions 1-4 of App. A*: the error of the rotations ``(E, F)`` of :func:`orbit_rotations` on
    Props. 1 and 3."""
    D = _check_rotations(E, F)
    A = tensor_arg("A", A, shape=(D, D))
    mean_EAE = (E.transpose(-1, -2) @ A @ E).mean(0)
    return max(float((mean_EAE - torch.trace(A) / D * torch.eye(D, dtype=torch.float64)).abs().max()),
               float((E.transpose(-1, -2) @ A @ F).mean(0).abs().max()))


def plateau_exit(loss, D: int) -> int:
    """The first step with batch loss at most ``D / 2``, half its starting value ``E|b|^2 = D`` (chapter,
    *Hypotheses 1 and 2*)."""
    if (loss := real_array("loss", loss)).ndim != 1:
        raise ValueError(f"loss must be a series of batch losses, got shape {loss.shape}")
    return int(np.argmax(loss <= positive_int("D", D) / 2))


def hypotheses_summary(full: dict, three: dict, D: int) -> dict:
    """Chapter, *Hypotheses 1 and 2*: the plateau ``exits`` of runs ``full`` and ``three`` of :func:`train_sgd`,
    whether the head is ``on_top`` of the final ``|c_k|``, its ``margin`` over the rest, and ``ok``: both
    Hypotheses hold."""
    for name, run in (("full", full), ("three", three)):
        if not isinstance(run, dict) or not {"loss", "coords"} <= set(run):
            raise ValueError(f"{name} must be a run of train_sgd, got {run!r:.60}")
    exits = {"full": plateau_exit(full["loss"], D), "three": plateau_exit(three["loss"], D)}
    final = np.abs(full["coords"][-1])
    on_top = set(np.argsort(final)[-3:].tolist()) == set(INDUCTION_INDICES)
    runner_up = max(final[k] for k in range(19) if k not in INDUCTION_INDICES)
    margin = min(final[list(INDUCTION_INDICES)]) / runner_up
    return {"exits": exits, "on_top": on_top, "margin": margin,
            "ok": on_top and 0.75 <= exits["three"] / exits["full"] <= 1.0}


def ablation_losses(weights, X: torch.Tensor, y: torch.Tensor) -> tuple[np.ndarray, float]:
    """Chapter, *Hypotheses 1 and 2*: the loss on ``(X, y)`` without each ``c_k B_k`` in turn (19 values), and with
    all of them."""
    weights, D = _triple(weights)
    _data_pair(X, y, D)
    flat, coords, basis = flatten_weights(*weights), pseudo_parameter_vector(*weights), subspace_basis(D)
    ablated = np.array([loss_and_grads(X, y, *unflatten_weights(flat - coords[k] * basis[k], D))[0]
                        for k in range(19)])
    return ablated, loss_and_grads(X, y, *weights)[0]


def rebound(losses, exit_step: int, window: int = 20) -> float:
    """Chapter, *Hypotheses 1 and 2*: the last ``window``-step mean loss over the lowest one after the plateau exit."""
    window, losses = positive_int("window", window), real_array("losses", losses)
    if losses.ndim != 1 or positive_int("exit_step", exit_step, minimum=0) > len(losses) - window:
        raise ValueError(f"losses must be a series with a full window after exit_step, got {losses.shape}")
    means = np.convolve(np.asarray(losses), np.ones(window) / window, mode="valid")
    return means[-1] / means[exit_step:].min()


def hypotheses_table(compared: list) -> tuple[list[str], list[list]]:
    """Chapter, *Hypotheses 1 and 2*: header and rows of the table of ``compared``, a list of
    ``(name, (D, N), runs, summary)`` with ``runs`` the runs ``full`` and ``three`` of :func:`train_sgd` and
    ``summary`` their :func:`hypotheses_summary`: the plateau exits, whether the head is on top, each run's
    :func:`rebound`."""
    if not isinstance(compared, list) or not compared or not all(
            isinstance(row, tuple) and len(row) == 4 and isinstance(row[2], dict) and {"full", "three"} <= set(row[2])
            and isinstance(row[3], dict) and {"exits", "on_top"} <= set(row[3]) for row in compared):
        raise ValueError("compared must be a list of (name, (D, N), runs, hypotheses_summary of the runs)")
    rows = []
    for name, (D, N), runs, summary in compared:
        exits = summary["exits"]
        rebounds = [f"x{rebound(runs[run]['loss'], exits[run]):.1f}" for run in ("full", "three")]
        rows.append([name, D, N, exits["full"], exits["three"], summary["on_top"], *rebounds])
    header = ["run", "D", "N", "exit (full)", "exit (three)", "head on top", "rebound (full)", "rebound (three)"]
    return header, rows


def appc_rows(app_c_runs: dict) -> tuple[list, list[float], list[bool]]:
    """Chapter, *The weights during training*: the table of App. C's snapshots ``{N: (steps, run)}``, the
    smallest share in the subspace per snapshot, and per ``N`` whether alpha3, beta2, gamma3 are the largest
    pseudo-parameters at its last step."""
    if not isinstance(app_c_runs, dict) or not app_c_runs or not all(
            isinstance(v, tuple) and len(v) == 2 and "snapshots" in v[1] for v in app_c_runs.values()):
        raise ValueError("app_c_runs must be {N: (steps, run of train_sgd with snapshots)}")
    table, shares, head_on_top = [], [], []
    for N_c, (steps_c, run) in app_c_runs.items():
        for step in steps_c:
            weights = run["snapshots"][step]
            share = [1.0 - r**2 for r in subspace_residual(*weights)]
            coords = pseudo_params(*weights)
            largest = sorted(coords, key=lambda name: -abs(coords[name]))[:4]
            shares.append(min(share))
            if step == steps_c[-1]:
                head_on_top.append(set(largest[:3]) == {"alpha3", "beta2", "gamma3"})
            table.append([N_c, step, f"{run['loss'][step]:.2f}", " / ".join(f"{x:.2f}" for x in share),
                          ", ".join(f"{name} {coords[name]:.2f}" for name in largest)])
    return table, shares, head_on_top


def span_remainder(stream: torch.Tensor, columns) -> float:
    """The relative norm of ``stream`` outside the span of ``columns`` (Sec. 2.2's subspaces)."""
    stream = tensor_arg("stream", stream, min_ndim=2)
    columns = non_empty("columns", columns)
    if stream.ndim != 2 or not all(isinstance(c, torch.Tensor) and c.ndim == 2 and c.shape[0] == stream.shape[1]
                                   for c in columns):
        raise ValueError(f"columns must be matrices with {stream.shape[-1]} rows, the width of stream (n, D)")
    basis_q, _ = torch.linalg.qr(torch.cat(list(columns), dim=1).double())
    return float((stream - stream @ basis_q @ basis_q.T).norm() / stream.norm())


def subdiagonal_margins(scores: torch.Tensor) -> torch.Tensor:
    """Fig. 2's subdiagonal on the pre-softmax block ``scores (n, n)``: for each query row ``i >= 1``, the margin
    ``s_{i,i-1} - max_{j <= i, j != i-1} s_ij`` by which the previous position is the causal arg-max (float64;
    positive where it is, strictly; negative where the row misses)."""
    scores = tensor_arg("scores", scores, min_ndim=2, what="of shape (n, n)").double()
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1] or scores.shape[0] < 2:
        raise ValueError(f"scores must be a square (n, n) matrix with n >= 2, got {tuple(scores.shape)}")
    rows, n = torch.arange(1, len(scores)), len(scores)
    others = scores.masked_fill(torch.ones(n, n, dtype=torch.bool).triu(1), -math.inf)  # the causal mask
    others[rows, rows - 1] = -math.inf
    return scores[rows, rows - 1] - others[1:].max(dim=-1).values


def wide_run_rows(runs: list) -> list:
    """Chapter, *The standard transformer*: one table row per archived deciding run at the paper's width."""
    keys = {"settings", "loss_first", "loss_last20", "accuracy", "previous_weight", "previous_weight_untrained"}
    if not isinstance(runs, list) or not all(isinstance(run, dict) and keys <= set(run) for run in runs):
        raise ValueError("runs must be the list deciding.archived_runs returns")
    return [[run["settings"]["init"], run["settings"]["seed"], f"{run['loss_first']:.3f}", f"{run['loss_last20']:.3f}",
             f"{run['accuracy']:.3f}", f"{run['previous_weight']:.2f} (at init {run['previous_weight_untrained']:.2f})",
             run["device"].split(" (")[0]] for run in runs]


# Each check of the chapter (claim id induction_subspace.<key>): its tolerance and why, which the ledger and the
# claim card show; a bound computed in the chapter is passed there, a number in braces filled in by check_args.
CHECKS = {
    "model-shapes": dict(expected=True, why=("shapes are exact; with H_1 in place of U the stated dimensions hold, with"
        " X they do not")),
    "parameter-count": dict(atol=0, why=("a count of matrices of the shapes stated after Eq. 1: 4D^2 + 16D^2 + 8D^2; it"
        " tests the paper's sum")),
    "basis": dict(expected=0.0, atol=1e-13, why=("the Gram matrix holds exact integers; the round trip and idempotence"
        " are float64 rounding")),
    "equivariance": dict(upper=1e-13, why="an exact identity; float64 rounding through two softmax layers is ~1e-15"),
    "needs-structure": dict(lower=0.1, why=("an O(1) failure, far above rounding (1e-15); 0.1 leaves a factor 10 below"
        " what we see")),
    "a4-block-notation": dict(lower=0.1, why=("the printed A.4 layout repeats block-row 1, a spread of exactly 0; Eq."
        " 7's is of order one")),
    "a73-chain-rule": dict(upper=1e-12, why="an exact identity; float64 rounding of the sums over 2N+1 rows"),
    "propositions-haar": dict(upper=5.0, why=("Monte Carlo: the largest of 3 x 64 entry errors, each in its own"
        " standard errors; for independent Gaussian errors it exceeds 5 with probability below 1e-4; a target off by 8"
        " standard errors in one entry would pass with probability below 1%")),
    "proposition4": dict(upper=1e-13, why=("an exact identity (and an exact finite average); what remains is float64"
        " rounding")),
    "remark1": dict(lower=5.0, why=("were the F-average Prop. 1's (tr A / D) I, the largest of 64 entry z-scores would"
        " exceed 5 with probability below 1e-4: a false pass that rare")),
    "propositions-sympy": dict(expected=True, why="exact algebra: every difference simplifies to the zero matrix"),
    "expected-gradient-structured": dict(upper=1e-13, why=("the finite average equals the Haar projection exactly; what"
        " remains is float64 rounding")),
    "theorem1": dict(upper=1e-13, why=("exact in exact arithmetic; the residual is rounding relative to the weights'"
        " norm")),
    "fifteen-move": dict(expected=0.0, atol=0, why=("a structural zero: the gradient is a product with the query's"
        " positional embedding, exactly 0")),
    "nineteen-nonzero": dict(expected=15, atol=0, why="a count of the pseudo-parameters that ever leave 0"),
    "lr-one": dict(lower=1e6, why=("divergence: a growth by 10^6 in 30 steps cannot be a noisy plateau (the L/D run"
        " falls)")),
    "sgd-residual-rate": dict(upper=0.15, why=("largest deviation of the three slopes from -1/2 (pure noise); 0.15"
        " allows for the trajectory, hence the norm of W, changing with B; a residual not falling with B (slope 0) or"
        " falling like 1/B (slope -1) would miss by 0.5")),
    "hypothesis1-dominant": dict(expected=True, why=("an ordering of the final |c_k|: a random ordering of the 15 that"
        " move would pass with probability 1/455")),
    "hypothesis2": dict(lower=0.75, upper=1.0, why=("'unaffected, even slightly accelerated': the three-parameter exit"
        " no later and at most 25% earlier, on the same data stream; an exit later than the full model's, or a third"
        " sooner, fails")),
    "sgd-structure": dict(lower=0.5, why=("'has the predicted structure' read as: most of each matrix's squared norm on"
        " its 3, 12 or 4 basis directions, where a random matrix puts 3/(4D^2), 12/(16D^2), 4/(8D^2)")),
    "hypothesis1": dict(expected=True, why=("each head parameter necessary, none of the other 16: removing one of the"
        " three puts the loss above D/2, removing any other keeps it below")),
    "appd-hypotheses": dict(expected=True, why=("per size, the ordering of Hypothesis 1 (a random ordering passes with"
        " probability 1/455) and the exit-step ratio in [0.75, 1] used for Fig. 4")),
    "hypothesis2-after-exit": dict(lower=10.0, why=("records the book's observation, not the paper's claim: this"
        " check passes where 'strikingly similar' fails on the losses after the exit (losses that stayed alike would"
        " keep the ratio near 1; the row's deciding rule asks for a factor 2); one seed, App. D's step count"
        " unknown")),
    "appc-structure": dict(lower=0.5, why=("'the predicted structure' read as: most of every matrix's squared norm lies"
        " on its 3, 12 or 4 basis directions, out of 4D^2 = 1024, 16D^2 = 4096 and 8D^2 = 2048")),
    "appc-head": dict(expected=True, why=("an ordering: at each N's last step alpha3, beta2, gamma3 are the three"
        " largest |c_k| (a random ordering of the 15 that move passes with probability 1/455 per N)")),
    "assumption7-gaussian": dict(rtol=0.05, why=("the squared norm is sqrt(D) (= 64 here) times a chi-square mean with"
        " 16 x 4096 d.o.f.: relative error ~0.5%")),
    "assumption7-quantifier": dict(lower=1e-3, why=("an O(1) tilt gives an O(1e-2) gap, far above the 1e-15 agreement"
        " without it")),
    "residual-stream-subspaces": dict(upper=1e-4, why=("an identity up to float32 rounding (1e-7 relative); without the"
        " fourth subspace the remainder is {first_three:.2f}, outside any 256 random directions about 0.94")),
    "standard-transformer-paper-width": dict(lower=0.9, why=("'learns the task' read as 90% accuracy on fresh sequences"
        " (chance is 1/8 among the context labels); at width {D}, not the paper's 2048")),
    "fig2-score-formula": dict(lower=0.5, why=("W_K W_Q is not W_Q^T W_K: a formula for the scores would be at float32"
        " rounding (1e-7); the printed one is at a distance of order one in either orientation")),
    "fig2-subdiagonal": dict(lower=0.5, why=("'dominated by the subdiagonal' read as: more than half of each row's"
        " weight on the previous position, on average (at initialisation {untrained:.2f}); at width {D}, not 2048")),
}


def check_args(key: str, **values) -> dict:
    """The keyword arguments of the chapter's check ``induction_subspace.<key>`` (``CHECKS``), its reason
    completed with the measured ``values`` it names in braces."""
    return check_arguments(CHECKS, key, "key", **values)
