"""Induction heads in the two-layer disentangled transformer (Musat 2025, ``musat2025induction``).

Read top to bottom:

1. the task of Sec. 3.2 (Eqs. 2-5, :func:`sample_icl_batch`) and its theory variant with orthonormal
   inputs and the query last (Assumptions 7-8);
2. the model of Eq. 1 with the strict causal mask of App. B.2 (functional, and as the module
   ``DisentangledTransformer``), and the structured weights of Theorem 1 (Eqs. 6-8), from which the
   three-parameter model keeps alpha_3, beta_2, gamma_3;
3. the closed forms of the three-parameter model: the loss of App. B.3, its gradient (App. B.4.6) and the
   gradient flow of App. B.5;
4. the integration of that flow from zero (emergence times, loss-drop time, the bounds of the proof in
   App. B.6-B.8) and its discrete counterpart, gradient descent on (alpha, beta, gamma) as in App. F;
5. the large-N limits of the emergence times, derived in the chapter ``induction_emergence``;
6. the 19-dimensional subspace of Theorem 1 (chapter ``induction_subspace``): the basis of Eqs. 6-8, the
   projection onto it, the group of data rotations of App. A.5 and its action on weights, a finite set of
   rotations that averages exactly like the Haar measure, and SGD from zero as in App. C-D;
7. the standard two-layer attention-only transformer of Sec. 2 (App. E), its task and its training.

Conventions. Row vectors (App. A.3): row ``i`` of ``X`` is token ``i``; ``S = X W X^T`` holds the score of
query row ``i`` on key row ``j``. The loss is ``||y - z||^2`` summed over coordinates, as in the paper.
The strict mask lets row ``i`` attend to keys ``j < i`` only; row 1 has no admissible key and its
attention row is zero by convention (it never reaches the loss for ``N >= 1``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import torch
from scipy.integrate import solve_ivp
from scipy.special import erf, expit

from icllib.config import progress
from icllib.validation import positive_int, positive_number

# ---------------------------------------------------------------------------------------------------
# Input validation


def _check_N_array(N) -> np.ndarray:
    """``N`` as an integer array (scalars allowed) with every entry >= 1."""
    if isinstance(N, bool):
        raise ValueError(f"N must be an integer >= 1 (or an array of them), got {N!r}")
    array = np.asarray(N)
    if array.dtype.kind == "f" and np.all(np.isfinite(array)) and np.all(array == np.round(array)):
        array = array.astype(np.int64)
    if array.dtype.kind not in "iu" or np.any(array < 1):
        raise ValueError(f"N must be an integer >= 1 (or an array of them), got {N!r}")
    return array.astype(np.float64)


def _check_thresholds(thresholds) -> tuple[float, float, float]:
    try:
        values = tuple(thresholds)
    except TypeError:
        raise ValueError(f"thresholds must be three numbers (alpha, beta, gamma), got {thresholds!r}") from None
    if len(values) != 3:
        raise ValueError(f"thresholds must be three numbers (alpha, beta, gamma), got {thresholds!r}")
    return tuple(positive_number(f"thresholds[{k}]", v) for k, v in enumerate(values))


def _check_real_array(name: str, value) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a real number or array, got {value!r}") from None
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return array


# ---------------------------------------------------------------------------------------------------
# 1. The task (Sec. 3.2) and its theory variant (Assumptions 7-8)


def rotation_M(D: int) -> torch.Tensor:
    """The fixed rotation of Eq. 2, ``M = [[0, I], [I, 0]]`` (D even; symmetric, ``M^2 = I``, ``tr M = 0``)."""
    D = positive_int("D", D, 2)
    if D % 2:
        raise ValueError(f"D must be even (Eq. 2), got {D}")
    half = D // 2
    M = torch.zeros(D, D, dtype=torch.float64)
    M[:half, half:] = torch.eye(half, dtype=torch.float64)
    M[half:, :half] = torch.eye(half, dtype=torch.float64)
    return M


def _assemble(a, b, p, q_index) -> tuple[torch.Tensor, torch.Tensor]:
    """Eqs. 3-4 for a batch: rows ``[a_i | p_i]``, ``[b_i | p_i M]``, then the query ``[a_q | 0]``; target ``b_q``.

    ``a, b, p`` are ``(batch, N, D)`` and ``q_index`` holds the 0-based query index of each sequence.
    """
    batch, N, D = a.shape
    rows = torch.arange(batch)
    X = torch.zeros(batch, 2 * N + 1, 2 * D, dtype=torch.float64)
    X[:, 0:2 * N:2, :D], X[:, 0:2 * N:2, D:] = a, p
    X[:, 1:2 * N:2, :D], X[:, 1:2 * N:2, D:] = b, p @ rotation_M(D)
    X[:, 2 * N, :D] = a[rows, q_index]
    return X, b[rows, q_index].clone()


def _haar_rows(n_rows: int, dim: int, batch: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, n_rows, dim)``: per batch element, ``n_rows`` orthonormal rows of a Haar-random orthogonal matrix."""
    G = torch.randn(batch, dim, dim, dtype=torch.float64, generator=generator)
    Q, R = torch.linalg.qr(G)
    Q = Q * torch.sign(torch.diagonal(R, dim1=-2, dim2=-1)).unsqueeze(-2)  # the sign fix makes Q Haar-distributed
    return Q.transpose(-1, -2)[:, :n_rows]


def _orthonormal_parts(N: int, D: int, batch: int, generator: torch.Generator):
    """Contents and positions of Assumption 7, ``(batch, N, D)`` each: ``a_1..a_N, b_1..b_N`` are 2N orthonormal
    rows; ``p_i = (u_i, 0) diag(E', E')`` with ``u`` orthonormal in ``R^{D/2}`` and a Haar ``E'``. Since
    ``diag(E', E')`` commutes with ``M``, ``p_i M = (0, u_i) diag(E', E')``: the 2N position rows are orthonormal
    too, and ``p_i`` is orthogonal to ``p_j M`` for all i, j."""
    half = D // 2
    content = _haar_rows(2 * N, D, batch, generator)
    u = _haar_rows(N, half, batch, generator)
    E = _haar_rows(half, half, batch, generator)
    p = torch.cat([u @ E, torch.zeros(batch, N, half, dtype=torch.float64)], dim=-1)
    return content[:, :N], content[:, N:], p


