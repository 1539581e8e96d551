"""Unit tests of icllib.scan_snap.lemmas: each experiment of the chapter's first three sections against an
independent computation or the statement it serves, and bad input refused by name."""

import numpy as np
import pytest

from icllib.scan_snap import model as ss
from icllib.scan_snap import lemmas
from icllib.scan_snap import theory as sst
from icllib.config import rng


def test_relative_error_is_in_units_of_the_reference():
    assert lemmas.relative_error(np.array([1.0, 2.5]), np.array([1.0, 2.0])) == pytest.approx(0.25)
    with pytest.raises(ValueError, match="a and b"):
        lemmas.relative_error(np.ones(2), np.ones(3))


def test_number_table_formats_each_entry():
    header, rows = lemmas.number_table({"x": 0.5, "y": 1e-3}, "error", digits=".2f")
    assert header == ["", "error"] and rows == [["x", "0.50"], ["y", "0.00"]]
    with pytest.raises(ValueError, match="values"):
        lemmas.number_table({}, "error")


def test_autograd_reference_matches_lemma1_on_sequences():
    spec = ss.syn_small()
    generator = rng(1)
    Y, Z = generator.normal(size=(spec.M, spec.M)), 0.5 * generator.normal(size=(spec.M, spec.M))
    classes, sequences = ss.sample_sequences(spec, 8, 20, generator=generator)
    reference = lemmas.eq15_autograd(spec, Y, Z, classes, sequences)
    J, dY, dZ = ss.lemma1_gradient_sequences(spec, Y, Z, classes, sequences)
    assert reference.J == pytest.approx(J, abs=1e-12)
    assert lemmas.relative_error(dY, reference.dY) < 1e-12 and lemmas.relative_error(dZ, reference.dZ) < 1e-12
    assert reference.identity_gap < 1e-15
    with pytest.raises(ValueError, match="sequences"):
        lemmas.eq15_autograd(spec, Y, Z, classes, sequences[:-1])


def test_token_concentration_shrinks_like_the_hoeffding_radius():
    spec = ss.syn_small()
    result = lemmas.token_concentration(spec, np.zeros(spec.M), (100, 10000), delta=0.05, sequences=100,
                                        generator=rng(0))
    assert np.all(result.worst_deviation < result.radii * 1.5)
    assert result.mixture_error[1] < result.mixture_error[0] / 5  # a factor 10 at the T^-1/2 rate
    assert np.allclose(result.radii, ss.hoeffding_radius(np.array([100, 10000]), 0.05))
    with pytest.raises(ValueError, match="z"):
        lemmas.token_concentration(spec, np.zeros(3), (100,), delta=0.05, sequences=10, generator=rng(0))


def test_clock_experiments_meet_lemmas_5_to_8():
    ode, closed = lemmas.eq45_residuals((100,), 0.5, np.concatenate([[0.0], np.geomspace(1e-2, 1e6, 50)]))
    assert ode < 1e-6 and closed < 1e-11
    gaps = lemmas.lemma7_gaps((100,), (0.5, 0.99))
    assert gaps.shape == (2, 5) and gaps[:, 2].min() > -1e-15 and gaps[:, 3].max() <= 2
    curves = lemmas.clock_curves(100, (0.5,), shown_steps=10, long_steps=50)
    h_star, h_smooth, gap = curves[0.5]
    assert h_star.shape == (11,) and h_smooth.shape == (300,) and gap.shape == (50,) and np.all(gap < 1)
    omega0, omega1 = sst.lemma8_omegas(1000)
    ratio1, ratio0 = lemmas.lemma8_orders(1000)
    assert ratio1 == pytest.approx(omega1 * np.log(1000) / np.log(np.log(1000)))
    assert ratio0 == pytest.approx(omega0 * 1000**0.99 * np.log(1000))


def test_remark3_and_lemma9():
    rows = lemmas.remark3_conditions((1000,), (0.1, 0.99))
    assert rows.shape == (3, 4) and np.all(rows[:, 3] == 1)  # 10 M^-0.99 first, then the fixed rates
    speed = lemmas.speed_control_ratios(K=10, eta_Y=1.0, M_values=(100, 1000))
    assert speed.phase1.max() <= 1 + 1e-12 and len(speed.phase2_by_M) == 2
    assert all(p.max() > 2 for p in speed.printed_by_M)  # the form printed without M is off (scan_snap.E7)


def test_class_count_failures_against_a_direct_count():
    rows = lemmas.class_count_failures(500, 3, (0.1, 0.5), runs=400, generator=rng(2))
    counts = sst.uniform_class_counts(500, 3, 400, generator=rng(2))
    missed = np.abs(counts - np.ceil(500 / 3)) > 500 * ss.hoeffding_radius(500, 0.1) + 1
    assert rows["lemma10"][0] == missed.any(axis=1).mean() / ss.one_sided_ceiling(0.1, 400)
    assert rows["ceiling"] == [ss.one_sided_ceiling(0.1, 400), ss.one_sided_ceiling(0.5, 400)]


