"""The execution cache: a chapter notebook runs again only when something that can change its outputs changes.

A notebook's key is a SHA-256 of what its outputs depend on:

- its code cells (source and metadata), not its markdown cells: a prose edit reuses the outputs;
- the run mode (``ICLLIB_MODE``);
- every ``icllib`` module it imports, followed through the package's own imports (with the ``__init__.py`` of
  each package on the way: a chapter depends on its paper's package and the shared modules), and every data file of the
  package other than the registry (the list of the papers' numbered results), counting only the files git
  tracks (an editor's swap file or a stray ``.env`` changes no key; outside a git checkout, the walk of
  ``source_archive.source_files``), plus any module a cell imports by name that git does not track yet;
- of the claims registry (``icllib/registry/*.yaml``, or the folder ``ICLLIB_REGISTRY`` names), only what a
  run reads from it (``execution_keys.registry_part``): for each claim the chapter checks, whether it is registered, its
  modes and whether it is out of scope. A statement, a location, an erratum or a verdict is read by the pages
  at build time, so editing one re-executes nothing (a stored record's ``verdict`` is the registry's of today,
  :func:`load`);
- the pins (``requirements.txt``, ``pyproject.toml``), the Python version, and the code here that runs a
  kernel and stores what it printed;
- the paper-scale archive (``results/full/<chapter>.json``) of each chapter whose arrays it draws
  (``execution_keys.archives_read``).

The key is computed in ``execution_keys``; this module runs the kernels and stores and loads what they printed.

An execution stored under a key is the executed notebook, the ``check_claim`` records its run wrote, and a
few facts about the run (seconds, date, machine, and the SHA-256 of the other two files). The key is fixed
before the chapter runs and computed again before its outputs are stored: if a source changed meanwhile,
nothing is stored and the message names what changed (:class:`SourcesChanged`). An entry that cannot be read
whole (a truncated notebook, an empty facts file, a records file cut short or missing) is a cache miss: named,
removed, executed again. Files that processes killed mid-write left behind are removed
(:func:`remove_stale_partials`). Three things store executions: ``python
_ext/executions.py`` (``make book``, several chapters side by side), the notebook tests (``conftest.py``
stores nbval's run of every cell, so the quick build after them executes nothing) and the book build itself,
which executes a notebook that has no stored execution, one at a time (:func:`read_chapter`).

Each kernel runs with one BLAS/OpenMP thread (:data:`KERNEL_THREADS`), whether the chapters run side by side
or alone, so a chapter's numbers do not depend on how many ran at once.
"""

from __future__ import annotations

import argparse
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
import uuid
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import execution_keys
import jupytext
import nbformat
from execution_keys import changed_parts, code_cells, key_of_parts, package_folder, parsed_registry, registry_files

EXECUTIONS_VARIABLE = "ICLLIB_EXECUTIONS"
# In a book build, the folder where each chapter's records are kept (set by _ext/ledger_page.py: the build's own,
# one per run mode); unset elsewhere.
BUILD_RECORDS_VARIABLE = "ICLLIB_BUILD_RECORDS"
KERNEL_THREADS = 1
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
JUPYTEXT_FORMAT = "py:percent"
CELL_TIMEOUT_S = 3600
# A kernel's first answer: nbclient waits 60 s, and on a loaded 2-core machine (a book build beside the notebook
# tests) a kernel took longer to start, which stopped a whole build.
KERNEL_STARTUP_TIMEOUT_S = 300


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
    if not config.is_file() or config.read_text(encoding="utf-8") != KERNEL_CONFIG:
        config.parent.mkdir(parents=True, exist_ok=True)
        config.write_text(KERNEL_CONFIG, encoding="utf-8")
    return folder


