"""The hash-locked install: ``requirements.lock`` and ``requirements-cuda.lock``, made from ``requirements.txt``.

``requirements.txt`` names the book's 34 direct pins; the lock pins every package they pull in as well, each with the
SHA-256 of every file of its release that pip may pick on some platform (Linux, macOS, Windows; x86_64 and ARM), so
that ``pip install --require-hashes --no-deps -r requirements.lock`` (the Makefile's ``.venv/.installed``, which
``make book`` and ``make test`` share) installs nothing that was not hashed here, on any of them.

- ``python tools/lock.py write --uv <uv>`` (what ``make lock`` runs): resolves ``requirements.txt`` for every
  platform with ``uv pip compile --universal --generate-hashes`` against PyPI, adds the hash of each wheel that
  exists only in pip's local ``find-links`` folders (this machine's ``torch-2.13.0+cpu``: see the lock's header),
  and splits torch's CUDA runtime into ``requirements-cuda.lock``.
- ``python tools/lock.py local-wheels``: a requirements file naming, as ``name @ file://...`` with its hash, each
  local wheel the lock lists (installed first: pip itself would prefer the index's files, whose hashes it can see).
- ``python tools/lock.py cuda-needed``: exit status 0 when the installed torch requires its CUDA runtime (PyPI's
  Linux wheel does, a CPU-only build does not), 1 otherwise.
- ``python tools/lock.py check``: every pin of ``requirements.txt`` is the lock's, each entry hashed; a pin edited
  without ``make lock`` stops the install with that command.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REQUIREMENTS = ROOT / "requirements.txt"
LOCK = ROOT / "requirements.lock"
CUDA_LOCK = ROOT / "requirements-cuda.lock"
# torch's CUDA runtime: what PyPI's Linux torch requires and a CPU-only torch does not.
CUDA_RUNTIME = re.compile(r"^(nvidia-.+|cuda-.+|triton)$")
PYTHON = "3.11"
INDEX = "https://pypi.org/simple"

HEADER = """\
# {name}: {what}, each pinned with the SHA-256 of every file of
# its release that pip may pick on some platform (Linux, macOS, Windows; x86_64 and ARM; resolved for Python {python}
# and later with `uv pip compile --universal --generate-hashes` against PyPI). The Makefile installs it with
# `pip install --require-hashes --no-deps`: a file whose hash is not listed here is refused.
# Generated from requirements.txt by `make lock` (tools/lock.py); do not edit by hand.
"""
LOCAL_NOTE = """\
#
# Wheels that exist only as local files (pip's find-links folder on the book's machines, not on PyPI) are added
# with their own hash to the entry of the release they build, so that pip may install them where they lie:
{files}
# Elsewhere pip takes PyPI's files of the same release (their hashes are all listed), so a Mac, Windows or a CUDA
# machine installs as before; torch's CUDA runtime, which PyPI's Linux torch requires and a CPU-only torch does not,
# is in requirements-cuda.lock, installed only when the torch installed asks for it (tools/lock.py cuda-needed).
"""


def pins(text: str) -> dict[str, str]:
    """``{normalised name: version}`` of the ``name==version`` lines of a requirements text."""
    found = {}
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==([^\s;\\]+)", line.strip())
        if match:
            found[normalise(match[1])] = match[3]
    return found


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(text: str) -> list[str]:
    """The lock's entries (a pin, its hashes and its ``# via`` comments), in order, without the header."""
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))   # the header's comments
    blocks = re.split(r"\n(?=[A-Za-z0-9])", "\n" + body)
    return [block.strip("\n") for block in blocks if re.match(r"^[A-Za-z0-9]", block.strip("\n"))]


def entry_name(entry: str) -> str:
    return normalise(re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)", entry)[1])


def hashes(entry: str) -> list[str]:
    return re.findall(r"--hash=sha256:([0-9a-f]{64})", entry)


def find_links() -> list[Path]:
    """The local folders pip's configuration searches (``find-links``), where wheels that are on no index lie."""
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
    folders = []
    for match in re.finditer(r"find-links='([^']*)'", listed):
        folders += [Path(part.removeprefix("file://")) for part in match[1].split()]
    return list(dict.fromkeys(folder.resolve() for folder in folders if folder.is_dir()))  # named twice: once


def local_wheels(folders: list[Path], pinned: dict[str, str]) -> dict[str, list[Path]]:
    """``{name: [wheel]}`` of the local wheels that build a pinned release (``torch-2.13.0+cpu`` builds 2.13.0)."""
    found: dict[str, list[Path]] = {}
    for folder in folders:
        for wheel in sorted(folder.glob("*.whl")):
            name, version = wheel.name.split("-")[:2]
            if pinned.get(normalise(name)) == version.split("+")[0]:
                found.setdefault(normalise(name), []).append(wheel)
    return found


LOCAL_LINE = re.compile(r"^#   (?P<file>\S+\.whl) \(sha256 (?P<digest>[0-9a-f]{64})\), from (?P<folder>\S+)$", re.MULTILINE)


def named_local_wheels(text: str) -> dict[str, tuple[str, str]]:
    """``{wheel file: (sha256, folder)}`` of the local wheels a lock's header names."""
    return {match["file"]: (match["digest"], match["folder"]) for match in LOCAL_LINE.finditer(text)}


def with_local_hashes(entry: str, wheels: dict[str, tuple[str, str]]) -> tuple[str, list[str]]:
    """The entry with each local wheel's hash (``{file: (sha256, folder)}``) added after PyPI's, and the header
    lines naming them."""
    lines = entry.splitlines()
    last_hash = max(index for index, line in enumerate(lines) if "--hash=" in line)
    notes = []
    for name, (digest, folder) in sorted(wheels.items()):
        if digest not in hashes(entry):
            lines[last_hash] = lines[last_hash] + " \\"
            lines.insert(last_hash + 1, f"    --hash=sha256:{digest}")
            last_hash += 1
        notes.append(f"#   {name} (sha256 {digest}), from {folder}")
    return "\n".join(lines), notes


