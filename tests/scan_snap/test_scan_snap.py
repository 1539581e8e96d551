"""Unit tests of icllib.scan_snap.model: data, model and gradient, training, the clock, scan and snap, bad input."""

import numpy as np
import pytest
import torch

from icllib.scan_snap import model as ss
from icllib.scan_snap import theory as sst
from icllib.config import rng


SHORT_RUN = ss.RunSize(steps=20, batch_size=32, T=64)
#: Fig. 3's sizes (K, M) and rate eta_Z, at one decoder rate.
FIG3 = dict(K=sst.SNAP_FIGURES.K, M=sst.SNAP_FIGURES.M, eta_Y=2.0, eta_Z=sst.SNAP_FIGURES.eta_Z)


@pytest.fixture(scope="module")
def small():
    return ss.syn_small()


# --- sequence classes -------------------------------------------------------------------------------------


def test_syn_small_layout(small):
    assert (small.K, small.M) == (2, 34)
    assert small.query.tolist() == [30, 31] and small.next_token.tolist() == [32, 33]
    assert small.common.sum() == 10 and small.distinct.sum() == 20
    np.testing.assert_allclose(small.P[0, 0], 1 / 15.5)
    np.testing.assert_allclose(small.P[0, 10:20], np.linspace(0.1, 1.0, 10) / 15.5)
    assert np.all(small.P[:, 30:] == 0)


@pytest.mark.parametrize("num_last, K, M", [(1, 2, 33), (3, 6, 79), (5, 10, 125), (10, 20, 240)])
def test_syn_medium_sizes(num_last, K, M):
    spec = ss.syn_medium(num_last)
    assert (spec.K, spec.M) == (K, M)
    assert len(set(spec.query.tolist())) == num_last  # two next tokens share each query token
    np.testing.assert_allclose(spec.P.sum(axis=1), 1.0)
    assert np.all(spec.distinct.sum(axis=1) == 10)


def test_entropy_at_zero_matches_authors_initial_value(small):
    assert ss.distinct_token_entropy(small, np.zeros((small.M, small.M))) == pytest.approx(2.1513, abs=1e-4)


def test_sample_counts_shape_and_law(small):
    classes, counts = ss.sample_counts(small, 4000, 128, generator=rng(0))
    assert counts.shape == (4000, small.M) and np.all(counts.sum(axis=1) == 127)
    mean = counts[classes == 0].mean(axis=0) / 127
    # Multinomial mean: the standard error of a frequency over ~2000 x 127 draws is < 1e-3.
    np.testing.assert_allclose(mean, small.P[0], atol=4e-3)


def test_sample_sequences_has_the_same_law(small):
    classes, tokens = ss.sample_sequences(small, 4000, 128, generator=rng(1))
    counts = ss.token_counts(tokens[classes == 1], small.M)
    np.testing.assert_allclose(counts.mean(axis=0) / 127, small.P[1], atol=4e-3)


# --- model and gradient -----------------------------------------------------------------------------------


def test_reparameterisation_equals_embedding_model():
    generator = rng(0)
    M, d = 12, 16
    U = generator.normal(size=(M, d))
    W_Q, W_K, W_V = (generator.normal(size=(d, d)) / np.sqrt(d) for _ in range(3))
    tokens = generator.integers(0, M - 2, size=30)
    Y = U @ W_V.T @ U.T
    Z = U @ W_Q @ W_K.T @ U.T / np.sqrt(d)
    assert ss.embedding_objective(U, W_Q, W_K, W_V, tokens, M - 2, M - 1) == pytest.approx(
        ss.yz_objective(Y, Z, tokens, M - 2, M - 1), abs=1e-12)


