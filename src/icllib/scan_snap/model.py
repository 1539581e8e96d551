"""The chapter ``scan_snap``: Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023), one attention layer
reparameterised by Y and Z, on the authors' synthetic data.

Read top to bottom:

1. **Data and model.** Sequence classes (Sec. 3.2), the Syn-Small / Syn-Medium vocabularies of the authors'
   experiments, the Y/Z objective (Eq. 15) and its gradient (Lemma 1, Eq. 3-4). Without positional encoding
   the forward pass sees a sequence only through the count vector of its contextual tokens, so batches are
   drawn as multinomial counts (exact, and the fast simulator of the chapter); the Hoeffding radius of the
   long-sequence limit (Lemma 18).
2. **Training** (:func:`train_yz`): SGD with momentum or Adam, as the authors ran it, in the authors'
   setting :data:`AUTHORS_RUN` (100 iterations, batch 128, T = 128).
3. **The Syn-Medium sweep of Fig. 6** (:data:`FIG6`, :func:`fig6_sweep`) and the recall of Figs. 11-12;
   ``CHECKS``, the tolerances and reasons of the chapter's checks from Fig. 5 on (as in the theory module).

The theory's closed forms and ODEs (decoder clock, Theorem 1, Scan, Snap) are in
:mod:`icllib.scan_snap.theory`; the real-text experiments of Sec. 8 in :mod:`icllib.scan_snap.real_text`.

Symbols follow the paper: ``M`` vocabulary size, ``K`` number of next tokens (classes), ``eta_Y`` and ``eta_Z``
the learning rates, ``P[n, l] = P(l|n)``, ``c_n`` the attention of Eq. 5, ``f_n = c_n / ||c_n||``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binom

from icllib.config import progress, rng
from icllib.scan_snap.theory import softmax
from icllib.validation import (fraction, index_array, non_empty, numpy_generator_arg, one_of, positive_int,
                               positive_number, real_array)

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
    P = np.array(real_array("P", P))  # a copy: the classes must not change with the caller's array
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
    with its own query token (30, 31) and next token (32, 33), as in the authors' code: M = 34. The paper's
    "M = 30" is consistent too, with query and next tokens among the 30 ids; it does not say which (note
    scan_snap.N8)."""
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
    generator = numpy_generator_arg("generator", generator)
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
    generator = numpy_generator_arg("generator", generator)
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
    generator = numpy_generator_arg("generator", generator)
    return generator.multinomial(T - 1, spec.P[n], size=size)


def count_mixture(counts, z) -> np.ndarray:
    """X^T b_T from count vectors (Eq. 20): ``counts * exp(z) / (counts^T exp(z))``, row by row.

    ``counts`` is (..., M) with non-negative entries and positive row sums, ``z`` the query's logits (M,) or
    one row per sequence. As T grows, the counts divided by T - 1 tend to P(l|n) (Lemma 18) and this tends to
    c_n of Eq. 5 (Lemma 2).
    """
    counts = real_array("counts", counts)
    z = real_array("z", z)
    if counts.ndim < 1 or np.any(counts < 0) or np.any(counts.sum(axis=-1) <= 0):
        raise ValueError("counts must be non-negative with a positive sum in every row")
    if z.ndim < 1 or z.shape[-1] != counts.shape[-1] or not np.all(np.isfinite(z)):
        raise ValueError(f"z must be finite logits over the last axis of counts ({counts.shape[-1]} tokens)")
    weights = counts * np.exp(z - z.max(axis=-1, keepdims=True))
    return weights / weights.sum(axis=-1, keepdims=True)


def hoeffding_radius(n, delta: float):
    """sqrt(ln(2/delta) / (2 n)): with probability at least 1 - delta, a frequency over n i.i.d. draws lies
    within this distance of its mean (Hoeffding). Eq. 136 uses it with n = T - 1 (token frequencies in one
    sequence), Lemma 10 (Eq. 58-59) with n = N (class frequencies over N steps)."""
    delta = fraction("delta", delta)
    n_array = np.asarray(n)
    if n_array.dtype.kind not in "iu" or np.any(n_array < 1):
        raise ValueError(f"n must be a positive integer (or an array of them), got {n!r}")
    radius = np.sqrt(np.log(2.0 / delta) / (2.0 * n_array))
    return float(radius) if n_array.ndim == 0 else radius



