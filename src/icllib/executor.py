"""One executor for independent runs: the chapters of ``make paper-scale`` and the deciding runs.

A run that takes hours is a :class:`Task`: a function named by its module (``"icllib.deciding:measure_runs"``), its
arguments, and a name that messages use. :func:`run_tasks` hands the tasks to an executor in the style of
``concurrent.futures`` and gives each result to the driver as soon as its task ends, so the driver writes that
run's archive at once (atomically, :func:`write_atomically`); a task that fails is named with its error at the end,
after every other task has run and been archived. Archives are one file per run, so runs made on different
machines and days merge by file.

Two executors (``EXECUTORS``):

- ``local`` (the default): a pool of ``jobs`` processes on this machine (default one, as before the executor
  existed). Each task runs in a fresh Python process (``spawn``) that calls the same function with the same
  arguments as a run in the driver would, so its numbers are the same bit for bit.
- ``submitit``: each task is a Slurm job, through submitit
  (the optional extra ``cluster``: ``pip install -e ".[cluster]"``; it is in the book's pins). Its settings come
  from a small TOML file (``ICLLIB_EXECUTOR_CONFIG``, table ``[submitit]``) and environment variables, which
  win: ``ICLLIB_SLURM_PARTITION``, ``ICLLIB_SLURM_TIME_MIN`` (minutes a task may run), ``ICLLIB_SLURM_GPUS``
  (GPUs per task), ``ICLLIB_SLURM_CPUS`` (CPUs per task), ``ICLLIB_SUBMITIT_FOLDER`` (its logs and pickles,
  default ``_build/submitit``) and ``ICLLIB_SUBMITIT_CLUSTER`` (``slurm``, or submitit's ``local`` and ``debug``
  executors, which the tests use). The checkout must be on a file system the cluster's nodes share.

``ICLLIB_EXECUTOR`` picks the executor where the command line does not (``--executor``).
"""

from __future__ import annotations

import concurrent.futures
import ctypes
import dataclasses
import importlib
import multiprocessing
import os
import re
import signal
import sys
import tempfile
import time
import tomllib
from pathlib import Path

EXECUTORS = ("local", "submitit")
EXECUTOR_VARIABLE = "ICLLIB_EXECUTOR"
CONFIG_VARIABLE = "ICLLIB_EXECUTOR_CONFIG"
# Each setting of the submitit executor, with its environment variable and its type.
SUBMITIT_SETTINGS = {"partition": ("ICLLIB_SLURM_PARTITION", str), "time_min": ("ICLLIB_SLURM_TIME_MIN", int),
                     "gpus_per_task": ("ICLLIB_SLURM_GPUS", int), "cpus_per_task": ("ICLLIB_SLURM_CPUS", int),
                     "folder": ("ICLLIB_SUBMITIT_FOLDER", str), "cluster": ("ICLLIB_SUBMITIT_CLUSTER", str)}
SUBMITIT_DEFAULTS = {"time_min": 24 * 60, "gpus_per_task": 0, "cpus_per_task": 2,
                     "folder": str(Path("_build") / "submitit"), "cluster": "slurm"}
SUBMITIT_CLUSTERS = ("slurm", "local", "debug")
POLL_S = 5.0  # how often the driver asks Slurm whether a job has ended


@dataclasses.dataclass(frozen=True)
class Task:
    """One independent run: ``function`` (``"module:function"``, imported where the task runs) called with
    ``args`` and ``kwargs``; ``name`` says which run it is in messages; ``path``, a folder put on ``sys.path``
    first (the book's ``_ext/``, which is not a package). A task pickles by value, with nothing of the driver's
    state: a process pool or a Slurm node runs it as the driver would."""

    name: str
    function: str
    args: tuple = ()
    kwargs: dict = dataclasses.field(default_factory=dict)
    path: str | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name must be a task's name, got {self.name!r}")
        module, _, function = self.function.partition(":") if isinstance(self.function, str) else ("", "", "")
        if not module or not function.isidentifier():
            raise ValueError(f"function must be 'module:function', got {self.function!r}")

    def __call__(self):
        if self.path is not None and self.path not in sys.path:
            sys.path.insert(0, self.path)
        module, _, function = self.function.partition(":")
        return getattr(importlib.import_module(module), function)(*self.args, **self.kwargs)


