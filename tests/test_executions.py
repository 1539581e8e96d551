"""The execution cache never serves a stale number and never re-runs a chapter for a prose edit.

Unit tests of the key on a made-up package, the real chapters' dependencies, and then the whole loop on a
tiny book whose icllib is a copy the test may edit: a prose edit rebuilds without executing, an edit to a
module the chapter imports re-executes it (the page shows the new output), an edit to a module it does not
import does not, and the notebook tests' run is what the build that follows shows.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "_ext"))
import execution_keys  # noqa: E402
import executions  # noqa: E402
from test_failing_notebook import make_tiny_book  # noqa: E402


REGISTRY_ROW = """
  - id: {chapter}.{name}
    location: Eq. 1
    statement: the value is one
    verdict: reproduced
"""


def registry_text(chapter: str, rows: str) -> str:
    return f"chapter: {chapter}\ntitle: A chapter\npage: notebooks/{chapter}\npaper: key2026\nclaims:{rows}"


def make_package(folder: Path) -> Path:
    package = folder / "icllib"
    (package / "registry").mkdir(parents=True)
    (package / "__init__.py").write_text('"""A made-up icllib."""\n', encoding="utf-8")
    (package / "chapter.py").write_text("from icllib.helpers import helper\n", encoding="utf-8")
    (package / "helpers.py").write_text("from .base import BASE\n\ndef helper():\n    return BASE\n", encoding="utf-8")
    (package / "base.py").write_text("BASE = 1\n", encoding="utf-8")
    (package / "other.py").write_text("OTHER = 1\n", encoding="utf-8")
    (package / "coverage.py").write_text("PAPERS = 'registry/paper_results.json'\n", encoding="utf-8")
    (package / "data.json").write_text("{}\n", encoding="utf-8")
    # a paper's package: the chapter's subpackage, reached through a relative import of another of its modules
    (package / "paper").mkdir()
    for name, text in {"__init__.py": '"""A paper."""\n', "model.py": "from . import theory\n",
                       "theory.py": "from ..base import BASE\n", "unused.py": "UNUSED = 1\n"}.items():
        (package / "paper" / name).write_text(text, encoding="utf-8")
    (package / "registry" / "chapter.yaml").write_text(registry_text("chapter", REGISTRY_ROW.format(
        chapter="chapter", name="one") + REGISTRY_ROW.format(chapter="chapter", name="two")), encoding="utf-8")
    (package / "registry" / "other.yaml").write_text(registry_text("other", REGISTRY_ROW.format(chapter="other",
                                                                                                 name="one")),
                                                     encoding="utf-8")
    (package / "registry" / "paper_results.json").write_text("{}\n", encoding="utf-8")
    (package / "registry" / "text_claims").mkdir()
    (package / "registry" / "text_claims" / "000_paper.yaml").write_text("claims: []\n", encoding="utf-8")
    (folder / "requirements.txt").write_text("numpy==2.4.6\n", encoding="utf-8")
    return package


def notebook(code: str = "from icllib import chapter\nchapter.helper()", prose: str = "Some prose."):
    return nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(prose),
                                           nbformat.v4.new_code_cell(code)])


@pytest.fixture
def package(tmp_path, monkeypatch):
    monkeypatch.delenv("ICLLIB_REGISTRY", raising=False)
    return make_package(tmp_path)


def key_of(package, nb=None, mode="quick"):
    return executions.key(nb or notebook(), mode, root=package.parent, package=package)


def test_prose_does_not_change_the_key_but_code_and_mode_do(package):
    first = key_of(package)
    assert key_of(package, notebook(prose="Other prose, $x^2$.")) == first
    assert key_of(package, notebook(code="from icllib import chapter\nchapter.helper() + 1")) != first
    assert key_of(package, mode="default") != first


def test_page_only_cell_metadata_does_not_change_the_key_but_other_metadata_does(package):
    first = key_of(package)

    def with_metadata(metadata):
        nb = notebook()
        nb.cells[1].metadata.update(metadata)
        return key_of(package, nb)

    assert with_metadata({"mystnb": {"figure": {"caption": "A new caption."}}}) == first
    assert with_metadata({"tags": ["hide-input", "remove-output"]}) == first
    assert with_metadata({"tags": ["raises-exception"]}) != first   # changes what nbval and the build accept
    assert with_metadata({"tags": ["hide-input", "raises-exception"]}) == with_metadata({"tags": ["raises-exception"]})


@pytest.mark.parametrize(("changed", "changes_key"), [
    ("chapter.py", True), ("helpers.py", True), ("base.py", True),   # imported, through a relative import too
    ("__init__.py", True), ("data.json", True), ("other.py", False), ("coverage.py", False),
    ("registry/chapter.yaml", False),   # a comment in the registry: nothing a run reads
    ("registry/paper_results.json", False), ("registry/text_claims/000_paper.yaml", False),   # coverage's
    ("paper/__init__.py", False), ("paper/model.py", False)])
def test_a_module_changes_the_key_exactly_when_the_chapter_imports_it(package, changed, changes_key):
    before = key_of(package)
    with (package / changed).open("a", encoding="utf-8") as stream:
        stream.write("# edited\n")
    assert (key_of(package) != before) is changes_key


@pytest.mark.parametrize(("changed", "changes_key"), [
    ("paper/__init__.py", True), ("paper/model.py", True), ("paper/theory.py", True), ("base.py", True),
    ("paper/unused.py", False), ("chapter.py", False)])
def test_a_paper_package_module_changes_the_key_with_its_package_and_imports(package, changed, changes_key):
    nb = notebook(code="from icllib.paper import model\nmodel.theory.BASE")
    before = key_of(package, nb)
    with (package / changed).open("a", encoding="utf-8") as stream:
        stream.write("# edited\n")
    assert (key_of(package, nb) != before) is changes_key


def test_the_pins_change_the_key(package):
    before = key_of(package)
    (package.parent / "requirements.txt").write_text("numpy==2.4.7\n", encoding="utf-8")
    assert key_of(package) != before


def test_the_paper_scale_archive_a_chapter_draws_from_is_in_its_key(package):
    archive = package.parent / "results" / "full" / "chapter.json"
    drawing = notebook('from icllib.claims import archived_arrays\nseries = archived_arrays("chapter", "fig")')
    without_archive = key_of(package, drawing), key_of(package)
    archive.parent.mkdir(parents=True)
    archive.write_text('{"arrays": {}}', encoding="utf-8")
    assert key_of(package, drawing) != without_archive[0]
    assert key_of(package) == without_archive[1]   # a chapter that does not read the archive keeps its key
    assert execution_keys.archives_read(drawing) == ["chapter"]


def test_the_device_is_in_the_key(package, monkeypatch):
    monkeypatch.delenv("ICLLIB_DEVICE", raising=False)
    on_the_cpu = key_of(package)
    monkeypatch.setenv("ICLLIB_DEVICE", "cuda")
    assert key_of(package) != on_the_cpu   # a GPU's sample is not the CPU's: its page is another execution


@pytest.mark.parametrize("variable", execution_keys.CPU_KERNEL_VARIABLES)
def test_forced_cpu_kernels_are_in_the_key(package, monkeypatch, variable):
    for name in execution_keys.CPU_KERNEL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    native = key_of(package)
    monkeypatch.setenv(variable, "default" if variable == "ATEN_CPU_CAPABILITY" else "AVX512F")
    assert key_of(package) != native   # the second leg of make test runs its chapters, it does not reuse them


def test_the_deciding_runs_a_chapter_reads_are_in_its_key(package):
    folder = package.parent / "results" / "deciding" / "an-experiment"
    reading = notebook('from icllib import chapter\nruns = chapter.archived_runs("an-experiment")')
    before, other = key_of(package, reading), key_of(package)
    folder.mkdir(parents=True)
    (folder / "seed1.json").write_text("{}", encoding="utf-8")
    assert key_of(package, reading) != before
    assert key_of(package) == other
    assert execution_keys.deciding_runs_read(reading) == ["an-experiment"]


@pytest.mark.parametrize("changed", ["registry/paper_results.json", "registry/text_claims/000_paper.yaml"])
def test_the_coverage_files_of_the_registry_are_in_the_key_of_a_chapter_that_imports_coverage(package, changed):
    reading = notebook("from icllib import coverage")
    before = key_of(package, reading), key_of(package)
    with (package / changed).open("a", encoding="utf-8") as stream:
        stream.write("# edited\n")
    assert key_of(package, reading) != before[0] and key_of(package) == before[1]


CHECKING = 'from icllib import chapter\nfrom icllib.claims import check_claim\ncheck_claim("chapter.one", 1.0)'


@pytest.mark.parametrize(("old", "new", "changes_key"), [
    ("statement: the value is one", "statement: the value is one, Eq. 1", False),   # the pages read it
    ("location: Eq. 1", "location: Eq. 2", False),
    ("verdict: reproduced", "verdict: beyond the paper", False),
    ("verdict: reproduced", "verdict: out of scope\n    reason: not run", True),      # check_claim refuses it
    ("verdict: reproduced", "verdict: reproduced\n    modes: [full]", True),         # refused outside full
    ("id: chapter.one", "id: chapter.first", True),                                 # no longer registered
])
def test_a_registry_edit_changes_the_key_of_a_chapter_that_checks_the_claim_only_if_a_run_reads_it(
        package, old, new, changes_key):
    path = package / "registry" / "chapter.yaml"
    before = key_of(package, notebook(CHECKING))
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")   # the first row: chapter.one
    assert (key_of(package, notebook(CHECKING)) != before) is changes_key


def test_a_registry_edit_leaves_the_keys_of_chapters_that_do_not_check_the_claim(package):
    before = key_of(package, notebook(CHECKING)), key_of(package)
    other = package / "registry" / "other.yaml"
    other.write_text(other.read_text(encoding="utf-8").replace("verdict: reproduced", "verdict: reproduced\n    modes: [full]"),
                     encoding="utf-8")
    chapter = package / "registry" / "chapter.yaml"
    chapter.write_text(chapter.read_text(encoding="utf-8").replace("id: chapter.two", "id: chapter.second"),
                       encoding="utf-8")
    assert (key_of(package, notebook(CHECKING)), key_of(package)) == before


@pytest.mark.parametrize("code", ['check_claim(name, 1.0)', 'check = check_claim', 'check_claim(f"chapter.{x}", 1)'])
def test_a_claim_id_the_code_computes_makes_every_claim_count(package, code):
    source = f"from icllib import chapter\nfrom icllib.claims import check_claim\n{code}"
    before = key_of(package, notebook(source))
    other = package / "registry" / "other.yaml"
    other.write_text(other.read_text(encoding="utf-8").replace("verdict: reproduced", "verdict: reproduced\n    modes: [full]"),
                     encoding="utf-8")
    assert key_of(package, notebook(source)) != before
    assert execution_keys.checked_claims([source]) is None


def test_a_registry_that_does_not_parse_is_keyed_on_its_bytes(package):
    path = package / "registry" / "chapter.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace("id: chapter.two", "id: chapter.one"),   # a duplicate id
                    encoding="utf-8")
    before = key_of(package, notebook(CHECKING))
    path.write_text(path.read_text(encoding="utf-8") + "# still a duplicate\n", encoding="utf-8")
    assert key_of(package, notebook(CHECKING)) != before


@pytest.mark.parametrize("code", ["import icllib", "from icllib import *", "%time import icllib.chapter"])
def test_code_that_may_reach_any_module_depends_on_all_of_them(package, code):
    before = key_of(package, notebook(code))
    (package / "other.py").write_text("OTHER = 2\n", encoding="utf-8")
    assert key_of(package, notebook(code)) != before


@pytest.mark.parametrize("chapter", sorted(path.stem for path in (ROOT / "notebooks").glob("*.py")))
def test_each_chapter_depends_on_its_papers_package_and_the_shared_modules_only(chapter):
    package = ROOT / "src" / "icllib"
    source = executions.read_source(ROOT / "notebooks" / f"{chapter}.py")
    files = {path.relative_to(package).as_posix() for path in execution_keys.dependencies(
        [cell.source for cell in executions.code_cells(source)], package)}
    assert {"__init__.py", "claims.py", "config.py", "validation.py"} <= files
    # The registry is keyed by registry_part; the rest of its folder only icllib.coverage reads.
    assert not [name for name in files if name.endswith(".yaml") or name.endswith(".json")]
    papers = {path.name for path in package.iterdir() if (path / "__init__.py").is_file()}
    paper = next(name for name in papers if chapter.startswith(name))   # a chapter is named after its paper
    assert f"{paper}/__init__.py" in files
    assert not {name for name in files if "/" in name and name.split("/")[0] != paper}, \
        f"{chapter} depends on another paper's package"


# --- The whole loop on a tiny book ------------------------------------------------------------------------

NOTEBOOK = """# %% [markdown]
# # A tiny chapter
#
# {prose}

