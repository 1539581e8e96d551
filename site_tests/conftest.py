"""Checks on a built site: ``pytest site_tests --site=_build/html``."""

from pathlib import Path

import pytest


def pytest_addoption(parser):
    parser.addoption("--site", required=True, help="the built HTML folder to check, e.g. _build/html")


@pytest.fixture(scope="session")
def site(request) -> Path:
    folder = Path(request.config.getoption("--site")).resolve()
    if not (folder / "index.html").is_file():
        raise pytest.UsageError(f"--site={folder} holds no built site (index.html is missing)")
    return folder
