"""Paper-scale evidence: run a chapter in ``full`` mode and archive its checks under ``results/full/``.

The site is built in ``default`` mode, so a claim whose check needs the papers' own sizes has no number on the
page unless a full run left one. ``python _ext/paper_scale.py <chapter>|all`` (``make paper-scale``) runs
chapters in ``full`` mode, one at a time and to their end (a failing cell is recorded, not fatal), and writes
``results/full/<chapter>.json``: the commit, date, machine, package versions and wall time of the run, the
cells that raised, every ``check_claim`` record with the registry's statement at run time, and the small
arrays the chapter saved for its paper-scale figures (``icllib.claims.save_arrays``, at most 20,000 values
each). The files are committed; they hold numbers and short strings only, never notebooks, figures or
weights.

``results/full/pending.yaml`` lists the chapters (or parts of chapters) whose full run is not archived, with
its estimated cost and why it was not run. The ledger and the status page read both through
:func:`archived_records`, :func:`chapter_runs`, :func:`read_pending`, :func:`paper_scale_summary` and
:func:`status_rows`; ``tests/test_paper_scale.py`` fails when the archive no longer matches the registry.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

import yaml

import executions
from icllib.claims import ARCHIVE_FOLDER

MODE = "full"
PENDING_FILE = "pending.yaml"
PACKAGES = ("numpy", "scipy", "torch", "icllib")
STATUS_HEADER = ["chapter", "last full run", "commit", "machine", "wall time", "checks"]


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
        changed = git("status", "--porcelain", "--", "src", "notebooks")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return commit + ("+dirty" if changed else "")


def _machine() -> str:
    import torch

    description = executions.machine()
    if torch.cuda.is_available():
        description += f", GPU {torch.cuda.get_device_name(0)}"
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
    return {**{name: record.get(name) for name in fields}, "statement": statements[record["id"]]}


def run_chapter(name: str, folder: Path | None = None) -> Path:
    """Execute ``notebooks/<name>.py`` in ``full`` mode to its last cell and write ``<folder>/<name>.json``
    (default folder: ``results/full``); returns the file written.

    Raises ``ValueError`` when ``name`` is not a chapter. A failing check (or any failing cell) does not stop
    the run: its record and the cell's error are archived with the rest.
    """
    from icllib.claims import registry
    from tqdm.auto import tqdm

    known = chapters()
    if name not in known:
        raise ValueError(f"name {name!r} is not a chapter (notebooks/<name>.py); chapters: {', '.join(known)}")
    root = executions.book_root()
    folder = Path(folder) if folder is not None else default_folder()
    path = root / "notebooks" / f"{name}.py"
    notebook = executions.read_source(path)
    commit, machine, date = _commit(root), _machine(), time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    cells = sum(1 for cell in executions.code_cells(notebook) if cell.source.strip())  # nbclient skips empty ones

    # Draw every cell: they differ in length by orders of magnitude, so tqdm must not learn to skip updates.
    with tempfile.TemporaryDirectory() as scratch, \
            tqdm(total=cells, desc=name, unit="cell", miniters=1, mininterval=0) as bar:
        records_file = Path(scratch) / "records.jsonl"
        failed_cells = 0

        def advance(cell, cell_index, execute_reply) -> None:
            nonlocal failed_cells
            failed_cells += execute_reply.get("content", {}).get("status") == "error"
            bar.set_postfix(failed_cells=failed_cells, refresh=False)
            bar.update()

        started = time.perf_counter()
        # No cell timeout: at paper scale one cell may train for hours.
        executions.run_kernel(notebook, path, MODE, records_file, allow_errors=True, timeout=None,
                              on_cell_executed=advance)
        wall_s = time.perf_counter() - started
        lines = records_file.read_text().splitlines() if records_file.is_file() else []

    statements = {claim_id: claim.statement for claim_id, claim in registry().claims.items()}
    written = [json.loads(line) for line in lines if line.strip()]
    run = {"chapter": name, "mode": MODE, "commit": commit, "date": date, "machine": machine,
           "threads": executions.KERNEL_THREADS, "versions": _versions(), "wall_s": round(wall_s, 1),
           "errors": _cell_errors(notebook, root),
           "records": [_archived(record, statements) for record in written if "id" in record],
           "arrays": {record["arrays"]: {"shapes": record["shapes"], "values": record["values"]}
                      for record in written if "arrays" in record}}
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{name}.json"
    executions._write_atomically(target, json.dumps(run, sort_keys=True, indent=1) + "\n")
    return target


# --- Reading the archive ---------------------------------------------------------------------------------

def _runs(folder: Path | None) -> list[dict]:
    folder = Path(folder) if folder is not None else default_folder()
    return [json.loads(path.read_text()) for path in sorted(folder.glob("*.json"))]


def archived_records(folder: Path | None = None) -> dict[str, list[dict]]:
    """Every archived record of each claim id, in the order its chapter's run made them; each record carries
    its run's ``chapter``, ``date`` and ``commit``."""
    records: dict[str, list[dict]] = {}
    for run in _runs(folder):
        for record in run["records"]:
            records.setdefault(record["id"], []).append(
                {**record, "chapter": run["chapter"], "date": run["date"], "commit": run["commit"]})
    return records


