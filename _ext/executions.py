"""The execution cache: a chapter notebook runs again only when something that can change its outputs changes.

A notebook's key is a SHA-256 of what its outputs depend on:

- its code cells (source and metadata), not its markdown cells: a prose edit reuses the outputs;
- the run mode (``ICLLIB_MODE``);
- every ``icllib`` module it imports, followed through the package's own imports, and every data file of the
  package (the claims registry, the list of the papers' numbered results), or the registry that
  ``ICLLIB_REGISTRY`` names;
- the pins (``requirements.txt``, ``pyproject.toml``), the Python version, and the code here that runs a
  kernel and stores what it printed;
- the paper-scale archive (``results/full/<chapter>.json``) of each chapter whose arrays it draws
  (:func:`archives_read`).

An execution stored under a key is the executed notebook, the ``check_claim`` records its run wrote, and a
few facts about the run (seconds, date, machine). Three things store executions: ``python
_ext/executions.py`` (``make book``, several chapters side by side), the notebook tests (``conftest.py``
stores nbval's run of every cell, so the quick build after them executes nothing) and the book build itself,
which executes a notebook that has no stored execution, one at a time (:func:`read_chapter`).

Each kernel runs with one BLAS/OpenMP thread (:data:`KERNEL_THREADS`), whether the chapters run side by side
or alone, so a chapter's numbers do not depend on how many ran at once.
"""

from __future__ import annotations

import argparse
import ast
import base64
import copy
import hashlib
import inspect
import io
import json
import os
import platform
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jupytext
import nbformat
from icllib.claims import ARCHIVE_FOLDER

EXECUTIONS_VARIABLE = "ICLLIB_EXECUTIONS"
KERNEL_THREADS = 1
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
PINS = ("requirements.txt", "pyproject.toml")
JUPYTEXT_FORMAT = "py:percent"
CELL_TIMEOUT_S = 3600


def book_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (the working directory) that holds ``_config.yml``."""
    here = (start or Path.cwd()).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / "_config.yml").is_file()), here)


def cache_folder() -> Path:
    """``ICLLIB_EXECUTIONS``, else ``_build/executions`` under the book root."""
    override = os.environ.get(EXECUTIONS_VARIABLE)
    return Path(override) if override else book_root() / "_build" / "executions"


# The book's kernels echo no value: a cell that ends with a call (`ax.legend()`, a check) shows what it
# prints and draws, never a repr such as "<matplotlib.legend.Legend at 0x...>". A chapter that wants a value
# on the page prints or displays it (tests/test_notebook_cells.py); the formatter leaves no `;` to hide one.
KERNEL_CONFIG = 'c.InteractiveShell.ast_node_interactivity = "none"\n'


def kernel_ipython_dir() -> Path:
    """An IPython directory under ``_build`` whose kernel profile holds :data:`KERNEL_CONFIG`."""
    folder = book_root() / "_build" / "ipython"
    config = folder / "profile_default" / "ipython_kernel_config.py"
    if not config.is_file() or config.read_text() != KERNEL_CONFIG:
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(KERNEL_CONFIG)
    return folder


def kernel_environment(mode: str, results: Path, chapter: str) -> dict[str, str]:
    """The variables a chapter's kernel runs with: its mode, where its records go and the chapter they belong to,
    one thread, no echo."""
    return {"ICLLIB_MODE": mode, "ICLLIB_RESULTS": str(results), "ICLLIB_CHAPTER": chapter,
            "IPYTHONDIR": str(kernel_ipython_dir()), **{name: str(KERNEL_THREADS) for name in THREAD_VARIABLES}}


# --- The key ---------------------------------------------------------------------------------------------

def package_folder() -> Path:
    """The ``icllib`` the kernels will import (the first on ``sys.path``, as in a kernel started from here)."""
    import importlib.util

    spec = importlib.util.find_spec("icllib")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("icllib is not importable: install it (make .venv/.installed) before executing chapters")
    return Path(list(spec.submodule_search_locations)[0])


def _imported_modules(source: str, package: Path) -> set[str] | None:
    """The icllib modules (names relative to the package) that ``source`` imports; None for all of them."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "icllib":
                    if len(parts) == 1:
                        return None  # `import icllib` can reach any module
                    names.add(parts[1])
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # every icllib module sits at the top of the package
                base = node.module.split(".") if node.module else []
            elif node.module and node.module.split(".")[0] == "icllib":
                base = node.module.split(".")[1:]
            else:
                continue
            if base:
                names.add(base[0])
            for alias in node.names:
                if alias.name == "*":
                    return None
                if not base and (package / f"{alias.name}.py").is_file():
                    names.add(alias.name)
    return names


