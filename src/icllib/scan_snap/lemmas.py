"""The experiments of the chapter ``scan_snap`` (Tian, Wang, Chen, Du, NeurIPS 2023) on the paper's lemmas, as
functions: each runs one experiment of a section at the settings the chapter passes in and returns what that section
checks, so that a chapter cell holds the parameters, the call, the check and the figure (the model and the closed
forms they use are in :mod:`icllib.scan_snap.model` and :mod:`icllib.scan_snap.theory`; the scan, the snap and the SGD
experiments in :mod:`icllib.scan_snap.dynamics`).

Read top to bottom, in the order of the chapter's sections:

1. **The model**: Eq. 15 by autograd, the concentration of Lemmas 2 and 18.
2. **The decoder clock**: the residual of Eq. 45, the gap of Lemma 7, Lemma 8's zeros, Remark 3, the speed
   control of Lemma 9, the class counts of Lemmas 10-11 and Corollary 1's step counts.
3. **Theorem 1**: the algebra of E' on random overlap matrices, the decoder runs, Lemma 3, Lemma 12 and the sign
   in Eq. 88.

Symbols follow the paper: ``M`` vocabulary size, ``K`` number of classes, ``eta_Y`` and ``eta_Z`` the learning
rates, ``P[n, l] = P(l|n)``, ``f_n = c_n / ||c_n||``, ``E = F^T F - I`` and ``E' = I - (I + E)^{-1}``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.integrate import solve_ivp

from icllib.scan_snap import model as ss
from icllib.scan_snap import theory as sst
from icllib.validation import fraction, index_array, numpy_generator_arg, positive_int, positive_number, real_array


def _values(name: str, value, *, integer: bool = False, minimum: float = 0.0) -> tuple:
    """``value`` as a tuple if it is a non-empty 1-d collection of numbers above ``minimum`` (integers with
    ``integer``): the list of sizes or rates an experiment loops over."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a non-empty 1-d collection of numbers, got {value!r}") from None
    if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)) or np.any(array <= minimum):
        raise ValueError(f"{name} must be a non-empty 1-d collection of numbers > {minimum}, got {value!r}")
    if integer and np.any(array != np.round(array)):
        raise ValueError(f"{name} must hold integers, got {value!r}")
    return tuple(int(v) if integer else v for v in value)


def _spec(spec) -> ss.SequenceClasses:
    if not isinstance(spec, ss.SequenceClasses):
        raise ValueError(f"spec must be a SequenceClasses (syn_small(), syn_medium(...)), got {type(spec).__name__}")
    return spec


def _clocks(name: str, value) -> tuple:
    """``value`` as a tuple of ``(M, eta_Y)`` pairs: decoder clocks of vocabulary M >= 2 and rate eta_Y > 0."""
    if isinstance(value, (str, np.ndarray)) or not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"{name} must be a non-empty tuple of (M, eta_Y) pairs, got {value!r}")
    for pair in value:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise ValueError(f"{name} must be a non-empty tuple of (M, eta_Y) pairs, got {value!r}")
        positive_int(name, pair[0], minimum=2)
        positive_number(name, pair[1])
    return tuple(value)


def number_table(values: dict, column: str, *, digits: str = ".1e") -> tuple[list, list]:
    """``(header, rows)`` for :func:`icllib.plotting.show_table`: one row per entry of ``values``, its name and
    the number formatted with ``digits``."""
    if not isinstance(values, dict) or not values:
        raise ValueError(f"values must be a non-empty dict of numbers by name, got {values!r}")
    if not isinstance(column, str):
        raise ValueError(f"column must be the title of the numbers' column, got {column!r}")
    return ["", column], [[name, format(float(value), digits)] for name, value in values.items()]


def join_columns(rows) -> dict:
    """The results of one experiment's items (a list of dicts with the same keys, each value a number or a list of
    numbers) joined column by column: ``{key: [the values of every item, in order]}``, as one table."""
    if not isinstance(rows, list) or not rows or not all(isinstance(row, dict) and row for row in rows) \
            or any(row.keys() != rows[0].keys() for row in rows):
        raise ValueError(f"rows must be a non-empty list of dicts with the same keys, got {rows!r}")
    return {key: [value for row in rows for value in (row[key] if isinstance(row[key], list) else [row[key]])]
            for key in rows[0]}


# ---------------------------------------------------------------------------------------------------------
# 1. The model (Sec. 1 of the chapter)