def test_gradients_agree_with_autograd(small):
    generator = rng(3)
    Y = generator.normal(size=(small.M, small.M))
    Z = generator.normal(size=(small.M, small.M))
    classes, tokens = ss.sample_sequences(small, 8, 20, generator=generator)
    counts = ss.token_counts(tokens, small.M)
    J_c, dY_c, dZ_c = ss.lemma1_gradient_counts(small, Y, Z, classes, counts)
    J_s, dY_s, dZ_s = ss.lemma1_gradient_sequences(small, Y, Z, classes, tokens)
    Y_t, Z_t = torch.tensor(Y, requires_grad=True), torch.tensor(Z, requires_grad=True)
    objectives = []
    for c, row in zip(classes, tokens):
        row_t = torch.tensor(row)
        b = torch.softmax(Z_t[small.query[c], row_t], 0)
        v = torch.zeros(small.M, dtype=torch.float64).index_add(0, row_t, b)  # X^T b_T
        objectives.append(torch.log_softmax(Y_t.T @ (v / v.norm()), 0)[small.next_token[c]])
    J = torch.stack(objectives).mean()
    J.backward()
    assert J_c == pytest.approx(J.item(), abs=1e-12) and J_s == pytest.approx(J.item(), abs=1e-12)
    for ours in (dY_c, dY_s):
        np.testing.assert_allclose(ours, Y_t.grad.numpy(), atol=1e-12)
    for ours in (dZ_c, dZ_s):
        np.testing.assert_allclose(ours, Z_t.grad.numpy(), atol=1e-12)
    np.testing.assert_allclose(dY_c.sum(axis=1), 0, atol=1e-14)
    np.testing.assert_allclose(dZ_c.sum(axis=1), 0, atol=1e-14)


def test_attention_distribution_rows_and_shapes(small):
    Z = rng(4).normal(size=(small.M, small.M))
    c_full = ss.attention_distribution(small, Z)
    c_rows = ss.attention_distribution(small, Z[small.query])
    np.testing.assert_allclose(c_full, c_rows)
    np.testing.assert_allclose(c_full.sum(axis=1), 1.0)
    assert np.all(c_full[small.P == 0] == 0)


def test_entropy_is_zero_when_one_distinct_token_dominates(small):
    Z = np.zeros((small.M, small.M))
    Z[small.query[0], 19] = Z[small.query[1], 29] = 60.0
    assert ss.distinct_token_entropy(small, Z) == pytest.approx(0.0, abs=1e-20)
    assert ss.distinct_token_entropy(small, Z, per_class=True).shape == (2,)


# --- training ---------------------------------------------------------------------------------------------


def test_train_zero_init_keeps_row_sums_and_is_deterministic(small):
    first = ss.train_yz(small, eta_Y=1.0, eta_Z=1.0, run=SHORT_RUN, generator=rng(5), record_every=5)
    second = ss.train_yz(small, eta_Y=1.0, eta_Z=1.0, run=SHORT_RUN, generator=rng(5), record_every=5)
    np.testing.assert_array_equal(first.Z, second.Z)
    assert first.steps.tolist() == [0, 5, 10, 15, 20] and first.Z_query.shape == (5, 2, small.M)
    np.testing.assert_allclose(first.Y.sum(axis=1), 0, atol=1e-12)
    np.testing.assert_allclose(first.Z.sum(axis=1), 0, atol=1e-12)
    assert first.losses[-1] < first.losses[0]


def test_sgd_matches_torch_optimiser(small):
    """Our momentum SGD and Adam follow torch.optim on the same gradients."""
    generator = rng(6)
    for kind in ("sgd", "adam"):
        param = generator.normal(size=(4, 4))
        grads = generator.normal(size=(5, 4, 4))
        ours = ss._Optimizer(kind, 0.3, 0.9)
        theirs_param = torch.tensor(param.copy(), requires_grad=True)
        optimiser = (torch.optim.SGD([theirs_param], lr=0.3, momentum=0.9) if kind == "sgd"
                     else torch.optim.Adam([theirs_param], lr=0.3))
        for grad in grads:
            ours.step(param, grad)
            theirs_param.grad = torch.tensor(grad)
            optimiser.step()
        np.testing.assert_allclose(param, theirs_param.detach().numpy(), atol=1e-12)


def test_count_and_sequence_simulators_agree_in_distribution(small):
    entropies = {}
    for simulator in ("counts", "sequences"):
        entropies[simulator] = [ss.distinct_token_entropy(small, ss.train_yz(
            small, eta_Y=1.0, eta_Z=1.0, run=ss.RunSize(steps=30, batch_size=64, T=32), generator=rng(seed),
            simulator=simulator).Z)
            for seed in range(4)]
    gap = abs(np.mean(entropies["counts"]) - np.mean(entropies["sequences"]))
    spread = np.std(entropies["counts"] + entropies["sequences"])
    assert gap < 4 * spread / np.sqrt(4) + 1e-3


