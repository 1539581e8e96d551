"""Unit tests of the 19-dimensional subspace part of icllib.induction (Theorem 1, App. A, App. C-D)."""

import numpy as np
import pytest
import torch

from icllib.induction import model as ic
from icllib.induction import subspace as isp
from icllib.induction import subspace_theory as theory
from icllib.config import torch_generator

torch.set_num_threads(1)


def _random_weights(D, generator, scale=1.0):
    return (scale * torch.randn(2 * D, 2 * D, dtype=torch.float64, generator=generator),
            scale * torch.randn(4 * D, 4 * D, dtype=torch.float64, generator=generator),
            scale * torch.randn(8 * D, D, dtype=torch.float64, generator=generator))


def _random_structured(D, generator, scale=0.3):
    c = scale * torch.randn(19, dtype=torch.float64, generator=generator)
    return c, ic.structured_weights(c, D)


# --- item 1: the model ------------------------------------------------------------------------------


def test_activation_shapes_and_parameter_count():
    N, D = 3, 4
    X, y = ic.sample_icl_batch(D, N, 5, generator=torch_generator(0))
    states = ic.disentangled_states(X, *_random_weights(D, torch_generator(1), 0.1))
    assert states["T"].shape == (5, 2 * N + 1, 2 * N + 1) and states["Q"].shape == (5, 2 * N + 1, 2 * N + 1)
    assert states["U"].shape == (5, 2 * N + 1, 4 * D) and states["V"].shape == (5, 2 * N + 1, 8 * D)
    assert states["z"].shape == (5, D)
    assert states["S"].shape == states["P"].shape == (5, 2 * N + 1, 2 * N + 1)
    W1, W2, _ = _random_weights(D, torch_generator(1), 0.1)
    assert torch.allclose(states["S"], X @ W1 @ X.transpose(-1, -2))
    assert torch.allclose(states["P"], states["U"] @ W2 @ states["U"].transpose(-1, -2))
    assert torch.equal(states["T"], ic.causal_softmax(states["S"]))
    assert isp.parameter_count(D) == 28 * D * D and isp.parameter_count(16) == 7168
    assert len(ic.PSEUDO_PARAMETERS) == 19


def test_strict_mask_in_the_model_zero_first_row_and_no_self_attention():
    X, _ = ic.sample_icl_batch(4, 3, 2, generator=torch_generator(2))
    states = ic.disentangled_states(X, *_random_weights(4, torch_generator(3), 0.5))
    for A in (states["T"], states["Q"]):
        assert torch.all(A[:, 0] == 0)
        assert torch.all(A.triu() == 0)                       # j >= i never attended
        assert torch.allclose(A[:, 1:].sum(-1), torch.ones(2, 6, dtype=torch.float64))
    assert torch.all(states["U"][:, 0, 8:] == 0)              # (T X)_1 = 0


def test_module_is_the_functional_model_with_28_D_squared_parameters():
    D = 4
    X, _ = ic.sample_icl_batch(D, 3, 2, generator=torch_generator(6))
    W = _random_weights(D, torch_generator(7), 0.3)
    model = ic.DisentangledTransformer(D, weights=W)
    assert [name for name, _ in model.named_parameters()] == ["W1", "W2", "W3"]
    assert sum(p.numel() for p in model.parameters()) == 28 * D * D
    assert all(p.dtype == torch.float64 for p in model.parameters())
    assert torch.equal(model(X), ic.disentangled_forward(X, *W))
    zero = ic.DisentangledTransformer(D)
    assert all(torch.all(p == 0) for p in zero.parameters()) and torch.all(zero(X) == 0)
    single = ic.DisentangledTransformer(D, weights=W, dtype=torch.float32)
    assert torch.allclose(single(X.float()).double(), model(X).detach(), atol=1e-4)
    model(X).sum().backward()
    assert all(p.grad is not None and p.grad.shape == p.shape for p in model.parameters())