def _binomial_arguments(delta: float, n: int, false_pass: float) -> tuple[float, int, float]:
    delta = fraction("delta", delta)
    false_pass = fraction("false_pass", false_pass, upper=0.5)
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
    Used to show that a bound fails as extracted (note scan_snap.N14)."""
    delta, n, false_pass = _binomial_arguments(delta, n, false_pass)
    k = int(binom.isf(false_pass, n, delta))
    while binom.sf(k - 1, n, delta) > false_pass:
        k += 1
    while k > 0 and binom.sf(k - 2, n, delta) <= false_pass:
        k -= 1
    return k / n

# ---------------------------------------------------------------------------------------------------------
# The Y/Z model (Eq. 15) and Lemma 1



def _log_softmax(logits: np.ndarray, axis: int = -1) -> np.ndarray:
    top = logits.max(axis=axis, keepdims=True)
    return logits - top - np.log(np.exp(logits - top).sum(axis=axis, keepdims=True))


def embedding_objective(U, W_Q, W_K, W_V, tokens, query, next_token) -> float:
    """J of Eq. 2 for one sequence, in the embedding parameterisation (U, W_Q, W_K, W_V), 1/sqrt(d) included."""
    U = real_array("U", U)
    if U.ndim != 2:
        raise ValueError(f"U must be an (M, d) array, got shape {U.shape}")
    M, d = U.shape
    W_K, W_Q = (_matrix(name, W, (d, None), "rows = d, the columns of U") for name, W in (("W_K", W_K), ("W_Q", W_Q)))
    if W_Q.shape != W_K.shape:
        raise ValueError(f"W_Q must have the shape of W_K {W_K.shape}, got {W_Q.shape}")
    W_V = _matrix("W_V", W_V, (d, d), "(d, d), d the columns of U")
    tokens, query, next_token = _sequence(tokens, query, next_token, M)
    logits = U[tokens] @ W_K @ W_Q.T @ U[query] / np.sqrt(d)
    b = softmax(logits)
    mixture = np.bincount(tokens, weights=b, minlength=U.shape[0])  # X^T b_T
    u_tilde = U.T @ (mixture / np.linalg.norm(mixture))
    decoded = U @ W_V @ u_tilde
    return float(decoded[next_token] - np.log(np.exp(decoded - decoded.max()).sum()) - decoded.max())


def yz_objective(Y, Z, tokens, query, next_token) -> float:
    """J of Eq. 15 for one sequence: x_{T+1}^T Y^T LN(X^T b_T) - log 1^T exp(Y^T LN(X^T b_T))."""
    Y = _matrix("Y", Y, (None, None), "(M, M)")
    Z = _matrix("Z", Z, Y.shape, f"{Y.shape}, the shape of Y")
    tokens, query, next_token = _sequence(tokens, query, next_token, Y.shape[0])
    b = softmax(Z[query, tokens])
    mixture = np.bincount(tokens, weights=b, minlength=Y.shape[0])
    f = mixture / np.linalg.norm(mixture)
    return float(_log_softmax(Y.T @ f)[next_token])


def _matrix(name, value, shape, what) -> np.ndarray:
    """``value`` as a finite float64 matrix whose axes match ``shape`` (``None``: any size)."""
    value = real_array(name, value)
    if value.ndim != 2 or any(n is not None and n != m for n, m in zip(shape, value.shape)):
        raise ValueError(f"{name} must be a matrix {what}, got shape {value.shape}")
    return value


def _sequence(tokens, query, next_token, M):
    """One sequence's token ids (1-d), its query and next token, each checked to lie in [0, M)."""
    return (index_array("tokens", tokens, M, ndim=1), int(index_array("query", query, M, ndim=0)),
            int(index_array("next_token", next_token, M, ndim=0)))


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
    _check_YZ(_check_classes(spec), Y, Z)
    classes = index_array("classes", classes, spec.K, ndim=1)
    counts = real_array("counts", counts)
    if counts.shape != (classes.size, spec.M) or np.any(counts < 0) or np.any(counts.sum(axis=1) == 0):
        raise ValueError(f"counts must be a ({classes.size}, {spec.M}) array of token counts, each row non-zero, "
                         f"got shape {counts.shape}")
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
    _check_YZ(_check_classes(spec), Y, Z)
    classes = index_array("classes", classes, spec.K, ndim=1)
    tokens = index_array("tokens", tokens, spec.M, ndim=2)
    if tokens.shape[0] != classes.size:
        raise ValueError(f"tokens must have one row per class label ({classes.size}), got shape {tokens.shape}")
    batch, length = tokens.shape
    X = np.zeros((batch, length, spec.M))
    X[np.arange(batch)[:, None], np.arange(length)[None, :], tokens] = 1.0
    queries = spec.query[classes]
    targets = spec.next_token[classes]
    b = softmax(np.einsum("btm,bm->bt", X, Z[queries]))
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


@dataclass(frozen=True)
class RunSize:
    """The length of a :func:`train_yz` run: ``steps`` iterations on batches of ``batch_size`` sequences of
    length ``T`` (T - 1 contextual tokens, then the query)."""

    steps: int
    batch_size: int
    T: int

    def __post_init__(self):
        positive_int("steps", self.steps)
        positive_int("batch_size", self.batch_size)
        _check_T(self.T)


