"""Paper-scale evidence: run a chapter in ``full`` mode and archive its checks under ``results/full/``.

The site is built in ``default`` mode, so a claim whose check needs the papers' own sizes has no number on the
page unless a full run left one. ``python _ext/paper_scale.py <chapter>|all`` (``make paper-scale``) runs
chapters in ``full`` mode to their end, each a task of the executor (``_ext/paper_scale_runs.py``: one at a time
here by default, or as Slurm jobs; a failing cell is recorded, not fatal), and writes
``results/full/<chapter>.json``: the commit, date, machine, package versions and wall time of the run, the
cells that raised, every ``check_claim`` record with the registry's statement at run time, and the small
arrays the chapter saved for its paper-scale figures (``icllib.claims.save_arrays``, at most 20,000 values
each). The files are committed; they hold numbers and short strings only, never notebooks, figures or
weights.

A run is written to disk as it goes, in ``results/full/.running/<chapter>/`` (the run's header, each check
record as the kernel makes it, each cell's outcome): it checks first that it can write there, so a run never
ends by failing to save hours of work. A run stopped before its last cell (Ctrl-C, a dead kernel, a killed
process, a machine that went down) leaves that folder; ``--archive-partial`` archives what it holds with
``"partial": true`` (the pages say so), ``--discard-partial`` removes it, and a new run of the chapter refuses
to start over it.

Each archive is checked against :data:`RUN_FIELDS` (and the fields of its records) when read; a file that
does not parse or does not fit raises :class:`ArchiveError` naming the file and the record. The pages show,
per archived run, whether its chapter's code (its notebook and the icllib modules it imports) changed since
the run's commit, and which files (:func:`code_since`).

``results/full/pending.yaml`` lists the chapters (or parts of chapters) whose full run is not archived, with
its estimated cost and why it was not run. The ledger and the status page read both through
:func:`archived_records`, :func:`chapter_runs`, :func:`read_pending`, :func:`paper_scale_summary` and
:func:`status_rows`; ``tests/test_paper_scale.py`` fails when the archive no longer matches the registry.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

import yaml

import execution_keys
import executions
from icllib.claims import ARCHIVE_FOLDER
from icllib.config import device_description
from icllib.executor import executor_kind

MODE = "full"
PENDING_FILE = "pending.yaml"
PACKAGES = ("numpy", "scipy", "torch", "icllib")
STATUS_HEADER = ["chapter", "last full run", "commit", "machine", "wall time", "checks", "code since the run"]
RUNNING_FOLDER = ".running"


class ArchiveError(ValueError):
    """An archive file that does not parse or does not fit the schema; the message names the file and the
    record."""


def default_folder() -> Path:
    """``results/full`` under the book root."""
    return executions.book_root().joinpath(*ARCHIVE_FOLDER)


def chapters() -> list[str]:
    """The chapters' names: the notebooks in ``notebooks/`` under the book root."""
    return sorted(path.stem for path in (executions.book_root() / "notebooks").glob("*.py"))


# --- Running a chapter -----------------------------------------------------------------------------------