def test_forward_is_the_read_out_of_the_states():
    X, _ = ic.sample_icl_batch(4, 2, 3, generator=torch_generator(4))
    W = _random_weights(4, torch_generator(5), 0.3)
    assert torch.equal(ic.disentangled_forward(X, *W), ic.disentangled_states(X, *W)["z"])


# --- item 2: the basis ------------------------------------------------------------------------------


@pytest.mark.parametrize("D", [2, 4, 6])
def test_basis_is_orthogonal_with_squared_norm_D(D):
    B = isp.subspace_basis(D)
    assert B.shape == (19, 28 * D * D)
    assert torch.equal(B @ B.T, D * torch.eye(19, dtype=torch.float64))


def test_round_trip_projection_idempotent_and_residual():
    D = 6
    c, W = _random_structured(D, torch_generator(6))
    assert torch.allclose(isp.pseudo_parameter_vector(*W), c, atol=1e-15)
    named = dict(zip(ic.PSEUDO_PARAMETERS, c.tolist()))
    assert isp.pseudo_params(*ic.structured_weights(named, D)) == pytest.approx(named, abs=1e-15)
    only_head = isp.pseudo_params(*ic.structured_weights({"alpha3": 0.5, "beta2": -1.0, "gamma3": 2.0}, D))
    assert only_head == pytest.approx({name: {"alpha3": 0.5, "beta2": -1.0, "gamma3": 2.0}.get(name, 0.0)
                                       for name in ic.PSEUDO_PARAMETERS}, abs=1e-15)
    assert isp.subspace_residual(*W) == pytest.approx((0, 0, 0), abs=1e-15)
    assert isp.pseudo_parameter_vector(*W)[list(ic.INDUCTION_INDICES)].tolist() == pytest.approx(
        ic.induction_coordinates(*W), abs=1e-15)
    R = _random_weights(D, torch_generator(7))
    P = isp.project_structured(*R)
    PP = isp.project_structured(*P)
    assert all(torch.allclose(a, b, atol=1e-14) for a, b in zip(P, PP))
    # the residual is orthogonal to the subspace
    assert torch.allclose(isp.pseudo_parameter_vector(*(a - b for a, b in zip(R, P))), torch.zeros(19, dtype=torch.float64),
                          atol=1e-14)
    assert all(0.9 < r < 1.0 for r in isp.subspace_residual(*R))
    assert torch.equal(isp.unflatten_weights(isp.flatten_weights(*R), D)[1], R[1])


# --- items 3-4: the group, equivariance, exact orbit averaging ------------------------------------


def test_random_rotation_is_orthogonal_and_F_commutes_with_M():
    E, F = isp.random_rotation(8, generator=torch_generator(8))
    eye, M = torch.eye(8, dtype=torch.float64), ic.rotation_M(8)
    assert torch.allclose(E @ E.T, eye, atol=1e-13) and torch.allclose(F @ F.T, eye, atol=1e-13)
    assert torch.allclose(F @ M, M @ F, atol=1e-13)


@pytest.mark.parametrize("strict", [True, False])
def test_gradient_equivariance_at_structured_weights_only(strict):
    D, generator = 8, torch_generator(9)
    X, y = ic.sample_icl_batch(D, 4, 1, generator=generator)
    E, F = isp.random_rotation(D, generator=generator)
    X_rot, y_rot = isp.rotate_data(X, y, E, F)
    for W, expect_equal in ((_random_structured(D, generator)[1], True), (_random_weights(D, generator, 0.1), False)):
        _, g = isp.loss_and_grads(X, y, *W, strict=strict)
        _, g_rot = isp.loss_and_grads(X_rot, y_rot, *W, strict=strict)
        # g(W; h.x) = rho(h)^{-1} g(W; x) at a fixed point W of rho; rho is orthogonal, so apply it to g_rot
        back = isp.rho(E, F, *g_rot)
        errors = [float((a - b).norm() / b.norm()) for a, b in zip(back, g)]
        assert (max(errors) < 1e-13) == expect_equal