#: The authors' runs of Figs. 4-6 (their Model2 code), 100 iterations of batch 128 at T = 128.
AUTHORS_RUN = RunSize(steps=100, batch_size=128, T=128)


def train_yz(spec: SequenceClasses, *, eta_Y: float, eta_Z: float, run: RunSize, generator: np.random.Generator,
             optimizer: str = "sgd", momentum: float = 0.9, init="zero", record_every: int | None = None,
             simulator: str = "counts") -> TrainResult:
    """Train Y and Z on the cross-entropy -J of Eq. 15, as the authors' code does, for ``run.steps`` steps on
    batches of ``run.batch_size`` sequences of length ``run.T`` (:data:`AUTHORS_RUN` is the authors' setting).

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
    if not isinstance(run, RunSize):
        raise ValueError(f"run must be a RunSize (e.g. AUTHORS_RUN), got {run!r}")
    steps, batch_size, T = run.steps, run.batch_size, run.T
    generator = numpy_generator_arg("generator", generator)
    one_of("optimizer", optimizer, ("sgd", "adam"))
    momentum = positive_number("momentum", momentum, allow_zero=True)
    if momentum >= 1:
        raise ValueError(f"momentum must be < 1, got {momentum!r}")
    one_of("simulator", simulator, ("counts", "sequences"))
    if record_every is not None:
        record_every = positive_int("record_every", record_every)
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
    Z = real_array("Z", Z)
    if Z.shape == (spec.M, spec.M):
        rows = Z[spec.query]
    elif Z.shape == (spec.K, spec.M):
        rows = Z
    else:
        raise ValueError(f"Z must have shape ({spec.M}, {spec.M}) or ({spec.K}, {spec.M}), got {Z.shape}")
    if not np.all(np.isfinite(rows)):
        raise ValueError("Z must be finite")
    log_c = np.where(spec.P > 0, np.log(np.where(spec.P > 0, spec.P, 1.0)) + rows, -np.inf)
    return softmax(log_c)


def distinct_token_entropy(spec: SequenceClasses, Z, *, per_class: bool = False):
    """The Fig. 6 metric: the entropy (nats) of c_n restricted to G_DT(n) and renormalised, averaged over n
    (or one value per class with ``per_class=True``)."""
    c = attention_distribution(spec, Z)
    c_dt = np.where(spec.distinct, c, 0.0)
    c_dt = c_dt / c_dt.sum(axis=1, keepdims=True)
    entropy = -np.sum(np.where(c_dt > 0, c_dt * np.log(np.where(c_dt > 0, c_dt, 1.0)), 0.0), axis=1)
    return entropy if per_class else float(entropy.mean())




# ---------------------------------------------------------------------------------------------------------
# 3. The Syn-Medium sweep of Fig. 6


@dataclass(frozen=True)
class Fig6Grid:
    """The grid of Fig. 6: Syn-Medium sizes ``num_last`` (K = 2 num_last classes), the rates ``eta_Z``, the
    ratios ``eta_Y / eta_Z`` and the seeds (each run draws from ``icllib.config.rng(seed)``)."""

    num_last: tuple = (1, 3, 5, 10)
    eta_Z: tuple = (0.5, 1.0, 2.0, 3.0)
    ratios: tuple = (1, 2, 5, 10)
    seeds: tuple = tuple(range(1, 11))

    def __post_init__(self):
        for name in ("num_last", "eta_Z", "ratios", "seeds"):
            object.__setattr__(self, name, non_empty(name, getattr(self, name)))
        for value in self.eta_Z + self.ratios:
            positive_number("eta_Z and ratios", value)


#: The paper's Fig. 6 (4 sizes x 4 eta_Z x 4 ratios x 10 seeds = 640 runs), the grid of the authors' numbers.
FIG6 = Fig6Grid()


# The authors' released Fig. 6 statistics (facebookresearch/luckmatters, ssl/real-dataset/scan_snap/
# figure_6_data.pkl, re-tabulated in shared/reference/scan_snap_fig6_authors.json): mean and standard
# deviation over 10 seeds of distinct_token_entropy, indexed [num_last, eta_Z, eta_Y/eta_Z] on the grid FIG6.
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

    ``entropy[i, j, k, s]`` is :func:`distinct_token_entropy` for ``grid.num_last[i]``, ``grid.eta_Z[j]``,
    ``grid.ratios[k]`` (eta_Y = ratio eta_Z) and ``grid.seeds[s]``; ``attention[i]`` holds the final c_n of
    those runs, shape (len(eta_Z), len(ratios), len(seeds), K, M) for that size.
    """

    grid: Fig6Grid
    entropy: np.ndarray
    attention: list


