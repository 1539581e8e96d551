"""Real English text for language-model experiments, without a download.

The machines that build the book cannot reach the network, so WikiText-2 cannot be fetched. The ``gensim``
wheel (``gensim==4.4.0``) ships a shortened dump of the English Wikipedia
(``gensim/test/test_data/enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2``): 107
non-redirect articles, about 566k tokens after markup removal, the same domain as WikiText at about a quarter
of the size of WikiText-2. This module reads it, tokenises it (lower case; words, numbers and punctuation, a
simplified ``basic_english``), builds a frequency-ranked vocabulary with ``<unk>``, and cuts the token stream
into the batches of the PyTorch transformer tutorial (columns of a (steps, batch) array, bptt windows).
"""

from __future__ import annotations

import bz2
import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from icllib.validation import positive_int, token_source

WIKI_SAMPLE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
TOKEN_PATTERN = re.compile(r"[a-z]+(?:'[a-z]+)?|[0-9]+|[.,;:!?()\"-]")
UNK = "<unk>"


@cache
def wikipedia_sample() -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The articles of the Wikipedia sample in the gensim wheel, as (title, tokens), in dump order.

    Redirect pages are skipped and wiki markup is removed with gensim's ``filter_wiki``. Raises
    ``ImportError`` with the pin to install when gensim is missing.
    """
    try:
        from gensim.corpora.wikicorpus import extract_pages, filter_wiki
        from gensim.test.utils import datapath
    except ImportError as error:  # pragma: no cover - depends on the environment
        raise ImportError("the real-text corpus needs gensim: pip install gensim==4.4.0") from error
    articles = []
    with bz2.open(datapath(WIKI_SAMPLE)) as stream:
        for title, text, _ in extract_pages(stream, filter_namespaces=("0",)):
            if text.lower().startswith("#redirect"):
                continue
            articles.append((title, tuple(TOKEN_PATTERN.findall(filter_wiki(text).lower()))))
    return tuple(articles)


@dataclass(frozen=True)
class Corpus:
    """A train/validation split by article, encoded with a vocabulary of the most frequent training types."""

    itos: tuple[str, ...]  # id -> token; id 0 is <unk>
    train: np.ndarray  # token ids of the training articles, concatenated
    valid: np.ndarray
    train_titles: tuple[str, ...]
    valid_titles: tuple[str, ...]

    @property
    def vocab_size(self) -> int:
        return len(self.itos)

    def unk_rate(self, split: str = "valid") -> float:
        """Fraction of ``<unk>`` tokens in a split."""
        ids = {"train": self.train, "valid": self.valid}[split]
        return float(np.mean(ids == 0))


def load_corpus(vocab_size: int, *, valid_fraction: float = 0.1) -> Corpus:
    """Split the articles (the last ``valid_fraction`` of them for validation), keep the ``vocab_size - 1``
    most frequent training types plus ``<unk>`` (ties broken alphabetically), and encode both splits."""
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, (int, np.integer)) or vocab_size < 2:
        raise ValueError(f"vocab_size must be an integer >= 2, got {vocab_size!r}")
    if not 0 < valid_fraction < 1:
        raise ValueError(f"valid_fraction must lie in (0, 1), got {valid_fraction!r}")
    articles = wikipedia_sample()
    n_valid = max(1, int(round(valid_fraction * len(articles))))
    train_articles, valid_articles = articles[:-n_valid], articles[-n_valid:]
    train_tokens = [token for _, tokens in train_articles for token in tokens]
    types, counts = np.unique(np.array(train_tokens), return_counts=True)
    order = np.lexsort((types, -counts))  # by count descending, then alphabetically
    itos = (UNK,) + tuple(types[order[: vocab_size - 1]].tolist())
    stoi = {token: i for i, token in enumerate(itos)}

    def encode(parts):
        return np.array([stoi.get(token, 0) for _, tokens in parts for token in tokens], dtype=np.int64)

    return Corpus(itos=itos, train=encode(train_articles), valid=encode(valid_articles),
                  train_titles=tuple(t for t, _ in train_articles), valid_titles=tuple(t for t, _ in valid_articles))


def batchify(ids, batch_size: int) -> np.ndarray:
    """Cut a token stream into ``batch_size`` contiguous columns, shape (steps, batch_size), dropping the tail
    (the layout of the PyTorch transformer tutorial)."""
    ids = np.asarray(ids)
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
    if ids.ndim != 1 or len(ids) < batch_size:
        raise ValueError(f"ids must be a 1-d stream of at least batch_size tokens, got shape {ids.shape}")
    steps = len(ids) // batch_size
    return ids[: steps * batch_size].reshape(batch_size, steps).T.copy()


def bptt_windows(source: np.ndarray, bptt: int):
    """(inputs, targets) windows of ``bptt`` rows of a batchified source, one by one; targets are shifted by one.
    The arguments are checked at the call (not at the first window)."""
    bptt = positive_int("bptt", bptt)
    return _windows(token_source("source", source), bptt)


def _windows(source, bptt):
    for start in range(0, source.shape[0] - 1, bptt):
        length = min(bptt, source.shape[0] - 1 - start)
        yield source[start:start + length], source[start + 1:start + 1 + length]
