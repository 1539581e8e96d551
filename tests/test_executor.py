"""The executor of independent runs (icllib.executor): the local process pool and submitit's local and debug
executors run the same tasks; a failing task is named and loses no finished run; the deciding runs and
``make paper-scale`` archive through it; a run in the pool gives the numbers of a run in this process, bit for bit.

The tasks are tiny functions of this file (imported by name where they run); no real run is made."""

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from icllib import deciding, executor
from icllib.executor import Task, TasksFailed

HERE = str(Path(__file__).resolve().parent)
ROOT = Path(__file__).resolve().parents[1]


def square(value):
    return {"value": value, "square": value * value, "pid": os.getpid()}


def fail(message):
    raise RuntimeError(message)


def sleepy(marker):
    Path(marker).write_text("started", encoding="utf-8")
    time.sleep(120)


def _tasks():
    return [Task("two", "test_executor:square", (2,), path=HERE), Task("broken", "test_executor:fail",
                                                                        ("a fake failure",), path=HERE),
            Task("three", "test_executor:square", (3,), path=HERE)]


def _archive_into(folder: Path, written: list):
    def archive(task, result):
        written.append(executor.write_atomically(folder / f"{task.name}.json", json.dumps(result)))
    return archive


@pytest.fixture
def submitit_here(tmp_path, monkeypatch):
    """submitit's settings pointed at a folder of the test; the driver polls often."""
    monkeypatch.setenv("ICLLIB_SUBMITIT_FOLDER", str(tmp_path / "submitit"))
    monkeypatch.setattr(executor, "POLL_S", 0.2)
    return monkeypatch


@pytest.mark.parametrize("kind,cluster", [("local", None), ("submitit", "local"), ("submitit", "debug")])
def test_a_failing_task_is_named_and_every_finished_run_is_archived(tmp_path, submitit_here, kind, cluster):
    if cluster:
        submitit_here.setenv("ICLLIB_SUBMITIT_CLUSTER", cluster)
    written = []
    with pytest.raises(TasksFailed, match=r"1 task\(s\) failed: broken: .*a fake failure") as failed:
        executor.run_tasks(_tasks(), _archive_into(tmp_path / "runs", written), executor=kind, jobs=2)
    assert set(failed.value.failures) == {"broken"}
    assert sorted(path.name for path in written) == ["three.json", "two.json"]
    results = {path.stem: json.loads(path.read_text(encoding="utf-8")) for path in written}
    assert results["three"]["square"] == 9 and results["two"]["square"] == 4
    if cluster != "debug":   # the pool's processes and submitit's local jobs are not this one
        assert os.getpid() not in {result["pid"] for result in results.values()}
    assert sorted(os.listdir(tmp_path / "runs")) == ["three.json", "two.json"]   # no temporary file left


DRIVER = """
import sys
from icllib.executor import Task, TasksFailed, run_tasks

tasks = [Task("sleepy", "test_executor:sleepy", (sys.argv[1],), path=sys.argv[2]),
         Task("queued", "test_executor:square", (2,), path=sys.argv[2])]
try:
    run_tasks(tasks, lambda task, result: print("archived", task.name, flush=True))
except TasksFailed as failed:
    print(failed, flush=True)
"""


def test_ctrl_c_stops_the_running_task_once_and_starts_no_other(tmp_path):
    marker = tmp_path / "started"
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(marker), HERE], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not marker.is_file():
        assert driver.poll() is None and time.monotonic() < deadline, driver.communicate()
        time.sleep(0.2)
    driver.send_signal(signal.SIGINT)   # to the driver alone, as a test can; a terminal's reaches only it too
    out, errors = driver.communicate(timeout=60)
    assert "2 task(s) failed" in out and "sleepy: KeyboardInterrupt" in out, out + errors
    assert "queued: KeyboardInterrupt: queued: not started, stopped by Ctrl-C" in out and "archived" not in out


