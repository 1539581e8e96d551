"""What `make book` and `make chapter` need is looked for before anything runs: Chromium for the course pack (with
the line that installs it and the way to build without the pack), and the chapter that CHAPTER names. Each stops
in one line, before an environment is built (PYTHON=false: any step past the checks would fail otherwise)."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
MAKE = shutil.which("make")


def make(*arguments: str, tmp_path: Path, path: str | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, "ICLLIB_MODE": "default"}
    environment.pop("MAKEFLAGS", None)
    if path is not None:
        environment["PATH"] = path
    return subprocess.run([MAKE, "-C", str(ROOT), *arguments, f"VENV={tmp_path / 'venv'}", "PYTHON=false"],
                          env=environment, capture_output=True, text=True, timeout=60)


def test_make_book_without_chromium_stops_first_with_the_install_line_and_the_way_round(tmp_path):
    empty = tmp_path / "bin"   # a PATH with no browser on it (make's recipes run /bin/bash by its full path)
    empty.mkdir()
    done = make("book", tmp_path=tmp_path, path=str(empty))
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith(("make:", "make["))]
    assert len(lines) == 1 and "apt-get install chromium" in lines[0] and "make book COURSE_PACK=0" in lines[0]
    assert "Traceback" not in done.stderr and not (tmp_path / "venv").exists()


def test_make_book_course_pack_0_needs_no_chromium_and_builds_no_pack(tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    checked = make("check-chromium", "COURSE_PACK=0", tmp_path=tmp_path, path=str(empty))
    assert checked.returncode == 0, checked.stderr
    planned = make("-n", "book", "COURSE_PACK=0", tmp_path=tmp_path)
    # the pages are told there is no pack (book_ext's course_pack, which the home page's links depend on)
    assert "ICLLIB_COURSE_PACK=0" in planned.stdout and "ICLLIB_COURSE_PACK=1" not in planned.stdout
    assert 'if [ "0" = 1 ]; then' in planned.stdout and "_ext/course.py" in planned.stdout
    bad = make("check-chromium", "COURSE_PACK=maybe", tmp_path=tmp_path)
    assert bad.returncode == 2 and "COURSE_PACK='maybe' must be 1 or 0" in bad.stderr


@pytest.mark.parametrize("chapter", ["nonexistent", "../README", ""])
def test_make_chapter_with_an_unknown_chapter_says_so_in_one_line(tmp_path, chapter):
    done = make("chapter", f"CHAPTER={chapter}", tmp_path=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith(("make:", "make["))]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert ("usage: make chapter" if not chapter else f"no chapter '{chapter}'") in lines[0]
    assert chapter == "" or "balance" in lines[0], "the chapters there are"
    assert not (tmp_path / "venv").exists()
