"""Trained Transformers Learn Linear Models In-Context (Zhang, Frei, Bartlett, JMLR 2024): the chapter ``lsa``.

- :mod:`~icllib.lsa.model`: the linear regression prompts, the linear self-attention (LSA) layer, its training
  and Monte Carlo;
- :mod:`~icllib.lsa.theory`: the closed forms (the global minimum, the constants of Theorem 4.1, exact
  population losses, test-time errors);
- :mod:`~icllib.lsa.experiments`: the loops and bookkeeping of the chapter's experiments, section by section;
- ``icllib.lsa.sliders``: the chapters' figures with a slider (what gradient flow finds as the training length
  moves; predictions and error as the covariates' scale moves);
- ``icllib.lsa.exercises``: the chapter's self-checks.

A chapter imports the modules it uses, e.g. ``from icllib.lsa import theory``.
"""
