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
    for claim_id, records in archived.items():
        assert claim_id in claims, f"the archive holds {claim_id!r}, which the registry no longer has"
        for record in records:
            assert record["statement"] == claims[claim_id].statement, (
                f"{claim_id}: the statement changed since the full run of {record['chapter']} "
                f"({record['date']}); run `make paper-scale CHAPTER={record['chapter']}` again")


def test_every_full_only_claim_is_archived_or_its_chapter_is_pending():
    archived = paper_scale.archived_records(ARCHIVE)
    pending = {entry["chapter"] for entry in paper_scale.read_pending(ARCHIVE)}
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
    (folder / f"{chapter}.json").write_text(json.dumps(run, sort_keys=True, indent=1))


@pytest.fixture
def archive(tmp_path):
    folder = tmp_path / "full"
    write_run(folder, "lsa", [record("lsa.a", 0.99871, True, expected=1.0), record("lsa.b", 0.41, False, 0.5),
                              record("lsa.a", 1.0004, True, expected=1.0)],
              errors=[{"cell": 7, "error": "AssertionError", "message": "claim lsa.b failed"}])
    write_run(folder, "balance", [record("balance.c", True, True, expected=True, tolerance="")])
    (folder / "pending.yaml").write_text(
        "- chapter: balance\n  part: Fig. 6 at batch 200\n  cost: about 80 min on 2 CPU cores\n  why: too long\n"
        "- chapter: induction_subspace\n  cost: about 75 min on 2 CPU cores\n  why: over the 25 min budget\n")
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


def test_status_rows(archive, in_the_book):
    rows = {row[0]: row for row in paper_scale.status_rows(archive)}
    assert set(rows) == set(paper_scale.chapters())
    assert all(len(row) == len(paper_scale.STATUS_HEADER) for row in rows.values())
    assert rows["lsa"][1:] == ["2026-11-25 10:00 UTC", "abc1234", "a CPU, 2 cores", "1 h 02 min",
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
    (tmp_path / "pending.yaml").write_text(text)
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
    (tmp_path / "_config.yml").write_text("title: tiny\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text(NOTEBOOK)
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "tiny.yaml").write_text(REGISTRY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))

    target = paper_scale.run_chapter("tiny")

    assert target == tmp_path / "results" / "full" / "tiny.json"
    run = json.loads(target.read_text())
    assert target.read_text() == json.dumps(run, sort_keys=True, indent=1) + "\n"
    assert [(entry["id"], entry["passed"], entry["mode"]) for entry in run["records"]] == [
        ("tiny.passes", True, "full"), ("tiny.fails", False, "full")]
    assert run["records"][1]["statement"] == "the measured value is three"
    assert run["records"][1]["measured"] == 2.5 and run["records"][1]["expected"] == 3.0
    assert [(error["cell"], error["error"]) for error in run["errors"]] == [(2, "AssertionError"), (3, "RuntimeError")]
    assert run["errors"][1]["message"] == "the last cell ran"
    assert run["commit"].startswith("unknown") and run["threads"] == 1 and run["wall_s"] > 0
    assert {"python", "numpy", "scipy", "torch", "icllib"} <= set(run["versions"])
    assert "Traceback" not in target.read_text() and str(tmp_path) not in target.read_text()
    assert paper_scale.read_pending() == [] and set(paper_scale.archived_records()) == {"tiny.passes", "tiny.fails"}
    series = archived_arrays("tiny", "series")
    assert series["steps"].tolist() == [0, 10, 20] and series["grid"].shape == (2, 2)
    assert series["grid"][1, 0] == 0.333333 and math.isnan(series["grid"][1, 1])   # 6 digits; NaN as null
    assert (series["date"], series["commit"]) == (run["date"], run["commit"])
    assert archived_arrays("tiny", "no_such_series") is None and archived_arrays("other", "series") is None
