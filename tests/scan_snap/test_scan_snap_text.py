"""Unit tests of icllib.scan_snap.real_text (the language models of Sec. 8 and App. G) and of icllib.scan_snap.text."""

import numpy as np
import pytest
import torch

from icllib.scan_snap import real_text as st
from icllib.scan_snap import text
from icllib.config import rng, torch_generator

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def corpus():
    pytest.importorskip("gensim")
    return text.load_corpus(300)


def test_wikipedia_sample_and_corpus(corpus):
    articles = text.wikipedia_sample()
    assert len(articles) == 107 and articles[0][0] == "Anarchism"
    assert corpus.vocab_size == 300 and corpus.itos[0] == text.UNK
    assert len(corpus.valid_titles) == 11 and len(corpus.train_titles) == 96
    assert 0 < corpus.unk_rate("valid") < 1 and corpus.train.max() < 300
    # the most frequent training token is kept with the smallest non-<unk> id
    assert np.bincount(corpus.train)[1] == np.bincount(corpus.train)[1:].max()


def test_batchify_and_windows():
    source = text.batchify(np.arange(103), 4)
    assert source.shape == (25, 4) and source[:, 1].tolist() == list(range(25, 50))
    windows = list(text.bptt_windows(source, 10))
    assert [w[0].shape[0] for w in windows] == [10, 10, 4]
    np.testing.assert_array_equal(windows[0][1], source[1:11])


def test_yz_text_logits_match_a_direct_computation():
    generator = rng(7)
    V, L = 6, 7
    Y = torch.tensor(generator.normal(size=(V, V)))
    Z = torch.tensor(generator.normal(size=(V, V)))
    tokens = torch.tensor(generator.integers(0, V, size=(2, L)))
    logits, b = st.yz_text_logits(Y, Z, tokens)
    assert logits.shape == (2, L - 1, V) and b.shape == (2, L - 1, L)
    for batch in range(2):
        for t in range(1, L):
            past = tokens[batch, :t]
            weights = torch.softmax(Z[tokens[batch, t], past], 0)
            v = torch.zeros(V, dtype=torch.float64).index_add(0, past, weights)
            torch.testing.assert_close(logits[batch, t - 1], Y.T @ (v / v.norm()))
            torch.testing.assert_close(b[batch, t - 1, :t], weights)
            assert float(b[batch, t - 1, t:].abs().sum()) == 0.0


def test_attention_row_entropy_of_uniform_rows():
    weights = torch.tril(torch.ones(8, 8, dtype=torch.float64))
    weights = weights / weights.sum(dim=1, keepdim=True)
    expected = np.mean(np.log(np.arange(6, 9)))
    assert st.attention_row_entropy(weights, min_row=5) == pytest.approx(expected, rel=1e-12)


def test_transformer_lm_attention_is_causal():
    model = st.make_transformer_lm(50, d_model=8, d_hidden=8, n_layers=2, dropout=0.0, generator=torch_generator(0))
    tokens = torch.as_tensor(rng(8).integers(0, 50, size=(3, 9)))
    with torch.no_grad():
        weights = model.first_layer_attention(tokens)
        logits = model(tokens)
    assert logits.shape == (3, 9, 50) and weights.shape == (3, 9, 9)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(3, 9))
    assert float(torch.triu(weights, diagonal=1).abs().sum()) == 0.0


def test_text_bad_input_raises():
    with pytest.raises(ValueError, match="vocab_size"):
        text.load_corpus(1)
    with pytest.raises(ValueError, match="valid_fraction"):
        text.load_corpus(100, valid_fraction=1.5)
    with pytest.raises(ValueError, match="batch_size"):
        text.batchify(np.arange(10), 0)
    with pytest.raises(ValueError, match="ids"):
        text.batchify(np.arange(3), 5)
    with pytest.raises(ValueError, match="bptt"):
        list(text.bptt_windows(np.zeros((5, 2)), 0))
    with pytest.raises(ValueError, match="dropout"):
        st.make_transformer_lm(10, d_model=4, d_hidden=4, n_layers=1, dropout=1.0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="eta_Z"):
        st.train_yz_text(np.zeros((40, 2), dtype=np.int64), np.zeros((40, 2), dtype=np.int64), 5, eta_Y=1.0,
                         eta_Z=0.0, steps=1, generator=rng(0))
    with pytest.raises(ValueError, match="lr"):
        model = st.make_transformer_lm(10, d_model=4, d_hidden=4, n_layers=1, dropout=0.0,
                                       generator=torch_generator(0))
        st.train_transformer_lm(model, np.zeros((40, 2), dtype=np.int64), np.zeros((40, 2), dtype=np.int64),
                                steps=1, lr=-1.0, generator=torch_generator(0))
    with pytest.raises(ValueError, match="generator"):
        st.make_transformer_lm(10, d_model=4, d_hidden=4, n_layers=1, dropout=0.0, generator=0)


def test_checks_name_registered_claims_with_their_reasons():
    from icllib.claims import registry

    claims = registry().claims
    for key, check in st.CHECKS.items():
        assert f"scan_snap.{key.split('#')[0]}" in claims, key
        assert len(check["why"]) > 20 and set(check) - {"why"} <= {"expected", "rtol", "atol", "lower", "upper"}


def test_freeze_summary_reads_a_trajectory_as_the_chapter_does():
    steps = np.arange(0, 1001, 100)
    entropies = 1 + 1.8 * np.exp(-steps / 400)
    summary = st.freeze_summary(steps, entropies, run_steps=1000)
    assert summary["initial"] == entropies[0] and summary["late"] == entropies[-3:].mean()
    assert summary["early_drop"] == entropies[0] - entropies[1]  # step 100 is the first tenth
    assert summary["late_drift"] == entropies[5] - entropies[-1]  # step 500 is half the run
    assert summary["freeze_ratio"] == pytest.approx(abs(entropies[5] - entropies[-1]) / (entropies[0] - entropies[-1]))
    flat = st.freeze_summary(steps, np.full(11, 2.8), run_steps=1000)
    assert flat["freeze_ratio"] == float("inf")  # never moved: not "frozen"
    short = st.freeze_summary([0, 10], [2.8, 2.7], run_steps=10)  # fewer records than `last`: all of them
    assert short["late"] == pytest.approx(2.75)
    with pytest.raises(ValueError, match="steps"):
        st.freeze_summary([0, 100], [2.8, 2.7], run_steps=1000)  # the records stop before half the run
    with pytest.raises(ValueError, match="steps"):
        st.freeze_summary([0, 100, 50], [2.8, 2.7, 2.6], run_steps=100)
