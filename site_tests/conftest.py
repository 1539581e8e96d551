"""Checks on a built site: ``pytest site_tests --site=_build/html``."""

from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--site", required=True, help="the built HTML folder to check, e.g. _build/html")
    parser.addoption("--layouts", choices=("all", "pairs"), default="all",
                     help="all: every width in every colour scheme (CI's default site); pairs: each width and each "
                          "scheme once, 1400 px dark and 400 px light (make test's quick site, for its time budget)")


@pytest.fixture(scope="session")
def site(request) -> Path:
    folder = Path(request.config.getoption("--site")).resolve()
    if not (folder / "index.html").is_file():
        raise pytest.UsageError(f"--site={folder} holds no built site (index.html is missing)")
    return folder
