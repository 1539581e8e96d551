"""Text of the ledger and errata pages as a reader sees it: the registry's ASCII mathematics and the papers'
quoted LaTeX cut into pieces of plain text and pieces of TeX, for MathJax to typeset.

The registry writes the mathematics of its statements, corrections and clarifications in TeX between ``$...$``, each
formula whole (issue 37; ``tests/test_registry_tex.py``); its other fields (a row's evidence, run, deciding run)
may still write ASCII (``W_V^T``, ``eta_Y``, ``(W_Q^i)^T``), and it quotes the papers verbatim, LaTeX included
(``\\ell\\left(\\sum_i^5 ...\\right)``). :func:`ascii_pieces` keeps each ``$...$`` as one formula and finds the
symbols and formulas of the ASCII around it (``ascii_formulas``), leaving the words alone; :func:`quote_pieces`
splits a verbatim quote into its ``$...$`` mathematics, its bare LaTeX (a fragment of a display, cut at the quote's
" ... " elisions) and its words. A piece is ``("text", str)`` or
``("math", tex)``; the quote itself stays in the registry, where the coverage check reads it.
"""

from __future__ import annotations

import re

GREEK = ("alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "iota", "kappa",
         "lambda", "mu", "nu", "xi", "rho", "sigma", "tau", "phi", "chi", "psi", "omega",
         "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Phi", "Psi", "Omega")
_GREEK_WORD = "|".join(sorted(GREEK, key=len, reverse=True))
# A script: a braced group (one level of nesting), a parenthesised group, or a run of letters and digits.
_SCRIPT = r"[_^](?:\{(?:[^{}]|\{[^{}]*\})*\}|\([^()\s]{1,12}\)|-?[^\W_]+\*?|\*)"
_ATOM = r"(?:[^\W\d_][^\W_]*|\((?:[^()]|\([^()]*\)){1,40}\))"
# A symbol: an atom with at least one script (W_K^i, (W_Q^i)^T, eta_Y), or a Greek letter on its own.
SYMBOL = re.compile(rf"(?<![\w\\]){_ATOM}(?:{_SCRIPT})+(?![\w])|\b(?:{_GREEK_WORD})\b(?!['-]\w)")
_ONE_SCRIPT = re.compile(_SCRIPT)
LATEX_COMMAND = re.compile(r"\\[A-Za-z]+|\\[{}|\\]")
ELISION = " ... "


# The registry's ASCII names of operators and of letters it abbreviates.
NAMES = {"sum": "\\sum", "prod": "\\prod", "ln": "\\ln", "log": "\\log", "exp": "\\exp", "min": "\\min",
         "max": "\\max", "lim": "\\lim", "tr": "\\operatorname{tr}", "Lam": "\\Lambda", "eps": "\\epsilon"}


def _greek(text: str) -> str:
    return re.sub(rf"\b({_GREEK_WORD})\b", r"\\\1", text)


def _script_tex(script: str) -> str:
    """``_K`` -> ``_{K}``, ``^T`` -> ``^\\top``, ``^-1`` -> ``^{-1}``, ``_{X^T b_T}`` -> ``_{X^\\top b_{T}}``."""
    mark, body = script[0], script[1:]
    if body.startswith("{"):
        body = ascii_tex(body[1:-1])
    elif body.startswith("("):
        body = "(" + ascii_tex(body[1:-1]) + ")"
    elif mark == "^" and body == "T":
        return "^\\top"
    elif body == "*":
        return "^*" if mark == "^" else "_*"
    else:
        body = _greek(body.replace("*", "^*")) if body.rstrip("*") in GREEK else body.replace("*", "")
    return mark + "{" + body + "}"


def ascii_tex(text: str) -> str:
    """TeX for an ASCII expression of the registry: Greek names, scripts, ``sqrt(...)``."""
    out, position = [], 0
    for match in SYMBOL.finditer(text):
        out.append(_plain_tex(text[position:match.start()]))
        out.append(_symbol_tex(match.group()))
        position = match.end()
    out.append(_plain_tex(text[position:]))
    return "".join(out)