def _commit(root: Path) -> str:
    """The short commit, with ``+dirty`` when the code that ran differs from it (the registry is in src/)."""
    def git(*arguments: str) -> str:
        return subprocess.run(["git", "-C", str(root), *arguments], capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        # Untracked files (an editor's swap file) are not part of the code that ran from the commit.
        changed = git("status", "--porcelain", "--untracked-files=no", "--", "src", "notebooks")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + ("+dirty" if changed else "")


def _machine() -> str:
    """The CPU, and the GPU when the run's device (``ICLLIB_DEVICE``) is one: a GPU the run did not use is not
    part of where it ran."""
    from icllib.config import device

    description = executions.machine()
    if device().type == "cuda":
        import torch

        description += f", GPU {torch.cuda.get_device_name(device())}"
    return description


def _versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return versions


def _cell_errors(notebook, root: Path) -> list[dict]:
    """Each code cell that raised (numbered from 1 as on the status page): the exception and the first line of
    its message, with the checkout's path taken out (a traceback would tie the archive to this machine)."""
    errors = []
    for number, cell in enumerate(executions.code_cells(notebook), start=1):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                lines = str(output.get("evalue", "")).strip().splitlines()
                message = lines[0].replace(str(root), ".") if lines else ""
                errors.append({"cell": number, "error": output.get("ename", ""), "message": message})
    return errors


def _archived(record: dict, statements: dict[str, str]) -> dict:
    fields = ("id", "measured", "expected", "tolerance", "passed", "why", "mode")
    # A claim removed from the registry while the run went on keeps its record: hours of evidence.
    statement = statements.get(record["id"], "(no longer in the registry when the run was archived)")
    return {**{name: record.get(name) for name in fields}, "statement": statement}


def running_folder(name: str, folder: Path | None = None) -> Path:
    """Where a run of chapter ``name`` keeps its header, records and cell outcomes while it runs."""
    if not isinstance(name, str) or not name.isidentifier():
        raise ValueError(f"name must be a chapter's name such as 'balance', got {name!r}")
    return (Path(folder) if folder is not None else default_folder()) / RUNNING_FOLDER / name


def check_writable(folder: Path) -> None:
    """Raise ``ValueError`` naming ``folder`` when a run could not save its records and archive there."""
    folder = Path(folder)
    probe = folder / f".probe.{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        raise ValueError(f"folder {str(folder)!r} cannot be written ({error.strerror or error}): a full run would "
                         "lose its records; make it writable, or pass another folder (--folder)") from None


def _stopped_run(work: Path) -> str:
    """One line on the run left in ``work``: its date, the cells it ran and the records it kept."""
    header = _read_json(work / "header.json") or {}
    cells = len(_json_lines(work / "cells.jsonl")[0])
    records = len(_json_lines(work / "records.jsonl")[0])
    return (f"the run of {header.get('date', 'an unknown date')} ran {cells} of {header.get('cells', '?')} cells "
            f"and kept {records} records")


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def _json_lines(path: Path) -> tuple[list[dict], int]:
    """The whole lines of a JSON-lines file a killed process may have cut short, and how many lines were
    unreadable (a last line half written)."""
    if not path.is_file():
        return [], 0
    kept, unreadable = [], 0
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            try:
                kept.append(json.loads(line))
            except json.JSONDecodeError:
                unreadable += 1
    return kept, unreadable


def _owner_alive(work: Path) -> bool:
    try:
        return executions.process_alive(int((work / "pid").read_text(encoding="utf-8")))
    except (OSError, ValueError):
        return False


class RunStopped(RuntimeError):
    """A full run stopped before its last cell; what it made is kept in its running folder."""

    def __init__(self, message: str, by_user: bool):
        super().__init__(message)
        self.by_user = by_user

    def __reduce__(self):   # it crosses from the executor's process to the driver's
        return (type(self), (str(self), self.by_user))


def run_chapter(name: str, folder: Path | None = None) -> Path:
    """Execute ``notebooks/<name>.py`` in ``full`` mode to its last cell and write ``<folder>/<name>.json``
    (default folder: ``results/full``); returns the file written. :func:`execute_chapter` runs it (the task
    ``make paper-scale`` hands the executor), :func:`archive_run` archives it (the driver, as each task ends).
    """
    return archive_run(name, execute_chapter(name, folder), folder)


def archive_run(name: str, run: dict, folder: Path | None = None) -> Path:
    """Write the ``run`` of chapter ``name`` that :func:`execute_chapter` returned to ``<folder>/<name>.json``
    (atomically, after checking it against the schema), then remove its running folder; returns the file."""
    folder = Path(folder) if folder is not None else default_folder()
    target = _write_run(folder, name, run)
    if running_folder(name, folder).is_dir():
        _remove_running(running_folder(name, folder))
    return target