def test_results_come_back_by_task_name():
    results = executor.run_tasks([Task("four", "test_executor:square", (4,), path=HERE)], lambda task, r: None)
    assert results["four"]["square"] == 16


def test_an_archive_that_cannot_be_written_fails_its_task_by_name(tmp_path):
    def archive(task, result):
        raise OSError("disk full")

    with pytest.raises(TasksFailed, match="four: OSError: disk full"):
        executor.run_tasks([Task("four", "test_executor:square", (4,), path=HERE)], archive)


def test_bad_arguments_are_named(monkeypatch):
    with pytest.raises(ValueError, match="function"):
        Task("x", "no_module_separator")
    with pytest.raises(ValueError, match="name"):
        Task(" ", "a:b")
    with pytest.raises(ValueError, match="tasks"):
        executor.run_tasks([], lambda task, result: None)
    with pytest.raises(ValueError, match="distinct"):
        executor.run_tasks([Task("a", "m:f"), Task("a", "m:g")], lambda task, result: None)
    with pytest.raises(ValueError, match="on_result"):
        executor.run_tasks([Task("a", "m:f")], None)
    with pytest.raises(ValueError, match="executor must be one of local, submitit"):
        executor.executor_kind("ray")
    monkeypatch.setenv("ICLLIB_EXECUTOR", "ray")
    with pytest.raises(ValueError, match="ICLLIB_EXECUTOR"):
        executor.executor_kind()
    with pytest.raises(ValueError, match="jobs"):
        executor.make_executor("local", jobs=0)