def test_loss_identity_defining_rho_holds_for_any_weights():
    D, generator = 4, torch_generator(10)
    X, y = ic.sample_icl_batch(D, 3, 4, generator=generator)
    W = _random_weights(D, generator, 0.2)
    E, F = isp.random_rotation(D, generator=generator)
    loss_rot, _ = isp.loss_and_grads(*isp.rotate_data(X, y, E, F), *W)
    loss_rho, _ = isp.loss_and_grads(X, y, *isp.rho(E, F, *W))
    assert loss_rot == pytest.approx(loss_rho, rel=1e-12)


@pytest.mark.parametrize("d", [1, 2, 4, 8])
def test_hadamard_cyclic_group_averages_to_the_trace(d):
    G = isp.hadamard_cyclic_group(d)
    A = torch.randn(d, d, dtype=torch.float64, generator=torch_generator(11))
    assert G.shape == (d * d, d, d)
    assert torch.allclose(G @ G.transpose(1, 2), torch.eye(d, dtype=torch.float64).expand(d * d, d, d))
    average = (G.transpose(1, 2) @ A @ G).mean(0)
    assert torch.allclose(average, torch.trace(A) / d * torch.eye(d, dtype=torch.float64), atol=1e-14)


def test_orbit_average_of_the_gradient_is_its_projection():
    D, generator = 4, torch_generator(12)
    E, F = isp.orbit_rotations(D)
    assert E.shape == F.shape == (2 * D * D, D, D)
    X, y = ic.sample_icl_batch(D, 3, 2, generator=generator)
    _, W = _random_structured(D, generator)
    _, g_plain = isp.loss_and_grads(X, y, *W)
    _, g_sym = isp.loss_and_grads(*isp.symmetrise(X, y), *W)
    projected = isp.project_structured(*g_plain)
    assert all(torch.allclose(a, b, atol=1e-13) for a, b in zip(g_sym, projected))
    assert max(isp.subspace_residual(*g_sym)) < 1e-13 and min(isp.subspace_residual(*g_plain)) > 1e-3


# --- item 6 and training ----------------------------------------------------------------------------


def test_training_modes_structural_zero_and_subspaces():
    generator = torch_generator(13)
    full = isp.train_sgd(3, 4, steps=5, batch=32, lr=1.0, generator=generator)
    assert full["coords"].shape == (6, 19) and full["residual"].shape == (6, 3) and full["loss"].shape == (6,)
    assert full["grad_row2"].max() == 0.0 and full["w2_row2"].max() == 0.0
    assert full["residual"][-1].min() > 1e-3
    assert isp.subspace_residual(*full["weights"]) == pytest.approx(tuple(full["residual"][-1]), abs=1e-15)
    three = isp.train_sgd(3, 4, steps=5, batch=32, lr=1.0, generator=torch_generator(13), training="three")
    others = [k for k in range(19) if k not in ic.INDUCTION_INDICES]
    assert abs(three["coords"][:, others]).max() < 1e-15 and three["residual"].max() < 1e-13
    sym = isp.train_sgd(3, 4, steps=5, batch=2, lr=1.0, generator=torch_generator(13), training="symmetrised")
    assert sym["residual"].max() < 1e-13


# --- bad input --------------------------------------------------------------------------------------