def execute_chapter(name: str, folder: Path | str | None = None) -> dict:
    """Execute ``notebooks/<name>.py`` in ``full`` mode to its last cell and return its run, as archived: the
    task of one chapter, on whichever machine the executor runs it. Its running folder stays until the run is
    archived (:func:`archive_run`).

    Raises ``ValueError`` when ``name`` is not a chapter, when ``folder`` cannot be written (checked before the
    chapter starts) or when a stopped run of the chapter is still on disk (archive it as partial or discard it
    first). A failing check (or any failing cell) does not stop the run: its record and the cell's error are
    archived with the rest. Raises :class:`RunStopped` when the run stops before its last cell (Ctrl-C, a dead
    kernel): its records stay on disk in :func:`running_folder`, for :func:`archive_partial`.
    """
    from nbclient.exceptions import DeadKernelError
    from tqdm.auto import tqdm

    root = executions.book_root()
    folder = Path(folder) if folder is not None else default_folder()
    work = _free_running_folder(name, folder)
    notebook = executions.read_source(path := root / "notebooks" / f"{name}.py")
    header = _run_header(name, root, notebook)
    work.mkdir(parents=True)  # under folder, which check_writable found writable
    (work / "pid").write_text(str(os.getpid()), encoding="utf-8")
    executions._write_atomically(work / "header.json", json.dumps(header, sort_keys=True, indent=1))
    records_file, cells_file = work / "records.jsonl", work / "cells.jsonl"
    started = time.perf_counter()
    running: list[int | None] = [None]

    # Draw every cell: they differ in length by orders of magnitude, so tqdm must not learn to skip updates.
    with tqdm(total=header["cells"], desc=name, unit="cell", miniters=1, mininterval=0) as bar:
        failed_cells = 0

        def start(cell, cell_index) -> None:
            running[0] = cell_index

        def advance(cell, cell_index, execute_reply) -> None:
            nonlocal failed_cells
            content = execute_reply.get("content", {})
            outcome = {"cell": _code_cell_number(notebook, cell_index), "status": content.get("status", ""),
                       "seconds": round(time.perf_counter() - started, 1)}
            if content.get("status") == "error":
                failed_cells += 1
                lines = str(content.get("evalue", "")).strip().splitlines()
                outcome.update(error=content.get("ename", ""),
                               message=lines[0].replace(str(root), ".") if lines else "")
            with cells_file.open("a", encoding="utf-8") as stream:   # on disk cell by cell: a stopped run keeps what it did
                stream.write(json.dumps(outcome) + "\n")
            bar.set_postfix(failed_cells=failed_cells, refresh=False)
            bar.update()

        try:
            # No cell timeout: at paper scale one cell may train for hours.
            executions.run_kernel(notebook, path, MODE, records_file, allow_errors=True, timeout=None,
                                  on_cell_start=start, on_cell_executed=advance)
        except KeyboardInterrupt:
            _note_stop(work, f"stopped by Ctrl-C in {executions.cell_label(notebook, running[0])}", started)
            raise RunStopped(f"{name}: stopped by Ctrl-C; {_stopped_run(work)}, kept in {work}: "
                             f"`python _ext/paper_scale.py {name} --archive-partial` archives them as a partial "
                             "run", by_user=True) from None
        except DeadKernelError:
            _note_stop(work, f"its kernel died in {executions.cell_label(notebook, running[0])}", started)
            raise RunStopped(f"{name}: its kernel died in {executions.cell_label(notebook, running[0])} (out of "
                             f"memory?); {_stopped_run(work)}, kept in {work}: `python _ext/paper_scale.py {name} "
                             "--archive-partial` archives them as a partial run", by_user=False) from None
    wall_s = time.perf_counter() - started
    lines = records_file.read_text(encoding="utf-8").splitlines() if records_file.is_file() else []
    run = {**header, "wall_s": round(wall_s, 1), "errors": _cell_errors(notebook, root),
           **_records_and_arrays([json.loads(line) for line in lines if line.strip()])}
    run.pop("cells")
    return run