def write(uv: str) -> None:
    with tempfile.TemporaryDirectory(prefix="icl-lock-") as scratch:
        compiled = Path(scratch) / "compiled.txt"
        subprocess.run([uv, "pip", "compile", str(REQUIREMENTS), "--universal", "--generate-hashes",
                        "--python-version", PYTHON, "--index-url", INDEX, "--no-header", "--quiet",
                        "--output-file", str(compiled)], check=True, cwd=ROOT)
        resolved = entries(compiled.read_text(encoding="utf-8"))
    pinned = pins("\n".join(resolved))
    # The local wheels found here, and those the present lock names that this machine lacks (a lock refreshed
    # elsewhere keeps the book's machines' CPU-only torch), as long as they build a release still pinned.
    wheels: dict[str, dict[str, tuple[str, str]]] = {}
    previous = named_local_wheels(LOCK.read_text(encoding="utf-8")) if LOCK.is_file() else {}
    for file, (digest, folder) in previous.items():
        name, version = file.split("-")[:2]
        if pinned.get(normalise(name)) == version.split("+")[0]:
            wheels.setdefault(normalise(name), {})[file] = (digest, folder)
    for name, found in local_wheels(find_links(), pinned).items():
        for wheel in found:
            wheels.setdefault(name, {})[wheel.name] = (hashlib.sha256(wheel.read_bytes()).hexdigest(), str(wheel.parent))
    main, cuda, notes = [], [], []
    for entry in resolved:
        name = entry_name(entry)
        if name in wheels:
            entry, named = with_local_hashes(entry, wheels[name])
            notes += named
        (cuda if CUDA_RUNTIME.match(name) else main).append(entry)
    local = LOCAL_NOTE.format(files="\n".join(notes)) if notes else ""
    LOCK.write_text(HEADER.format(name=LOCK.name, what="every package `make book` and `make test` install",
                                  python=PYTHON) + local + "\n" + "\n".join(main) + "\n", encoding="utf-8")
    CUDA_LOCK.write_text(HEADER.format(name=CUDA_LOCK.name, what="torch's CUDA runtime (PyPI's Linux torch needs it)",
                                       python=PYTHON) + "\n" + "\n".join(cuda) + "\n", encoding="utf-8")
    print(f"wrote {LOCK.name} ({len(main)} packages) and {CUDA_LOCK.name} ({len(cuda)})")


def local_requirements() -> list[str]:
    """``name @ file:///... --hash=sha256:...`` for each wheel in pip's find-links folders whose hash the lock lists:
    pip ranks the files whose hashes the index shows above a local file, so these go in first, by name, and the
    lock's own install then finds the release already there."""
    locked = {entry_name(entry): set(hashes(entry)) for entry in entries(LOCK.read_text(encoding="utf-8"))}
    lines = []
    for folder in find_links():
        for wheel in sorted(folder.glob("*.whl")):
            name = normalise(wheel.name.split("-")[0])
            if name in locked:
                digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
                if digest in locked[name]:
                    lines.append(f"{name} @ {wheel.resolve().as_uri()} --hash=sha256:{digest}")
    return lines


def cuda_needed() -> bool:
    """Whether the installed torch requires a package of torch's CUDA runtime on this machine."""
    from importlib import metadata

    try:
        from packaging.requirements import Requirement
    except ImportError:   # the lock installs packaging; pip carries its own copy
        from pip._vendor.packaging.requirements import Requirement
    for line in metadata.requires("torch") or []:
        requirement = Requirement(line)
        if CUDA_RUNTIME.match(normalise(requirement.name)) and (
                requirement.marker is None or requirement.marker.evaluate({"extra": ""})):
            return True
    return False


def problems() -> list[str]:
    """What makes the lock disagree with ``requirements.txt``: a pin missing or at another version, an entry
    without a hash."""
    wanted = pins(REQUIREMENTS.read_text(encoding="utf-8"))
    found = []
    locked = {}
    for path in (LOCK, CUDA_LOCK):
        if not path.is_file():
            return [f"{path.name} is missing"]
        for entry in entries(path.read_text(encoding="utf-8")):
            locked[entry_name(entry)] = pins(entry)[entry_name(entry)]
            if not hashes(entry):
                found.append(f"{path.name}: {entry.splitlines()[0]} has no hash")
    for name, version in wanted.items():
        if locked.get(name) != version:
            found.append(f"requirements.txt pins {name}=={version}, {LOCK.name} "
                         + (f"{name}=={locked[name]}" if name in locked else "does not hold it"))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    writer = commands.add_parser("write", help="regenerate the two lock files (make lock)")
    writer.add_argument("--uv", default="uv", help="the uv executable (make lock installs one under _build/)")
    commands.add_parser("local-wheels", help="print the local wheels the lock lists, as a requirements file")
    commands.add_parser("cuda-needed", help="exit 0 when the installed torch requires its CUDA runtime")
    commands.add_parser("check", help="the lock holds requirements.txt's pins, each hashed")
    arguments = parser.parse_args(argv)
    if arguments.command == "write":
        write(arguments.uv)
        return 0
    if arguments.command == "local-wheels":
        print("\n".join(local_requirements()))
        return 0
    if arguments.command == "cuda-needed":
        return 0 if cuda_needed() else 1
    found = problems()
    for problem in found:
        print(f"{problem}: run `make lock`", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
