"""Every text file the book reads or writes is UTF-8 whatever the machine's locale: each text-mode ``open``,
``read_text`` and ``write_text`` in the book's code names its encoding (Python would otherwise use the locale's,
ASCII or Latin-1 on some machines), and the registry, whose statements hold non-ASCII mathematics, reads under an
ASCII locale."""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("src", "_ext", "tools", "tests", "site_tests", "benchmarks")
# Modules whose binary-only `open` is not a file's text: tarfile.open, Image.open, bz2.open (binary by default), ...
BINARY_OPENERS = {"tarfile", "gzip", "zipfile", "os", "Image", "bz2", "lzma", "webbrowser"}
# Calls allowed without an encoding, per file: none now; a file listed here with a count may only shrink.
LEFT_TO_FIX: dict[str, int] = {}


def _is_text_open(call: ast.Call) -> bool:
    function = call.func
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) \
            and function.value.id in BINARY_OPENERS:
        return False
    mode = call.args[1] if len(call.args) >= 2 else next((kw.value for kw in call.keywords if kw.arg == "mode"), None)
    return not (isinstance(mode, ast.Constant) and isinstance(mode.value, str) and "b" in mode.value)


def calls_without_encoding(source: str) -> list[int]:
    """The lines of the text-mode ``open(...)``, ``.read_text()`` and ``.write_text(...)`` calls that name no
    encoding (a ``**options`` call is given the benefit of the doubt)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or any(kw.arg in ("encoding", None) for kw in node.keywords):
            continue
        function = node.func
        name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        if name in ("read_text", "write_text") and isinstance(function, ast.Attribute):
            lines.append(node.lineno)
        elif name == "open" and _is_text_open(node):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_scan_finds_what_it_should():
    assert calls_without_encoding("p.read_text()\nopen(p, 'w')\np.write_text(t)\np.open()\n") == [1, 2, 3, 4]
    assert calls_without_encoding("p.read_text(encoding='utf-8')\nopen(p, 'rb')\np.read_bytes()\n"
                                  "tarfile.open(p)\nopen(p, 'w', encoding='utf-8')\nopen(p, **o)\n") == []


def test_every_text_file_is_read_and_written_as_utf8():
    found = {}
    for folder in FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = calls_without_encoding(path.read_text(encoding="utf-8"))
            if lines:
                found[path.relative_to(ROOT).as_posix()] = lines
    new = {name: lines for name, lines in found.items() if len(lines) > LEFT_TO_FIX.get(name, 0)}
    assert not new, f"name encoding=\"utf-8\" at these lines: {new}"
    fixed = {name for name, count in LEFT_TO_FIX.items() if len(found.get(name, [])) < count}
    assert not fixed, f"fixed since: take {sorted(fixed)} off LEFT_TO_FIX"


def test_the_registry_and_its_pages_text_read_under_an_ascii_locale(tmp_path):
    """Under LC_ALL=C with Python's UTF-8 mode and locale coercion off, the locale's encoding is ASCII; the
    registry (which holds non-ASCII mathematics) still reads, and the deciding runs' reader too."""
    code = ("import locale; assert locale.getpreferredencoding(False) != 'UTF-8', locale.getpreferredencoding(False)\n"
            "from icllib import claims, deciding\n"
            "book = claims.registry()\n"
            "texts = [*(c.statement + (c.evidence or '') for c in book.claims.values()),\n"
            "         *(p.quote + p.correction for p in [*book.errata.values(), *book.notes.values()])]\n"
            "assert not all(text.isascii() for text in texts)\n"
            "deciding.registry_rows('balance')\n"
            "print(len(book.claims))\n")
    environment = {**os.environ, "LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    environment.pop("ICLLIB_REGISTRY", None)
    done = subprocess.run([sys.executable, "-c", code], env=environment, capture_output=True, text=True,
                          encoding="utf-8", timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) > 200
