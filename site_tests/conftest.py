"""Checks on a built site: ``pytest site_tests --site=_build/html``."""

from pathlib import Path

import pytest

# What the tests measured on the site (the chapters' code share, the site's weight), printed at the end of the
# run whether the tests pass or fail: the numbers a closing note or a reviewer asks for.
MEASURED = pytest.StashKey[dict]()


def pytest_addoption(parser):
    parser.addoption("--site", required=True, help="the built HTML folder to check, e.g. _build/html")
    parser.addoption("--layouts", choices=("all", "pairs"), default="all",
                     help="all: every width in every colour scheme (CI's default site); pairs: each width and each "
                          "scheme once, 1400 px dark and 400 px light (make test's quick site, for its time budget)")


def pytest_configure(config):
    config.stash[MEASURED] = {}


@pytest.fixture(scope="session")
def site(request) -> Path:
    folder = Path(request.config.getoption("--site")).resolve()
    if not (folder / "index.html").is_file():
        raise pytest.UsageError(f"--site={folder} holds no built site (index.html is missing)")
    return folder


@pytest.fixture(scope="session")
def measured(pytestconfig) -> dict:
    """A test's measurements, ``{heading: [line, ...]}``, for the summary at the end of the run."""
    return pytestconfig.stash[MEASURED]


def pytest_terminal_summary(terminalreporter, config):
    for heading, lines in config.stash.get(MEASURED, {}).items():
        terminalreporter.section(heading, sep="-")
        for line in lines:
            terminalreporter.write_line(line)