# --- decoder clock, scan and snap -------------------------------------------------------------------------


def test_clock_closed_form_solves_eq45():
    s = np.geomspace(1e-3, 1e10, 200)
    for M in (10, 1000, 100000):
        h = sst.decoder_clock_h(s, M, 0.3)
        rhs = M * 0.3 * s + 1
        np.testing.assert_allclose(np.exp(M * h) + (M - 1) * M * h, rhs, rtol=1e-11)
    assert sst.decoder_clock_h(0.0, 50, 1.0) == pytest.approx(0.0, abs=1e-15)


def test_clock_recursion_tracks_decoder_dynamics():
    w = sst.decoder_row_dynamics(200, 50, 0.7)
    h = sst.decoder_clock_h_star(200, 50, 0.7)
    zeta = 50 / 49 * (np.eye(50)[0] - 1 / 50)
    np.testing.assert_allclose(w, 49 * h[:, None] * zeta[None, :], atol=1e-12)


def test_lemma8_and_transition_time():
    omega0, omega1 = sst.lemma8_omegas(1000)
    assert omega0 == pytest.approx(2.9e-4, rel=0.01) and omega1 == pytest.approx(0.3198, abs=1e-4)
    assert sst.transition_time(K=10, M=1000, eta_Y=1.0) == pytest.approx(2 * 1.3198 * 10 * np.log(1000), rel=1e-4)


def test_theorem1_modified_update_matches_E_prime():
    F = np.zeros((400, 2))
    F[0] = 0.4
    F[1:11, 0] = F[11:21, 1] = 1.0
    F /= np.linalg.norm(F, axis=0)
    run = sst.decoder_run(F, eta_Y=0.5, steps=300, update="modified", generator=rng(0))
    coef, counts = run.coef, run.counts
    E_prime = np.eye(2) - np.linalg.inv(F.T @ F)
    assert counts.sum() == 300
    # Eq. 88 with the sign of its q_0 term corrected: beta/iota = E'_01/(1 - E'_00) + |q_0|, |q_0| = M/(M-1)^2.
    predicted = E_prime[0, 1] / (1 - E_prime[0, 0]) + 400 / 399**2
    assert -coef[0, 1] / coef[0, 0] == pytest.approx(predicted, rel=0.01)


def test_population_zdot_signs_and_eq98():
    P = np.array([[0.3, 0.3, 0.4, 0.0, 0.0], [0.3, 0.0, 0.0, 0.2, 0.5]])
    zdot, xi = sst.population_zdot(P, np.zeros(5), gamma=2.0, eta_Z=0.5)
    f = sst.normalised_attention(P, np.zeros(5))
    assert zdot[0] < 0 and np.all(zdot[1:] > 0) and np.all(xi > 0)
    np.testing.assert_allclose(zdot[1:3], 0.5 * f[0, 1:3] ** 2 * xi[0], rtol=1e-12)
    np.testing.assert_allclose(zdot[0], -0.5 * np.sum((1 - f[:, 0] ** 2) * xi), rtol=1e-12)


def test_snap_B_matches_ode_and_corrects_constant():
    t = np.concatenate([[0.0], np.geomspace(1e-2, 1e5, 50)])
    for C0 in (1.0, 3.0):
        np.testing.assert_allclose(sst.snap_B_ode(t, C0=C0, **FIG3), sst.snap_B(t, C0=C0, **FIG3),
                                   atol=1e-8)
    assert sst.snap_B(0.0, C0=3.0, **FIG3) == 0.0


def test_recall_counts_distinct_tokens(small):
    c = ss.attention_distribution(small, np.zeros((small.M, small.M)))
    recall = ss.distinct_token_recall(small, c, [0.0, 1.0])
    np.testing.assert_allclose(recall, [1.0, 0.0])


