"""A build's ledger shows its own records only: the notebook tests of `make test` running beside `make book` cannot
put their quick-mode numbers (or a failure) in the default ledger, and an incremental build after a check was
deleted from a chapter does not show the deleted check. Stored executions stand in for kernels (no chapter runs)."""

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from icllib import claims

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import executions  # noqa: E402
import ledger_files  # noqa: E402

CELL = '# %%\nfrom icllib.claims import check_claim\n\ncheck_claim("{claim}", {value}, expected={value}, atol=0)\n'


def checkable_claims() -> list[str]:
    return [claim.id for claim in claims.registry().claims.values()
            if claim.verdict != "out of scope" and {"quick", "default"} <= set(claim.modes)][:2]


def record(claim: str, value: float, mode: str, passed: bool = True) -> str:
    return json.dumps({"id": claim, "measured": value, "expected": value, "tolerance": "atol=0", "why": None,
                       "passed": passed, "verdict": "reproduced", "mode": mode, "time": 0.0, "run": f"run-{mode}"})


@pytest.fixture
def book(tmp_path, monkeypatch):
    """A book root with one chapter, its own execution cache, and a stand-in for the Sphinx app of `make book`."""
    for name in ("_config.yml", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_EXECUTIONS", str(tmp_path / "_build" / "executions"))
    monkeypatch.setenv("ICLLIB_MODE", "default")
    for name in ("ICLLIB_RESULTS", "ICLLIB_REGISTRY", executions.BUILD_RECORDS_VARIABLE):
        monkeypatch.delenv(name, raising=False)   # restored (or removed) after the test: the build sets them
    app = SimpleNamespace(outdir=str(tmp_path / "_build" / "html"),
                          env=SimpleNamespace(all_docs={}, found_docs={"notebooks/tiny"}))
    return tmp_path, app


def write_chapter(root: Path, checks: dict[str, float]) -> Path:
    path = root / "notebooks" / "tiny.py"
    path.write_text("\n".join(CELL.format(claim=claim, value=value) for claim, value in checks.items()),
                    encoding="utf-8")
    return path


def stored_run(path: Path, mode: str, records: list[str]) -> None:
    """What an execution of the chapter in ``mode`` leaves in the cache (the kernel's run is stood in for)."""
    executions.store(executions.read_source(path), mode, records, {"notebook": path.name, "seconds": 1.0,
                                                                   "date": "2026-11-27 06:00 UTC"})


def read_by_the_build(path: Path) -> None:
    executions.read_chapter(path.read_text(encoding="utf-8"), fmt="py:percent")


def test_make_test_beside_make_book_cannot_publish_its_quick_numbers(book, monkeypatch):
    root, app = book
    claim = checkable_claims()[0]
    chapter = write_chapter(root, {claim: 2.0})
    stored_run(chapter, "default", [record(claim, 2.0, "default")])
    ledger_files.start_fresh_results(app)        # make book's jupyter-book build starts ...
    read_by_the_build(chapter)
    # ... and meanwhile make test's notebook tests finish the chapter in quick mode, one check failing, and hand
    # their records on as conftest.py does
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    monkeypatch.delenv(executions.BUILD_RECORDS_VARIABLE)   # another process: the build's variable is not in it
    executions.pass_on([record(claim, 1.5, "quick", passed=False)], claims.results_path())
    stored_run(chapter, "quick", [record(claim, 1.5, "quick", passed=False)])
    monkeypatch.setenv("ICLLIB_MODE", "default")
    monkeypatch.setenv(executions.BUILD_RECORDS_VARIABLE, str(ledger_files.records_folder(app)))
    shown = claims.read_all_results(ledger_files.gather_results(app))[claim]
    assert [(entry["measured"], entry["mode"], entry["passed"]) for entry in shown] == [(2.0, "default", True)]
    assert claims.results_path() != ledger_files.results_file(app)


def test_an_incremental_build_after_a_check_was_deleted_does_not_show_it(book):
    root, app = book
    kept, deleted = checkable_claims()
    chapter = write_chapter(root, {kept: 2.0, deleted: 3.0})
    stored_run(chapter, "default", [record(kept, 2.0, "default"), record(deleted, 3.0, "default")])
    ledger_files.start_fresh_results(app)
    read_by_the_build(chapter)
    assert set(claims.read_all_results(ledger_files.gather_results(app))) == {kept, deleted}
    app.env.all_docs = {"notebooks/tiny": 1.0}   # a bare `jupyter-book build` again: the environment is kept
    chapter = write_chapter(root, {kept: 2.0})
    stored_run(chapter, "default", [record(kept, 2.0, "default")])
    ledger_files.start_fresh_results(app)
    read_by_the_build(chapter)                   # Sphinx reads the edited chapter again
    assert set(claims.read_all_results(ledger_files.gather_results(app))) == {kept}


def test_a_build_reads_only_its_modes_records_of_the_chapters_it_has(book):
    root, app = book
    claim = checkable_claims()[0]
    ledger_files.start_fresh_results(app)
    folder = ledger_files.records_folder(app)
    folder.mkdir(parents=True)
    (folder / "tiny.jsonl").write_text(record(claim, 2.0, "default") + "\n" + record(claim, 9.0, "quick") + "\n",
                                       encoding="utf-8")
    (folder / "gone.jsonl").write_text(record(claim, 7.0, "default") + "\n", encoding="utf-8")  # out of the book
    shown = claims.read_all_results(ledger_files.gather_results(app))[claim]
    assert [entry["measured"] for entry in shown] == [2.0]
