"""The archive of full-mode runs (results/full/) stays true to the registry, and its helpers say what it holds.

The staleness checks read the committed archive: every archived record names a claim the registry still has,
with the same statement, and every claim that only a full run can check is archived or listed as pending.
Then the helpers on a made-up archive, and one run of a three-cell chapter whose middle check fails.
"""

import json
import math
import os
import sys
from pathlib import Path

import pytest

from icllib.claims import archived_arrays, registry

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import paper_scale  # noqa: E402

ARCHIVE = ROOT / "results" / "full"


@pytest.fixture
def in_the_book(monkeypatch):
    monkeypatch.chdir(ROOT)  # the helpers find the chapters under the book root


# --- The committed archive against the registry -----------------------------------------------------------

def test_every_archived_record_names_a_registered_claim_with_its_statement():
    claims = registry().claims
    archived = paper_scale.archived_records(ARCHIVE)
    # A row restated after its run waits, named in pending.yaml with the chapter's cost, for the next full run.
    restated = {claim_id: entry["chapter"] for entry in paper_scale.read_pending(ARCHIVE)
                for claim_id in entry.get("restated", [])}
    for claim_id, chapter in restated.items():
        assert claims[claim_id].chapter == chapter and claim_id in archived, f"pending.yaml: {claim_id}"
        assert archived[claim_id][0]["statement"] != claims[claim_id].statement, f"{claim_id} is no longer restated"
    for claim_id, records in archived.items():
        assert claim_id in claims, f"the archive holds {claim_id!r}, which the registry no longer has"
        for record in records:
            assert claim_id in restated or record["statement"] == claims[claim_id].statement, (
                f"{claim_id}: the statement changed since the full run of {record['chapter']} "
                f"({record['date']}); run `make paper-scale CHAPTER={record['chapter']}` again")


def test_every_full_only_claim_is_archived_or_its_chapter_is_pending():
    archived = paper_scale.archived_records(ARCHIVE)
    pending = {entry["chapter"] for entry in paper_scale.read_pending(ARCHIVE) if "restated" not in entry}
    missing = [claim.id for claim in registry().claims.values()
               if claim.modes == ("full",) and claim.id not in archived and claim.chapter not in pending]
    assert not missing, f"claims checked only in full mode, with no archived record and not pending: {missing}"


def test_the_archive_names_real_chapters_and_holds_numbers_only(in_the_book):
    chapters = set(paper_scale.chapters())
    assert {entry["chapter"] for entry in paper_scale.read_pending(ARCHIVE)} <= chapters
    assert set(paper_scale.chapter_runs(ARCHIVE)) <= chapters
    # A run under way (or stopped) keeps its records in the hidden .running/, never committed.
    assert {path.name for path in ARCHIVE.iterdir() if not path.name.startswith(".")} <= \
        {f"{name}.json" for name in chapters} | {"pending.yaml"}
    assert sum(path.stat().st_size for path in ARCHIVE.iterdir()) < 1_000_000


# --- The helpers on a made-up archive ---------------------------------------------------------------------

def record(claim_id, measured, passed, expected=None, tolerance="rtol=0.01"):
    return {"id": claim_id, "measured": measured, "expected": expected, "tolerance": tolerance, "passed": passed,
            "why": "a reason", "mode": "full", "statement": f"the statement of {claim_id}"}


def write_run(folder: Path, chapter: str, records: list[dict], errors=()) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    run = {"chapter": chapter, "mode": "full", "commit": "abc1234", "date": "2026-11-25 10:00 UTC",
           "machine": "a CPU, 2 cores", "threads": 1, "versions": {}, "wall_s": 3725.0,
           "errors": list(errors), "records": records}
    (folder / f"{chapter}.json").write_text(json.dumps(run, sort_keys=True, indent=1), encoding="utf-8")


@pytest.fixture
def archive(tmp_path):
    folder = tmp_path / "full"
    write_run(folder, "lsa", [record("lsa.a", 0.99871, True, expected=1.0), record("lsa.b", 0.41, False, 0.5),
                              record("lsa.a", 1.0004, True, expected=1.0)],
              errors=[{"cell": 7, "error": "AssertionError", "message": "claim lsa.b failed"}])
    write_run(folder, "balance", [record("balance.c", True, True, expected=True, tolerance="")])
    (folder / "pending.yaml").write_text(
        "- chapter: balance\n  part: Fig. 6 at batch 200\n  cost: about 80 min on 2 CPU cores\n  why: too long\n"
        "- chapter: induction_subspace\n  cost: about 75 min on 2 CPU cores\n  why: over the 25 min budget\n", encoding="utf-8")
    return folder


