"""The source archive offered on the site: what it holds, that it is reproducible, and its README's commands."""

import os
import re
import subprocess
import sys
import tarfile
import tomllib
from functools import cache
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
    assert not [name for name in names if "/." in name], "no hidden files (.ci/, .gitignore)"


@cache
def _source_names() -> frozenset[str]:
    return frozenset(path.relative_to(ROOT).as_posix() for path in source_archive.source_files(ROOT))


def tracked(path: str) -> bool:
    """A file or folder of the book's sources: what git tracks in a checkout, and outside one (the unpacked source
    archive, which has no .git and whose README promises `make test`) what the archive's own walk finds."""
    names = _source_names()
    return path in names or any(name.startswith(path.rstrip("/") + "/") for name in names)


def test_the_archive_rebuilds_the_book_and_holds_every_file_the_site_points_to(archive):
    """An instructor can rebuild from it (Makefile, configuration, pages, extensions), and every `make` target and
    every file or folder of the repository that the pages name (`benchmarks/`, `_ext/`, `tools/...`, `results/full/`)
    is in it."""
    names = set(tarfile.open(archive).getnames())
    top = source_archive.TOP_FOLDER
    for needed in ("Makefile", "_config.yml", "_toc.yml", "book/intro.md", "_ext/book_ext.py",
                   "_ext/paper_scale.py", "conftest.py"):
        assert f"{top}/{needed}" in names, needed
    pages = "\n".join(path.read_text(encoding="utf-8")
                      for path in [*(ROOT / "book").glob("*.md"), *(ROOT / "notebooks").glob("*.py")])
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"`make ([a-z][\w-]*)", pages))
    assert "paper-scale" in targets
    assert not [target for target in targets if not re.search(rf"^{target}:", makefile, re.MULTILINE)]
    mentioned = {path.rstrip("/") for path in re.findall(r"`([\w.-]+/[\w./-]*)`", pages)}
    repository_paths = {path for path in mentioned if (ROOT / path).exists() and tracked(path)}
    assert {"benchmarks", "_ext"} <= repository_paths
    missing = [path for path in repository_paths
               if f"{top}/{path}" not in names and not any(name.startswith(f"{top}/{path}/") for name in names)]
    assert not missing, missing


def test_the_archive_is_the_same_bytes_for_the_same_sources(archive, tmp_path):
    again = source_archive.write_archive(ROOT, tmp_path / "again.tar.xz")
    assert again.read_bytes() == archive.read_bytes()


DOCUMENTATION_TOOLCHAIN = ("jupyter-book", "sphinx", "myst", "pytest", "black", "nbval", "-r requirements.txt")


def test_the_readme_runs_a_chapter_in_two_commands_with_only_the_science_stack(archive):
    readme = tarfile.open(archive).extractfile(f"{source_archive.TOP_FOLDER}/README.md").read().decode()
    install, run = readme_commands(readme)
    assert install.startswith("python3 -m venv") and "-c requirements.txt" in install and '".[text]"' in install
    assert not [tool for tool in DOCUMENTATION_TOOLCHAIN if tool in install]
    assert "ICLLIB_MODE=quick" in run and f"notebooks/{source_archive.EXAMPLE_CHAPTER}.py" in run
    assert (ROOT / "notebooks" / f"{source_archive.EXAMPLE_CHAPTER}.py").is_file()
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    runtime = " ".join(pyproject["dependencies"] + pyproject["optional-dependencies"]["text"])
    assert not [tool for tool in DOCUMENTATION_TOOLCHAIN if tool in runtime], "the wheel's requirements"


def test_a_folder_that_is_not_the_book_is_refused(tmp_path):
    with pytest.raises(ValueError, match="root="):
        source_archive.write_archive(tmp_path, tmp_path / "x.tar.xz")


def test_these_tests_pass_in_the_unpacked_archive_which_has_no_git(archive, tmp_path):
    """The archive's README promises `make test`: no test of this file may need the repository's .git."""
    with tarfile.open(archive) as packed:
        packed.extractall(tmp_path, filter="data")
    folder = tmp_path / source_archive.TOP_FOLDER
    assert not (folder / ".git").exists()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                           "tests/test_source_archive.py", "-k", "not unpacked_archive"],
                          cwd=folder, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