def test_bad_input_raises():
    W = ic.structured_weights({}, 4)
    E, F = isp.random_rotation(4, generator=torch_generator(0))
    X, y = ic.sample_icl_batch(4, 2, 3, generator=torch_generator(0))
    with pytest.raises(ValueError, match="D"):
        isp.parameter_count(1)
    with pytest.raises(ValueError, match="D"):
        isp.subspace_basis(3)
    with pytest.raises(ValueError, match="W2"):
        isp.pseudo_parameter_vector(W[0], W[0], W[2])
    with pytest.raises(ValueError, match="W1"):
        isp.subspace_residual(torch.zeros(3, 3), W[1], W[2])
    with pytest.raises(ValueError, match="W3"):
        isp.pseudo_params(W[0], W[1], W[1])
    with pytest.raises(ValueError, match="D"):
        ic.DisentangledTransformer(3)
    with pytest.raises(ValueError, match="weights"):
        ic.DisentangledTransformer(8, weights=W)
    with pytest.raises(ValueError, match="snapshots"):
        isp.train_sgd(2, 4, steps=3, batch=4, lr=1.0, generator=torch_generator(0), snapshots=(5,))
    with pytest.raises(ValueError, match="vector"):
        isp.unflatten_weights(torch.zeros(5), 4)
    with pytest.raises(ValueError, match="generator"):
        isp.random_rotation(4, generator=0)
    with pytest.raises(ValueError, match="F"):
        isp.rotate_data(X, y, E, F[:2])
    with pytest.raises(ValueError, match="y"):
        isp.rotate_data(X, y[:1], E, F)
    with pytest.raises(ValueError, match="E"):
        isp.rho(E.expand(2, 4, 4), F.expand(2, 4, 4), *W)
    with pytest.raises(ValueError, match="d"):
        isp.hadamard_cyclic_group(6)
    with pytest.raises(ValueError, match="D"):
        isp.orbit_rotations(6)
    with pytest.raises(ValueError, match="X"):
        isp.symmetrise(X[0], y[0])
    with pytest.raises(ValueError, match="y"):
        isp.loss_and_grads(X, y[:2], *W)
    with pytest.raises(ValueError, match="training"):
        isp.train_sgd(2, 4, steps=1, batch=1, lr=1.0, generator=torch_generator(0), training="adam")
    with pytest.raises(ValueError, match="lr"):
        isp.train_sgd(2, 4, steps=1, batch=1, lr=-1.0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="symmetrised"):
        isp.train_sgd(2, 6, steps=1, batch=1, lr=1.0, generator=torch_generator(0), training="symmetrised")


# --- item 7: the standard transformer of Sec. 2 ---------------------------------------------------


def test_standard_task_pairs_query_and_offsets():
    tokens, positions, target = isp.standard_task(64, generator=torch_generator(20))
    assert tokens.shape == positions.shape == (64, 17) and target.shape == (64,)
    for row in range(64):
        context = tokens[row, :16].tolist()
        assert len(set(context)) == 16                          # 16 distinct tokens
        item = int(tokens[row, 16])
        index = context.index(item)
        assert index % 2 == 0 and context[index + 1] == int(target[row])
    assert torch.all(positions[:, 1:] - positions[:, :-1] == 1)
    assert positions.min() >= 0 and positions.max() <= 31


def test_standard_transformer_shapes_mask_and_training_step():
    model = isp.StandardTransformer(8, generator=torch_generator(21))
    tokens, positions, _ = isp.standard_task(5, generator=torch_generator(22))
    assert model(tokens, positions).shape == (5, 32)
    A = model.previous_position_attention()
    assert A.shape == (32, 32) and torch.all(A.triu(1) == 0)
    assert torch.allclose(A.sum(-1), torch.ones(32))
    streams = model.residual_streams(tokens, positions)
    assert len(streams) == 3 and all(h.shape == (5, 17, 8) for h in streams)
    assert torch.equal(streams[0], model.E[tokens] + model.P[positions])
    assert torch.equal(streams[-1][:, -1] @ model.W_out.T, model(tokens, positions))
    trained, losses = isp.train_standard(8, steps=3, batch=4, generator=torch_generator(23))
    assert losses.shape == (3,) and np.all(np.isfinite(losses))
    assert 0.0 <= isp.standard_accuracy(trained, 16, generator=torch_generator(24)) <= 1.0


def test_standard_forward_is_the_last_row_of_the_residual_streams():
    model = isp.StandardTransformer(16, generator=torch_generator(25)).double()
    tokens, positions, _ = isp.standard_task(7, generator=torch_generator(26))
    with torch.no_grad():
        full = model.residual_streams(tokens, positions)[-1][:, -1] @ model.W_out.T
        assert torch.allclose(model(tokens, positions), full, rtol=0, atol=1e-12)


