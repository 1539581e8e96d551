"""Compare two claim ledgers (``results.jsonl``) record by record.

Usage:

- ``python tools/compare_records.py BEFORE.jsonl AFTER.jsonl``: a refactor never changes a number. Values are
  compared exactly (floats by their bits, NaN equal to NaN); exit status 1 on any difference.
- ``python tools/compare_records.py --margins NATIVE.jsonl OTHER.jsonl``: the same chapter run on other CPU
  kernels (``ATEN_CPU_CAPABILITY``, ``NPY_DISABLE_CPU_FEATURES``) differs in its last digits. For each check,
  the largest difference between the two runs against the room the native value leaves before its check fails
  (its *slack*: for ``|measured - expected| <= atol + rtol |expected|``, that bound less the native gap; for
  bounds, the distance to the nearer one). Exit status 1 when a check passes in one run and fails in the other,
  or when a difference uses a tenth of its slack or more (a thin margin: a third CPU could cross it).

Each line of a ledger is one JSON record with the claim ``id`` and its ``measured`` value (see
:mod:`icllib.claims`). For every claim id, the values of ALL its records are compared in the order they were
written, so a claim checked several times in a chapter is compared check by check. Every id whose number of
records differs, or that is present in one file only, is reported.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass

# A difference across CPU kernels that uses this share of a check's slack or more is a thin margin.
THIN = 0.1


def records_by_id(path: str) -> dict[str, list[dict]]:
    """``{claim id: [record, ...]}`` in the order of the file (a figure's layout record has no id: skipped)."""
    records = defaultdict(list)
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line) if line.strip() else {}
            if "id" in record:
                records[record["id"]].append(record)
    return dict(records)


def measured_by_id(records: dict[str, list[dict]]) -> dict[str, list]:
    """``{claim id: [measured, ...]}`` of :func:`records_by_id`'s reading, in the order of the file."""
    return {claim: [record.get("measured") for record in found] for claim, found in records.items()}


def same(a, b) -> bool:
    """Exact equality of two JSON values, NaN equal to NaN."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def unmatched(before: dict[str, list], after: dict[str, list]) -> list[str]:
    """Ids present in one ledger only, or checked a different number of times."""
    lines = []
    for claim in sorted(before.keys() | after.keys()):
        old, new = before.get(claim), after.get(claim)
        if old is None or new is None:
            lines.append(f"{claim}: only in {'after' if old is None else 'before'}")
        elif len(old) != len(new):
            lines.append(f"{claim}: {len(old)} records before, {len(new)} after")
    return lines


def differences(before: dict[str, list], after: dict[str, list]) -> list[str]:
    """One line per claim id whose records differ between the two ledgers."""
    lines = unmatched(before, after)
    for claim in sorted(before.keys() & after.keys()):
        old, new = before[claim], after[claim]
        if len(old) == len(new):
            for index, (a, b) in enumerate(zip(old, new)):
                if not same(a, b):
                    lines.append(f"{claim} (record {index + 1} of {len(old)}): {a!r} -> {b!r}")
    return sorted(lines)


# --- Margins: differences across CPU kernels against each check's tolerance -----------------------------------

def criterion(record: dict) -> dict:
    """A record's criterion as numbers: its ``criterion`` field, or read back from its ``tolerance`` text (the
    records archived before the field existed; ``rtol=0.05, atol=0.001``, ``>= 2``, ``<= 1e-10``)."""
    if isinstance(record.get("criterion"), dict):
        return record["criterion"]
    found = {"rtol": None, "atol": None, "lower": None, "upper": None}
    for part in (record.get("tolerance") or "").split(", "):
        match = re.fullmatch(r"(rtol|atol)=(\S+)|(>=|<=) (\S+)", part.strip())
        if match and match.group(1):
            found[match.group(1)] = float(match.group(2))
        elif match:
            found["lower" if match.group(3) == ">=" else "upper"] = float(match.group(4))
    return found


def slack(record: dict) -> float | None:
    """How far a record's measured value may move before its check fails (None for a yes/no check)."""
    measured, expected = record.get("measured"), record.get("expected")
    if isinstance(measured, bool) or not isinstance(measured, (int, float)):
        return None
    rule = criterion(record)
    room = []
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        room.append((rule["atol"] or 0.0) + (rule["rtol"] or 0.0) * abs(expected) - abs(measured - expected))
    if rule["lower"] is not None:
        room.append(measured - rule["lower"])
    if rule["upper"] is not None:
        room.append(rule["upper"] - measured)
    return min(room) if room else None