def test_join_columns_keeps_the_order_of_the_items():
    joined = lemmas.join_columns([{"a": [1, 2], "b": 3.0}, {"a": [4], "b": 5.0}])
    assert joined == {"a": [1, 2, 4], "b": [3.0, 5.0]}
    with pytest.raises(ValueError, match="rows"):
        lemmas.join_columns([{"a": 1}, {"b": 2}])


def test_clock_noise_failures_reads_the_late_phase_past_the_transition_only():
    rates, late = lemmas.clock_noise_failures(3, (1000, 0.5), runs=100, delta=0.1, steps_per_K2=200,
                                              generator=rng(1))
    assert set(rates) == {"Eq. 61", "Eq. 62", "Corollary 1"} and all(0 <= value <= 1 for value in rates.values())
    assert set(late) == {"printed", "proof", "corollary", "printed_q90"}
    early_rates, early_late = lemmas.clock_noise_failures(3, (20000, 0.01), runs=100, delta=0.1, steps_per_K2=200,
                                                          generator=rng(1))
    assert early_late is None and set(early_rates) == set(rates)
    with pytest.raises(ValueError, match="clock"):
        lemmas.clock_noise_failures(3, ((1000, 0.5),), runs=10, delta=0.1, steps_per_K2=2, generator=rng(1))


def test_corollary1_counts_match_the_theory_module():
    S, t_eps, bound = lemmas.corollary1_steps((100,), (0.5,), (0.1, 0.01))
    assert S.tolist() == [sst.steps_to_residual(eps, 100, 0.5) for eps in (0.1, 0.01)]
    assert np.all(S <= np.ceil(t_eps)) and np.all(S <= bound)
    total = lemmas.corollary1_total(0.1, K=3, M=100, eta_Y=0.5, runs=50, generator=rng(1))
    assert len(total) == 4 and total[1] >= 3 * total[0]  # every class needs its own S_n
    curves = lemmas.corollary1_curves(100, (0.5,), np.array([0.1, 0.01]))
    assert curves[0.5][0] == S.tolist()


def test_overlap_matrices_and_the_readings_of_e_prime():
    matrices, checks = lemmas.overlap_lemma_checks((2, 3), 20, generator=rng(0))
    assert len(matrices) == 2 and checks["lemma14_error"].max() < 1e-12
    misses = lemmas.e_prime_misses(matrices)
    assert misses["I - (I+E)^-1"].max() < 1e-12
    assert misses["(I+E)^-1 (printed)"].min() > 0.5 and misses["(I+E)^-1 - I (printed, minus restored)"].min() > 0.5


def test_overlapping_attention_has_the_requested_overlap():
    F = lemmas.overlapping_attention(3, 100, overlap=0.16, n_distinct=20)
    gram = F.T @ F
    assert np.allclose(np.diag(gram), 1) and np.allclose(gram[~np.eye(3, dtype=bool)], 0.16)
    with pytest.raises(ValueError, match="M"):
        lemmas.overlapping_attention(3, 10, overlap=0.16, n_distinct=20)


def test_theorem1_lemma3_and_eq88_on_a_small_vocabulary():
    F = lemmas.overlapping_attention(3, 100, overlap=0.16, n_distinct=20)
    E_prime = sst.e_prime(F.T @ F - np.eye(3))
    predicted = E_prime[0, 1] / (1 - E_prime[0, 0])
    run, modified = lemmas.theorem1_ratios(F, 0.5, update="modified", steps=1000, generator=rng(3))
    _, plain = lemmas.theorem1_ratios(F, 0.5, update="plain", steps=1000, generator=rng(3))
    # the modified update follows E' far better than the plain gradient (the chapter's scan_snap.E2)
    assert np.abs(modified / predicted - 1).max() < 0.1 < np.abs(plain / predicted - 1).min()
    gaps = lemmas.lemma3_one_step(F, E_prime, M=100, n=1, generator=rng(0))
    assert gaps["modified"] < 1e-12 and gaps["softmax"] < 1e-12 and gaps["plain"] > 1e-3
    identity_gap, miss = lemmas.eq88_readings(F, run.A, run.counts, E_prime, eta_Y=0.5)
    assert identity_gap < 1e-10 and max(miss["corrected"]) < 1e-10 and min(miss["printed"]) > 0.99
    with pytest.raises(ValueError, match="F"):
        lemmas.theorem1_ratios(2 * F, 0.5, update="modified", steps=10, generator=rng(3))
    with pytest.raises(ValueError, match="update"):
        lemmas.theorem1_ratios(F, 0.5, update="adam", steps=10, generator=rng(3))


def test_lemma12_theta_rows():
    rows = lemmas.lemma12_theta(3, ((20000, 0.01), (1000, 0.5)), runs=200, delta=0.1, steps_per_K2=20,
                                generator=rng(9))
    assert [row[:4] for row in rows] == [(3, 180, 20000, 0.01), (3, 180, 1000, 0.5)]
    assert all(0 <= row[4] <= 1 for row in rows)
