"""A failed check_claim inside a chapter must fail both the notebook tests and the book build.

A tiny book (the real configuration, extension and conftest, one notebook) is made in a temporary
folder; the same notebook with a correct value passes both, so the test can tell the difference.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent

REGISTRY = """
chapter: tiny
title: A tiny chapter
page: notebooks/tiny
paper: tian2023scan
claims:
  - id: tiny.two
    location: Eq. 1
    statement: the measured value is two
    verdict: reproduced
"""

NOTEBOOK = """# %% [markdown]
# # A tiny chapter

# %%
from icllib.claims import check_claim

check_claim("tiny.two", {value}, expected=2.0, atol=1e-12, why="exact arithmetic")
"""


def make_tiny_book(folder: Path, value: float) -> dict[str, str]:
    for name in ("_config.yml", "conftest.py", "CITATION.cff"):
        shutil.copy(ROOT / name, folder / name)
    shutil.copytree(ROOT / "_ext", folder / "_ext")
    (folder / "book").mkdir()
    shutil.copy(ROOT / "book" / "references.bib", folder / "book" / "references.bib")
    (folder / "book" / "intro.md").write_text("# Intro\n\nA tiny book.\n", encoding="utf-8")
    (folder / "book" / "claims.md").write_text("# Ledger\n\n```{claims-ledger}\n```\n", encoding="utf-8")
    (folder / "book" / "refs.md").write_text("# References\n\n```{bibliography}\n:all:\n```\n", encoding="utf-8")
    (folder / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nchapters:\n"
        "  - file: notebooks/tiny\n  - file: book/claims\n  - file: book/refs\n", encoding="utf-8"
    )
    (folder / "notebooks").mkdir()
    (folder / "notebooks" / "tiny.py").write_text(NOTEBOOK.format(value=value), encoding="utf-8")
    (folder / "registry").mkdir()
    (folder / "registry" / "tiny.yaml").write_text(REGISTRY, encoding="utf-8")
    return {**os.environ, "ICLLIB_MODE": "quick", "ICLLIB_REGISTRY": str(folder / "registry")}


def run(command: list[str], folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.parametrize(("value", "fails"), [(2.5, True), (2.0, False)])
def test_a_failed_claim_fails_the_notebook_tests_and_the_build(tmp_path, value, fails):
    env = make_tiny_book(tmp_path, value)

    notebook_tests = run([str(BIN / "pytest"), "-p", "no:cacheprovider", "notebooks/tiny.py"], tmp_path, env)
    build = run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], tmp_path, env)

    outputs = notebook_tests.stdout + notebook_tests.stderr, build.stdout + build.stderr
    if fails:
        assert notebook_tests.returncode == 1, outputs[0]
        assert "FAILED notebooks/tiny.py::Cell 0" in outputs[0]
        assert "claim tiny.two" in outputs[0]
        assert build.returncode != 0, outputs[1]
        assert "tiny.two" in outputs[1]
    else:
        assert notebook_tests.returncode == 0, outputs[0]
        assert build.returncode == 0, outputs[1]
        # ids may break after their dots
        ledger = (tmp_path / "_build" / "html" / "book" / "claims.html").read_text(encoding="utf-8").replace("<wbr>", "")
        assert "tiny.two" in ledger and "reproduced" in ledger
