"""icllib: the small library behind *How Transformers Learn In Context*.

One package per paper, holding everything of that paper (model, closed forms, experiments, the self-checks of its
chapters' exercises): :mod:`icllib.scan_snap`, :mod:`icllib.induction`, :mod:`icllib.lsa`, :mod:`icllib.balance`.
Beside them the shared machinery, which imports no paper's package: :mod:`icllib.config` (run modes, devices,
seeds, progress bars), :mod:`icllib.claims` (the claims ledger), ``icllib.claim_registry`` (the registry's
reading), ``icllib.cards`` (a check's card), :mod:`icllib.coverage`, ``icllib.deciding`` (pre-registered deciding
runs), :mod:`icllib.executor` (independent runs on a local pool or Slurm), :mod:`icllib.validation`, :mod:`icllib.plotting` (the house style),
:mod:`icllib.plotting_interactive` (figures with a slider) and :mod:`icllib.exercises` (the
self-check framework).
"""

__version__ = "0.1.0"