def test_archived_records_and_chapter_runs(archive):
    records = paper_scale.archived_records(archive)
    assert [entry["measured"] for entry in records["lsa.a"]] == [0.99871, 1.0004]
    assert records["lsa.b"][0]["chapter"] == "lsa" and records["lsa.b"][0]["date"] == "2026-11-25 10:00 UTC"
    runs = paper_scale.chapter_runs(archive)
    assert (runs["lsa"]["passed"], runs["lsa"]["failed"], len(runs["lsa"]["errors"])) == (2, 1, 1)
    assert runs["balance"]["commit"] == "abc1234" and runs["balance"]["wall_s"] == 3725.0


def test_paper_scale_summary(archive):
    records = paper_scale.archived_records(archive)
    unknown = "; its code not a git checkout: whether it changed is unknown"
    assert paper_scale.paper_scale_summary("lsa.a", records) == (
        "0.9987, 1 (pass), 2026-11-25, full run of lsa" + unknown)
    assert paper_scale.paper_scale_summary("lsa.b", records) == (
        "FAILED: measured 0.41, expected 0.5 within rtol=0.01, 2026-11-25, full run of lsa" + unknown)
    assert paper_scale.paper_scale_summary("balance.c", records).startswith("True (pass)")
    assert paper_scale.paper_scale_summary("scan_snap.x", records) == "no archived full run"


def test_a_run_on_a_gpu_shows_its_device(tmp_path, in_the_book):
    write_run(tmp_path, "lsa", [record("lsa.a", 0.99871, True, expected=1.0)])
    run = json.loads((tmp_path / "lsa.json").read_text(encoding="utf-8"))
    run["device"] = "cuda:0 (NVIDIA H200, CUDA 13.0, torch 2.11.0+cu130)"
    (tmp_path / "lsa.json").write_text(json.dumps(run), encoding="utf-8")
    rows = {row[0]: row for row in paper_scale.status_rows(tmp_path)}
    assert rows["lsa"][3] == "a CPU, 2 cores; device cuda:0 (NVIDIA H200, CUDA 13.0, torch 2.11.0+cu130)"


def test_status_rows(archive, in_the_book):
    rows = {row[0]: row for row in paper_scale.status_rows(archive)}
    assert set(rows) == set(paper_scale.chapters())
    assert all(len(row) == len(paper_scale.STATUS_HEADER) for row in rows.values())
    assert rows["lsa"][1:] == ["2026-11-25 10:00 UTC", "abc1234", "a CPU, 2 cores; device cpu", "1 h 02 min",
                               "2 passed, 1 failed, 1 cells raised",
                               "not a git checkout: whether it changed is unknown"]
    assert rows["balance"][5] == ("1 passed, 0 failed; pending: Fig. 6 at batch 200: estimated cost about 80 min "
                                  "on 2 CPU cores (too long)")
    assert rows["induction_subspace"][1] == ("pending: estimated cost about 75 min on 2 CPU cores "
                                             "(over the 25 min budget)")
    assert rows["scan_snap"][1] == "no archived full run"


def test_an_absent_archive_is_empty(tmp_path):
    assert paper_scale.archived_records(tmp_path) == {} and paper_scale.read_pending(tmp_path) == []


@pytest.mark.parametrize("text", ["chapter: lsa\n", "- chapter: lsa\n  cost: 1 h\n", "- [lsa]\n",
                                  "- chapter: lsa\n  cost: 1 h\n  why: long\n  part: ''\n"])
