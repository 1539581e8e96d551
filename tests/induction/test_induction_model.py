"""Unit tests of icllib.induction.model: the task of Eqs. 2-5, the Eq. 1 model, the structured weights of
Eqs. 6-8 and the full network against the closed forms of App. B.3-B.4."""

import numpy as np
import pytest
import torch

from icllib.induction import model as ic
from icllib.induction import subspace as isp
from icllib.config import torch_generator

torch.set_num_threads(1)


# --- the task and the model -------------------------------------------------------------------------


def test_rotation_M_is_a_symmetric_involution_with_zero_trace():
    M = ic.rotation_M(8)
    assert torch.equal(M, M.T)
    assert torch.equal(M @ M, torch.eye(8, dtype=torch.float64))
    assert float(torch.trace(M)) == 0.0


def test_orthonormal_task_satisfies_assumptions_7_and_8():
    N, D = 3, 8
    X, y = ic.orthonormal_task(N, D, generator=torch_generator(0))
    assert X.shape == (2 * N + 1, 2 * D) and y.shape == (D,)
    content = torch.cat([X[0:2 * N:2, :D], X[1:2 * N:2, :D]])    # a_1..a_N, b_1..b_N
    positions = torch.cat([X[0:2 * N:2, D:], X[1:2 * N:2, D:]])  # p_1..p_N, p_1 M..p_N M
    eye = torch.eye(2 * N, dtype=torch.float64)
    assert torch.allclose(content @ content.T, eye, atol=1e-12)
    assert torch.allclose(positions @ positions.T, eye, atol=1e-12)
    assert torch.equal(X[-1, :D], X[2 * N - 2, :D]) and torch.equal(y, X[2 * N - 1, :D])  # q = N
    assert torch.all(X[-1, D:] == 0)


def test_sample_icl_batch_shapes_and_query():
    X, y = ic.sample_icl_batch(6, 4, 5, generator=torch_generator(1))
    assert X.shape == (5, 9, 12) and y.shape == (5, 6) and X.dtype == torch.float64
    for k in range(5):
        # the query repeats one item's content, and the target is that item's label
        matches = [i for i in range(4) if torch.equal(X[k, -1, :6], X[k, 2 * i, :6])]
        assert len(matches) == 1 and torch.equal(y[k], X[k, 2 * matches[0] + 1, :6])
    assert torch.all(X[:, -1, 6:] == 0)                       # the query has no position
    M = ic.rotation_M(6)
    assert torch.equal(X[:, 1:8:2, 6:], X[:, 0:8:2, 6:] @ M)  # labels carry p_i M


def test_sample_icl_batch_orthonormal_and_query_last():
    N, D = 3, 8
    X, y = ic.sample_icl_batch(D, N, 4, generator=torch_generator(2), orthonormal=True, query_last=True)
    eye = torch.eye(2 * N, dtype=torch.float64)
    for k in range(4):
        content = torch.cat([X[k, 0:2 * N:2, :D], X[k, 1:2 * N:2, :D]])
        positions = torch.cat([X[k, 0:2 * N:2, D:], X[k, 1:2 * N:2, D:]])
        assert torch.allclose(content @ content.T, eye, atol=1e-12)
        assert torch.allclose(positions @ positions.T, eye, atol=1e-12)
    assert torch.equal(X[:, -1, :D], X[:, 2 * N - 2, :D]) and torch.equal(y, X[:, 2 * N - 1, :D])
    single, target = ic.orthonormal_task(N, D, generator=torch_generator(2))
    first, first_target = ic.sample_icl_batch(D, N, 1, generator=torch_generator(2), orthonormal=True,
                                              query_last=True)
    assert torch.equal(single, first[0]) and torch.equal(target, first_target[0])


def test_query_is_uniform_over_the_items():
    X, y = ic.sample_icl_batch(4, 3, 3000, generator=torch_generator(3))
    index = torch.stack([(X[:, -1, :4] == X[:, 2 * i, :4]).all(-1) for i in range(3)], dim=1).double().argmax(1)
    counts = torch.bincount(index, minlength=3).double() / 3000
    assert torch.allclose(counts, torch.full((3,), 1 / 3, dtype=torch.float64), atol=0.04)  # 4 sigma = 0.034


def test_strict_mask_excludes_self_and_zeroes_the_first_row():
    weights = ic.causal_softmax(torch.zeros(4, 4, dtype=torch.float64))
    expected = torch.tensor([[0, 0, 0, 0], [1, 0, 0, 0], [0.5, 0.5, 0, 0], [1 / 3, 1 / 3, 1 / 3, 0]],
                            dtype=torch.float64)
    assert torch.allclose(weights, expected)
    ordinary = ic.causal_softmax(torch.zeros(3, 3, dtype=torch.float64), strict=False)
    assert torch.allclose(ordinary[0], torch.tensor([1.0, 0, 0], dtype=torch.float64))


def test_structured_weights_shapes_and_coordinates():
    W1, W2, W3 = ic.induction_weights(0.3, -0.7, 1.1, 6)
    assert W1.shape == (12, 12) and W2.shape == (24, 24) and W3.shape == (48, 6)
    assert np.allclose(ic.induction_coordinates(W1, W2, W3), (0.3, -0.7, 1.1), atol=1e-15)
    full = ic.structured_weights({name: k + 1.0 for k, name in enumerate(ic.PSEUDO_PARAMETERS)}, 4)
    assert sum(W.numel() for W in full) == 28 * 4**2
    assert isp.pseudo_params(*full) == pytest.approx({name: k + 1.0 for k, name in enumerate(ic.PSEUDO_PARAMETERS)},
                                                    abs=1e-14)


@pytest.mark.parametrize("N, D", [(1, 2), (2, 4), (3, 8), (5, 10)])
def test_full_model_matches_closed_forms(N, D):
    X, y = ic.orthonormal_task(N, D, generator=torch_generator(N))
    for alpha, beta, gamma in [(0.0, 0.0, 0.0), (0.4, 1.3, -0.8), (-1.5, 2.5, 2.0)]:
        loss, grad = ic.full_model_loss_and_grad(alpha, beta, gamma, X, y)
        assert loss == pytest.approx(float(ic.three_param_loss(alpha, beta, gamma, N)), abs=1e-12)
        assert np.allclose(grad, ic.three_param_grad(alpha, beta, gamma, N), atol=1e-12)


def test_the_ordinary_mask_breaks_the_closed_form():
    X, y = ic.orthonormal_task(3, 6, generator=torch_generator(2))
    loss, _ = ic.full_model_loss_and_grad(0.5, 1.0, 1.0, X, y, strict=False)
    assert abs(loss - float(ic.three_param_loss(0.5, 1.0, 1.0, 3))) > 1e-3
