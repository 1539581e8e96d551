"""The experiments of the chapter ``scan_snap`` (Tian, Wang, Chen, Du, NeurIPS 2023) on the dynamics, as functions:
each runs one experiment of a section at the settings the chapter passes in and returns what that section checks
(the lemmas' experiments are in :mod:`icllib.scan_snap.lemmas`, the model and closed forms in
:mod:`icllib.scan_snap.model` and :mod:`icllib.scan_snap.theory`).

Read top to bottom, in the order of the chapter's sections:

4. **Scan**: the classes of one query token, Lemma 4, Assumption 2 along a trajectory, Theorems 2-3.
5. **Snap**: Theorem 4's closed form against its ODE, the branches of Eq. 14 and the insights of Sec. 6 of the
   paper.
6. **SGD**: the runs and summaries of the paper's Figs. 4-6 (the chapter's last two sections).

Symbols follow the paper: ``M`` vocabulary size, ``K`` number of classes, ``eta_Y`` and ``eta_Z`` the learning
rates, ``P[n, l] = P(l|n)``, ``f_n = c_n / ||c_n||``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm, spearmanr

from icllib.scan_snap import model as ss
from icllib.scan_snap import theory as sst
# The argument checks the two experiment modules share (a tuple of sizes or rates, a SequenceClasses).
from icllib.scan_snap.lemmas import _spec, _values
from icllib.validation import numpy_generator_arg, positive_int, positive_number, real_array

# ---------------------------------------------------------------------------------------------------------
# 4. Scan (Sec. 4 of the chapter)


#: The weights of the five distinct tokens per class in the scan and snap settings of Secs. 4-5 of the chapter (the
#: long-sequence dynamics of Eq. 10, the negative control and Eq. 13's single common token).
DISTINCT_WEIGHTS = np.linspace(0.05, 0.25, 5)


def one_query_probabilities(common, weights, K: int) -> np.ndarray:
    """P(l|n) of K classes sharing one query token: the common tokens first, with the probabilities ``common``
    (one value per common token, the same in every class, or a (K, number of common tokens) array), then
    ``len(weights)`` distinct tokens per class carrying the rest of each class's mass in proportion to ``weights``."""
    common = real_array("common", common)
    weights = np.asarray(_values("weights", weights))
    K = positive_int("K", K)
    if common.ndim not in (1, 2) or (common.ndim == 2 and common.shape[0] != K):
        raise ValueError(f"common must be one probability per common token, or a ({K}, tokens) array, "
                         f"got {common.shape}")
    n_common, n_distinct = common.shape[-1], len(weights)
    P = np.zeros((K, n_common + K * n_distinct))
    P[:, :n_common] = common
    if np.any(P[:, :n_common] < 0) or np.any(P[:, :n_common].sum(axis=1) >= 1):
        raise ValueError(f"common must hold probabilities that leave mass for the distinct tokens, got {common!r}")
    for n in range(K):
        P[n, n_common + n_distinct * n : n_common + n_distinct * (n + 1)] = (
            (1 - P[n, :n_common].sum()) * weights / weights.sum())
    return P


def lemma4_classes(K: int) -> tuple[ss.SequenceClasses, np.ndarray]:
    """Sec. 4's test of Lemma 4: K classes sharing query token 16, one common token (weight 3) and five distinct
    tokens per class (weights 1-5), with one sequence per class whose token counts are exactly twice the weights,
    so that X^T b_T = c_n exactly. Returns the classes and the (K, T - 1) sequences."""
    K = positive_int("K", K)
    M = 1 + 5 * K + 1 + K  # contextual tokens, the query token, the next tokens
    P = np.zeros((K, M))
    P[:, 0] = 3
    for n in range(K):
        P[n, 1 + 5 * n : 6 + 5 * n] = np.array([1, 2, 3, 4, 5])
    sequences = np.array([np.repeat(np.arange(M), 2 * P[n].astype(int)) for n in range(K)])
    query = 1 + 5 * K
    spec = ss.make_classes(P / P.sum(axis=1, keepdims=True), np.full(K, query), np.arange(query + 1, query + 1 + K))
    return spec, sequences


