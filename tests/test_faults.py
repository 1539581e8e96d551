"""Faults a new user meets end in a correct build or a message naming the file or chapter, never in a stale page,
a lost run or a published untracked file.

Each test injects one fault into a tiny book (the real extension, conftest and a copy of icllib, so that a cell
may edit "its" library) or into a made-up cache, archive or git checkout:

- a module edited while a chapter executes (``make book``'s executor, the book build's reader, the notebook
  tests): nothing is stored and the message names the file;
- a stored execution damaged on disk (a truncated notebook, an empty or garbage facts file, a records file cut
  short or missing): a cache miss, named and removed;
- a kernel that dies: the message names the chapter and the cell; files left by killed processes are removed;
- untracked files beside the sources: in no execution key and not in the source archive;
- a paper-scale run with an unwritable archive folder: refused before the chapter starts; a run stopped by
  Ctrl-C: its records are on disk and can be archived as partial.
"""

import copy
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "_ext"))
import execution_keys  # noqa: E402
import executions  # noqa: E402
import paper_scale  # noqa: E402
import source_archive  # noqa: E402
from test_failing_notebook import make_tiny_book  # noqa: E402

CHECK = 'check_claim("tiny.two", 2.0, expected=2.0, atol=1e-12, why="exact arithmetic")'

# A cell that edits the icllib the kernel imported, as a person editing a module during `make test` would.
# It refuses to touch any copy but the test's own.
EDITING = '''# %%
from pathlib import Path

import icllib.config
from icllib.claims import check_claim

module = Path(icllib.config.__file__).resolve()
assert module.is_relative_to(Path({folder!r})), module
with module.open("a") as stream:
    stream.write("\\nEDITED_DURING_THE_RUN = True\\n")
''' + CHECK + "\n"


