"""Unit tests of icllib.scan_snap.dynamics: the scan, snap and SGD experiments of the chapter against independent
computations or the statements they serve, and bad input refused by name."""

import numpy as np
import pytest

from icllib.scan_snap import model as ss
from icllib.scan_snap import dynamics
from icllib.scan_snap import theory as sst
from icllib.config import rng

WEIGHTS = dynamics.DISTINCT_WEIGHTS


def test_one_query_probabilities_builds_the_chapters_settings():
    P = dynamics.one_query_probabilities([0.15], WEIGHTS, 3)
    assert P.shape == (3, 16) and np.allclose(P.sum(axis=1), 1) and np.all(P[:, 0] == 0.15)
    assert np.array_equal(P[1, 6:11], 0.85 * WEIGHTS / WEIGHTS.sum())  # the chapter's literal setting, bit for bit
    control = dynamics.one_query_probabilities([[0.3, 0.01], [0.3, 0.4]], WEIGHTS, 2)
    assert control[1, 1] == 0.4 and np.allclose(control.sum(axis=1), 1)
    with pytest.raises(ValueError, match="common"):
        dynamics.one_query_probabilities([0.6, 0.5], WEIGHTS, 2)


def test_lemma4_classes_and_eq10_match_lemma1():
    spec, sequences = dynamics.lemma4_classes(3)
    assert spec.M == 20 and np.all(spec.query == 16)
    assert np.array_equal(ss.token_counts(sequences, spec.M)[0, 1:6], [2, 4, 6, 8, 10])
    generator = rng(13)
    Z = 0.5 * generator.normal(size=(spec.M, spec.M))
    F = sst.normalised_attention(spec.P, Z[16]).T
    A = generator.normal(size=(spec.K, spec.M))
    _, _, dZ = ss.lemma1_gradient_sequences(spec, F @ A, Z, np.arange(3), sequences)
    drift = dynamics.eq10_drift(spec, F, A)
    assert np.abs(dZ[16] - drift / 3).max() / np.abs(dZ[16]).max() < 1e-10


@pytest.fixture(scope="module")
def scan_path():
    P = dynamics.one_query_probabilities([0.15], WEIGHTS, 3)
    t = np.concatenate([[0.0], np.geomspace(1e-2, 1e3, 40)])
    z, B, zdot, xi = sst.integrate_scan(P, t, K_clock=3, M_decoder=20000, eta_Y=1.0, eta_Z=0.5)
    return P, z, B, zdot, xi


def test_theorems_2_and_3_along_an_integrated_path(scan_path):
    P, z, B, zdot, xi = scan_path
    eigenvalues = dynamics.overlap_eigenvalues(P, z)
    F0 = sst.normalised_attention(P, z[0]).T
    assert np.allclose(eigenvalues[0], np.linalg.eigvalsh(F0.T @ F0 - np.eye(3)))
    eq98, eq100 = dynamics.theorem2_rates(P, z, xi, eta_Z=0.5)
    assert np.abs(eq98 - zdot[:, 1:]).max() < 1e-8 * np.abs(zdot).max()
    assert np.abs(eq100 - zdot[:, 0]).max() < 1e-8 * np.abs(zdot).max()
    eq11, lower, upper = dynamics.theorem3_along(P, z, B)
    assert eq11 < 1e-6 and min(lower, upper) > -1e-8
    assert dynamics.scan_order_holds(P, z)
    reversed_gains = z.copy()
    reversed_gains[:, 1:6] = z[:, 1:6][:, ::-1]  # the least likely token now gains the most
    assert not dynamics.scan_order_holds(P, reversed_gains)