def eq10_drift(spec: ss.SequenceClasses, F, A) -> np.ndarray:
    """Eq. 10's dz_m/dt (with eta_Z = 1), summed over the classes of ``spec``, for the decoder Y = F A in the span
    of the attention outputs F (M, K): with alpha_n = softmax(Y^T f_n) and g_n = F A (e_n - alpha_n), gamma
    beta_nn' is -(A (e_n - alpha_n))[n'], and each class adds diag(f_n) sum_n' gamma beta_nn' (f_n f_n^T - I) f_n'."""
    spec = _spec(spec)
    F, A = real_array("F", F), real_array("A", A)
    if F.shape != (spec.M, spec.K) or A.shape != (spec.K, spec.M):
        raise ValueError(f"F must be ({spec.M}, {spec.K}) and A ({spec.K}, {spec.M}), got {F.shape} and {A.shape}")
    Y = F @ A
    drift = np.zeros(spec.M)
    for n in range(spec.K):
        decoded = Y.T @ F[:, n]
        alpha = np.exp(decoded - decoded.max()) / np.exp(decoded - decoded.max()).sum()
        coef = A @ (np.eye(spec.M)[spec.next_token[n]] - alpha)  # g_n = F coef: gamma beta_nn' = -coef[n']
        f_n = F[:, n]
        drift += f_n * sum(-coef[m] * (f_n * (f_n @ F[:, m]) - F[:, m]) for m in range(spec.K) if m != n)
    return drift


def _trajectory(P, z_path) -> tuple[np.ndarray, np.ndarray]:
    P, z_path = real_array("P", P), real_array("z_path", z_path)
    if P.ndim != 2 or z_path.ndim != 2 or z_path.shape[1] != P.shape[1]:
        raise ValueError(f"P must be (K, M) and z_path (times, M), got {P.shape} and {z_path.shape}")
    return P, z_path


def overlap_eigenvalues(P, z_path) -> np.ndarray:
    """The eigenvalues of E = F^T F - I at each time of a trajectory ``z_path`` (times, M) of the query logits."""
    P, z_path = _trajectory(P, z_path)
    K = P.shape[0]
    return np.array([np.linalg.eigvalsh(F.T @ F - np.eye(K))
                     for F in (sst.normalised_attention(P, z).T for z in z_path)])


def theorem2_rates(P, z_path, xi_path, *, eta_Z: float) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 2's rates along a trajectory with a single common token (column 0): eta_Z f_nl^2 xi_n for each
    distinct token l of class n (Eq. 98, columns 1 on) and -eta_Z sum_n (1 - f_nl^2) xi_n for the common one
    (Eq. 100)."""
    P, z_path = _trajectory(P, z_path)
    xi_path = real_array("xi_path", xi_path)
    if xi_path.shape != (len(z_path), P.shape[0]):
        raise ValueError(f"xi_path must be (times, K) = ({len(z_path)}, {P.shape[0]}), got {xi_path.shape}")
    eta_Z = positive_number("eta_Z", eta_Z)
    f_path = np.array([sst.normalised_attention(P, z) for z in z_path])  # (time, K, M)
    distinct = np.arange(1, P.shape[1])
    owner = np.argmax(P[:, distinct] > 0, axis=0)
    eq98 = eta_Z * f_path[:, owner, distinct] ** 2 * xi_path[:, owner]
    eq100 = -eta_Z * np.sum((1 - f_path[:, :, 0] ** 2) * xi_path, axis=1)
    return eq98, eq100


def theorem3_along(P, z_path, B_path) -> tuple[float, float, float]:
    """Theorem 3 along a trajectory with a single common token (column 0): the largest relative error of Eq. 11,
    r(t) = r(0) e^{2 Delta z_l}, over ordered pairs of distinct tokens of each class, and the smallest margins of
    the lower and the upper bound of Eq. 12 on the growth factor chi of each class's dominant distinct token."""
    P, z_path = _trajectory(P, z_path)
    B_path = real_array("B_path", B_path)
    if B_path.shape != (len(z_path), P.shape[0]):
        raise ValueError(f"B_path must be (times, K) = ({len(z_path)}, {P.shape[0]}), got {B_path.shape}")
    f_path = np.array([sst.normalised_attention(P, z) for z in z_path])
    distinct = np.arange(1, P.shape[1])
    owner = np.argmax(P[:, distinct] > 0, axis=0)
    errors, lower, upper = [], [], []
    for n in range(P.shape[0]):
        columns = distinct[owner == n]
        top = columns[np.argmax(P[n, columns])]
        for l in columns:
            for l_other in columns:
                if l == l_other:
                    continue
                r_t = f_path[:, n, l] ** 2 / f_path[:, n, l_other] ** 2 - 1
                predicted = r_t[0] * np.exp(2 * (z_path[:, l] - z_path[0, l]))
                errors.append(np.abs(r_t - predicted).max() / np.abs(r_t).max())
        chi = np.exp(2 * (z_path[:, top] - z_path[0, top]))
        lower.append(np.min(chi - np.exp(2 * f_path[0, n, top] ** 2 * B_path[:, n])))
        upper.append(np.min(np.exp(2 * B_path[:, n]) - chi))
    return max(errors), min(lower), min(upper)