def _free_running_folder(name: str, folder: Path) -> Path:
    """Where a full run of chapter ``name`` keeps its records while it runs, once nothing else holds it (see
    :func:`run_chapter` for what it refuses)."""
    known = chapters()
    if name not in known:
        raise ValueError(f"name {name!r} is not a chapter (notebooks/<name>.py); chapters: {', '.join(known)}")
    check_writable(folder)
    work = running_folder(name, folder)
    if work.exists():
        if _owner_alive(work):
            owner = (work / "pid").read_text(encoding="utf-8")
            raise ValueError(f"name {name!r}: a full run of it is under way (process {owner})")
        raise ValueError(f"name {name!r}: a stopped full run of it is on disk in {work} ({_stopped_run(work)}): "
                         f"archive it with `python _ext/paper_scale.py {name} --archive-partial` or remove it with "
                         "--discard-partial, then run again")
    return work


def _run_header(name: str, root: Path, notebook) -> dict:
    """The run's header: what describes the run as a whole. A field added here is archived as it is (declare it
    in OPTIONAL_RUN_FIELDS)."""
    cells = sum(1 for cell in executions.code_cells(notebook) if cell.source.strip())  # nbclient skips empty ones
    return {"chapter": name, "mode": MODE, "commit": _commit(root),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": _machine(),
            "device": device_description(), "threads": executions.KERNEL_THREADS, "versions": _versions(),
            "cells": cells}


def _remove_running(work: Path) -> None:
    shutil.rmtree(work)
    try:
        work.parent.rmdir()   # the last run under way: leave no empty folder in the archive
    except OSError:
        pass


def _code_cell_number(notebook, cell_index: int) -> int:
    return sum(cell.cell_type == "code" for cell in notebook.cells[:cell_index + 1])


def _note_stop(work: Path, reason: str, started: float) -> None:
    executions._write_atomically(work / "stopped.json", json.dumps(
        {"stopped": reason, "wall_s": round(time.perf_counter() - started, 1)}))


def _records_and_arrays(written: list[dict]) -> dict:
    from icllib.claims import registry

    statements = {claim_id: claim.statement for claim_id, claim in registry().claims.items()}
    return {"records": [_archived(record, statements) for record in written if "id" in record],
            "arrays": {record["arrays"]: {"shapes": record["shapes"], "values": record["values"]}
                       for record in written if "arrays" in record}}


def _write_run(folder: Path, name: str, run: dict) -> Path:
    target = folder / f"{name}.json"
    text = json.dumps(run, sort_keys=True, indent=1) + "\n"
    validate_run(json.loads(text), target)   # never archive what the pages could not read
    executions._write_atomically(target, text)
    return target


def archive_partial(name: str, folder: Path | None = None) -> Path:
    """Archive the stopped run of chapter ``name`` left in :func:`running_folder` as ``<folder>/<name>.json``
    with ``"partial": true``, the cells it ran, why it stopped, its records and arrays; returns the file (it
    replaces an earlier archive of the chapter). Raises ``ValueError`` naming ``name`` when no stopped run of
    it is on disk, or when its run is still under way."""
    folder = Path(folder) if folder is not None else default_folder()
    work = running_folder(name, folder)
    header = _read_json(work / "header.json")
    if not isinstance(header, dict):
        raise ValueError(f"name {name!r}: no stopped full run of it in {work}")
    if _owner_alive(work):
        owner = (work / "pid").read_text(encoding="utf-8")
        raise ValueError(f"name {name!r}: its full run is still under way (process {owner})")
    root = executions.book_root(folder)
    written, _ = _json_lines(work / "records.jsonl")
    cells, _ = _json_lines(work / "cells.jsonl")
    stop = _read_json(work / "stopped.json") or {}
    run = {**header, "partial": True, "cells_run": len(cells),
           "stopped": stop.get("stopped", "its process ended before the last cell (killed, or the machine went "
                                          "down)"),
           "wall_s": stop.get("wall_s", cells[-1]["seconds"] if cells else 0.0),
           "errors": [{"cell": cell["cell"], "error": cell["error"], "message": cell["message"].replace(str(root), ".")}
                      for cell in cells if cell.get("status") == "error"],
           **_records_and_arrays(written)}
    target = _write_run(folder, name, run)
    _remove_running(work)
    return target