def test_authors_table_shape():
    assert ss.FIG6_AUTHORS_MEAN.shape == ss.FIG6_AUTHORS_STD.shape == tuple(len(axis) for axis in (ss.FIG6.num_last, ss.FIG6.eta_Z, ss.FIG6.ratios))
    assert ss.FIG6_AUTHORS_MEAN[3, 3, 3] == 1.875 and ss.FIG6_AUTHORS_STD[0, 3, 3] == 0.331


# --- bad input --------------------------------------------------------------------------------------------


def test_bad_probabilities_raise():
    with pytest.raises(ValueError, match="P"):
        ss.make_classes([[0.5, 0.6]], [0], [1])
    with pytest.raises(ValueError, match="P"):
        ss.make_classes([[-0.5, 1.5]], [0], [1])
    with pytest.raises(ValueError, match="next_token"):
        ss.make_classes([[0.5, 0.5], [0.5, 0.5]], [0, 0], [1, 1])
    with pytest.raises(ValueError, match="query"):
        ss.make_classes([[0.5, 0.5]], [5], [1])


def test_bad_sampling_arguments_raise(small):
    with pytest.raises(ValueError, match="T"):
        ss.sample_counts(small, 4, 1, generator=rng(0))
    with pytest.raises(ValueError, match="batch_size"):
        ss.sample_counts(small, 0, 10, generator=rng(0))
    with pytest.raises(ValueError, match="generator"):
        ss.sample_counts(small, 4, 10, generator=0)
    with pytest.raises(ValueError, match="spec"):
        ss.sample_counts("syn", 4, 10, generator=rng(0))
    with pytest.raises(ValueError, match="num_last"):
        ss.syn_medium(0)


@pytest.mark.parametrize("kwargs, name", [
    ({"eta_Y": -1.0}, "eta_Y"), ({"eta_Z": -0.1}, "eta_Z"),
    ({"optimizer": "rmsprop"}, "optimizer"), ({"momentum": 1.0}, "momentum"), ({"init": "ones"}, "init"),
    ({"simulator": "x"}, "simulator"), ({"run": (2, 4, 8)}, "run"), ({"generator": 0}, "generator"),
])
def test_bad_training_arguments_raise(small, kwargs, name):
    arguments = dict(eta_Y=1.0, eta_Z=1.0, run=ss.RunSize(steps=2, batch_size=4, T=8), generator=rng(0)) | kwargs
    with pytest.raises(ValueError, match=name):
        ss.train_yz(small, **arguments)


def test_bad_clock_and_snap_arguments_raise(small):
    with pytest.raises(ValueError, match="M"):
        sst.decoder_clock_h(1.0, 1, 0.5)
    with pytest.raises(ValueError, match="eta_Y"):
        sst.decoder_clock_h(1.0, 10, -0.5)
    with pytest.raises(ValueError, match="s"):
        sst.decoder_clock_h(-1.0, 10, 0.5)
    with pytest.raises(ValueError, match="eta_Z"):
        sst.snap_B(1.0, K=10, M=100, eta_Y=1.0, eta_Z=-1.0)
    with pytest.raises(ValueError, match="C0"):
        sst.snap_B(1.0, K=10, M=100, eta_Y=1.0, eta_Z=1.0, C0=0.0)
    with pytest.raises(ValueError, match="K"):
        sst.snap_B(1.0, K=0, M=100, eta_Y=1.0, eta_Z=1.0)
    with pytest.raises(ValueError, match="Z"):
        ss.attention_distribution(small, np.zeros((3, 3)))
    with pytest.raises(ValueError, match="update"):
        sst.decoder_run(np.eye(3)[:, :2], eta_Y=0.1, steps=2, update="other", generator=rng(0))
    with pytest.raises(ValueError, match="ratios"):
        ss.Fig6Grid(ratios=())
    with pytest.raises(ValueError, match="grid"):
        ss.fig6_sweep((1,))
    for name, value in (("steps", 0), ("batch_size", 0), ("T", 1)):
        with pytest.raises(ValueError, match=name):
            ss.RunSize(**{"steps": 2, "batch_size": 4, "T": 8, name: value})


