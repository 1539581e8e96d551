"""Time the two commands as a new user and a contributor meet them, before and after a change, in one run.

For each commit (``--before``, if given, then ``--after``), on a fresh clone in a scratch folder: ``make test``
(including the first install of the virtual environment from the pip cache), then ``make book``. For the
``--after`` commit, then a prose-only edit (a sentence added to a markdown cell of a chapter and to the
home page) and ``make book`` again. Every command runs to its end and its exit code is recorded; the
timings, the machine and the chapters' execution times (side by side, from the execution cache) go to
``benchmarks/build_times.json``, which the status page shows.

    python -m benchmarks.build_times --before 98d47f9 --after HEAD
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from executions import machine  # noqa: E402

OUTPUT = ROOT / "benchmarks" / "build_times.json"
TARGETS_S = {"make test": 8 * 60, "make book": 12 * 60, "make book after a prose edit": 2 * 60}
PROSE_EDITS = {
    # inside the opening cell, after the chapter's title: a sentence before the title would demote it
    "notebooks/lsa.py": ("# What this chapter finds:\n",
                         "# A sentence added to time a prose-only rebuild.\n#\n# What this chapter finds:\n"),
    "book/intro.md": ("\n", "\nA sentence added to time a prose-only rebuild.\n\n"),
}


def timed(command: list[str], folder: Path, log: Path) -> dict:
    """Run ``command`` in ``folder`` (output to ``log``); its wall time and exit code."""
    environment = {name: value for name, value in os.environ.items()
                   if not name.startswith("ICLLIB_") and name not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as stream:
        code = subprocess.run(command, cwd=folder, env=environment, stdout=stream, stderr=subprocess.STDOUT).returncode
    seconds = round(time.perf_counter() - started, 1)
    print(f"  {' '.join(command)}: {seconds:.0f} s, exit {code}", flush=True)
    return {"seconds": seconds, "exit": code}


def fresh_clone(commit: str, folder: Path) -> str:
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    subprocess.run(["git", "checkout", "-q", commit], cwd=folder, check=True)
    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=folder, check=True, capture_output=True,
                          text=True).stdout.strip()


def prose_edit(folder: Path) -> None:
    for name, (old, new) in PROSE_EDITS.items():
        path = folder / name
        text = path.read_text(encoding="utf-8")
        if old not in text:
            raise RuntimeError(f"{name}: no place for the prose edit ({old!r})")
        path.write_text(text.replace(old, new, 1), encoding="utf-8")


def chapter_seconds(folder: Path) -> dict[str, float]:
    """Each chapter's default-mode execution time in ``make book``, from the execution cache."""
    times = {}
    for facts_file in (folder / "_build" / "executions").glob("*.json"):
        facts = json.loads(facts_file.read_text(encoding="utf-8"))
        if facts.get("mode") == "default" and "seconds" in facts:
            times[Path(facts["notebook"]).stem] = facts["seconds"]
    return dict(sorted(times.items()))


def measure(commit: str, scratch: Path, label: str, prose: bool) -> dict:
    folder = scratch / label
    revision = fresh_clone(commit, folder)
    print(f"{label}: {revision}", flush=True)
    result = {"commit": revision,
              "make test": timed(["make", "test"], folder, scratch / f"{label}-test.log"),
              "make book": timed(["make", "book"], folder, scratch / f"{label}-book.log")}
    if prose:
        prose_edit(folder)
        result["make book after a prose edit"] = timed(["make", "book"], folder, scratch / f"{label}-prose.log")
    result["chapters, default mode (s)"] = chapter_seconds(folder)
    shutil.copy(folder / "_build" / "claims" / "results.jsonl", scratch / f"{label}-default.jsonl")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.build_times", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="the commit to compare with (default: none, the after commit alone)")
    parser.add_argument("--after", default="HEAD")
    parser.add_argument("--scratch", type=Path, help="where the clones and logs go (default: a new temporary folder)")
    parser.add_argument("--output", type=Path, default=OUTPUT)
    arguments = parser.parse_args()
    scratch = arguments.scratch or Path(tempfile.mkdtemp(prefix="build-times-"))
    scratch.mkdir(parents=True, exist_ok=True)
    print(f"clones and logs in {scratch}", flush=True)
    before = measure(arguments.before, scratch, "before", prose=False) if arguments.before else {}
    after = measure(arguments.after, scratch, "after", prose=True)
    ratios = {command: round(before[command]["seconds"] / after[command]["seconds"], 2)
              for command in ("make test", "make book") if command in before}
    results = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(),
               "targets_s": TARGETS_S, "before": before, "after": after, "speed-up": ratios}
    arguments.output.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
