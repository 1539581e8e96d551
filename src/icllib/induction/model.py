"""The two-layer disentangled transformer of Musat 2025 (``musat2025induction``), shared by the chapters
``induction_emergence`` and ``induction_subspace``.

Read top to bottom:

1. the task of Sec. 3.2 (Eqs. 2-5, :func:`sample_icl_batch`) and its theory variant with orthonormal
   inputs and the query last (Assumptions 7-8, :func:`orthonormal_task`);
2. the model of Eq. 1 with the strict causal mask of App. B.2 (functional, and as the module
   :class:`DisentangledTransformer`), and the structured weights of Theorem 1 (Eqs. 6-8), from which the
   three-parameter model keeps alpha_3, beta_2, gamma_3 (Assumption 4);
3. the closed forms of the three-parameter model: the loss of App. B.3 and its gradient (App. B.4.6),
   which the full network reproduces at orthonormal inputs.

The flow of those three numbers is in :mod:`icllib.induction.emergence`; the 19-dimensional subspace, its
symmetry group, SGD on the full matrices and the standard transformer are in
:mod:`icllib.induction.subspace`.

Conventions. Row vectors (App. A.3): row ``i`` of ``X`` is token ``i``; ``S = X W X^T`` holds the score of
query row ``i`` on key row ``j``. The loss is ``||y - z||^2`` summed over coordinates, as in the paper.
The strict mask lets row ``i`` attend to keys ``j < i`` only; row 1 has no admissible key and its
attention row is zero by convention (it never reaches the loss for ``N >= 1``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from scipy.special import expit

from icllib.validation import (even_int, int_array, positive_int, real_array, real_number, square_matrices,
                               tensor_arg, torch_generator_arg)

# ---------------------------------------------------------------------------------------------------
# 1. The task (Sec. 3.2) and its theory variant (Assumptions 7-8)


def rotation_M(D: int) -> torch.Tensor:
    """The fixed rotation of Eq. 2, ``M = [[0, I], [I, 0]]`` (D even; symmetric, ``M^2 = I``, ``tr M = 0``)."""
    D = even_int("D", D, why="Eq. 2")
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


def haar_rows(n_rows: int, dim: int, batch: int, generator: torch.Generator) -> torch.Tensor:
    """``(batch, n_rows, dim)``: per batch element, ``n_rows`` orthonormal rows of a Haar-random orthogonal matrix."""
    dim = positive_int("dim", dim)
    n_rows, batch = positive_int("n_rows", n_rows), positive_int("batch", batch)
    if n_rows > dim:
        raise ValueError(f"n_rows must be at most dim = {dim} (orthonormal rows), got {n_rows}")
    generator = torch_generator_arg("generator", generator)
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
    content = haar_rows(2 * N, D, batch, generator)
    u = haar_rows(N, half, batch, generator)
    E = haar_rows(half, half, batch, generator)
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
    D = even_int("D", D, why="Eq. 2")
    N = positive_int("N", N, 1)
    batch_size = positive_int("batch_size", batch_size, 1)
    if orthonormal and D < 2 * N:
        raise ValueError(f"D must be >= 2N = {2 * N} for orthonormal inputs (Assumption 7), got {D}")
    generator = torch_generator_arg("generator", generator)
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
    D = even_int("D", D, why="Eq. 2")
    if D < 2 * N:
        raise ValueError(f"D must be >= 2N = {2 * N} for orthonormal inputs (Assumption 7), got {D}")
    generator = torch_generator_arg("generator", generator)
    q = N if q is None else positive_int("q", q, 1)
    if q > N:
        raise ValueError(f"q must be in 1..N = 1..{N}, got {q}")
    X, y = _assemble(*_orthonormal_parts(N, D, 1, generator), torch.tensor([q - 1]))
    return X[0], y[0]


# ---------------------------------------------------------------------------------------------------
# 2. The model of Eq. 1 (App. B.2) and the structured weights of Theorem 1 (Eqs. 6-8)


def weight_triple_D(W1, W2, W3) -> int:
    """``D`` of a weight triple of Eq. 1 (``W1`` 2D x 2D, ``W2`` 4D x 4D, ``W3`` 8D x D, D even), after checking
    the three shapes."""
    square_matrices("W1", W1, what="2D x 2D with D even")
    if W1.ndim != 2 or W1.shape[0] % 4:
        raise ValueError(f"W1 must be a 2D x 2D tensor with D even, got {tuple(W1.shape)!r}")
    D = W1.shape[0] // 2
    tensor_arg("W2", W2, shape=(4 * D, 4 * D))
    tensor_arg("W3", W3, shape=(8 * D, D))
    return D


def causal_softmax(S: torch.Tensor, *, strict: bool = True) -> torch.Tensor:
    """Row-wise softmax of scores ``S`` (..., n, n) under a causal mask.

    ``strict=True`` is the mask of App. B.2: row ``i`` sees keys ``j < i`` only (no self-attention), and
    row 1, which sees nothing, is all zeros. ``strict=False`` is the ordinary mask ``j <= i``.
    """
    square_matrices("S", S)
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
    tensor_arg("W1", W1, shape=(2 * D, 2 * D))
    tensor_arg("W2", W2, shape=(4 * D, 4 * D))
    tensor_arg("W3", W3, shape=(8 * D, D))
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
        D = even_int("D", D, why="Eq. 2")
        if weights is None:
            weights = structured_weights({}, D)
        elif weight_triple_D(*weights) != D:
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
    D = even_int("D", D, why="Eq. 2")
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
    for name, value in (("alpha", alpha), ("beta", beta), ("gamma", gamma)):
        real_number(name, value)  # a float or a 0-d tensor (autograd flows through it)
    return structured_weights({"alpha3": alpha, "beta2": beta, "gamma3": gamma}, D)


def three_param_point(alpha, beta, gamma, X) -> list[float]:
    """``[alpha, beta, gamma]`` as floats after checking that they are real scalars and that ``X`` is one sequence
    ``(2N+1, 2D)``: the arguments of the functions that evaluate the full network at a three-parameter point."""
    values = [real_array(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma))]
    if any(v.ndim for v in values):
        raise ValueError("alpha, beta and gamma must be scalars")
    tensor_arg("X", X, what="(2N+1, 2D)", min_ndim=2)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-d tensor (2N+1, 2D), got {tuple(X.shape)!r}")
    return [float(v) for v in values]


def full_model_loss_and_grad(alpha: float, beta: float, gamma: float, X: torch.Tensor, y: torch.Tensor, *,
                             strict: bool = True):
    """Loss ``||y - z||^2`` of Eq. 1 at the three-parameter weights and its autograd gradient in
    ``(alpha, beta, gamma)``; returns ``(loss, (dL/dalpha, dL/dbeta, dL/dgamma))`` as floats."""
    point = three_param_point(alpha, beta, gamma, X)
    tensor_arg("y", y, shape=(X.shape[-1] // 2,), what=f"of shape (D,) = ({X.shape[-1] // 2},)")
    params = [torch.tensor(value, dtype=torch.float64, requires_grad=True) for value in point]
    z = disentangled_forward(X, *induction_weights(*params, X.shape[-1] // 2), strict=strict)
    loss = ((y - z) ** 2).sum()
    grads = torch.autograd.grad(loss, params)
    return float(loss.detach()), tuple(float(g) for g in grads)


def induction_coordinates(W1: torch.Tensor, W2: torch.Tensor, W3: torch.Tensor) -> tuple[float, float, float]:
    """``(alpha_3, beta_2, gamma_3)`` of any weights: the Frobenius coordinates ``<W, B_k>/D`` on the basis
    matrices of Eqs. 6-8 (``B_k`` is ``M`` in block (X2, X2) of W1, ``I`` in block (U1, U3) of W2, ``I`` in
    block 5 of W3; each has ``||B_k||_F^2 = D``)."""
    D = weight_triple_D(W1, W2, W3)
    M = rotation_M(D).to(W1.dtype)
    alpha = torch.trace(W1[D:, D:] @ M) / D
    beta = torch.trace(W2[:D, 2 * D:3 * D]) / D
    gamma = torch.trace(W3[4 * D:5 * D]) / D
    return float(alpha), float(beta), float(gamma)



# ---------------------------------------------------------------------------------------------------
# 3. Closed forms of the three-parameter model (App. B.3-B.4)
#
# With G = e^alpha + 2N - 2, F = 2N - 1, x = beta e^alpha / G, s = e^x, r = s + F (App. B.4.1), the
# closed forms are evaluated through w = e^alpha / G, u = s / r and v = F / r = 1 - u, which are
# logistic functions of alpha and x: this is exact algebra, and it never overflows once s is large.


def _intermediates(alpha, beta, gamma, N):
    alpha, beta, gamma = (real_array(n, v) for n, v in (("alpha", alpha), ("beta", beta), ("gamma", gamma)))
    N = int_array("N", N)
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
