"""The book's source as one download, so that a reader with only the site can run any chapter, and an instructor
can rebuild the book, its paper-scale archives and its course editions.

``icl-book-source.tar.xz`` (at the root of the built site) holds the repository as git tracks it (:data:`MEMBERS`:
the library with its registry, the chapter notebooks, the build's extensions and configuration, the book's pages,
the Makefile, the tools, the benchmarks, the archived paper-scale runs, the tests, the pins and licences), with a
README whose two commands run a chapter. It is written at the end of every HTML build and is byte-for-byte the
same for the same sources (sorted members, no dates, no owners), so an unchanged book publishes an unchanged
archive.

It packs what git tracks (``git ls-files``, the index: a staged new file counts), never what merely lies in
the folders: a generated ``.ipynb``, an editor's backup or a ``.env`` holding a secret stays out. Outside a git
checkout (a copy of the sources, the unpacked archive itself) it falls back to walking the folders, leaving out
hidden files, editor backups, notebooks' ``.ipynb`` and build outputs (:func:`source_files`).
"""

from __future__ import annotations

import io
import lzma
import subprocess
import tarfile
from pathlib import Path

ARCHIVE_NAME = "icl-book-source.tar.xz"
TOP_FOLDER = "icl-book-source"
# Everything the site tells a reader to use (make paper-scale, benchmarks/, _ext/, tools/, ...) and what `make book`,
# `make test`, `make paper-scale` and `make course` read; the repository's own README.md gives way to README below,
# and hidden files (.ci/, .gitignore) stay out.
MEMBERS = ("src", "notebooks", "_ext", "book", "benchmarks", "tools", "results", "tests", "site_tests",
           "Makefile", "_config.yml", "_toc.yml", "conftest.py", "requirements.txt", "requirements.lock",
           "requirements-cuda.lock", "pyproject.toml",
           "environment.yml", "CONTRIBUTING.md", "LICENSE", "LICENSE-TEXT", "CITATION.cff")
SKIPPED = {"__pycache__", ".ipynb_checkpoints", "_build"}
# The walk outside git leaves these out: what editors, notebooks and builds leave beside the sources.
SKIPPED_SUFFIXES = (".pyc", ".ipynb", "~", ".swp", ".swo", ".bak", ".orig", ".rej", ".tmp")
# The chapter the README runs: the shortest in quick mode (9 s on the book's machines), and the one that needs the
# `text` extra (gensim), so that running it from the README also proves the extra.
EXAMPLE_CHAPTER = "scan_snap_text"

README = f"""# How Transformers Learn In Context: the book's source

This archive is the book's repository as its website was built from it: the library `icllib` (`src/`, with the
claims registry in `src/icllib/registry/`), the chapter notebooks (`notebooks/*.py`, jupytext text notebooks),
the site's pages (`book/`, `_config.yml`, `_toc.yml`) and Sphinx extensions (`_ext/`), the `Makefile`, `tools/`,
`benchmarks/`, the archived paper-scale and deciding runs (`results/`, described as an RO-Crate in
`results/ro-crate-metadata.json`), the tests and the exact pins (`requirements.txt`, and
every package they pull in with its hashes in `requirements.lock`; `environment.yml` for conda).

## Run a chapter

Two commands, from this folder, with Python 3.11 or later (the first needs the package index; running needs no
network). They install `icllib` with only what the chapters import (torch, NumPy, SciPy, SymPy, matplotlib,
tqdm, PyYAML, and gensim for the text chapter), at the book's exact versions, plus a notebook runner (jupytext
reads the text notebook, nbconvert and ipykernel execute it), and run
`{EXAMPLE_CHAPTER}` (any name in `notebooks/` works) in `quick` mode:

```bash
python3 -m venv .venv && .venv/bin/python -m pip install -c requirements.txt ".[text]" jupytext nbconvert ipykernel
ICLLIB_MODE=quick .venv/bin/jupytext --execute --to ipynb notebooks/{EXAMPLE_CHAPTER}.py
```

The second writes the executed notebook `notebooks/{EXAMPLE_CHAPTER}.ipynb`; every claim the chapter checks is
asserted as it runs (a failed check stops it with the measured and expected values). Open it with
`.venv/bin/pip install jupyterlab && .venv/bin/jupyter lab`; the website's download of the chapter (its `.ipynb`
button) is the same notebook in plain Jupyter Markdown, with its cross-references as links.
`ICLLIB_MODE=default` gives the numbers on the website (minutes per chapter), `ICLLIB_MODE=full` the papers'
sizes (hours, or a GPU with `ICLLIB_DEVICE=cuda`).

## Rebuild the book

`make book` builds the website into `_build/html` (it installs the whole toolchain of `requirements.lock`, every
file checked against its hash, into `.venv` first); `make test` runs every test; `make paper-scale CHAPTER=<chapter>` runs a chapter at the paper's
sizes and archives its checks in `results/full/`; `make course` builds the student and instructor editions, where
the Makefile has that target. `CONTRIBUTING.md` explains how a chapter is written and checked; `python -m
benchmarks` times the kernels in `benchmarks/`. With `html.baseurl` set in `_config.yml` to where you publish the
site, each chapter's download installs `icllib` from your site (`wheels/`).

Licences: the code is MIT (`LICENSE`), the text and figures CC BY 4.0 (`LICENSE-TEXT`). To cite, see
`CITATION.cff`.
"""