@pytest.fixture
def tiny_book(tmp_path):
    """A tiny book with its own copy of icllib (the kernels import it: PYTHONPATH)."""
    env = make_tiny_book(tmp_path, 2.0)
    shutil.copytree(ROOT / "src" / "icllib", tmp_path / "src" / "icllib", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", tmp_path / "requirements.txt")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "src"), env.get("PYTHONPATH")]))
    for name in ("ICLLIB_RESULTS", "ICLLIB_EXECUTIONS"):
        env.pop(name, None)
    return tmp_path, env


def run(command: list[str], folder: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=300)


def stored(folder: Path) -> list[Path]:
    return sorted((folder / "_build" / "executions").glob("*.ipynb"))


# --- A module edited while a chapter runs -------------------------------------------------------------------

READ_CHAPTER = ("import sys; sys.path.insert(0, '_ext'); import executions; "
                "executions.read_chapter(open('notebooks/tiny.py').read(), fmt='py:percent')")


@pytest.mark.parametrize("command", [
    [sys.executable, "_ext/executions.py", "notebooks/tiny.py"],   # make book's executor
    [sys.executable, "-c", READ_CHAPTER],                          # the book build's reader
    [str(BIN / "pytest"), "-p", "no:cacheprovider", "notebooks/tiny.py"],   # the notebook tests
], ids=["make-book", "book-build", "notebook-tests"])
def test_a_module_edited_while_a_chapter_runs_stores_nothing_and_says_so(tiny_book, command):
    folder, env = tiny_book
    (folder / "notebooks" / "tiny.py").write_text(EDITING.format(folder=str(folder)), encoding="utf-8")

    done = run(command, folder, env)

    output = done.stdout + done.stderr
    assert "EDITED_DURING_THE_RUN" in (folder / "src" / "icllib" / "config.py").read_text(encoding="utf-8"), output[-2000:]
    assert done.returncode != 0, output[-3000:]
    assert "icllib/config.py changed while" in output, output[-3000:]
    assert stored(folder) == []


# --- Damaged cache entries ----------------------------------------------------------------------------------

@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A stored execution of a one-cell notebook, keyed on a copy of icllib."""
    shutil.copytree(ROOT / "src" / "icllib", tmp_path / "icllib", ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(executions, "package_folder", lambda: tmp_path / "icllib")
    monkeypatch.delenv("ICLLIB_REGISTRY", raising=False)
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("Prose."),
                                               nbformat.v4.new_code_cell("print(2)")])
    executed = copy.deepcopy(notebook)
    executed.cells[1].outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    records = [json.dumps({"id": "lsa.eq36", "passed": True, "verdict": "reproduced"}),
               json.dumps({"id": "lsa.lemma51", "passed": True, "verdict": "reproduced"})]
    folder = tmp_path / "executions"
    key = executions.store(executed, "quick", records, {"notebook": "tiny.py", "seconds": 1.0,
                                                        "date": "2026-11-26 00:00 UTC"}, folder)
    assert executions.load(notebook, "quick", folder) is not None
    return notebook, folder, key


def cut_last_line(path: Path) -> None:
    path.write_text("".join(path.read_text(encoding="utf-8").splitlines(keepends=True)[:-1]), encoding="utf-8")


def half(text: str) -> str:
    return text[: len(text) // 2]


DAMAGE = {
    "truncated notebook": (".ipynb", lambda path: path.write_text(half(path.read_text(encoding="utf-8")),
                                                                  encoding="utf-8")),
    "empty facts": (".json", lambda path: path.write_text("", encoding="utf-8")),
    "garbage facts": (".json", lambda path: path.write_bytes(b"\x00\xff garbage")),
    "records cut mid-line": (".records.jsonl", lambda path: path.write_text(path.read_text(encoding="utf-8")[:-9],
                                                                            encoding="utf-8")),
    "records cut at a line": (".records.jsonl", cut_last_line),
    "records missing": (".records.jsonl", lambda path: path.unlink()),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_cache_entry_is_a_miss_named_and_removed(cache, capsys, damage):
    notebook, folder, key = cache
    suffix, harm = DAMAGE[damage]
    harm(folder / f"{key}{suffix}")

    assert executions.load(notebook, "quick", folder) is None

    message = capsys.readouterr().err
    assert f"{key}.ipynb: unreadable stored execution" in message and "executes again" in message
    assert not list(folder.glob(f"{key}*"))


def test_a_damaged_entry_heals_on_the_next_build(tiny_book):
    folder, env = tiny_book
    command = [sys.executable, "_ext/executions.py", "notebooks/tiny.py"]
    assert run(command, folder, env).returncode == 0
    [entry] = stored(folder)
    # a disk that filled up, a writer killed without rename
    entry.write_text(entry.read_text(encoding="utf-8")[:100], encoding="utf-8")

    done = run(command, folder, env)

    assert done.returncode == 0, done.stderr
    assert f"{entry}: unreadable stored execution" in done.stderr and "tiny.py: executing" in done.stdout
    assert stored(folder) == [entry] and nbformat.reads(entry.read_text(encoding="utf-8"), as_version=4).cells


def test_a_verdict_edited_in_the_registry_reuses_the_entry_with_todays_verdict(cache, tmp_path):
    notebook, folder, key = cache
    registry = tmp_path / "icllib" / "registry" / "lsa.yaml"
    text = registry.read_text(encoding="utf-8")
    edited = text.replace("affect the prediction.\n", "affect the prediction (reworded).\n", 1)
    registry.write_text(edited.replace("    verdict: reproduced\n  - id: lsa.lemma51",
                                       "    verdict: beyond the paper\n  - id: lsa.lemma51", 1), encoding="utf-8")
    assert registry.read_text(encoding="utf-8") != text
    execution = executions.load(notebook, "quick", folder)
    assert execution is not None and executions.key(notebook, "quick") == key
    assert [json.loads(line)["verdict"] for line in execution.records] == ["beyond the paper", "reproduced"]


def test_a_garbage_facts_file_of_an_unrelated_entry_is_removed_not_fatal(cache, capsys):
    _, folder, key = cache
    (folder / "0123abcd.json").write_text("{not json", encoding="utf-8")
    (folder / "0123abcd.ipynb").write_text("{}", encoding="utf-8")

    assert executions.last_seconds(Path("notebooks/tiny.py"), "quick", folder) == 1.0

    assert "0123abcd.json" in capsys.readouterr().err
    assert not list(folder.glob("0123abcd*")) and (folder / f"{key}.json").is_file()


# --- A dead kernel, and what killed processes leave ---------------------------------------------------------

def test_a_dead_kernel_names_its_chapter_and_files_of_dead_processes_are_removed(tiny_book):
    folder, env = tiny_book
    (folder / "notebooks" / "tiny.py").write_text("# %%\nprint('first')\n\n# %%\nimport os\n\nos._exit(3)\n",
                                                  encoding="utf-8")
    cache, kernels = folder / "_build" / "executions", folder / "_build" / "kernels"
    dead, alive = 999_999_999, os.getpid()   # above any pid_max: no such process
    left = [cache / f".records.{dead}.tiny.jsonl", cache / f".abc.ipynb.{dead}", kernels / f"{dead}-tiny-0.json"]
    kept = [cache / f".records.{alive}.tiny.jsonl", kernels / f"{alive}-tiny-0.json"]
    for path in left + kept:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", encoding="utf-8")

    done = run([sys.executable, "_ext/executions.py", "notebooks/tiny.py"], folder, env)

    assert done.returncode == 1
    assert "tiny.py failed in mode 'quick':\nits kernel died in cell 2 ('import os')" in done.stderr, done.stderr
    assert not [path for path in left if path.exists()] and all(path.exists() for path in kept)
    assert stored(folder) == [] and not [path for path in kernels.iterdir() if path not in kept]


# --- Untracked files ------------------------------------------------------------------------------------------

UNTRACKED = ("src/icllib/.env", "src/icllib/config.py~", "src/icllib/.config.py.swp", "src/icllib/scratch.py",
             "src/icllib/registry/draft.json", "notebooks/lsa.ipynb", "notebooks/.lsa.py.swp")


def git(folder: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t", *arguments],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A git checkout of the book's sources (what the source archive packs)."""
    for name in source_archive.MEMBERS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, tmp_path / name,
                            ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.ipynb", ".*"))
        elif (ROOT / name).is_file():
            shutil.copy(ROOT / name, tmp_path / name)
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "--", ".")
    monkeypatch.delenv("ICLLIB_REGISTRY", raising=False)
    return tmp_path


