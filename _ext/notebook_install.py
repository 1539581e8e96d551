"""The download's install cell and the wheel it installs: a chapter downloaded from the site installs ``icllib``
where it is missing, from the exact wheel the site offers (pinned by SHA-256), else from the source archive.

:func:`add_install_cell` puts that cell first in a plain notebook (``notebook_conversion``); the build writes the
wheel into the site's ``wheels/`` (:func:`wheel_at_build_end`), from the files git tracks (:func:`build_wheel`).
"""

from __future__ import annotations

import copy
import json
import re
from functools import cache
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]


INSTALL_MARK = "icl-book-install"
WHEEL_FOLDER = "wheels"


def needs_text_extra(notebook, library: Path = ROOT / "src" / "icllib") -> bool:
    """Whether the chapter imports gensim, itself or through an ``icllib`` module that imports it."""
    library = Path(library)
    with_gensim = {".".join(path.relative_to(library).with_suffix("").parts) for path in library.rglob("*.py")
                   if re.search(r"^\s*(from|import)\s+gensim", path.read_text(encoding="utf-8"), re.MULTILINE)}
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    imported = re.findall(r"^[ \t]*from\s+icllib((?:\.\w+)*)\s+import\s+(\([^)]*\)|[^\n]+)", code, re.MULTILINE)
    names = {f"{package}.{name.split()[0]}".lstrip(".") for package, group in imported
             for name in group.strip("()").split(",") if name.strip()}
    names |= {package.lstrip(".") for package, _ in imported if package}
    names |= set(re.findall(r"icllib\.([\w.]*\w)", code))
    prefixes = {".".join(name.split(".")[:depth]) for name in names for depth in range(1, name.count(".") + 2)}
    return bool(re.search(r"^\s*(from|import)\s+gensim", code, re.MULTILINE)) or bool(prefixes & with_gensim)


GLUE_SHIM = [
    "",
    "if importlib.util.find_spec(\"myst_nb\") is None:",
    "    # the chapter glues values into the site's prose, and this notebook's text already holds them: outside the",
    "    # book's toolchain (myst-nb), glue() only shows a value it is asked to display",
    "    import types",
    "    from IPython.display import display as show",
    "    myst_nb = types.ModuleType(\"myst_nb\")",
    "    myst_nb.glue = lambda name, variable, display=True: show(variable) if display else None",
    "    sys.modules[\"myst_nb\"] = myst_nb",
]


def imports_myst_nb(notebook) -> bool:
    """Whether a code cell imports myst-nb (its ``glue``), which only the book's toolchain installs."""
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    return bool(re.search(r"^\s*(from\s+myst_nb\s+import|import\s+myst_nb)", code, re.MULTILINE))


