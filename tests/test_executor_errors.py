"""One error path for the executor: a full disk, a read-only _build or an ICLLIB_EXECUTIONS that is not a folder ends
in one line naming the chapter (and a failed status), never in a raw traceback. No kernel starts: the failures come
before one would, or stand in for one."""

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import executions  # noqa: E402

CHAPTER = "# %%\nprint('a chapter')\n"


@pytest.fixture
def book(tmp_path, monkeypatch):
    for name in ("_config.yml", "requirements.txt", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    shutil.copytree(ROOT / "_ext", tmp_path / "_ext", ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text(CHAPTER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_MODE", "quick")
    for name in ("ICLLIB_RESULTS", "ICLLIB_EXECUTIONS", executions.BUILD_RECORDS_VARIABLE):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def one_line_naming_the_chapter(stderr: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "tiny.py" in lines[0], stderr
    return lines[0]


def test_an_executions_folder_that_is_a_file_is_one_line(book):
    (book / "not-a-folder").write_text("", encoding="utf-8")
    done = subprocess.run([sys.executable, "_ext/executions.py", "--jobs", "1", "notebooks/tiny.py"], cwd=book,
                          env={**os.environ, "ICLLIB_EXECUTIONS": str(book / "not-a-folder")},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "not-a-folder" in one_line_naming_the_chapter(done.stderr)


@pytest.mark.parametrize(("number", "words"), [(errno.ENOSPC, "No space left on device"),
                                               (errno.EROFS, "Read-only file system"),
                                               (errno.EACCES, "Permission denied")])
def test_a_full_disk_or_a_read_only_build_is_one_line_naming_the_chapter(book, monkeypatch, capsys, number, words):
    target = book / "_build" / "executions" / "0123.ipynb"

    def disk_error(path, mode, folder=None):
        raise OSError(number, os.strerror(number), str(target))

    monkeypatch.setattr(executions, "execute", disk_error)   # the worker, forked from here, runs this one
    failed = executions.execute_changed([book / "notebooks" / "tiny.py"], "quick", 1, book / "_build" / "executions")
    assert [path.name for path in failed] == ["tiny.py"]
    line = one_line_naming_the_chapter(capsys.readouterr().err)
    assert words in line and str(target) in line

    # the book build's reader says the same, as the error Sphinx reports for that page
    with pytest.raises(RuntimeError, match=rf"^tiny\.py: {words}: {target}$"):
        executions.read_chapter(CHAPTER, fmt="py:percent")


def test_a_chapter_that_is_not_there_is_one_line(book, capsys):
    failed = executions.execute_changed([book / "notebooks" / "gone.py"], "quick", 1, book / "_build" / "executions")
    assert [path.name for path in failed] == ["gone.py"]
    errors = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(errors) == 1 and "gone.py: No such file or directory" in errors[0]