def relative_error(a, b) -> float:
    """``max |a - b| / max |b|``: the distance of one gradient from a reference, in units of the reference."""
    a, b = real_array("a", a), real_array("b", b)
    if a.shape != b.shape or not np.abs(b).max() > 0:
        raise ValueError(f"a and b must have the same shape and b must not vanish, got {a.shape} and {b.shape}")
    return float(np.abs(a - b).max() / np.abs(b).max())


@dataclass(frozen=True)
class AutogradReference:
    """Eq. 15 on one-hot sequences by autograd: the objective, both gradients, and the largest entry of
    X^T diag(b_T) X - diag(X^T b_T) over the batch (zero for one-hot rows of X)."""

    J: float
    dY: np.ndarray
    dZ: np.ndarray
    identity_gap: float


def eq15_autograd(spec: ss.SequenceClasses, Y, Z, classes, sequences) -> AutogradReference:
    """The reference of Sec. 1: Eq. 15 written out on the one-hot sequences in float64 and differentiated by
    PyTorch's autograd, independent of Lemma 1's closed form."""
    import torch

    spec = _spec(spec)
    Y, Z = real_array("Y", Y), real_array("Z", Z)
    for name, matrix in (("Y", Y), ("Z", Z)):
        if matrix.shape != (spec.M, spec.M):
            raise ValueError(f"{name} must have shape ({spec.M}, {spec.M}), got {matrix.shape}")
    classes = index_array("classes", classes, spec.K, ndim=1)
    sequences = index_array("sequences", sequences, spec.M, ndim=2)
    if len(sequences) != len(classes):
        raise ValueError(f"sequences must have one row per class label, got {len(sequences)} and {len(classes)}")
    Y_t = torch.tensor(Y, requires_grad=True)
    Z_t = torch.tensor(Z, requires_grad=True)
    X_t = torch.nn.functional.one_hot(torch.tensor(sequences), spec.M).double()  # (batch, T-1, M)
    b_t = torch.softmax(torch.einsum("btm,bm->bt", X_t, Z_t[spec.query[classes]]), dim=1)
    v_t = torch.einsum("btm,bt->bm", X_t, b_t)
    f_t = v_t / v_t.norm(dim=1, keepdim=True)
    log_alpha_t = torch.log_softmax(f_t @ Y_t, dim=1)
    J_t = log_alpha_t[torch.arange(len(classes)), torch.tensor(spec.next_token[classes])].mean()
    J_t.backward()
    XbX = torch.einsum("bti,bt,btj->bij", X_t, b_t, X_t).detach().numpy()
    identity_gap = np.abs(XbX - np.stack([np.diag(v) for v in v_t.detach().numpy()])).max()
    return AutogradReference(J=float(J_t.detach()), dY=Y_t.grad.numpy(), dZ=Z_t.grad.numpy(), identity_gap=identity_gap)


@dataclass(frozen=True)
class Concentration:
    """Lemmas 2 and 18 at each length ``T - 1``: the mean distance of X^T b_T from its limit c_n, the largest
    ``|q_l - P(l|n)|`` over the sequences, the fraction of (token, sequence) pairs outside the Hoeffding band, the
    band's radius, and the log-log slope of the mean distance (Lemma 2 predicts -1/2)."""

    lengths: np.ndarray
    mixture_error: np.ndarray
    worst_deviation: np.ndarray
    outside_band: np.ndarray
    radii: np.ndarray
    slope: float