def install_source(*, wheel_name: str, wheel_sha256: str | None, site_url: str | None, text_extra: bool,
                   archive_name: str, glue_shim: bool = False) -> str:
    """The code of the first cell: install ``icllib`` where it is missing, from the site (HTTPS only) when its URL
    is known, else from the wheel or the source archive beside the notebook; otherwise stop with what to
    download. The wheel is named exactly and pinned by its SHA-256 (``wheel_sha256``, the site's wheel is the same
    bytes for the same sources), so another ``icllib-*.whl`` lying beside the notebook never wins; an ``icllib``
    of another version than the wheel's is refused, not run. ``wheel_sha256`` None: the book offers no wheel (a
    test's tiny book), and the cell installs from the archive only. With ``glue_shim``, a chapter that glues
    values (``from myst_nb import glue``) runs without myst-nb.

    Raises ``ValueError`` naming ``site_url`` for an address that is not ``https://``, and ``wheel_sha256`` for
    one that is not 64 hexadecimal digits."""
    if site_url is not None and (not isinstance(site_url, str) or not re.match(r"^https://[^\s/]+", site_url.strip())):
        raise ValueError(f"site_url={site_url!r} must be an https:// address or None (a wheel over http can be "
                         "swapped on the way)")
    if wheel_sha256 is not None and (not isinstance(wheel_sha256, str) or not re.fullmatch(r"[0-9a-f]{64}",
                                                                                         wheel_sha256)):
        raise ValueError(f"wheel_sha256={wheel_sha256!r} must be the wheel's SHA-256 (64 hexadecimal digits) or None")
    extra = "[text]" if text_extra else ""
    modules = '"icllib", "gensim"' if text_extra else '"icllib"'
    version = wheel_name.split("-")[1]
    wheel_url = f"{site_url.strip().rstrip('/')}/{WHEEL_FOLDER}/{wheel_name}" if site_url and wheel_sha256 else None
    lines = [
        f"# {INSTALL_MARK}: this chapter needs icllib, the book's library (and the science stack it pins).",
        "# Where it is missing (Colab, Binder, a fresh Jupyter) this cell installs it; where it is there, it does",
        "# nothing. ICLLIB_MODE=quick in the kernel's environment gives the one-minute run, the default the site's.",
        "import hashlib, importlib.metadata, importlib.util, pathlib, subprocess, sys",
        "",
        f"WANTED = \"{version}\"  # the icllib this chapter was built with",
        "try:",
        "    found = importlib.metadata.version(\"icllib\")",
        "except importlib.metadata.PackageNotFoundError:",
        "    found = None",
        "if found is not None and found != WANTED:",
        "    raise RuntimeError(f\"icllib {found} is installed, this chapter needs icllib {WANTED}: run it in a fresh \"",
        "                       \"environment, or pip uninstall icllib first\")",
        f"if any(importlib.util.find_spec(name) is None for name in ({modules},)):",
        "    here = pathlib.Path.cwd()",
        f"    wheel = here / \"{wheel_name}\"",
        f"    archive = here / \"{archive_name}\"",
    ]
    # Where icllib comes from, first match wins: the exact wheel beside the notebook, the site, the archive.
    branches = []
    if wheel_sha256:
        lines += [
            f"    SHA256 = \"{wheel_sha256}\"",
            "    if wheel.is_file() and hashlib.sha256(wheel.read_bytes()).hexdigest() != SHA256:",
            "        raise RuntimeError(f\"{wheel} is not the wheel this chapter was built with (another SHA-256): \"",
            "                           \"download it again from the book's site\")",
        ]
        branches.append(("wheel.is_file()", f"source = f\"icllib{extra} @ {{wheel.resolve().as_uri()}}#sha256={{SHA256}}\""))
    if wheel_url:
        branches.append((None, f"source = f\"icllib{extra} @ {wheel_url}#sha256={{SHA256}}\""))
    else:
        branches.append(("archive.is_file()", f"source = f\"icllib{extra} @ {{archive.resolve().as_uri()}}\""))
        offered = f"{wheel_name} (the book site's {WHEEL_FOLDER}/ folder) or " if wheel_sha256 else ""
        branches.append((None, f"raise RuntimeError(\"icllib is not installed. Download {offered}{archive_name} \"\n"
                               f"                           \"(the site's front page) into \" + str(here) + \", then "
                               f"run this cell again.\")"))
    for index, (condition, body) in enumerate(branches):
        keyword = "else:" if condition is None else f"{'elif' if index else 'if'} {condition}:"
        lines += [f"    {keyword}", f"        {body}"]
    lines += [
        "    print(f\"installing {source} ...\", flush=True)",
        "    subprocess.run([sys.executable, \"-m\", \"pip\", \"install\", \"-q\", source], check=True)",
        "    importlib.invalidate_caches()",
    ]
    return "\n".join(lines + (GLUE_SHIM if glue_shim else []))


def add_install_cell(notebook, *, wheel_name: str, site_url: str | None, wheel_sha256: str | None = None,
                     archive_name: str = "icl-book-source.tar.xz") -> nbformat.NotebookNode:
    """``notebook`` with :func:`install_source`'s cell first (tagged ``icl-book-install``; a notebook that has one
    keeps one). The text chapter's cell installs the ``text`` extra (gensim); a chapter that glues values gets
    a stand-in for myst-nb's ``glue`` where myst-nb is missing."""
    if not isinstance(wheel_name, str) or not re.match(r"^[\w.]+-[\w.+]+-[\w.]+-[\w.]+-[\w.]+\.whl$", wheel_name):
        raise ValueError(f"wheel_name={wheel_name!r} is not a wheel's file name")
    notebook = nbformat.from_dict(copy.deepcopy(dict(notebook)))
    notebook.cells = [cell for cell in notebook.cells if INSTALL_MARK not in cell.get("metadata", {}).get("tags", [])]
    cell = nbformat.v4.new_code_cell(install_source(wheel_name=wheel_name, wheel_sha256=wheel_sha256, site_url=site_url,
                                                    text_extra=needs_text_extra(notebook), archive_name=archive_name,
                                                    glue_shim=imports_myst_nb(notebook)),
                                     metadata={"tags": [INSTALL_MARK]})
    if notebook.cells and "id" in notebook.cells[0]:
        cell.id = INSTALL_MARK
    else:
        cell.pop("id", None)
    notebook.cells.insert(0, cell)
    return notebook