def test_snap_closed_form_branches_and_insights():
    t = np.concatenate([[0.0], np.geomspace(1e-2, 1e6, 60)])
    closed, printed = dynamics.snap_closed_form_errors(t, C0_values=(1.0, 4.0), eta_Y_values=(1.0,))
    assert closed.shape == (2, 1) and closed.max() < 1e-6
    assert printed[1, 0] == pytest.approx(np.log(4) / 4, abs=1e-6)  # the dropped -ln(C_0)/4 (scan_snap.E1)
    assert max(max(v) for v in dynamics.snap_branch_errors((1.0, 5.0)).values()) < 0.05
    final_B, margins = dynamics.insight_c_margins((1.0, 2.0))
    assert final_B[0] > final_B[1] and min(margins) > 0
    t0, closed_B, ode_B = dynamics.fixed_ratio_transitions((0.5, 1.0))
    assert t0[0] == pytest.approx(2 * t0[1]) and closed_B[0] == pytest.approx(closed_B[1])
    assert ode_B[0] == pytest.approx(closed_B[0], abs=1e-6)
    assert dynamics.insight_b_margin((0.5, 1.0)) > 0
    measured = dynamics.measured_transitions((0.2, 1.0))
    assert measured[0] > measured[1]
    chi, B = dynamics.snap_figure_curves(np.array([1.0, 10.0]), (1.0,), (0.5,))
    assert np.allclose(chi[1.0], np.exp(2 * sst.snap_B(np.array([1.0, 10.0]), K=10, M=1000, eta_Y=1.0, eta_Z=0.5)))
    with pytest.raises(ValueError, match="eta_Z_values"):
        dynamics.insight_b_margin((1.0,))


@pytest.fixture(scope="module")
def small_run():
    spec = ss.syn_small()
    return spec, dynamics.fig4_run(spec, 1.0, eta_Z=1.0, record_every=50, generator=rng(0))


def test_fig4_summary_and_table(small_run):
    spec, run = small_run
    assert run.steps.tolist() == [0, 50, 100]
    summary = dynamics.fig4_summary(spec, run)
    assert -1 <= summary["rank"] <= 1 and 0 <= summary["common_mass"] <= 1 and summary["loss_hit"] >= 1
    header, rows = dynamics.fig4_table({1.0: [summary]})
    assert len(rows) == 1 and len(rows[0]) == len(header)
    start = dynamics.attention_entropy(spec, run, 0)
    c0 = ss.attention_distribution(spec, run.Z_query[0])
    assert np.allclose(start, [-(row[row > 0] * np.log(row[row > 0])).sum() for row in c0])
    assert len(dynamics.eq110_errors(spec, run)) == spec.K
    with pytest.raises(ValueError, match="step_index"):
        dynamics.attention_entropy(spec, run, 3)


def test_equal_distinct_classes_and_the_prior_experiment():
    spec = dynamics.equal_distinct_classes(ss.syn_small(), weight=0.55)
    for n in range(spec.K):
        assert np.allclose(spec.P[n, spec.distinct[n]], spec.P[n, spec.distinct[n]][0])
    matches = dynamics.initial_prior(spec, eta_Y=10.0, z_scale=0.3, z0_generator=rng(1000), generator=rng(0))
    assert len(matches) == spec.K and all(len(pair) == 2 for pair in matches)
    # the same two generators give the same run
    assert matches == dynamics.initial_prior(spec, eta_Y=10.0, z_scale=0.3, z0_generator=rng(1000), generator=rng(0))
    with pytest.raises(ValueError, match="z0_generator"):
        dynamics.initial_prior(spec, eta_Y=10.0, z_scale=0.3, z0_generator=1000, generator=rng(0))


def test_adam_winner_is_a_distinct_token_of_class_1():
    spec = ss.syn_small()
    winner, attention = dynamics.adam_winner(spec, 0.5, generator=rng(0))
    assert spec.distinct[0, winner] and attention.shape == (20,)


def test_fig6_comparison_is_zero_on_the_authors_own_means():
    grid = ss.Fig6Grid(num_last=(1, 3), eta_Z=(0.5, 3.0), ratios=ss.FIG6.ratios, seeds=(1, 2))
    ref = ss.FIG6_AUTHORS_MEAN[np.ix_([0, 1], [0, 3])]
    fake = ss.SweepResult(grid=grid, entropy=np.repeat(ref[..., None], 2, axis=-1), attention=[])
    comparison = dynamics.fig6_against_authors(fake)
    assert np.array_equal(comparison.ref_mean, ref) and np.all(comparison.z_scores == 0)
    assert comparison.threshold == pytest.approx(3.0, abs=0.3)  # Bonferroni over 16 cells at 5%
    with pytest.raises(ValueError, match="sweep"):
        dynamics.fig6_against_authors(grid)


def test_recall_entropy_correlation_on_a_small_sweep():
    sweep = ss.fig6_sweep(ss.Fig6Grid(num_last=(1,), eta_Z=(1.0,), ratios=(1, 2, 5), seeds=(1, 2)))
    correlations = dynamics.recall_entropy_correlation(sweep)
    assert list(correlations) == [2] and -1 <= correlations[2] <= 1