def token_concentration(spec: ss.SequenceClasses, z, lengths, *, delta: float, sequences: int,
                        generator: np.random.Generator) -> Concentration:
    """Sec. 1's test of Lemmas 2 and 18: for each ``T - 1`` in ``lengths``, draw ``sequences`` sequences of class
    1 with fixed query logits ``z`` and compare X^T b_T with c_n (Eq. 5) and each token frequency with P(l|n)
    against the radius sqrt(ln(2/delta) / (2(T-1))) of Eq. 136."""
    spec = _spec(spec)
    z = real_array("z", z)
    if z.shape != (spec.M,):
        raise ValueError(f"z must be the {spec.M} logits of the query row, got shape {z.shape}")
    lengths = np.asarray(_values("lengths", lengths, integer=True, minimum=1))
    delta = fraction("delta", delta)
    sequences = positive_int("sequences", sequences)
    generator = numpy_generator_arg("generator", generator)
    limit = ss.attention_distribution(spec, np.tile(z, (spec.K, 1)))[0]
    in_support = spec.P[0] > 0  # tokens outside supp(n) have q = P = 0
    mixture_error, worst_deviation, outside_band = [], [], []
    for length in lengths:
        counts = ss.sample_class_counts(spec, 0, sequences, length + 1, generator=generator)
        mixture_error.append(np.abs(ss.count_mixture(counts, z) - limit).max(axis=1).mean())
        deviation = np.abs(counts / length - spec.P[0])[:, in_support]
        worst_deviation.append(deviation.max())
        outside_band.append(np.mean(deviation > ss.hoeffding_radius(length, delta)))
    slope = np.polyfit(np.log(lengths), np.log(mixture_error), 1)[0]
    return Concentration(lengths=lengths, mixture_error=np.array(mixture_error),
                         worst_deviation=np.array(worst_deviation), outside_band=np.array(outside_band),
                         radii=ss.hoeffding_radius(lengths, delta), slope=float(slope))


# ---------------------------------------------------------------------------------------------------------
# 2. The decoder clock (Sec. 2 of the chapter)


def eq45_residuals(M_values, eta_Y: float, t_grid) -> tuple[float, float]:
    """The largest relative residual of Eq. 45, e^{Mh} + (M-1)Mh = M eta_Y t + 1, over ``t_grid`` and
    ``M_values``: first on the LSODA solution of the ODE of Eq. 44 (a route independent of the closed form),
    then on the closed form :func:`icllib.scan_snap.theory.decoder_clock_h`."""
    M_values = _values("M_values", M_values, integer=True, minimum=1)
    eta_Y = positive_number("eta_Y", eta_Y)
    t_grid = real_array("t_grid", t_grid)
    if t_grid.ndim != 1 or t_grid[0] != 0 or np.any(np.diff(t_grid) <= 0):
        raise ValueError("t_grid must be an increasing 1-d array of times starting at 0")
    ode_residuals, residuals = [], []
    for M in M_values:
        rhs = M * eta_Y * t_grid + 1
        h_ode = solve_ivp(lambda t, h: eta_Y / ((M - 1) + np.exp(M * h)), (0.0, t_grid[-1]), [0.0],
                          method="LSODA", t_eval=t_grid, rtol=1e-12, atol=1e-14).y[0]
        ode_residuals.append(np.abs(np.exp(M * h_ode) + (M - 1) * M * h_ode - rhs) / rhs)
        h_values = sst.decoder_clock_h(t_grid, M, eta_Y)
        residuals.append(np.abs(np.exp(M * h_values) + (M - 1) * M * h_values - rhs) / rhs)
    return max(r.max() for r in ode_residuals), max(r.max() for r in residuals)


def lemma7_gaps(M_values, eta_values) -> np.ndarray:
    """Lemma 7 on a grid: one row (M, eta_Y, min gap, max gap / (eta_Y/M), final gap / (eta_Y/M)) per setting,
    the gap h*(s) - h(s) taken up to s = 100 ln M / eta_Y steps."""
    M_values = _values("M_values", M_values, integer=True, minimum=1)
    eta_values = _values("eta_values", eta_values)
    rows = []
    for M in M_values:
        for eta in eta_values:
            horizon = int(100 * np.log(M) / eta)
            gaps = sst.decoder_clock_h_star(horizon, M, eta) - sst.decoder_clock_h(np.arange(horizon + 1), M, eta)
            rows.append((M, eta, gaps.min(), gaps.max() * M / eta, gaps[-1] * M / eta))
    return np.array(rows)


def clock_curves(M: int, eta_values, *, shown_steps: int = 60, long_steps: int = 2000) -> dict:
    """The curves of the clock figure, by eta_Y: the staircase h* over ``shown_steps`` steps, the smooth h on 300
    points of [0, shown_steps], and the gap h* - h in units of Lemma 7's bound 2 eta_Y / M over ``long_steps``."""
    M = positive_int("M", M, minimum=2)
    eta_values = _values("eta_values", eta_values)
    shown_steps, long_steps = positive_int("shown_steps", shown_steps), positive_int("long_steps", long_steps)
    t_fine, long = np.linspace(0, shown_steps, 300), np.arange(long_steps + 1)
    return {eta: (sst.decoder_clock_h_star(shown_steps, M, eta), sst.decoder_clock_h(t_fine, M, eta),
                  (sst.decoder_clock_h_star(long_steps, M, eta) - sst.decoder_clock_h(long, M, eta))[1:]
                  / (2 * eta / M))
            for eta in eta_values}


