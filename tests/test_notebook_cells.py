"""How the chapters' code cells read on the page: the set-up cell is collapsed, and no cell echoes a bare
return value (a check's measured number, ``True``, ``'default'``) under its code."""

import ast
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.py"))
# Calls whose value is None: they print, draw or glue, and echo nothing.
SHOWING = {"print", "display", "show_table", "glue"}


def code_cells(path):
    return [cell for cell in jupytext.read(path).cells if cell.cell_type == "code"]


def echoes_a_value(source: str) -> bool:
    body = ast.parse(source).body
    if not body or not isinstance(body[-1], ast.Expr) or source.rstrip().endswith(";"):
        return False
    value = body[-1].value
    name = value.func.id if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) else None
    attribute = value.func.attr if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) else None
    return name not in SHOWING and attribute not in SHOWING


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_the_set_up_cell_is_collapsed(path):
    assert "hide-input" in code_cells(path)[0].metadata.get("tags", [])


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.stem)
def test_no_cell_echoes_a_bare_value(path):
    echoing = [cell.source.splitlines()[-1] for cell in code_cells(path) if echoes_a_value(cell.source)]
    assert not echoing, f"end these cells with ';' or print what they show: {echoing}"


@pytest.mark.parametrize(("source", "echoes"), [
    ("x = 1\nx", True), ('check_claim("a", 1, expected=1)', True), ('check_claim("a", 1, expected=1);', False),
    ("print(1)", False), ("ax.legend()", True), ("x = 1", False)])
def test_the_echo_rule(source, echoes):
    assert echoes_a_value(source) is echoes
