"""The table of contents of ``make chapter CHAPTER=<name>``: ``python tools/chapter_toc.py <name> <toc file>`` writes
it and prints the notebooks the partial build needs. A chapter read in parts (a registry file's ``part_of``) brings
its first page and every part, in the order of the book's ``_toc.yml``, since they cite each other; then come the
intro, the ledger and the reference pages."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PAGES_AFTER = ("book/claims", "book/errata", "book/status", "book/api", "book/references")


def family(chapter: str) -> list[str]:
    """The notebook names of ``chapter``'s pages: itself, or its first page and all its parts, in book order."""
    from icllib.claims import registry

    headers = registry().chapters
    first = (headers.get(chapter) or {}).get("part_of") or chapter
    names = {name for name, header in headers.items() if name == first or header.get("part_of") == first}
    names.add(chapter)
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    order = [Path(entry["file"]).name for part in toc.get("parts", []) for entry in part.get("chapters", [])]
    return sorted(names, key=lambda name: (order.index(name) if name in order else len(order), name))


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python tools/chapter_toc.py <chapter> <toc file>", file=sys.stderr)
        return 2
    chapter, target = argv
    pages = family(chapter)
    entries = [f"notebooks/{name}" for name in pages] + list(PAGES_AFTER)
    Path(target).write_text("format: jb-book\nroot: book/intro\nchapters:\n"
                            + "".join(f"  - file: {entry}\n" for entry in entries), encoding="utf-8")
    print(" ".join(f"notebooks/{name}.py" for name in pages))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