def discard_partial(name: str, folder: Path | None = None) -> None:
    """Remove the stopped run of chapter ``name`` (raises ``ValueError`` naming ``name`` when there is none, or
    when it is still under way)."""
    work = running_folder(name, folder)
    if not work.is_dir():
        raise ValueError(f"name {name!r}: no stopped full run of it in {work}")
    if _owner_alive(work):
        raise ValueError(f"name {name!r}: its full run is still under way")
    _remove_running(work)


# --- Reading the archive ---------------------------------------------------------------------------------

# The schema of results/full/<chapter>.json: each field with the kinds of JSON value it may hold.
RUN_FIELDS = {"chapter": ("text",), "mode": ("text",), "commit": ("text",), "date": ("text",),
              "machine": ("text",), "threads": ("integer",), "versions": ("object",), "wall_s": ("number",),
              "errors": ("list",), "records": ("list",)}
# "device" and "deciding" are written by the deciding runs' tooling (icllib.deciding); "partial", "cells",
# "cells_run" and "stopped" by archive_partial.
OPTIONAL_RUN_FIELDS = {"arrays": ("object",), "partial": ("bool",), "cells": ("integer",),
                       "cells_run": ("integer",), "stopped": ("text",), "device": ("text",),
                       "deciding": ("text", "object", "list", "bool")}
RECORD_FIELDS = {"id": ("text",), "measured": ("number", "bool"), "expected": ("number", "bool", "null"),
                 "tolerance": ("text",), "passed": ("bool",), "why": ("text", "null"), "mode": ("text",),
                 "statement": ("text",)}
ERROR_FIELDS = {"cell": ("integer",), "error": ("text",), "message": ("text",)}


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number" if math.isfinite(value) else "non-finite number"
    return {str: "text", dict: "object", list: "list"}.get(type(value), type(value).__name__)


def _check_fields(entry, fields: dict, optional: dict, where: str) -> None:
    if not isinstance(entry, dict):
        raise ArchiveError(f"{where}: must be an object, got {_kind(entry)}")
    for name, kinds in {**fields, **optional}.items():
        if name not in entry:
            if name in fields:
                raise ArchiveError(f"{where}: field {name!r} is missing")
            continue
        kind = _kind(entry[name])
        if kind not in kinds and not (kind == "integer" and "number" in kinds):
            raise ArchiveError(f"{where}: field {name!r} must be {' or '.join(kinds)}, got {kind} "
                               f"{str(entry[name])[:40]!r}")
    unknown = sorted(set(entry) - set(fields) - set(optional))
    if unknown:
        raise ArchiveError(f"{where}: unknown field {unknown[0]!r} (known: {', '.join([*fields, *optional])})")


def validate_run(run, path: Path) -> dict:
    """``run`` (read from ``path``) if it fits the archive's schema; else :class:`ArchiveError` naming the file,
    the record and the field."""
    _check_fields(run, RUN_FIELDS, OPTIONAL_RUN_FIELDS, str(path))
    if run["chapter"] != Path(path).stem or run["mode"] != MODE:
        raise ArchiveError(f"{path}: holds chapter {run['chapter']!r} in mode {run['mode']!r}; the file of a "
                           f"{MODE}-mode run of {Path(path).stem!r} must hold that")
    for number, record in enumerate(run["records"], start=1):
        label = f"record {number}" + (f" ({record['id']!r})" if isinstance(record, dict) and "id" in record else "")
        _check_fields(record, RECORD_FIELDS, {}, f"{path}: {label}")
    for number, error in enumerate(run["errors"], start=1):
        _check_fields(error, ERROR_FIELDS, {}, f"{path}: error {number}")
    for name, saved in run.get("arrays", {}).items():
        where = f"{path}: arrays {name!r}"
        _check_fields(saved, {"shapes": ("object",), "values": ("object",)}, {}, where)
        if set(saved["shapes"]) != set(saved["values"]):
            raise ArchiveError(f"{where}: shapes and values name different arrays")
        for key, shape in saved["shapes"].items():
            values = saved["values"][key]
            if not (isinstance(shape, list) and all(_kind(size) == "integer" and size >= 0 for size in shape)):
                raise ArchiveError(f"{where}: the shape of {key!r} must be a list of sizes, got {shape!r}")
            if not isinstance(values, list) or len(values) != math.prod(shape) or \
                    not all(_kind(value) in {"number", "integer", "null"} for value in values):
                raise ArchiveError(f"{where}: {key!r} must hold {math.prod(shape)} numbers or nulls")
    return run


