"""The ledger's search text, the status page's sentence on the archived runs' age, and the references' "et al."
(issue 37): the Python side; the browser side is site_tests/test_cards_ledger.py."""

import subprocess
import sys
from pathlib import Path

import pytest
from docutils import nodes

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import ledger_files  # noqa: E402
import paper_scale_age  # noqa: E402
import site_assets  # noqa: E402

ROW = {"id": "balance.b11-rate", "chapter": "balance", "paper": "ziyin2025noise", "location": "App. B.11, line 872",
       "statement": "the drift of eta_Y / eta_Z", "verdict": "inconclusive", "verdict_since": "2026-11-20",
       "verdict_history": [{"commit": "abc", "from": None, "to": "reproduced"},
                           {"commit": "def", "from": "reproduced", "to": "inconclusive"}],
       "evidence": "", "run": "", "deciding_run": "batch 200,  5 seeds", "reason": "", "erratum": "", "note": "",
       "measured": ["1.62"], "check": ["<= 1.5 (why)"], "mode": "default", "paper_scale": "FAILED: measured 1.62",
       "paper_scale_measured": [1.62], "paper_scale_failed": True, "row": "claims.html#claim-balance-b11-rate"}


def test_the_search_text_holds_every_column_of_a_row_in_lower_case():
    text = ledger_files.search_text(ROW)
    for part in ("balance.b11-rate", "app. b.11, line 872", "eta_y / eta_z", "inconclusive", "reproduced",
                 "batch 200, 5 seeds", "1.62", "<= 1.5 (why)", "failed: measured 1.62", "ziyin2025noise"):
        assert part in text, part
    assert "claims.html" not in text and "abc" not in text   # the row's address and the commits are not columns


@pytest.mark.parametrize("bad", [None, "row", {"statement": "no id"}])
def test_search_text_refuses_what_is_not_a_row(bad):
    with pytest.raises(ValueError, match="row"):
        ledger_files.search_text(bad)


def _repository(tmp_path: Path) -> tuple[Path, str]:
    def git(*arguments):
        return subprocess.run(["git", "-C", str(tmp_path), *arguments], capture_output=True, text=True,
                              check=True).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@example.org")
    git("config", "user.name", "t")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "src" / "icllib").mkdir(parents=True)
    chapter = tmp_path / "notebooks" / "demo.py"
    chapter.write_text("# %% [markdown]\n# Prose.\n\n# %%\nx = measure()\ncheck_claim('demo.a', x)\n"
                       "ax.plot(x)\n", encoding="utf-8")
    module = tmp_path / "src" / "icllib" / "theory.py"
    module.write_text('"""A module."""\n\n\ndef f(x):\n    """Doc."""\n    return 2 * x\n', encoding="utf-8")
    git("add", ".")
    git("commit", "-q", "-m", "first")
    return tmp_path, git("rev-parse", "--short", "HEAD")


def test_a_change_is_sorted_by_what_it_touches(tmp_path):
    root, commit = _repository(tmp_path)
    chapter, module = "notebooks/demo.py", "src/icllib/theory.py"
    assert paper_scale_age.change_kind(chapter, commit, root) == "prose"   # nothing changed yet
    text = (root / chapter).read_text(encoding="utf-8")
    (root / chapter).write_text(text.replace("# Prose.", "# Other prose."), encoding="utf-8")
    assert paper_scale_age.change_kind(chapter, commit, root) == "prose"
    (root / chapter).write_text(text.replace("ax.plot(x)", "ax.plot(x, color='k')"), encoding="utf-8")
    assert paper_scale_age.change_kind(chapter, commit, root) == "display"
    (root / chapter).write_text(text.replace("x = measure()", "x = measure(steps=10)"), encoding="utf-8")
    assert paper_scale_age.change_kind(chapter, commit, root) == "checks"
    (root / module).write_text((root / module).read_text(encoding="utf-8").replace('"""Doc."""', '"""Other doc."""'),
                              encoding="utf-8")
    assert paper_scale_age.change_kind(module, commit, root) == "prose"
    (root / module).write_text((root / module).read_text(encoding="utf-8").replace("2 * x", "3 * x"), encoding="utf-8")
    assert paper_scale_age.change_kind(module, commit, root) == "checks"
    assert paper_scale_age.change_kind("src/icllib/plotting.py", commit, root) == "display"


def test_the_age_sentence_counts_commits_and_names_the_chapters_whose_checks_changed(tmp_path):
    root, commit = _repository(tmp_path)
    run = {"commit": commit, "date": "2026-11-20 10:00 UTC", "code": {"changed": []}}
    assert paper_scale_age.age_sentence({"demo": run}, root) == (
        "The 1 archived paper-scale runs are 0 commits behind the code (the oldest, demo, ran on 2026-11-20), and "
        "no chapter's code changed since its run.")
    chapter = root / "notebooks" / "demo.py"
    chapter.write_text(chapter.read_text(encoding="utf-8").replace("x = measure()", "x = measure(steps=10)"),
                       encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "commit", "-qam", "more steps"], check=True)
    changed = {**run, "code": {"changed": ["notebooks/demo.py"]}}
    sentence = paper_scale_age.age_sentence({"demo": changed}, root)
    assert sentence.startswith("The 1 archived paper-scale runs are 1 commits behind the code")
    assert "the checks of all of them run has changed" in sentence
    plotted = {**run, "code": {"changed": ["src/icllib/plotting.py"]}}
    assert "only what the pages show" in paper_scale_age.age_sentence({"demo": plotted}, root)
    assert paper_scale_age.age_sentence({}, root).startswith("No paper-scale run is archived")


@pytest.mark.parametrize("bad", [None, "HEAD; rm", "xyz"])
def test_commits_behind_refuses_what_is_not_a_commit(bad, tmp_path):
    with pytest.raises(ValueError, match="commit"):
        paper_scale_age.commits_behind(bad, tmp_path)


def test_an_open_author_list_reads_et_al():
    cited = nodes.paragraph("", "", nodes.Text("Musat and others"))
    listed = nodes.paragraph("", "", nodes.Text("Tiberiu Musat and "), nodes.Text("others. On the emergence"))
    untouched = nodes.paragraph("", "", nodes.Text("the others agree"))
    page = nodes.section("", cited, listed, untouched)
    site_assets.et_al(None, page, "book/references")
    assert cited.astext() == "Musat et al."
    assert listed.astext() == "Tiberiu Musat et al. On the emergence"
    assert untouched.astext() == "the others agree"


def test_a_registry_sentence_may_hold_tex_whole_between_dollars():
    import ledger_text

    pieces = ledger_text.ascii_pieces("the output scales as $\\eta_Y / \\sqrt{d}$ while eta_Z stays")
    assert pieces == [("text", "the output scales as "), ("math", "\\eta_Y / \\sqrt{d}"), ("text", " while "),
                      ("math", "\\eta_{Z}"), ("text", " stays")]
    assert ledger_text.ascii_pieces("no dollars: eta_Y") == [("text", "no dollars: "), ("math", "\\eta_{Y}")]
