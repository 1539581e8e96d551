"""Compare two claim ledgers (``results.jsonl``) record by record: a refactor never changes a number.

Usage: ``python tools/compare_records.py BEFORE.jsonl AFTER.jsonl``

Each line of a ledger is one JSON record with the claim ``id`` and its ``measured`` value (see
:mod:`icllib.claims`). For every claim id, the measured values of ALL its records are compared in the
order they were written, so a claim checked several times in a chapter is compared check by check.
Values are compared exactly (floats by their bits, NaN equal to NaN). Every id whose values differ, whose
number of records differs, or that is present in one file only is reported; the exit status is 1 on any
difference and 0 when the two ledgers measured the same numbers.
"""

from __future__ import annotations

import json
import math
import sys
from collections import defaultdict


def measured_by_id(path: str) -> dict[str, list]:
    """``{claim id: [measured, ...]}`` in the order of the file (a figure's layout record has no id: skipped)."""
    values = defaultdict(list)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line) if line.strip() else {}
            if "id" in record:
                values[record["id"]].append(record.get("measured"))
    return dict(values)


def same(a, b) -> bool:
    """Exact equality of two JSON values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def differences(before: dict[str, list], after: dict[str, list]) -> list[str]:
    """One line per claim id whose records differ between the two ledgers."""
    lines = []
    for claim in sorted(before.keys() | after.keys()):
        old, new = before.get(claim), after.get(claim)
        if old is None or new is None:
            lines.append(f"{claim}: only in {'after' if old is None else 'before'}")
        elif len(old) != len(new):
            lines.append(f"{claim}: {len(old)} records before, {len(new)} after")
        else:
            for index, (a, b) in enumerate(zip(old, new)):
                if not same(a, b):
                    lines.append(f"{claim} (record {index + 1} of {len(old)}): {a!r} -> {b!r}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    before, after = (measured_by_id(path) for path in argv)
    found = differences(before, after)
    for line in found:
        print(line)
    records = sum(len(v) for v in before.values())
    print(f"{len(found)} claim ids differ ({len(before)} ids, {records} records before; "
          f"{len(after)} ids, {sum(len(v) for v in after.values())} records after)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
