"""Run a chapter as a reader who downloaded its notebook would, with only the science stack (CI runs it).

    python tools/run_downloaded_notebook.py --site _build/html [--chapter scan_snap_text]

Takes the chapter's download (``_sources/notebooks/<chapter>.ipynb``) and the site's wheel (``wheels/``) into an
empty folder outside the clone, creates an empty virtual environment there with nothing but a notebook runner
(nbclient, ipykernel), and executes the notebook to its end in ``quick`` mode: its first cell installs icllib
from the wheel beside it, with only the wheel's own requirements (at the book's pins, ``requirements.txt`` as
pip's constraints). Fails when any chapter's download shows raw MyST (a role, a directive, a target) in a markdown
cell or numbers its exercises, figures or equations unlike its page, when the run notebook's first cell is not the
install cell, or when any of its cells fails. Exits non-zero on any failure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import notebook_conversion  # noqa: E402
import notebook_install  # noqa: E402

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
            for found in notebook_conversion.raw_myst("".join(cell["source"]))]


def numbers_differ(page_html: str, notebook: dict) -> list[str]:
    """Where the download's exercise, figure and equation numbers differ from its page's, in order."""
    from bs4 import BeautifulSoup

    page = BeautifulSoup(page_html, "html.parser")
    markdown = "\n".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "markdown")
    on_page = {
        "exercises": [match.group(0) for title in page.select("div.exercise p.admonition-title")
                      for match in [re.match(r"Exercise [\d.]+", " ".join(title.get_text().split()))] if match],
        "figures": [match.group(0) for caption in page.select("figcaption .caption-number")
                    for match in [re.match(r"Figure [\d.]+", caption.get_text().strip())] if match],
        "equations": [re.sub(r"[^\d.]", "", number.get_text()) for number in page.select("span.eqno")],
    }
    in_download = {"exercises": re.findall(r"\*\*(Exercise [\d.]+)\*\*", markdown),
                   "figures": re.findall(r"\*\*(Figure [\d.]+)\.\*\*", markdown),
                   "equations": re.findall(r"\\tag\{([\d.]+)\}", markdown)}
    return [f"{kind}: page {on_page[kind]}, download {in_download[kind]}" for kind in on_page
            if on_page[kind] != in_download[kind]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True, help="the built HTML folder, e.g. _build/html")
    parser.add_argument("--chapter", default=DEFAULT_CHAPTER, help=f"a chapter's name (default {DEFAULT_CHAPTER})")
    arguments = parser.parse_args()
    download = arguments.site / "_sources" / "notebooks" / f"{arguments.chapter}.ipynb"
    wheel = arguments.site / notebook_install.WHEEL_FOLDER / notebook_install.wheel_name(ROOT)
    for needed in (download, wheel):
        if not needed.is_file():
            print(f"no {needed}", file=sys.stderr)
            return 1
    for other in sorted((arguments.site / "_sources" / "notebooks").glob("*.ipynb")):
        # every chapter's download reads cleanly and numbers as its page does; one of them is then run
        chapter = json.loads(other.read_text(encoding="utf-8"))
        left = myst_left(chapter)
        if left:
            print(f"{other} shows raw MyST in plain Jupyter:\n  " + "\n  ".join(left[:20]), file=sys.stderr)
            return 1
        page = arguments.site / "notebooks" / f"{other.stem}.html"
        differ = numbers_differ(page.read_text(encoding="utf-8"), chapter) if page.is_file() else ["no page"]
        if differ:
            print(f"{other} is numbered unlike {page}:\n  " + "\n  ".join(differ), file=sys.stderr)
            return 1
    notebook = json.loads(download.read_text(encoding="utf-8"))
    if notebook_install.INSTALL_MARK not in notebook["cells"][0].get("metadata", {}).get("tags", []):
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
        executed = json.loads((folder / "executed.ipynb").read_text(encoding="utf-8"))
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