@dataclass
class Margin:
    """One check (a claim id, all its records) on native kernels against another run."""

    claim: str
    records: int
    difference: float          # the largest |native - other| over its records (0 for equal yes/no answers)
    slack: float | None        # the native run's room at that record (None: yes/no check)
    share: float               # difference / slack (inf when a yes/no answer or a pass/fail flips)
    flipped: bool              # passes in one run, fails in the other

    @property
    def thin(self) -> bool:
        return self.flipped or self.share >= THIN


def margins(native: dict[str, list[dict]], other: dict[str, list[dict]]) -> list[Margin]:
    """Each claim id checked the same number of times in both runs, worst record first within the id."""
    found = []
    for claim in sorted(native.keys() & other.keys()):
        pairs = list(zip(native[claim], other[claim]))
        if len(native[claim]) != len(other[claim]):
            continue
        worst = Margin(claim, len(pairs), 0.0, None, 0.0, False)
        for a, b in pairs:
            flipped = a.get("passed") != b.get("passed")
            room = slack(a)
            if room is None:
                difference = 0.0 if same(a.get("measured"), b.get("measured")) else math.inf
                share = 0.0 if difference == 0 else math.inf
            else:
                difference = abs(float(b["measured"]) - float(a["measured"]))
                share = difference / room if room > 0 else (0.0 if difference == 0 else math.inf)
            share = math.inf if flipped else share
            if (share, difference) > (worst.share, worst.difference):
                worst = Margin(claim, len(pairs), difference, room, share, flipped)
        worst.flipped = any(a.get("passed") != b.get("passed") for a, b in pairs)
        found.append(worst)
    return found


def margin_table(found: list[Margin]) -> str:
    """A Markdown table of the margins, the smallest (largest share of the slack used) first."""
    lines = ["| check | records | largest difference | native slack | share of slack | |",
             "|---|---:|---:|---:|---:|---|"]
    for margin in sorted(found, key=lambda m: (-m.share, -m.difference, m.claim)):
        room = "yes/no" if margin.slack is None else f"{margin.slack:.3g}"
        mark = "flips" if margin.flipped else ("thin" if margin.thin else "")
        lines.append(f"| `{margin.claim}` | {margin.records} | {margin.difference:.3g} | {room} | "
                     f"{margin.share:.2g} | {mark} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    tolerant = argv[:1] == ["--margins"]
    paths = argv[1:] if tolerant else argv
    if len(paths) != 2:
        print("usage: compare_records.py [--margins] BEFORE.jsonl AFTER.jsonl", file=sys.stderr)
        return 2
    before, after = (records_by_id(path) for path in paths)
    if tolerant:
        found = margins(before, after)
        print(margin_table(found))
        problems = unmatched(before, after) + [f"{m.claim}: {'flips' if m.flipped else 'thin margin'}"
                                                for m in found if m.thin]
        for line in problems:
            print(line)
        smallest = max(found, key=lambda m: (m.share, m.difference), default=None)
        print(f"{len(problems)} problems in {len(found)} checks"
              + (f"; smallest margin: {smallest.claim}, {smallest.share:.2g} of its slack" if smallest else ""))
        return 1 if problems else 0
    found = differences(measured_by_id(before), measured_by_id(after))
    for line in found:
        print(line)
    print(f"{len(found)} claim ids differ ({len(before)} ids, {sum(map(len, before.values()))} records before; "
          f"{len(after)} ids, {sum(map(len, after.values()))} records after)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
