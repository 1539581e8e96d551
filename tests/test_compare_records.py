"""tools/compare_records.py: exact comparison for refactors, margins against each check's tolerance across CPUs."""

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import compare_records  # noqa: E402


def ledger(path: Path, *records: dict) -> str:
    path.write_text("".join(json.dumps(record) + "\n" for record in records), encoding="utf-8")
    return str(path)


def check(claim, measured, passed=True, **rule):
    criterion = {"rtol": None, "atol": None, "lower": None, "upper": None}
    criterion.update({key: value for key, value in rule.items() if key != "expected"})
    return {"id": claim, "measured": measured, "expected": rule.get("expected"), "passed": passed,
            "criterion": criterion, "tolerance": ""}


def test_exact_comparison_finds_a_changed_bit(tmp_path, capsys):
    before = ledger(tmp_path / "a.jsonl", check("c.x", 1.0, atol=0.1, expected=1.0), {"figure": "1", "problems": []})
    after = ledger(tmp_path / "b.jsonl", check("c.x", 1.0 + 1e-16 * 2, atol=0.1, expected=1.0))
    assert compare_records.main([before, before]) == 0
    assert compare_records.main([before, after]) == 1
    assert "c.x (record 1 of 1)" in capsys.readouterr().out


def test_slack_of_a_tolerance_and_of_bounds():
    assert compare_records.slack(check("c", 1.02, expected=1.0, rtol=0.05)) == pytest.approx(0.03)
    assert compare_records.slack(check("c", 0.3, lower=0.0, upper=1.0)) == pytest.approx(0.3)
    assert compare_records.slack(check("c", True, expected=True)) is None
    old_style = {"id": "c", "measured": 0.5, "expected": None, "tolerance": ">= 0.2, <= 0.6", "passed": True}
    assert compare_records.slack(old_style) == pytest.approx(0.1)   # read back from the text


def test_margins_name_the_thin_check_and_a_flipped_one(tmp_path, capsys):
    native = ledger(tmp_path / "n.jsonl", check("c.wide", 1.0, expected=1.0, atol=1.0),
                    check("c.thin", 0.95, expected=1.0, atol=0.06), check("c.yes", True, expected=True),
                    check("c.flip", 0.99, upper=1.0))
    other = ledger(tmp_path / "o.jsonl", check("c.wide", 1.001, expected=1.0, atol=1.0),
                   check("c.thin", 0.951, expected=1.0, atol=0.06), check("c.yes", True, expected=True),
                   check("c.flip", 1.01, upper=1.0, passed=False))
    found = {m.claim: m for m in compare_records.margins(compare_records.records_by_id(native),
                                                          compare_records.records_by_id(other))}
    assert found["c.wide"].share == pytest.approx(0.001) and not found["c.wide"].thin
    assert found["c.thin"].share == pytest.approx(0.1) and found["c.thin"].thin
    assert found["c.yes"].share == 0 and found["c.yes"].slack is None
    assert found["c.flip"].flipped and math.isinf(found["c.flip"].share)
    assert compare_records.main(["--margins", native, other]) == 1
    out = capsys.readouterr().out
    assert "c.flip: flips" in out and "c.thin: thin margin" in out and "c.wide: thin" not in out
    assert compare_records.main(["--margins", native, native]) == 0