def keys(folder: Path) -> dict[str, str]:
    return {path.stem: executions.key(executions.read_source(path), mode, root=folder,
                                      package=folder / "src" / "icllib")
            for path in sorted((folder / "notebooks").glob("*.py")) for mode in ("quick",)}


def members(folder: Path) -> list[str]:
    archive = source_archive.write_archive(folder, folder.parent / f"{folder.name}.tar.xz")
    return tarfile.open(archive).getnames()


def test_an_untracked_file_is_in_no_key_and_not_in_the_source_archive(checkout):
    before_keys, before_members = keys(checkout), members(checkout)
    assert f"{source_archive.TOP_FOLDER}/src/icllib/config.py" in before_members
    for name in UNTRACKED:
        (checkout / name).write_text("SECRET = 'do not publish'\n", encoding="utf-8")

    assert keys(checkout) == before_keys
    after = members(checkout)
    assert after == before_members
    assert not [name for name in after if "SECRET" in name or name.endswith((".env", "~", ".swp", ".ipynb"))]


def test_a_tracked_edit_changes_the_key_and_a_staged_file_is_packed(checkout):
    before_keys = keys(checkout)
    (checkout / "src" / "icllib" / "scratch.py").write_text("X = 1\n", encoding="utf-8")
    git(checkout, "add", "--", "src/icllib/scratch.py")
    assert f"{source_archive.TOP_FOLDER}/src/icllib/scratch.py" in members(checkout)
    with (checkout / "src" / "icllib" / "config.py").open("a", encoding="utf-8") as stream:
        stream.write("\n# edited\n")
    assert all(keys(checkout)[chapter] != key for chapter, key in before_keys.items())


def test_outside_git_the_walk_leaves_hidden_files_backups_and_notebooks_out(checkout):
    shutil.rmtree(checkout / ".git")
    for name in UNTRACKED:
        (checkout / name).write_text("SECRET = 'do not publish'\n", encoding="utf-8")
    names = members(checkout)
    assert f"{source_archive.TOP_FOLDER}/src/icllib/config.py" in names
    assert not [name for name in names if name.endswith((".env", "~", ".swp", ".ipynb"))]


# --- Paper scale: an unwritable archive, a run stopped half way -----------------------------------------------

PAPER_REGISTRY = """
chapter: tiny
title: A tiny chapter
page: notebooks/tiny
paper: tian2023scan
claims:
  - id: tiny.two
    location: Eq. 1
    statement: the measured value is two
    verdict: reproduced
"""

STOPPING = """# %%
from pathlib import Path

from icllib.claims import check_claim, save_arrays

Path("started").write_text("the chapter ran")
check_claim("tiny.two", 2.0, expected=2.0, atol=1e-12, why="exact arithmetic")
save_arrays("series", steps=[0, 1])

# %%
import time

time.sleep(120)

# %%
print("never reached")
"""


@pytest.fixture
def paper_book(tmp_path, monkeypatch):
    (tmp_path / "_config.yml").write_text("title: tiny\n", encoding="utf-8")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "tiny.py").write_text(STOPPING, encoding="utf-8")
    (tmp_path / "registry").mkdir()
    (tmp_path / "registry" / "tiny.yaml").write_text(PAPER_REGISTRY, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ICLLIB_REGISTRY", str(tmp_path / "registry"))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")])))
    return tmp_path