def kernel_environment(mode: str, results: Path, chapter: str) -> dict[str, str]:
    """The variables a chapter's kernel runs with: its mode, where its records go and the chapter they belong to,
    one thread, no echo."""
    return {"ICLLIB_MODE": mode, "ICLLIB_RESULTS": str(results), "ICLLIB_CHAPTER": chapter,
            "IPYTHONDIR": str(kernel_ipython_dir()), **{name: str(KERNEL_THREADS) for name in THREAD_VARIABLES}}


# --- The key (execution_keys computes it; the runner adds its own code) -------------------------------------

@cache
def executor_fingerprint() -> bytes:
    """The code here that runs a kernel and stores what it printed, as this process first read it."""
    functions = (kernel_environment, run_kernel, execute, compact_png, store)
    return ("".join(inspect.getsource(function) for function in functions)
            + repr((KERNEL_THREADS, THREAD_VARIABLES, KERNEL_CONFIG))).encode()


def key_parts(notebook, mode: str, root: Path | None = None, package: Path | None = None) -> dict[str, str]:
    """:func:`execution_keys.key_parts` of ``notebook`` in ``mode``, with this runner's code
    (:func:`executor_fingerprint`); ``root`` defaults to :func:`book_root`, ``package`` to the ``icllib`` the
    kernels import."""
    return execution_keys.key_parts(notebook, mode, root or book_root(), package or package_folder(),
                                    executor_fingerprint())


def key(notebook, mode: str, root: Path | None = None, package: Path | None = None) -> str:
    """The SHA-256 (hex) under which an execution of ``notebook`` in ``mode`` is stored."""
    return key_of_parts(key_parts(notebook, mode, root, package))


class SourcesChanged(RuntimeError):
    """A chapter's sources changed while it executed: its outputs may come from either version, so none is
    stored."""


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
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def process_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one owned by another user counts)."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        raise ValueError(f"pid must be a positive int, got {pid!r}")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# What a process leaves while it runs, each name holding its pid: `_write_atomically`'s partial files, a
# chapter's records (:func:`execute`) and its kernel's connection file (:func:`run_kernel`).
_PARTIAL_NAMES = (re.compile(r"^\..+\.(?P<pid>\d+)$"), re.compile(r"^\.records\.(?P<pid>\d+)\..+\.jsonl$"),
                  re.compile(r"^(?P<pid>\d+)-.+\.json$"))


def kernels_folder() -> Path:
    """Where the kernels' connection files go (``_build/kernels``), so that those of a killed build can be
    found and removed."""
    return book_root() / "_build" / "kernels"


def remove_stale_partials(folder: Path | None = None) -> list[Path]:
    """Remove, from ``folder`` (the cache) and :func:`kernels_folder`, the partial files of processes that no
    longer run (a build killed mid-write, a kernel's client killed); return them. A live process's are kept:
    several builds may share the cache."""
    removed = []
    for place in (folder or cache_folder(), kernels_folder()):
        if not place.is_dir():
            continue
        for path in place.iterdir():
            found = next((match for pattern in _PARTIAL_NAMES if (match := pattern.match(path.name))), None)
            if found and path.is_file() and not process_alive(int(found["pid"])):
                path.unlink(missing_ok=True)
                removed.append(path)
    if removed:
        print(f"[executions] removed {len(removed)} files left by processes that no longer run: "
              + ", ".join(str(path) for path in removed), file=sys.stderr, flush=True)
    return removed


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
                variant = output.get("metadata", {}).get("image/png", {})
                if "stacked" in variant:   # icllib.figure_screens: the figure's panels stacked for phones
                    variant["stacked"] = compact_png(variant["stacked"])
    notebook_file, records_file, facts_file = _files(folder, notebook_key)
    records_text = "".join(line.rstrip("\n") + "\n" for line in records)
    notebook_text = nbformat.writes(executed)
    # The digests let a reader tell a whole entry from one cut short (a full disk, a killed writer).
    facts = {"mode": mode, **facts, "sha256": {"notebook": _sha256(notebook_text), "records": _sha256(records_text)}}
    _write_atomically(records_file, records_text)
    _write_atomically(facts_file, json.dumps(facts, indent=1))
    _write_atomically(notebook_file, notebook_text)  # last: its presence marks a whole entry
    return notebook_key