def scan_order_holds(P, z_path) -> bool:
    """Sec. 5's scanning order along a trajectory with a single common token (column 0): within each class, a
    distinct token with larger P(l|n) has gained more logit at every time after the start."""
    P, z_path = _trajectory(P, z_path)
    distinct = np.arange(1, P.shape[1])
    owner = np.argmax(P[:, distinct] > 0, axis=0)
    order_ok = []
    for n in range(P.shape[0]):
        columns = distinct[owner == n]
        gains = z_path[1:, columns] - z_path[0, columns]
        order_ok.append(np.all(np.diff(gains[:, np.argsort(P[n, columns])], axis=1) > 0))
    return bool(all(order_ok))


# ---------------------------------------------------------------------------------------------------------
# 5. Snap (Sec. 5 of the chapter), at the sizes of the paper's Figs. 3 and 9 unless told otherwise


def _setting(setting) -> sst.SnapFigures:
    if not isinstance(setting, sst.SnapFigures):
        raise ValueError(f"setting must be a SnapFigures (e.g. SNAP_FIGURES), got {setting!r}")
    return setting


def _snap_times(t) -> np.ndarray:
    t = real_array("t", t)
    if t.ndim != 1 or np.any(t < 0) or np.any(np.diff(t) <= 0):
        raise ValueError(f"t must be an increasing 1-d array of times >= 0, got {t!r}")
    return t


def snap_closed_form_errors(t, *, C0_values, eta_Y_values, setting=sst.SNAP_FIGURES) -> tuple[np.ndarray, np.ndarray]:
    """Theorem 4's ODE against the corrected closed form (Eq. 129 with -ln(C_0)/4) and against the printed one
    (1/4 ln(C_0 + 4 Gamma)): the largest gaps on the times ``t``, each a (len(C0_values), len(eta_Y_values)) array."""
    t = _snap_times(t)
    C0_values, eta_Y_values = _values("C0_values", C0_values), _values("eta_Y_values", eta_Y_values)
    s = _setting(setting)
    closed, printed = [], []
    for C0 in C0_values:
        for eta_Y in eta_Y_values:
            B_ode = sst.snap_B_ode(t, K=s.K, M=s.M, eta_Y=eta_Y, eta_Z=s.eta_Z, C0=C0)
            closed.append(np.abs(B_ode - sst.snap_B(t, K=s.K, M=s.M, eta_Y=eta_Y, eta_Z=s.eta_Z, C0=C0)).max())
            Gamma = sst.snap_Gamma(t, K=s.K, M=s.M, eta_Y=eta_Y, eta_Z=s.eta_Z)
            printed.append(np.abs(B_ode - 0.25 * np.log(C0 + 4 * Gamma)).max())
    shape = (len(C0_values), len(eta_Y_values))
    return np.reshape(closed, shape), np.reshape(printed, shape)


