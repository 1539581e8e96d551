"""Run every chapter notebook as a test: nbval on the jupytext text sources, no ``.ipynb`` written.

Each code cell is a test item; the kernel starts in ``notebooks/`` as in the book build. Text notebooks
carry no outputs, so nothing is compared: the checks are the assertions (``check_claim``) in the cells.
Tests run in ``quick`` mode unless ``ICLLIB_MODE`` says otherwise; a bad mode stops pytest at once.
"""

import os
from unittest import mock

import jupytext
import pytest
from nbval.plugin import IPyNbFile

os.environ.setdefault("ICLLIB_MODE", "quick")


def pytest_configure(config):
    from icllib.config import mode

    try:
        mode()
    except ValueError as error:
        raise pytest.UsageError(str(error)) from None


class TextNotebook(IPyNbFile):
    """nbval's notebook collector, reading the notebook through jupytext instead of nbformat."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compare_outputs = False

    def collect(self):
        with mock.patch("nbval.plugin.nbformat.read", lambda path, as_version: jupytext.read(path)):
            yield from super().collect()


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
