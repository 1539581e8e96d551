"""Run a chapter as a reader who downloaded its notebook would, with only the science stack (CI runs it).

    python tools/run_downloaded_notebook.py --site _build/html [--chapter scan_snap_text]

Takes the chapter's download (``_sources/notebooks/<chapter>.ipynb``) and the site's wheel (``wheels/``) into an
empty folder outside the clone, creates an empty virtual environment there with nothing but a notebook runner
(nbclient, ipykernel), and executes the notebook to its end in ``quick`` mode: its first cell installs icllib
from the wheel beside it, with only the wheel's own requirements (at the book's pins, ``requirements.txt`` as
pip's constraints). Fails when the notebook shows any raw MyST (a role, a directive, a target) in a markdown cell,
when its first cell is not the install cell, or when any cell fails. Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import notebook_download  # noqa: E402

DEFAULT_CHAPTER = "scan_snap_text"   # the shortest in quick mode, and the one that needs the text extra (gensim)
RUNNER = ("nbclient", "ipykernel")
EXECUTE = """
import sys, nbclient, nbformat
notebook = nbformat.read(sys.argv[1], as_version=4)
nbclient.NotebookClient(notebook, kernel_name="python3", timeout=1800,
                        resources={"metadata": {"path": sys.argv[2]}}).execute()
nbformat.write(notebook, sys.argv[3])
"""


def myst_left(notebook: dict) -> list[str]:
    """The raw MyST (roles, directive fences, targets, labelled equations) in the notebook's markdown cells."""
    return [f"cell {index}: {found}" for index, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "markdown"
            for found in notebook_download.raw_myst("".join(cell["source"]))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True, help="the built HTML folder, e.g. _build/html")
    parser.add_argument("--chapter", default=DEFAULT_CHAPTER, help=f"a chapter's name (default {DEFAULT_CHAPTER})")
    arguments = parser.parse_args()
    download = arguments.site / "_sources" / "notebooks" / f"{arguments.chapter}.ipynb"
    wheel = arguments.site / notebook_download.WHEEL_FOLDER / notebook_download.wheel_name(ROOT)
    for needed in (download, wheel):
        if not needed.is_file():
            print(f"no {needed}", file=sys.stderr)
            return 1
    notebook = json.loads(download.read_text())
    left = myst_left(notebook)
    if left:
        print(f"{download} shows raw MyST in plain Jupyter:\n  " + "\n  ".join(left[:20]), file=sys.stderr)
        return 1
    if notebook_download.INSTALL_MARK not in notebook["cells"][0].get("metadata", {}).get("tags", []):
        print(f"{download}: the first cell is not the cell that installs icllib", file=sys.stderr)
        return 1
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="icl-download-") as empty:
        folder = Path(empty) / "reader"
        folder.mkdir()
        shutil.copy(download, folder / download.name)
        shutil.copy(wheel, folder / wheel.name)   # as a reader who downloaded both puts them side by side
        # a clean environment: nothing of the clone's .venv or of the CI's variables leaks in; pip keeps the machine's
        # configured indexes (/etc/pip.conf) and takes the book's pins as constraints
        environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8",
                       "ICLLIB_MODE": "quick", "PIP_CONSTRAINT": str(ROOT / "requirements.txt"),
                       "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                       **{key: value for key, value in os.environ.items() if key.lower().endswith("_proxy")}}
        venv = Path(empty) / "venv"
        steps = [[sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", *RUNNER],
                 [str(venv / "bin" / "python"), "-c", EXECUTE, str(folder / download.name), str(folder),
                  str(folder / "executed.ipynb")]]
        for step in steps:
            print("$ " + " ".join(part if "\n" not in part else "<nbclient>" for part in step), flush=True)
            subprocess.run(step, cwd=folder, env=environment, check=True)
        installed = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "list", "--format=freeze"],
                                   capture_output=True, text=True, env=environment, check=True).stdout
        toolchain = [line for line in installed.splitlines()
                     if line.split("==")[0].lower() in {"jupyter-book", "sphinx", "myst-nb", "pytest", "black", "nbval",
                                                         "jupytext"}]
        if toolchain:
            print(f"the documentation toolchain came in: {toolchain}", file=sys.stderr)
            return 1
        executed = json.loads((folder / "executed.ipynb").read_text())
        outputs = [output for cell in executed["cells"] for output in cell.get("outputs", [])]
        errors = [output for output in outputs if output.get("output_type") == "error"]
        if not outputs or errors:
            print(f"the chapter ran with {len(outputs)} outputs and {len(errors)} errors", file=sys.stderr)
            return 1
    print(f"{arguments.chapter} ran from its download in an empty environment: {len(outputs)} outputs, no error, "
          f"{time.time() - started:.0f} s (packages installed: {len(installed.splitlines())})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