def test_token_counts_matches_bincount_and_checks_its_input():
    tokens = np.array([[0, 2, 2, 1], [3, 3, 3, 3]])
    assert np.array_equal(ss.token_counts(tokens, 4), [[1, 1, 2, 0], [0, 0, 0, 4]])
    for bad in (np.array([0, 1]), np.array([[0, 4]]), np.array([[0.0, 1.0]])):
        with pytest.raises(ValueError, match="tokens"):
            ss.token_counts(bad, 4)


# --- Lemma 18, class counts and Corollary 1, the algebra of E', Theorem 5 -----------------------------------


def test_sample_class_counts_and_count_mixture(small):
    counts = ss.sample_class_counts(small, 1, 50, 40, generator=rng(0))
    assert counts.shape == (50, small.M) and np.all(counts.sum(axis=1) == 39)
    assert np.all(counts[:, small.P[1] == 0] == 0)
    z = rng(1).normal(size=small.M)
    classes, tokens = ss.sample_sequences(small, 6, 30, generator=rng(2))
    for row in tokens:  # X^T b_T computed from the sequence: softmax over positions, summed per token
        b = np.exp(z[row]) / np.exp(z[row]).sum()
        np.testing.assert_allclose(ss.count_mixture(ss.token_counts(row[None], small.M), z)[0],
                                   np.bincount(row, weights=b, minlength=small.M), atol=1e-15)


def test_hoeffding_radius():
    assert ss.hoeffding_radius(100, 0.05) == pytest.approx(np.sqrt(np.log(40) / 200))
    np.testing.assert_allclose(ss.hoeffding_radius(np.array([1, 4]), 0.5), np.sqrt(np.log(4) / 2) / np.array([1, 2]))


def test_decoder_residual_norm_matches_softmax():
    M, h = 50, 0.07
    zeta = M / (M - 1) * (np.eye(M)[0] - 1 / M)
    w = (M - 1) * h * zeta
    alpha = np.exp(w) / np.exp(w).sum()
    assert sst.decoder_residual_norm(h, M) == pytest.approx(np.linalg.norm(np.eye(M)[0] - alpha), rel=1e-13)
    assert sst.decoder_residual_norm(0.0, M) == pytest.approx(np.sqrt((M - 1) / M))
    assert 0.0 <= sst.decoder_residual_norm(50.0, M) < 1e-300  # exp(M h) would overflow; the stable form does not


def test_steps_to_residual_and_residual_time():
    M, eta = 200, 0.4
    for eps in (0.3, 0.05, 0.005):
        S = sst.steps_to_residual(eps, M, eta)
        h_star = sst.decoder_clock_h_star(S, M, eta)
        assert sst.decoder_residual_norm(h_star[-1], M) <= eps < sst.decoder_residual_norm(h_star[-2], M)
        t = sst.residual_time(eps, M, eta)
        assert sst.decoder_residual_norm(sst.decoder_clock_h(t, M, eta), M) == pytest.approx(eps, rel=1e-9)
        assert S <= np.ceil(t)  # h* >= h (Lemma 7)
    assert sst.residual_time(0.99999, M, eta) == 0.0  # already below eps at h = 0


def test_class_counts_theta_and_every_class():
    counts = sst.uniform_class_counts(300, 3, 20, generator=rng(0))
    assert counts.shape == (20, 3) and np.all(counts.sum(axis=1) == 300)
    np.testing.assert_allclose(sst.class_count_theta(np.array([100, 100, 100]), 1000, 0.5), 0.0, atol=1e-15)
    theta = sst.class_count_theta(np.array([[90, 110, 100]]), 1000, 0.5, discrete=True)
    h = sst.decoder_clock_h_star(110, 1000, 0.5)
    np.testing.assert_allclose(theta, [[h[90] / h[100] - 1, h[110] / h[100] - 1, 0.0]], rtol=1e-14)
    assert np.all(sst.steps_until_every_class(7, 1, 3, generator=rng(1)) == 7)
    totals = sst.steps_until_every_class(20, 4, 50, generator=rng(2))
    assert np.all(totals >= 80) and totals.mean() > 80



