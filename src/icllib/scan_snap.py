"""Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023): one attention layer, reparameterised by Y and Z.

The module follows the paper's order:

1. **Data and model.** Sequence classes (Sec. 3.2), the Syn-Small / Syn-Medium vocabularies of the authors'
   experiments, the Y/Z objective (Eq. 15) and its gradient (Lemma 1, Eq. 3-4). Without positional encoding
   the forward pass sees a sequence only through the count vector of its contextual tokens, so batches are
   drawn as multinomial counts (exact, and the fast simulator of the chapter); the Hoeffding radius of the
   long-sequence limit (Lemma 18).
2. **Training** (:func:`train_yz`): SGD with momentum or Adam, as the authors ran it.
3. **The decoder clock** h(t) (Lemma 5-7, Eq. 33 and 45), the speed control gamma(t) (Eq. 85, Lemma 9) and the
   transition time t_0 (Lemma 8); class counts and the steps to a small decoder residual (Lemma 10-12,
   Corollary 1).
4. **Theorem 1** (the back-propagated gradient g = gamma (iota f_n - sum beta f_n')) under the modified and the
   plain update; the algebra of E' (Lemmas 13-17) and Theorem 5's closed form of Y.
5. **Scan**: the long-sequence dynamics of Z (Eq. 10, Theorem 2-3) integrated as an ODE.
6. **Snap**: B_n(t) of Theorem 4 (Eq. 14, 124-129) with the corrected constant.

Symbols follow the paper: ``M`` vocabulary size, ``K`` number of next tokens (classes), ``eta_Y`` and ``eta_Z``
the learning rates, ``P[n, l] = P(l|n)``, ``c_n`` the attention of Eq. 5, ``f_n = c_n / ||c_n||``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp
from scipy.optimize import brentq
from scipy.special import wrightomega
from scipy.stats import binom

from icllib.validation import positive_int, positive_number

# ---------------------------------------------------------------------------------------------------------
# Input validation


def _generator(name: str, value) -> np.random.Generator:
    if not isinstance(value, np.random.Generator):
        raise ValueError(f"{name} must be a numpy.random.Generator, got {type(value).__name__}")
    return value


# ---------------------------------------------------------------------------------------------------------
# 1. Sequence classes (Sec. 3.2) and the authors' synthetic vocabularies


@dataclass(frozen=True)
class SequenceClasses:
    """K sequence classes s_n = (P(l|n), psi(n), n) over a vocabulary of M tokens (Sec. 3.2).

    ``P[n, l] = P(l | psi(n), n)`` is the law of the contextual tokens of class n, ``query[n] = psi(n)`` the
    query token x_T and ``next_token[n]`` the next token x_{T+1}. ``support[n]`` lists supp(n) (padded by
    repeating its first entry, which carries zero extra mass), ``distinct[n]`` marks G_DT(n) and ``common`` G_CT.
    """

    P: np.ndarray
    query: np.ndarray
    next_token: np.ndarray
    name: str = "custom"

    @property
    def M(self) -> int:
        return self.P.shape[1]

    @property
    def K(self) -> int:
        return self.P.shape[0]

    @property
    def omega_size(self) -> np.ndarray:
        """``|Omega(l)|``: the number of classes in which token l can appear."""
        return (self.P > 0).sum(axis=0)

    @property
    def common(self) -> np.ndarray:
        return self.omega_size > 1

    @property
    def distinct(self) -> np.ndarray:
        return (self.P > 0) & (self.omega_size == 1)[None, :]


def make_classes(P, query, next_token, *, name: str = "custom") -> SequenceClasses:
    """Validate and build a :class:`SequenceClasses`; rows of ``P`` must be distributions over [M]."""
    P = np.array(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 2:
        raise ValueError(f"P must be a (K, M) array with M >= 2, got shape {P.shape}")
    if not np.all(np.isfinite(P)) or np.any(P < 0):
        raise ValueError("P must hold finite non-negative probabilities")
    if not np.allclose(P.sum(axis=1), 1.0, atol=1e-12, rtol=0):
        raise ValueError(f"each row of P must sum to 1, got sums {P.sum(axis=1)}")
    K, M = P.shape
    query = np.asarray(query)
    next_token = np.asarray(next_token)
    for label, array in (("query", query), ("next_token", next_token)):
        if array.shape != (K,) or not np.issubdtype(array.dtype, np.integer):
            raise ValueError(f"{label} must be {K} integer token ids, got {array!r}")
        if np.any(array < 0) or np.any(array >= M):
            raise ValueError(f"{label} ids must lie in [0, {M}), got {array}")
    if len(set(next_token.tolist())) != K:
        raise ValueError("next_token ids must be distinct (one class per next token)")
    return SequenceClasses(P=P, query=query.astype(np.int64), next_token=next_token.astype(np.int64), name=name)


def _authors_layout(num_last: int, next_per_last: int, name: str) -> SequenceClasses:
    """The authors' layout: 10 common tokens (weight 1), 10 distinct tokens per class (weights 0.1, ..., 1.0),
    then the query tokens, then the next tokens; the decoder predicts over the whole vocabulary."""
    K = num_last * next_per_last
    n_common, n_distinct = 10, 10
    M = n_common + n_distinct * K + num_last + K
    weights = np.zeros((K, M))
    weights[:, :n_common] = 1.0
    for n in range(K):
        start = n_common + n_distinct * n
        weights[n, start:start + n_distinct] = np.linspace(0.1, 1.0, n_distinct)
    P = weights / weights.sum(axis=1, keepdims=True)
    first_query = n_common + n_distinct * K
    query = first_query + np.arange(K) // next_per_last
    next_token = first_query + num_last + np.arange(K)
    return make_classes(P, query, next_token, name=name)


def syn_small() -> SequenceClasses:
    """Syn-Small (Sec. 8, Fig. 4): K = 2 classes, tokens 0-9 common, 10-19 and 20-29 distinct, each class
    with its own query token (30, 31) and next token (32, 33): M = 34 (the paper's "M = 30" counts only the
    contextual tokens; note scan_snap.N8)."""
    return _authors_layout(2, 1, "Syn-Small")


def syn_medium(num_last: int) -> SequenceClasses:
    """Syn-Medium (Fig. 6): ``num_last`` query tokens, each with 2 next tokens, so K = 2 num_last and
    M = 10 + 10 K + num_last + K (33, 79, 125, 240 for num_last = 1, 3, 5, 10)."""
    num_last = positive_int("num_last", num_last)
    return _authors_layout(num_last, 2, f"Syn-Medium {num_last}/{2 * num_last}")


def _check_classes(spec) -> SequenceClasses:
    if not isinstance(spec, SequenceClasses):
        raise ValueError(f"spec must be a SequenceClasses (syn_small(), syn_medium(...)), got {type(spec).__name__}")
    return spec


def _check_T(T) -> int:
    return positive_int("T", T, minimum=2)


def sample_counts(spec: SequenceClasses, batch_size: int, T: int, *, generator: np.random.Generator):
    """A batch of sequences as (classes, counts): class n uniform on [K], and the count vector of the T - 1
    contextual tokens, counts ~ Multinomial(T - 1, P(.|n)).

    Without positional encoding (Assumption 1(a)) the model sees a sequence only through these counts, so
    this is an exact simulator of the authors' data, not an approximation.
    """
    spec = _check_classes(spec)
    batch_size = positive_int("batch_size", batch_size)
    T = _check_T(T)
    generator = _generator("generator", generator)
    classes = generator.integers(0, spec.K, size=batch_size)
    counts = generator.multinomial(T - 1, spec.P[classes])
    return classes, counts


def sample_sequences(spec: SequenceClasses, batch_size: int, T: int, *, generator: np.random.Generator):
    """A batch of explicit token sequences (classes, tokens of shape (batch_size, T - 1)), i.i.d. from P(.|n).

    The reference for :func:`sample_counts`: the bincount of each row has the same multinomial law.
    """
    spec = _check_classes(spec)
    batch_size = positive_int("batch_size", batch_size)
    T = _check_T(T)
    generator = _generator("generator", generator)
    classes = generator.integers(0, spec.K, size=batch_size)
    cdf = np.cumsum(spec.P, axis=1)
    uniforms = generator.random((batch_size, T - 1))
    tokens = np.minimum((uniforms[:, :, None] > cdf[classes][:, None, :]).sum(axis=2), spec.M - 1)
    return classes, tokens


def token_counts(tokens, M: int) -> np.ndarray:
    """The count vector of each row of ``tokens`` (shape (batch, length), values in [0, M)): (batch, M)."""
    M = positive_int("M", M)
    tokens = np.asarray(tokens)
    if tokens.ndim != 2 or tokens.dtype.kind not in "iu" or tokens.size and (tokens.min() < 0 or tokens.max() >= M):
        raise ValueError(f"tokens must be a 2-d integer array with values in [0, {M}), got shape {tokens.shape}")
    counts = np.zeros((tokens.shape[0], M), dtype=np.int64)
    np.add.at(counts, (np.arange(tokens.shape[0])[:, None], tokens), 1)
    return counts


def sample_class_counts(spec: SequenceClasses, n: int, size: int, T: int, *, generator: np.random.Generator):
    """Count vectors of ``size`` sequences of class n: Multinomial(T - 1, P(.|n)), shape (size, M)."""
    spec = _check_classes(spec)
    n = positive_int("n", n, minimum=0)
    if n >= spec.K:
        raise ValueError(f"n must be a class index in [0, {spec.K}), got {n}")
    size = positive_int("size", size)
    T = _check_T(T)
    generator = _generator("generator", generator)
    return generator.multinomial(T - 1, spec.P[n], size=size)


def count_mixture(counts, z) -> np.ndarray:
    """X^T b_T from count vectors (Eq. 20): ``counts * exp(z) / (counts^T exp(z))``, row by row.

    ``counts`` is (..., M) with non-negative entries and positive row sums, ``z`` the query's logits (M,) or
    one row per sequence. As T grows, the counts divided by T - 1 tend to P(l|n) (Lemma 18) and this tends to
    c_n of Eq. 5 (Lemma 2).
    """
    counts = np.asarray(counts, dtype=np.float64)
    z = np.asarray(z, dtype=np.float64)
    if counts.ndim < 1 or np.any(counts < 0) or np.any(counts.sum(axis=-1) <= 0):
        raise ValueError("counts must be non-negative with a positive sum in every row")
    if z.shape[-1] != counts.shape[-1] or not np.all(np.isfinite(z)):
        raise ValueError(f"z must be finite logits over the last axis of counts ({counts.shape[-1]} tokens)")
    weights = counts * np.exp(z - z.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def hoeffding_radius(n, delta: float):
    """sqrt(ln(2/delta) / (2 n)): with probability at least 1 - delta, a frequency over n i.i.d. draws lies
    within this distance of its mean (Hoeffding). Eq. 136 uses it with n = T - 1 (token frequencies in one
    sequence), Lemma 10 (Eq. 58-59) with n = N (class frequencies over N steps)."""
    delta = positive_number("delta", delta)
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    n_array = np.asarray(n)
    if n_array.dtype.kind not in "iu" or np.any(n_array < 1):
        raise ValueError(f"n must be a positive integer (or an array of them), got {n!r}")
    radius = np.sqrt(np.log(2.0 / delta) / (2.0 * n_array))
    return float(radius) if n_array.ndim == 0 else radius



def _binomial_arguments(delta: float, n: int, false_pass: float) -> tuple[float, int, float]:
    delta = positive_number("delta", delta)
    if delta >= 1:
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    false_pass = positive_number("false_pass", false_pass)
    if false_pass >= 0.5:
        raise ValueError(f"false_pass must lie in (0, 0.5), got {false_pass!r}")
    return delta, positive_int("n", n), false_pass


def one_sided_ceiling(delta: float, n: int, *, false_pass: float = 0.01) -> float:
    """The largest violation frequency over ``n`` independent trials that still supports "P(violation) <= delta"
    at the given false-pass rate: k/n for the largest k with P(Binomial(n, delta) <= k) <= false_pass. A claim whose
    true violation rate is delta or more then passes with probability at most ``false_pass`` (exact binomial).
    Used for the probabilistic bounds of Lemmas 10-12 and 18, Remark 4 and Corollary 1."""
    delta, n, false_pass = _binomial_arguments(delta, n, false_pass)
    k = int(binom.ppf(false_pass, n, delta))
    while k >= 0 and binom.cdf(k, n, delta) > false_pass:
        k -= 1
    if k < 0:
        raise ValueError(f"n = {n} trials cannot test delta = {delta} at false-pass rate {false_pass}")
    return k / n


def one_sided_floor(delta: float, n: int, *, false_pass: float = 0.01) -> float:
    """The smallest violation frequency over ``n`` independent trials that refutes "P(violation) <= delta" at the
    given false-pass rate: k/n for the smallest k with P(Binomial(n, delta) >= k) <= false_pass (exact binomial).
    Used to show that a printed bound fails (erratum scan_snap.E30)."""
    delta, n, false_pass = _binomial_arguments(delta, n, false_pass)
    k = int(binom.isf(false_pass, n, delta))
    while binom.sf(k - 1, n, delta) > false_pass:
        k += 1
    while k > 0 and binom.sf(k - 2, n, delta) <= false_pass:
        k -= 1
    return k / n

# ---------------------------------------------------------------------------------------------------------
# The Y/Z model (Eq. 15) and Lemma 1


def _softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=axis, keepdims=True))
    return shifted / shifted.sum(axis=axis, keepdims=True)


def _log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    top = logits.max(axis=axis, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=axis, keepdims=True))


def embedding_objective(U, W_Q, W_K, W_V, tokens, query, next_token) -> float:
    """J of Eq. 2 for one sequence, in the embedding parameterisation (U, W_Q, W_K, W_V), 1/sqrt(d) included."""
    U = np.asarray(U, dtype=np.float64)
    d = U.shape[1]
    logits = U[tokens] @ W_K @ W_Q.T @ U[query] / np.sqrt(d)
    b = _softmax(logits)
    mixture = np.bincount(tokens, weights=b, minlength=U.shape[0])  # X^T b_T
    u_tilde = U.T @ (mixture / np.linalg.norm(mixture))
    decoded = U @ W_V @ u_tilde
    return float(decoded[next_token] - np.log(np.exp(decoded - decoded.max()).sum()) - decoded.max())


def yz_objective(Y, Z, tokens, query, next_token) -> float:
    """J of Eq. 15 for one sequence: x_{T+1}^T Y^T LN(X^T b_T) - log 1^T exp(Y^T LN(X^T b_T))."""
    b = _softmax(Z[query, tokens])
    mixture = np.bincount(tokens, weights=b, minlength=Y.shape[0])
    f = mixture / np.linalg.norm(mixture)
    return float(_log_softmax(Y.T @ f)[next_token])


def _check_YZ(spec: SequenceClasses, Y, Z):
    for name, value in (("Y", Y), ("Z", Z)):
        if not isinstance(value, np.ndarray) or value.shape != (spec.M, spec.M):
            raise ValueError(f"{name} must be a ({spec.M}, {spec.M}) array")


def lemma1_gradient_counts(spec: SequenceClasses, Y, Z, classes, counts):
    """Batch-mean objective J and its gradients (dJ/dY, dJ/dZ) from count vectors (Lemma 1, Eq. 3-4).

    With v = X^T b_T = counts * exp(z_m) / (counts^T exp(z_m)) and f = v / ||v||, the exact identity
    X^T diag(b_T) X = diag(v) (rows of X are one-hot; note scan_snap.N1) turns Eq. 4 into
    dJ/dz_m = f * (g - (f^T g) f), g = Y (e_n - alpha); and dJ/dY = f (e_n - alpha)^T (Eq. 3).
    """
    _check_YZ(spec, Y, Z)
    counts = np.asarray(counts, dtype=np.float64)
    queries = spec.query[classes]
    targets = spec.next_token[classes]
    logits = Z[queries]
    weights = counts * np.exp(logits - logits.max(axis=1, keepdims=True))
    v = weights / weights.sum(axis=1, keepdims=True)
    f = v / np.linalg.norm(v, axis=1, keepdims=True)
    decoded = f @ Y  # rows are (Y^T f)^T
    log_alpha = _log_softmax(decoded)
    batch = len(classes)
    residual = -np.exp(log_alpha)
    residual[np.arange(batch), targets] += 1.0  # e_n - alpha
    J = float(log_alpha[np.arange(batch), targets].mean())
    grad_Y = f.T @ residual / batch
    g = residual @ Y.T
    grad_rows = f * (g - (f * g).sum(axis=1, keepdims=True) * f)
    grad_Z = np.zeros_like(Z)
    np.add.at(grad_Z, queries, grad_rows / batch)
    return J, grad_Y, grad_Z


def lemma1_gradient_sequences(spec: SequenceClasses, Y, Z, classes, tokens):
    """The same batch-mean J and gradients, computed literally from Eq. 3-4 with the one-hot matrices X,
    the projection P^perp and X^T diag(b_T) X; the reference for :func:`lemma1_gradient_counts`."""
    _check_YZ(spec, Y, Z)
    batch, length = tokens.shape
    X = np.zeros((batch, length, spec.M))
    X[np.arange(batch)[:, None], np.arange(length)[None, :], tokens] = 1.0
    queries = spec.query[classes]
    targets = spec.next_token[classes]
    b = _softmax(np.einsum("btm,bm->bt", X, Z[queries]))
    v = np.einsum("btm,bt->bm", X, b)
    norm = np.linalg.norm(v, axis=1)
    f = v / norm[:, None]
    log_alpha = _log_softmax(f @ Y)
    residual = -np.exp(log_alpha)
    residual[np.arange(batch), targets] += 1.0
    J = float(log_alpha[np.arange(batch), targets].mean())
    grad_Y = np.einsum("bm,bk->mk", f, residual) / batch
    projector = np.eye(spec.M)[None] - f[:, :, None] * f[:, None, :]  # P^perp of X^T b_T
    XbX = np.matmul(X.transpose(0, 2, 1), b[:, :, None] * X)  # X^T diag(b_T) X, (batch, M, M)
    g = residual @ Y.T
    rows = np.matmul(np.matmul(g[:, None, :], projector), XbX)[:, 0] / norm[:, None]
    grad_Z = np.zeros_like(Z)
    np.add.at(grad_Z, queries, rows / batch)
    return J, grad_Y, grad_Z


# ---------------------------------------------------------------------------------------------------------
# 2. Training (the authors' Model2: SGD with momentum or Adam, one optimiser per matrix)


@dataclass(frozen=True)
class TrainResult:
    """A training run: final Y and Z, the query rows Z[psi(n)] at the recorded steps, and the losses."""

    Y: np.ndarray
    Z: np.ndarray
    steps: np.ndarray  # iterations at which Z_query was recorded (0 = initial)
    Z_query: np.ndarray  # (len(steps), K, M): row psi(n) of Z for each class n
    losses: np.ndarray  # (steps,) batch cross-entropy = -J before each update


class _Optimizer:
    """PyTorch's SGD (momentum, dampening 0, buf <- mu buf + grad) or Adam (defaults) on one array."""

    def __init__(self, kind: str, lr: float, momentum: float):
        self.kind, self.lr, self.momentum = kind, lr, momentum
        self.state = None
        self.t = 0

    def step(self, param: np.ndarray, grad: np.ndarray) -> None:
        self.t += 1
        if self.kind == "sgd":
            if self.momentum == 0:
                param -= self.lr * grad
                return
            self.state = grad.copy() if self.state is None else self.momentum * self.state + grad
            param -= self.lr * self.state
            return
        beta1, beta2, eps = 0.9, 0.999, 1e-8
        if self.state is None:
            self.state = (np.zeros_like(param), np.zeros_like(param))
        m, s = self.state
        m *= beta1
        m += (1 - beta1) * grad
        s *= beta2
        s += (1 - beta2) * grad**2
        m_hat = m / (1 - beta1**self.t)
        s_hat = s / (1 - beta2**self.t)
        param -= self.lr * m_hat / (np.sqrt(s_hat) + eps)