def _discard(folder: Path, notebook_key: str, reason: str) -> None:
    """Remove an entry that cannot be read whole, saying which and why: the chapter executes again."""
    notebook_file = _files(folder, notebook_key)[0]
    print(f"[executions] {notebook_file}: unreadable stored execution ({reason}); removed, the chapter executes "
          "again", file=sys.stderr, flush=True)
    for path in _files(folder, notebook_key):
        path.unlink(missing_ok=True)


def _read_entry(folder: Path, notebook_key: str, notebook=None) -> Execution | str:
    """The entry stored under ``notebook_key``, or why it cannot be used (for ``notebook``: the same code
    cells)."""
    notebook_file, records_file, facts_file = _files(folder, notebook_key)
    try:
        facts = json.loads(facts_file.read_text(encoding="utf-8"))
        notebook_text, records_text = notebook_file.read_text(encoding="utf-8"), records_file.read_text(encoding="utf-8")
    except FileNotFoundError as error:
        return f"{Path(error.filename).name} is missing"
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        return f"{facts_file.name}: {error}"
    digests = facts.get("sha256") if isinstance(facts, dict) else None
    if not isinstance(digests, dict):
        return f"{facts_file.name} holds no digests of the entry"
    for name, text in (("notebook", notebook_text), ("records", records_text)):
        if digests.get(name) != _sha256(text):
            return f"the {name} file is not the one stored (cut short or edited)"
    try:
        executed = nbformat.reads(notebook_text, as_version=4)
    except Exception as error:  # noqa: BLE001  nbformat raises several kinds for a damaged notebook
        return f"{notebook_file.name}: {error}"
    if notebook is not None and [cell.source for cell in code_cells(notebook)] != \
            [cell.source for cell in code_cells(executed)]:
        return "its code cells are not the notebook's"
    return Execution(executed, records_text.splitlines(), facts)


def _todays_verdicts(records: list[str], package: Path | None = None) -> list[str]:
    """Records with the ``verdict`` today's registry gives their claim: the key leaves verdicts out (the pages
    read them from the registry), so the stored one may be older."""
    book = parsed_registry(registry_files(package or package_folder()))
    if book is None:
        return records
    updated = []
    for line in records:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:   # not a record (a blank line): passed on as stored
            updated.append(line)
            continue
        if isinstance(record, dict) and record.get("id") in book.claims and "verdict" in record:
            record["verdict"] = book.claims[record["id"]].verdict
            line = json.dumps(record)
        updated.append(line)
    return updated


def load(notebook, mode: str, folder: Path | None = None) -> Execution | None:
    """The stored execution of ``notebook`` in ``mode`` for today's code, or None. An entry that cannot be read
    whole is removed (and named on stderr), and None returned: the caller executes the chapter again."""
    folder = folder or cache_folder()
    notebook_key = key(notebook, mode)
    if not _files(folder, notebook_key)[0].is_file():
        return None
    entry = _read_entry(folder, notebook_key, notebook)
    if isinstance(entry, str):
        _discard(folder, notebook_key, entry)
        return None
    entry.records = _todays_verdicts(entry.records)
    return entry


def with_outputs(notebook, execution: Execution):
    """``notebook`` (its markdown as it is now) with the outputs of a stored execution of the same code."""
    merged = copy.deepcopy(notebook)
    merged.metadata["language_info"] = execution.notebook.metadata["language_info"]
    for cell, executed in zip(code_cells(merged), code_cells(execution.notebook), strict=True):
        cell.outputs = executed.outputs
        cell.execution_count = executed.execution_count
    return merged


@cache
def cpu_kernels() -> str:
    """The SIMD kernels PyTorch dispatches to here (``AVX512``, ``AVX2``, ``DEFAULT``): the CPU's best, or what
    ``ATEN_CPU_CAPABILITY`` forces. A float32 result's last digits depend on it, so every timing and run names it."""
    try:
        import torch
    except ImportError:
        return "no PyTorch"
    return f"PyTorch {torch.backends.cpu.get_cpu_capability()}"


