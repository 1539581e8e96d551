"""Closed forms of the chapter ``induction_subspace`` (Musat 2025, ``musat2025induction``, App. A): the
statements about averages over data rotations that the proof of Theorem 1 rests on, in exact arithmetic.

The chapter's section *Propositions 1-4 of App. A* checks them here with SymPy, and by Monte Carlo over Haar
samples with :mod:`icllib.induction.subspace`.
"""

from __future__ import annotations


def sympy_propositions() -> dict:
    """Propositions 1, 2 and 4 of App. A in exact arithmetic, in the smallest sizes where they say something.

    Returns SymPy matrices, each exactly zero when its statement holds, plus one that is not:

    - ``"prop1"``: the Haar average over O(2) of ``E^T A E`` minus ``(tr A / 2) I``, for a symbolic 2 x 2
      ``A`` (integrals over the rotation angle, with and without a reflection);
    - ``"prop1_rotations_only"``: the same average over SO(2) minus ``(tr A / 2) I``: not zero (it keeps the
      antisymmetric part of ``A``), so the reflections of O(D) are needed;
    - ``"prop2"``: the average of ``F A F^T`` over the block-orthogonal 2 x 2 matrices ``+-I, +-M`` minus
      ``alpha I + beta M`` with ``alpha = tr A / 2``, ``beta = (a12 + a21) / 2``;
    - ``"prop4"``: the blocks of ``F M F^T - M`` for both forms of Def. 5, for any ``k x k`` block ``E`` with
      ``E E^T = I`` (symbolic ``k``).
    """
    import sympy as sp

    theta = sp.Symbol("theta", real=True)
    A = sp.Matrix(2, 2, sp.symbols("a11 a12 a21 a22", real=True))
    rotation = sp.Matrix([[sp.cos(theta), -sp.sin(theta)], [sp.sin(theta), sp.cos(theta)]])

    def angle_average(E):
        return (E.T * A * E).applyfunc(
            lambda entry: sp.simplify(sp.integrate(sp.expand(entry), (theta, 0, 2 * sp.pi)) / (2 * sp.pi)))

    rotations_only = angle_average(rotation)
    haar_O2 = (rotations_only + angle_average(rotation * sp.diag(1, -1))) / 2
    scalar = (A.trace() / 2) * sp.eye(2)
    swap = sp.Matrix([[0, 1], [1, 0]])
    block_orthogonal = (sp.eye(2), -sp.eye(2), swap, -swap)
    block_average = sum((F * A * F.T for F in block_orthogonal), sp.zeros(2, 2)) / 4

    k = sp.Symbol("k", integer=True, positive=True)
    E, I, Z = sp.MatrixSymbol("E", k, k), sp.Identity(k), sp.ZeroMatrix(k, k)
    M = sp.BlockMatrix([[Z, I], [I, Z]])
    prop4 = []
    for F in (sp.BlockMatrix([[E, Z], [Z, E]]), sp.BlockMatrix([[Z, E], [E, Z]])):
        product = sp.block_collapse(F * M * F.T).subs(E * E.T, I)
        differences = [sp.simplify(b - m) for b, m in zip(product.blocks, M.blocks)]
        # a zero k x k block is SymPy's ZeroMatrix; record it as the scalar 0 so that the result reads as zeros
        prop4.append(sp.Matrix(2, 2, [sp.S.Zero if d.is_ZeroMatrix else d for d in differences]))
    return {
        "prop1": sp.simplify(haar_O2 - scalar),
        "prop1_rotations_only": sp.simplify(rotations_only - scalar),
        "prop2": sp.simplify(block_average - scalar - (A[0, 1] + A[1, 0]) / 2 * swap),
        "prop4": prop4,
    }
