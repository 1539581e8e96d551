"""The ledger's history: when each row's verdict last changed, and why, read from the registry's git history.

Every commit that touched the registry (``src/icllib/registry/*.yaml``) is read in order; a row that appears,
changes its verdict or disappears is an event ``{"id", "date", "commit", "from", "to", "why"}``, where ``why``
is the commit's subject line (the project writes its reason there). Changes in the working tree that no
commit holds yet are reported with the commit ``"uncommitted"``.

Without git history (a copy of the source without ``.git``, or a shallow clone) the committed file
``_ext/ledger_history.json`` stands in: its events, then every difference between its last state and the
registry as it is now, dated "after" its last commit. ``python _ext/ledger_history.py --update`` rewrites that
file from git; ``tests/test_ledger_history.py`` checks that it agrees with git's history as far as it goes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import yaml

try:
    Loader = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    Loader = yaml.SafeLoader

HISTORY_FILE = Path(__file__).with_name("ledger_history.json")
UNCOMMITTED = "uncommitted"


def _git(folder: Path, *arguments: str) -> str:
    result = subprocess.run(["git", "-C", str(folder), *arguments], capture_output=True, text=True, timeout=120)
    if result.returncode != 0:
        raise RuntimeError(result.stderr.strip() or f"git {' '.join(arguments)} failed")
    return result.stdout


def verdicts_of(text: str) -> dict[str, str]:
    """``{claim id: verdict}`` of one registry file's text (an unreadable file counts as empty)."""
    try:
        document = yaml.load(text, Loader=Loader) or {}
    except yaml.YAMLError:
        return {}
    return {str(entry["id"]): str(entry.get("verdict", "")) for entry in document.get("claims") or []
            if isinstance(entry, dict) and "id" in entry}


def _diff(before: dict[str, str], after: dict[str, str], date: str, commit: str, why: str) -> list[dict]:
    events = []
    for claim_id in sorted(set(before) | set(after)):
        old, new = before.get(claim_id), after.get(claim_id)
        if old != new:
            events.append({"id": claim_id, "date": date, "commit": commit, "from": old, "to": new, "why": why})
    return events


def git_available(folder: Path) -> bool:
    """A full git history holds ``folder``'s files (not a copy without ``.git``, nor one unpacked inside another
    repository, nor a shallow clone)."""
    try:
        return (_git(folder, "rev-parse", "--is-inside-work-tree").strip() == "true"
                and _git(folder, "rev-parse", "--is-shallow-repository").strip() == "false"
                and bool(_git(folder, "ls-files", "--", ".").strip()))
    except (RuntimeError, OSError, subprocess.TimeoutExpired):
        return False


def history_from_git(folder: Path, working_tree: bool = True) -> list[dict]:
    """The events of every commit that touched the ``*.yaml`` files of ``folder``, oldest first, then (with
    ``working_tree``) the uncommitted changes."""
    folder = Path(folder).resolve()
    top = Path(_git(folder, "rev-parse", "--show-toplevel").strip())
    relative = folder.relative_to(top).as_posix()
    log = _git(top, "log", "--reverse", "--format=%x01%H%x09%cs%x09%s", "--name-only", "--", f"{relative}/*.yaml")
    files: dict[str, dict[str, str]] = {}
    events: list[dict] = []
    for block in log.split("\x01")[1:]:
        head, *paths = [line for line in block.splitlines() if line.strip()]
        commit, date, subject = head.split("\t", 2)
        before = {claim_id: verdict for verdicts in files.values() for claim_id, verdict in verdicts.items()}
        for path in paths:
            try:
                files[path] = verdicts_of(_git(top, "show", f"{commit}:{path}"))
            except RuntimeError:  # deleted in this commit
                files.pop(path, None)
        after = {claim_id: verdict for verdicts in files.values() for claim_id, verdict in verdicts.items()}
        events += _diff(before, after, date, commit[:10], subject)
    if working_tree:
        committed = {claim_id: verdict for verdicts in files.values() for claim_id, verdict in verdicts.items()}
        events += _diff(committed, current_verdicts(folder), "", UNCOMMITTED,
                        "changed in the working tree, not yet committed")
    return events


def current_verdicts(folder: Path) -> dict[str, str]:
    verdicts: dict[str, str] = {}
    for path in sorted(Path(folder).glob("*.yaml")):
        verdicts.update(verdicts_of(path.read_text(encoding="utf-8")))
    return verdicts


def state_after(events: list[dict]) -> dict[str, str]:
    """The verdict of each row once ``events`` have happened."""
    state: dict[str, str] = {}
    for event in events:
        if event["to"] is None:
            state.pop(event["id"], None)
        else:
            state[event["id"]] = event["to"]
    return state


def history_from_file(folder: Path, history_file: Path = HISTORY_FILE) -> list[dict]:
    """The committed history, then the differences between its last state and the registry now."""
    recorded = json.loads(Path(history_file).read_text(encoding="utf-8"))
    events = recorded["events"]
    last = events[-1]["date"] if events else "the first commit"
    return events + _diff(state_after(events), current_verdicts(folder), "", UNCOMMITTED,
                          f"changed after {last}, the last commit in the history file {Path(history_file).name} "
                          "(no git history at hand)")


def ledger_history(folder: Path, history_file: Path = HISTORY_FILE) -> tuple[list[dict], str]:
    """The events and where they come from: ``"git"`` or ``"file"`` (no git history at hand)."""
    if git_available(folder):
        return history_from_git(folder), "git"
    return history_from_file(folder, history_file), "file"


def last_changes(events: list[dict]) -> dict[str, dict]:
    """The latest event of each row still in the registry: when it got its present verdict, and why."""
    latest: dict[str, dict] = {}
    for event in events:
        if event["to"] is None:
            latest.pop(event["id"], None)
        else:
            latest[event["id"]] = event
    return latest


def write_history_file(folder: Path, history_file: Path = HISTORY_FILE) -> int:
    events = history_from_git(folder, working_tree=False)
    Path(history_file).write_text(json.dumps({
        "about": "The claims registry's verdict changes, from its git history (python _ext/ledger_history.py "
                 "--update); the build reads it where no git history is at hand.",
        "events": events}, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return len(events)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update", action="store_true", help=f"rewrite {HISTORY_FILE.name} from git")
    parser.add_argument("--registry", type=Path,
                        default=Path(__file__).resolve().parents[1] / "src" / "icllib" / "registry")
    arguments = parser.parse_args(argv)
    if arguments.update:
        print(f"{write_history_file(arguments.registry)} events written to {HISTORY_FILE}")
        return 0
    events, source = ledger_history(arguments.registry)
    for event in events:
        if event["from"] is not None:
            print(f"{event['date'] or event['commit']}  {event['id']}: {event['from']} -> {event['to']}  ({event['why'][:100]})")
    print(f"{len(events)} events (from {source})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
