"""Write a chapter's stored check records for today's code (the book's execution cache) to a file.

Usage: ``python tools/export_records.py CHAPTER MODE OUT.jsonl``; exit status 1 when the cache holds no
execution of today's code in that mode (run ``ICLLIB_MODE=MODE python _ext/executions.py notebooks/CHAPTER.py``
first). With ``tools/compare_records.py`` this is how a refactor shows that no number changed.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import executions  # noqa: E402


def main(chapter: str, mode: str, out: str) -> int:
    source = executions.book_root() / "notebooks" / f"{chapter}.py"
    execution = executions.load(executions.read_source(source), mode)
    if execution is None:
        print(f"no stored {mode} execution of today's {source.name}", file=sys.stderr)
        return 1
    Path(out).write_text("".join(line if line.endswith("\n") else line + "\n" for line in execution.records),
                         encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
