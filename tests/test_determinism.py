"""A chapter measures the same numbers every time: the quickest chapter, run twice in separate processes in
``quick`` mode, records every claim with the same measured value, bit for bit and in the same order."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import executions  # noqa: E402

CHAPTER = ROOT / "notebooks" / "induction_emergence.py"  # the fastest chapter (about 20 s in quick mode)


def _run_chapter(results: Path) -> list[tuple[str, str]]:
    """Execute the chapter in a fresh kernel, as the book build does (``executions.run_kernel``), and return its
    check records (not its figures' layout records) as ``(id, measured)`` pairs; ``measured`` is kept as its JSON
    text, which writes floats exactly (the shortest repr that round-trips), so equal text is equal bits."""
    results.write_text("", encoding="utf-8")
    executions.run_kernel(executions.read_source(CHAPTER), CHAPTER, "quick", results)
    records = [json.loads(line) for line in results.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(record["id"], json.dumps(record.get("measured"))) for record in records if "id" in record]


def test_quick_chapter_measures_the_same_numbers_twice(tmp_path):
    first = _run_chapter(tmp_path / "first.jsonl")
    second = _run_chapter(tmp_path / "second.jsonl")
    assert first, "the chapter recorded no claims"
    assert first == second