def test_standard_bad_input_raises():
    with pytest.raises(ValueError, match="vocab"):
        isp.standard_task(2, generator=torch_generator(0), vocab=10)
    with pytest.raises(ValueError, match="block"):
        isp.standard_task(2, generator=torch_generator(0), block=16)
    with pytest.raises(ValueError, match="generator"):
        isp.StandardTransformer(8, generator=None)
    with pytest.raises(ValueError, match="weight_decay"):
        isp.train_standard(8, steps=1, batch=1, generator=torch_generator(0), weight_decay=-1.0)
    with pytest.raises(ValueError, match="model"):
        isp.standard_accuracy(None, 4, generator=torch_generator(0))


def test_propositions_in_sympy_and_batched_rotations():
    exact = theory.sympy_propositions()
    for matrix in (exact["prop1"], exact["prop2"], *exact["prop4"]):
        assert all(entry == 0 for entry in matrix)
    assert any(entry != 0 for entry in exact["prop1_rotations_only"])   # SO(2) alone keeps the antisymmetric part
    E, F = isp.random_rotation(6, generator=torch_generator(3), count=4)
    assert E.shape == F.shape == (4, 6, 6)
    eye = torch.eye(6, dtype=torch.float64)
    assert torch.allclose(E @ E.transpose(-1, -2), eye, atol=1e-13)
    assert torch.allclose(F @ ic.rotation_M(6) @ F.transpose(-1, -2), ic.rotation_M(6), atol=1e-14)
    single = isp.random_rotation(6, generator=torch_generator(3))
    first = isp.random_rotation(6, generator=torch_generator(3), count=1)
    assert all(torch.equal(a, b[0]) for a, b in zip(single, first))
    with pytest.raises(ValueError, match="count"):
        isp.random_rotation(6, generator=torch_generator(3), count=0)


# --- the chapter's bookkeeping (section 5 of the module) ----------------------------------------------


def test_basis_and_equivariance_helpers():
    c, W = _random_structured(4, torch_generator(0))
    assert max(isp.basis_errors(c, _random_weights(4, torch_generator(1)), 4)) < 1e-12
    with pytest.raises(ValueError, match="weights"):
        isp.basis_errors(c, _random_weights(2, torch_generator(1)), 4)
    assert isp.equivariance_error(W, strict=True, generator=torch_generator(2)) < 1e-12
    assert isp.equivariance_error(_random_weights(4, torch_generator(3), 0.3), strict=False,
                                  generator=torch_generator(2)) > 0.01
    with pytest.raises(TypeError, match="strict"):
        isp.equivariance_error(W, strict=1, generator=torch_generator(2))
    X, y = ic.sample_icl_batch(4, 3, 2, generator=torch_generator(4))
    assert isp.a73_chain_rule_error(X, y, _random_weights(4, torch_generator(5), 0.3)) < 1e-12


def test_averages():
    E, F = isp.random_rotation(4, generator=torch_generator(0), count=2000)
    A = torch.randn(4, 4, dtype=torch.float64, generator=torch_generator(1))
    target = torch.trace(A) / 4 * torch.eye(4, dtype=torch.float64)
    assert isp.haar_z_score(E @ A @ E.transpose(-1, -2), target) < 5
    assert isp.haar_z_score(E @ A @ E.transpose(-1, -2), target + 1.0) > 5
    assert isp.orbit_average_error(A, *isp.orbit_rotations(4)) < 1e-13
    with pytest.raises(ValueError, match="target"):
        isp.haar_z_score(E @ A, target[:2])