def dependencies(cells: list[str], package: Path | None = None) -> list[Path]:
    """The files of ``icllib`` that code cells importing it depend on, sorted: the modules they import,
    followed through the modules' own imports, the package's ``__init__.py`` and every data file of the
    package. A cell Python cannot parse (an IPython magic) counts as importing every module."""
    package = package or package_folder()
    every_module = {path.stem for path in package.glob("*.py")} - {"__init__"}
    pending: set[str] = set()
    for source in cells:
        try:
            imports = _imported_modules(source, package)
        except SyntaxError:
            imports = None
        pending |= every_module if imports is None else imports
    seen: set[str] = set()
    while pending:
        name = pending.pop()
        if name in seen or name not in every_module:
            continue
        seen.add(name)
        imports = _imported_modules((package / f"{name}.py").read_text(), package)
        pending |= every_module if imports is None else imports
    data = [path for path in package.rglob("*") if path.is_file() and path.suffix not in {".py", ".pyc"}
            and "__pycache__" not in path.parts]
    return sorted([package / "__init__.py", *(package / f"{name}.py" for name in seen), *data])


# Cell metadata that only changes how the page shows a cell (its figure caption, hidden input): editing it
# re-renders the page from the stored execution instead of running the chapter again.
PAGE_ONLY_METADATA = ("mystnb", "jupyter")
PAGE_ONLY_TAGS = frozenset({"hide-input", "hide-output", "hide-cell", "remove-input", "remove-output",
                            "remove-cell", "full-width", "margin"})


def code_cells(notebook) -> list:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


@cache
def executor_fingerprint() -> bytes:
    """The code here that runs a kernel and stores what it printed, as this process first read it."""
    functions = (kernel_environment, run_kernel, execute, compact_png, store)
    return ("".join(inspect.getsource(function) for function in functions)
            + repr((KERNEL_THREADS, THREAD_VARIABLES, KERNEL_CONFIG))).encode()


def _execution_metadata(metadata: dict) -> dict:
    kept = {name: value for name, value in metadata.items() if name not in PAGE_ONLY_METADATA}
    tags = sorted(set(kept.pop("tags", ())) - PAGE_ONLY_TAGS)
    return {**kept, "tags": tags} if tags else kept


def key(notebook, mode: str, root: Path | None = None, package: Path | None = None) -> str:
    """The SHA-256 (hex) under which an execution of ``notebook`` in ``mode`` is stored."""
    root = root or book_root()
    package = package or package_folder()
    digest = hashlib.sha256()

    def add(label: str, data: bytes) -> None:
        digest.update(f"{label}\0{len(data)}\0".encode() + data)

    cells = [{"source": cell.source, "metadata": _execution_metadata(cell.metadata)} for cell in code_cells(notebook)]
    add("code cells", json.dumps(cells, sort_keys=True).encode())
    add("kernel", json.dumps(notebook.metadata.get("kernelspec", {}), sort_keys=True).encode())
    add("mode", mode.encode())
    add("python", platform.python_version().encode())
    add("executor", executor_fingerprint())
    for path in dependencies([cell.source for cell in code_cells(notebook)], package):
        add(f"icllib/{path.relative_to(package)}", path.read_bytes())
    registry_override = os.environ.get("ICLLIB_REGISTRY")
    if registry_override:
        for path in sorted(Path(registry_override).glob("*")):
            if path.is_file():
                add(f"registry/{path.name}", path.read_bytes())
    for name in PINS:
        path = root / name
        add(name, path.read_bytes() if path.is_file() else b"")
    for chapter in archives_read(notebook):
        path = root.joinpath(*ARCHIVE_FOLDER, f"{chapter}.json")
        add(f"archive/{chapter}", path.read_bytes() if path.is_file() else b"")
    return digest.hexdigest()


def archives_read(notebook) -> list[str]:
    """The chapters whose paper-scale archive ``notebook`` reads (``archived_arrays("<chapter>", ...)`` calls):
    a new full run changes the figures drawn from it, so the archive is part of the key."""
    sources = "\n".join(cell.source for cell in code_cells(notebook))
    return sorted(set(re.findall(r"archived_arrays\(\s*[\"'](\w+)[\"']", sources)))


# --- Storing and loading ---------------------------------------------------------------------------------

@dataclass
class Execution:
    notebook: nbformat.NotebookNode
    records: list[str]
    facts: dict


def _files(folder: Path, notebook_key: str) -> tuple[Path, Path, Path]:
    return (folder / f"{notebook_key}.ipynb", folder / f"{notebook_key}.records.jsonl",
            folder / f"{notebook_key}.json")


def _write_atomically(path: Path, text: str) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


def compact_png(encoded: str) -> str:
    """A figure as a 256-colour PNG (base64 in, base64 out) when that is smaller: the house style's flat
    colours survive exactly, anti-aliased edges nearly so, and the site and its notebooks weigh a third less."""
    from PIL import Image

    original = base64.b64decode(encoded)
    image = Image.open(io.BytesIO(original))
    if image.mode == "P":
        return encoded  # compact already
    buffer = io.BytesIO()
    image.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(buffer, format="png", optimize=True)
    smaller = buffer.getvalue()
    return base64.b64encode(smaller).decode() + "\n" if len(smaller) < len(original) else encoded