def test_a_malformed_pending_file_is_refused(tmp_path, text):
    (tmp_path / "pending.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match="pending.yaml"):
        paper_scale.read_pending(tmp_path)


def test_an_unknown_chapter_is_refused(in_the_book, tmp_path):
    with pytest.raises(ValueError, match="name 'no_such_chapter' is not a chapter"):
        paper_scale.run_chapter("no_such_chapter", tmp_path)


# --- One real run of a tiny chapter -----------------------------------------------------------------------

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
  - id: tiny.fails
    location: Eq. 2
    statement: the measured value is three
    verdict: reproduced
"""

NOTEBOOK = """# %%
from icllib.claims import check_claim, save_arrays

check_claim("tiny.passes", 2.0, expected=2.0, atol=1e-12, why="exact arithmetic")
save_arrays("series", steps=[0, 10, 20], grid=[[1.0, 2.0], [1 / 3, float("nan")]])

# %%
check_claim("tiny.fails", 2.5, expected=3.0, atol=0.1, why="a tolerance the value misses")

# %%
raise RuntimeError("the last cell ran\\nand this second line is not archived")
"""


def test_run_chapter_records_a_failed_check_and_goes_on_to_the_last_cell(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: tiny\n", encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text(NOTEBOOK, encoding="utf-8")
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "tiny.yaml").write_text(REGISTRY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))

    target = paper_scale.run_chapter("tiny")

    assert target == tmp_path / "results" / "full" / "tiny.json"
    run = json.loads(target.read_text(encoding="utf-8"))
    assert target.read_text(encoding="utf-8") == json.dumps(run, sort_keys=True, indent=1) + "\n"
    assert [(entry["id"], entry["passed"], entry["mode"]) for entry in run["records"]] == [
        ("tiny.passes", True, "full"), ("tiny.fails", False, "full")]
    assert run["records"][1]["statement"] == "the measured value is three"
    assert run["records"][1]["measured"] == 2.5 and run["records"][1]["expected"] == 3.0
    assert [(error["cell"], error["error"]) for error in run["errors"]] == [(2, "AssertionError"), (3, "RuntimeError")]
    assert run["errors"][1]["message"] == "the last cell ran"
    assert run["commit"].startswith("unknown") and run["threads"] == 1 and run["wall_s"] > 0
    assert {"python", "numpy", "scipy", "torch", "icllib"} <= set(run["versions"])
    assert "Traceback" not in target.read_text(encoding="utf-8") and str(tmp_path) not in target.read_text(encoding="utf-8")
    assert paper_scale.read_pending() == [] and set(paper_scale.archived_records()) == {"tiny.passes", "tiny.fails"}
    series = archived_arrays("tiny", "series")
    assert series["steps"].tolist() == [0, 10, 20] and series["grid"].shape == (2, 2)
    assert series["grid"][1, 0] == 0.333333 and math.isnan(series["grid"][1, 1])   # 6 digits; NaN as null
    assert (series["date"], series["commit"]) == (run["date"], run["commit"])
    assert archived_arrays("tiny", "no_such_series") is None and archived_arrays("other", "series") is None


# --- The schema: an archive that does not fit is named, with its record -----------------------------------

def test_the_committed_archives_fit_the_schema():
    for path in sorted(ARCHIVE.glob("*.json")):
        assert paper_scale.read_run(path)["chapter"] == path.stem


def test_the_fields_other_tools_write_are_accepted(tmp_path):
    write_run(tmp_path, "lsa", [record("lsa.a", 1.0, True, expected=1.0)])
    path = tmp_path / "lsa.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**run, "device": "NVIDIA H100 80GB HBM3", "deciding": {"experiment": "x"},
                                "partial": True, "cells": 9, "cells_run": 4, "stopped": "stopped by Ctrl-C"}),
                    encoding="utf-8")
    assert paper_scale.read_run(path)["device"] == "NVIDIA H100 80GB HBM3"


def damaged(run: dict) -> dict[str, tuple[dict | str, str]]:
    """Each damage an archive can suffer, with the words the error must hold."""
    def without(field):
        return {name: value for name, value in run.items() if name != field}

    def with_record(change):
        return {**run, "records": [run["records"][0], change(dict(run["records"][1]))]}

    return {
        "cut short": (json.dumps(run)[:200], "not valid JSON (Expecting"),
        "no records": (without("records"), "field 'records' is missing"),
        "record without passed": (with_record(lambda entry: {k: v for k, v in entry.items() if k != "passed"}),
                                  "record 2 ('lsa.b'): field 'passed' is missing"),
        "measured as text": (with_record(lambda entry: {**entry, "measured": "0.41"}),
                             "record 2 ('lsa.b'): field 'measured' must be number or bool, got text"),
        "unknown field": ({**run, "comit": "abc"}, "unknown field 'comit'"),
        "another chapter": ({**run, "chapter": "balance"}, "holds chapter 'balance'"),
        "error without cell": ({**run, "errors": [{"error": "E", "message": ""}]}, "error 1: field 'cell' is missing"),
        "arrays short": ({**run, "arrays": {"fig": {"shapes": {"x": [2, 2]}, "values": {"x": [1.0, 2.0]}}}},
                         "arrays 'fig': 'x' must hold 4 numbers or nulls"),
    }


@pytest.mark.parametrize("damage", ["cut short", "no records", "record without passed", "measured as text",
                                    "unknown field", "another chapter", "error without cell", "arrays short"])
def test_a_damaged_archive_is_refused_naming_the_file_and_the_record(archive, damage):
    path = archive / "lsa.json"
    content, words = damaged(json.loads(path.read_text(encoding="utf-8")))[damage]
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    for reader in (paper_scale.archived_records, paper_scale.chapter_runs):
        with pytest.raises(paper_scale.ArchiveError) as refused:
            reader(archive)
        assert str(refused.value).startswith(f"{path}: ") and words in str(refused.value)


# --- Whether a run's chapter code changed since its commit -------------------------------------------------

def git(folder: Path, *arguments: str) -> str:
    import subprocess

    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def book_in_git(tmp_path, monkeypatch):
    """A git checkout with one chapter importing one module of its own, an archived run at the commit, and a
    module the chapter does not import."""
    (tmp_path / "_config.yml").write_text("title: tiny\n", encoding="utf-8")
    package = tmp_path / "src" / "icllib"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "tiny.py").write_text("from icllib.helpers import VALUE\n", encoding="utf-8")
    (package / "helpers.py").write_text("VALUE = 2\n", encoding="utf-8")
    (package / "unrelated.py").write_text("OTHER = 1\n", encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text("# %%\nfrom icllib import tiny\n\nprint(tiny.VALUE)\n", encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "--", ".")
    git(tmp_path, "commit", "-q", "-m", "a chapter")
    folder = tmp_path / "results" / "full"
    write_run(folder, "tiny", [record("tiny.two", 2.0, True, expected=2.0)])
    run = json.loads((folder / "tiny.json").read_text(encoding="utf-8"))
    (folder / "tiny.json").write_text(json.dumps({**run, "commit": git(tmp_path, "rev-parse", "--short", "HEAD")}),
                                      encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path, folder


def code_column(folder: Path) -> str:
    [row] = [row for row in paper_scale.status_rows(folder) if row[0] == "tiny"]
    return row[-1]


def test_a_run_whose_chapter_code_is_unchanged_says_so(book_in_git):
    root, folder = book_in_git
    (root / "src" / "icllib" / "unrelated.py").write_text("OTHER = 2\n", encoding="utf-8")   # not the chapter's code
    (root / "notes.txt").write_text("untracked", encoding="utf-8")
    commit = git(root, "rev-parse", "--short", "HEAD")
    assert code_column(folder) == f"unchanged since {commit}"
    assert paper_scale.paper_scale_summary("tiny.two", paper_scale.archived_records(folder)).endswith(
        f"full run of tiny; its code unchanged since {commit}")


@pytest.mark.parametrize("edited", ["notebooks/tiny.py", "src/icllib/tiny.py", "src/icllib/helpers.py"])
def test_a_run_whose_chapter_code_changed_names_what_changed(book_in_git, edited):
    root, folder = book_in_git
    with (root / edited).open("a", encoding="utf-8") as stream:
        stream.write("\n# edited\n")
    git(root, "commit", "-q", "-am", "an edit")   # committed or not, the code differs from the run's
    commit = json.loads((folder / "tiny.json").read_text(encoding="utf-8"))["commit"]
    assert code_column(folder) == f"changed since {commit}: {edited}"
    summary = paper_scale.paper_scale_summary("tiny.two", paper_scale.archived_records(folder))
    assert summary.endswith(f"its code changed since {commit}: {edited}")


@pytest.mark.parametrize("commit", ["0123abc", "unknown (not a git checkout)", "0123abc+dirty"])
def test_a_run_whose_commit_git_does_not_know_is_marked(book_in_git, commit):
    _, folder = book_in_git
    run = json.loads((folder / "tiny.json").read_text(encoding="utf-8"))
    (folder / "tiny.json").write_text(json.dumps({**run, "commit": commit}), encoding="utf-8")
    assert code_column(folder) == f"commit {commit!r} unknown to git: whether the code changed is unknown"
    assert "unknown to git" in paper_scale.paper_scale_summary("tiny.two", paper_scale.archived_records(folder))
