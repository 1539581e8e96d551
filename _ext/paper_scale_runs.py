"""``make paper-scale``'s driver: each chapter a task of the executor (:mod:`icllib.executor`), each run archived
by this process as its task ends, and the archives' RO-Crate (``tools/ro_crate.py``) written again at the end.

The chapters run in ``local`` processes (one at a time unless ``--jobs`` says more) or as Slurm jobs
(``--executor submitit``); each task is :func:`paper_scale.execute_chapter`, which returns the run, and
:func:`paper_scale.archive_run` writes it here. A chapter that fails is named at the end, with its error, after
every other chapter was archived.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import paper_scale
from icllib.executor import Task, TasksFailed, run_tasks

HERE = Path(__file__).resolve().parent


def write_crate(folder: Path | None) -> None:
    """The RO-Crate of the archives in ``folder``'s parent (``results/``), written by ``tools/ro_crate.py``."""
    folder = Path(folder) if folder is not None else paper_scale.default_folder()
    spec = importlib.util.spec_from_file_location("ro_crate", HERE.parent / "tools" / "ro_crate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_crate(folder.parent)


def run_chapters(names: list[str], folder: Path | None, *, executor: str | None = None, jobs: int = 1) -> int:
    """Run the chapters ``names`` in full mode on ``executor`` and archive each as it ends; the exit status of
    ``make paper-scale``: 0, 1 when a chapter's cells raised or its run stopped or failed, 2 for a chapter that
    could not start (a stopped run of it on disk), 130 after Ctrl-C."""
    folder = Path(folder) if folder is not None else paper_scale.default_folder()
    tasks = [Task(name, "paper_scale:execute_chapter", (name, str(folder)), path=str(HERE)) for name in names]
    raised = []

    def archive(task, run):
        target = paper_scale.archive_run(task.name, run, folder)
        summary = paper_scale.chapter_runs(target.parent)[task.name]
        print(f"[paper-scale] {task.name}: {summary['passed']} checks passed, {summary['failed']} failed, "
              f"{len(summary['errors'])} cells raised, {paper_scale._duration(summary['wall_s'])}; wrote {target}",
              flush=True)
        raised.extend([task.name] * bool(summary["errors"]))

    try:
        run_tasks(tasks, archive, executor=executor, jobs=jobs)
    except TasksFailed as failed:
        for name, error in failed.failures.items():   # a stopped run's message names its chapter already
            text = str(error) if str(error).startswith(f"{name}:") else f"{name}: {error}"
            print(f"[paper-scale] {text}", file=sys.stderr, flush=True)
        errors = list(failed.failures.values())
        if any(isinstance(error, paper_scale.RunStopped) and error.by_user for error in errors):
            return 130
        return 2 if any(isinstance(error, ValueError) for error in errors) else 1
    except KeyboardInterrupt:
        print("[paper-scale] stopped by Ctrl-C; the chapters that ended are archived", file=sys.stderr, flush=True)
        return 130
    finally:
        write_crate(folder)
    return 1 if raised else 0
