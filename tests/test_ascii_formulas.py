"""The registry's ASCII formulas typeset whole on the ledger and errata pages (_ext/ascii_formulas.py, issue 37)."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import ascii_formulas  # noqa: E402
import ledger_text  # noqa: E402


def maths(text: str) -> list[str]:
    return [value for kind, value in ledger_text.ascii_pieces(text) if kind == "math"]


def test_a_formula_with_its_operators_is_one_piece_and_words_stay_words():
    sentence = ("At stationarity u^T C1 u = w^T C2 w, so lambda_2m / lambda_1M <= |u|^2 / |w|^2 (Eq. 109), "
                "which gives a band.")
    # a formula longer than a phone's line is cut before its relations, where a line may break
    assert maths(sentence) == [r"u^\top C1 u = w^\top C2 w", r"\lambda_{2m} / \lambda_{1M}", r"\leq  |u|^{2} / |w|^{2}"]
    assert ascii_formulas.broken(r"a = b") == ["a = b"]
    assert all(piece.count("{") == piece.count("}") for piece in ascii_formulas.broken(
        ascii_formulas.formula_tex("sqrt(x_1 + x_2 + x_3 + x_4 + x_5) = y_1 + y_2 + y_3 + y_4, z")))
    assert "which gives a band." in "".join(value for kind, value in ledger_text.ascii_pieces(sentence)
                                            if kind == "text")


@pytest.mark.parametrize("formula, tex", [
    ("0 < sigma < sqrt(2 / (sqrt(d) ||Gamma||_op))", r"0 < \sigma < \sqrt{2 / (\sqrt{d} \|\Gamma\|_{op})}"),
    ("T = 2e-4", r"T = 2 \times  10^{-4}"),
    ("Y^T P-perp_{X^T b_T} / ||X^T b_T||", r"Y^\top P^{\perp}_{X^\top b_{T}} / \|X^\top b_{T}\|"),
    ("omega_0 <~ 1/(M^0.99 ln M)", r"\omega_{0} \lesssim  1/(M^{0.99} \ln  M)"),
    ("abs(log(g_K^i / g_Q^i)) < log 2", r"|\log (g_{K}^{i} / g_{Q}^{i})| < \log  2"),
    ("sum_{i != j} zeta_ij", r"\sum_{i \neq  j} \zeta_{ij}"),
])
def test_formula_tex(formula, tex):
    assert ascii_formulas.formula_tex(formula) == tex


@pytest.mark.parametrize("sentence", [
    "the paper's lr and batch 200, 5 seeds",          # numbers and words, no operator
    "(Eq. 109), Fig. 4's panel a",                     # the paper's own numbering
    "for every i in [6]",
])
def test_a_sentence_without_an_operator_has_no_formula(sentence):
    assert ascii_formulas.formula_spans(sentence) == []


def test_a_formula_never_takes_a_bracket_it_does_not_close():
    text = "the band (Lam = I gives d^3 > d^2) holds"
    assert [text[start:end] for start, end in ascii_formulas.formula_spans(text)] == ["Lam = I", "d^3 > d^2"]