def store(notebook, mode: str, records: list[str], facts: dict, folder: Path | None = None,
          notebook_key: str | None = None) -> str:
    """Store an executed notebook (its stderr streams dropped: the pages never show them; its figures as
    compact PNGs) and its records, under ``notebook_key`` (the key of the notebook as it was before it ran)
    or the notebook's own key."""
    folder = folder or cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    notebook_key = notebook_key or key(notebook, mode)
    executed = copy.deepcopy(notebook)
    # nbclient records the kernel's language; nbval does not, and the pages' code highlighting needs it.
    executed.metadata.setdefault("language_info", {"name": "python", "pygments_lexer": "ipython3",
                                                   "version": platform.python_version()})
    for cell in code_cells(executed):
        cell.metadata.pop("execution", None)  # timing stamps: in the facts, not in the download
        cell.outputs = [output for output in cell.get("outputs", [])
                        if not (output.get("output_type") == "stream" and output.get("name") == "stderr")]
        for output in cell.outputs:
            if "image/png" in output.get("data", {}):
                output["data"]["image/png"] = compact_png(output["data"]["image/png"])
    notebook_file, records_file, facts_file = _files(folder, notebook_key)
    _write_atomically(records_file, "".join(line.rstrip("\n") + "\n" for line in records))
    _write_atomically(facts_file, json.dumps({"mode": mode, **facts}, indent=1))
    _write_atomically(notebook_file, nbformat.writes(executed))  # last: its presence marks a whole entry
    return notebook_key


def load(notebook, mode: str, folder: Path | None = None) -> Execution | None:
    """The stored execution of ``notebook`` in ``mode`` for today's code, or None."""
    notebook_file, records_file, facts_file = _files(folder or cache_folder(), key(notebook, mode))
    if not notebook_file.is_file():
        return None
    return Execution(nbformat.reads(notebook_file.read_text(), as_version=4),
                     records_file.read_text().splitlines(), json.loads(facts_file.read_text()))


def with_outputs(notebook, execution: Execution):
    """``notebook`` (its markdown as it is now) with the outputs of a stored execution of the same code."""
    merged = copy.deepcopy(notebook)
    merged.metadata["language_info"] = execution.notebook.metadata["language_info"]
    for cell, executed in zip(code_cells(merged), code_cells(execution.notebook), strict=True):
        if cell.source != executed.source:
            raise RuntimeError("a stored execution does not match its notebook's code: clear _build/executions")
        cell.outputs = executed.outputs
        cell.execution_count = executed.execution_count
    return merged


def machine() -> str:
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("model name")), model)
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


# --- Executing -------------------------------------------------------------------------------------------

def read_source(path: Path):
    return jupytext.read(path, fmt=JUPYTEXT_FORMAT if path.suffix == ".py" else None)


def run_kernel(notebook, path: Path, mode: str, records: Path, **client_options) -> None:
    """Execute ``notebook`` (read from ``path``) in place, in a fresh kernel started in the notebook's folder
    with the variables of :func:`kernel_environment`. ``client_options`` go to nbclient's ``NotebookClient``
    (``allow_errors``, ``timeout``, hooks such as ``on_cell_executed``). Raises nbclient's
    ``CellExecutionError`` at the first failing cell, unless errors are allowed."""
    from nbclient import NotebookClient

    environment = kernel_environment(mode, records, path.stem)
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)  # the kernel inherits this process's environment when it starts
    try:
        options = {"timeout": CELL_TIMEOUT_S, "kernel_name": "python3", **client_options}
        NotebookClient(notebook, resources={"metadata": {"path": str(path.parent)}}, **options).execute()
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def execute(path: Path, mode: str, folder: Path | None = None) -> tuple[str, float]:
    """Execute the notebook at ``path`` in ``mode`` in a fresh kernel and store it; ``(key, seconds)``.

    Raises ``RuntimeError`` quoting the failing cell's error (a failed ``check_claim`` among them); the
    records of a failed run still reach the results file the caller's environment names, if any.
    """
    from nbclient.exceptions import CellExecutionError

    folder = folder or cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    notebook = read_source(path)
    notebook_key = key(notebook, mode)
    records_file = folder / f".records.{os.getpid()}.{path.stem}.jsonl"
    records_file.unlink(missing_ok=True)
    started = time.perf_counter()
    try:
        run_kernel(notebook, path, mode, records_file)
        failure = None
    except CellExecutionError as error:
        failure = error
    seconds = time.perf_counter() - started
    records = records_file.read_text().splitlines() if records_file.is_file() else []
    records_file.unlink(missing_ok=True)
    pass_on(records, os.environ.get("ICLLIB_RESULTS"))
    if failure is not None:
        raise RuntimeError(f"{path} failed in mode {mode!r}:\n{failure}") from None
    facts = {"notebook": path.name, "seconds": round(seconds, 1), "threads": KERNEL_THREADS,
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
             "slowest cells": slowest_cells(notebook)}
    return store(notebook, mode, records, facts, folder, notebook_key), seconds