def test_submitit_settings_from_a_file_and_the_environment(tmp_path, monkeypatch):
    for variable, _ in executor.SUBMITIT_SETTINGS.values():
        monkeypatch.delenv(variable, raising=False)
    config = tmp_path / "executor.toml"
    config.write_text('[submitit]\npartition = "gpu"\ntime_min = 90\ngpus_per_task = 1\n', encoding="utf-8")
    settings = executor.submitit_settings(config)
    assert (settings["partition"], settings["time_min"], settings["gpus_per_task"]) == ("gpu", 90, 1)
    assert settings["cluster"] == "slurm" and settings["cpus_per_task"] == executor.SUBMITIT_DEFAULTS["cpus_per_task"]
    monkeypatch.setenv("ICLLIB_SLURM_GPUS", "4")
    monkeypatch.setenv("ICLLIB_EXECUTOR_CONFIG", str(config))
    assert executor.submitit_settings()["gpus_per_task"] == 4   # the environment wins over the file
    monkeypatch.setenv("ICLLIB_SLURM_TIME_MIN", "0")
    with pytest.raises(ValueError, match="time_min"):
        executor.submitit_settings()
    config.write_text('[submitit]\nqueue = "gpu"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="config .*unknown key 'queue'"):
        executor.submitit_settings(config)
    with pytest.raises(ValueError, match="config"):
        executor.submitit_settings(tmp_path / "absent.toml")


def test_write_atomically_replaces_the_file_whole(tmp_path):
    path = executor.write_atomically(tmp_path / "a" / "run.json", "first\n")
    executor.write_atomically(path, "second\n")
    assert path.read_text(encoding="utf-8") == "second\n" and os.listdir(path.parent) == ["run.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    with pytest.raises(ValueError, match="text"):
        executor.write_atomically(path, b"bytes")


# --- The deciding runs through the executor -----------------------------------------------------------------

SIZES = dict(D=8, steps=3, batch=4)


def test_a_deciding_run_in_the_pool_measures_what_it_measures_here_bit_for_bit(tmp_path):
    here = deciding.measure_runs("standard-transformer-2048", ["gpt2-seed1"], device="cpu", **SIZES)["gpt2-seed1"]
    written = deciding.run_and_archive("standard-transformer-2048", ["gpt2-seed1"], device="cpu", root=tmp_path,
                                       **SIZES)
    pooled = json.loads(written[0].read_text(encoding="utf-8"))
    for key in ("loss_first", "loss_last20", "accuracy", "previous_weight", "previous_weight_untrained", "losses"):
        assert pooled[key] == here[key], key
    assert (tmp_path / "results" / "ro-crate-metadata.json").is_file()   # written again after the archive


def test_deciding_runs_on_submitits_local_executor_archive_one_file_each(tmp_path, submitit_here):
    submitit_here.setenv("ICLLIB_SUBMITIT_CLUSTER", "local")
    written = deciding.run_and_archive("standard-transformer-2048", ["gpt2-seed1", "pytorch-seed1"], device="cpu",
                                       root=tmp_path, executor="submitit", **SIZES)
    assert sorted(path.name for path in written) == ["gpt2-seed1.json", "pytorch-seed1.json"]
    runs = deciding.archived_runs("standard-transformer-2048", tmp_path)
    assert [run["run"] for run in runs] == ["gpt2-seed1", "pytorch-seed1"]
    assert all(run["rule_sha256"] and run["versions"]["torch"] for run in runs)


# --- make paper-scale through the executor ------------------------------------------------------------------

sys.path.insert(0, str(ROOT / "_ext"))
import paper_scale  # noqa: E402

CHAPTER = """# %%
from icllib.claims import check_claim

check_claim("tiny.passes", 2.0, expected=2.0, atol=1e-12, why="exact arithmetic")
"""
REGISTRY = """
chapter: tiny
title: A tiny chapter
page: notebooks/tiny
paper: tian2023scan
claims:
  - id: tiny.passes
    location: Eq. 1
    statement: the measured value is two
    verdict: reproduced
    modes: [full]
"""


@pytest.fixture
def tiny_book(tmp_path, monkeypatch):
    """A book of two chapters: ``tiny`` runs; ``stuck`` cannot start (a stopped run of it is on disk)."""
    (tmp_path / "_config.yml").write_text("title: tiny\n", encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    for name in ("tiny", "stuck"):
        (tmp_path / "notebooks" / f"{name}.py").write_text(CHAPTER, encoding="utf-8")
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "tiny.yaml").write_text(REGISTRY, encoding="utf-8")
    stopped = tmp_path / "results" / "full" / ".running" / "stuck"
    stopped.mkdir(parents=True)
    (stopped / "header.json").write_text(json.dumps({"date": "2026-01-01 00:00 UTC", "cells": 1}), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    return tmp_path


@pytest.mark.parametrize("kind", ["local", "submitit"])
def test_paper_scale_names_the_chapter_that_failed_and_archives_the_other(tiny_book, submitit_here, capsys, kind):
    submitit_here.setenv("ICLLIB_SUBMITIT_CLUSTER", "debug")   # in this process: the kernel is the slow part
    assert paper_scale.main(["all", "--executor", kind]) == 2   # a chapter that could not start
    assert "stuck: " in capsys.readouterr().err
    archived = sorted(path.name for path in (tiny_book / "results" / "full").glob("*.json"))
    assert archived == ["tiny.json"]
    run = json.loads((tiny_book / "results" / "full" / "tiny.json").read_text(encoding="utf-8"))
    assert [record["id"] for record in run["records"]] == ["tiny.passes"]
    assert not (tiny_book / "results" / "full" / ".running" / "tiny").exists()
    crate = json.loads((tiny_book / "results" / "ro-crate-metadata.json").read_text(encoding="utf-8"))
    assert {"@id": "full/tiny.json"} in next(e for e in crate["@graph"] if e["@id"] == "./")["hasPart"]


def test_a_stopped_run_crosses_from_the_pool_to_the_driver():
    import pickle

    stopped = pickle.loads(pickle.dumps(paper_scale.RunStopped("tiny: stopped by Ctrl-C", by_user=True)))
    assert str(stopped) == "tiny: stopped by Ctrl-C" and stopped.by_user