def _plain_tex(text: str) -> str:
    text = re.sub(r"\bsqrt\(([^()]*)\)", lambda m: "\\sqrt{" + ascii_tex(m.group(1)) + "}", text)
    return _greek(text).replace("{", "\\{").replace("}", "\\}").replace("%", "\\%")


def _symbol_tex(symbol: str) -> str:
    first = _ONE_SCRIPT.search(symbol, 1 if symbol.startswith("(") else 0)
    if symbol.startswith("("):
        depth, end = 0, 0
        for index, char in enumerate(symbol):
            depth += {"(": 1, ")": -1}.get(char, 0)
            if depth == 0:
                end = index + 1
                break
        base = "(" + ascii_tex(symbol[1:end - 1]) + ")"
        scripts = symbol[end:]
    else:
        end = first.start() if first else len(symbol)
        base = _greek(symbol[:end]) if symbol[:end] in GREEK else NAMES.get(symbol[:end], symbol[:end])
        if len(base) > 1 and not base.startswith("\\"):
            base = "\\mathrm{" + base + "}" if base.isalpha() and base.islower() and len(base) > 2 else base
        scripts = symbol[end:]
    merged: list[str] = []   # W_KQ_11 -> W_{KQ,11}: TeX refuses a double subscript
    for script in (_script_tex(script) for script in _ONE_SCRIPT.findall(scripts)):
        if merged and merged[-1][0] == script[0]:
            merged[-1] = merged[-1][0] + "{" + merged[-1][1:].strip("{}") + "," + script[1:].strip("{}") + "}"
        else:
            merged.append(script)
    return base + "".join(merged)


# A code name (lemma1_gradient_counts, x_query) is not a symbol.
CODE_NAME = re.compile(r"[a-z0-9]+(?:_[a-z0-9]{3,})+")


def ascii_pieces(text: str) -> list[tuple[str, str]]:
    """A registry sentence as text and math pieces: each ``$...$`` as one TeX piece, whole however long (the
    registry's author wrote it as one formula; a phone shrinks or scrolls one wider than its column,
    ``fit_equations.js``); outside them each ASCII formula whole (``ascii_formulas``: ``d = 8``,
    ``lambda_2m / lambda_1M <= |u|^2``) and each other ASCII symbol (``W_V^T``, ``eta_Y``, ``alpha``) as TeX, the
    words as words."""
    import ascii_formulas   # it builds on this module's symbols

    pieces: list[tuple[str, str]] = []
    for index, part in enumerate(re.split(r"(?<!\\)(\$[^$]+\$)", text)):
        pieces += [("math", part[1:-1].strip())] if index % 2 else ascii_formulas.sentence_pieces(part)
    return [piece for piece in pieces if piece[1]]


def symbol_pieces(text: str) -> list[tuple[str, str]]:
    """A stretch of a registry sentence with no whole formula: each symbol as TeX, the words as words."""
    pieces: list[tuple[str, str]] = []
    position = 0
    for match in SYMBOL.finditer(text):
        if CODE_NAME.fullmatch(match.group()):
            continue
        if match.start() > position:
            pieces.append(("text", text[position:match.start()]))
        pieces.append(("math", _symbol_tex(match.group())))
        position = match.end()
    if position < len(text):
        pieces.append(("text", text[position:]))
    return pieces


