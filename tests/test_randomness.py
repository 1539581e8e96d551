"""Randomness enters icllib one way: through a ``generator`` argument. No function touches the global torch or
NumPy generator (no seeding, no draws): each random function is called with a generator of its own and the
global states must be unchanged afterwards. No public function takes a ``seed`` argument."""

import importlib
import inspect
import pkgutil

import numpy as np
import pytest
import torch

import icllib
from icllib.balance import model as balance
from icllib.induction import model as induction_model
from icllib.induction import subspace
from icllib.lsa import model as lsa
from icllib.scan_snap import model as scan_snap
from icllib.scan_snap import real_text
from icllib.scan_snap import theory as scan_snap_theory
from icllib.config import rng, torch_generator

torch.set_num_threads(1)

LAM = np.diag([0.5, 1.0, 2.0])


def _text_source():
    return np.arange(320, dtype=np.int64).reshape(80, 4) % 30


def _transformer_lm_run():
    generator = torch_generator(0)
    model = real_text.make_transformer_lm(30, d_model=8, d_hidden=8, n_layers=1, dropout=0.3,
                                               generator=generator)
    return real_text.train_transformer_lm(model, _text_source(), _text_source(), steps=2, lr=0.1,
                                               record_every=1, bptt=10, generator=generator)


RANDOM_CALLS = {
    "induction_model.sample_icl_batch": lambda: induction_model.sample_icl_batch(4, 2, 3, generator=torch_generator(0)),
    "induction_model.orthonormal_task": lambda: induction_model.orthonormal_task(2, 4, generator=torch_generator(0)),
    "subspace.random_rotation": lambda: subspace.random_rotation(4, generator=torch_generator(0)),
    "subspace.train_sgd": lambda: subspace.train_sgd(2, 4, steps=2, batch=4, lr=1.0,
                                                                         generator=torch_generator(0)),
    "subspace.train_standard": lambda: subspace.train_standard(8, steps=2, batch=4,
                                                                                   generator=torch_generator(0)),
    "scan_snap.train_yz": lambda: scan_snap.train_yz(scan_snap.syn_small(), eta_Y=1.0, eta_Z=1.0, init="default",
                                                     run=scan_snap.RunSize(steps=2, batch_size=4, T=8),
                                                     generator=rng(0)),
    "scan_snap.sample_sequences": lambda: scan_snap.sample_sequences(scan_snap.syn_small(), 4, 8, generator=rng(0)),
    "scan_snap_theory.decoder_run": lambda: scan_snap_theory.decoder_run(
        np.eye(4)[:, :2], eta_Y=0.5, steps=5, update="modified", generator=rng(0)),
    "scan_snap_theory.random_overlap_matrices": lambda: scan_snap_theory.random_overlap_matrices(
        3, 2, generator=rng(0)),
    "real_text.transformer_lm": _transformer_lm_run,
    "real_text.train_yz_text": lambda: real_text.train_yz_text(_text_source(), _text_source(), 30,
                                                                         eta_Y=1.0, eta_Z=1.0, steps=2, bptt=10,
                                                                         generator=rng(0)),
    "lsa.make_lambda": lambda: lsa.make_lambda([1.0, 2.0], generator=rng(0)),
    "lsa.assumption33_init": lambda: lsa.assumption33_init(3, 0.1, generator=rng(0)),
    "lsa.sample_prompts": lambda: lsa.sample_prompts(2, 3, LAM, generator=torch_generator(0)),
    "lsa.sgd_full": lambda: lsa.sgd_full(*lsa.assumption33_init(3, 0.1, generator=rng(0)), LAM, 4, lr=0.01,
                                         batch=4, steps=2, generator=torch_generator(0)),
    "lsa.sample_random_cov_prompts": lambda: lsa.sample_random_cov_prompts(2, 3, 3, generator=torch_generator(0)),
    "balance.icl_regression_batch": lambda: balance.icl_regression_batch(4, generator=torch_generator(0)),
    "balance.init_attention": lambda: balance.init_attention(generator=torch_generator(0)),
    "balance.rank_agreement": lambda: balance.rank_agreement(np.arange(5.0), np.arange(5.0), generator=rng(0),
                                                             permutations=10),
}


@pytest.mark.parametrize("name", sorted(RANDOM_CALLS))
def test_random_functions_leave_the_global_generators_alone(name):
    torch.manual_seed(1234)
    np.random.seed(1234)
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()
    RANDOM_CALLS[name]()
    assert torch.equal(torch.get_rng_state(), torch_state), f"{name} changed torch's global generator"
    after = np.random.get_state()
    assert after[0] == numpy_state[0] and np.array_equal(after[1], numpy_state[1]) and after[2:] == numpy_state[2:], \
        f"{name} changed NumPy's global generator"


def test_the_same_generator_seed_gives_the_same_run():
    first, second = _transformer_lm_run(), _transformer_lm_run()
    assert np.array_equal(first.entropies, second.entropies) and first.valid_loss == second.valid_loss


def test_no_public_function_takes_a_seed():
    offenders = []
    for info in pkgutil.walk_packages(icllib.__path__, "icllib."):
        module = importlib.import_module(info.name)
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and not name.startswith("_"):
                if any("seed" in parameter for parameter in inspect.signature(function).parameters):
                    offenders.append(f"{module.__name__}.{name}")
    # config.rng and config.torch_generator make generators from a seed: that is where seeds belong. The deciding
    # runs are the one other place: a pre-registered run is defined by its seeds (the rule names them), and each
    # makes its generators with config.torch_generator.
    assert sorted(offenders) == ["icllib.config.rng", "icllib.config.torch_generator", "icllib.deciding.run_b11",
                                 "icllib.deciding.run_b11_seeds", "icllib.deciding.run_fig4",
                                 "icllib.deciding.run_standard"]