def lemma8_orders(M: int) -> tuple[float, float]:
    """Lemma 8's zeros against their stated orders: omega_1 / (ln ln M / ln M) (a Theta(1) constant) and
    omega_0 M^0.99 ln M (Eq. 50 gives omega_0 ln M ~ 2/M)."""
    M = positive_int("M", M, minimum=3)
    omega0, omega1 = sst.lemma8_omegas(M)
    return omega1 / (np.log(np.log(M)) / np.log(M)), omega0 * M**0.99 * np.log(M)


def remark3_conditions(M_values, eta_values) -> np.ndarray:
    """Remark 3 at each M and each rate of ``eta_Values`` preceded by 10 M^-0.99 (the smallest rate it admits,
    by a factor 10): one row (omega_0, h(1) M / eta_Y, h(1) M^(2 - omega_0), sign changes of
    e^{Mh} - (M-1)Mh on t in [1, 1e9])."""
    M_values = _values("M_values", M_values, integer=True, minimum=2)
    eta_values = _values("eta_values", eta_values)
    rows = []
    for M in M_values:
        omega0, _ = sst.lemma8_omegas(M)
        for eta in (10 * M**-0.99, *eta_values):
            h_values = sst.decoder_clock_h(np.geomspace(1.0, 1e9, 4000), M, eta)
            sign_changes = int(np.sum(np.diff(np.sign(np.exp(M * h_values) - (M - 1) * M * h_values)) != 0))
            h1 = float(sst.decoder_clock_h(1.0, M, eta))
            rows.append((omega0, h1 * M / eta, h1 * M ** (2 - omega0), sign_changes))
    return np.array(rows)


@dataclass(frozen=True)
class SpeedControl:
    """gamma of Lemma 9 against its two rates, pooled over M: ``phase1`` gamma / (eta_Y t / K) before
    K ln M / eta_Y; ``phase2`` gamma / (K ln(M eta_Y t / K) / (eta_Y t)) after t_0, and per M (``phase2_by_M``)
    and against the printed form without M (``printed_by_M``)."""

    phase1: np.ndarray
    phase2: np.ndarray
    phase2_by_M: list
    printed_by_M: list


def speed_control_ratios(K: int, eta_Y: float, M_values) -> SpeedControl:
    """Lemma 9's two phases on t in [1e-2, 1e8] (2000 points) for each vocabulary size of ``M_values``."""
    K = positive_int("K", K)
    eta_Y = positive_number("eta_Y", eta_Y)
    M_values = _values("M_values", M_values, integer=True, minimum=2)
    phase1, phase2, printed = [], [], []
    for M in M_values:
        t_values = np.geomspace(1e-2, 1e8, 2000)
        gamma = sst.speed_control_gamma(t_values, K, M, eta_Y)
        early = t_values <= K * np.log(M) / eta_Y
        late = t_values >= sst.transition_time(K=K, M=M, eta_Y=eta_Y)
        phase1.append(gamma[early] / (eta_Y * t_values[early] / K))
        lemma9 = K * np.log(M * eta_Y * t_values[late] / K) / (eta_Y * t_values[late])
        phase2.append(gamma[late] / lemma9)
        printed.append(gamma[late] / (K * np.log(eta_Y * t_values[late] / K) / (eta_Y * t_values[late])))
    return SpeedControl(phase1=np.concatenate(phase1), phase2=np.concatenate(phase2), phase2_by_M=phase2,
                        printed_by_M=printed)


def class_count_failures(N: int, K: int, deltas, *, runs: int, generator: np.random.Generator) -> dict:
    """Lemma 10 and Remark 4 over ``runs`` runs of N uniform draws of K classes (all from ``generator``): per delta,
    the frequency of runs in which some class breaks each bound, divided by the one-sided binomial ceiling of delta
    (a ratio above 1 fails), and Remark 4's radius Delta over N_bar; lists by delta, to join over K with
    :func:`join_columns`."""
    N, K = positive_int("N", N), positive_int("K", K)
    deltas = _values("deltas", deltas)
    runs, generator = positive_int("runs", runs), numpy_generator_arg("generator", generator)
    rows = {"lemma10": [], "remark4": [], "ceiling": [], "Delta/N_bar": []}
    counts = sst.uniform_class_counts(N, K, runs, generator=generator)
    N_bar = np.ceil(N / K)
    for delta in deltas:
        ceiling = ss.one_sided_ceiling(delta, runs)
        missed = np.abs(counts - N_bar) > N * ss.hoeffding_radius(N, delta) + 1
        Delta = np.ceil(np.sqrt(N * np.log(1 / delta)))
        rows["lemma10"].append(missed.any(axis=1).mean() / ceiling)
        rows["remark4"].append((np.abs(counts - N_bar) > Delta).any(axis=1).mean() / ceiling)
        rows["ceiling"].append(ceiling)
        rows["Delta/N_bar"].append(Delta / N_bar)
    return rows


