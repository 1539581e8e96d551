"""How the chapters' code cells read on the page: formatted to the code column, the set-up cell collapsed,
and no cell relying on an echoed value (the book's kernels echo none, so nothing like
"<matplotlib.legend.Legend at 0x...>" or a check's bare number appears under the code)."""

import ast
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))


def code_cells(path):
    return [cell for cell in jupytext.read(path).cells if cell.cell_type == "code"]


def ends_with_a_bare_value(source: str) -> bool:
    """A cell ending in an expression that is not a call: the book's kernels echo nothing
    (``executions.KERNEL_CONFIG``), so such a value would vanish from the page; print or display it."""
    body = ast.parse(source).body
    return bool(body) and isinstance(body[-1], ast.Expr) and not isinstance(body[-1].value, ast.Call)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_set_up_cell_is_collapsed(path):
    assert "hide-input" in code_cells(path)[0].metadata.get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_cell_ends_with_a_bare_value(path):
    bare = [cell.source.splitlines()[-1] for cell in code_cells(path) if ends_with_a_bare_value(cell.source)]
    assert not bare, f"print or display what these cells should show: {bare}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_control_characters(path):
    """A TeX macro written through a Python string without r"" ("\\alpha" as "\\a" + "lpha") leaves a control
    character in the text, which MathJax cannot typeset; it happened once to $\\alpha_3$ and $\\beta_2$."""
    found = [(number, repr(line)[:80]) for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
             if any(ord(character) < 32 and character != "\t" for character in line)]
    assert not found, f"control characters at lines {found}"


def test_the_chapters_code_is_formatted_to_the_column():
    """black with the settings of pyproject.toml (100 characters, long strings split): `make format` fixes it."""
    root = NOTEBOOKS[0].parents[1]
    result = subprocess.run([str(Path(sys.executable).parent / "black"), "--check", "--diff", "notebooks"], cwd=root,
                            capture_output=True, text=True)
    assert result.returncode == 0, "run `make format`:\n" + result.stdout[-3000:]


@pytest.mark.parametrize(("source", "bare"), [
    ("x = 1\nx", True), ("x.shape", True), ('check_claim("a", 1, expected=1)', False), ("print(1)", False),
    ("ax.legend()", False), ("x = 1", False)])
def test_the_bare_value_rule(source, bare):
    assert ends_with_a_bare_value(source) is bare


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_every_line_of_a_markdown_cell_is_commented(path):
    """In the py:percent source a markdown cell's lines are comments; a bare line there (an import a tool
    inserted after a commented one, say) would show in the prose as code, and black would format it as code."""
    bare, markdown = [], False
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("# %%"):
            markdown = "[markdown]" in line
        elif markdown and line.strip() and not line.startswith("#"):
            bare.append(f"line {number}: {line}")
    assert not bare, bare
