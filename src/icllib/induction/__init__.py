"""On the Emergence of Induction Heads for In-Context Learning (Musat 2025): the chapters
``induction_subspace`` and ``induction_emergence``.

- :mod:`~icllib.induction.model`: the two-layer disentangled transformer of Eq. 1, the task of Eqs. 2-5, the
  structured weights and the closed forms both chapters use;
- :mod:`~icllib.induction.subspace`: the 19-dimensional subspace of Theorem 1 (Sec. 4, App. A, C-E);
- :mod:`~icllib.induction.subspace_theory`: Propositions 1, 2 and 4 of App. A in exact arithmetic;
- :mod:`~icllib.induction.emergence`: the gradient flow of the three-parameter model (Theorem 2, App. B.5-B.8,
  App. F) and its large-N limits;
- ``icllib.induction.sliders``: the two chapters' figures with a slider (the N² law as N moves, the weights as
  training goes on);
- ``icllib.induction.subspace_exercises``, ``icllib.induction.emergence_exercises``: the two chapters'
  self-checks.

A chapter imports the modules it uses, e.g. ``from icllib.induction import emergence as ie, model as ic``.
"""