def snap_branch_errors(eta_Y_values, *, setting=sst.SNAP_FIGURES) -> dict:
    """The two branches of Eq. 14 against the exact B_n (C_0 = 1) on t in [0.1, 1e7]: the early one
    1/4 ln(1 + 2(M-1)^2 eta_Y eta_Z t^2 / (K M^2)) before K ln M / eta_Y, the late one
    1/4 ln(1 + 2K(M-1)^2 eta_Z ln^2(M eta_Y t / K) / (M^2 eta_Y)) after t_0; the largest gap of each, per eta_Y."""
    eta_Y_values, s = _values("eta_Y_values", eta_Y_values), _setting(setting)
    K, M, eta_Z = s.K, s.M, s.eta_Z
    errors = {"early": [], "late": []}
    for eta_Y in eta_Y_values:
        t = np.geomspace(1e-1, 1e7, 2000)
        exact = sst.snap_B(t, K=K, M=M, eta_Y=eta_Y, eta_Z=eta_Z)
        early = t < K * np.log(M) / eta_Y
        late = t >= sst.transition_time(K=K, M=M, eta_Y=eta_Y)
        B_early = 0.25 * np.log(1 + 2 * (M - 1) ** 2 / (K * M**2) * eta_Y * eta_Z * t**2)
        B_late = 0.25 * np.log(1 + 2 * K * (M - 1) ** 2 / M**2 * eta_Z / eta_Y * np.log(M * eta_Y * t / K) ** 2)
        errors["early"].append(np.abs(B_early - exact)[early].max())
        errors["late"].append(np.abs(B_late - exact)[late].max())
    return errors


def insight_c_margins(eta_Y_values, *, setting=sst.SNAP_FIGURES) -> tuple[list, list]:
    """Insight (c) at fixed eta_Z: B_n(1e7) for each eta_Y, and for each pair of neighbouring rates the smallest
    B_n(smaller rate) - B_n(larger rate) on 400 times from the larger rate's transition to 1e7 (> 0 if it holds)."""
    eta_Y_values, s = _values("eta_Y_values", eta_Y_values), _setting(setting)
    if len(eta_Y_values) < 2:
        raise ValueError(f"eta_Y_values must hold at least two rates to compare, got {eta_Y_values!r}")
    final_B = [float(sst.snap_B(1e7, K=s.K, M=s.M, eta_Y=eta_Y, eta_Z=s.eta_Z)) for eta_Y in eta_Y_values]
    margins = []
    for small, large in zip(eta_Y_values[:-1], eta_Y_values[1:]):
        t = np.geomspace(sst.transition_time(K=s.K, M=s.M, eta_Y=large), 1e7, 400)
        margins.append(np.min(sst.snap_B(t, K=s.K, M=s.M, eta_Y=small, eta_Z=s.eta_Z)
                              - sst.snap_B(t, K=s.K, M=s.M, eta_Y=large, eta_Z=s.eta_Z)))
    return final_B, margins


def fixed_ratio_transitions(eta_Z_values, *, setting=sst.SNAP_FIGURES) -> tuple[list, list, list]:
    """At the fixed ratio eta_Y / eta_Z of ``setting`` (Fig. 9): each rate's transition time t_0 (Lemma 8) and
    B_n(t_0) on the closed form and on Theorem 4's ODE (C_0 = 1)."""
    eta_Z_values, s = _values("eta_Z_values", eta_Z_values), _setting(setting)
    t0 = [sst.transition_time(K=s.K, M=s.M, eta_Y=s.ratio * eta_Z) for eta_Z in eta_Z_values]
    closed = [float(sst.snap_B(t, K=s.K, M=s.M, eta_Y=s.ratio * eta_Z, eta_Z=eta_Z))
              for t, eta_Z in zip(t0, eta_Z_values)]
    ode = [float(sst.snap_B_ode(np.array([0.0, t]), K=s.K, M=s.M, eta_Y=s.ratio * eta_Z, eta_Z=eta_Z)[-1])
           for t, eta_Z in zip(t0, eta_Z_values)]
    return t0, closed, ode


