"""icllib: the small library behind *How Transformers Learn In Context*.

Shared pieces: :mod:`icllib.config` (run modes, seeds, progress bars), :mod:`icllib.claims` (the claims
ledger) and :mod:`icllib.plotting` (the house style). Each chapter has one module of its own.
"""

__version__ = "0.1.0"