def read_run(path: Path) -> dict:
    """The archived run in ``path``, checked against the schema (:func:`validate_run`); raises
    :class:`ArchiveError` naming the file (and the record) when it does not parse or fit."""
    path = Path(path)
    try:
        run = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ArchiveError(f"{path}: not valid JSON ({error.msg} at line {error.lineno}, column {error.colno}); "
                           f"restore it (git checkout -- {path}) or run make paper-scale "
                           f"CHAPTER={path.stem} again") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ArchiveError(f"{path}: cannot be read ({error})") from None
    return validate_run(run, path)


def _runs(folder: Path | None) -> list[dict]:
    folder = Path(folder) if folder is not None else default_folder()
    return [read_run(path) for path in sorted(folder.glob("*.json"))]


def _git(root: Path, *arguments: str) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(root), *arguments], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def chapter_code(chapter: str, root: Path) -> list[str]:
    """The files of a chapter's code, relative to the book ``root``: its notebook and the icllib modules it
    imports (followed through their imports, as in its execution key)."""
    notebook = root / "notebooks" / f"{chapter}.py"
    files = [notebook]
    package = root / "src" / "icllib"
    if notebook.is_file() and package.is_dir():
        cells = [cell.source for cell in executions.code_cells(executions.read_source(notebook))]
        files += [path for path in execution_keys.dependencies(cells, package) if path.suffix == ".py"]
    return sorted(path.relative_to(root).as_posix() for path in files)


def code_since(run: dict, root: Path) -> dict:
    """Whether the code of ``run``'s chapter changed since the commit it ran at: ``state`` (``unchanged``,
    ``changed``, ``unknown commit``, ``no git``), ``changed`` (the files, relative to ``root``) and ``text``,
    the line the pages show."""
    if not isinstance(run, dict) or not isinstance(run.get("commit"), str) or not isinstance(run.get("chapter"), str):
        raise ValueError(f"run must be an archived run with its 'chapter' and 'commit', got {run!r:.80}")
    commit, dirty = run["commit"].split("+")[0], "+dirty" in run["commit"]
    prefix = "run with uncommitted changes to " if dirty else ""
    if _git(root, "rev-parse", "--git-dir") is None:
        return {"state": "no git", "changed": [], "text": "not a git checkout: whether it changed is unknown"}
    if not re.fullmatch(r"[0-9a-f]{4,40}", commit) or _git(root, "cat-file", "-e", f"{commit}^{{commit}}") is None:
        return {"state": "unknown commit", "changed": [],
                "text": f"commit {run['commit']!r} unknown to git: whether the code changed is unknown"}
    files = chapter_code(run["chapter"], root)
    listed = _git(root, "diff", "--name-only", commit, "--", *files)
    changed = sorted(listed.splitlines()) if listed else []
    if not changed:
        return {"state": "unchanged", "changed": [], "text": f"{prefix}unchanged since {commit}"}
    return {"state": "changed", "changed": changed, "text": f"{prefix}changed since {commit}: {', '.join(changed)}"}


def _with_code(runs: list[dict], folder: Path | None) -> list[dict]:
    root = executions.book_root(Path(folder) if folder is not None else default_folder())
    return [{**run, "code": code_since(run, root)} for run in runs]


