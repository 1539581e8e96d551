"""The ledger's history (_ext/ledger_history.py): a verdict changed in a scratch registry is reported, from git
and, without git, from the committed history file; the committed file agrees with git's history."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))

import ledger_history  # noqa: E402

REGISTRY = """chapter: toy
title: A toy chapter
page: notebooks/toy
paper: toy2026
claims:
  - id: toy.first
    location: Theorem 1
    statement: It holds.
    verdict: {first}
    deciding_run: a long run
  - id: toy.second
    location: Lemma 2
    statement: It holds too.
    verdict: reproduced
"""

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def git(folder: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(folder), "-c", "user.name=Test", "-c", "user.email=test@example.org",
                    *arguments], check=True, capture_output=True)


@pytest.fixture
def scratch(tmp_path):
    registry = tmp_path / "src" / "icllib" / "registry"
    registry.mkdir(parents=True)
    (registry / "toy.yaml").write_text(REGISTRY.format(first="inconclusive"), encoding="utf-8")
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "toy: the first rows")
    return registry


@needs_git
def test_a_committed_change_of_verdict_is_reported_with_its_date_and_reason(scratch):
    (scratch / "toy.yaml").write_text(REGISTRY.format(first="reproduced"), encoding="utf-8")
    git(scratch, "commit", "-q", "-am", "toy: the long run reproduces Theorem 1")
    events, source = ledger_history.ledger_history(scratch)
    assert source == "git"
    changes = [event for event in events if event["from"] is not None]
    assert [(event["id"], event["from"], event["to"], event["why"]) for event in changes] == \
        [("toy.first", "inconclusive", "reproduced", "toy: the long run reproduces Theorem 1")]
    assert changes[0]["date"] and changes[0]["commit"] != ledger_history.UNCOMMITTED
    latest = ledger_history.last_changes(events)
    assert latest["toy.first"] is changes[0] and latest["toy.second"]["from"] is None


@needs_git
def test_an_uncommitted_change_is_reported_as_such(scratch):
    (scratch / "toy.yaml").write_text(REGISTRY.format(first="not reproduced"), encoding="utf-8")
    events = ledger_history.history_from_git(scratch)
    assert events[-1]["id"] == "toy.first" and events[-1]["to"] == "not reproduced"
    assert events[-1]["commit"] == ledger_history.UNCOMMITTED


@needs_git
def test_without_git_the_history_file_and_the_registry_now_tell_what_changed(scratch, tmp_path_factory):
    elsewhere = tmp_path_factory.mktemp("archive")
    history_file = elsewhere / "history.json"
    assert ledger_history.write_history_file(scratch, history_file) == 2
    copy = elsewhere / "registry"     # the same registry without .git, as in a source archive
    shutil.copytree(scratch, copy)
    (copy / "toy.yaml").write_text(REGISTRY.format(first="corrected"), encoding="utf-8")
    assert not ledger_history.git_available(copy)
    events, source = ledger_history.ledger_history(copy, history_file)
    assert source == "file"
    assert events[-1]["id"] == "toy.first" and (events[-1]["from"], events[-1]["to"]) == ("inconclusive", "corrected")
    assert "history file" in events[-1]["why"]


@needs_git
def test_the_committed_history_file_agrees_with_git_as_far_as_it_goes():
    registry = ROOT / "src" / "icllib" / "registry"
    if not ledger_history.git_available(registry):
        pytest.skip("no full git history here (a source archive or a shallow clone)")
    recorded = json.loads(ledger_history.HISTORY_FILE.read_text(encoding="utf-8"))["events"]
    from_git = ledger_history.history_from_git(registry, working_tree=False)
    assert recorded == from_git[:len(recorded)], \
        "the history file differs from git's history: run python _ext/ledger_history.py --update"