def train_yz(spec: SequenceClasses, *, eta_Y: float, eta_Z: float, steps: int, batch_size: int, T: int,
             optimizer: str = "sgd", momentum: float = 0.9, init="zero", seed: int,
             record_every: int | None = None, simulator: str = "counts") -> TrainResult:
    """Train Y and Z on the cross-entropy -J of Eq. 15, as the authors' code does.

    - ``init``: ``"zero"`` (Y(0) = Z(0) = 0, Fig. 4/5 and the theory), ``"default"`` (PyTorch's nn.Linear
      init, i.i.d. U(-1/sqrt(M), 1/sqrt(M)), used for Fig. 6), or a pair ``(Y0, Z0)`` of arrays.
    - ``optimizer``: ``"sgd"`` (lr eta_Y for Y and eta_Z for Z, the given momentum) or ``"adam"``.
    - ``simulator``: ``"counts"`` (multinomial counts, exact) or ``"sequences"`` (explicit token sequences,
      the slow reference).
    - ``record_every``: record the query rows of Z every that many steps (always at 0 and at the end).
    """
    spec = _check_classes(spec)
    eta_Y = positive_number("eta_Y", eta_Y, allow_zero=True)
    eta_Z = positive_number("eta_Z", eta_Z, allow_zero=True)
    steps = positive_int("steps", steps)
    batch_size = positive_int("batch_size", batch_size)
    T = _check_T(T)
    if optimizer not in ("sgd", "adam"):
        raise ValueError(f"optimizer must be 'sgd' or 'adam', got {optimizer!r}")
    momentum = positive_number("momentum", momentum, allow_zero=True)
    if momentum >= 1:
        raise ValueError(f"momentum must be < 1, got {momentum!r}")
    if simulator not in ("counts", "sequences"):
        raise ValueError(f"simulator must be 'counts' or 'sequences', got {simulator!r}")
    if record_every is not None:
        record_every = positive_int("record_every", record_every)
    from icllib.config import rng

    generator = rng(seed)
    M = spec.M
    if isinstance(init, str) and init == "zero":
        Y, Z = np.zeros((M, M)), np.zeros((M, M))
    elif isinstance(init, str) and init == "default":
        bound = 1.0 / np.sqrt(M)
        Y = generator.uniform(-bound, bound, size=(M, M))
        Z = generator.uniform(-bound, bound, size=(M, M))
    elif isinstance(init, tuple) and len(init) == 2:
        Y, Z = (np.array(a, dtype=np.float64) for a in init)
        _check_YZ(spec, Y, Z)
    else:
        raise ValueError(f"init must be 'zero', 'default' or a pair (Y0, Z0), got {init!r}")

    opt_Y, opt_Z = _Optimizer(optimizer, eta_Y, momentum), _Optimizer(optimizer, eta_Z, momentum)
    recorded_steps, recorded = [0], [Z[spec.query].copy()]
    losses = np.empty(steps)
    for step in range(1, steps + 1):
        if simulator == "counts":
            classes, counts = sample_counts(spec, batch_size, T, generator=generator)
            J, grad_Y, grad_Z = lemma1_gradient_counts(spec, Y, Z, classes, counts)
        else:
            classes, tokens = sample_sequences(spec, batch_size, T, generator=generator)
            J, grad_Y, grad_Z = lemma1_gradient_sequences(spec, Y, Z, classes, tokens)
        losses[step - 1] = -J
        # The optimisers minimise the loss -J, so they receive -dJ.
        opt_Y.step(Y, -grad_Y)
        opt_Z.step(Z, -grad_Z)
        if step == steps or (record_every is not None and step % record_every == 0):
            recorded_steps.append(step)
            recorded.append(Z[spec.query].copy())
    return TrainResult(Y=Y, Z=Z, steps=np.array(recorded_steps), Z_query=np.array(recorded), losses=losses)


