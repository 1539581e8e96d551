"""The registry's statements, corrections, clarifications and their evidence write their mathematics in TeX between
``$...$``, each formula whole (issue 37): no ASCII formula is left for the ledger and the errata pages to guess at
(``_ext/ascii_formulas.py`` cut such formulas into pieces with ASCII between them), and each ``$...$`` is one
typeset formula there. Words quoted from a paper stay as printed, whatever they hold."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from icllib.claim_registry import registry

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import ascii_formulas  # noqa: E402
import ledger_text  # noqa: E402

TEX = re.compile(r"(?<!\\)\$[^$]+\$")
# A paper's words in quotation marks, verbatim (the coverage check reads them): they stay as the paper prints them.
QUOTED = re.compile(r"“[^”]*”|\"[^\"]*\"")
# ASCII that token_kind takes for a word: an accent or a dot written out (alpha-dot, y-tilde, P-perp) and the
# names of a root, of pi and of infinity.
SPELLED = re.compile(r"[A-Za-z]\w*-(?:dot|tilde|hat|bar|perp)|sqrt|pi|inf|infinity")
# Code a sentence names (a call of one of icllib's or NumPy's functions, a keyword argument) is not mathematics.
CODE = re.compile(r"(?P<name>[a-z][a-z_]{3,})\(.*|[a-z_]+=(?:True|False|None)")
MATH_NAMES = {"sqrt", "softmax", "diag", "ceil", "floor", "erf", "abs"}
# Between two formulas of a sentence, nothing but spaces and operators: one formula cut in two.
ONLY_OPERATORS = re.compile(r"[\s+\-−=<>/*^|·×≤≥≠→≈~]*")


def ascii_mathematics(text: str) -> list[str]:
    """The tokens of a registry sentence, outside its ``$...$`` and its quotations, that are ASCII mathematics:
    an operator or a mathematical token of ``ascii_formulas.token_kind``, a spelled-out accent or name
    (:data:`SPELLED`), or an ``x`` between two numbers."""
    tokens = TEX.sub("§", QUOTED.sub("§", text)).split()
    found = []
    for index, token in enumerate(tokens):
        core = token.strip("([{,;:.)]}")
        code = CODE.fullmatch(core)
        if code and code.group("name") not in MATH_NAMES:
            continue
        times = token == "x" and 0 < index < len(tokens) - 1 and all(
            re.match(r"\d", neighbour) for neighbour in (tokens[index - 1], tokens[index + 1]))
        if ascii_formulas.token_kind(token) in ("op", "math") or SPELLED.fullmatch(core) or times:
            found.append(token)
    return found


def registry_texts() -> list[tuple[str, str]]:
    """``(where, text)`` for every statement, and every erratum's and note's correction (or clarification) and
    evidence: the texts the ledger, the errata page and the downloads show as the book's own sentences."""
    book = registry()
    texts = [(f"{claim.id} statement", claim.statement) for claim in book.claims.values()]
    for passages, name in ((book.errata, "correction"), (book.notes, "clarification")):
        for passage in passages.values():
            texts += [(f"{passage.id} {name}", passage.correction), (f"{passage.id} evidence", passage.evidence)]
    return texts


def test_no_statement_erratum_or_note_writes_ascii_mathematics():
    found = [f"{where}: {' '.join(tokens)}" for where, text in registry_texts() if (tokens := ascii_mathematics(text))]
    assert not found, ("ASCII mathematics outside $...$ (write each formula whole in TeX, "
                       "e.g. $\\lambda_{2m} / \\lambda_{1M} \\leq \\|u\\|^2 / \\|w\\|^2$):\n" + "\n".join(found))