def test_class_count_sigma_is_the_residual_ratio_of_corollary1():
    M, eta = 200, 0.5
    np.testing.assert_allclose(sst.class_count_sigma(np.array([50, 50]), M, eta), 0.0, atol=1e-15)
    counts = np.array([[40, 60]])
    sigma = sst.class_count_sigma(counts, M, eta)
    # Direct evaluation: e_n - alpha_n = (M-1)/((M-1) + exp(M h(N_n))) zeta_n (Lemma 5, Eq. 71).
    residual = lambda s: 1.0 / ((M - 1) + np.exp(M * sst.decoder_clock_h(s, M, eta)))
    np.testing.assert_allclose(sigma, [[residual(40) / residual(50) - 1, residual(60) / residual(50) - 1]],
                               rtol=1e-10)
    assert sigma[0, 0] > 0 > sigma[0, 1]  # fewer steps leave a larger residual
    with pytest.raises(ValueError, match="counts"):
        sst.class_count_sigma(np.array([0, 0]), M, eta)


def test_one_sided_binomial_thresholds():
    from scipy.stats import binom

    for delta, n in ((0.05, 200), (0.1, 1000), (0.5, 2000)):
        ceiling, floor = ss.one_sided_ceiling(delta, n), ss.one_sided_floor(delta, n)
        k, j = round(ceiling * n), round(floor * n)
        assert binom.cdf(k, n, delta) <= 0.01 < binom.cdf(k + 1, n, delta)  # largest passing count
        assert binom.sf(j - 1, n, delta) <= 0.01 < binom.sf(j - 2, n, delta)  # smallest refuting count
        assert ceiling < delta < floor
    with pytest.raises(ValueError, match="cannot test"):
        ss.one_sided_ceiling(0.01, 10)
    for call, name in ((lambda: ss.one_sided_ceiling(1.0, 100), "delta"),
                       (lambda: ss.one_sided_floor(0.1, 0), "n"),
                       (lambda: ss.one_sided_floor(0.1, 100, false_pass=0.6), "false_pass")):
        with pytest.raises(ValueError, match=name):
            call()

def test_e_prime_algebra_on_random_and_two_class_matrices():
    E = sst.random_overlap_matrices(4, 200, generator=rng(3))
    assert np.allclose(E, E.transpose(0, 2, 1)) and np.all(np.diagonal(E, axis1=1, axis2=2) == 0) and np.all(E >= 0)
    lam1 = np.abs(np.linalg.eigvalsh(E)).max(axis=1)
    assert np.all((lam1 >= 0.05 - 1e-12) & (lam1 <= 0.9 + 1e-12))
    np.testing.assert_allclose(sst.e_prime(E), np.eye(4) - np.linalg.inv(np.eye(4) + E), atol=1e-15)
    checks = sst.e_prime_checks(E)
    for name in ("lemma13", "lemma15", "lemma17", "line974_corrected"):
        assert checks[name].max() <= 1e-12, name
    assert checks["lemma16"].max() < 0
    for name in ("lemma14_error", "lemma16_isolated", "eq79_error", "eq92_error"):
        assert checks[name].max() <= 1e-12, name
    rho = 0.3  # K = 2: -E'_11 = rho^2/(1 - rho^2), above the corrected bound and below the printed one
    two = sst.e_prime_checks(np.array([[0.0, rho], [rho, 0.0]]))
    assert float(two["line974_corrected"]) == pytest.approx(rho**2 / (1 + rho) - rho**2 / (1 - rho**2))
    assert float(two["line974_printed"]) == pytest.approx(rho**2 / (1 - rho) - rho**2 / (1 - rho**2))


def test_theorem5_matches_the_modified_dynamics():
    F = np.zeros((300, 3))
    F[0] = 0.5
    F[1:11, 0] = F[11:21, 1] = F[21:31, 2] = 1.0
    F /= np.linalg.norm(F, axis=0)
    A, counts = sst.decoder_in_span(F, eta_Y=0.5, steps=200, update="modified", generator=rng(4))
    A5, theta = sst.theorem5_coefficients(F, counts, 0.5)
    np.testing.assert_allclose(A, A5, atol=1e-12)
    np.testing.assert_allclose(theta, sst.class_count_theta(counts, 300, 0.5, discrete=True))
    run = sst.decoder_run(F, eta_Y=0.5, steps=200, update="modified", generator=rng(4))
    np.testing.assert_allclose(run.coef, sst.span_coefficients(F, A), atol=1e-15)
    assert np.array_equal(counts, run.counts) and np.array_equal(A, run.A)