def attention_distribution(spec: SequenceClasses, Z) -> np.ndarray:
    """c_n of Eq. 5 for every class: ``c_{l|n} = P(l|n) exp(z_{psi(n) l}) / sum_l' P(l'|n) exp(z_{psi(n) l'})``.

    ``Z`` is the full (M, M) matrix or the (K, M) stack of its query rows (as :class:`TrainResult` records);
    returns a (K, M) array whose rows sum to 1 (the long-sequence limit of X^T b_T, Lemma 2).
    """
    spec = _check_classes(spec)
    Z = np.asarray(Z, dtype=np.float64)
    if Z.shape == (spec.M, spec.M):
        rows = Z[spec.query]
    elif Z.shape == (spec.K, spec.M):
        rows = Z
    else:
        raise ValueError(f"Z must have shape ({spec.M}, {spec.M}) or ({spec.K}, {spec.M}), got {Z.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("Z must be finite")
    log_c = np.where(spec.P > 0, np.log(np.where(spec.P > 0, spec.P, 1.0)) + rows, -np.inf)
    return _softmax(log_c)


def distinct_token_entropy(spec: SequenceClasses, Z, *, per_class: bool = False):
    """The Fig. 6 metric: the entropy (nats) of c_n restricted to G_DT(n) and renormalised, averaged over n
    (or one value per class with ``per_class=True``)."""
    c = attention_distribution(spec, Z)
    c_dt = np.where(spec.distinct, c, 0.0)
    c_dt = c_dt / c_dt.sum(axis=1, keepdims=True)
    entropy = -np.sum(np.where(c_dt > 0, c_dt * np.log(np.where(c_dt > 0, c_dt, 1.0)), 0.0), axis=1)
    return entropy if per_class else float(entropy.mean())


# ---------------------------------------------------------------------------------------------------------
# 3. The decoder clock (Lemma 5-9)


def decoder_clock_h_star(steps: int, M: int, eta_Y: float) -> np.ndarray:
    """h*(s), s = 0..steps, of Lemma 5 (Eq. 33): h*(s) = h*(s-1) + eta_Y / ((M-1) + exp(M h*(s-1)))."""
    steps = positive_int("steps", steps)
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    h = np.empty(steps + 1)
    h[0] = 0.0
    current = 0.0
    for s in range(1, steps + 1):  # a recursion: each step needs the previous one
        current = current + eta_Y / ((M - 1) + np.exp(M * current))
        h[s] = current
    return h


def decoder_row_dynamics(steps: int, M: int, eta_Y: float) -> np.ndarray:
    """w_n(s), s = 0..steps, of the decoupled decoder dynamics of one class (Eq. 8 with K = 1, batch 1):
    w_n(s) = w_n(s-1) + eta_Y (e_n - softmax(w_n(s-1))), w_n(0) = 0, class n = 0. Shape (steps + 1, M)."""
    steps = positive_int("steps", steps)
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    w = np.zeros((steps + 1, M))
    for s in range(1, steps + 1):  # a recursion: each step needs the previous one
        residual = -_softmax(w[s - 1])
        residual[0] += 1.0
        w[s] = w[s - 1] + eta_Y * residual
    return w


def decoder_clock_h(s, M: int, eta_Y: float):
    """h(s) of Lemma 6, the solution of exp(M h) + (M-1) M h = M eta_Y s + 1 (Eq. 45).

    Closed form: with x = (M eta_Y s + 1)/(M-1), h = [x - omega(x - ln(M-1))]/M, omega the Wright omega
    function (W(exp(.)) would overflow for large s). Since omega + ln omega = x - ln(M-1), this equals
    h = [ln(M-1) + ln omega]/M, which avoids the cancellation x - omega for large x.
    """
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    s_array = np.asarray(s, dtype=np.float64)
    if np.any(~np.isfinite(s_array)) or np.any(s_array < 0):
        raise ValueError("s must be finite and non-negative")
    x = (M * eta_Y * s_array + 1.0) / (M - 1)
    h = (np.log(M - 1) + np.log(np.real(wrightomega(x - np.log(M - 1))))) / M
    return float(h) if np.ndim(s) == 0 else h


def speed_control_gamma(t, K: int, M: int, eta_Y: float, *, discrete: bool = False):
    """gamma(t) = (M-1)^2 h / ((M-1) + exp(M h)) at h = h(t/K) (or h(ceil(t/K)) with ``discrete``; Eq. 85,
    note scan_snap.N5)."""
    K = positive_int("K", K)
    t = np.asarray(t, dtype=np.float64)
    s = np.ceil(t / K) if discrete else t / K
    h = decoder_clock_h(s, M, eta_Y)
    return (M - 1) ** 2 * h / ((M - 1) + np.exp(M * h))


def lemma8_omegas(M: int) -> tuple[float, float]:
    """The two zeros omega_0 < omega_1 of exp(M h) = (M-1) M h written as h = (1 + omega) ln M / M ...

    Lemma 8 (Eq. 50-51): omega_0 ln M = ln(M/(M-1)) + M^{-(1 - omega_0)} and M^{omega_1} = (1 + omega_1)
    ln M (M-1)/M; both solved with Brent's method.
    """
    M = positive_int("M", M, minimum=3)
    lnM = np.log(M)
    omega0 = brentq(lambda w: w * lnM - np.log(M / (M - 1)) - M ** (-(1 - w)), 0.0, 0.5)
    omega1 = brentq(lambda w: M**w - (1 + w) * lnM * (M - 1) / M, omega0 + 1e-9 if omega0 > 0 else 1e-9, 5.0)
    return float(omega0), float(omega1)


def transition_time(K: int, M: int, eta_Y: float) -> float:
    """t_0 = 2 (1 + omega_1) K ln M / eta_Y (Theorem 4, Lemma 8)."""
    K = positive_int("K", K)
    eta_Y = positive_number("eta_Y", eta_Y)
    return 2.0 * (1.0 + lemma8_omegas(M)[1]) * K * np.log(M) / eta_Y


def decoder_residual_norm(h, M: int):
    """||e_n - alpha_n||_2 when w_n = (M-1) h zeta_n (Lemma 5, Eq. 71): sqrt(M (M-1)) / ((M-1) + exp(M h)).

    Evaluated as sqrt(M (M-1)) exp(-M h) / ((M-1) exp(-M h) + 1), which does not overflow for large M h.
    """
    M = positive_int("M", M, minimum=2)
    h_array = np.asarray(h, dtype=np.float64)
    if np.any(~np.isfinite(h_array)) or np.any(h_array < 0):
        raise ValueError("h must be finite and non-negative")
    decay = np.exp(-M * h_array)
    norm = np.sqrt(M * (M - 1.0)) * decay / ((M - 1) * decay + 1.0)
    return float(norm) if h_array.ndim == 0 else norm


def _check_eps(eps: float) -> float:
    eps = positive_number("eps", eps)
    if eps >= 1:
        raise ValueError(f"eps must lie in (0, 1), got {eps!r}")
    return eps


def steps_to_residual(eps: float, M: int, eta_Y: float) -> int:
    """S_n of Corollary 1: the first step s of one class's decoder dynamics (batch 1, Y(0) = 0) at which
    ||e_n - alpha_n|| <= eps, i.e. decoder_residual_norm(h*(s)) <= eps on the discrete clock of Eq. 33."""
    eps = _check_eps(eps)
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    # exp(M h) must reach (M-1)(sqrt(M/(M-1))/eps - 1); compare M h with its logarithm to avoid overflow.
    target = np.log(max((M - 1) * (np.sqrt(M / (M - 1)) / eps - 1.0), 1.0)) / M
    h, s = 0.0, 0
    while h < target:  # a recursion: each step needs the previous one
        h += eta_Y / ((M - 1) + np.exp(M * h))
        s += 1
    return s


def residual_time(eps, M: int, eta_Y: float):
    """The time t at which the continuous clock h(t) of Eq. 45 gives ||e_n - alpha_n|| = eps: with
    x = exp(M h) = (M-1)(sqrt(M/(M-1))/eps - 1), t = (x + (M-1) ln x - 1) / (M eta_Y) (Eq. 45 inverted).

    For small eps, t ~ 1/(eps eta_Y) + ln(M/eps)/eta_Y: the sharp version of Corollary 1's
    O(ln(M/eps)/(eps eta_Y)). Zero when eps is at least the initial residual sqrt((M-1)/M).
    """
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    eps_array = np.asarray(eps, dtype=np.float64)
    for value in eps_array.ravel():
        _check_eps(float(value))
    x = np.maximum((M - 1) * (np.sqrt(M / (M - 1)) / eps_array - 1.0), 1.0)
    t = (x + (M - 1) * np.log(x) - 1.0) / (M * eta_Y)
    return float(t) if eps_array.ndim == 0 else t


def uniform_class_counts(N: int, K: int, size: int, *, generator: np.random.Generator) -> np.ndarray:
    """The class counts N_n of N batch-1 steps with classes drawn uniformly from [K] (Lemma 10), for ``size``
    independent runs: Multinomial(N, 1/K), shape (size, K)."""
    N = positive_int("N", N)
    K = positive_int("K", K)
    size = positive_int("size", size)
    generator = _generator("generator", generator)
    return generator.multinomial(N, np.full(K, 1.0 / K), size=size)


def steps_until_every_class(S: int, K: int, size: int, *, generator: np.random.Generator) -> np.ndarray:
    """The total number of batch-1 steps, with classes drawn uniformly from [K], until every class has had S
    steps (the total training length of Corollary 1), for ``size`` independent runs."""
    S = positive_int("S", S)
    K = positive_int("K", K)
    size = positive_int("size", size)
    generator = _generator("generator", generator)
    # The S-th visit of one class comes after K S steps on average, with standard deviation sqrt(S K (K-1)).
    length = int(K * S + 10 * np.sqrt(S * K * (K - 1)) + 10 * K)
    totals = np.empty(size, dtype=np.int64)
    for run in range(size):
        labels = generator.integers(0, K, size=length)
        while np.bincount(labels, minlength=K).min() < S:
            labels = np.concatenate([labels, generator.integers(0, K, size=length)])
        totals[run] = max(np.flatnonzero(labels == n)[S - 1] for n in range(K)) + 1
    return totals


def class_count_theta(counts, M: int, eta_Y: float, *, discrete: bool = False) -> np.ndarray:
    """theta_n of Lemma 12 and Theorem 5 from the class counts N_n of N steps: 1 + theta_n = h(N_n) / h(N_bar),
    N_bar = ceil(N/K), N = sum_n N_n, with the continuous clock h of Eq. 45 (the paper's choice) or the
    discrete h* of Eq. 33 (``discrete=True``, exact under the modified dynamics). ``counts`` is (..., K)."""
    counts = np.asarray(counts)
    if counts.ndim < 1 or counts.dtype.kind not in "iu" or np.any(counts < 0) or np.any(counts.sum(axis=-1) < 1):
        raise ValueError("counts must be non-negative integer class counts (..., K) with a positive total")
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    K = counts.shape[-1]
    N_bar = -(-counts.sum(axis=-1, keepdims=True) // K)  # ceil(N / K)
    if discrete:
        h = decoder_clock_h_star(int(max(counts.max(), N_bar.max())), M, eta_Y)
        return h[counts] / h[N_bar] - 1.0
    return decoder_clock_h(counts, M, eta_Y) / decoder_clock_h(N_bar, M, eta_Y) - 1.0


def class_count_sigma(counts, M: int, eta_Y: float) -> np.ndarray:
    """sigma_n of Corollary 1 (Eq. 71) from the class counts N_n of N steps: with g(s) = 1/((M-1) + exp(M h(s))),
    the continuous clock h of Eq. 45 and N_bar = ceil(N/K), 1 + sigma_n = g(N_n) / g(N_bar), so that
    e_n - alpha_n = (M-1) g(N_bar) (1 + sigma_n) zeta_n. ``counts`` is (..., K).

    exp(M h) is taken from Eq. 45, exp(M h) = M eta_Y s + 1 - (M-1) M h, which does not overflow.
    """
    counts = np.asarray(counts)
    if counts.ndim < 1 or counts.dtype.kind not in "iu" or np.any(counts < 0) or np.any(counts.sum(axis=-1) < 1):
        raise ValueError("counts must be non-negative integer class counts (..., K) with a positive total")
    M = positive_int("M", M, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    N_bar = -(-counts.sum(axis=-1, keepdims=True) // counts.shape[-1])  # ceil(N / K)

    def denominator(s):
        s = np.asarray(s, dtype=np.float64)
        return (M - 1) + M * eta_Y * s + 1.0 - (M - 1) * M * decoder_clock_h(s, M, eta_Y)

    return denominator(N_bar) / denominator(counts) - 1.0


# ---------------------------------------------------------------------------------------------------------
# 4. Theorem 1: the structure of the back-propagated gradient


def e_prime(E) -> np.ndarray:
    """E' = I - (I + E)^{-1} for one (K, K) matrix or a stack (..., K, K) (App. D.1 as Lemma 14 and the
    proofs use it; the definition printed at line 500 is not this, erratum scan_snap.E4)."""
    E = np.asarray(E, dtype=np.float64)
    if E.ndim < 2 or E.shape[-1] != E.shape[-2] or not np.all(np.isfinite(E)):
        raise ValueError(f"E must be a finite (..., K, K) array, got shape {E.shape}")
    identity = np.eye(E.shape[-1])
    return identity - np.linalg.inv(identity + E)


def random_overlap_matrices(K: int, size: int, *, generator: np.random.Generator, lambda_range=(0.05, 0.9),
                            density: float = 0.7) -> np.ndarray:
    """``size`` random matrices shaped like E = F^T F - I: symmetric, zero diagonal, off-diagonal entries
    uniform on [0, 1] and present with probability ``density`` (so some rows can be all zero), each rescaled
    so that its largest eigenvalue magnitude abs(lambda_1) is uniform on ``lambda_range``. Shape (size, K, K)."""
    K = positive_int("K", K, minimum=2)
    size = positive_int("size", size)
    generator = _generator("generator", generator)
    low, high = (float(v) for v in lambda_range)
    if not 0 < low <= high < 1:
        raise ValueError(f"lambda_range must satisfy 0 < low <= high < 1, got {lambda_range!r}")
    density = positive_number("density", density)
    if density > 1:
        raise ValueError(f"density must lie in (0, 1], got {density!r}")
    upper = np.triu(generator.uniform(size=(size, K, K)) * (generator.uniform(size=(size, K, K)) < density), 1)
    E = upper + upper.transpose(0, 2, 1)
    radius = np.abs(np.linalg.eigvalsh(E)).max(axis=-1)
    while np.any(radius == 0):  # an all-zero draw has no scale; draw it again
        empty = radius == 0
        fresh = np.triu(generator.uniform(size=(int(empty.sum()), K, K)), 1)
        E[empty] = fresh + fresh.transpose(0, 2, 1)
        radius = np.abs(np.linalg.eigvalsh(E)).max(axis=-1)
    return E * (generator.uniform(low, high, size=size) / radius)[:, None, None]


def e_prime_checks(E) -> dict:
    """The statements of Lemmas 13-17, Eq. 79 and Eq. 92 (App. D.5) for a stack of symmetric zero-diagonal
    matrices E (..., K, K) with abs(lambda_1) < 1, one number per matrix; each is <= 0 when the statement holds
    (``*_error`` entries are deviations from an identity, 0 up to round-off):

    - ``lemma13``: max abs(E_ij) - abs(lambda_1);
    - ``lemma14_error``: max abs(E' - U^T diag(lambda/(1+lambda)) U) (E' has E's eigenvectors and eigenvalues
      lambda/(1+lambda));
    - ``lemma15``: max abs(lambda(E')) - abs(lambda_1) / (1 - abs(lambda_1));
    - ``lemma16``: max E'_ii over rows with a positive off-diagonal entry (strictly negative; -inf without
      such rows), and ``lemma16_isolated``: max abs(E'_ii) over rows without one (0);
    - ``lemma17``: max abs(E'_nn' - E_nn') - lambda_1^2 / (1 - abs(lambda_1));
    - ``eq79_error``: max abs(E'_ii + sum_k lambda_k^2/(1+lambda_k) u_ik^2);
    - ``eq92_error``: max abs(sum_{k != n} E_nk E'_nk + E'_nn);
    - ``line974_corrected`` and ``line974_printed``: max over n of min_i lambda_i^2/(1 + abs(lambda_1)) + E'_nn and
      of min_i lambda_i^2/(1 - abs(lambda_1)) + E'_nn: the lower bound on -E'_nn used in the proof of
      Theorem 1(a) (line 974), with the valid factor and with the printed one.
    """
    E = np.asarray(E, dtype=np.float64)
    if E.ndim < 2 or E.shape[-1] != E.shape[-2] or not np.allclose(E, np.swapaxes(E, -1, -2), atol=1e-14):
        raise ValueError("E must be a stack of symmetric (K, K) matrices")
    if np.abs(np.diagonal(E, axis1=-2, axis2=-1)).max() > 0:
        raise ValueError("E must have a zero diagonal (E = F^T F - I with unit f_n)")
    lam, vectors = np.linalg.eigh(E)  # E = vectors diag(lam) vectors^T; the paper's U is vectors^T
    lam1 = np.abs(lam).max(axis=-1)
    if np.any(lam1 >= 1):
        raise ValueError("E must have |lambda_1| < 1")
    Ep = e_prime(E)
    diag_Ep = np.diagonal(Ep, axis1=-2, axis2=-1)
    spectral = np.einsum("...ik,...k,...jk->...ij", vectors, lam / (1 + lam), vectors)
    lam_Ep = np.linalg.eigvalsh(Ep)
    connected = (E > 0).any(axis=-1)
    shrink = np.einsum("...k,...ik->...i", lam**2 / (1 + lam), vectors**2)
    off_sum = np.sum(E * Ep, axis=-1)  # E_nn = 0, so the k = n term vanishes
    min_lam_sq = (lam**2).min(axis=-1)
    axes = (-2, -1)
    return {
        "lemma13": np.abs(E).max(axis=axes) - lam1,
        "lemma14_error": np.abs(Ep - spectral).max(axis=axes),
        "lemma15": np.abs(lam_Ep).max(axis=-1) - lam1 / (1 - lam1),
        "lemma16": np.where(connected, diag_Ep, -np.inf).max(axis=-1),
        "lemma16_isolated": np.where(connected, 0.0, np.abs(diag_Ep)).max(axis=-1),
        "lemma17": np.abs(Ep - E).max(axis=axes) - lam1**2 / (1 - lam1),
        "eq79_error": np.abs(diag_Ep + shrink).max(axis=-1),
        "eq92_error": np.abs(off_sum + diag_Ep).max(axis=-1),
        "line974_corrected": ((min_lam_sq / (1 + lam1))[..., None] + diag_Ep).max(axis=-1),
        "line974_printed": ((min_lam_sq / (1 - lam1))[..., None] + diag_Ep).max(axis=-1),
    }


def _check_F(F) -> np.ndarray:
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[1] > F.shape[0] or np.any(F < 0):
        raise ValueError("F must be an (M, K) non-negative array with K <= M")
    if not np.allclose(np.linalg.norm(F, axis=0), 1.0, atol=1e-12):
        raise ValueError("the columns f_n of F must have unit norm")
    return F


def decoder_in_span(F, *, eta_Y: float, steps: int, update: str, generator: np.random.Generator):
    """Run the decoder dynamics with fixed F (Assumption 1(c)) from Y(0) = 0, keeping Y = F A in span(F).

    ``update="modified"`` is Eq. 26 (A += eta_Y (I - E') e_n (e_n - alpha_n)^T), ``update="plain"`` is Eq. 7
    (A += eta_Y e_n (e_n - alpha_n)^T); alpha_n = softmax(w_n), W = F^T Y (Eq. 25); class n predicts token n.
    Classes are drawn uniformly, batch 1. Returns (A, counts): A is (K, M), counts the per-class step counts.
    """
    F = _check_F(F)
    eta_Y = positive_number("eta_Y", eta_Y)
    steps = positive_int("steps", steps)
    if update not in ("modified", "plain"):
        raise ValueError(f"update must be 'modified' or 'plain', got {update!r}")
    generator = _generator("generator", generator)
    M, K = F.shape
    gram = F.T @ F
    mix = np.linalg.inv(gram) if update == "modified" else np.eye(K)  # I - E' = (I + E)^{-1}
    A = np.zeros((K, M))
    classes = generator.integers(0, K, size=steps)
    for n in classes:  # SGD with batch 1 is sequential
        w_n = gram[n] @ A
        residual = -_softmax(w_n)
        residual[n] += 1.0
        A += eta_Y * np.outer(mix[:, n], residual)
    return A, np.bincount(classes, minlength=K)


def span_coefficients(F, A) -> np.ndarray:
    """coef[n] = A (e_n - alpha_n) with W = F^T F A and alpha_n = softmax(w_n): the back-propagated gradient of
    class n is g_n = Y (e_n - alpha_n) = F coef[n] = gamma (iota_n f_n - sum_n' beta_nn' f_n') (Eq. 9)."""
    F = _check_F(F)
    A = np.asarray(A, dtype=np.float64)
    M, K = F.shape
    if A.shape != (K, M):
        raise ValueError(f"A must have shape ({K}, {M}), got {A.shape}")
    residuals = -_softmax(F.T @ F @ A)
    residuals[np.arange(K), np.arange(K)] += 1.0
    return residuals @ A.T


def theorem1_coefficients(F, *, eta_Y: float, steps: int, update: str, generator: np.random.Generator):
    """:func:`decoder_in_span` followed by :func:`span_coefficients`: returns (coef, counts) with
    g_n = F coef[n] the back-propagated gradient of class n after ``steps`` steps."""
    A, counts = decoder_in_span(F, eta_Y=eta_Y, steps=steps, update=update, generator=generator)
    return span_coefficients(F, A), counts


def theorem5_coefficients(F, counts, eta_Y: float):
    """Theorem 5 (Eq. 70) from the class counts N_n: Y = F (I - E') (I + Theta) W_bar(N) = F A, with
    W_bar rows (M-1) h*(N_bar) zeta_n and 1 + theta_n = h*(N_n)/h*(N_bar) (:func:`class_count_theta`,
    discrete clock). Returns (A, theta); A is (K, M), compared with :func:`decoder_in_span` (Y itself is M x M)."""
    F = _check_F(F)
    M, K = F.shape
    counts = np.asarray(counts)
    if counts.shape != (K,):
        raise ValueError(f"counts must hold the {K} class counts, got shape {counts.shape}")
    eta_Y = positive_number("eta_Y", eta_Y)
    theta = class_count_theta(counts, M, eta_Y, discrete=True)
    N_bar = -(-int(counts.sum()) // K)
    zeta = M / (M - 1) * (np.eye(K, M) - 1.0 / M)  # rows zeta_n, n < K
    W_bar = (M - 1) * decoder_clock_h_star(N_bar, M, eta_Y)[N_bar] * zeta
    A = np.linalg.inv(F.T @ F) @ ((1 + theta)[:, None] * W_bar)  # I - E' = (I + E)^{-1}
    return A, theta


# ---------------------------------------------------------------------------------------------------------
# 5. Scan: the long-sequence dynamics of Z (Eq. 10, Theorems 2-3)


def normalised_attention(P, z) -> np.ndarray:
    """f_n = c_n / ||c_n|| for every class, c_n of Eq. 5 with logits z (one query token)."""
    c = P * np.exp(z - z.max())
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def population_zdot(P, z, *, gamma: float, eta_Z: float, class_weight: float = 1.0):
    """dz/dt of Eq. 10 for one query token shared by all classes, with beta = E' of the current F (Theorem 1):

    dz/dt = eta_Z gamma w sum_n diag(f_n) sum_{n' != n} beta_nn' (f_n f_n^T - I) f_n'.

    ``class_weight`` w is 1 for the literal Eq. 10 and 1/K for the expectation over uniform classes (Eq. 10 omits the class probability).
    Returns (zdot, xi) with xi_n = gamma sum_{n' != n} beta_nn' f_n^T f_n' (Theorem 1(a)).
    """
    F = normalised_attention(P, z).T  # (M, K)
    gram = F.T @ F
    K = gram.shape[0]
    beta = np.eye(K) - np.linalg.inv(gram)
    np.fill_diagonal(beta, 0.0)
    pushed = F @ beta.T  # column n: sum_{n'} beta_nn' f_n'
    overlap = np.sum(F * pushed, axis=0)  # f_n^T sum beta f_n'
    zdot = eta_Z * gamma * class_weight * np.sum(F * (F * overlap - pushed), axis=1)
    return zdot, gamma * overlap


def integrate_scan(P, t_eval, *, K_clock: int, M_decoder: int, eta_Y: float, eta_Z: float,
                   class_weight: float = 1.0, z0=None):
    """Integrate Eq. 10 with gamma(t) of Eq. 85 (continuous h) and B_n(t) = eta_Z int_0^t xi_n alongside.

    Returns (z, B, zdot, xi) at ``t_eval``, shapes (len(t), M), (len(t), K), (len(t), M), (len(t), K).
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or np.any(P < 0) or not np.allclose(P.sum(axis=1), 1.0, atol=1e-12):
        raise ValueError("P must be a (K, M) array of distributions")
    eta_Z = positive_number("eta_Z", eta_Z)
    t_eval = np.asarray(t_eval, dtype=np.float64)
    K, M = P.shape
    z0 = np.zeros(M) if z0 is None else np.asarray(z0, dtype=np.float64)

    def rhs(t, state):
        gamma = float(speed_control_gamma(t, K_clock, M_decoder, eta_Y))
        zdot, xi = population_zdot(P, state[:M], gamma=gamma, eta_Z=eta_Z, class_weight=class_weight)
        return np.concatenate([zdot, eta_Z * class_weight * xi])

    solution = solve_ivp(rhs, (0.0, float(t_eval[-1])), np.concatenate([z0, np.zeros(K)]), method="LSODA",
                         t_eval=t_eval, rtol=1e-10, atol=1e-12)
    if not solution.success:
        raise RuntimeError(f"the scan ODE failed: {solution.message}")
    z, B = solution.y[:M].T, solution.y[M:].T
    derivatives = [population_zdot(P, zi, gamma=float(speed_control_gamma(t, K_clock, M_decoder, eta_Y)),
                                   eta_Z=eta_Z, class_weight=class_weight) for t, zi in zip(t_eval, z)]
    zdot = np.array([d[0] for d in derivatives])
    xi = np.array([d[1] for d in derivatives])
    return z, B, zdot, xi


# ---------------------------------------------------------------------------------------------------------
# 6. Snap: Theorem 4


def snap_Gamma(t, K: int, M: int, eta_Y: float, eta_Z: float):
    """Gamma(t) = eta_Z int_0^t gamma = (eta_Z/eta_Y) K (M-1)^2 h^2(t/K) / 2 (Eq. 124-128)."""
    K = positive_int("K", K)
    eta_Y = positive_number("eta_Y", eta_Y)
    eta_Z = positive_number("eta_Z", eta_Z)
    h = decoder_clock_h(np.asarray(t, dtype=np.float64) / K, M, eta_Y)
    return eta_Z / eta_Y * K * (M - 1) ** 2 * h**2 / 2.0


def snap_B(t, K: int, M: int, eta_Y: float, eta_Z: float, C0: float = 1.0):
    """B_n(t) of Theorem 4 with the corrected constant (erratum scan_snap.E1): B = (1/4) ln(1 + 4 Gamma(t) / C0).

    The paper prints (1/4) ln(C0 + 4 Gamma) (Eq. 129), which drops -(1/4) ln C0; both agree for C0 = 1.
    """
    C0 = positive_number("C0", C0)
    return 0.25 * np.log1p(4.0 * snap_Gamma(t, K, M, eta_Y, eta_Z) / C0)


def snap_B_ode(t_eval, K: int, M: int, eta_Y: float, eta_Z: float, C0: float = 1.0) -> np.ndarray:
    """B(t) from the ODE dB/dt = C0^{-1} eta_Z gamma(t) exp(-4 B), B(0) = 0 (Eq. 13 with z = -B)."""
    C0 = positive_number("C0", C0)
    eta_Z = positive_number("eta_Z", eta_Z)
    t_eval = np.asarray(t_eval, dtype=np.float64)

    def rhs(t, B):
        return eta_Z * speed_control_gamma(t, K, M, eta_Y) * np.exp(-4.0 * B) / C0

    solution = solve_ivp(rhs, (0.0, float(t_eval[-1])), [0.0], method="LSODA", t_eval=t_eval,
                         rtol=1e-11, atol=1e-13)
    if not solution.success:
        raise RuntimeError(f"the snap ODE failed: {solution.message}")
    return solution.y[0]


# ---------------------------------------------------------------------------------------------------------
# 7. The Syn-Medium sweep of Fig. 6


# The authors' released Fig. 6 statistics (facebookresearch/luckmatters, ssl/real-dataset/scan_snap/
# figure_6_data.pkl, re-tabulated in shared/reference/scan_snap_fig6_authors.json): mean and standard
# deviation over 10 seeds of distinct_token_entropy, indexed [num_last, eta_Z, eta_Y/eta_Z] on the grids below.
FIG6_NUM_LAST = (1, 3, 5, 10)
FIG6_ETA_Z = (0.5, 1.0, 2.0, 3.0)
FIG6_RATIOS = (1, 2, 5, 10)
FIG6_AUTHORS_MEAN = np.array([
    [  # num_last = 1
        [1.971, 2.007, 2.066, 2.092],  # eta_Z = 0.5
        [1.871, 1.937, 2.022, 2.053],  # eta_Z = 1
        [1.699, 1.810, 1.934, 1.900],  # eta_Z = 2
        [1.551, 1.708, 1.786, 1.825],  # eta_Z = 3
    ],
    [  # num_last = 3
        [2.019, 1.988, 2.031, 2.063],  # eta_Z = 0.5
        [1.963, 1.920, 1.982, 2.024],  # eta_Z = 1
        [1.842, 1.809, 1.899, 1.955],  # eta_Z = 2
        [1.737, 1.715, 1.821, 1.839],  # eta_Z = 3
    ],
    [  # num_last = 5
        [2.026, 1.994, 2.020, 2.055],  # eta_Z = 0.5
        [1.995, 1.931, 1.971, 2.014],  # eta_Z = 1
        [1.906, 1.816, 1.884, 1.926],  # eta_Z = 2
        [1.817, 1.718, 1.802, 1.831],  # eta_Z = 3
    ],
    [  # num_last = 10
        [2.033, 2.012, 2.018, 2.051],  # eta_Z = 0.5
        [2.027, 1.975, 1.976, 2.015],  # eta_Z = 1
        [1.990, 1.888, 1.899, 1.947],  # eta_Z = 2
        [1.940, 1.805, 1.829, 1.875],  # eta_Z = 3
    ],
])
FIG6_AUTHORS_STD = np.array([
    [  # num_last = 1
        [0.028, 0.032, 0.017, 0.016],  # eta_Z = 0.5
        [0.052, 0.052, 0.036, 0.030],  # eta_Z = 1
        [0.101, 0.099, 0.068, 0.200],  # eta_Z = 2
        [0.155, 0.152, 0.170, 0.331],  # eta_Z = 3
    ],
    [  # num_last = 3
        [0.010, 0.012, 0.007, 0.005],  # eta_Z = 0.5
        [0.015, 0.018, 0.009, 0.008],  # eta_Z = 1
        [0.024, 0.027, 0.018, 0.020],  # eta_Z = 2
        [0.032, 0.038, 0.030, 0.100],  # eta_Z = 3
    ],
    [  # num_last = 5
        [0.005, 0.007, 0.007, 0.006],  # eta_Z = 0.5
        [0.007, 0.011, 0.010, 0.009],  # eta_Z = 1
        [0.012, 0.022, 0.020, 0.025],  # eta_Z = 2
        [0.021, 0.032, 0.033, 0.050],  # eta_Z = 3
    ],
    [  # num_last = 10
        [0.004, 0.004, 0.004, 0.003],  # eta_Z = 0.5
        [0.003, 0.005, 0.006, 0.006],  # eta_Z = 1
        [0.005, 0.009, 0.013, 0.015],  # eta_Z = 2
        [0.006, 0.013, 0.019, 0.023],  # eta_Z = 3
    ],
])


@dataclass(frozen=True)
class SweepResult:
    """Final attention statistics of a grid of :func:`train_yz` runs on Syn-Medium.

    ``entropy[i, j, k, s]`` is :func:`distinct_token_entropy` for num_last_values[i], eta_Z_values[j],
    ratios[k] (eta_Y = ratio eta_Z) and seeds[s]; ``attention[i]`` holds the final c_n of those runs,
    shape (len(eta_Z), len(ratios), len(seeds), K, M) for that size.
    """

    num_last_values: tuple
    eta_Z_values: tuple
    ratios: tuple
    seeds: tuple
    entropy: np.ndarray
    attention: list


def fig6_sweep(num_last_values, eta_Z_values, ratios, seeds, *, steps: int = 100, batch_size: int = 128,
               T: int = 128) -> SweepResult:
    """Train Y/Z on Syn-Medium for every (size, eta_Z, eta_Y/eta_Z, seed) with the authors' Fig. 6 settings:
    PyTorch default init, SGD momentum 0.9, batch 128, T = 128, 100 iterations."""
    from icllib.config import progress

    grids = {}
    for name, values in (("num_last_values", num_last_values), ("eta_Z_values", eta_Z_values),
                         ("ratios", ratios), ("seeds", seeds)):
        values = tuple(values)
        if not values:
            raise ValueError(f"{name} must not be empty")
        grids[name] = values
    for value in grids["eta_Z_values"] + grids["ratios"]:
        positive_number("eta_Z_values and ratios", value)
    entropy = np.empty(tuple(len(v) for v in grids.values()))
    attention = []
    runs = [(i, j, k, s) for i in range(len(grids["num_last_values"])) for j in range(len(grids["eta_Z_values"]))
            for k in range(len(grids["ratios"])) for s in range(len(grids["seeds"]))]
    specs = [syn_medium(n) for n in grids["num_last_values"]]
    for spec in specs:
        attention.append(np.empty((len(grids["eta_Z_values"]), len(grids["ratios"]), len(grids["seeds"]),
                                   spec.K, spec.M)))
    for i, j, k, s in progress(runs, total=len(runs), desc="Fig. 6 sweep"):
        eta_Z = grids["eta_Z_values"][j]
        result = train_yz(specs[i], eta_Y=grids["ratios"][k] * eta_Z, eta_Z=eta_Z, steps=steps,
                          batch_size=batch_size, T=T, init="default", seed=grids["seeds"][s])
        entropy[i, j, k, s] = distinct_token_entropy(specs[i], result.Z)
        attention[i][j, k, s] = attention_distribution(specs[i], result.Z)
    return SweepResult(entropy=entropy, attention=attention, **grids)


def distinct_token_recall(spec: SequenceClasses, attention, thresholds) -> np.ndarray:
    """Recall of Figs. 11-12 (App. G): the fraction of a class's distinct tokens whose attention weight is at
    least the threshold, averaged over classes; ``attention`` is (..., K, M), the result (..., len(thresholds))."""
    spec = _check_classes(spec)
    attention = np.asarray(attention, dtype=np.float64)
    thresholds = np.asarray(thresholds, dtype=np.float64)
    if attention.shape[-2:] != (spec.K, spec.M):
        raise ValueError(f"attention must end with shape ({spec.K}, {spec.M}), got {attention.shape}")
    above = attention[..., None] >= thresholds
    hits = np.sum(above & spec.distinct[..., None], axis=-2) / spec.distinct.sum(axis=1)[:, None]
    return hits.mean(axis=-2)


# ---------------------------------------------------------------------------------------------------------
# 8. Real text (Sec. 8 and App. G): the tutorial transformer and the Y/Z model as causal language models


def _torch():
    import torch

    return torch


def make_transformer_lm(vocab_size: int, *, d_model: int, d_hidden: int, n_layers: int, dropout: float,
                        seed: int):
    """The language model of the authors' Fig. 7 notebook (the PyTorch transformer tutorial): embeddings scaled
    by sqrt(d), sinusoidal positional encoding, ``n_layers`` post-LN encoder layers with one head and a causal
    mask, a linear decoder. Positional encoding breaks Assumption 1(a) (note scan_snap.N11)."""
    torch = _torch()
    for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("d_hidden", d_hidden),
                        ("n_layers", n_layers)):
        positive_int(name, value)
    if not 0 <= dropout < 1:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
    torch.manual_seed(positive_int("seed", seed, minimum=0))

    class TransformerLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.d_model = d_model
            self.embedding = torch.nn.Embedding(vocab_size, d_model)
            self.dropout = torch.nn.Dropout(dropout)
            position = torch.arange(4096).unsqueeze(1)
            frequency = torch.exp(torch.arange(0, d_model, 2) * (-np.log(10000.0) / d_model))
            encoding = torch.zeros(4096, d_model)
            encoding[:, 0::2] = torch.sin(position * frequency)
            encoding[:, 1::2] = torch.cos(position * frequency)
            self.register_buffer("positional", encoding)
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(d_model, 1, d_hidden, dropout, batch_first=True)
                for _ in range(n_layers))
            self.decoder = torch.nn.Linear(d_model, vocab_size)
            torch.nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
            torch.nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
            torch.nn.init.zeros_(self.decoder.bias)

        def embed(self, tokens):  # tokens: (batch, length)
            x = self.embedding(tokens) * np.sqrt(self.d_model) + self.positional[: tokens.shape[1]]
            return self.dropout(x)

        def forward(self, tokens):
            mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x, src_mask=mask, is_causal=True)
            return self.decoder(x)

        def first_layer_attention(self, tokens):
            """Attention weights of the first layer, (batch, length, length), rows over the causal past."""
            mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            x = self.embed(tokens)
            return self.layers[0].self_attn(x, x, x, attn_mask=mask, need_weights=True)[1]

    return TransformerLM()


def attention_row_entropy(weights, *, min_row: int = 5) -> float:
    """Mean Shannon entropy (nats) of attention rows ``min_row`` and later (short causal rows are trivially
    peaked); ``weights`` is (..., length, length) with rows summing to 1."""
    torch = _torch()
    weights = torch.as_tensor(weights)
    rows = weights[..., min_row:, :]
    return float(-(rows * torch.log(rows.clamp_min(1e-30))).sum(dim=-1).mean())


def train_transformer_lm(model, train_source, valid_source, *, steps: int, lr: float, lr_ffn: float | None = None,
                         bptt: int = 35, clip: float = 0.5, record_every: int = 50, probe=None):
    """Plain SGD at constant learning rate (``lr_ffn`` for the feed-forward layers, as in the authors' Fig. 7
    run), gradient-norm clipping, cycling over the training stream in bptt windows.

    Records, every ``record_every`` steps, the first-layer attention entropy on ``probe`` (a (batch, length)
    array of token ids, evaluated without dropout) and returns (steps, entropies, validation attention entropy
    at the end, validation loss at the end).
    """
    torch = _torch()
    from icllib.config import progress

    steps = positive_int("steps", steps)
    lr = positive_number("lr", lr)
    lr_ffn = lr if lr_ffn is None else positive_number("lr_ffn", lr_ffn)
    ffn = [p for name, p in model.named_parameters() if ".linear" in name]
    ffn_ids = {id(p) for p in ffn}
    rest = [p for p in model.parameters() if id(p) not in ffn_ids]
    optimiser = torch.optim.SGD([{"params": rest, "lr": lr}, {"params": ffn, "lr": lr_ffn}])
    probe = torch.as_tensor(probe if probe is not None else valid_source[:bptt].T)
    loss_fn = torch.nn.CrossEntropyLoss()

    def probe_entropy():
        model.eval()
        with torch.no_grad():
            value = attention_row_entropy(model.first_layer_attention(probe))
        model.train()
        return value

    recorded_steps, entropies = [0], [probe_entropy()]
    windows = []
    step = 0
    model.train()
    for step in progress(range(1, steps + 1), total=steps, desc="LM training"):
        if not windows:
            windows = list(bptt_windows_torch(train_source, bptt))[::-1]
        inputs, targets = windows.pop()
        optimiser.zero_grad()
        logits = model(inputs)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimiser.step()
        if step % record_every == 0 or step == steps:
            recorded_steps.append(step)
            entropies.append(probe_entropy())
    model.eval()
    with torch.no_grad():
        valid_entropy, valid_loss, count = 0.0, 0.0, 0
        for inputs, targets in bptt_windows_torch(valid_source, bptt):
            if inputs.shape[1] <= 5:
                continue
            valid_entropy += attention_row_entropy(model.first_layer_attention(inputs))
            logits = model(inputs)
            valid_loss += float(loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)))
            count += 1
    return np.array(recorded_steps), np.array(entropies), valid_entropy / count, valid_loss / count


def bptt_windows_torch(source, bptt: int):
    """(inputs, targets) as (batch, length) int64 tensors from a batchified (steps, batch) source."""
    torch = _torch()
    source = np.asarray(source)
    for start in range(0, source.shape[0] - 1, bptt):
        length = min(bptt, source.shape[0] - 1 - start)
        yield (torch.as_tensor(source[start:start + length].T.copy()),
               torch.as_tensor(source[start + 1:start + 1 + length].T.copy()))


def yz_text_logits(Y, Z, tokens):
    """The Y/Z model as a causal language model (the authors' ``decoder_wiki_yz``): position t attends to the
    positions s < t with logits Z[x_t, x_s] (itself excluded, as the query in Eq. 1), mixes their one-hot
    vectors, l2-normalises the mixture and decodes with Y^T. Returns logits (batch, length - 1, V) for the
    next token of positions 1..length-1, and the attention (batch, length - 1, length)."""
    torch = _torch()
    batch, length = tokens.shape
    scores = Z[tokens[:, :, None], tokens[:, None, :]]  # (batch, query t, key s)
    past = torch.tril(torch.ones(length, length, dtype=torch.bool), diagonal=-1)
    b = torch.softmax(scores.masked_fill(~past, float("-inf"))[:, 1:], dim=-1)  # query position 0 has no past
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, s, s')
    norm_sq = torch.einsum("bts,bsr,btr->bt", b, same.to(b.dtype), b)  # ||X^T b||^2 with repeated tokens
    mixed = torch.einsum("bts,bsv->btv", b, Y[tokens])  # Y^T (X^T b), rows of Y gathered
    return mixed / norm_sq.sqrt()[..., None], b


def train_yz_text(train_source, valid_source, vocab_size: int, *, eta_Y: float, eta_Z: float, steps: int,
                  bptt: int = 35, seed: int = 0, momentum: float = 0.0):
    """Train the Y/Z causal language model of :func:`yz_text_logits` from Y = Z = 0 with SGD (separate rates
    eta_Y and eta_Z) and return the mean attention-row entropy (rows >= 5) and the loss on validation."""
    torch = _torch()
    vocab_size = positive_int("vocab_size", vocab_size, minimum=2)
    eta_Y = positive_number("eta_Y", eta_Y)
    eta_Z = positive_number("eta_Z", eta_Z)
    steps = positive_int("steps", steps)
    positive_int("seed", seed, minimum=0)
    Y = torch.zeros(vocab_size, vocab_size, dtype=torch.float64, requires_grad=True)
    Z = torch.zeros(vocab_size, vocab_size, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.SGD([{"params": [Y], "lr": eta_Y}, {"params": [Z], "lr": eta_Z}], momentum=momentum)
    windows = list(bptt_windows_torch(train_source, bptt))
    order = np.random.default_rng(seed).permutation(len(windows))
    for step in range(steps):
        inputs, _ = windows[order[step % len(windows)]]
        logits, _ = yz_text_logits(Y, Z, inputs)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab_size), inputs[:, 2:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        entropies, losses = [], []
        for inputs, _ in bptt_windows_torch(valid_source, bptt):
            if inputs.shape[1] <= 7:
                continue
            logits, b = yz_text_logits(Y, Z, inputs)
            losses.append(float(torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab_size),
                                                                  inputs[:, 2:].reshape(-1))))
            entropies.append(attention_row_entropy(b[:, :, :], min_row=5))
    return float(np.mean(entropies)), float(np.mean(losses))
