"""The registry's ASCII formulas found whole in its sentences, for the ledger and the errata to typeset each as one
formula: "lambda_2m / lambda_1M <= |u|^2 / |w|^2" as \\(\\lambda_{2m} / \\lambda_{1M} \\leq |u|^2 / |w|^2\\), not three
typeset symbols between ASCII operators (issue 37).

A sentence is cut at its spaces into tokens. A token is an operator (``=``, ``<=``, ``->``, a lone ``-`` or ``/``),
mathematical (it holds ``=``, ``<``, ``>``, ``^`` or ``|``, a symbol of :data:`ledger_text.SYMBOL`, a fraction such
as ``1/K``, or a call such as ``sqrt(d)``), weak (a single letter or a number: mathematics only beside an operator)
or a word. A formula is a longest stretch of tokens that are not words, holding an operator, and neither starting
nor ending with one; brackets it leaves open at either end stay text. The rest of the sentence is left to
:func:`ledger_text.ascii_pieces`'s symbols.
"""

from __future__ import annotations

import re

import ledger_text

OPERATORS = {"=": "=", "<": "<", ">": ">", "<=": r"\leq", ">=": r"\geq", "!=": r"\neq", ">>": r"\gg", "<<": r"\ll",
             "->": r"\to", "=>": r"\Rightarrow", ":=": ":=", "~": r"\approx", "+": "+", "-": "-", "/": "/",
             "*": r"\cdot", "+/-": r"\pm", ".": r"\cdot"}
# Names the registry writes in ASCII inside a formula, as TeX's operators.
FUNCTIONS = {"Lam": r"\Lambda", "eps": r"\epsilon", "ell": r"\ell", "exp": r"\exp", "ln": r"\ln", "log": r"\log", "min": r"\min", "max": r"\max",
             "tr": r"\operatorname{tr}", "Cov": r"\operatorname{Cov}", "Var": r"\operatorname{Var}",
             "erf": r"\operatorname{erf}", "diag": r"\operatorname{diag}", "Vec": r"\operatorname{vec}"}
_EDGE = "([{,;:.)]}"
_CALL = re.compile(r"(?:sqrt|exp|ln|log|tr|abs|max|min|[a-zA-Z])\(")
_FRACTION = re.compile(r"(?:\d[\d.]*|[A-Za-z])(?:/(?:\d[\d.]*|[A-Za-z]\w{0,2}))+")
_WEAK = re.compile(r"\d[\d.,]*(?:e-?\d+)?|[A-Za-z]|[A-Z]\d{1,2}|[a-z]\d")
_PAPER_WORDS = re.compile(r"^(?:Eq|Eqs|Fig|Figs|Sec|App|Thm|Lemma|Table|line|lines)\b")


def token_kind(token: str) -> str:
    """``op``, ``math``, ``weak`` or ``word`` (see the module's docstring)."""
    if token in OPERATORS:
        return "op"
    core = token.strip(_EDGE)
    if not core or _PAPER_WORDS.match(core) or re.search(r"[a-z]{4,}'s$|^'|'$", core):
        return "word"
    if re.search(r"[=<>^|]", core) or _CALL.search(core) or _FRACTION.fullmatch(core):
        return "math"
    if re.match(r"(?:" + "|".join(FUNCTIONS) + r")(?:$|[(\[])", core):
        return "weak"
    if ledger_text.SYMBOL.fullmatch(core) and not ledger_text.CODE_NAME.fullmatch(core):
        return "math"
    if _WEAK.fullmatch(core):
        return "weak"
    return "word"