def machine() -> str:
    """The CPU model, its cores, the system and the kernels PyTorch uses: what a timing or a run is recorded with."""
    model = "unknown CPU"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        model = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text(encoding="utf-8").splitlines()
                      if line.startswith("model name")), model)
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}, {cpu_kernels()} kernels"


# --- Executing -------------------------------------------------------------------------------------------

def read_source(path: Path):
    return jupytext.read(path, fmt=JUPYTEXT_FORMAT if path.suffix == ".py" else None)


def run_kernel(notebook, path: Path, mode: str, records: Path, **client_options) -> None:
    """Execute ``notebook`` (read from ``path``) in place, in a fresh kernel started in the notebook's folder
    with the variables of :func:`kernel_environment`. ``client_options`` go to nbclient's ``NotebookClient``
    (``allow_errors``, ``timeout``, hooks such as ``on_cell_executed``). Raises nbclient's
    ``CellExecutionError`` at the first failing cell, unless errors are allowed, and ``KeyboardInterrupt`` when
    this process got SIGINT (Ctrl-C) or SIGTERM while the kernel ran."""
    from nbclient import NotebookClient
    from traitlets.config import Config

    environment = kernel_environment(mode, records, path.stem)
    previous = {name: os.environ.get(name) for name in environment}
    os.environ.update(environment)  # the kernel inherits this process's environment when it starts
    # The connection file carries this process's id, so that one a killed build leaves is known as stale.
    connection = kernels_folder() / f"{os.getpid()}-{path.stem}-{uuid.uuid4().hex[:8]}.json"
    connection.parent.mkdir(parents=True, exist_ok=True)
    try:
        options = {"timeout": CELL_TIMEOUT_S, "startup_timeout": KERNEL_STARTUP_TIMEOUT_S, "kernel_name": "python3",
                   "config": Config({"KernelManager": {"connection_file": str(connection)}}), **client_options}
        client = NotebookClient(notebook, resources={"metadata": {"path": str(path.parent)}}, **options)
        try:
            client.execute()
        except BaseException as error:
            # On SIGINT or SIGTERM nbclient shuts the kernel down itself and then reports a dead kernel (or
            # fails its own second clean-up): say that this process was stopped, not that the kernel crashed.
            if getattr(client, "_async_cleanup_kernel_future", None) is not None:
                raise KeyboardInterrupt(f"{path.name}: stopped by a signal") from error
            raise
    finally:
        connection.unlink(missing_ok=True)
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def cell_label(notebook, cell_index: int | None) -> str:
    """"cell N (first line)", N counting code cells from 1 as the status page does."""
    if cell_index is None:
        return "before its first cell"
    number = sum(cell.cell_type == "code" for cell in notebook.cells[:cell_index + 1])
    first_line = next((line for line in notebook.cells[cell_index].source.splitlines() if line.strip()), "")
    return f"cell {number} ({first_line[:60]!r})"