def archived_records(folder: Path | None = None) -> dict[str, list[dict]]:
    """Every archived record of each claim id, in the order its chapter's run made them; each record carries
    its run's ``chapter``, ``date``, ``commit``, ``partial`` and ``code`` (:func:`code_since`).

    Raises :class:`ArchiveError` naming the file and the record when an archive does not fit the schema."""
    records: dict[str, list[dict]] = {}
    for run in _with_code(_runs(folder), folder):
        for record in run["records"]:
            records.setdefault(record["id"], []).append(
                {**record, "chapter": run["chapter"], "date": run["date"], "commit": run["commit"],
                 "partial": run.get("partial", False), "code": run["code"]})
    return records


def chapter_runs(folder: Path | None = None) -> dict[str, dict]:
    """Each archived chapter's run: ``date``, ``commit``, ``machine`` (with its device), ``wall_s``, ``errors`` (the cells that
    raised), the counts of ``passed`` and ``failed`` checks, ``partial`` with ``cells_run``, ``cells`` and
    ``stopped`` for a run archived before its last cell, and ``code`` (:func:`code_since`)."""
    return {run["chapter"]: {"date": run["date"], "commit": run["commit"],
                             # the device since ICLLIB_DEVICE existed; older runs ran on the CPU
                             "machine": f"{run['machine']}; device {run.get('device', 'cpu')}",
                             "wall_s": run["wall_s"], "errors": run["errors"],
                             "passed": sum(record["passed"] for record in run["records"]),
                             "failed": sum(not record["passed"] for record in run["records"]),
                             "partial": run.get("partial", False), "cells_run": run.get("cells_run"),
                             "cells": run.get("cells"), "stopped": run.get("stopped"), "code": run["code"]}
            for run in _with_code(_runs(folder), folder)}


def read_pending(folder: Path | None = None) -> list[dict]:
    """The entries of ``pending.yaml`` (none when the file is absent): each a ``chapter``, optionally the
    ``part`` of it left out, its estimated ``cost`` and ``why`` it was not run.

    Raises ``ValueError`` naming the file and the entry whose field is missing or not text.
    """
    path = (Path(folder) if folder is not None else default_folder()) / PENDING_FILE
    if not path.is_file():
        return []
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if not isinstance(entries, list):
        raise ValueError(f"{path}: must be a list of entries (chapter, part, cost, why), got {type(entries).__name__}")
    for number, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise ValueError(f"{path}: entry {number} must be a mapping, got {entry!r}")
        for field in ("chapter", "cost", "why", *(("part",) if "part" in entry else ())):
            if not isinstance(entry.get(field), str) or not entry[field].strip():
                raise ValueError(f"{path}: entry {number}: field {field!r} is missing or empty")
    return entries


# --- What the pages show ---------------------------------------------------------------------------------

def _number(value) -> str:
    return str(value) if isinstance(value, bool) or value is None else f"{value:.4g}"


def _expectation(record: dict) -> str:
    if isinstance(record["expected"], bool):
        return f"expected {record['expected']}"
    if record["expected"] is None:
        return f"expected {record['tolerance']}"
    return f"expected {_number(record['expected'])} within {record['tolerance']}"


def paper_scale_summary(claim_id: str, records: dict[str, list[dict]], with_code: bool = True) -> str:
    """One line of plain text for the ledger's paper-scale column, from :func:`archived_records`: the measured
    values and ``(pass)``, or ``FAILED:`` with each failing value and its expectation, the run's date and chapter,
    and ``with_code`` which files of its code changed since (the page shows one mark instead); ``no archived full
    run`` when the archive has no record of the claim."""
    found = records.get(claim_id, [])
    if not found:
        return "no archived full run"
    kind = "partial full run" if found[-1].get("partial") else "full run"
    run = f"{found[-1]['date'][:10]}, {kind} of {found[-1]['chapter']}"
    run += f"; its code {found[-1]['code']['text']}" if with_code and "code" in found[-1] else ""
    failed = [record for record in found if not record["passed"]]
    if failed:
        details = "; ".join(f"measured {_number(record['measured'])}, {_expectation(record)}" for record in failed)
        return f"FAILED: {details}, {run}"
    return f"{', '.join(_number(record['measured']) for record in found)} (pass), {run}"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:02.0f} min"