def _balanced(tex: str) -> str:
    """Close what a quoted fragment of a display leaves open (a brace, an environment, ``\\left``)."""
    environments = re.findall(r"\\begin\{(\w+\*?)\}", tex)
    for name in reversed(environments):
        if tex.count(f"\\end{{{name}}}") < environments.count(name):
            tex += f" \\end{{{name}}}"
    if not environments:
        tex = re.sub(r"(?<!\\)&", "", tex)
        tex = re.sub(r"\\\\(?![A-Za-z{}|])", r"\\quad ", tex)
    if len(re.findall(r"\\left(?![a-z])", tex)) != len(re.findall(r"\\right(?![a-z])", tex)):
        tex = re.sub(r"\\(left|right)(?![a-z])\s*\.?", "", tex)
    opened = len(re.findall(r"(?<!\\)\{", tex)) - len(re.findall(r"(?<!\\)\}", tex))
    return ("{" * -opened) + tex + ("}" * opened)


def _split_at_relations(tex: str) -> list[str]:
    """A long formula cut before each relation at its top level (outside braces, ``\\left...\\right`` and
    environments), so that a line can break between the pieces."""
    if len(tex) < 60 or "\\begin" in tex:
        return [tex]
    pieces, start, depth = [], 0, 0
    relation = re.compile(r"\\(?:leq?|geq?|leqslant|geqslant|lesssim|gtrsim|to|rightarrow|approx|equiv)(?![A-Za-z])|"
                          r"(?<![<>:\\!])=|(?<!\\)[<>]|:=")
    index = 0
    while index < len(tex):
        char = tex[index]
        if tex.startswith("\\left", index) and not tex[index + 5:index + 6].isalpha():
            depth += 1
        elif tex.startswith("\\right", index) and not tex[index + 6:index + 7].isalpha():
            depth -= 1
        elif char == "{" and (index == 0 or tex[index - 1] != "\\"):
            depth += 1
        elif char == "}" and (index == 0 or tex[index - 1] != "\\"):
            depth -= 1
        elif depth == 0 and index > start + 8:
            match = relation.match(tex, index)
            if match:
                pieces.append(tex[start:index].strip())
                start = index
                index = match.end()
                continue
        index += 1
    pieces.append(tex[start:].strip())
    return [piece for piece in pieces if piece]


def _math_pieces(tex: str) -> list[tuple[str, str]]:
    parts = _split_at_relations(_balanced(tex.strip()))
    pieces: list[tuple[str, str]] = []
    for index, part in enumerate(parts):
        if index:
            pieces.append(("text", " "))
        pieces.append(("math", part))
    return pieces


def _looks_like_latex(text: str) -> bool:
    return bool(LATEX_COMMAND.search(text) or re.search(r"[_^]\{", text))


def quote_pieces(quote: str) -> list[tuple[str, str]]:
    """A verbatim quote as text and math pieces: its ``$...$`` as math, each stretch between the quote's
    elisions that holds bare LaTeX as math, the rest as words (their ASCII symbols typeset as well)."""
    pieces: list[tuple[str, str]] = []
    for index, part in enumerate(re.split(r"(\$[^$]+\$)", quote)):
        if index % 2:
            pieces += _math_pieces(part[1:-1])
            continue
        stretches = part.split(ELISION)
        for number, stretch in enumerate(stretches):
            if number:
                pieces.append(("text", " … "))
            if not stretch:
                continue
            if _looks_like_latex(stretch):
                lead = re.match(r"^[\s,;.]*", stretch).group()
                trail = re.search(r"[\s,;]*$", stretch).group()
                core = stretch[len(lead):len(stretch) - len(trail)]
                if lead:
                    pieces.append(("text", lead))
                pieces += _math_pieces(core)
                if trail:
                    pieces.append(("text", trail))
            else:
                pieces += symbol_pieces(stretch)
    return [piece for piece in pieces if piece[1]]


def ascii_markdown(text: str, escape) -> str:
    """A registry sentence as MyST markdown: its words escaped with ``escape``, its symbols as ``{math}``."""
    return pieces_markdown(ascii_pieces(text), escape)


def pieces_markdown(pieces, escape) -> str:
    return "".join(escape(value) if kind == "text" else "{math}`" + value + "`" for kind, value in pieces)