def test_plateau_exit_rebound_and_hypotheses():
    loss = np.array([4.0, 3.5, 1.9, 1.0, 0.5, 0.5, 2.0, 2.0])
    assert isp.plateau_exit(loss, 4) == 2
    assert isp.rebound(loss, 2, window=2) == pytest.approx(4.0)
    with pytest.raises(ValueError, match="exit_step"):
        isp.rebound(loss, 7, window=2)
    coords = np.zeros((2, 19))
    coords[-1, list(ic.INDUCTION_INDICES)] = [1.0, 2.0, 3.0]
    coords[-1, 0] = 0.5
    full = {"loss": loss, "coords": coords}
    summary = isp.hypotheses_summary(full, {"loss": loss, "coords": coords}, 4)
    assert summary["on_top"] and summary["margin"] == pytest.approx(2.0) and summary["ok"]
    with pytest.raises(ValueError, match="three"):
        isp.hypotheses_summary(full, {"loss": loss}, 4)
    long = {"loss": np.r_[4.0, 3.5, 1.9, np.full(20, 0.5), np.full(20, 2.0)], "coords": coords}  # a 20-step window
    summary = isp.hypotheses_summary(long, long, 4)
    header, rows = isp.hypotheses_table([("Fig. 4", (4, 2), {"full": long, "three": long}, summary)])
    assert len(header) == len(rows[0]) == 8
    assert rows[0][:6] == ["Fig. 4", 4, 2, 2, 2, True] and rows[0][6:] == ["x4.0", "x4.0"]
    with pytest.raises(ValueError, match="compared"):
        isp.hypotheses_table([("Fig. 4", (4, 2), {"full": long}, summary)])


def test_ablation_and_appc_rows():
    run = isp.train_sgd(2, 4, steps=4, batch=8, lr=1.0, generator=torch_generator(0), snapshots=(2, 4))
    X, y = ic.sample_icl_batch(4, 2, 16, generator=torch_generator(1))
    ablated, loss = isp.ablation_losses(run["weights"], X, y)
    assert ablated.shape == (19,) and np.isfinite(loss)
    table, shares, head_on_top = isp.appc_rows({2: ((2, 4), run)})
    assert len(table) == len(shares) == 2 and len(head_on_top) == 1 and all(0 <= s <= 1 for s in shares)


def test_span_remainder_and_rows():
    basis = torch.eye(6, dtype=torch.float64)
    stream = torch.randn(5, 6, dtype=torch.float64, generator=torch_generator(0))
    assert isp.span_remainder(stream, [basis[:, :3], basis[:, 3:]]) < 1e-14
    assert isp.span_remainder(stream, [basis[:, :3]]) > 0.1
    run = {"settings": {"init": "gpt2", "seed": 1}, "loss_first": 3.4, "loss_last20": 0.1, "accuracy": 0.99,
           "previous_weight": 0.3, "previous_weight_untrained": 0.1, "device": "cuda (H200)"}
    assert isp.wide_run_rows([run])[0][-1] == "cuda"
    with pytest.raises(ValueError, match="runs"):
        isp.wide_run_rows([{}])


def test_checks_and_their_reasons():
    for key, check in isp.CHECKS.items():
        assert len(check["why"]) > 20 and set(check) - {"why"} <= {"expected", "rtol", "atol", "lower", "upper"}
    args = isp.check_args("fig2-subdiagonal", untrained=0.123, D=256)
    assert "0.12" in args["why"] and "width 256" in args["why"] and args["lower"] == 0.5
    with pytest.raises(ValueError, match="key"):
        isp.check_args("no-such-check")


def test_the_subdiagonal_read_on_the_scores():
    scores = torch.zeros(4, 4, dtype=torch.float64)
    scores[1, 0] = scores[2, 1] = 1.0
    scores[3, 3] = 5.0                        # row 3 misses by 5: its arg-max is the diagonal
    scores[0, 3] = scores[1, 3] = 9.0         # keys after the query are masked, whatever their score
    assert isp.subdiagonal_margins(scores).tolist() == [1.0, 1.0, -5.0]
    scores[3, 3] = 0.0                        # a tie is not an arg-max
    assert isp.subdiagonal_margins(scores)[-1] == 0.0
    model = isp.StandardTransformer(8, generator=torch_generator(0))
    attention = torch.softmax(model.positional_scores().masked_fill(torch.ones(32, 32).triu(1).bool(), -torch.inf), -1)
    assert torch.allclose(attention, model.previous_position_attention(), atol=1e-6)
    for bad in (torch.zeros(3), torch.zeros(2, 3), torch.zeros(1, 1)):
        with pytest.raises(ValueError, match="scores"):
            isp.subdiagonal_margins(bad)