def execute(path: Path, mode: str, folder: Path | None = None) -> tuple[str, float]:
    """Execute the notebook at ``path`` in ``mode`` in a fresh kernel and store it; ``(key, seconds)``.

    Raises ``RuntimeError`` quoting the failing cell's error (a failed ``check_claim`` among them), or naming
    the chapter and the cell where its kernel died or timed out; the records of a failed run still reach the
    results file the caller's environment names, if any. Raises :class:`SourcesChanged`, storing nothing,
    when the key computed after the run differs from the one fixed before it (a module edited meanwhile).
    """
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    folder = folder or cache_folder()
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_partials(folder)
    notebook = read_source(path)
    before = key_parts(notebook, mode)
    records_file = folder / f".records.{os.getpid()}.{path.stem}.jsonl"
    records_file.unlink(missing_ok=True)
    running: list[int | None] = [None]

    def note_cell(cell, cell_index) -> None:
        running[0] = cell_index

    started = time.perf_counter()
    try:
        run_kernel(notebook, path, mode, records_file, on_cell_start=note_cell)
        failure = None
    except CellExecutionError as error:
        failure = error
    except DeadKernelError:
        failure = (f"its kernel died in {cell_label(notebook, running[0])} (out of memory, or a crash in native "
                   "code); nothing stored")
    except CellTimeoutError:
        failure = f"{cell_label(notebook, running[0])} ran past {CELL_TIMEOUT_S} s; nothing stored"
    seconds = time.perf_counter() - started
    records = records_file.read_text(encoding="utf-8").splitlines() if records_file.is_file() else []
    records_file.unlink(missing_ok=True)
    try:
        after = key_parts(read_source(path), mode)
    except OSError:
        after = {}
    changed = changed_parts(before, after)
    if changed and failure is None:
        raise SourcesChanged(f"{path}: {', '.join(changed)} changed while it executed in mode {mode!r}, so its "
                             "outputs may come from either version: nothing stored; run it again")
    pass_on(records, os.environ.get("ICLLIB_RESULTS"))
    keep_chapter_records(path, records)
    if failure is not None:
        raise RuntimeError(f"{path} failed in mode {mode!r}:\n{failure}") from None
    facts = {"notebook": path.name, "seconds": round(seconds, 1), "threads": KERNEL_THREADS,
             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
             "slowest cells": slowest_cells(notebook)}
    return store(notebook, mode, records, facts, folder, key_of_parts(before)), seconds


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


def keep_chapter_records(path: Path, records: list[str]) -> None:
    """In a book build, the records of the chapter at ``path`` as it was read now, replacing those an earlier reading
    of it left: one file per chapter, ``<chapter>.jsonl`` in the folder ``ICLLIB_BUILD_RECORDS`` names (the build's
    own, per mode, set by ``_ext/ledger_page.py``), so that a check deleted from a chapter leaves no record in an
    incremental build, and no other command's records reach its ledger. Outside a build, nothing."""
    folder = os.environ.get(BUILD_RECORDS_VARIABLE)
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        _write_atomically(Path(folder) / f"{path.stem}.jsonl", "".join(line.rstrip("\n") + "\n" for line in records))


def failure_line(error: BaseException) -> str:
    """An error in one line: an ``OSError`` (a full disk, a read-only folder, a cache path that is a file) as what
    failed on which file, anything else as its message."""
    if isinstance(error, OSError):
        files = [str(name) for name in (error.filename, error.filename2) if name]
        return f"{error.strerror or type(error).__name__}" + (f": {', '.join(files)}" if files else "")
    return str(error)


def pass_on(records: list[str], target: str | Path | None) -> None:
    """Append records to a results file (none: keep them in the cache only)."""
    if target and records:
        Path(target).parent.mkdir(parents=True, exist_ok=True)
        with open(target, "a", encoding="utf-8") as stream:
            stream.writelines(line + "\n" for line in records)