def slowest_cells(notebook, count: int = 3) -> list[dict]:
    """The ``count`` code cells that took longest (nbclient's timing metadata), slowest first."""
    from datetime import datetime

    timed = []
    for number, cell in enumerate(code_cells(notebook), start=1):
        stamps = cell.metadata.get("execution", {})
        if "iopub.execute_input" in stamps and "shell.execute_reply" in stamps:
            start, end = (datetime.fromisoformat(stamps[name].replace("Z", "+00:00"))
                          for name in ("iopub.execute_input", "shell.execute_reply"))
            first_line = next((line for line in cell.source.splitlines() if line.strip()), "")
            timed.append({"cell": number, "seconds": round((end - start).total_seconds(), 1),
                          "first line": first_line[:80]})
    return sorted(timed, key=lambda entry: -entry["seconds"])[:count]


def pass_on(records: list[str], target: str | Path | None) -> None:
    """Append records to a results file (none: keep them in the cache only)."""
    if target and records:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a") as stream:
            stream.writelines(line + "\n" for line in records)


def last_seconds(path: Path, mode: str, folder: Path) -> float:
    """How long the latest stored execution of this chapter in this mode took (0 if none)."""
    runs = [json.loads(facts.read_text()) for facts in folder.glob("*.json")]
    runs = [run for run in runs if run.get("notebook") == path.name and run.get("mode") == mode and "seconds" in run]
    return max(runs, key=lambda run: run["date"])["seconds"] if runs else 0.0


def _execute_in_worker(path: str, mode: str, folder: str) -> tuple[str, float]:
    print(f"[executions] {Path(path).name}: executing (mode {mode})", flush=True)
    return execute(Path(path), mode, Path(folder))


def execute_changed(paths: list[Path], mode: str, jobs: int, folder: Path | None = None) -> list[Path]:
    """Execute, ``jobs`` at a time, the notebooks among ``paths`` with no stored execution for today's
    code; print a line per chapter. Returns the notebooks that failed (every one runs to its end)."""
    folder = folder or cache_folder()
    changed = [path for path in paths if load(read_source(path), mode, folder) is None]
    changed.sort(key=lambda path: -last_seconds(path, mode, folder))  # the longest first: they end together
    for path in sorted(set(paths) - set(changed)):
        print(f"[executions] {path.name}: stored execution reused (mode {mode})", flush=True)
    failed = []
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(changed) or 1))) as pool:
        futures = {pool.submit(_execute_in_worker, str(path), mode, str(folder)): path for path in changed}
        for future in as_completed(futures):
            path = futures[future]
            try:
                _, seconds = future.result()
                print(f"[executions] {path.name}: done in {seconds:.0f} s", flush=True)
            except RuntimeError as error:
                print(f"[executions] {error}", file=sys.stderr, flush=True)
                failed.append(path)
    return failed


# --- The book build's reader -----------------------------------------------------------------------------

def _source_path(text: str, root: Path) -> Path:
    """The chapter file whose text this is (the reader is handed the text only)."""
    for path in sorted(root.glob("notebooks/*.py")):
        if path.read_text() == text:
            return path
    raise RuntimeError("the book build read a notebook that is not one of notebooks/*.py")


def read_chapter(text: str, **jupytext_options):
    """The ``nb_custom_formats`` reader of the book: the jupytext notebook with the outputs of its stored
    execution for today's code, executing it first if there is none. Its records go to the build's results
    file, as if it had executed during the build."""
    from icllib.config import mode as run_mode

    notebook = jupytext.reads(text, **jupytext_options)
    mode = run_mode()
    execution = load(notebook, mode)
    if execution is None:
        execute(_source_path(text, book_root()), mode)  # its records reach the results file on the way
        execution = load(notebook, mode)
    else:
        pass_on(execution.records, os.environ.get("ICLLIB_RESULTS"))
    return with_outputs(notebook, execution)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute the chapters whose code changed since their stored "
                                                 "execution, several side by side.")
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: notebooks/*.py")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="chapters side by side")
    arguments = parser.parse_args(argv)
    from icllib.config import mode

    paths = arguments.notebooks or sorted((book_root() / "notebooks").glob("*.py"))
    started = time.perf_counter()
    failed = execute_changed(paths, mode(), arguments.jobs)
    print(f"[executions] {len(paths)} chapters ready in {time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