def test_an_unwritable_archive_folder_is_refused_before_the_chapter_starts(paper_book):
    (paper_book / "blocked").write_text("a file where the archive's folder should be", encoding="utf-8")
    started = time.perf_counter()
    with pytest.raises(ValueError, match="folder '.*blocked/full' cannot be written"):
        paper_scale.run_chapter("tiny", paper_book / "blocked" / "full")
    assert not (paper_book / "notebooks" / "started").exists() and time.perf_counter() - started < 5
    done = subprocess.run([sys.executable, str(ROOT / "_ext" / "paper_scale.py"), "all", "--folder", "blocked/full"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "cannot be written" in done.stderr


def test_a_run_whose_process_was_killed_is_archived_as_partial_from_what_reached_the_disk(paper_book):
    folder = paper_book / "results" / "full"
    work = paper_scale.running_folder("tiny", folder)
    work.mkdir(parents=True)
    (work / "pid").write_text("999999999", encoding="utf-8")   # no such process: killed with -9, or the machine went down
    (work / "header.json").write_text(json.dumps({
        "chapter": "tiny", "mode": "full", "commit": "abc1234", "date": "2026-11-26 01:00 UTC", "machine": "m",
        "threads": 1, "versions": {}, "cells": 3}), encoding="utf-8")
    check = {"id": "tiny.two", "measured": 2.0, "expected": 2.0, "tolerance": "atol=1e-12", "passed": True,
             "why": "exact", "mode": "full"}
    (work / "records.jsonl").write_text(json.dumps(check) + "\n" + json.dumps(check)[:30],   # a half-written line
                                        encoding="utf-8")
    (work / "cells.jsonl").write_text(json.dumps({"cell": 1, "status": "ok", "seconds": 3600.0}) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match="a stopped full run of it is on disk .* ran 1 of 3 cells and kept 1 records"):
        paper_scale.run_chapter("tiny", folder)

    target = paper_scale.archive_partial("tiny", folder)

    run = paper_scale.read_run(target)
    assert (run["partial"], run["cells_run"], run["cells"], run["wall_s"]) == (True, 1, 3, 3600.0)
    assert run["stopped"].startswith("its process ended before the last cell")
    assert [record["id"] for record in run["records"]] == ["tiny.two"] and not work.exists()
    with pytest.raises(ValueError, match="no stopped full run"):
        paper_scale.archive_partial("tiny", folder)


def test_a_run_stopped_by_ctrl_c_keeps_its_records_and_archives_them_as_partial(paper_book):
    command = [sys.executable, str(ROOT / "_ext" / "paper_scale.py"), "tiny"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    work = paper_scale.running_folder("tiny", paper_book / "results" / "full")
    deadline = time.monotonic() + 120
    while not ((work / "cells.jsonl").is_file() and (work / "cells.jsonl").read_text(encoding="utf-8").strip()):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)   # Ctrl-C, an hour into a two-hour cell
    _, errors = process.communicate(timeout=60)

    assert process.returncode == 130, errors
    assert "stopped by Ctrl-C" in errors and "--archive-partial" in errors
    assert [json.loads(line)["id"] for line in (work / "records.jsonl").read_text(encoding="utf-8").splitlines()
            if "id" in json.loads(line)] == ["tiny.two"]
    again = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "a stopped full run of it is on disk" in again.stderr
    assert not (paper_book / "results" / "full" / "tiny.json").exists()

    archived = subprocess.run([*command, "--archive-partial"], capture_output=True, text=True, timeout=60)

    assert archived.returncode == 0, archived.stderr
    run = json.loads((paper_book / "results" / "full" / "tiny.json").read_text(encoding="utf-8"))
    assert run["partial"] is True and (run["cells_run"], run["cells"]) == (1, 3)
    assert run["stopped"] == "stopped by Ctrl-C in cell 2 ('import time')"
    assert [record["id"] for record in run["records"]] == ["tiny.two"] and "series" in run["arrays"]
    assert not (paper_book / "results" / "full" / ".running").exists()
    [row] = [row for row in paper_scale.status_rows() if row[0] == "tiny"]
    assert row[1].endswith("(partial)") and row[5].startswith("partial run: 1 of 3 cells, stopped by Ctrl-C")
    assert "partial full run of tiny" in paper_scale.paper_scale_summary("tiny.two", paper_scale.archived_records())


@pytest.mark.parametrize(("call", "parameter"), [
    (lambda: executions.process_alive(-1), "pid"), (lambda: executions.process_alive("1"), "pid"),
    (lambda: execution_keys.checked_claims("check_claim('a.b', 1)"), "sources"),
    (lambda: source_archive.source_files(Path("/no/such/folder")), "folder"),
    (lambda: paper_scale.running_folder("../lsa"), "name"), (lambda: paper_scale.code_since({}, ROOT), "run"),
    (lambda: paper_scale.check_writable(Path("/proc/no-such/full")), "folder"),
])
def test_bad_input_to_the_new_helpers_is_refused_naming_the_parameter(call, parameter):
    with pytest.raises(ValueError, match=parameter):
        call()