@pytest.mark.parametrize("ascii, tex", [
    # statements as the registry wrote them before issue 37, and as it writes them now
    ("which gives lambda_2m / lambda_1M <= |u|^2 / |w|^2 (Eqs. 110-112)",
     r"which gives $\lambda_{2m} / \lambda_{1M} \leq \|u\|^2 / \|w\|^2$ (Eqs. 110-112)"),
    ("Applying that alpha(T_1 + T_2 + T_3) = 1/2 gives T_3 < 4N^2 + O(1/N) = O(N^2).",
     r"Applying that $\alpha(T_1 + T_2 + T_3) = 1/2$ gives $T_3 < 4N^2 + O(1/N) = O(N^2)$."),
    ("thus q_{l|m,n} -> P(l|m,n) as T -> infinity.",
     r"thus $q_{l|m,n} \to \mathbb{P}(l|m,n)$ as $T \to \infty$."),
    ("vectors sampled from an i.i.d. Gaussian with variance 1/sqrt(D).",
     r"vectors sampled from an i.i.d. Gaussian with variance $1/\sqrt{D}$."),
    ("Y^T P-perp_{X^T b_T} / ||X^T b_T||", r"$Y^\top \frac{P^\perp_{X^\top b_T}}{\|X^\top b_T\|}$"),
    ("if E_ki > 0 for some k != i", r"if $E_{ki} > 0$ for some $k \neq i$"),
    ("the gradient flow alpha-dot = -dL/dalpha", r"the gradient flow $\dot\alpha = -\partial L/\partial\alpha$"),
    ("T_beta/N^2 tends to sqrt(2 pi) erf(1/(2 sqrt 2))", r"$T_\beta/N^2$ tends to $\sqrt{2\pi}\, \operatorname{erf}(1/(2\sqrt{2}))$"),
    ("input 50 x 6 with X_{:,1:5} i.i.d.", r"input $50 \times 6$ with $X_{:,1:5}$ i.i.d."),
    ("the extracted product y-hat", r"the extracted product $\hat{y}$"),
])
def test_the_rule_finds_ascii_mathematics_and_passes_its_tex(ascii, tex):
    assert ascii_mathematics(ascii), ascii
    assert ascii_mathematics(tex) == [], tex


@pytest.mark.parametrize("text", [
    'the paper\'s own App. B.11 says "for every i in [6]"',                # a quotation stays as printed
    "noting that there “it is not clear how to set eta_Y and eta_Z properly”",
    "emergence_times(1) gives $T_\\alpha = \\infty$",                     # code, not mathematics
    "speed_control_gamma evaluates both forms (discrete=True for Eq. 85).",
    "to 1e-12 relative, at lr 4e-3 and batch 200 (Eqs. 110-112; rule R4; 55% at $K = 3$)",
])
def test_quotations_code_and_plain_numbers_are_not_ascii_mathematics(text):
    assert ascii_mathematics(text) == []


def test_each_formula_of_a_sentence_is_one_piece_on_the_pages():
    """``ledger_text.ascii_pieces`` (the ledger, the errata page) keeps each ``$...$`` whole, however long, and no
    two formulas of a registry sentence stand side by side with only spaces or operators between them."""
    long = "$" + " + ".join(f"\\lambda_{{{k}}} \\|u_{k}\\|^2" for k in range(8)) + " \\leq 1$"
    assert ledger_text.ascii_pieces(f"so {long} holds") == [("text", "so "), ("math", long[1:-1]), ("text", " holds")]
    cut = []
    for where, text in registry_texts():
        pieces = ledger_text.ascii_pieces(text)
        maths = [value for kind, value in pieces if kind == "math"]
        formulas = [match.group()[1:-1].strip() for match in TEX.finditer(text)]
        assert all(formula in maths for formula in formulas), where
        for before, between, after in zip(pieces, pieces[1:], pieces[2:]):
            if before[0] == after[0] == "math" and between[0] == "text" and ONLY_OPERATORS.fullmatch(between[1]):
                cut.append(f"{where}: {before[1]!r}{between[1]!r}{after[1]!r}")
        cut += [f"{where}: {a[1]!r}{b[1]!r}" for a, b in zip(pieces, pieces[1:]) if a[0] == b[0] == "math"]
    assert not cut, "formulas cut in pieces:\n" + "\n".join(cut)
