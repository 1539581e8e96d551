"""The execution cache's keys: what a chapter's outputs depend on, as a SHA-256 per part (``executions`` stores and
runs under them; its docstring lists the parts).

A notebook's ``icllib`` dependencies are the modules its code cells import, followed through the modules' own
imports (absolute and relative), with the ``__init__.py`` of every package on the way: a chapter importing
``icllib.lsa.theory`` depends on ``icllib/__init__.py``, ``icllib/lsa/__init__.py``, ``icllib/lsa/theory.py`` and
what they import, and on no other paper's package.
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import platform
import re
from functools import lru_cache
from pathlib import Path

import source_archive
from icllib.claims import ARCHIVE_FOLDER

# PyTorch's, NumPy's, MKL's and OpenBLAS's choice of SIMD kernels, when a run forces one (else the CPU's own).
CPU_KERNEL_VARIABLES = ("ATEN_CPU_CAPABILITY", "NPY_DISABLE_CPU_FEATURES", "MKL_ENABLE_INSTRUCTIONS",
                        "OPENBLAS_CORETYPE")
PINS = ("requirements.txt", "pyproject.toml")


def package_folder() -> Path:
    """The ``icllib`` the kernels will import (the first on ``sys.path``, as in a kernel started from here)."""
    import importlib.util

    spec = importlib.util.find_spec("icllib")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("icllib is not importable: install it (make .venv/.installed) before executing chapters")
    return Path(list(spec.submodule_search_locations)[0])


def module_file(name: str, package: Path) -> Path | None:
    """The file of the icllib module ``name`` (dotted, relative to the package: ``lsa.theory``, ``config``), or
    None when there is none: ``<name>.py``, or a subpackage's ``<name>/__init__.py``."""
    folder = package.joinpath(*name.split("."))
    for path in (folder.with_suffix(".py"), folder / "__init__.py"):
        if path.is_file():
            return path
    return None


def _with_parents(name: str) -> set[str]:
    """``name`` and the packages above it (importing ``lsa.theory`` runs ``lsa/__init__.py`` first)."""
    parts = name.split(".")
    return {".".join(parts[:depth]) for depth in range(1, len(parts) + 1)}


def _imported_modules(source: str, package: Path, module: str = "") -> set[str] | None:
    """The icllib modules (dotted names relative to the package, with the subpackages above them) that
    ``source`` imports; None for all of them. ``module`` is the dotted name of the module ``source`` is (a
    relative import is read from its package); a notebook's cells are none."""
    names: set[str] = set()
    here = module.split(".")[:-1] if module and module_file(module, package).name != "__init__.py" else \
        module.split(".") if module else []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "icllib":
                    if len(parts) == 1:
                        return None  # `import icllib` can reach any module
                    names |= _with_parents(".".join(parts[1:]))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - node.level + 1] + (node.module.split(".") if node.module else [])
            elif node.module and node.module.split(".")[0] == "icllib":
                base = node.module.split(".")[1:]
            else:
                continue
            if base:
                names |= _with_parents(".".join(base))
            for alias in node.names:
                if alias.name == "*":
                    return None
                member = ".".join([*base, alias.name])
                if module_file(member, package) is not None:
                    names.add(member)
    return names


# Who reads the registry folder: icllib.claims its top-level *.yaml (keyed by registry_part), icllib.coverage
# the rest (the papers' numbered results, the claims of their running text), which a chapter reads only if it
# imports icllib.coverage.
REGISTRY_READER = "coverage"


def _data_read(path: Path, package: Path, modules: set[str]) -> bool:
    """Whether a data file of the package can reach a run that imports ``modules``."""
    relative = path.relative_to(package).parts
    if relative[0] != "registry":
        return True
    if len(relative) == 2 and path.suffix == ".yaml":
        return False
    return REGISTRY_READER in modules