def formula_spans(text: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` of each whole formula of an ASCII sentence."""
    tokens = [(match.start(), match.end(), match.group()) for match in re.finditer(r"\S+", text)]
    kinds = [token_kind(token) for _, _, token in tokens]
    spans, index = [], 0
    while index < len(tokens):
        if kinds[index] == "word":
            index += 1
            continue
        end, depth = index, 0
        while end < len(tokens) and kinds[end] != "word":
            token = tokens[end][2]
            depth += token.count("(") + token.count("[") - token.count(")") - token.count("]")
            end += 1
            if depth <= 0 and token.endswith((",", ";")):
                break   # a comma outside brackets ends a formula: "u^T C1 u = a, w^T C2 w = b"
        stretch = list(range(index, end))
        while stretch and kinds[stretch[0]] == "op":
            stretch.pop(0)
        while stretch and kinds[stretch[-1]] == "op":
            stretch.pop()
        if any(kinds[position] == "op" for position in stretch) or (
                len(stretch) > 1 and any(kinds[position] == "math" for position in stretch)):
            span = _trimmed(text, tokens[stretch[0]][0], tokens[stretch[-1]][1])
            if span:
                spans.append(span)
        index = end
    return spans


_OPENING, _CLOSING = "([{", ")]}"


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The longest stretch of the span between brackets it leaves unmatched (a formula never starts or ends in the
    middle of a bracket), without the punctuation at its ends."""
    stack, cuts = [], []
    for position in range(start, end):
        if text[position] in _OPENING:
            stack.append(position)
        elif text[position] in _CLOSING:
            if stack and _OPENING.index(text[stack[-1]]) == _CLOSING.index(text[position]):
                stack.pop()
            else:
                cuts.append(position)
    cuts = sorted(cuts + stack)
    bounds = [start - 1, *cuts, end]
    pieces = [(low + 1, high) for low, high in zip(bounds, bounds[1:])]
    low, high = max(pieces, key=lambda piece: (any(f" {op} " in f" {text[piece[0]:piece[1]]} " for op in OPERATORS
                                                   if op not in ".*"), piece[1] - piece[0]))
    while low < high and text[low] in " ,;:.":
        low += 1
    while high > low and text[high - 1] in " ,;:.":
        high -= 1
    return (low, high) if high > low else None


def _balanced_call(text: str, name: str, replace) -> str:
    """Each ``name(...)`` of ``text``, its parentheses matched, as ``replace(inside)``."""
    out, position = [], 0
    for match in re.finditer(rf"(?<![\w\\]){name}\(", text):
        if match.start() < position:
            continue
        depth, index = 1, match.end()
        while index < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[index], 0)
            index += 1
        if depth:
            break
        out += [text[position:match.start()], replace(text[match.end():index - 1])]
        position = index
    return "".join(out) + text[position:]


# Placeholders that ledger_text.ascii_tex passes through untouched, put back as TeX once it has run.
_HELD = {"≤": r"\leq ", "≥": r"\geq ", "≠": r"\neq ", "≫": r"\gg ", "≪": r"\ll ", "→": r"\to ", "⇒": r"\Rightarrow ",
         "≈": r"\approx ", "≲": r"\lesssim ", "⊥": r"\perp", "±": r"\pm ", "·": r"\cdot ", "‖": r"\|", "⟦": "{", "⟧": "}", "√": r"\sqrt"}
_ASCII_OPERATORS = (("+/-", "±"), ("<~", "≲"), ("<=", "≤"), (">=", "≥"), ("!=", "≠"), (">>", "≫"), ("<<", "≪"), ("->", "→"),
                    ("=>", "⇒"), ("||", "‖"))


def formula_tex(formula: str) -> str:
    """TeX for one ASCII formula: its symbols (``ledger_text.ascii_tex``), its operators, ``sqrt(...)`` and
    ``abs(...)`` with their parentheses matched, ``2e-4`` as ``2 \\times 10^{-4}``, leftover scripts braced."""
    text = f" {formula} "
    for ascii, held in _ASCII_OPERATORS:
        text = text.replace(ascii, held)
    text = re.sub(r"(?<=\s)~(?=\s)", "≈", text).replace(" * ", " · ").replace(" . ", " · ")
    def calls(part: str) -> str:
        part = _balanced_call(part, "sqrt", lambda inside: "√⟦" + calls(inside) + "⟧")
        return _balanced_call(part, "abs", lambda inside: "|" + calls(inside) + "|")

    text = calls(text)
    text = re.sub(r"\bsqrt\s+(\d[\d.]*\d|\d|[A-Za-z])\b", r"√⟦\1⟧", text)
    text = re.sub(r"\b([A-Z])-perp(?![A-Za-z])", r"\1^⟦⊥⟧", text)
    text = re.sub(r"\^(-?\d+\.\d+)", r"^⟦\1⟧", text)
    # a script after a digit, a bracket or a norm, which ascii_tex's symbols do not take: its braces kept as TeX's
    text = re.sub(r"(?<=[^A-Za-z\s])([_^])\{([^{}]*)\}", r"\1⟦\2⟧", text)
    text = re.sub(r"(?<![\w.])(\d+(?:\.\d+)?)e(-?)0*(\d+)\b", r"\1 × 10^⟦\2\3⟧", text)
    tex = ledger_text.ascii_tex(text.strip())
    tex = re.sub(r"(?<![\\\w])(" + "|".join(FUNCTIONS) + r")(?![\w{])", lambda match: FUNCTIONS[match.group(1)] + " ",
                 tex)
    tex = re.sub(r"\^(-?\d+\.\d+|-?[A-Za-z0-9]+|\(-?[\w/]+\))(?![\w{])",
                 lambda match: "^\\top" if match.group(1) == "T" else "^{" + match.group(1).strip("()") + "}", tex)
    tex = re.sub(r"(?<=[\w)|}\]‖⟧])_([A-Za-z0-9]{2,})(?![\w{])", r"_{\1}", tex)
    for held, tex_text in _HELD.items():
        tex = tex.replace(held, tex_text)
    return tex.replace("×", r"\times ").replace("&", r"\&").replace("#", r"\#").strip()


# A formula longer than this is cut where a line may break: before a relation or a binary + or -, after a comma or
# semicolon, outside TeX's groups (a phone's column holds about 30 characters of typeset mathematics).
BREAK_AFTER = 28
_BREAK = re.compile(r"(?=\\(?:leq|geq|neq|approx|lesssim|gg|ll|to|Rightarrow)\b|(?<![<>:\\])=|(?<!\\)[<>])"
                    r"|(?<=[,;]) |(?<= )(?=[-+] )")


def broken(tex: str) -> list[str]:
    """A long formula's TeX cut into pieces that a line may break between (see :data:`BREAK_AFTER`); each piece
    is TeX on its own (no group left open)."""
    if len(tex) <= BREAK_AFTER or "\\begin" in tex:
        return [tex]
    pieces, start, depth = [], 0, 0
    for position, char in enumerate(tex):
        # only TeX's groups must close within a piece; a bracket or a bar may open in one and close in the next
        if char == "{" and tex[position - 1:position] != "\\":
            depth += 1
        elif char == "}" and tex[position - 1:position] != "\\":
            depth -= 1
        elif depth == 0 and position - start >= 12 and _BREAK.match(tex, position):
            pieces.append(tex[start:position].strip())
            start = position
    pieces.append(tex[start:].strip())
    return [piece for piece in pieces if piece]


def sentence_pieces(text: str) -> list[tuple[str, str]]:
    """An ASCII sentence as text and math pieces: each whole formula as one TeX piece, the rest as
    ``ledger_text.ascii_pieces`` cuts it (its symbols typeset, its words as words)."""
    pieces: list[tuple[str, str]] = []
    position = 0
    for start, end in formula_spans(text):
        if start > position:
            pieces += ledger_text.symbol_pieces(text[position:start])
        for index, part in enumerate(broken(formula_tex(text[start:end]))):
            pieces += [("text", " ")] * bool(index) + [("math", part)]
        position = end
    if position < len(text):
        pieces += ledger_text.symbol_pieces(text[position:])
    return pieces