def insight_b_margin(eta_Z_values, *, setting=sst.SNAP_FIGURES) -> float:
    """Insight (b) at the fixed ratio of ``setting``: the smallest increase of B_n from one rate of the increasing
    ``eta_Z_values`` to the next, on 400 times from the latest transition to 1e7 (> 0 if larger rates end higher)."""
    eta_Z_values, s = _values("eta_Z_values", eta_Z_values), _setting(setting)
    if len(eta_Z_values) < 2 or np.any(np.diff(eta_Z_values) <= 0):
        raise ValueError(f"eta_Z_values must hold at least two increasing rates, got {eta_Z_values!r}")
    t0 = [sst.transition_time(K=s.K, M=s.M, eta_Y=s.ratio * eta_Z) for eta_Z in eta_Z_values]
    t = np.geomspace(max(t0), 1e7, 400)
    return np.diff([sst.snap_B(t, K=s.K, M=s.M, eta_Y=s.ratio * eta_Z, eta_Z=eta_Z) for eta_Z in eta_Z_values],
                   axis=0).min()


def measured_transitions(eta_Y_values, *, setting=sst.SNAP_FIGURES) -> list:
    """Insight (a) on the decoder's own gradient descent: for each eta_Y, the step t_0 (in steps of all K classes)
    after which e^{Mh} stays above (M-1)Mh, with Mh the logit gap of one class's row w <- w + eta_Y (e_n - softmax(w))
    from w = 0 (Lemma 8's switch)."""
    eta_Y_values, s = _values("eta_Y_values", eta_Y_values), _setting(setting)
    measured = []
    for eta_Y in eta_Y_values:
        horizon = int(2 * sst.transition_time(K=s.K, M=s.M, eta_Y=eta_Y) / s.K)
        row = sst.decoder_row_dynamics(horizon, s.M, eta_Y)
        gap = row[:, 0] - row[:, 1]  # M h(s): the class's logit over any other token
        before_switch = np.flatnonzero(np.exp(gap) < (s.M - 1) * gap)
        measured.append(s.K * (before_switch[-1] + 1))  # K steps of the clock per class step
    return measured


def snap_figure_curves(t, eta_Y_values, eta_Z_values, *, setting=sst.SNAP_FIGURES) -> tuple[dict, dict]:
    """The curves of the snap figure: the growth factor e^{2 B_n} by eta_Y at the setting's eta_Z (Fig. 3), and
    B_n by eta_Z at its ratio eta_Y / eta_Z (Fig. 9), on the times ``t``."""
    t, s = _snap_times(t), _setting(setting)
    eta_Y_values, eta_Z_values = _values("eta_Y_values", eta_Y_values), _values("eta_Z_values", eta_Z_values)
    chi = {eta_Y: np.exp(2 * sst.snap_B(t, K=s.K, M=s.M, eta_Y=eta_Y, eta_Z=s.eta_Z)) for eta_Y in eta_Y_values}
    B = {eta_Z: sst.snap_B(t, K=s.K, M=s.M, eta_Y=s.ratio * eta_Z, eta_Z=eta_Z) for eta_Z in eta_Z_values}
    return chi, B


# ---------------------------------------------------------------------------------------------------------
# 6. SGD on Syn-Small and Syn-Medium (Secs. 6 and 7 of the chapter: the paper's Figs. 4-6)


def fig4_run(spec: ss.SequenceClasses, eta_Y: float, *, eta_Z: float, record_every: int,
             generator: np.random.Generator) -> ss.TrainResult:
    """One run of Fig. 4: :func:`icllib.scan_snap.model.train_yz` from Y = Z = 0 at the authors' run size and the rates
    ``eta_Y`` and ``eta_Z``, drawing from ``generator`` and recording Z's query rows every ``record_every`` steps."""
    spec, eta_Y = _spec(spec), positive_number("eta_Y", eta_Y)
    eta_Z, record_every = positive_number("eta_Z", eta_Z), positive_int("record_every", record_every)
    generator = numpy_generator_arg("generator", generator)
    return ss.train_yz(spec, eta_Y=eta_Y, eta_Z=eta_Z, run=ss.AUTHORS_RUN, generator=generator,
                       record_every=record_every)