def clock_noise_failures(K: int, clock, *, runs: int, delta: float, steps_per_K2: int,
                         generator: np.random.Generator) -> tuple[dict, dict | None]:
    """Lemma 11 and Corollary 1's noise sigma over ``runs`` runs of N = steps_per_K2 K^2 draws of K classes (all
    from ``generator``) on the decoder clock ``clock = (M, eta_Y)``: the failure rates of Eq. 61, Eq. 62 and
    Corollary 1's general bound, and, if N is past the transition, those of the three late-phase readings (the
    printed Delta / N, the proof's Delta / N_bar, Corollary 1's K sqrt(ln(1/delta) / N)) with the 90% quantile of
    sigma / (Delta / N) (else None)."""
    K = positive_int("K", K)
    if not isinstance(clock, tuple) or len(clock) != 2:
        raise ValueError(f"clock must be an (M, eta_Y) pair, got {clock!r}")
    positive_int("clock", clock[0], minimum=2)
    positive_number("clock", clock[1])
    M, eta = clock
    runs, delta = positive_int("runs", runs), fraction("delta", delta)
    steps_per_K2 = positive_int("steps_per_K2", steps_per_K2)
    generator = numpy_generator_arg("generator", generator)
    N = steps_per_K2 * K**2
    counts = sst.uniform_class_counts(N, K, runs, generator=generator)
    N_bar = -(-N // K)
    Delta = np.ceil(np.sqrt(N * np.log(1 / delta)))
    h_bar = sst.decoder_clock_h(N_bar, M, eta)
    h_gap = np.abs(sst.decoder_clock_h(counts, M, eta) - h_bar)
    sigma = np.abs(sst.class_count_sigma(counts, M, eta)).max(axis=1)
    rates = {"Eq. 61": np.mean((h_gap > h_bar * Delta / N_bar).any(axis=1)),
             "Eq. 62": np.mean(sigma > eta * Delta / 3),
             "Corollary 1": np.mean(sigma > eta * np.sqrt(N * np.log(1 / delta)))}
    if N < 2 * K * (1 + sst.lemma8_omegas(M)[1]) * np.log(M) / eta:
        return rates, None
    late = {"printed": np.mean(sigma > Delta / N), "proof": np.mean(sigma > Delta / N_bar),
            "corollary": np.mean(sigma > K / np.sqrt(N) * np.sqrt(np.log(1 / delta))),
            "printed_q90": np.quantile(sigma / (Delta / N), 0.9)}
    return rates, late


def corollary1_steps(M_values, eta_values, eps_values) -> np.ndarray:
    """Corollary 1 for one class at each (M, eta_Y, eps): the steps S_n on the discrete clock, the inverted Eq. 45
    t_eps, and Eq. 73's ln(M/eps) / (eps eta_Y); returned as three arrays (S_n, t_eps, bound)."""
    M_values = _values("M_values", M_values, integer=True, minimum=2)
    eta_values, eps_values = _values("eta_values", eta_values), _values("eps_values", eps_values)
    rows = [(sst.steps_to_residual(eps, M, eta), sst.residual_time(eps, M, eta), np.log(M / eps) / (eps * eta))
            for M in M_values for eta in eta_values for eps in eps_values]
    return np.array(rows).T


def corollary1_total(eps: float, *, K: int, M: int, eta_Y: float, runs: int,
                     generator: np.random.Generator) -> tuple:
    """Corollary 1's total at residual ``eps``: the 90% quantile over ``runs`` runs (all from ``generator``) of the
    steps until every one of K uniform classes has had its S_n, as the row (S_n, steps, steps / (K ln(M/eps) /
    (eps eta_Y)), steps / (K t_eps))."""
    eps = fraction("eps", eps)
    K, M, eta_Y = positive_int("K", K), positive_int("M", M, minimum=2), positive_number("eta_Y", eta_Y)
    runs, generator = positive_int("runs", runs), numpy_generator_arg("generator", generator)
    S_n = sst.steps_to_residual(eps, M, eta_Y)
    needed = np.quantile(sst.steps_until_every_class(S_n, K, runs, generator=generator), 0.9)
    bound = K / (eps * eta_Y) * np.log(M / eps)
    return S_n, needed, needed / bound, needed / (K * sst.residual_time(eps, M, eta_Y))


def corollary1_curves(M: int, eta_values, eps_grid) -> dict:
    """The curves of Corollary 1's figure, by eta_Y: S_n, t_eps and Eq. 73's bound on ``eps_grid``."""
    M = positive_int("M", M, minimum=2)
    eta_values, eps_grid = _values("eta_values", eta_values), np.asarray(_values("eps_grid", eps_grid))
    return {eta: ([sst.steps_to_residual(eps, M, eta) for eps in eps_grid], sst.residual_time(eps_grid, M, eta),
                  np.log(M / eps_grid) / (eps_grid * eta))
            for eta in eta_values}


# ---------------------------------------------------------------------------------------------------------
# 3. Theorem 1 (Sec. 3 of the chapter)


def overlap_lemma_checks(K_values, size: int, *, generator: np.random.Generator) -> tuple[list, dict]:
    """Lemmas 13-17, Eq. 79, Eq. 92 and the bound of Theorem 1(a) on ``size`` random overlap matrices per K
    (:func:`icllib.scan_snap.theory.random_overlap_matrices`): the matrices by K, and each statement's slack
    (<= 0 when it holds) or identity error pooled over all of them (:func:`~icllib.scan_snap.theory.e_prime_checks`)."""
    K_values = _values("K_values", K_values, integer=True, minimum=1)
    size = positive_int("size", size)
    generator = numpy_generator_arg("generator", generator)
    matrices = [sst.random_overlap_matrices(K, size, generator=generator) for K in K_values]
    by_size = [sst.e_prime_checks(E) for E in matrices]
    return matrices, {name: np.concatenate([checks[name] for checks in by_size]) for name in by_size[0]}


#: The readings of E' that Sec. 3 compares with Lemma 14's spectral form, by name. They are the corrected
#: definition and the two readings of App. D.1's printed "E' := (I+E)^{-1} I" (scan_snap.E4).
E_PRIME_READINGS = {
    "I - (I+E)^-1": sst.e_prime,
    "(I+E)^-1 (printed)": lambda E: np.linalg.inv(np.eye(E.shape[-1]) + E),
    "(I+E)^-1 - I (printed, minus restored)": lambda E: np.linalg.inv(np.eye(E.shape[-1]) + E) - np.eye(E.shape[-1]),
}


def e_prime_misses(matrices) -> dict:
    """For each reading of :data:`E_PRIME_READINGS`, its distance from Lemma 14's E' = U^T diag(lambda/(1+lambda)) U
    (from the eigendecomposition of E) in units of that E', one value per matrix of ``matrices`` (a list of stacks)."""
    if not isinstance(matrices, list) or not matrices:
        raise ValueError(f"matrices must be a non-empty list of (size, K, K) stacks, got {matrices!r}")
    matrices = [real_array("matrices", E) for E in matrices]
    if any(E.ndim != 3 or E.shape[-1] != E.shape[-2] for E in matrices):
        raise ValueError("matrices must hold (size, K, K) stacks of square matrices")
    misses = {}
    for name, definition in E_PRIME_READINGS.items():
        by_size = []
        for E in matrices:
            lam, vectors = np.linalg.eigh(E)
            spectral = np.einsum("...ik,...k,...jk->...ij", vectors, lam / (1 + lam), vectors)
            by_size.append(np.linalg.norm(definition(E) - spectral, axis=(-2, -1))
                           / np.linalg.norm(spectral, axis=(-2, -1)))
        misses[name] = np.concatenate(by_size)
    return misses


def overlapping_attention(K: int, M: int, *, overlap: float, n_distinct: int) -> np.ndarray:
    """The (M, K) attention outputs F of Sec. 3's Theorem 1 test: one common token (row 0) and ``n_distinct``
    distinct tokens per class with weights linspace(0.1, 1, n_distinct), the common weight set so that
    f_n^T f_n' = ``overlap`` for every pair of classes; columns of unit norm."""
    K, M = positive_int("K", K, minimum=2), positive_int("M", M, minimum=2)
    n_distinct = positive_int("n_distinct", n_distinct)
    overlap = fraction("overlap", overlap)
    if M < 1 + n_distinct * K:
        raise ValueError(f"M must hold the common token and {n_distinct} distinct tokens per class, got {M}")
    profile = np.linspace(0.1, 1.0, n_distinct)
    common_weight = np.sqrt(overlap / (1 - overlap) * np.sum(profile**2))
    F = np.zeros((M, K))
    for n in range(K):
        F[0, n] = common_weight
        F[1 + n_distinct * n : 1 + n_distinct * (n + 1), n] = profile
    return F / np.linalg.norm(F, axis=0)


def _unit_columns(F) -> np.ndarray:
    """``F`` as an (M, K) array of attention outputs f_n = c_n / ||c_n||: K >= 2 columns of unit norm."""
    F = real_array("F", F)
    if F.ndim != 2 or F.shape[1] < 2 or not np.allclose(np.linalg.norm(F, axis=0), 1.0):
        raise ValueError(f"F must be an (M, K >= 2) array of unit columns f_n = c_n / ||c_n||, got {F!r}")
    return F


def theorem1_ratios(F, eta_Y: float, *, update: str, steps: int,
                    generator: np.random.Generator) -> tuple[sst.DecoderRun, np.ndarray]:
    """Train the decoder on the fixed ``F`` for ``steps`` batch-1 steps (classes drawn from ``generator``) under the
    ``update`` ("modified" or "plain") at rate ``eta_Y``, and read beta_nn' / iota_n off the gradient's coefficients
    (g_n = F coef[n]: iota_n is proportional to coef[n, n] and beta_nn' to -coef[n, n']). Returns the run and the
    ratios over all ordered pairs."""
    F = _unit_columns(F)
    eta_Y, steps = positive_number("eta_Y", eta_Y), positive_int("steps", steps)
    if not isinstance(update, str) or update not in ("modified", "plain"):
        raise ValueError(f"update must be 'modified' or 'plain', got {update!r}")
    generator = numpy_generator_arg("generator", generator)
    K = F.shape[1]
    run = sst.decoder_run(F, eta_Y=eta_Y, steps=steps, update=update, generator=generator)
    coef = run.coef
    return run, np.array([-coef[n, m] / coef[n, n] for n in range(K) for m in range(K) if m != n])


def lemma3_one_step(F, E_prime, *, M: int, n: int, generator: np.random.Generator) -> dict:
    """One decoder step from a random Y on a vocabulary of M tokens, with the nonzero rows of ``F`` (so the same
    E'): how far the change of W = F^T Y under the modified (Eq. 26) and the plain (Eq. 7) update is from Lemma 3's
    e_n (e_n - alpha_n)^T, and how far softmax(Y^T f_n) is from softmax(w_n)."""
    F, E_prime = _unit_columns(F), real_array("E_prime", E_prime)
    if E_prime.shape != (F.shape[1], F.shape[1]):
        raise ValueError(f"E_prime must be (K, K) for the K = {F.shape[1]} columns of F, got {E_prime.shape}")
    K = F.shape[1]
    M, n = positive_int("M", M, minimum=2), positive_int("n", n, minimum=0)
    if n >= K:
        raise ValueError(f"n must be a class in [0, {K}), got {n}")
    generator = numpy_generator_arg("generator", generator)
    used = int(np.flatnonzero(np.any(F != 0, axis=1)).max()) + 1  # F is zero beyond its common and distinct tokens
    if used > M:
        raise ValueError(f"M must hold the {used} tokens F uses, got {M}")
    F_small = np.zeros((M, K))
    F_small[:used] = F[:used]
    Y = generator.normal(size=(M, M))
    alpha = np.exp(Y.T @ F_small[:, n] - (Y.T @ F_small[:, n]).max())
    alpha /= alpha.sum()
    residual = np.eye(M)[n] - alpha
    W_step = {"modified": F_small.T @ np.outer(F_small[:, n] - F_small @ E_prime[:, n], residual),
              "plain": F_small.T @ np.outer(F_small[:, n], residual)}
    target = np.outer(np.eye(K)[n], residual)  # eta_Y = 1
    w_row = F_small[:, n] @ Y  # alpha_n = softmax(w_n)
    alpha_from_w = np.exp(w_row - w_row.max()) / np.exp(w_row - w_row.max()).sum()
    gaps = {name: np.abs(step - target).max() for name, step in W_step.items()}
    return gaps | {"softmax": np.abs(alpha - alpha_from_w).max()}


def lemma12_theta(K: int, clocks, *, runs: int, delta: float, steps_per_K2: int,
                  generator: np.random.Generator) -> list:
    """Lemma 12 over ``runs`` runs of N = steps_per_K2 K^2 draws of K classes (all from ``generator``), for each
    decoder clock (M, eta_Y): rows (K, N, M, eta_Y, frequency of runs with ``max |theta_n|`` above
    K sqrt(ln(K/delta)) / sqrt(N), 90% quantile of ``max |theta_n|`` over that bound)."""
    K, clocks = positive_int("K", K), _clocks("clocks", clocks)
    runs, delta = positive_int("runs", runs), fraction("delta", delta)
    steps_per_K2 = positive_int("steps_per_K2", steps_per_K2)
    generator = numpy_generator_arg("generator", generator)
    N = steps_per_K2 * K**2
    counts = sst.uniform_class_counts(N, K, runs, generator=generator)
    bound = K / np.sqrt(N) * np.sqrt(np.log(K / delta))
    rows = []
    for M, eta in clocks:
        theta_max = np.abs(sst.class_count_theta(counts, M, eta)).max(axis=1)
        rows.append((K, N, M, eta, np.mean(theta_max > bound), np.quantile(theta_max, 0.9) / bound))
    return rows


def eq88_readings(F, A, counts, E_prime, *, eta_Y: float) -> tuple[float, dict]:
    """Theorem 5's coefficients of g_n = F coef_n from the class ``counts`` against the simulated ``A`` (relative
    gap), and beta_nn'/iota_n of Eq. 88 with the sign of q_0 as printed and as corrected against the simulation,
    in units of the size of the sign error ``2|q_0|(1 + theta_n')/iota_n`` (Eq. 83, 86, 88)."""
    F, A, E_prime = real_array("F", F), real_array("A", A), real_array("E_prime", E_prime)
    M, K = F.shape if F.ndim == 2 else (0, 0)
    if K < 2 or A.shape != (K, M) or E_prime.shape != (K, K):
        raise ValueError(f"F must be (M, K >= 2), A (K, M) and E_prime (K, K), got {F.shape}, {A.shape}, "
                         f"{E_prime.shape}")
    counts = np.asarray(_values("counts", counts, integer=True, minimum=-1), dtype=np.int64)
    if counts.shape != (K,):
        raise ValueError(f"counts must hold one count per class, got {counts!r}")
    eta_Y = positive_number("eta_Y", eta_Y)
    coef = sst.span_coefficients(F, A)
    h_counts = sst.decoder_clock_h_star(int(counts.max()), M, eta_Y)[counts]
    zeta_gram = (M / (M - 1)) ** 2 * (np.eye(K) - 1.0 / M)  # zeta_k^T zeta_n: q_1 on, q_0 off the diagonal
    residual_scale = (M - 1) / ((M - 1) + np.exp(M * h_counts))  # e_n - alpha_n = this times zeta_n
    closed_form = ((np.eye(K) - E_prime) @ ((M - 1) * h_counts[:, None] * zeta_gram * residual_scale[None, :])).T
    identity_gap = np.abs(coef - closed_form).max() / np.abs(coef).max()
    q_1, q_0 = M / (M - 1), -M / (M - 1) ** 2
    miss = {"printed": [], "corrected": []}
    for n in range(K):
        others = [k for k in range(K) if k != n]
        iota = q_1 * h_counts[n] * (1 - E_prime[n, n]) - q_0 * sum(h_counts[k] * E_prime[k, n] for k in others)
        for m in others:
            shared = q_1 * h_counts[n] * E_prime[n, m] + q_0 * sum(h_counts[k] * E_prime[k, m] for k in others)
            simulated = -coef[n, m] / coef[n, n]
            flip = 2 * abs(q_0) * h_counts[m] / iota  # the size of the sign error
            miss["printed"].append(abs(simulated - (shared + q_0 * h_counts[m]) / iota) / flip)
            miss["corrected"].append(abs(simulated - (shared - q_0 * h_counts[m]) / iota) / flip)
    return identity_gap, miss