def git_files(folder: Path) -> list[Path] | None:
    """The files under ``folder`` that git tracks (present in the working tree), sorted; None when ``folder``
    is not inside a git checkout or git tracks nothing under it (a copy placed inside another repository)."""
    folder = Path(folder)
    try:
        listed = subprocess.run(["git", "-C", str(folder), "ls-files", "-z", "--cached", "--", "."],
                                capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    files = sorted({folder / name for name in listed.decode().split("\0") if name})
    files = [path for path in files if path.is_file()]   # a tracked file deleted in the working tree is gone
    return files or None


def _walked(folder: Path) -> list[Path]:
    """The fallback outside git: every file under ``folder`` except hidden ones, editor backups, ``.ipynb``
    files, byte code and build outputs."""
    def kept(path: Path) -> bool:
        parts = path.relative_to(folder).parts
        return (path.is_file() and not SKIPPED & set(parts) and not any(part.startswith(".") for part in parts)
                and not any(".egg-info" in part for part in parts) and not path.name.endswith(SKIPPED_SUFFIXES)
                and not (path.name.startswith("#") and path.name.endswith("#")))
    return sorted(path for path in folder.rglob("*") if kept(path))


def source_files(folder: Path) -> list[Path]:
    """The source files under ``folder``: those git tracks (:func:`git_files`), or outside a git checkout the
    walk of :func:`_walked`. The execution keys (``_ext/executions.py``) and this archive read the same list."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder={str(folder)!r} is not a folder")
    return git_files(folder) or _walked(folder)


def _files(root: Path) -> list[Path]:
    files = []
    for name in MEMBERS:
        path = root / name
        if path.is_file():
            tracked = git_files(path.parent)
            if tracked is None or path in tracked:
                files.append(path)
        elif path.is_dir():
            files += source_files(path)
    return sorted(files, key=lambda file: file.relative_to(root).as_posix())


def _add(archive: tarfile.TarFile, name: str, data: bytes, executable: bool = False) -> None:
    info = tarfile.TarInfo(f"{TOP_FOLDER}/{name}")
    info.size = len(data)
    info.mode = 0o755 if executable else 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    archive.addfile(info, io.BytesIO(data))


def write_archive(root: Path, target: Path) -> Path:
    """Write the source archive of the book at ``root`` to ``target`` (a file path) and return it."""
    root = Path(root)
    if not (root / "src" / "icllib").is_dir():
        raise ValueError(f"root={str(root)!r} holds no src/icllib: not the book's source folder")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        _add(archive, "README.md", README.encode())
        for file in _files(root):
            _add(archive, file.relative_to(root).as_posix(), file.read_bytes())
    target.parent.mkdir(parents=True, exist_ok=True)
    # xz, not gzip: a quarter smaller (0.94 -> 0.71 MB of the site's 12 MB); tar, pip and Python's tarfile read it,
    # and its header holds no date or name, so the same sources give the same bytes
    target.write_bytes(lzma.compress(buffer.getvalue(), format=lzma.FORMAT_XZ, preset=9))
    return target


def archive_at_build_end(app, exception):
    """Sphinx ``build-finished``: the archive at the root of the site (a test's tiny book, which has no
    ``src/``, gets none)."""
    if exception is None and app.builder.format == "html" and (Path(app.srcdir) / "src" / "icllib").is_dir():
        if git_files(Path(app.srcdir) / "src") is None:
            from sphinx.util import logging

            logging.getLogger(__name__).info(f"{ARCHIVE_NAME}: not a git checkout, so the archive packs the files "
                                             "found under src/ and notebooks/ (no hidden files, editor backups or "
                                             ".ipynb)")
        write_archive(Path(app.srcdir), Path(app.outdir) / ARCHIVE_NAME)