def last_seconds(path: Path, mode: str, folder: Path) -> float:
    """How long the latest stored execution of this chapter in this mode took (0 if none). A facts file that
    cannot be read is an entry that cannot be used: it is removed, and named."""
    runs = []
    for facts in sorted(folder.glob("*.json")):
        try:
            run = json.loads(facts.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            _discard(folder, facts.stem, f"{facts.name}: {error}")
            continue
        if not isinstance(run, dict):
            _discard(folder, facts.stem, f"{facts.name} holds no facts")
            continue
        runs.append(run)
    runs = [run for run in runs if run.get("notebook") == path.name and run.get("mode") == mode
            and isinstance(run.get("seconds"), (int, float)) and isinstance(run.get("date"), str)]
    return max(runs, key=lambda run: run["date"])["seconds"] if runs else 0.0


def _execute_in_worker(path: str, mode: str, folder: str) -> tuple[str, float]:
    print(f"[executions] {Path(path).name}: executing (mode {mode})", flush=True)
    return execute(Path(path), mode, Path(folder))


def execute_changed(paths: list[Path], mode: str, jobs: int, folder: Path | None = None) -> list[Path]:
    """Execute, ``jobs`` at a time, the notebooks among ``paths`` with no stored execution for today's
    code; print a line per chapter. Returns the notebooks that failed (every one runs to its end)."""
    folder = folder or cache_folder()
    remove_stale_partials(folder)
    changed, failed = [], []

    def report(path: Path, error: BaseException) -> None:
        message = failure_line(error)
        named = isinstance(error, RuntimeError) and path.name in message   # execute's own messages name it
        print(f"[executions] {message if named else f'{path.name}: {message}'}", file=sys.stderr, flush=True)
        failed.append(path)

    for path in paths:
        try:
            if load(read_source(path), mode, folder) is None:
                changed.append(path)
        except OSError as error:   # a chapter that is not there, a cache that cannot be read
            report(path, error)
    changed.sort(key=lambda path: -last_seconds(path, mode, folder))  # the longest first: they end together
    for path in sorted(set(paths) - set(changed) - set(failed)):
        print(f"[executions] {path.name}: stored execution reused (mode {mode})", flush=True)
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(changed) or 1))) as pool:
        futures = {pool.submit(_execute_in_worker, str(path), mode, str(folder)): path for path in changed}
        for future in as_completed(futures):
            path = futures[future]
            try:
                _, seconds = future.result()
                print(f"[executions] {path.name}: done in {seconds:.0f} s", flush=True)
            # a failed cell, a dead kernel, changed sources, a worker killed (RuntimeError); a full disk, a read-only
            # _build, a cache path that is not a folder (OSError): one path, one line naming the chapter
            except (RuntimeError, OSError) as error:
                report(path, error)
    return failed


# --- The book build's reader -----------------------------------------------------------------------------

def _source_path(text: str, root: Path) -> Path:
    """The chapter file whose text this is (the reader is handed the text only)."""
    for path in sorted(root.glob("notebooks/*.py")):
        if path.read_text(encoding="utf-8") == text:
            return path
    raise RuntimeError("the book build read a notebook that is not one of notebooks/*.py")


def read_chapter(text: str, **jupytext_options):
    """The ``nb_custom_formats`` reader of the book: the jupytext notebook with the outputs of its stored
    execution for today's code, executing it first if there is none. Its records replace those of its previous
    reading in the build's records (:func:`keep_chapter_records`), as if it had executed during the build. An error
    of the disk or the cache (``OSError``) is a ``RuntimeError`` naming the chapter, in one line."""
    from icllib.config import mode as run_mode

    notebook = jupytext.reads(text, **jupytext_options)
    mode = run_mode()
    path = _source_path(text, book_root())
    try:
        execution = load(notebook, mode)
        if execution is None:
            execute(path, mode)  # its records reach the build's on the way; SourcesChanged stops the build
            execution = load(notebook, mode)
            if execution is None:
                raise RuntimeError(f"{path}: executed, but its stored execution cannot be read back "
                                   f"({cache_folder()}); build again")
        else:
            keep_chapter_records(path, execution.records)
    except OSError as error:   # a full disk, a read-only _build, a cache path that is not a folder
        raise RuntimeError(f"{path.name}: {failure_line(error)}") from None
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
    try:
        failed = execute_changed(paths, mode(), arguments.jobs)
    except (OSError, ValueError) as error:   # the cache folder itself unusable; a bad ICLLIB_MODE
        print(f"[executions] {', '.join(path.name for path in paths)}: not executed: {failure_line(error)} "
              f"(execution cache: {cache_folder()})", file=sys.stderr, flush=True)
        return 1
    print(f"[executions] {len(paths)} chapters ready in {time.perf_counter() - started:.0f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