def test_new_functions_reject_bad_input(small):
    cases = [
        (lambda: ss.sample_class_counts(small, 2, 5, 10, generator=rng(0)), "n"),
        (lambda: ss.sample_class_counts(small, 0, 0, 10, generator=rng(0)), "size"),
        (lambda: ss.sample_class_counts(small, 0, 5, 1, generator=rng(0)), "T"),
        (lambda: ss.count_mixture(np.zeros((2, 3)), np.zeros(3)), "counts"),
        (lambda: ss.count_mixture(np.ones((2, 3)), np.zeros(4)), "z"),
        (lambda: ss.hoeffding_radius(10, 1.0), "delta"),
        (lambda: ss.hoeffding_radius(0, 0.1), "n"),
        (lambda: ss.hoeffding_radius(2.5, 0.1), "n"),
        (lambda: sst.decoder_residual_norm(-1.0, 10), "h"),
        (lambda: sst.decoder_residual_norm(0.1, 1), "M"),
        (lambda: sst.steps_to_residual(1.5, 100, 0.5), "eps"),
        (lambda: sst.steps_to_residual(0.1, 100, 0.0), "eta_Y"),
        (lambda: sst.residual_time(np.array([0.1, 0.0]), 100, 0.5), "eps"),
        (lambda: sst.uniform_class_counts(0, 3, 5, generator=rng(0)), "N"),
        (lambda: sst.steps_until_every_class(0, 3, 5, generator=rng(0)), "S"),
        (lambda: sst.steps_until_every_class(5, 3, 5, generator=1), "generator"),
        (lambda: sst.class_count_theta(np.array([1.5, 2.0]), 100, 0.5), "counts"),
        (lambda: sst.class_count_theta(np.array([0, 0]), 100, 0.5), "counts"),
        (lambda: sst.e_prime(np.zeros((2, 3))), "E"),
        (lambda: sst.random_overlap_matrices(3, 5, generator=rng(0), lambda_range=(0.5, 1.2)), "lambda_range"),
        (lambda: sst.random_overlap_matrices(3, 5, generator=rng(0), density=1.5), "density"),
        (lambda: sst.random_overlap_matrices(1, 5, generator=rng(0)), "K"),
        (lambda: sst.e_prime_checks(np.array([[0.0, 0.2], [0.3, 0.0]])), "E"),
        (lambda: sst.e_prime_checks(np.array([[0.1, 0.2], [0.2, 0.0]])), "E"),
        (lambda: sst.e_prime_checks(np.array([[0.0, 1.2], [1.2, 0.0]])), "E"),
        (lambda: sst.decoder_in_span(np.eye(3)[:, :2], eta_Y=0.1, steps=2, update="x", generator=rng(0)), "update"),
        (lambda: sst.decoder_in_span(-np.eye(3)[:, :2], eta_Y=0.1, steps=2, update="plain", generator=rng(0)), "F"),
        (lambda: sst.span_coefficients(np.eye(3)[:, :2], np.zeros((3, 3))), "A"),
        (lambda: sst.theorem5_coefficients(np.eye(3)[:, :2], np.array([1, 2, 3]), 0.5), "counts"),
    ]
    for call, name in cases:
        with pytest.raises(ValueError, match=name):
            call()


def test_checks_name_registered_claims_with_their_reasons():
    from icllib.claims import registry

    claims = registry().claims
    checks = sst.CHECKS | ss.CHECKS
    assert len(checks) == len(sst.CHECKS) + len(ss.CHECKS)  # no key in both modules
    for key, check in checks.items():
        assert f"scan_snap.{key.split('#')[0]}" in claims, key
        assert len(check["why"]) > 20 and set(check) - {"why"} <= {"expected", "rtol", "atol", "lower", "upper"}
    assert sst.CHECKS["lemma13"]["why"].endswith(sst.ROUND_OFF)
