"""A fresh clone installs only hash-checked packages: the lock holds every pin of requirements.txt and all they pull
in, each with the hashes of every platform's files; the Makefile installs it with --require-hashes and nothing else
unhashed; a local-only wheel is listed with its own hash; `make lock` refreshes it; the cached axe-core is checked
against its hash on every use."""

import hashlib
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "site_tests"))
import lock  # noqa: E402
import source_archive  # noqa: E402


def recipe(target: str) -> str:
    """The recipe lines of a Makefile target."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n|(?: .*)\n)+)", makefile, re.MULTILINE)
    assert match, f"no target {target} in the Makefile"
    return match[1]


def test_the_lock_holds_every_pin_of_requirements_txt_each_with_hashes():
    assert lock.problems() == []
    entries = [entry for path in (lock.LOCK, lock.CUDA_LOCK) for entry in lock.entries(path.read_text(encoding="utf-8"))]
    assert len(entries) > len(lock.pins(lock.REQUIREMENTS.read_text(encoding="utf-8"))) + 50, "the transitive ones too"
    assert all(lock.hashes(entry) for entry in entries)


def test_the_lock_serves_every_platform_not_only_this_one():
    text = lock.LOCK.read_text(encoding="utf-8")
    assert "sys_platform == 'darwin'" in text and "sys_platform == 'win32'" in text   # appnope, colorama
    torch = next(entry for entry in lock.entries(text) if lock.entry_name(entry) == "torch")
    assert torch.startswith("torch==2.13.0 ") and len(lock.hashes(torch)) >= 10, "PyPI's wheels for each platform"
    cuda = lock.entries(lock.CUDA_LOCK.read_text(encoding="utf-8"))
    assert cuda and all(lock.CUDA_RUNTIME.match(lock.entry_name(entry)) for entry in cuda)


def test_a_wheel_that_exists_only_locally_is_named_in_the_header_with_its_hash():
    text = lock.LOCK.read_text(encoding="utf-8")
    named = lock.named_local_wheels(text)
    locked = {lock.entry_name(entry): set(lock.hashes(entry)) for entry in lock.entries(text)}
    for wheel, (digest, folder) in named.items():
        assert digest in locked[lock.normalise(wheel.split("-")[0])], wheel
        if (Path(folder) / wheel).is_file():
            assert hashlib.sha256((Path(folder) / wheel).read_bytes()).hexdigest() == digest
    for line in lock.local_requirements():
        assert re.fullmatch(r"[a-z0-9-]+ @ file:///\S+\.whl --hash=sha256:[0-9a-f]{64}", line), line
        assert line.split("sha256:")[1] in locked[line.split(" @ ")[0]]


def test_a_local_wheel_is_added_to_its_release_and_named_so_that_a_refresh_elsewhere_keeps_it():
    entry = "torch==2.13.0 \\\n    --hash=sha256:" + "a" * 64 + "\n    # via -r requirements.txt"
    wheels = {"torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl": ("b" * 64, "/opt/wheels")}
    added, notes = lock.with_local_hashes(entry, wheels)
    assert lock.hashes(added) == ["a" * 64, "b" * 64] and added.endswith("# via -r requirements.txt")
    assert lock.named_local_wheels("\n".join(notes)) == wheels


def test_make_book_and_make_test_install_only_the_lock_with_hashes_required():
    install = recipe("$(VENV)/.installed")
    pip_installs = [line for line in install.splitlines() if re.search(r"\$\(PIP\) install", line)]
    assert pip_installs and all("--no-deps" in line for line in pip_installs)
    assert all("--require-hashes" in line for line in pip_installs if " -r " in line)
    assert "-r requirements.lock" in install and "-r requirements-cuda.lock" in install
    assert "-r requirements.txt" not in install, "requirements.txt's pins alone leave the transitive ones floating"
    assert "--no-build-isolation -e ." in install, "icllib's build backend comes from the lock, not an unhashed fetch"
    build_backend = re.search(r'requires = \["(\w+)', (ROOT / "pyproject.toml").read_text(encoding="utf-8"))[1]
    assert build_backend in lock.pins(lock.LOCK.read_text(encoding="utf-8"))
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("book", "test"):
        assert re.search(rf"^{target}:.*\$\(VENV\)/\.installed", makefile, re.MULTILINE), target
    assert "tools/lock.py write" in recipe("lock")
    assert "`make lock`" in (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    assert {"requirements.lock", "requirements-cuda.lock"} <= set(source_archive.MEMBERS)


def test_a_pin_edited_without_make_lock_is_named(tmp_path, monkeypatch):
    edited = tmp_path / "requirements.txt"
    edited.write_text(lock.REQUIREMENTS.read_text(encoding="utf-8").replace("numpy==", "numpy==0.0.1+"), encoding="utf-8")
    monkeypatch.setattr(lock, "REQUIREMENTS", edited)
    assert [problem for problem in lock.problems() if problem.startswith("requirements.txt pins numpy==")]


def test_a_cached_axe_core_is_checked_against_its_hash_on_every_use(tmp_path, monkeypatch):
    """Whatever lies in the cache (a tarball altered after it was checked, or the unpacked script older builds
    kept) is never injected into a page unchecked."""
    import urllib.request

    import browser

    (tmp_path / f"axe-core-{browser.AXE_VERSION}.tgz").write_bytes(b"an altered tarball")
    (tmp_path / f"axe-core-{browser.AXE_VERSION}.min.js").write_text("window.taken = document.cookie;",
                                                                     encoding="utf-8")
    with pytest.raises(RuntimeError, match="integrity"):
        browser.axe_source(tmp_path)

    def offline(*args, **kwargs):
        raise OSError("no network in this test")

    # without the tarball, the unpacked script is not taken on trust: it is fetched again (here: cannot be)
    (tmp_path / f"axe-core-{browser.AXE_VERSION}.tgz").unlink()
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    monkeypatch.setattr(browser.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="cannot download"):
        browser.axe_source(tmp_path)