class TasksFailed(RuntimeError):
    """Some tasks failed; ``failures`` maps each one's name to its exception. Every other task ran to its end and
    its result reached the driver first."""

    def __init__(self, failures: dict):
        if not isinstance(failures, dict) or not failures or \
                not all(isinstance(error, BaseException) for error in failures.values()):
            raise ValueError(f"failures must map each failed task's name to its exception, got {failures!r:.80}")
        self.failures = dict(failures)
        lines = [f"{name}: {_summary(error)}" for name, error in self.failures.items()]
        super().__init__(f"{len(lines)} task(s) failed: " + "; ".join(lines))

    def __reduce__(self):
        return (type(self), (self.failures,))


def _summary(error: BaseException) -> str:
    """One line on a task's error: its type and first line or, for a job whose traceback submitit hands back
    as text, the traceback's own last exception line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    raised = [line for line in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Stopped|Interrupt):", line)]
    if raised and len(lines) > 1:
        return f"{type(error).__name__}: {raised[-1]}"
    return f"{type(error).__name__}: {lines[0] if lines else ''}"


def executor_kind(executor: str | None = None) -> str:
    """The executor's name: ``executor``, else ``ICLLIB_EXECUTOR``, else ``local``; raises ``ValueError`` naming
    ``executor`` (or the variable) when it is not one of ``EXECUTORS``."""
    chosen = executor if executor is not None else os.environ.get(EXECUTOR_VARIABLE) or "local"
    if chosen not in EXECUTORS:
        where = "executor" if executor is not None else EXECUTOR_VARIABLE
        raise ValueError(f"{where} must be one of {', '.join(EXECUTORS)}, got {chosen!r}")
    return chosen


def submitit_settings(config: str | Path | None = None) -> dict:
    """The submitit executor's settings (``SUBMITIT_SETTINGS``): the defaults, then the ``[submitit]`` table of
    the TOML file ``config`` (default: ``ICLLIB_EXECUTOR_CONFIG``, if set), then the environment variables.
    Raises ``ValueError`` naming ``config`` for a file that cannot be read or an unknown key, and naming the
    setting for a value of the wrong kind."""
    settings = dict(SUBMITIT_DEFAULTS)
    config = config if config is not None else os.environ.get(CONFIG_VARIABLE)
    if config is not None:
        if not isinstance(config, (str, Path)):
            raise ValueError(f"config must be the path of a TOML file, got {config!r}")
        try:
            table = tomllib.loads(Path(config).read_text(encoding="utf-8")).get("submitit", {})
        except (OSError, tomllib.TOMLDecodeError) as error:
            raise ValueError(f"config {str(config)!r} cannot be read as TOML: {error}") from None
        unknown = sorted(set(table) - set(SUBMITIT_SETTINGS))
        if unknown:
            raise ValueError(f"config {str(config)!r}: unknown key {unknown[0]!r} in [submitit] "
                             f"(known: {', '.join(SUBMITIT_SETTINGS)})")
        settings.update(table)
    for key, (variable, kind) in SUBMITIT_SETTINGS.items():
        if os.environ.get(variable):
            settings[key] = os.environ[variable]
        if key in settings:
            settings[key] = _setting(key, settings[key], kind)
    if settings["cluster"] not in SUBMITIT_CLUSTERS:
        raise ValueError(f"cluster must be one of {', '.join(SUBMITIT_CLUSTERS)}, got {settings['cluster']!r}")
    return settings


def _setting(key: str, value, kind):
    try:
        converted = kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be {kind.__name__}, got {value!r}") from None
    if kind is int and (converted < 0 or (key == "time_min" and converted == 0) or converted != float(value)):
        raise ValueError(f"{key} must be a whole number of {'minutes above 0' if key == 'time_min' else 'units'}, "
                         f"got {value!r}")
    return converted


_STOPPED = None   # in a process of the local pool: the event its driver sets on Ctrl-C
_DRIVER = None    # and the driver's process id


def _start_worker(stopped) -> None:
    global _STOPPED, _DRIVER
    _STOPPED, _DRIVER = stopped, os.getppid()
    os.setsid()   # the terminal's Ctrl-C reaches the driver alone, which passes it on once (LocalPool.interrupt)
    signal.signal(signal.SIGINT, _idle)
    try:   # Linux: a driver that dies (killed, its session closed) stops the run as Ctrl-C would
        ctypes.CDLL(None).prctl(1, signal.SIGINT)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _idle(signum, frame) -> None:
    """Ctrl-C in an idle process of the pool: ignored (a process that ended would break the pool), unless its
    driver is gone, when nothing will come."""
    if os.getppid() != _DRIVER:
        os._exit(1)


def _run(task: Task):
    """A task in a process of the local pool: Ctrl-C stops it as it would stop it in the driver."""
    if _STOPPED.is_set():
        raise KeyboardInterrupt(f"{task.name}: not started, stopped by Ctrl-C")
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return task()
    finally:
        signal.signal(signal.SIGINT, _idle)
        if os.getppid() != _DRIVER:   # the driver died while the task ran: nothing will take its result
            os._exit(1)


class LocalPool(concurrent.futures.ProcessPoolExecutor):
    """The ``local`` executor: ``jobs`` spawned processes (not forked: a child would inherit the driver's torch
    threads and locks), each running one :class:`Task` at a time as the driver would run it."""

    def __init__(self, jobs: int):
        if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
            raise ValueError(f"jobs must be a whole number of processes, 1 or more, got {jobs!r}")
        context = multiprocessing.get_context("spawn")
        self.stopped = context.Event()
        super().__init__(max_workers=jobs, mp_context=context, initializer=_start_worker, initargs=(self.stopped,))

    def submit(self, task, /, *args, **kwargs):
        """Run ``task`` (a :class:`Task`) in a process of the pool; a future of its result."""
        if not isinstance(task, Task) or args or kwargs:
            raise ValueError(f"task must be a Task (its arguments inside it), got {task!r:.80}")
        return super().submit(_run, task)

    def interrupt(self) -> None:
        """Ctrl-C, passed on to the processes: each running task stops as it would in the driver, and no task
        starts after it."""
        self.stopped.set()
        for process in list((self._processes or {}).values()):
            if process.is_alive():
                os.kill(process.pid, signal.SIGINT)


def make_executor(kind: str | None = None, *, jobs: int = 1, config: str | Path | None = None):
    """An executor with ``concurrent.futures``' ``submit``: for ``local`` a pool of ``jobs`` spawned processes,
    for ``submitit`` an ``AutoExecutor`` set from :func:`submitit_settings` (one Slurm job per task). Raises
    ``ValueError`` naming ``kind`` or ``jobs``."""
    kind = executor_kind(kind)
    if kind == "local":
        return LocalPool(jobs)
    import submitit

    settings = submitit_settings(config)
    executor = submitit.AutoExecutor(folder=Path(settings["folder"]) / "%j", cluster=settings["cluster"])
    parameters = {"timeout_min": settings["time_min"], "gpus_per_node": settings["gpus_per_task"],
                  "cpus_per_task": settings["cpus_per_task"], "tasks_per_node": 1, "nodes": 1, "name": "icl-book"}
    if settings["cluster"] == "slurm" and settings.get("partition"):
        parameters["slurm_partition"] = settings["partition"]
    executor.update_parameters(**parameters)
    return executor


def _completed(handles: dict, kind: str):
    """``(handle, outcome, error)`` for each submitted task, in the order they end."""
    if kind == "local":
        for future in concurrent.futures.as_completed(handles):
            error = future.exception()
            yield future, None if error else future.result(), error
        return
    from submitit.local.debug import DebugJob

    pending = list(handles)
    while pending:
        # A debug job runs in this process when asked (its done() would open pdb on a failure): ask exception().
        for job in [job for job in pending if isinstance(job, DebugJob) or job.done()]:
            pending.remove(job)
            error = job.exception()   # the task's own exception, or Slurm's word that the job died
            yield job, None if error else job.result(), error
        if pending:
            time.sleep(POLL_S)


def run_tasks(tasks, on_result, *, executor: str | None = None, jobs: int = 1,
              config: str | Path | None = None) -> dict:
    """Run the independent ``tasks`` (:class:`Task`) on ``executor`` (:func:`make_executor`) and call
    ``on_result(task, result)`` in this process as each one ends (the driver archives the run there). Returns
    ``{task name: result}``. When tasks failed, raises :class:`TasksFailed` naming each with its error, after
    every other task has ended and been handed to ``on_result``.

    Raises ``ValueError`` naming ``tasks`` when it is empty, holds something else than tasks or two tasks of one
    name, and naming ``on_result`` when it is not callable."""
    tasks = list(tasks) if isinstance(tasks, (list, tuple)) else tasks
    if not isinstance(tasks, list) or not tasks or not all(isinstance(task, Task) for task in tasks):
        raise ValueError(f"tasks must be a non-empty list of Task, got {tasks!r:.80}")
    if len({task.name for task in tasks}) != len(tasks):
        raise ValueError("tasks must have distinct names")
    if not callable(on_result):
        raise ValueError(f"on_result must be callable, got {on_result!r}")
    kind = executor_kind(executor)
    results, failures = {}, {}
    pool = make_executor(kind, jobs=jobs, config=config)
    restore = _pass_ctrl_c_on(pool) if kind == "local" else None
    try:
        pending = {pool.submit(task): task for task in tasks}
        while pending:
            try:
                for handle, outcome, error in _completed(dict(pending), kind):
                    task = pending.pop(handle)
                    if error is None:
                        try:
                            on_result(task, outcome)
                        except Exception as archive_error:   # the run ended, but its archive was not written
                            error = archive_error
                    if error is None:
                        results[task.name] = outcome
                    else:
                        failures[task.name] = error
            except KeyboardInterrupt:
                if kind != "local" or pool.stopped.is_set():
                    raise
                pool.interrupt()   # each run stops as in the driver, keeps what it made; their ends are collected
    finally:
        if kind == "local":
            pool.shutdown(wait=True, cancel_futures=True)
        if restore is not None:
            signal.signal(signal.SIGINT, restore)
    if failures:
        raise TasksFailed(failures)
    return results


def _pass_ctrl_c_on(pool: LocalPool):
    """The first Ctrl-C in the driver passed on to the pool's processes by a handler, not raised as
    ``KeyboardInterrupt`` wherever the driver is: raised inside ``concurrent.futures``' waiting, it could leave a
    future's lock held and the driver waiting for ever (seen on a loaded machine). A second Ctrl-C raises as usual.
    Returns the handler to restore, or ``None`` off the main thread (where Python lets no handler be set)."""
    def on_ctrl_c(signum, frame):
        if pool.stopped.is_set():
            raise KeyboardInterrupt
        pool.interrupt()

    try:
        return signal.signal(signal.SIGINT, on_ctrl_c)
    except ValueError:
        return None


def write_atomically(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` through a temporary file beside it and an atomic rename: a reader, or a
    run archived at the same time on another machine, sees the old file or the new one, never half of one.
    ``path`` is absolute: a relative one would land wherever the process runs (a Slurm job's working folder).
    Raises ``ValueError`` naming ``path`` or ``text``."""
    if not isinstance(path, (str, Path)) or not Path(path).is_absolute():
        raise ValueError(f"path must be a file's absolute path, got {path!r}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(temporary, 0o644)   # as a file written in place would be, not mkstemp's 0600
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