def chapter_runs(folder: Path | None = None) -> dict[str, dict]:
    """Each archived chapter's run: ``date``, ``commit``, ``machine``, ``wall_s``, ``errors`` (the cells that
    raised) and the counts of ``passed`` and ``failed`` checks."""
    return {run["chapter"]: {"date": run["date"], "commit": run["commit"], "machine": run["machine"],
                             "wall_s": run["wall_s"], "errors": run["errors"],
                             "passed": sum(record["passed"] for record in run["records"]),
                             "failed": sum(not record["passed"] for record in run["records"])}
            for run in _runs(folder)}


def read_pending(folder: Path | None = None) -> list[dict]:
    """The entries of ``pending.yaml`` (none when the file is absent): each a ``chapter``, optionally the
    ``part`` of it left out, its estimated ``cost`` and ``why`` it was not run.

    Raises ``ValueError`` naming the file and the entry whose field is missing or not text.
    """
    path = (Path(folder) if folder is not None else default_folder()) / PENDING_FILE
    if not path.is_file():
        return []
    entries = yaml.safe_load(path.read_text()) or []
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


def paper_scale_summary(claim_id: str, records: dict[str, list[dict]]) -> str:
    """One line of plain text for the ledger's paper-scale column, from :func:`archived_records`: the
    measured values and ``(pass)``, or ``FAILED:`` with each failing value and its expectation, then the
    date and the chapter of the run; ``no archived full run`` when the archive has no record of the claim."""
    found = records.get(claim_id, [])
    if not found:
        return "no archived full run"
    run = f"{found[-1]['date'][:10]}, full run of {found[-1]['chapter']}"
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
    date, commit, machine, wall time and checks passed/failed, or, with no archived run, what
    ``pending.yaml`` says it would cost (a pending part of an archived chapter follows its checks)."""
    runs = chapter_runs(folder)
    pending: dict[str, list[str]] = {}
    for entry in read_pending(folder):
        pending.setdefault(entry["chapter"], []).append(_pending_text(entry))
    rows = []
    for chapter in sorted(set(chapters()) | set(runs) | set(pending)):
        waiting = "; ".join(pending.get(chapter, []))
        run = runs.get(chapter)
        if run is None:
            rows.append([chapter, waiting or "no archived full run", "", "", "", ""])
            continue
        checks = f"{run['passed']} passed, {run['failed']} failed"
        if run["errors"]:
            checks += f", {len(run['errors'])} cells raised"
        rows.append([chapter, run["date"], run["commit"], run["machine"], _duration(run["wall_s"]),
                     "; ".join(filter(None, [checks, waiting]))])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run chapters in full mode and archive their checks in "
                                                 "results/full/<chapter>.json.")
    parser.add_argument("chapter", help="a chapter's notebook name, or 'all' (one after the other)")
    parser.add_argument("--folder", type=Path, default=None, help="default: results/full")
    arguments = parser.parse_args(argv)
    names = chapters() if arguments.chapter == "all" else [arguments.chapter]
    if not set(names) <= set(chapters()):
        parser.error(f"chapter {arguments.chapter!r} is not a chapter or 'all'; chapters: {', '.join(chapters())}")
    incomplete = False
    for name in names:
        target = run_chapter(name, arguments.folder)
        run = chapter_runs(target.parent)[name]
        print(f"[paper-scale] {name}: {run['passed']} checks passed, {run['failed']} failed, "
              f"{len(run['errors'])} cells raised, {_duration(run['wall_s'])}; wrote {target}", flush=True)
        incomplete = incomplete or bool(run["errors"])
    return 1 if incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