def fig4_summary(spec: ss.SequenceClasses, result: ss.TrainResult) -> dict:
    """What Fig. 4 shows, for one run recorded at steps 0, 50 and 100: the final common-token mass (mean over
    classes), the smallest gain over classes of the most likely distinct token's share among the distinct tokens,
    the smallest Spearman correlation between P(l|n) and the logit gains on the distinct tokens, how much the
    distinct-token entropy moved over steps 0-50 and drifted over 50-100, its final value, and the first iteration
    with a loss below 1e-2."""
    spec = _spec(spec)
    if not isinstance(result, ss.TrainResult) or not {0, 50, 100} <= set(result.steps.tolist()):
        raise ValueError("result must be a TrainResult recorded at steps 0, 50 and 100 (fig4_run)")
    c0, c = (ss.attention_distribution(spec, result.Z_query[i]) for i in (0, -1))
    distinct, P = spec.distinct, spec.P
    top_share = [(c[n, np.argmax(np.where(distinct[n], P[n], -1))] / c[n, distinct[n]].sum())
                 - (c0[n, np.argmax(np.where(distinct[n], P[n], -1))] / c0[n, distinct[n]].sum())
                 for n in range(spec.K)]
    gains = result.Z_query[-1] - result.Z_query[0]  # (K, M): logit gains of each class's query row
    rank = min(spearmanr(P[n, distinct[n]], gains[n, distinct[n]])[0] for n in range(spec.K))
    entropy = [ss.distinct_token_entropy(spec, result.Z_query[list(result.steps).index(s)]) for s in (0, 50, 100)]
    return dict(common_mass=c[:, spec.common].sum(axis=1).mean(), share_gain=min(top_share), rank=rank,
                moved=abs(entropy[1] - entropy[0]), drift=abs(entropy[2] - entropy[1]), entropy=entropy[2],
                loss_hit=int(np.argmax(result.losses < 1e-2)) + 1)


def fig4_table(stats: dict) -> tuple[list, list]:
    """``(header, rows)`` for :func:`icllib.plotting.show_table`: the :func:`fig4_summary` of the runs, one row
    per eta_Y (mean and spread over seeds of the final entropy, and the extremes the checks use)."""
    if not isinstance(stats, dict) or not stats or not all(isinstance(rows, list) and rows for rows in stats.values()):
        raise ValueError("stats must be a dict of fig4_summary lists by eta_Y")
    header = ["eta_Y", "H_DT (mean +- std)", "common mass", "loss < 1e-2 at iteration", "top share gained (min)",
              "|H(50) - H(0)| (min)", "|H(100) - H(50)| (max)"]
    rows = [[f"{eta_Y:g}", f"{np.mean([r['entropy'] for r in runs]):.3f} +- {np.std([r['entropy'] for r in runs]):.3f}",
             f"{np.mean([r['common_mass'] for r in runs]):.3f}", ", ".join(str(r["loss_hit"]) for r in runs),
             f"{min(r['share_gain'] for r in runs):.3f}", f"{min(r['moved'] for r in runs):.3f}",
             f"{max(r['drift'] for r in runs):.4f}"] for eta_Y, runs in stats.items()]
    return header, rows


