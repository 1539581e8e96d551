"""The chapter ``scan_snap_text``: Scan and Snap on real text (Tian, Wang, Chen, Du, NeurIPS 2023, Sec. 8 and
App. G; Figs. 7 and 10), with the corpus of :mod:`icllib.scan_snap.text`.

Read top to bottom:

1. the language model of the authors' Fig. 7 notebook (the PyTorch transformer tutorial), the entropy of its
   attention rows, its training by SGD at a constant rate, and what Fig. 7 reads from the entropy's trajectory
   (:func:`freeze_summary`);
2. the Y/Z model of Eq. 15 as a causal language model (the book's extension: rates eta_Y and eta_Z apart).

Randomness enters through the ``generator`` arguments only. PyTorch's layer initialisation and dropout draw
from torch's global generator and take no generator of their own, so they run inside
``_drawing_from``, which lends them the caller's generator and restores the global state afterwards.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from icllib.config import progress
from icllib.validation import (array_like, numpy_generator_arg, positive_int, positive_number, real_array,
                               tensor_arg, token_source, torch_generator_arg)


def _torch():
    import torch

    return torch


@contextmanager
def _drawing_from(generator):
    """Run the block with torch's global CPU generator in the state of ``generator``, then advance ``generator``
    by what the block drew and put the global generator back as it was."""
    torch = _torch()
    with torch.random.fork_rng(devices=[]):
        torch.set_rng_state(generator.get_state())
        try:
            yield
        finally:
            generator.set_state(torch.get_rng_state())


# ---------------------------------------------------------------------------------------------------------
# 1. The tutorial transformer (Fig. 7, Fig. 10)


def make_transformer_lm(vocab_size: int, *, d_model: int, d_hidden: int, n_layers: int, dropout: float,
                        generator):
    """The language model of the authors' Fig. 7 notebook (the PyTorch transformer tutorial): embeddings scaled
    by sqrt(d), sinusoidal positional encoding, ``n_layers`` post-LN encoder layers with one head and a causal
    mask, a linear decoder. Positional encoding breaks Assumption 1(a) (note scan_snap.N11). The initial
    weights are drawn from the ``torch.Generator`` ``generator``; pass the same generator on to
    :func:`train_transformer_lm`, whose dropout continues its stream."""
    torch = _torch()
    for name, value in (("vocab_size", vocab_size), ("d_model", d_model), ("d_hidden", d_hidden),
                        ("n_layers", n_layers)):
        positive_int(name, value)
    if positive_number("dropout", dropout, allow_zero=True) >= 1:
        raise ValueError(f"dropout must lie in [0, 1), got {dropout!r}")
    generator = torch_generator_arg("generator", generator)

    class TransformerLM(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.d_model = d_model
            self.embedding = torch.nn.Embedding(vocab_size, d_model)
            self.dropout = torch.nn.Dropout(dropout)
            position = torch.arange(4096).unsqueeze(1)
            frequency = torch.exp(torch.arange(0, d_model, 2) * (-np.log(10000.0) / d_model))
            encoding = torch.zeros(4096, d_model)
            encoding[:, 0::2] = torch.sin(position * frequency)
            encoding[:, 1::2] = torch.cos(position * frequency)
            self.register_buffer("positional", encoding)
            self.layers = torch.nn.ModuleList(
                torch.nn.TransformerEncoderLayer(d_model, 1, d_hidden, dropout, batch_first=True)
                for _ in range(n_layers))
            self.decoder = torch.nn.Linear(d_model, vocab_size)
            torch.nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
            torch.nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
            torch.nn.init.zeros_(self.decoder.bias)

        def embed(self, tokens):  # tokens: (batch, length)
            x = self.embedding(tokens) * np.sqrt(self.d_model) + self.positional[: tokens.shape[1]]
            return self.dropout(x)

        def forward(self, tokens):
            mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            x = self.embed(tokens)
            for layer in self.layers:
                x = layer(x, src_mask=mask, is_causal=True)
            return self.decoder(x)

        def first_layer_attention(self, tokens):
            """Attention weights of the first layer, (batch, length, length), rows over the causal past."""
            mask = torch.nn.Transformer.generate_square_subsequent_mask(tokens.shape[1])
            x = self.embed(tokens)
            return self.layers[0].self_attn(x, x, x, attn_mask=mask, need_weights=True)[1]

    with _drawing_from(generator):
        return TransformerLM()


def attention_row_entropy(weights, *, min_row: int = 5) -> float:
    """Mean Shannon entropy (nats) of attention rows ``min_row`` and later (short causal rows are trivially
    peaked); ``weights`` is (..., length, length) with rows summing to 1."""
    torch = _torch()
    weights = torch.as_tensor(array_like("weights", weights))
    if weights.ndim < 2 or weights.numel() == 0 or not bool(torch.isfinite(weights).all()):
        raise ValueError(f"weights must be finite attention rows (..., rows, length), got {tuple(weights.shape)}")
    return _row_entropy(weights, min_row)


def _row_entropy(weights, min_row):
    """:func:`attention_row_entropy` without the checks (a diverged run reports NaN, it does not stop)."""
    torch = _torch()
    rows = weights[..., min_row:, :]
    return float(-(rows * torch.log(rows.clamp_min(1e-30))).sum(dim=-1).mean())


@dataclass(frozen=True)
class LMRun:
    """A run of :func:`train_transformer_lm`: the steps at which the probe's first-layer attention entropy was
    recorded and those entropies, then the attention entropy and the loss on the validation stream at the end."""

    steps: np.ndarray
    entropies: np.ndarray
    valid_entropy: float
    valid_loss: float


def train_transformer_lm(model, train_source, valid_source, *, steps: int, lr: float, generator,
                         lr_ffn: float | None = None, bptt: int = 35, clip: float = 0.5, record_every: int = 50,
                         probe=None) -> LMRun:
    """Plain SGD at constant learning rate (``lr_ffn`` for the feed-forward layers, as in the authors' Fig. 7
    run), gradient-norm clipping, cycling over the training stream in bptt windows.

    Records, every ``record_every`` steps, the first-layer attention entropy on ``probe`` (a (batch, length)
    array of token ids, evaluated without dropout). Dropout draws from the ``torch.Generator`` ``generator``.
    """
    torch = _torch()
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (make_transformer_lm), got {type(model).__name__}")
    token_source("train_source", train_source), token_source("valid_source", valid_source)
    generator = torch_generator_arg("generator", generator)
    steps = positive_int("steps", steps)
    lr = positive_number("lr", lr)
    lr_ffn = lr if lr_ffn is None else positive_number("lr_ffn", lr_ffn)
    ffn = [p for name, p in model.named_parameters() if ".linear" in name]
    ffn_ids = {id(p) for p in ffn}
    rest = [p for p in model.parameters() if id(p) not in ffn_ids]
    optimiser = torch.optim.SGD([{"params": rest, "lr": lr}, {"params": ffn, "lr": lr_ffn}])
    probe = torch.as_tensor(probe if probe is not None else valid_source[:bptt].T)
    loss_fn = torch.nn.CrossEntropyLoss()

    def probe_entropy():
        model.eval()
        with torch.no_grad():
            value = _row_entropy(model.first_layer_attention(probe), 5)
        model.train()
        return value

    recorded_steps, entropies = [0], [probe_entropy()]
    windows = []
    model.train()
    with _drawing_from(generator):
        for step in progress(range(1, steps + 1), total=steps, desc="LM training"):
            if not windows:
                windows = list(bptt_windows_torch(train_source, bptt))[::-1]
            inputs, targets = windows.pop()
            optimiser.zero_grad()
            logits = model(inputs)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
            optimiser.step()
            if step % record_every == 0 or step == steps:
                recorded_steps.append(step)
                entropies.append(probe_entropy())
    model.eval()
    with torch.no_grad():
        valid_entropy, valid_loss, count = 0.0, 0.0, 0
        for inputs, targets in bptt_windows_torch(valid_source, bptt):
            if inputs.shape[1] <= 5:
                continue
            valid_entropy += _row_entropy(model.first_layer_attention(inputs), 5)
            logits = model(inputs)
            valid_loss += float(loss_fn(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)))
            count += 1
    return LMRun(steps=np.array(recorded_steps), entropies=np.array(entropies), valid_entropy=valid_entropy / count,
                 valid_loss=valid_loss / count)


def freeze_summary(steps, entropies, *, run_steps: int, last: int = 3) -> dict:
    """Fig. 7's two readings of an attention-entropy trajectory (chapter section on Fig. 7): did the map get
    sparser, and did it freeze?

    ``entropies`` were recorded at ``steps`` (ascending, from 0) of a run of ``run_steps`` steps. Returns
    ``initial``; ``late``, the mean of the last ``last`` records (of all, if fewer); ``early_drop``, the fall over the first tenth
    of the run; ``late_drift``, the change over its second half (record at ``run_steps // 2`` minus the last);
    ``whole_drop``, first minus last record; and ``freeze_ratio`` = ``|late_drift| / whole_drop``, near 0 for a
    map that froze (``inf`` when the map never moved). The whole drop is the yardstick, not the first tenth's:
    a map that starts moving late has no early drop.
    """
    steps, entropies = real_array("steps", steps), real_array("entropies", entropies)
    run_steps, last = positive_int("run_steps", run_steps), positive_int("last", last)
    if steps.ndim != 1 or steps.shape != entropies.shape or len(steps) < 2:
        raise ValueError(f"steps and entropies must be 1-d, of one length >= 2, got {steps.shape} and "
                         f"{entropies.shape}")
    if np.any(np.diff(steps) <= 0) or steps[-1] < run_steps // 2:
        raise ValueError(f"steps must be ascending and reach run_steps // 2 = {run_steps // 2}, got {steps}")
    tenth, half = np.searchsorted(steps, run_steps // 10), np.searchsorted(steps, run_steps // 2)
    late_drift = entropies[half] - entropies[-1]
    whole_drop = entropies[0] - entropies[-1]
    return {
        "initial": entropies[0],
        "late": entropies[-last:].mean(),
        "early_drop": entropies[0] - entropies[tenth],
        "late_drift": late_drift,
        "whole_drop": whole_drop,
        "freeze_ratio": math.inf if whole_drop == 0 else abs(late_drift) / whole_drop,
    }


def bptt_windows_torch(source, bptt: int):
    """(inputs, targets) as (batch, length) int64 tensors from a batchified (steps, batch) source, one by one;
    the arguments are checked at the call (not at the first window)."""
    bptt = positive_int("bptt", bptt)
    return _windows_torch(np.asarray(token_source("source", source)), bptt)


def _windows_torch(source, bptt):
    torch = _torch()
    for start in range(0, source.shape[0] - 1, bptt):
        length = min(bptt, source.shape[0] - 1 - start)
        yield (torch.as_tensor(source[start:start + length].T.copy()),
               torch.as_tensor(source[start + 1:start + 1 + length].T.copy()))


# ---------------------------------------------------------------------------------------------------------
# 2. The Y/Z model as a causal language model (the book's extension)


def yz_text_logits(Y, Z, tokens):
    """The Y/Z model as a causal language model (the authors' ``decoder_wiki_yz``): position t attends to the
    positions s < t with logits Z[x_t, x_s] (itself excluded, as the query in Eq. 1), mixes their one-hot
    vectors, l2-normalises the mixture and decodes with Y^T. Returns logits (batch, length - 1, V) for the
    next token of positions 1..length-1, and the attention (batch, length - 1, length)."""
    tensor_arg("Y", Y, min_ndim=2, what="(V, V)")
    tensor_arg("Z", Z, shape=Y.shape, what=f"of the shape of Y {tuple(Y.shape)}")
    tensor_arg("tokens", tokens, min_ndim=2, what="(batch, length) of token ids")
    if tokens.ndim != 2 or tokens.is_floating_point() or tokens.min() < 0 or tokens.max() >= Y.shape[0]:
        raise ValueError(f"tokens must be a (batch, length) tensor of token ids in [0, {Y.shape[0]})")
    return _yz_logits(Y, Z, tokens)


def _yz_logits(Y, Z, tokens):
    """:func:`yz_text_logits` without the checks (it runs in every training step)."""
    torch = _torch()
    batch, length = tokens.shape
    scores = Z[tokens[:, :, None], tokens[:, None, :]]  # (batch, query t, key s)
    past = torch.tril(torch.ones(length, length, dtype=torch.bool), diagonal=-1)
    b = torch.softmax(scores.masked_fill(~past, float("-inf"))[:, 1:], dim=-1)  # query position 0 has no past
    same = tokens[:, :, None] == tokens[:, None, :]  # (batch, s, s')
    norm_sq = torch.einsum("bts,bsr,btr->bt", b, same.to(b.dtype), b)  # ||X^T b||^2 with repeated tokens
    mixed = torch.einsum("bts,bsv->btv", b, Y[tokens])  # Y^T (X^T b), rows of Y gathered
    return mixed / norm_sq.sqrt()[..., None], b


def train_yz_text(train_source, valid_source, vocab_size: int, *, eta_Y: float, eta_Z: float, steps: int,
                  generator: np.random.Generator, bptt: int = 35, momentum: float = 0.0):
    """Train the Y/Z causal language model of :func:`yz_text_logits` from Y = Z = 0 with SGD (separate rates
    eta_Y and eta_Z), visiting the training windows in an order drawn from ``generator``, and return the mean
    attention-row entropy (rows >= 5) and the loss on validation."""
    torch = _torch()
    vocab_size = positive_int("vocab_size", vocab_size, minimum=2)
    token_source("train_source", train_source), token_source("valid_source", valid_source)
    eta_Y = positive_number("eta_Y", eta_Y)
    eta_Z = positive_number("eta_Z", eta_Z)
    steps = positive_int("steps", steps)
    generator = numpy_generator_arg("generator", generator)
    Y = torch.zeros(vocab_size, vocab_size, dtype=torch.float64, requires_grad=True)
    Z = torch.zeros(vocab_size, vocab_size, dtype=torch.float64, requires_grad=True)
    optimiser = torch.optim.SGD([{"params": [Y], "lr": eta_Y}, {"params": [Z], "lr": eta_Z}], momentum=momentum)
    windows = list(bptt_windows_torch(train_source, bptt))
    order = generator.permutation(len(windows))
    for step in range(steps):
        inputs, _ = windows[order[step % len(windows)]]
        logits, _ = _yz_logits(Y, Z, inputs)
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab_size), inputs[:, 2:].reshape(-1))
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    with torch.no_grad():
        entropies, losses = [], []
        for inputs, _ in bptt_windows_torch(valid_source, bptt):
            if inputs.shape[1] <= 7:
                continue
            logits, b = _yz_logits(Y, Z, inputs)
            losses.append(float(torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, vocab_size),
                                                                  inputs[:, 2:].reshape(-1))))
            entropies.append(_row_entropy(b[:, :, :], 5))
    return float(np.mean(entropies)), float(np.mean(losses))


# Keyword arguments of ``check_claim`` for each check of the chapter ``scan_snap_text``, by claim id less the
# prefix ``scan_snap.`` (``#2``: a claim's second check); the ledger and the claim cards show the reason.
CHECKS = {
    "text-sparse": dict(lower=0.3, why=('0.3 nats is 10% of the initial entropy and above the record-to-record noise '
        '(~0.1) of one window')),
    "text-freeze": dict(upper=0.2, why=("'frozen': the second-half drift, of either sign, is below 0.2 of the whole "
        'drop')),
    "text-sparse-deep": dict(lower=0.3, why='the 0.3 nats used for the one-layer model (10% of the initial entropy)'),
    "text-freeze#2": dict(upper=0.2, why=("'frozen', as for one layer: the second-half drift, of either sign, is "
        "below 0.2 of the whole drop")),
    "fig10-lr": dict(expected=-1.0, atol=1e-12, why=('strictly decreasing over 5 learning rates (Spearman -1): by '
        'chance with probability 1/120 < 1% if the rate did not matter')),
    "text-yz-eta-z": dict(expected=True, why=('strictly decreasing over five eta_Z: by chance with probability 1/120 '
        '< 1%')),
    "text-yz-threshold-full": dict(upper=0.01, why=('one-sided paired t-test over 5 seeds: entropy higher at ratio 2 '
        'than at ratio 1; false-pass rate 1%')),
    "text-yz-threshold": dict(upper=0.01, why=('one-sided paired t-test over 5 seeds: entropy higher at ratio 2 than '
        'at ratio 5; false-pass rate 1%')),
}