def dependencies(cells: list[str], package: Path | None = None) -> list[Path]:
    """The files of ``icllib`` that code cells importing it depend on, sorted: the modules they import,
    followed through the modules' own imports, the package's ``__init__.py`` and every data file of the
    package but the registry's ``*.yaml`` (:func:`registry_part` keys on what a run reads of those) and, unless
    ``icllib.coverage`` is imported, the rest of the registry folder (only it reads those).

    Only files git tracks count (``source_archive.source_files``), with one exception: a module imported by
    name is a dependency even before it is committed, since the kernel runs it. A cell Python cannot parse
    (an IPython magic), ``import icllib`` and ``from icllib import *`` count as importing every tracked module.
    """
    package = package or package_folder()
    listed = source_archive.source_files(package)
    every_module = {".".join(path.relative_to(package).with_suffix("").parts).removesuffix(".__init__")
                    for path in listed if path.suffix == ".py"} - {"__init__"}
    pending: set[str] = set()
    for source in cells:
        try:
            imports = _imported_modules(source, package)
        except SyntaxError:
            imports = None
        pending |= every_module if imports is None else imports
    seen: dict[str, Path] = {}
    while pending:
        name = pending.pop()
        path = module_file(name, package)
        if name in seen or path is None:
            continue
        seen[name] = path
        imports = _imported_modules(path.read_text(encoding="utf-8"), package, name)
        pending |= every_module if imports is None else imports
    data = [path for path in listed if path.suffix not in {".py", ".pyc"} and _data_read(path, package, set(seen))]
    return sorted({package / "__init__.py", *seen.values(), *data})


def checked_claims(sources: list[str]) -> set[str] | None:
    """The claim ids that ``sources`` (code cells, modules) check: the literal first argument of each
    ``check_claim`` call. None (every claim) when one is computed, when ``check_claim`` is passed around
    rather than called, or when a source does not parse."""
    if isinstance(sources, str) or not all(isinstance(source, str) for source in sources):
        raise ValueError(f"sources must be a list of source texts (str), got {sources!r:.80}")
    ids: set[str] = set()
    for source in sources:
        try:
            tree = ast.parse(source)
        except SyntaxError:
            return None
        calls = {id(node.func): node for node in ast.walk(tree) if isinstance(node, ast.Call)}
        for node in ast.walk(tree):
            named = (isinstance(node, ast.Name) and node.id == "check_claim") or \
                    (isinstance(node, ast.Attribute) and node.attr == "check_claim")
            if not named or isinstance(getattr(node, "ctx", None), ast.Store):
                continue
            call = calls.get(id(node))
            argument = (call.args[0] if call is not None and call.args else
                        next((keyword.value for keyword in (call.keywords if call else ()) if keyword.arg == "claim_id"),
                             None))
            if not (isinstance(argument, ast.Constant) and isinstance(argument.value, str)):
                return None
            ids.add(argument.value)
    return ids


def registry_files(package: Path | None = None) -> list[Path]:
    """The registry files a kernel reads (``icllib.claims``): ``ICLLIB_REGISTRY``'s ``*.yaml``, else the
    package's ``registry/*.yaml``."""
    override = os.environ.get("ICLLIB_REGISTRY")
    folder = Path(override) if override else (package or package_folder()) / "registry"
    return sorted(folder.glob("*.yaml"))


@lru_cache(maxsize=16)
def _parsed_registry(stamps: tuple[tuple[str, int, int], ...]):
    from icllib.claim_registry import parse_registry

    return parse_registry([Path(path) for path, _, _ in stamps])


def parsed_registry(files: list[Path]):
    """``icllib.claim_registry.parse_registry`` of ``files`` (re-read when one changes), or None when it refuses them."""
    try:
        return _parsed_registry(tuple((str(path), path.stat().st_mtime_ns, path.stat().st_size) for path in files))
    except Exception:  # noqa: BLE001  a field parse_registry refuses, a YAML syntax error, a file gone: the
        return None    # kernel's check_claim meets the same fault and fails, so the key takes the bytes


def registry_part(sources: list[str], package: Path | None = None) -> bytes:
    """What a run of ``sources`` can read from the registry: for each claim they check (:func:`checked_claims`),
    whether it is registered, its modes and whether it is out of scope (``check_claim`` refuses a claim
    unknown, out of scope or registered for other modes; the rest of a row only reaches the pages, which the
    build reads from the registry itself). A registry ``icllib.claims`` refuses goes in whole: every run
    that checks a claim fails on it, and each edit may mend it."""
    files = registry_files(package)
    book = parsed_registry(files)
    if book is None:
        return b"".join(f"{path.name}\0".encode() + path.read_bytes() for path in files)
    ids = checked_claims(sources)
    ids = sorted(book.claims) if ids is None else sorted(ids)
    rows = {claim_id: ({"modes": list(book.claims[claim_id].modes),
                        "out of scope": book.claims[claim_id].verdict == "out of scope"}
                       if claim_id in book.claims else "not registered") for claim_id in ids}
    return json.dumps(rows, sort_keys=True).encode()


