"""Run every chapter notebook as a test: nbval on the jupytext text sources, no ``.ipynb`` written.

Each code cell is a test item; the kernel starts in ``notebooks/`` as in the book build, with one thread
(``_ext/executions.py``). Text notebooks carry no outputs, so nothing is compared: the checks are the
assertions (``check_claim``) in the cells. When every cell of a notebook passed, its outputs and records
are stored in the execution cache, so the book build that follows (``make test``'s quick site) executes the
notebook no second time. They are stored under the key fixed before the kernel started, and only if the key
computed again after the last cell is the same: a module edited while the cells ran fails the notebook's
last test, naming the file, and stores nothing (else the build would show the old code's numbers as today's). Tests run in ``quick`` mode unless ``ICLLIB_MODE`` says otherwise; a bad mode stops
pytest at once.
"""

import os
import time
import sys
from pathlib import Path
from unittest import mock

import jupytext
import pytest
from nbval.plugin import IPyNbFile

sys.path.insert(0, str(Path(__file__).parent / "_ext"))
import executions  # noqa: E402  (the book's execution cache lives with the Sphinx extension)

os.environ.setdefault("ICLLIB_MODE", "quick")


def pytest_configure(config):
    from icllib.config import device, mode

    try:
        mode()
        device()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


class TextNotebook(IPyNbFile):
    """nbval's notebook collector, reading the notebook through jupytext instead of nbformat."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compare_outputs = False

    def collect(self):
        with mock.patch("nbval.plugin.nbformat.read", lambda path, as_version: jupytext.read(path)):
            self.cell_items = list(super().collect())
        self.all_passed = True
        yield from self.cell_items

    def setup(self):
        from icllib.config import mode

        self.notebook = executions.read_source(Path(self.fspath))
        self.key_before = executions.key_parts(self.notebook, mode())
        # Named as execute() names its own, so that the file a killed test run leaves is known as stale there.
        self.records_file = executions.cache_folder() / f".records.{os.getpid()}.{Path(self.fspath).stem}.jsonl"
        self.records_file.parent.mkdir(parents=True, exist_ok=True)
        executions.remove_stale_partials(self.records_file.parent)
        self.records_file.write_text("")
        self.started = time.monotonic()   # the stored execution's time, which the pages quote ({run-time})
        saved = dict(os.environ)
        os.environ.update(executions.kernel_environment(mode(), self.records_file, Path(self.fspath).stem))
        try:
            super().setup()  # the kernel starts here and keeps these variables
        finally:
            os.environ.clear()
            os.environ.update(saved)
        client = self.kernel.kc
        # Execute as nbclient does in the book build (store_history=True, nbval's default is False), so that the
        # execution stored from this run is the one the build would have made.
        self.kernel.execute_cell_input = lambda source, allow_stdin=None: client.execute(
            source, store_history=True, allow_stdin=allow_stdin, stop_on_error=False)

    def teardown(self):
        from icllib.claims import figure_problems, results_path
        from icllib.config import mode

        super().teardown()
        records = self.records_file.read_text().splitlines()
        unreadable_figures = figure_problems(self.records_file)
        self.records_file.unlink(missing_ok=True)
        executions.pass_on(records, results_path())
        ran_every_cell = all(item.test_outputs is not None for item in self.cell_items)
        changed = []
        if self.all_passed and ran_every_cell:
            try:
                after = executions.key_parts(executions.read_source(Path(self.fspath)), mode())
            except OSError:
                after = {}
            changed = executions.changed_parts(self.key_before, after)
        if self.all_passed and ran_every_cell and not changed:
            notebook = self.notebook
            for count, (cell, item) in enumerate(zip(executions.code_cells(notebook), self.cell_items,
                                                     strict=True), start=1):
                cell.outputs, cell.execution_count = item.test_outputs, count
            executions.store(notebook, mode(), records, {"notebook": Path(self.fspath).name,
                                                         "seconds": round(time.monotonic() - self.started, 1),
                                                         "executed by": "the notebook tests (nbval)"},
                             notebook_key=executions.key_of_parts(self.key_before))
        if changed:
            pytest.fail(f"{self.fspath}: {', '.join(changed)} changed while its cells ran, so what they computed "
                        "may come from either version: nothing stored; run the tests again", pytrace=False)
        if unreadable_figures:  # icllib.plotting.layout_problems, measured as each figure was drawn
            pytest.fail("figures that do not read:\n" + "\n".join(unreadable_figures), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    if isinstance(item.parent, TextNotebook) and report.outcome != "passed":
        item.parent.all_passed = False


class NotAModule(pytest.File):
    """Stands in for pytest's Python module so that a notebook named on the command line is not imported."""

    def collect(self):
        return []


def is_chapter_notebook(path) -> bool:
    return path.parent.name == "notebooks" and path.suffix in {".py", ".md"}


def pytest_collect_file(file_path, parent):
    if is_chapter_notebook(file_path):
        return TextNotebook.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makemodule(module_path, parent):
    if is_chapter_notebook(module_path):
        return NotAModule.from_parent(parent, path=module_path)
    return None