# %%
from icllib import config
from icllib.claims import check_claim

print("mark:", getattr(config, "BUILD_MARK", "first"))
check_claim("tiny.two", 2.0, expected=2.0, atol=1e-12, why="exact arithmetic")
"""


@pytest.fixture
def tiny_book(tmp_path):
    env = make_tiny_book(tmp_path, 2.0)
    shutil.copytree(ROOT / "src" / "icllib", tmp_path / "src" / "icllib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "requirements.txt", tmp_path / "requirements.txt")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "src"), env.get("PYTHONPATH")]))
    env.pop("ICLLIB_RESULTS", None)
    env.pop("ICLLIB_EXECUTIONS", None)
    return tmp_path, env


def write_chapter(folder: Path, prose: str) -> None:
    (folder / "notebooks" / "tiny.py").write_text(NOTEBOOK.format(prose=prose), encoding="utf-8")


def build(folder: Path, env) -> str:
    shutil.rmtree(folder / "_build" / "html", ignore_errors=True)
    shutil.rmtree(folder / "_build" / ".doctrees", ignore_errors=True)
    done = subprocess.run([str(BIN / "jupyter-book"), "build", ".", "-W", "-n", "--keep-going"], cwd=folder,
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    page = (folder / "_build" / "html" / "notebooks" / "tiny.html").read_text(encoding="utf-8")
    # ids may break after their dots
    ledger = (folder / "_build" / "html" / "book" / "claims.html").read_text(encoding="utf-8").replace("<wbr>", "")
    assert "tiny.two" in ledger and "checks FAILED in this build" not in ledger   # the filter menu names FAILED
    return page


def stored(folder: Path) -> list[Path]:
    return sorted((folder / "_build" / "executions").glob("*.ipynb"))


def test_a_prose_edit_reuses_the_execution_and_a_module_edit_re_executes(tiny_book):
    folder, env = tiny_book
    write_chapter(folder, "Prose one.")
    page = build(folder, env)
    assert "mark: first" in page and "Prose one." in page
    assert len(stored(folder)) == 1
    executed_at = stored(folder)[0].stat().st_mtime_ns

    write_chapter(folder, "Prose two.")
    page = build(folder, env)
    assert "Prose two." in page and "mark: first" in page
    assert len(stored(folder)) == 1 and stored(folder)[0].stat().st_mtime_ns == executed_at

    # a module the chapter never imports
    with (folder / "src" / "icllib" / "balance" / "model.py").open("a", encoding="utf-8") as stream:
        stream.write("\nBUILD_MARK = 'unused'\n")
    build(folder, env)
    assert len(stored(folder)) == 1

    with (folder / "src" / "icllib" / "config.py").open("a", encoding="utf-8") as stream:
        stream.write("\nBUILD_MARK = 'second'\n")
    page = build(folder, env)
    assert "mark: second" in page and "mark: first" not in page
    assert len(stored(folder)) == 2


def test_the_build_after_the_notebook_tests_executes_nothing(tiny_book):
    folder, env = tiny_book
    write_chapter(folder, "Prose one.")
    tests = subprocess.run([str(BIN / "pytest"), "-p", "no:cacheprovider", "notebooks/tiny.py"], cwd=folder,
                           env=env, capture_output=True, text=True, timeout=600)
    assert tests.returncode == 0, tests.stdout[-3000:]
    [execution] = stored(folder)
    assert "nbval" in execution.with_suffix(".json").read_text(encoding="utf-8")
    page = build(folder, env)
    assert "mark: first" in page
    assert stored(folder) == [execution]


def test_the_slowest_cells_are_read_from_the_timing_stamps():
    nb = notebook()
    nb.cells.append(nbformat.v4.new_code_cell("slow()"))
    stamps = [("2026-01-01T00:00:00.000Z", "2026-01-01T00:00:01.500Z"),
              ("2026-01-01T00:00:02.000Z", "2026-01-01T00:01:02.000Z")]
    for cell, (start, end) in zip(executions.code_cells(nb), stamps):
        cell.metadata["execution"] = {"iopub.execute_input": start, "shell.execute_reply": end}
    assert executions.slowest_cells(nb, count=1) == [{"cell": 2, "seconds": 60.0, "first line": "slow()"}]


def test_a_stored_figure_is_a_smaller_png_of_the_same_picture():
    import base64
    import io

    import matplotlib
    import numpy as np
    from PIL import Image

    matplotlib.use("Agg")
    from icllib.plotting import figure

    fig, (ax_line, ax_map) = figure(1, 2)
    ax_line.plot(np.linspace(0, 1, 50) ** 2, label="a line")
    ax_line.legend()
    ax_map.imshow(np.outer(np.linspace(0, 1, 64), np.linspace(1, 0, 64)))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    original = base64.b64encode(buffer.getvalue()).decode()
    compact = executions.compact_png(original)
    before, after = (Image.open(io.BytesIO(base64.b64decode(data))).convert("RGB") for data in (original, compact))
    assert len(base64.b64decode(compact)) < 0.7 * len(buffer.getvalue())
    assert after.size == before.size
    difference = np.abs(np.asarray(after, dtype=int) - np.asarray(before, dtype=int))
    assert difference.mean() < 1.0 and np.percentile(difference, 99) <= 16
    assert executions.compact_png(compact) == compact  # already compact: left as it is
