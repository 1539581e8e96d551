"""Scan and Snap (Tian, Wang, Chen, Du, NeurIPS 2023): the chapters ``scan_snap`` and ``scan_snap_text``.

- :mod:`~icllib.scan_snap.model`: the authors' synthetic data, one attention layer reparameterised by Y and Z, its
  gradient and its training;
- :mod:`~icllib.scan_snap.theory`: the closed forms and ODEs of the paper's theorems and lemmas;
- :mod:`~icllib.scan_snap.lemmas`: the experiments on the lemmas (the chapter's first sections);
- :mod:`~icllib.scan_snap.dynamics`: the experiments on the scan, the snap and SGD;
- :mod:`~icllib.scan_snap.real_text`: the language models of Sec. 8 and App. G on real text;
- :mod:`~icllib.scan_snap.text`: the English text they read (a Wikipedia sample), without a download;
- ``icllib.scan_snap.sliders``: the chapters' figures with a slider (attention as a learning rate or the
  training time moves, the speed control as the vocabulary size moves);
- ``icllib.scan_snap.exercises``, ``icllib.scan_snap.real_text_exercises``: the two chapters' self-checks.

A chapter imports the modules it uses, e.g. ``from icllib.scan_snap import model as ss, theory as sst``.
"""
