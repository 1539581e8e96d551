"""The library's layout is the book's table of contents (issue 34): one package per paper, the shared machinery
beside them, and nothing a reader cannot hold in one sitting.

- Every module of ``src/icllib/`` is either shared machinery at the top level or inside one paper's package
  (:data:`PAPERS`); a paper package has an ``__init__.py`` that says what it offers.
- The import graph of ``icllib`` (every ``import`` a module makes, at its top or inside a function) has no cycle;
  a paper's package imports no other paper's; the shared machinery imports no paper's package, except
  :data:`SHARED_TO_PAPER`, each with its reason.
- No module of ``src/`` or ``_ext/`` is over :data:`MAX_MODULE_LINES` lines, and no function over
  :data:`MAX_FUNCTION_LINES` (from its ``def`` to its last line, its docstring left out).
"""

import ast
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import execution_keys  # noqa: E402  (the execution cache's reading of imports)
PACKAGE = ROOT / "src" / "icllib"
PAPERS = ("scan_snap", "induction", "lsa", "balance")
SHARED = ("__init__", "claims", "claim_registry", "cards", "config", "coverage", "deciding", "executor",
          "exercises", "figure_screens", "plotting", "plotting_interactive", "validation")
# The one shared module that reaches into papers: a deciding run (icllib.deciding) trains a chapter's model at the
# paper's setting, and imports that model by name when the run starts (deciding._chapter_module), so that a
# chapter reading the archive does not depend on the other chapters' code.
SHARED_TO_PAPER = {"deciding": {"balance", "induction"}}
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def imported(path: Path, known: set[str]) -> set[str]:
    """The icllib modules (dotted, relative to the package) that the module at ``path`` imports, read as the
    execution cache's key reads them (the packages above each one included)."""
    name = module_name(path)
    found = execution_keys._imported_modules(path.read_text(encoding="utf-8"), PACKAGE,
                                              "" if name == "__init__" else name)
    assert found is not None, f"icllib.{name} imports all of icllib (import icllib or a star import)"
    return {module for module in found if module in known}


def graph() -> dict[str, set[str]]:
    found = modules()
    return {name: imported(path, set(found)) - {name} for name, path in found.items()}


def paper_of(module: str) -> str | None:
    top = module.split(".")[0]
    return top if top in PAPERS else None


def test_the_top_level_is_the_table_of_contents():
    top = {path.stem for path in PACKAGE.glob("*.py")}
    assert top == set(SHARED), f"a module at the top of icllib that is neither shared nor a paper's: {top ^ set(SHARED)}"
    packages = {path.name for path in PACKAGE.iterdir() if path.is_dir() and path.name not in {"registry", "__pycache__"}}
    assert packages == set(PAPERS)
    for paper in PAPERS:
        docstring = ast.get_docstring(ast.parse((PACKAGE / paper / "__init__.py").read_text(encoding="utf-8")))
        assert docstring and all(f"icllib.{paper}.{path.stem}" in docstring
                                 for path in (PACKAGE / paper).glob("*.py") if path.stem != "__init__"), \
            f"icllib.{paper}'s __init__.py must name each of its modules"


def test_the_import_graph_has_no_cycle():
    edges, state, path = graph(), {}, []

    def visit(module):
        state[module] = "open"
        path.append(module)
        for other in sorted(edges[module]):
            if state.get(other) == "open":
                pytest.fail(f"import cycle: {' -> '.join(path[path.index(other):] + [other])}")
            if other not in state:
                visit(other)
        path.pop()
        state[module] = "done"

    for module in sorted(edges):
        if module not in state:
            visit(module)


def test_no_paper_imports_another_and_the_shared_machinery_imports_none():
    for module, others in graph().items():
        paper = paper_of(module)
        reached = {paper_of(other) for other in others} - {None, paper}
        if paper is not None:
            assert not reached, f"icllib.{module} (paper {paper}) imports another paper's package: {reached}"
        else:
            assert not reached, f"shared icllib.{module} imports a paper's package: {reached}"


def test_the_shared_machinery_reaches_a_paper_only_where_listed():
    for module, papers in SHARED_TO_PAPER.items():
        source = (PACKAGE / f"{module}.py").read_text(encoding="utf-8")
        named = set(re.findall(r"_chapter_module\(\"(\w+)[\w.]*\"\)", source))
        assert named <= papers, f"icllib.{module} imports {named - papers} by name, which SHARED_TO_PAPER does not list"


def function_lengths(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if ast.get_docstring(node, clean=False) is not None:
                length -= node.body[0].end_lineno - node.body[0].lineno + 1
            yield node.name, node.lineno, length


CODE = sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "_ext").rglob("*.py")])


@pytest.mark.parametrize("path", CODE, ids=[str(path.relative_to(ROOT)) for path in CODE])
def test_no_module_or_function_is_too_long(path):
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{path.relative_to(ROOT)} has {lines} lines (at most {MAX_MODULE_LINES})"
    long = [f"{name} (line {line}: {length} lines)" for name, line, length in function_lengths(path)
            if length > MAX_FUNCTION_LINES]
    assert not long, f"{path.relative_to(ROOT)}: functions over {MAX_FUNCTION_LINES} lines: {', '.join(long)}"