def write_compact(notebook, target: Path) -> Path:
    """Write ``notebook`` as compact JSON (about 6 % of the site's weight less than nbformat's indentation)."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(notebook, separators=(",", ":"), ensure_ascii=False), encoding="utf-8")
    return target



# ---------------------------------------------------------------------------------------------------------------
# The wheel

def wheel_name(root: Path = ROOT) -> str:
    """The file name of the icllib wheel the site offers (pure Python: ``py3-none-any``)."""
    import tomllib

    pyproject = Path(root) / "pyproject.toml"
    if pyproject.is_file():
        project = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]
        name, version = project["name"], project["version"]
    else:   # a test's tiny book, built against the installed library
        from importlib import metadata

        name, version = "icllib", metadata.version("icllib")
    return f"{name.replace('-', '_')}-{version}-py3-none-any.whl"


def build_wheel(root: Path, folder: Path) -> Path:
    """Build ``icllib`` as a wheel into ``folder`` and return its path: from the files git tracks (copied to a
    temporary folder, so the build leaves no ``build/`` or ``.egg-info`` in the tree), offline (no build isolation,
    no index: setuptools from the book's environment), and byte for byte the same for the same sources (the
    files' dates fixed by ``SOURCE_DATE_EPOCH``)."""
    import os
    import shutil
    import subprocess
    import sys
    import tempfile

    import source_archive

    root, folder = Path(root), Path(folder)
    if not (root / "src" / "icllib").is_dir() or not (root / "pyproject.toml").is_file():
        raise ValueError(f"root={str(root)!r} holds no pyproject.toml and src/icllib: not the book's source folder")
    with tempfile.TemporaryDirectory(prefix="icllib-wheel-") as scratch:
        copy = Path(scratch) / "icllib"
        files = [root / "pyproject.toml", *(root / name for name in ("README.md", "LICENSE") if (root / name).is_file()),
                 *source_archive.source_files(root / "src")]
        for file in files:
            (copy / file.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(file, copy / file.relative_to(root))
        environment = {**os.environ, "SOURCE_DATE_EPOCH": "315532800", "PIP_NO_INDEX": "1",
                       "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
        built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                                "--wheel-dir", str(Path(scratch) / "out"), str(copy)],
                               capture_output=True, text=True, env=environment)
        if built.returncode != 0:
            raise RuntimeError(f"pip wheel failed:\n{built.stdout[-2000:]}\n{built.stderr[-2000:]}")
        wheel = next((Path(scratch) / "out").glob("*.whl"))
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / wheel.name
        shutil.copyfile(wheel, target)
    return target


def _is_the_book(root: Path) -> bool:
    return (Path(root) / "src" / "icllib").is_dir() and (Path(root) / "pyproject.toml").is_file()


@cache
def wheel_digest(root: Path = ROOT) -> str | None:
    """The SHA-256 of the wheel :func:`build_wheel` makes from ``root`` (built once per process in a scratch folder:
    the wheel is the same bytes for the same sources), which the install cells pin; None for a test's tiny book,
    which offers no wheel."""
    import hashlib
    import tempfile

    if not _is_the_book(root):
        return None
    with tempfile.TemporaryDirectory(prefix="icllib-digest-") as scratch:
        return hashlib.sha256(build_wheel(Path(root), Path(scratch)).read_bytes()).hexdigest()


def wheel_at_build_end(app, exception):
    """Sphinx ``build-finished``: the icllib wheel in the site's ``wheels/`` (a test's tiny book, which has no
    ``src/`` or no ``pyproject.toml``, gets none)."""
    root = Path(app.srcdir)
    if exception is None and app.builder.format == "html" and _is_the_book(root):
        built = build_wheel(root, Path(app.outdir) / WHEEL_FOLDER)
        if built.name != wheel_name(root):
            raise RuntimeError(f"the wheel is {built.name}, the notebooks' install cells name {wheel_name(root)}")
        import hashlib

        if hashlib.sha256(built.read_bytes()).hexdigest() != wheel_digest(root):
            raise RuntimeError(f"the wheel {built.name} is not the one the notebooks' install cells pin by SHA-256 "
                               "(a library file changed during the build): build again")