def attention_entropy(spec: ss.SequenceClasses, result: ss.TrainResult, step_index: int) -> np.ndarray:
    """The entropy (nats) of each class's whole attention map c_n (over all its contextual tokens) at the recorded
    step ``step_index`` of a run (0: the start, -1: the end)."""
    spec = _spec(spec)
    if not isinstance(result, ss.TrainResult):
        raise ValueError(f"result must be a TrainResult (train_yz), got {type(result).__name__}")
    if isinstance(step_index, bool) or not isinstance(step_index, (int, np.integer)) \
            or not -len(result.steps) <= step_index < len(result.steps):
        raise ValueError(f"step_index must index the run's {len(result.steps)} recorded steps, got {step_index!r}")
    c = ss.attention_distribution(spec, result.Z_query[step_index])
    return np.array([-(row[row > 0] * np.log(row[row > 0])).sum() for row in c])


def eq110_errors(spec: ss.SequenceClasses, result: ss.TrainResult) -> list:
    """Theorem 3 in a finite-T run from zero: per class, the largest error of Eq. 110's prediction of every
    distinct logit gain from the dominant one, Delta z_l = -1/2 ln(1 + (e^{-2 Delta z_l0} - 1)(P(l|n)/P(l0|n))^2),
    in units of the dominant gain."""
    spec = _spec(spec)
    if not isinstance(result, ss.TrainResult):
        raise ValueError(f"result must be a TrainResult (train_yz), got {type(result).__name__}")
    errors = []
    for n in range(spec.K):
        dz = result.Z_query[-1][n] - result.Z_query[0][n]
        distinct = np.flatnonzero(spec.distinct[n])
        top = distinct[np.argmax(spec.P[n, distinct])]
        ratio_sq = (spec.P[n, distinct] / spec.P[n, top]) ** 2
        predicted = -0.5 * np.log1p((np.exp(-2 * dz[top]) - 1) * ratio_sq)
        errors.append(np.abs(dz[distinct] - predicted).max() / abs(dz[top]))
    return errors


def equal_distinct_classes(spec: ss.SequenceClasses, weight: float) -> ss.SequenceClasses:
    """``spec`` with its common tokens at weight 1 and every distinct token at ``weight`` (renormalised): the
    setting of Sec. 6's prior experiment, where only the initial logits can tell the distinct tokens apart."""
    spec, weight = _spec(spec), positive_number("weight", weight)
    weights = np.zeros_like(spec.P)
    weights[:, spec.common] = 1.0
    weights[spec.distinct] = weight
    return ss.make_classes(weights / weights.sum(axis=1, keepdims=True), spec.query, spec.next_token,
                           name=f"{spec.name}, equal distinct tokens")


def initial_prior(spec: ss.SequenceClasses, *, eta_Y: float, z_scale: float, z0_generator: np.random.Generator,
                  generator: np.random.Generator) -> list:
    """Sec. 6's prior experiment, one run: Z(0) ~ N(0, z_scale^2) from ``z0_generator`` and Y(0) = 0, SGD from
    ``generator`` at eta_Z = 1; for each class, whether the distinct token the initial logits favour
    (argmax P(l|n) e^{z_ml(0)}) gains the most logit, and whether it still wins at the end: a list of K pairs."""
    spec, eta_Y = _spec(spec), positive_number("eta_Y", eta_Y)
    z_scale = positive_number("z_scale", z_scale)
    z0_generator = numpy_generator_arg("z0_generator", z0_generator)
    generator = numpy_generator_arg("generator", generator)
    Z0 = z_scale * z0_generator.normal(size=(spec.M, spec.M))
    result = ss.train_yz(spec, eta_Y=eta_Y, eta_Z=1.0, run=ss.AUTHORS_RUN, generator=generator,
                         init=(np.zeros_like(Z0), Z0))
    c_final = ss.attention_distribution(spec, result.Z)
    matches = []
    for n in range(spec.K):
        mask, query = spec.distinct[n], spec.query[n]
        prior_winner = np.argmax(np.where(mask, spec.P[n] * np.exp(Z0[query]), -1))
        largest_gain = np.argmax(np.where(mask, result.Z[query] - Z0[query], -np.inf))
        matches.append((largest_gain == prior_winner, np.argmax(np.where(mask, c_final[n], -1)) == prior_winner))
    return matches


