"""The device switch (``ICLLIB_DEVICE``) and the heavy paths that follow it.

The resolution and its errors are tested on any machine (CUDA's presence is simulated where a value needs
it); the tests marked ``cuda`` run the heavy paths on a GPU and are skipped without one (the device script
``tools/device_run.sh`` runs them there).
"""

import numpy as np
import pytest
import torch

from icllib import config
from icllib.balance import model as balance
from icllib.induction import subspace as isp
from icllib.config import torch_generator

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


def fake_cuda(monkeypatch, count):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: count > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: count)


def test_default_is_the_cpu(monkeypatch):
    monkeypatch.delenv(config.DEVICE_VARIABLE, raising=False)
    assert config.device() == torch.device("cpu")
    assert config.device_description() == "cpu"
    assert config.run_line().endswith("device: cpu")


@pytest.mark.parametrize("value, count, expected", [
    ("cpu", 0, "cpu"), ("auto", 0, "cpu"), ("auto", 1, "cuda"), ("cuda", 1, "cuda"), ("cuda:1", 2, "cuda:1"),
])
def test_every_value_resolves(monkeypatch, value, count, expected):
    fake_cuda(monkeypatch, count)
    monkeypatch.setenv(config.DEVICE_VARIABLE, value)
    assert config.device() == torch.device(expected)
    assert config.device(value) == torch.device(expected)


@pytest.mark.parametrize("value, count, message", [
    ("gpu", 1, "is not a device"), ("CPU", 0, "is not a device"), ("cuda:", 1, "is not a device"),
    ("cuda:x", 1, "is not a device"), ("cuda", 0, "sees no CUDA device"), ("cuda:0", 0, "sees no CUDA device"),
    ("cuda:2", 2, "has 2 CUDA device"),
])
def test_bad_values_stop_with_the_allowed_ones(monkeypatch, value, count, message):
    fake_cuda(monkeypatch, count)
    monkeypatch.setenv(config.DEVICE_VARIABLE, value)
    with pytest.raises(ValueError, match=message) as raised:
        config.device()
    assert "ICLLIB_DEVICE" in str(raised.value) and "allowed values: cpu, cuda, cuda:N, auto" in str(raised.value)


def test_a_cpu_generator_draws_what_it_always_drew():
    assert torch.equal(torch.randn(5, generator=torch_generator(3, device="cpu")),
                       torch.randn(5, generator=torch_generator(3)))
    generator = torch_generator(4)
    assert config.generator_on(generator, "cpu") is generator


@pytest.mark.parametrize("bad", ["gpu", 3.5, "cuda:x"])
def test_a_generator_on_no_device_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="device"):
        torch_generator(1, device=bad)


def test_the_standard_transformer_keeps_its_initialisation():
    """``normal`` is N(0, 0.02^2) drawn in the order E, P, W_Q, W_K, W_V, W_O, W_out, as before ``init``."""
    model = isp.StandardTransformer(8, generator=torch_generator(5))
    reference = torch_generator(5)
    for expected_shape, weight in [((32, 8), model.E), ((32, 8), model.P), *[((8, 8), w) for w in
                                   [*model.W_Q, *model.W_K, *model.W_V, *model.W_O]], ((32, 8), model.W_out)]:
        assert torch.equal(weight.detach(), 0.02 * torch.randn(*expected_shape, generator=reference))


def test_the_initialisations_differ_where_they_say():
    normal, gpt2, default = (isp.StandardTransformer(8, generator=torch_generator(5), init=init)
                             for init in isp.INITIALISATIONS)
    assert torch.equal(gpt2.W_Q[0], normal.W_Q[0]) and torch.equal(gpt2.W_O[1], normal.W_O[1] / 2)
    bound = 8**-0.5
    assert float(default.W_K[0].detach().abs().max()) <= bound and float(default.E.detach().std()) > 0.5
    with pytest.raises(ValueError, match="init"):
        isp.StandardTransformer(8, generator=torch_generator(5), init="xavier")


@cuda
def test_standard_training_runs_on_the_gpu():
    model, losses = isp.train_standard(32, steps=5, batch=16, generator=torch_generator(1, device="cuda"))
    assert model.E.device.type == "cuda" and np.isfinite(losses).all()
    assert 0 <= isp.standard_accuracy(model, 64, generator=torch_generator(2)) <= 1
    assert model.previous_position_attention().device.type == "cpu"


@cuda
def test_a_generator_on_its_own_device_is_kept():
    generator = torch_generator(1, device="cuda")
    assert config.generator_on(generator, "cuda") is generator
    assert config.generator_on(generator, torch.device("cuda", torch.cuda.current_device())) is generator
    assert config.generator_on(generator, "cpu").device.type == "cpu"


@cuda
def test_the_b11_gradient_is_the_same_on_the_gpu():
    params = balance.init_attention(generator=torch_generator(1), dtype=torch.float64)
    X, y = balance.icl_regression_batch(8, generator=torch_generator(2), dtype=torch.float64)
    loss_cpu, grads_cpu = balance.attention_loss_and_grads(params, X, y)
    moved = {name: value.cuda() for name, value in params.items()}
    loss_gpu, grads_gpu = balance.attention_loss_and_grads(moved, X.cuda(), y.cuda())
    assert torch.allclose(loss_gpu.cpu(), loss_cpu, rtol=1e-12, atol=0)
    for name in balance.PARAM_NAMES:  # float64: only the order of summation differs
        assert torch.allclose(grads_gpu[name].cpu(), grads_cpu[name], rtol=1e-10, atol=1e-13)


@cuda
def test_the_b11_sgd_runs_on_the_gpu():
    params = balance.init_attention(generator=torch_generator(1, device="cuda"))
    run = balance.train_attention_sgd(params, lr=4e-3, batch_size=20, steps=200, generator=torch_generator(2),
                                      checkpoint_every=100, g_samples=8, g_chunk=4)
    again = balance.train_attention_sgd(params, lr=4e-3, batch_size=20, steps=200, checkpoint_every=100,
                                        generator=torch_generator(2, device="cuda"), g_samples=8, g_chunk=4)
    assert np.isfinite(again["loss"]).all()
    assert run["params"]["Wq0"].device.type == "cuda"
    assert isinstance(run["D"], np.ndarray) and np.isfinite(run["loss"]).all()
    assert run["identity_residual"] < 1e-4
    X, _ = balance.icl_regression_batch(20_000, generator=torch_generator(3, device="cuda"))
    features = X[..., :5].double()
    assert abs(float(features.mean())) < 0.01 and abs(float(features.var()) - 1) < 0.01
