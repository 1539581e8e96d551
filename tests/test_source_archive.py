"""The source archive offered on the site: what it holds, that it is reproducible, and its README's commands."""

import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import source_archive  # noqa: E402
from run_from_archive import readme_commands  # noqa: E402


@pytest.fixture(scope="module")
def archive(tmp_path_factory) -> Path:
    return source_archive.write_archive(ROOT, tmp_path_factory.mktemp("site") / source_archive.ARCHIVE_NAME)


def test_the_archive_holds_what_a_chapter_needs_and_nothing_built(archive):
    names = tarfile.open(archive).getnames()
    top = source_archive.TOP_FOLDER
    for needed in ("README.md", "requirements.txt", "pyproject.toml", "src/icllib/__init__.py",
                   "src/icllib/claims.py", "LICENSE", "LICENSE-TEXT", "CITATION.cff"):
        assert f"{top}/{needed}" in names
    assert any(name.startswith(f"{top}/src/icllib/registry/") and name.endswith(".yaml") for name in names)
    assert {f"{top}/notebooks/{path.name}" for path in (ROOT / "notebooks").glob("*.py")} <= set(names)
    assert not [name for name in names if "__pycache__" in name or "_build" in name or name.endswith(".ipynb")]


def test_the_archive_is_the_same_bytes_for_the_same_sources(archive, tmp_path):
    again = source_archive.write_archive(ROOT, tmp_path / "again.tar.gz")
    assert again.read_bytes() == archive.read_bytes()


def test_the_readme_installs_and_runs_one_chapter_in_quick_mode(archive):
    readme = tarfile.open(archive).extractfile(f"{source_archive.TOP_FOLDER}/README.md").read().decode()
    commands = readme_commands(readme)
    assert commands[0].startswith("python3 -m venv")
    assert "ICLLIB_MODE=quick" in commands[-1] and f"notebooks/{source_archive.EXAMPLE_CHAPTER}.py" in commands[-1]
    assert (ROOT / "notebooks" / f"{source_archive.EXAMPLE_CHAPTER}.py").is_file()


def test_a_folder_that_is_not_the_book_is_refused(tmp_path):
    with pytest.raises(ValueError, match="root="):
        source_archive.write_archive(tmp_path, tmp_path / "x.tar.gz")