def adam_winner(spec: ss.SequenceClasses, eta: float, *, generator: np.random.Generator) -> tuple[int, np.ndarray]:
    """Fig. 5, one run: Adam from zero with eta_Y = eta_Z = ``eta``, drawing from ``generator``; the winning
    distinct token of class 1 and class 1's final attention on its first 20 tokens."""
    spec, eta = _spec(spec), positive_number("eta", eta)
    generator = numpy_generator_arg("generator", generator)
    result = ss.train_yz(spec, eta_Y=eta, eta_Z=eta, run=ss.AUTHORS_RUN, generator=generator, optimizer="adam")
    c = ss.attention_distribution(spec, result.Z)
    return int(np.argmax(np.where(spec.distinct[0], c[0], -1))), c[0, :20]


@dataclass(frozen=True)
class Fig6Comparison:
    """A Fig. 6 sweep against the authors' released numbers, cell by cell (size, eta_Z, ratio): our mean and
    standard deviation over seeds, theirs, each cell's two-sample z-score (less the 0.0005 rounding of the released
    numbers), the Bonferroni threshold of a 5% family-wise test, and the worst cell's index."""

    our_mean: np.ndarray
    our_std: np.ndarray
    ref_mean: np.ndarray
    ref_std: np.ndarray
    n_seeds: int
    z_scores: np.ndarray
    threshold: float
    worst: tuple


def fig6_against_authors(sweep: ss.SweepResult) -> Fig6Comparison:
    """Compare a :func:`icllib.scan_snap.model.fig6_sweep` with the authors' released means and standard deviations
    (``icllib.scan_snap.model.FIG6_AUTHORS_MEAN`` and ``FIG6_AUTHORS_STD``, 10 seeds each) on the cells the sweep ran."""
    if not isinstance(sweep, ss.SweepResult):
        raise ValueError(f"sweep must be a SweepResult (fig6_sweep), got {type(sweep).__name__}")
    grid = sweep.grid
    cells = np.ix_([ss.FIG6.num_last.index(n) for n in grid.num_last], [ss.FIG6.eta_Z.index(eta) for eta in grid.eta_Z],
                   [ss.FIG6.ratios.index(ratio) for ratio in grid.ratios])
    ref_mean, ref_std = ss.FIG6_AUTHORS_MEAN[cells], ss.FIG6_AUTHORS_STD[cells]
    our_mean = sweep.entropy.mean(axis=-1)
    our_std = sweep.entropy.std(axis=-1, ddof=1)
    n_seeds = sweep.entropy.shape[-1]
    z_scores = np.maximum(np.abs(our_mean - ref_mean) - 0.0005, 0) / (ref_std * np.sqrt(1 / 10 + 1 / n_seeds))
    return Fig6Comparison(our_mean=our_mean, our_std=our_std, ref_mean=ref_mean, ref_std=ref_std, n_seeds=n_seeds,
                          z_scores=z_scores, threshold=norm.ppf(1 - 0.05 / (2 * z_scores.size)),
                          worst=np.unravel_index(np.argmax(z_scores), z_scores.shape))


def recall_entropy_correlation(sweep: ss.SweepResult) -> dict:
    """Figs. 11-12 as an observation: for each size of the sweep, the Spearman correlation over its learning-rate
    settings between the area under the distinct-token recall curve (8 thresholds from 0.5/M to 4/M, mean over
    seeds) and the Fig. 6 entropy; by K."""
    if not isinstance(sweep, ss.SweepResult):
        raise ValueError(f"sweep must be a SweepResult (fig6_sweep), got {type(sweep).__name__}")
    our_mean = sweep.entropy.mean(axis=-1)
    correlations = {}
    for i, num_last in enumerate(sweep.grid.num_last):
        spec = ss.syn_medium(num_last)
        taus = np.geomspace(0.5, 4.0, 8) / spec.M
        recall = ss.distinct_token_recall(spec, sweep.attention[i], taus).mean(axis=2)  # over seeds
        correlations[spec.K] = spearmanr(recall.mean(axis=-1).ravel(), our_mean[i].ravel())[0]
    return correlations
