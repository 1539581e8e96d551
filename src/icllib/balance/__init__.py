"""Law of Balance and Stationary Distribution of SGD (Ziyin, Li, Ueda, 2023): the chapter ``balance``.

- :mod:`~icllib.balance.model`: the two-layer attention network of App. B.11 and its SGD;
- :mod:`~icllib.balance.theory`: the closed forms, the linear model and the identities of the proof of
  Theorem B.3;
- ``icllib.balance.sliders``: the chapter's figure with a slider (the linear model's runs, setting by setting);
- ``icllib.balance.exercises``: the chapter's self-checks.

A chapter imports the modules it uses, e.g. ``from icllib.balance import model, theory``.
"""
