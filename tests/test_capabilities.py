"""benchmarks/capabilities.py: the kernel profiles that CI's second leg and the cross-kernel report run under."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks import capabilities  # noqa: E402


def test_each_profile_sets_every_kernel_variable_it_names_and_no_other():
    for name, variables in capabilities.PROFILES.items():
        assert set(variables) <= set(capabilities.CPU_KERNEL_VARIABLES), name
        assert variables["ATEN_CPU_CAPABILITY"] == name   # the profile is named after PyTorch's capability


def test_a_profile_replaces_the_shells_kernel_variables(monkeypatch):
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Haswell")
    monkeypatch.setenv("NPY_DISABLE_CPU_FEATURES", "AVX512F")
    variables = capabilities.environment("avx512")
    assert variables["OPENBLAS_CORETYPE"] == "SkylakeX" and "NPY_DISABLE_CPU_FEATURES" not in variables
    assert capabilities.environment(None)["OPENBLAS_CORETYPE"] == "Haswell"   # native: the shell's own


def test_an_unknown_profile_is_refused_by_name():
    with pytest.raises(ValueError, match="profile must be one of"):
        capabilities.environment("sse2")


def test_the_latest_stored_execution_of_a_chapter_is_exported(tmp_path):
    import json
    import os

    for index, seconds in enumerate((1.0, 2.0)):
        facts = tmp_path / f"key{index}.json"
        facts.write_text(json.dumps({"notebook": "tiny.py", "mode": "quick"}), encoding="utf-8")
        facts.with_suffix(".records.jsonl").write_text(f'{{"id": "tiny.x", "measured": {seconds}}}\n',
                                                       encoding="utf-8")
        os.utime(facts, (index, index))
    out = capabilities.export(tmp_path, "tiny", "quick")
    assert json.loads(out.read_text(encoding="utf-8"))["measured"] == 2.0
    with pytest.raises(RuntimeError, match="no default execution"):
        capabilities.export(tmp_path, "tiny", "default")
