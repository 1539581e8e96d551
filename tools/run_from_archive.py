"""Run a chapter from the source archive of a built site, as a reader with only the site would (CI runs it).

    python tools/run_from_archive.py --site _build/html

Unpacks ``icl-book-source.tar.xz`` into an empty temporary folder outside the clone, runs the two commands of
the archive's README there (a fresh virtual environment with only the science stack and a notebook runner, then
one chapter in quick mode) and checks that the executed notebook has outputs and no error. Exits non-zero on any
failure.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "_ext"))
import source_archive  # noqa: E402


def readme_commands(readme: str) -> list[str]:
    block = re.search(r"```bash\n(.*?)```", readme, re.DOTALL)
    if block is None:
        raise ValueError("the archive's README has no ```bash block of commands")
    return [line for line in block.group(1).splitlines() if line.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, required=True, help="the built HTML folder, e.g. _build/html")
    site = parser.parse_args().site
    archive = site / source_archive.ARCHIVE_NAME
    if not archive.is_file():
        print(f"no {archive}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="icl-archive-") as empty:
        with tarfile.open(archive) as tar:
            tar.extractall(empty, filter="data")
        folder = Path(empty) / source_archive.TOP_FOLDER
        for command in readme_commands((folder / "README.md").read_text(encoding="utf-8")):
            print(f"$ {command}", flush=True)
            # a clean environment: nothing of the clone's .venv or of the CI's variables leaks in
            environment = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(Path.home()), "LANG": "C.UTF-8"}
            subprocess.run(["bash", "-eo", "pipefail", "-c", command], cwd=folder, env=environment, check=True)
        executed = json.loads((folder / "notebooks" / f"{source_archive.EXAMPLE_CHAPTER}.ipynb").read_text(encoding="utf-8"))
        outputs = [output for cell in executed["cells"] for output in cell.get("outputs", [])]
        errors = [output for output in outputs if output.get("output_type") == "error"]
        if not outputs or errors:
            print(f"the chapter ran with {len(outputs)} outputs and {len(errors)} errors", file=sys.stderr)
            return 1
        print(f"{source_archive.EXAMPLE_CHAPTER} ran from the archive: {len(outputs)} outputs, no error")
    return 0


if __name__ == "__main__":
    sys.exit(main())