def sample_icl_batch(D: int, N: int, batch_size: int, *, generator: torch.Generator, orthonormal: bool = False,
                     query_last: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """A batch of the in-context task (Eqs. 2-5): ``X`` of shape ``(batch_size, 2N+1, 2D)`` and ``y`` of shape
    ``(batch_size, D)``.

    By default the entries of ``a_i, b_i, p_i`` are i.i.d. N(0, 1) and the query index is uniform on ``1..N``
    (Eq. 5, the experiments of App. C-D). ``orthonormal=True`` draws them per Assumption 7 instead (needs
    ``D >= 2N``), and ``query_last=True`` fixes the query to item ``N`` (Assumption 8).
    """
    D = positive_int("D", D, 2)
    N = positive_int("N", N, 1)
    batch_size = positive_int("batch_size", batch_size, 1)
    if D % 2:
        raise ValueError(f"D must be even (Eq. 2), got {D}")
    if orthonormal and D < 2 * N:
        raise ValueError(f"D must be >= 2N = {2 * N} for orthonormal inputs (Assumption 7), got {D}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
    if orthonormal:
        a, b, p = _orthonormal_parts(N, D, batch_size, generator)
    else:
        a, b, p = torch.randn(3, batch_size, N, D, dtype=torch.float64, generator=generator)
    if query_last:
        q_index = torch.full((batch_size,), N - 1)
    else:
        q_index = torch.randint(0, N, (batch_size,), generator=generator)
    return _assemble(a, b, p, q_index)


def orthonormal_task(N: int, D: int, *, generator: torch.Generator, q: int | None = None):
    """One sequence ``(X, y)`` of shape ``(2N+1, 2D)``, ``(D,)`` satisfying Assumption 7 (orthonormal inputs)
    and, by default, Assumption 8 (query ``q = N``); another 1-based ``q`` breaks Assumption 8 and serves as a
    counter-example. Needs ``D >= 2N``."""
    N = positive_int("N", N, 1)
    D = positive_int("D", D, 2)
    if D % 2 or D < 2 * N:
        raise ValueError(f"D must be even and >= 2N = {2 * N} (Assumption 7), got {D}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
    q = N if q is None else positive_int("q", q, 1)
    if q > N:
        raise ValueError(f"q must be in 1..N = 1..{N}, got {q}")
    X, y = _assemble(*_orthonormal_parts(N, D, 1, generator), torch.tensor([q - 1]))
    return X[0], y[0]


def causal_softmax(S: torch.Tensor, *, strict: bool = True) -> torch.Tensor:
    """Row-wise softmax of scores ``S`` (..., n, n) under a causal mask.

    ``strict=True`` is the mask of App. B.2: row ``i`` sees keys ``j < i`` only (no self-attention), and
    row 1, which sees nothing, is all zeros. ``strict=False`` is the ordinary mask ``j <= i``.
    """
    if not isinstance(S, torch.Tensor) or S.ndim < 2 or S.shape[-1] != S.shape[-2]:
        raise ValueError(f"S must be a tensor of square matrices (..., n, n), got {getattr(S, 'shape', S)!r}")
    n = S.shape[-1]
    allowed = torch.ones(n, n, dtype=torch.bool, device=S.device).tril(-1 if strict else 0)
    masked = S.masked_fill(~allowed, float("-inf"))
    # A fully masked row has max -inf; subtracting 0 there keeps exp(-inf) = 0 instead of NaN.
    top = masked.amax(dim=-1, keepdim=True).detach()
    top = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
    weights = torch.exp(masked - top)
    total = weights.sum(dim=-1, keepdim=True)
    return weights / torch.where(total > 0, total, torch.ones_like(total))


def disentangled_states(X: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor, *,
                        strict: bool = True) -> dict[str, torch.Tensor]:
    """Every activation of Eq. 1 (App. A.4 names): the scores ``S`` and ``P``, the attention ``T = sigma(S)`` and
    ``Q = sigma(P)``, ``U = H_1``, ``V = H_2`` and the read-out ``z``.

    ``X`` is ``(..., 2N+1, 2D)``; ``W1`` is ``2D x 2D``, ``W2`` is ``4D x 4D``, ``W3`` is ``8D x D``; ``U`` is
    ``(..., 2N+1, 4D)``, ``V`` is ``(..., 2N+1, 8D)``. Only the query row ``2N+1`` is read out (Sec. 3.2), so
    ``z`` has shape ``(..., D)``. Eq. 1 writes ``H_2 = [U | ...]``; the ``U`` there is ``H_1``.
    """
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.shape[-1] % 2:
        raise ValueError(f"X must be a tensor (..., 2N+1, 2D), got {getattr(X, 'shape', X)!r}")
    D = X.shape[-1] // 2
    for name, W, shape in (("W1", W1, (2 * D, 2 * D)), ("W2", W2, (4 * D, 4 * D)), ("W3", W3, (8 * D, D))):
        if not isinstance(W, torch.Tensor) or tuple(W.shape) != shape:
            raise ValueError(f"{name} must be a tensor of shape {shape}, got {getattr(W, 'shape', W)!r}")
    S = X @ W1 @ X.transpose(-1, -2)
    T = causal_softmax(S, strict=strict)
    U = torch.cat([X, T @ X], dim=-1)                     # H_1 = [X | sigma(X W1 X^T) X]
    P = U @ W2 @ U.transpose(-1, -2)
    Q = causal_softmax(P, strict=strict)
    V = torch.cat([U, Q @ U], dim=-1)                     # H_2 = [H_1 | sigma(H_1 W2 H_1^T) H_1]
    # z = (H_2 W3) at the query row
    return {"S": S, "T": T, "U": U, "P": P, "Q": Q, "V": V, "z": V[..., -1, :] @ W3}


def disentangled_forward(X: torch.Tensor, W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor, *,
                         strict: bool = True) -> torch.Tensor:
    """The two-layer disentangled transformer of Eq. 1 (as restated in App. B.2); returns ``z`` (..., D).

    Shapes and the mask as in :func:`disentangled_states`.
    """
    return disentangled_states(X, W1, W2, W3, strict=strict)["z"]


class DisentangledTransformer(torch.nn.Module):
    """Eq. 1 as a module: the parameters ``W1`` (2D x 2D), ``W2`` (4D x 4D), ``W3`` (8D x D), 28 D^2 in all.

    ``model(X)`` is :func:`disentangled_forward`. The weights start at zero (Assumption 1) unless ``weights``
    gives a triple; ``dtype`` is float64 by default, which the exact checks of the chapter need.
    """

    def __init__(self, D: int, *, weights=None, strict: bool = True, dtype: torch.dtype = torch.float64):
        super().__init__()
        D = positive_int("D", D, 2)
        if D % 2:
            raise ValueError(f"D must be even (Eq. 2), got {D}")
        if weights is None:
            weights = structured_weights({}, D)
        elif _check_weights(*weights) != D:
            raise ValueError(f"weights must be a triple for D = {D}, got W1 of shape {tuple(weights[0].shape)}")
        self.D, self.strict = D, bool(strict)
        self.W1, self.W2, self.W3 = (torch.nn.Parameter(W.detach().to(dtype).clone()) for W in weights)

    def forward(self, X: torch.Tensor) -> torch.Tensor:
        """The read-out ``z`` at the query row, ``(..., D)``, for ``X`` of shape ``(..., 2N+1, 2D)``."""
        return disentangled_forward(X, self.W1, self.W2, self.W3, strict=self.strict)


#: The 19 pseudo-parameters of Eqs. 6-8, in the order used everywhere (vectors, the basis, the plots).
PSEUDO_PARAMETERS = (tuple(f"alpha{k}" for k in range(1, 4)) + tuple(f"beta{k}" for k in range(1, 13))
                     + tuple(f"gamma{k}" for k in range(1, 5)))
#: Positions of alpha3, beta2, gamma3 (the induction head) in ``PSEUDO_PARAMETERS``.
INDUCTION_INDICES = (2, 4, 17)


def _coefficient_list(coeffs) -> list:
    """The 19 values of ``coeffs`` in the order of ``PSEUDO_PARAMETERS``: from a mapping of (some of) the names,
    missing ones being 0, or from a sequence or 1-d tensor of 19 values (tensor entries keep their autograd)."""
    if isinstance(coeffs, Mapping):
        unknown = sorted(set(coeffs) - set(PSEUDO_PARAMETERS))
        if unknown:
            raise ValueError(f"coeffs has unknown names {unknown}; the names are alpha1..alpha3, beta1..beta12, "
                             "gamma1..gamma4")
        return [coeffs.get(name, 0.0) for name in PSEUDO_PARAMETERS]
    try:
        values = list(coeffs.unbind()) if isinstance(coeffs, torch.Tensor) and coeffs.ndim == 1 else list(coeffs)
    except TypeError:
        raise ValueError(f"coeffs must be a mapping of pseudo-parameter names or 19 values, got {coeffs!r}") from None
    if len(values) != 19:
        raise ValueError(f"coeffs must hold 19 values (alpha1..gamma4), got {len(values)}")
    return values


def structured_weights(coeffs, D: int):
    """``(W1, W2, W3)`` of Theorem 1 (Eqs. 6-8) from the pseudo-parameters.

    ``coeffs`` maps names of ``PSEUDO_PARAMETERS`` (``alpha1..alpha3, beta1..beta12, gamma1..gamma4``) to
    values, absent names meaning 0; a sequence or 1-d tensor of the 19 values in that order is accepted too.
    Values may be floats or 0-d tensors (autograd flows through them). Blocks are ``D x D``; ``W3`` stacks its
    8 blocks vertically (Eq. 8 with the transpose), matching ``V = [X1, X2, TX1, TX2, QX1, QX2, QTX1, QTX2]``.
    """
    D = positive_int("D", D, 2)
    if D % 2:
        raise ValueError(f"D must be even (Eq. 2), got {D}")
    a1, a2, a3, *rest = _coefficient_list(coeffs)
    b, g = rest[:12], rest[12:]
    I, M = torch.eye(D, dtype=torch.float64), rotation_M(D)
    Z = torch.zeros(D, D, dtype=torch.float64)
    W1 = torch.cat([torch.cat([a1 * I, Z], 1), torch.cat([Z, a2 * I + a3 * M], 1)], 0)
    W2 = torch.cat([
        torch.cat([b[0] * I, Z, b[1] * I, Z], 1),
        torch.cat([Z, b[2] * I + b[3] * M, Z, b[4] * I + b[5] * M], 1),
        torch.cat([b[6] * I, Z, b[7] * I, Z], 1),
        torch.cat([Z, b[8] * I + b[9] * M, Z, b[10] * I + b[11] * M], 1),
    ], 0)
    W3 = torch.cat([g[0] * I, Z, g[1] * I, Z, g[2] * I, Z, g[3] * I, Z], 0)
    return W1, W2, W3


def induction_weights(alpha, beta, gamma, D: int):
    """The three-parameter restriction (Assumption 4): only ``alpha_3, beta_2, gamma_3`` are non-zero."""
    return structured_weights({"alpha3": alpha, "beta2": beta, "gamma3": gamma}, D)


def full_model_loss_and_grad(alpha: float, beta: float, gamma: float, X: torch.Tensor, y: torch.Tensor, *,
                             strict: bool = True):
    """Loss ``||y - z||^2`` of Eq. 1 at the three-parameter weights and its autograd gradient in
    ``(alpha, beta, gamma)``; returns ``(loss, (dL/dalpha, dL/dbeta, dL/dgamma))`` as floats."""
    values = [_check_real_array(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma))]
    if any(v.ndim for v in values):
        raise ValueError("alpha, beta and gamma must be scalars")
    if not isinstance(X, torch.Tensor) or X.ndim != 2:
        raise ValueError(f"X must be a 2-d tensor (2N+1, 2D), got {getattr(X, 'shape', X)!r}")
    params = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in values]
    z = disentangled_forward(X, *induction_weights(*params, X.shape[-1] // 2), strict=strict)
    loss = ((y - z) ** 2).sum()
    grads = torch.autograd.grad(loss, params)
    return float(loss.detach()), tuple(float(g) for g in grads)


def induction_coordinates(W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor) -> tuple[float, float, float]:
    """``(alpha_3, beta_2, gamma_3)`` of any weights: the Frobenius coordinates ``<W, B_k>/D`` on the basis
    matrices of Eqs. 6-8 (``B_k`` is ``M`` in block (X2, X2) of W1, ``I`` in block (U1, U3) of W2, ``I`` in
    block 5 of W3; each has ``||B_k||_F^2 = D``)."""
    if not isinstance(W1, torch.Tensor) or W1.ndim != 2 or W1.shape[0] != W1.shape[1] or W1.shape[0] % 4:
        raise ValueError(f"W1 must be a 2D x 2D tensor with D even, got {getattr(W1, 'shape', W1)!r}")
    D = W1.shape[0] // 2
    if not isinstance(W2, torch.Tensor) or tuple(W2.shape) != (4 * D, 4 * D):
        raise ValueError(f"W2 must be a tensor of shape {(4 * D, 4 * D)}, got {getattr(W2, 'shape', W2)!r}")
    if not isinstance(W3, torch.Tensor) or tuple(W3.shape) != (8 * D, D):
        raise ValueError(f"W3 must be a tensor of shape {(8 * D, D)}, got {getattr(W3, 'shape', W3)!r}")
    M = rotation_M(D).to(W1.dtype)
    alpha = torch.trace(W1[D:, D:] @ M) / D
    beta = torch.trace(W2[:D, 2 * D:3 * D]) / D
    gamma = torch.trace(W3[4 * D:5 * D]) / D
    return float(alpha), float(beta), float(gamma)


def full_matrix_step(alpha: float, beta: float, gamma: float, X: torch.Tensor, y: torch.Tensor, lr: float):
    """One gradient step of size ``lr`` on the full matrices ``W1, W2, W3`` of Eq. 1 at the three-parameter
    weights, projected back onto the three-parameter subspace (App. F "constrains the parameters").

    Returns the new ``(alpha, beta, gamma)``. Since ``<grad_W L, B_k> = dL/dc_k`` and ``||B_k||_F^2 = D``,
    the pseudo-parameters move by ``-(lr / D) dL/dc_k``: a learning rate ``lr`` on the matrices is a rate
    ``lr / D`` on (alpha, beta, gamma).
    """
    lr = positive_number("lr", lr)
    values = [_check_real_array(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma))]
    if any(v.ndim for v in values):
        raise ValueError("alpha, beta and gamma must be scalars")
    if not isinstance(X, torch.Tensor) or X.ndim != 2:
        raise ValueError(f"X must be a 2-d tensor (2N+1, 2D), got {getattr(X, 'shape', X)!r}")
    weights = [W.detach().requires_grad_(True) for W in induction_weights(*(float(v) for v in values),
                                                                           X.shape[-1] // 2)]
    loss = ((y - disentangled_forward(X, *weights)) ** 2).sum()
    grads = torch.autograd.grad(loss, weights)
    return induction_coordinates(*(W.detach() - lr * g for W, g in zip(weights, grads)))


# ---------------------------------------------------------------------------------------------------
# 3. Closed forms of the three-parameter model (App. B.3-B.5)
#
# With G = e^alpha + 2N - 2, F = 2N - 1, x = beta e^alpha / G, s = e^x, r = s + F (App. B.4.1), the
# closed forms are evaluated through w = e^alpha / G, u = s / r and v = F / r = 1 - u, which are
# logistic functions of alpha and x: this is exact algebra, and it never overflows once s is large.


def _intermediates(alpha, beta, gamma, N):
    alpha, beta, gamma = (_check_real_array(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    N = _check_N_array(N)
    with np.errstate(divide="ignore"):
        w = np.where(N > 1, expit(alpha - np.log(2 * N - 2)), 1.0)  # e^alpha / G; G = e^alpha when N = 1
    F = 2 * N - 1
    x = beta * w
    u = expit(x - np.log(F))                                        # s / r
    v = expit(np.log(F) - x)                                        # F / r
    return alpha, beta, gamma, N, F, w, u, v


def three_param_loss(alpha, beta, gamma, N):
    """Closed-form loss of App. B.3: ``gamma^2 (s^2 + 2N - 1)/(s + 2N - 1)^2 - 2 gamma s/(s + 2N - 1) + 1``.

    Arrays broadcast. ``N`` must be a positive integer (or an array of them).
    """
    _, _, gamma, _, F, _, u, v = _intermediates(alpha, beta, gamma, N)
    return gamma**2 * (u**2 + v**2 / F) - 2 * gamma * u + 1


def three_param_grad(alpha, beta, gamma, N):
    """Gradient of the loss, App. B.4.6; returns ``(dL/dalpha, dL/dbeta, dL/dgamma)`` (arrays broadcast).

    ``s dL/ds = 2 F s (gamma^2 (s-1)/r^3 - gamma/r^2)`` (B.4.3), ``ds/dbeta = s e^alpha/G`` and
    ``ds/dalpha = s 2(N-1) beta e^alpha/G^2`` (B.4.4).
    """
    alpha, beta, gamma, N, F, w, u, v = _intermediates(alpha, beta, gamma, N)
    s_dL_ds = 2 * u * v * (gamma**2 * (u - v / F) - gamma)
    dL_dbeta = s_dL_ds * w
    dL_dalpha = s_dL_ds * beta * w * (1 - w)                       # (2N-2) e^alpha / G^2 = w (1 - w)
    dL_dgamma = 2 * gamma * (u**2 + v**2 / F) - 2 * u
    return np.broadcast_arrays(dL_dalpha, dL_dbeta, dL_dgamma)


def three_param_flow(state, N):
    """Right-hand side of the gradient flow of App. B.5, ``d(alpha, beta, gamma)/dt = -grad L``.

    ``state`` has shape ``(3, ...)``; returns an array of the same shape.
    """
    state = _check_real_array("state", state)
    if state.ndim < 1 or state.shape[0] != 3:
        raise ValueError(f"state must have shape (3, ...), got {state.shape}")
    return -np.stack(three_param_grad(state[0], state[1], state[2], N))


# ---------------------------------------------------------------------------------------------------
# 4. Integrating the flow from zero, and gradient descent on (alpha, beta, gamma)

RTOL, ATOL = 1e-10, 1e-13


def _rhs(N: int):
    F = 2.0 * N - 1.0
    log_F, log_2N2 = math.log(F), (math.log(2.0 * N - 2.0) if N > 1 else -math.inf)

    def rhs(_t, y):
        # The closed form of three_param_grad inlined for scalars: the solver calls this ~10^3 times.
        alpha, beta, gamma = y
        w = 1.0 / (1.0 + math.exp(log_2N2 - alpha)) if N > 1 else 1.0
        x = beta * w
        u = 1.0 / (1.0 + math.exp(min(log_F - x, 700.0)))
        v = 1.0 - u if u < 0.5 else 1.0 / (1.0 + math.exp(min(x - log_F, 700.0)))
        s_dL_ds = 2 * u * v * (gamma * gamma * (u - v / F) - gamma)
        dbeta = -s_dL_ds * w
        return [dbeta * beta * (1 - w), dbeta, 2 * u - 2 * gamma * (u * u + v * v / F)]

    return rhs


def _t_max(N: int) -> float:
    # Everything of interest happens before t = 3 N^2 (the loss drops near sqrt(2 pi) N^2, the chapter's
    # Proposition 3); N = 1 has no N^2 scale, hence the floor.
    return 3.5 * N * N + 20.0


def _crossing_events(N: int, thresholds, level):
    events = []
    for index, threshold in enumerate(thresholds):
        event = (lambda t, y, i=index, c=threshold: y[i] - c)
        event.direction = 1.0
        events.append(event)

    def loss_event(_t, y):
        return float(three_param_loss(y[0], y[1], y[2], N)) - level
    loss_event.direction = -1.0
    return events + [loss_event]


def crossing_times(N: int, thresholds=(0.5, 0.5, 0.5), level: float = 0.5, *, max_time_factor: float = 64.0):
    """First times at which the gradient flow of App. B.5 from zero reaches the thresholds.

    Returns ``{"alpha": T_alpha, "beta": T_beta, "gamma": T_gamma, "loss": T_L}``: the first ``t`` with
    ``alpha >= thresholds[0]`` (resp. beta, gamma), and the first ``t`` with loss ``<= level``. Integrated
    with LSODA (rtol 1e-10, atol 1e-13) in the paper's time (unit learning rate). A time not reached
    before ``max_time_factor * (3.5 N^2 + 20)`` is ``inf``: alpha never moves when ``N = 1`` (the factor
    ``2N - 2`` of B.5 vanishes).
    """
    N = positive_int("N", N, 1)
    thresholds = _check_thresholds(thresholds)
    level = positive_number("level", level)
    if level >= 1.0:
        raise ValueError(f"level must be in (0, 1): the loss starts at 1, got {level!r}")
    max_time_factor = positive_number("max_time_factor", max_time_factor)
    names = ("alpha", "beta", "gamma", "loss")
    found = {name: math.inf for name in names}
    events = _crossing_events(N, thresholds, level)
    rhs = _rhs(N)
    state, start, chunk = np.zeros(3), 0.0, _t_max(N)
    horizon = max_time_factor * chunk
    while start < horizon:
        wanted = [name for name in names if math.isinf(found[name]) and not (name == "alpha" and N == 1)]
        if not wanted:
            break
        stop = min(start + chunk, horizon)
        solution = solve_ivp(rhs, (start, stop), state, method="LSODA", rtol=RTOL, atol=ATOL, events=events)
        if solution.status < 0:
            raise RuntimeError(f"integration failed for N = {N}: {solution.message}")
        for name, times in zip(names, solution.t_events):
            if math.isinf(found[name]) and times.size:
                found[name] = float(times[0])
        state, start, chunk = solution.y[:, -1], stop, 2 * chunk
    return found


def emergence_times(N: int, thresholds=(0.5, 0.5, 0.5)) -> dict[str, float]:
    """Emergence times of Definition 1 under the flow of App. B.5 from zero (Assumptions 5-6).

    ``thresholds`` are in the order (alpha, beta, gamma) of App. F; the paper's Definition 1 uses 1/2
    for all three and App. F uses (0.1, 0.1, 0.5). Returns ``{"gamma": T_gamma, "beta": T_beta,
    "alpha": T_alpha}`` in gradient-flow time with unit learning rate; ``T_alpha = inf`` when ``N = 1``.
    """
    times = crossing_times(N, thresholds)
    return {name: times[name] for name in ("gamma", "beta", "alpha")}


def loss_drop_time(N: int, level: float = 0.5) -> float:
    """First time the loss of App. B.3 along the flow of App. B.5 from zero falls to ``level``."""
    return crossing_times(N, level=level)["loss"]


def flow_trajectory(N: int, t_end: float, num: int = 2001):
    """The flow of App. B.5 from zero sampled at ``num`` equally spaced times in ``[0, t_end]``.

    Returns ``(t, alpha, beta, gamma, loss)``, each an array of length ``num``.
    """
    N = positive_int("N", N, 1)
    t_end = positive_number("t_end", t_end)
    num = positive_int("num", num, 2)
    t = np.linspace(0.0, t_end, num)
    solution = solve_ivp(_rhs(N), (0.0, t_end), np.zeros(3), method="LSODA", rtol=RTOL, atol=ATOL, t_eval=t)
    if solution.status < 0:
        raise RuntimeError(f"integration failed for N = {N}: {solution.message}")
    alpha, beta, gamma = solution.y
    return t, alpha, beta, gamma, three_param_loss(alpha, beta, gamma, N)


def proof_bounds(N: int, num: int = 20001) -> dict[str, float]:
    """The quantities bounded in the proof of Theorem 2 (App. B.6-B.8), measured along the flow.

    Phases: 1 is ``gamma < 1/2``; 2 is ``gamma >= 1/2, beta < 1/2``; 3 is ``beta >= 1/2, alpha < 1/2``.
    Keys and the paper's bound: ``N*gammadot phase1 min`` (>= 1/2, B.6.1), ``N*gammadot phase1 max``
    (<= 1, B.6.1), ``N*alpha(T_gamma)`` and ``N*beta(T_gamma)`` (O(1), B.6.2), ``gamma max phase2``
    (<= 3/2, B.7.1), ``alphadot/betadot max phase2`` (< 1, B.7.3), ``8N^2*alphadot min phase3`` (> 1,
    B.8.1), ``betadot/(3sqrt(e)/(4N^2)) max phase3`` (< 1, B.8.2), ``beta(T_alpha)`` (< 5.45, B.8.2).
    Extremes are taken over ``num`` samples per phase. Needs ``N >= 2`` (alpha never emerges for N = 1).
    """
    N = positive_int("N", N, 2)
    num = positive_int("num", num, 3)
    times = emergence_times(N)
    rhs = _rhs(N)
    edges = (0.0, times["gamma"], times["beta"], times["alpha"])
    phases = []
    state = np.zeros(3)
    for start, stop in zip(edges[:-1], edges[1:]):
        t = np.linspace(start, stop, num)
        solution = solve_ivp(rhs, (start, stop), state, method="LSODA", rtol=RTOL, atol=ATOL, t_eval=t)
        y = solution.y[:, :-1]                                      # the half-open phase [start, stop)
        phases.append((y, three_param_flow(y, N)))
        state = solution.y[:, -1]
    (y1, d1), (y2, d2), (y3, d3) = phases
    return {
        "N*gammadot phase1 min": float(N * d1[2].min()),
        "N*gammadot phase1 max": float(N * d1[2].max()),
        "N*alpha(T_gamma)": float(N * y2[0, 0]),
        "N*beta(T_gamma)": float(N * y2[1, 0]),
        "gamma max phase2": float(y2[2].max()),
        "alphadot/betadot max phase2": float(np.max(d2[0][1:] / d2[1][1:])),
        "8N^2*alphadot min phase3": float(8 * N**2 * d3[0].min()),
        "betadot/(3sqrt(e)/(4N^2)) max phase3": float(d3[1].max() / (3 * math.sqrt(math.e) / (4 * N**2))),
        "beta(T_alpha)": float(state[1]),
    }


def gradient_descent_times(Ns, eta: float, thresholds=(0.1, 0.1, 0.5), max_steps: int = 10**6):
    """Gradient descent ``theta <- theta - eta grad L`` on (alpha, beta, gamma) from zero, all N at once.

    The discrete counterpart of App. F (orthonormal inputs and q = N make the loss data-independent, so
    the batch size plays no role). Returns ``(steps, diverged)``: ``steps`` has shape ``(len(Ns), 3)`` with
    the first step count at which alpha, beta, gamma reach their thresholds (``inf`` if never), and
    ``diverged`` flags runs whose parameters left ``[-1e6, 1e6]`` or became non-finite before reaching all
    three thresholds. A run stops once it has reached them all (later steps are not examined). Multiply the
    steps by ``eta`` to compare with gradient-flow time.
    """
    N = _check_N_array(Ns)
    if N.ndim != 1 or N.size == 0:
        raise ValueError(f"Ns must be a non-empty 1-d list of integers >= 1, got {Ns!r}")
    eta = positive_number("eta", eta)
    limits = np.array(_check_thresholds(thresholds))[:, None]
    max_steps = positive_int("max_steps", max_steps, 1)
    theta = np.zeros((3, N.size))
    steps = np.full((3, N.size), np.inf)
    diverged = np.zeros(N.size, dtype=bool)
    active = np.ones(N.size, dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        for step in range(1, max_steps + 1):
            update = eta * np.stack(three_param_grad(theta[0], theta[1], theta[2], N))
            theta = np.where(active, theta - update, theta)        # finished or diverged runs stay frozen
            bad = active & ~np.all(np.isfinite(theta) & (np.abs(theta) <= 1e6), axis=0)
            diverged |= bad
            theta[:, bad] = 0.0
            reached = (theta >= limits) & np.isinf(steps) & active & ~bad
            steps[reached] = step
            active &= ~bad & ~np.all(np.isfinite(steps), axis=0)
            if not active.any():
                break
    return steps.T, diverged


# ---------------------------------------------------------------------------------------------------
# 5. Large-N limits (Propositions 1-3 of the chapter)


def emergence_asymptotics(thresholds=(0.5, 0.5, 0.5), level: float = 0.5) -> dict[str, float]:
    """Closed-form large-N limits of the emergence and loss-drop times (chapter, Propositions 1-3).

    Phase 1 (t = O(N)): gamma = 1 - e^{-t/N}, so ``T_gamma/N -> ln(1/(1 - c_gamma))``. Phase 2 (tau = t/N^2):
    ``dbeta/dtau = e^alpha/2``, ``dalpha/dtau = beta e^alpha/2``, so ``alpha = beta^2/2`` (the slow manifold)
    and ``tau(beta) = sqrt(2 pi) erf(beta/sqrt 2)``; hence ``T_beta/N^2 -> sqrt(2 pi) erf(c_beta/sqrt 2)``,
    ``T_alpha/N^2 -> sqrt(2 pi) erf(sqrt(c_alpha))``. tau(beta) has the finite limit sqrt(2 pi) as beta
    grows: the reduced flow blows up there and the loss falls, for any level in (0, 1 - 1/(2N)), at
    ``loss_drop/N^2 -> sqrt(2 pi)``. ``T_gamma/N`` needs ``c_gamma < 1`` (gamma tends to 1 in phase 1).
    """
    c_alpha, c_beta, c_gamma = _check_thresholds(thresholds)
    level = positive_number("level", level)
    if level >= 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    if c_gamma >= 1.0:
        raise ValueError(f"thresholds[2] (gamma) must be below 1 for a phase-1 limit, got {c_gamma!r}")
    root = math.sqrt(2 * math.pi)
    return {
        "T_gamma/N": math.log(1.0 / (1.0 - c_gamma)),
        "T_beta/N^2": root * float(erf(c_beta / math.sqrt(2.0))),
        "T_alpha/N^2": root * float(erf(math.sqrt(c_alpha))),
        "loss_drop/N^2": root,
    }


# ---------------------------------------------------------------------------------------------------
# 6. The 19-dimensional subspace (Theorem 1, App. A), used by the chapter ``induction_subspace``
#
# A triple (W1, W2, W3) is flattened to one vector of R^{28 D^2} (Sec. 4). The 19 basis triples B_k place an
# I or an M in one D x D block (Eqs. 6-8); they are Frobenius-orthogonal with ||B_k||_F^2 = D (<I, M> = tr M
# = 0), so the coordinates are c_k = <W, B_k>/D and the orthogonal projection is Pi(W) = sum_k c_k B_k.

def _check_weights(W1, W2, W3) -> int:
    """``D`` of a weight triple of Eq. 1, after checking the three shapes."""
    if not isinstance(W1, torch.Tensor) or W1.ndim != 2 or W1.shape[0] != W1.shape[1] or W1.shape[0] % 4:
        raise ValueError(f"W1 must be a 2D x 2D tensor with D even, got {getattr(W1, 'shape', W1)!r}")
    D = W1.shape[0] // 2
    for name, W, shape in (("W2", W2, (4 * D, 4 * D)), ("W3", W3, (8 * D, D))):
        if not isinstance(W, torch.Tensor) or tuple(W.shape) != shape:
            raise ValueError(f"{name} must be a tensor of shape {shape}, got {getattr(W, 'shape', W)!r}")
    return D


def parameter_count(D: int) -> int:
    """Number of raw parameters of Eq. 1: ``4D^2 + 16D^2 + 8D^2 = 28 D^2`` (Sec. 4, line 114)."""
    D = positive_int("D", D, 2)
    return sum(W.numel() for W in DisentangledTransformer(D).parameters())


def flatten_weights(W1, W2, W3) -> torch.Tensor:
    """The parameter vector ``[vec W1 | vec W2 | vec W3]`` of Sec. 4 (length 28 D^2)."""
    _check_weights(W1, W2, W3)
    return torch.cat([W1.reshape(-1), W2.reshape(-1), W3.reshape(-1)])


def unflatten_weights(vector: torch.Tensor, D: int):
    """Inverse of :func:`flatten_weights`."""
    D = positive_int("D", D, 2)
    if not isinstance(vector, torch.Tensor) or tuple(vector.shape) != (28 * D * D,):
        raise ValueError(f"vector must be a tensor of shape ({28 * D * D},), got {getattr(vector, 'shape', vector)!r}")
    W1, W2, W3 = torch.split(vector, [4 * D * D, 16 * D * D, 8 * D * D])
    return W1.reshape(2 * D, 2 * D), W2.reshape(4 * D, 4 * D), W3.reshape(8 * D, D)


def subspace_basis(D: int) -> torch.Tensor:
    """The 19 basis triples of Eqs. 6-8, flattened: a ``(19, 28 D^2)`` float64 tensor, rows in the order of
    ``PSEUDO_PARAMETERS``."""
    D = positive_int("D", D, 2)
    if D % 2:
        raise ValueError(f"D must be even (Eq. 2), got {D}")
    return torch.stack([flatten_weights(*structured_weights({name: 1.0}, D)) for name in PSEUDO_PARAMETERS])


def pseudo_parameter_vector(W1, W2, W3) -> torch.Tensor:
    """The 19 coordinates ``c_k = <W, B_k>_F / D`` of any weights (the symbols of Eqs. 6-8), as a tensor in the
    order of ``PSEUDO_PARAMETERS``.

    App. D measures "the magnitude of the parameter vector along the corresponding component", which would be
    ``<W, B_k>/||B_k|| = sqrt(D) c_k``; we keep ``c_k``, the coefficient that appears in Eqs. 6-8.
    """
    D = _check_weights(W1, W2, W3)
    basis = subspace_basis(D).to(W1.dtype)
    return basis @ flatten_weights(W1, W2, W3) / D


def pseudo_params(W1, W2, W3) -> dict[str, float]:
    """The 19 coordinates of any weights as a mapping ``{"alpha1": ..., ..., "gamma4": ...}``: the inverse of
    :func:`structured_weights` on the subspace, and the coordinates of the projection :func:`project_structured`
    off it."""
    return dict(zip(PSEUDO_PARAMETERS, pseudo_parameter_vector(W1, W2, W3).tolist()))


def project_structured(W1, W2, W3):
    """The orthogonal (Frobenius) projection ``Pi(W) = sum_k c_k B_k`` onto the 19-dimensional subspace."""
    D = _check_weights(W1, W2, W3)
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


# --- the group of data rotations (App. A.2-A.5) ---


def _check_rotations(E, F) -> int:
    if not isinstance(E, torch.Tensor) or E.ndim < 2 or E.shape[-1] != E.shape[-2]:
        raise ValueError(f"E must be a tensor of square matrices (..., D, D), got {getattr(E, 'shape', E)!r}")
    if not isinstance(F, torch.Tensor) or F.shape != E.shape:
        raise ValueError(f"F must have the shape of E {tuple(E.shape)}, got {getattr(F, 'shape', F)!r}")
    return E.shape[-1]


def random_rotation(D: int, *, generator: torch.Generator, count: int | None = None):
    """A group element ``h = (E, F)`` of App. A.5: Haar ``E`` in O(D) (Def. 4) and a block-orthogonal
    ``F = M^s diag(E', E')`` with Haar ``E'`` in O(D/2) and a fair coin ``s`` (Def. 5); ``F`` commutes with ``M``.

    With ``count``, ``count`` independent elements as stacks ``(count, D, D)`` (drawn in one batch).
    """
    D = positive_int("D", D, 2)
    if D % 2:
        raise ValueError(f"D must be even (Eq. 2), got {D}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
    batch = 1 if count is None else positive_int("count", count, 1)
    half = D // 2
    E = _haar_rows(D, D, batch, generator)
    inner = _haar_rows(half, half, batch, generator)
    F = torch.zeros(batch, D, D, dtype=torch.float64)
    F[:, :half, :half], F[:, half:, half:] = inner, inner
    swap = torch.randint(0, 2, (batch,), generator=generator).bool()
    F = torch.where(swap[:, None, None], rotation_M(D) @ F, F)
    return (E[0], F[0]) if count is None else (E, F)


def sympy_propositions() -> dict:
    """Propositions 1, 2 and 4 of App. A in exact arithmetic, in the smallest sizes where they say something.

    Returns SymPy matrices, each exactly zero when its statement holds, plus one that is not:

    - ``"prop1"``: the Haar average over O(2) of ``E^T A E`` minus ``(tr A / 2) I``, for a symbolic 2 x 2
      ``A`` (integrals over the rotation angle, with and without a reflection);
    - ``"prop1_rotations_only"``: the same average over SO(2) minus ``(tr A / 2) I``: not zero (it keeps the
      antisymmetric part of ``A``), so the reflections of O(D) are needed;
    - ``"prop2"``: the average of ``F A F^T`` over the block-orthogonal 2 x 2 matrices ``+-I, +-M`` minus
      ``alpha I + beta M`` with ``alpha = tr A / 2``, ``beta = (a12 + a21) / 2``;
    - ``"prop4"``: the blocks of ``F M F^T - M`` for both forms of Def. 5, for any ``k x k`` block ``E`` with
      ``E E^T = I`` (symbolic ``k``).
    """
    import sympy as sp

    theta = sp.Symbol("theta", real=True)
    A = sp.Matrix(2, 2, sp.symbols("a11 a12 a21 a22", real=True))
    rotation = sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])

    def angle_average(E):
        return (E.T * A * E).applyfunc(
            lambda entry: sp.simplify(sp.integrate(sp.expand(entry), (theta, 0, 2 * sp.pi)) / (2 * sp.pi)))

    rotations_only = angle_average(rotation)
    haar_O2 = (rotations_only + angle_average(rotation * sp.diag(1, -1))) / 2
    scalar = (A.trace() / 2) * sp.eye(2)
    swap = sp.Matrix([[0, 1], [1, 0]])
    block_orthogonal = (sp.eye(2), -sp.eye(2), swap, -swap)
    block_average = sum((F * A * F.T for F in block_orthogonal), sp.zeros(2, 2)) / 4

    k = sp.Symbol("k", integer=True, positive=True)
    E, I, Z = sp.MatrixSymbol("E", k, k), sp.Identity(k), sp.ZeroMatrix(k, k)
    M = sp.BlockMatrix([[Z, I], [I, Z]])
    prop4 = []
    for F in (sp.BlockMatrix([[E, Z], [Z, E]]), sp.BlockMatrix([[Z, E], [E, Z]])):
        product = sp.block_collapse(F * M * F.T).subs(E * E.T, I)
        differences = [sp.simplify(b - m) for b, m in zip(product.blocks, M.blocks)]
        # a zero k x k block is SymPy's ZeroMatrix; record it as the scalar 0 so that the result reads as zeros
        prop4.append(sp.Matrix(2, 2, [sp.S.Zero if d.is_ZeroMatrix else d for d in differences]))
    return {
        "prop1": sp.simplify(haar_O2 - scalar),
        "prop1_rotations_only": sp.simplify(rotations_only - scalar),
        "prop2": sp.simplify(block_average - scalar - (A[0, 1] + A[1, 0]) / 2 * swap),
        "prop4": prop4,
    }


def rotate_data(X: torch.Tensor, y: torch.Tensor, E: torch.Tensor, F: torch.Tensor):
    """The transformed data of App. A.5/A.6: ``X' = X diag(E, F)``, ``y' = y E``.

    ``E`` and ``F`` may be stacks ``(K, D, D)``; the result then gains a leading axis of length K.
    """
    D = _check_rotations(E, F)
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.shape[-1] != 2 * D:
        raise ValueError(f"X must be a tensor (..., 2N+1, {2 * D}), got {getattr(X, 'shape', X)!r}")
    if not isinstance(y, torch.Tensor) or y.shape[-1] != D or y.shape[:-1] != X.shape[:-2]:
        raise ValueError(f"y must be a tensor {tuple(X.shape[:-2]) + (D,)}, got {getattr(y, 'shape', y)!r}")
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
    if _check_weights(W1, W2, W3) != D:
        raise ValueError(f"the weights have D = {W1.shape[0] // 2}, E and F have D = {D}")
    R1, R2, R3 = (torch.block_diag(*([E, F] * k)) for k in (1, 2, 4))
    return R1 @ W1 @ R1.T, R2 @ W2 @ R2.T, R3 @ W3 @ E.T


def hadamard_cyclic_group(d: int) -> torch.Tensor:
    """The ``d^2`` orthogonal matrices ``C^c diag(h_k)`` (C the cyclic shift, h_k the rows of the Sylvester
    Hadamard matrix): averaging ``E^T A E`` over them gives ``(tr A / d) I`` exactly, as the Haar average of
    Proposition 1 does. ``d`` must be a power of two."""
    d = positive_int("d", d, 1)
    if d & (d - 1):
        raise ValueError(f"d must be a power of two (Sylvester Hadamard matrix), got {d}")
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
    D = positive_int("D", D, 2)
    if D & (D - 1):
        raise ValueError(f"D must be a power of two, got {D}")
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
    if not isinstance(X, torch.Tensor) or X.ndim != 3:
        raise ValueError(f"X must be a batch (B, 2N+1, 2D), got {getattr(X, 'shape', X)!r}")
    E, F = orbit_rotations(X.shape[-1] // 2)
    X_rot, y_rot = rotate_data(X, y, E, F)
    return X_rot.reshape(-1, *X.shape[1:]), y_rot.reshape(-1, y.shape[-1])


# --- losses, gradients and training (App. C-D) ---


def loss_and_grads(X: torch.Tensor, y: torch.Tensor, W1, W2, W3, *, strict: bool = True):
    """Batch mean of ``||y - z||^2`` (the paper's loss, sum over the D coordinates) and its gradients in
    ``(W1, W2, W3)``; returns ``(loss, (g1, g2, g3))``. Divide by ``D`` for the per-coordinate loss."""
    D = _check_weights(W1, W2, W3)
    if not isinstance(X, torch.Tensor) or X.ndim < 2 or X.shape[-1] != 2 * D:
        raise ValueError(f"X must be a tensor (..., 2N+1, {2 * D}), got {getattr(X, 'shape', X)!r}")
    if not isinstance(y, torch.Tensor) or tuple(y.shape) != tuple(X.shape[:-2]) + (D,):
        raise ValueError(f"y must be a tensor {tuple(X.shape[:-2]) + (D,)}, got {getattr(y, 'shape', y)!r}")
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
    if training not in TRAINING_MODES:
        raise ValueError(f"training must be one of {TRAINING_MODES}, got {training!r}")
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
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
# 7. The standard attention-only transformer of Sec. 2 (App. E), at a CPU-sized width


def standard_task(batch: int, *, generator: torch.Generator, vocab: int = 32, block: int = 32, pairs: int = 8):
    """Sequences of App. E: ``2 * pairs`` distinct tokens grouped in item-label pairs, then one of the items as
    the query; the target is its label. Each sequence (length ``2 * pairs + 1``) starts at a uniform offset in
    the block. Returns ``tokens`` and ``positions`` ``(batch, 2 pairs + 1)`` and ``target`` ``(batch,)``."""
    batch = positive_int("batch", batch, 1)
    pairs = positive_int("pairs", pairs, 1)
    vocab = positive_int("vocab", vocab, 2 * pairs)
    block = positive_int("block", block, 2 * pairs + 1)
    if not isinstance(generator, torch.Generator):
        raise ValueError(f"generator must be a torch.Generator, got {generator!r}")
    # argsort of uniform noise draws 2 * pairs distinct tokens per row without a loop over sequences
    chosen = torch.rand(batch, vocab, generator=generator).argsort(dim=1)[:, :2 * pairs]
    q = torch.randint(0, pairs, (batch,), generator=generator)
    rows = torch.arange(batch)
    tokens = torch.cat([chosen, chosen[rows, 2 * q].unsqueeze(1)], dim=1)
    offset = torch.randint(0, block - 2 * pairs, (batch, 1), generator=generator)
    positions = offset + torch.arange(2 * pairs + 1)
    return tokens, positions, chosen[rows, 2 * q + 1]


class StandardTransformer(torch.nn.Module):
    """Two attention-only layers with one head each, token and positional embeddings, no normalisation, no MLP,
    no weight tying (Sec. 2.1, App. E). Residual stream ``h = E[token] + P[position]``; layer ``l`` adds
    ``softmax(h W_Q^T W_K h^T / sqrt(D_H)) h W_V^T W_O^T`` under the ordinary causal mask; the output layer
    ``W_o`` reads the last position. Initialisation N(0, 0.02) everywhere (the paper does not state one)."""

    def __init__(self, D: int, *, generator: torch.Generator, vocab: int = 32, block: int = 32):
        super().__init__()
        D = positive_int("D", D, 1)
        vocab = positive_int("vocab", vocab, 2)
        block = positive_int("block", block, 2)
        if not isinstance(generator, torch.Generator):
            raise ValueError(f"generator must be a torch.Generator, got {generator!r}")

        def weight(*shape):
            return torch.nn.Parameter(0.02 * torch.randn(*shape, generator=generator))

        self.D = D
        self.E, self.P = weight(vocab, D), weight(block, D)
        self.W_Q, self.W_K, self.W_V, self.W_O = (torch.nn.ParameterList([weight(D, D) for _ in range(2)])
                                                  for _ in range(4))
        self.W_out = weight(vocab, D)

    def attention(self, layer: int, h: torch.Tensor) -> torch.Tensor:
        """Row-softmax attention weights of one layer, ``(batch, n, n)``, ordinary causal mask."""
        scores = (h @ self.W_Q[layer].T) @ (h @ self.W_K[layer].T).transpose(-1, -2) / math.sqrt(self.D)
        return causal_softmax(scores, strict=False)

    def residual_streams(self, tokens: torch.Tensor, positions: torch.Tensor) -> list[torch.Tensor]:
        """The residual stream ``(batch, n, D)`` of every token before layer 1, after layer 1 and after layer 2
        (the vectors whose span Sec. 2.2 describes)."""
        h = self.E[tokens] + self.P[positions]
        streams = [h]
        for layer in range(2):
            h = h + self.attention(layer, h) @ h @ self.W_V[layer].T @ self.W_O[layer].T
            streams.append(h)
        return streams

    def forward(self, tokens: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """Logits of the last position, ``(batch, vocab)``."""
        return self.residual_streams(tokens, positions)[-1][:, -1] @ self.W_out.T

    def previous_position_attention(self) -> torch.Tensor:
        """Layer-1 attention between positions alone, ``softmax_j<=i(p_i W_Q^T W_K p_j^T / sqrt(D))``: row ``i`` is
        the query position, column ``j`` the key position (the bottom-right block of Fig. 2, left)."""
        with torch.no_grad():
            return self.attention(0, self.P.unsqueeze(0))[0]


def train_standard(D: int, *, steps: int, batch: int, generator: torch.Generator, lr: float = 1e-3,
                   weight_decay: float = 0.01):
    """AdamW on the negative log-likelihood of the target, fresh batches every step (App. E).

    Returns ``(model, losses)``, with the loss of every step's batch (a test loss: batches are independent).
    """
    steps = positive_int("steps", steps, 1)
    batch = positive_int("batch", batch, 1)
    lr = positive_number("lr", lr)
    weight_decay = positive_number("weight_decay", weight_decay, allow_zero=True)
    model = StandardTransformer(D, generator=generator)
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    losses = []
    for _ in progress(range(steps), total=steps, desc=f"standard transformer D = {D}"):
        tokens, positions, target = standard_task(batch, generator=generator)
        loss = torch.nn.functional.cross_entropy(model(tokens, positions), target)
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
        losses.append(float(loss.detach()))
    return model, np.asarray(losses)


def standard_accuracy(model: StandardTransformer, batch: int, *, generator: torch.Generator) -> float:
    """Fraction of fresh sequences whose target is the arg-max of the logits."""
    if not isinstance(model, StandardTransformer):
        raise ValueError(f"model must be a StandardTransformer, got {model!r}")
    tokens, positions, target = standard_task(batch, generator=generator)
    with torch.no_grad():
        return float((model(tokens, positions).argmax(-1) == target).double().mean())