def _pending_text(entry: dict) -> str:
    part = f"{entry['part']}: " if entry.get("part") else ""
    return f"pending: {part}estimated cost {entry['cost']} ({entry['why']})"


def status_rows(folder: Path | None = None) -> list[list[str]]:
    """One row per chapter for the status page's table, under :data:`STATUS_HEADER`: the last full run's
    date, commit, machine, wall time and checks passed/failed (with, for a partial run, the cells it ran and
    why it stopped), whether the chapter's code changed since (:func:`code_since`), or, with no archived run,
    what ``pending.yaml`` says it would cost (a pending part of an archived chapter follows its checks)."""
    runs = chapter_runs(folder)
    pending: dict[str, list[str]] = {}
    for entry in read_pending(folder):
        pending.setdefault(entry["chapter"], []).append(_pending_text(entry))
    rows = []
    for chapter in sorted(set(chapters()) | set(runs) | set(pending)):
        waiting = "; ".join(pending.get(chapter, []))
        run = runs.get(chapter)
        if run is None:
            rows.append([chapter, waiting or "no archived full run", "", "", "", "", ""])
            continue
        checks = f"{run['passed']} passed, {run['failed']} failed"
        if run["errors"]:
            checks += f", {len(run['errors'])} cells raised"
        date = run["date"]
        if run["partial"]:
            date += " (partial)"
            checks = (f"partial run: {run['cells_run']} of {run['cells'] or '?'} cells, "
                      f"{run['stopped'] or 'stopped'}; {checks}")
        rows.append([chapter, date, run["commit"], run["machine"], _duration(run["wall_s"]),
                     "; ".join(filter(None, [checks, waiting])), run["code"]["text"]])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run chapters in full mode and archive their checks in "
                                                 "results/full/<chapter>.json.")
    parser.add_argument("chapter", help="a chapter's notebook name, or 'all' (each a task of the executor)")
    parser.add_argument("--folder", type=Path, default=None, help="default: results/full")
    parser.add_argument("--executor", default=None, help="local (default: ICLLIB_EXECUTOR, else local) or submitit")
    parser.add_argument("--jobs", type=int, default=1, help="chapters run at once by the local executor (default 1)")
    left = parser.add_mutually_exclusive_group()
    left.add_argument("--archive-partial", action="store_true",
                      help="archive the stopped run of the chapter as partial instead of running it")
    left.add_argument("--discard-partial", action="store_true", help="remove the stopped run of the chapter")
    arguments = parser.parse_args(argv)
    names = chapters() if arguments.chapter == "all" else [arguments.chapter]
    if not set(names) <= set(chapters()):
        parser.error(f"chapter {arguments.chapter!r} is not a chapter or 'all'; chapters: {', '.join(chapters())}")
    try:
        if arguments.archive_partial or arguments.discard_partial:
            if arguments.chapter == "all":
                names = [name for name in names if running_folder(name, arguments.folder).is_dir()]
            for name in names:
                if arguments.discard_partial:
                    discard_partial(name, arguments.folder)
                    print(f"[paper-scale] {name}: stopped run removed", flush=True)
                else:
                    target = archive_partial(name, arguments.folder)
                    run = chapter_runs(target.parent)[name]
                    print(f"[paper-scale] {name}: partial run archived ({run['cells_run']} of {run['cells']} cells, "
                          f"{run['passed']} checks passed, {run['failed']} failed); wrote {target}", flush=True)
                    __import__("paper_scale_runs").write_crate(arguments.folder)
            return 0
        # Before the first chapter starts: a run of hours must not end by failing to save.
        check_writable(arguments.folder if arguments.folder is not None else default_folder())
        executor_kind(arguments.executor)
    except ValueError as error:
        print(f"[paper-scale] {error}", file=sys.stderr, flush=True)
        return 2
    import paper_scale_runs   # each chapter a task of the executor (icllib.executor)

    return paper_scale_runs.run_chapters(names, arguments.folder, executor=arguments.executor, jobs=arguments.jobs)


if __name__ == "__main__":
    sys.exit(main())