def fig6_sweep(grid: Fig6Grid = FIG6, *, run: RunSize = AUTHORS_RUN) -> SweepResult:
    """Train Y/Z on Syn-Medium for every (size, eta_Z, eta_Y/eta_Z, seed) of ``grid`` with the authors' Fig. 6
    settings: PyTorch default init, SGD momentum 0.9, and the run size :data:`AUTHORS_RUN`."""
    if not isinstance(grid, Fig6Grid):
        raise ValueError(f"grid must be a Fig6Grid (e.g. FIG6), got {grid!r}")
    axes = (grid.num_last, grid.eta_Z, grid.ratios, grid.seeds)
    entropy = np.empty(tuple(len(values) for values in axes))
    runs = [(i, j, k, s) for i in range(len(grid.num_last)) for j in range(len(grid.eta_Z))
            for k in range(len(grid.ratios)) for s in range(len(grid.seeds))]
    specs = [syn_medium(n) for n in grid.num_last]
    attention = [np.empty((len(grid.eta_Z), len(grid.ratios), len(grid.seeds), spec.K, spec.M)) for spec in specs]
    for i, j, k, s in progress(runs, total=len(runs), desc="Fig. 6 sweep"):
        eta_Z = grid.eta_Z[j]
        result = train_yz(specs[i], eta_Y=grid.ratios[k] * eta_Z, eta_Z=eta_Z, run=run, init="default",
                          generator=rng(grid.seeds[s]))
        entropy[i, j, k, s] = distinct_token_entropy(specs[i], result.Z)
        attention[i][j, k, s] = attention_distribution(specs[i], result.Z)
    return SweepResult(grid=grid, entropy=entropy, attention=attention)


def distinct_token_recall(spec: SequenceClasses, attention, thresholds) -> np.ndarray:
    """Recall of Figs. 11-12 (App. G): the fraction of a class's distinct tokens whose attention weight is at
    least the threshold, averaged over classes; ``attention`` is (..., K, M), the result (..., len(thresholds))."""
    spec = _check_classes(spec)
    attention = real_array("attention", attention)
    thresholds = real_array("thresholds", thresholds)
    if thresholds.ndim != 1:
        raise ValueError(f"thresholds must be a 1-d array of attention levels, got shape {thresholds.shape}")
    if attention.shape[-2:] != (spec.K, spec.M):
        raise ValueError(f"attention must end with shape ({spec.K}, {spec.M}), got {attention.shape}")
    above = attention[..., None] >= thresholds
    hits = np.sum(above & spec.distinct[..., None], axis=-2) / spec.distinct.sum(axis=1)[:, None]
    return hits.mean(axis=-2)


# Keyword arguments of ``check_claim`` for the chapter's checks from Fig. 5 on (``#2``: a claim's second check).
CHECKS = {
    "initial-prior": dict(why=('one-sided binomial test against the 10% of chance (ten tokens): if the initial logits '
        'did not steer the gains, a frequency this high would occur with probability below 1%')),
    "fig5-adam": dict(upper=0.01, why=('the winner differs between rates: false-pass rate 1% if the rate did not '
        'matter')),
    "fig5-adam#2": dict(expected=True, why='some Adam runs favour a distinct token other than the most likely one'),
    "fig6-cells": dict(why=("two-sample z-test of each cell's mean at the 5% family-wise level (Bonferroni over all "
        'cells); a cell off by 5.7 standard errors passes with probability below 1%')),
    "fig6-spread": dict(lower=0.5, upper=1.8, why=('1 if the bars are standard deviations, sqrt(10) if standard '
        'errors; the bounds split the two readings at their geometric midpoint: the median over 16-64 cells of a '
        'ratio of standard deviations from 3-10 seeds lands beyond it with probability far below 1%')),
    "fig6-eta-z": dict(expected=True, why=('strictly decreasing along eta_Z in every (size, ratio) column: with no '
        'effect of eta_Z a column of four (two in quick mode) is ordered by chance with probability 1/24 (1/2), all '
        'of them far less often')),
    "fig6-threshold": dict(upper=0.005, why=('ratio 2 is the minimum up to a tie of 0.005, ~2 standard errors of a '
        '10-seed mean at K = 20; with no dip at 2, ratio 2 would be the minimum of four ratios in every (size, eta_Z) '
        'cell with probability (1/4)^cells, below 1% from four cells on')),
    "fig6-threshold#2": dict(expected=True, why=('K >= 6: H(10) > H(2) in every (size, eta_Z) cell, by chance with '
        'probability 2^-cells')),
    "fig6-threshold#3": dict(expected=True, why=('K = 2: lowest at ratio 1 for every eta_Z, by chance with '
        "probability 4^-(number of eta_Z): 0.4% with the paper's four (6% in quick mode, which runs two)")),
}