# Cell metadata that only changes how the page shows a cell (its figure caption, hidden input): editing it
# re-renders the page from the stored execution instead of running the chapter again.
PAGE_ONLY_METADATA = ("mystnb", "jupyter")
PAGE_ONLY_TAGS = frozenset({"hide-input", "hide-output", "hide-cell", "remove-input", "remove-output",
                            "remove-cell", "full-width", "margin"})


def code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _execution_metadata(metadata: dict) -> dict:
    kept = {name: value for name, value in metadata.items() if name not in PAGE_ONLY_METADATA}
    tags = sorted(set(kept.pop("tags", ())) - PAGE_ONLY_TAGS)
    return {**kept, "tags": tags} if tags else kept


def key_parts(notebook, mode: str, root: Path, package: Path, executor: bytes) -> dict[str, str]:
    """What the key of ``notebook`` in ``mode`` is made of: a SHA-256 (hex) per part, under a label that names
    it (``code cells``, ``icllib/config.py``, ``registry``, ``requirements.txt``, ...), so that a changed key
    can say what changed (:func:`changed_parts`). ``root`` is the book's folder, ``package`` the ``icllib`` the
    kernels import, ``executor`` the code that runs a kernel and stores what it printed (``executions``)."""
    parts: dict[str, str] = {}

    def add(label: str, data: bytes) -> None:
        parts[label] = hashlib.sha256(data).hexdigest()

    cells = [{"source": cell.source, "metadata": _execution_metadata(cell.metadata)} for cell in code_cells(notebook)]
    add("code cells", json.dumps(cells, sort_keys=True).encode())
    add("kernel", json.dumps(notebook.metadata.get("kernelspec", {}), sort_keys=True).encode())
    add("mode", mode.encode())
    # the heavy cells draw on this device, and a GPU's random stream is not the CPU's
    add("device", os.environ.get("ICLLIB_DEVICE", "cpu").encode())
    # a run on other CPU kernels (make test's second leg) differs in its last digits: never served from this one's
    forced = [f"{name}={os.environ[name]}" for name in CPU_KERNEL_VARIABLES if os.environ.get(name)]
    if forced:
        add("cpu kernels", ";".join(forced).encode())
    add("python", platform.python_version().encode())
    add("executor", executor)
    modules = dependencies([cell.source for cell in code_cells(notebook)], package)
    for path in modules:
        add(f"icllib/{path.relative_to(package).as_posix()}", path.read_bytes())
    sources = [cell.source for cell in code_cells(notebook)]
    sources += [path.read_text(encoding="utf-8") for path in modules if path.suffix == ".py" and path.name != "claims.py"]
    add("registry", registry_part(sources, package))
    for name in PINS:
        path = root / name
        add(name, path.read_bytes() if path.is_file() else b"")
    for chapter in archives_read(notebook):
        path = root.joinpath(*ARCHIVE_FOLDER, f"{chapter}.json")
        add(f"archive/{chapter}", path.read_bytes() if path.is_file() else b"")
    for experiment in deciding_runs_read(notebook):
        runs = sorted(root.joinpath("results", "deciding", experiment).glob("*.json"))
        add(f"deciding/{experiment}", b"".join(path.name.encode() + path.read_bytes() for path in runs))
    return parts


def key_of_parts(parts: dict[str, str]) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def changed_parts(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The labels of the parts of a key that differ between ``before`` and ``after`` (added or gone too)."""
    return sorted(label for label in set(before) | set(after) if before.get(label) != after.get(label))


def archives_read(notebook) -> list[str]:
    """The chapters whose paper-scale archive ``notebook`` reads (``archived_arrays("<chapter>", ...)`` calls):
    a new full run changes the figures drawn from it, so the archive is part of the key."""
    sources = "\n".join(cell.source for cell in code_cells(notebook))
    return sorted(set(re.findall(r"archived_arrays\(\s*[\"'](\w+)[\"']", sources)))


def deciding_runs_read(notebook) -> list[str]:
    """The deciding experiments whose archived runs ``notebook`` reads (``archived_runs("<experiment>")`` calls):
    a new run changes the table and verdicts drawn from them."""
    sources = "\n".join(cell.source for cell in code_cells(notebook))
    return sorted(set(re.findall(r"archived_runs\(\s*[\"']([\w-]+)[\"']", sources)))
