"""The chapters as a reader downloads them: plain Markdown in Jupyter (no raw MyST), the student edition without
solutions, exercise numbers as on the site, and a first cell that installs icllib where it is missing."""

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
import notebook_conversion  # noqa: E402
import notebook_download  # noqa: E402
import notebook_install  # noqa: E402

SAMPLE_URL = "https://example-org.github.io/icl-book"
CHAPTERS = sorted((ROOT / "notebooks").glob("*.py"))


def first_pages() -> list[Path]:
    """The chapters' first pages, which hold their exercises (a later part of a chapter, ``part_of``, holds none)."""
    from icllib.claims import registry

    return sorted(ROOT / f"{header['page']}.py" for header in registry().chapters.values() if header["part_of"] is None)


def chapter(path: Path) -> nbformat.NotebookNode:
    return jupytext.read(path)


def markdown(notebook) -> str:
    return "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")


def myst_names(text: str) -> tuple[set[str], set[str]]:
    roles = set(notebook_conversion.ROLE.findall(text))
    directives = set(re.findall(r"^ {0,3}(?:`{3,}|:{3,})\{([^}\s]+)\}", text, re.MULTILINE))
    return {name for name, _ in roles}, directives


SOLUTION = re.compile(r"^(`{3,}|:{3,})\{solution\}[^\n]*\n(.*?)^\1\s*$", re.MULTILINE | re.DOTALL)


def words(text: str) -> str:
    return " ".join(re.sub(r"\W+", " ", text).split())


def solution_bodies(text: str) -> tuple[int, list[str]]:
    """How many ``{solution}`` directives ``text`` holds, and for each the longest line of its body that appears
    nowhere else in the chapter and holds no role (a solution whose every line the prose repeats or cross-refers
    gives nothing to look for)."""
    bodies = [body for _, body in SOLUTION.findall(text)]
    elsewhere = words(SOLUTION.sub("", text))
    lines = [[line for line in body.split("\n") if line.strip() and not line.startswith(":")
              and not notebook_conversion.ROLE.search(line) and words(line) not in elsewhere] for body in bodies]
    return len(bodies), [max(body, key=len) for body in lines if body]


def test_every_role_and_directive_of_the_chapters_has_a_conversion():
    roles, directives = set(), set()
    for path in CHAPTERS:
        found = myst_names(markdown(chapter(path)))
        roles |= found[0]
        directives |= found[1]
    assert roles, "the scan found no role at all: the pattern is wrong"
    assert directives >= {"exercise", "solution"}
    assert roles <= notebook_conversion.KNOWN_ROLES, roles - notebook_conversion.KNOWN_ROLES
    assert directives <= notebook_conversion.KNOWN_DIRECTIVES, directives - notebook_conversion.KNOWN_DIRECTIVES


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
@pytest.mark.parametrize("solutions", [False, True], ids=["student", "instructor"])
def test_a_downloaded_chapter_shows_no_raw_myst(path, solutions):
    source = chapter(path)
    plain = notebook_conversion.plain_notebook(source, solutions=solutions, site_url=SAMPLE_URL,
                                             page=f"notebooks/{path.stem}")
    nbformat.validate(plain)
    left = {cell_index: notebook_conversion.raw_myst(cell.source) for cell_index, cell in enumerate(plain.cells)
            if cell.cell_type == "markdown"}
    assert not {index: found for index, found in left.items() if found}
    assert "unconverted" not in plain.metadata.get("icl_book", {})
    # the code is the chapter's, unchanged
    assert [cell.source for cell in plain.cells if cell.cell_type == "code"] == \
        [cell.source for cell in source.cells if cell.cell_type == "code"]


@pytest.mark.parametrize("path", first_pages(), ids=lambda path: path.stem)
def test_the_student_edition_has_no_solution_and_the_instructors_has_all(path):
    source = chapter(path)
    count, solutions = solution_bodies(markdown(source))
    assert count >= 3 and len(solutions) >= count - 1, "every chapter has exercises with solutions"
    student = markdown(notebook_conversion.plain_notebook(source, solutions=False, site_url=None,
                                                        page=f"notebooks/{path.stem}"))
    instructor = markdown(notebook_conversion.plain_notebook(source, solutions=True, site_url=None,
                                                           page=f"notebooks/{path.stem}"))
    for line in solutions:
        probe = words(line)
        assert probe in words(instructor), probe
        assert probe not in words(student), probe
    assert "Solution to" not in student
    assert instructor.count("**Solution to Exercise") == count


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda path: path.stem)
def test_exercises_are_numbered_as_on_the_site(path):
    number = notebook_conversion.chapter_numbers()[f"notebooks/{path.stem}"]
    source = chapter(path)
    count = len(re.findall(r"^ {0,3}(?:`{3,}|:{3,})\{exercise(?:-start)?\}", markdown(source), re.MULTILINE))
    plain = markdown(notebook_conversion.plain_notebook(source, solutions=True, site_url=None,
                                                      page=f"notebooks/{path.stem}"))
    assert re.findall(r"\*\*Exercise (\d+\.\d+)\*\*", plain) == [f"{number}.{k}" for k in range(1, count + 1)]
    assert re.findall(r"\*\*Solution to Exercise (\d+)\.", plain) == [str(number)] * len(
        re.findall(r"\*\*Solution to", plain))


def test_chapter_numbers_follow_the_table_of_contents():
    numbers = notebook_conversion.chapter_numbers()
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    in_order = re.findall(r"file: (notebooks/\w+)", toc)
    assert [numbers[name] for name in in_order] == list(range(1, len(in_order) + 1))
    assert "book/claims" not in numbers


SAMPLE = """# Title

(sec-sample)=
## A section

See {numref}`fig-sample`, {eq}`sample-eq`, {prf:ref}`thm-sample`, {ref}`the section <sec-sample>`,
{ref}`sec-sample`, [section 1](sec-sample), {cite:t}`unknown2099` and {doc}`the ledger </book/claims>`, with a
role that wraps: {ref}`Exercise
<sample-ex>`, and a link that [wraps
lines](sec-sample).

$$ a = b $$ (sample-eq)

```{prf:theorem} Sample
:label: thm-sample
Body of the theorem.
```

```{note}
A note.
```

```{exercise}
:label: sample-ex
Do it.
```

````{solution} sample-ex
:class: dropdown
The secret answer, with ```code```.
````
"""


def sample_notebook() -> nbformat.NotebookNode:
    notebook = nbformat.v4.new_notebook()
    figure = nbformat.v4.new_code_cell("print(1)")
    figure.metadata["mystnb"] = {"figure": {"name": "fig-sample", "caption": "A {math}`x` caption."}}
    notebook.cells = [nbformat.v4.new_markdown_cell(SAMPLE), figure]
    return notebook


def test_each_kind_of_markup_becomes_plain_markdown_with_links_to_the_site():
    plain = notebook_conversion.plain_notebook(sample_notebook(), solutions=True, site_url=SAMPLE_URL,
                                             page="notebooks/sample", chapter=3)
    text = plain.cells[0].source
    assert f"[Figure 3.1]({SAMPLE_URL}/notebooks/sample.html#fig-sample)" in text
    assert f"[(3.1)]({SAMPLE_URL}/notebooks/sample.html#equation-sample-eq)" in text
    assert f"[Theorem 3.1]({SAMPLE_URL}/notebooks/sample.html#thm-sample)" in text
    assert f"[the section]({SAMPLE_URL}/notebooks/sample.html#sec-sample)" in text
    assert f"[A section]({SAMPLE_URL}/notebooks/sample.html#sec-sample)" in text
    assert f"[section 1]({SAMPLE_URL}/notebooks/sample.html#sec-sample)" in text
    assert f"[wraps\nlines]({SAMPLE_URL}/notebooks/sample.html#sec-sample)" in text
    assert f"[the ledger]({SAMPLE_URL}/book/claims.html)" in text
    assert "\\tag{3.1} $$" in text
    assert "> **Theorem 3.1** (Sample)." in text and "> Body of the theorem." in text
    assert "> **Note**" in text
    assert "**Exercise 3.1**" in text and "**Solution to Exercise 3.1**" in text and "The secret answer" in text
    assert f"[Exercise]({SAMPLE_URL}/notebooks/sample.html#sample-ex)" in text
    assert plain.cells[2].source == "**Figure 3.1.** A $x$ caption."
    assert not notebook_conversion.raw_myst(text)
    student = notebook_conversion.plain_notebook(sample_notebook(), solutions=False, site_url=None,
                                               page="notebooks/sample", chapter=3)
    assert "secret" not in student.cells[0].source and "Solution" not in student.cells[0].source
    assert "](" not in student.cells[0].source, "no link without a site URL"


def test_gated_solutions_are_dropped_with_their_code_cells():
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("```{exercise-start}\n:label: gated\n```\nDo it."),
                      nbformat.v4.new_markdown_cell("```{exercise-end}\n```"),
                      nbformat.v4.new_markdown_cell("```{solution-start} gated\n```\nThe secret."),
                      nbformat.v4.new_code_cell("secret = 42"),
                      nbformat.v4.new_markdown_cell("```{solution-end}\n```"),
                      nbformat.v4.new_markdown_cell("After.")]
    student = notebook_conversion.plain_notebook(notebook, solutions=False, site_url=None, chapter=2)
    assert [cell.source for cell in student.cells] == ["**Exercise 2.1**\n\nDo it.", "After."]
    instructor = notebook_conversion.plain_notebook(notebook, solutions=True, site_url=None, chapter=2)
    assert "secret = 42" in [cell.source for cell in instructor.cells]
    assert "**Solution to Exercise 2.1**\n\nThe secret." in [cell.source for cell in instructor.cells]


def test_glued_values_and_ledger_counts_are_filled_in():
    notebook = nbformat.v4.new_notebook()
    glue = nbformat.v4.new_code_cell("glue('t', 0.95985)")
    glue.outputs = [nbformat.v4.new_output("display_data", data={"application/papermill.record/text/plain": "0.95985"},
                                           metadata={"scrapbook": {"name": "t", "mime_prefix": "application/papermill.record/"}})]
    notebook.cells = [glue, nbformat.v4.new_markdown_cell("T = {glue:text}`t:.3f`; {ledger-counts}`balance`.")]
    text = notebook_conversion.plain_notebook(notebook, solutions=True, site_url=None).cells[1].source
    assert text.startswith("T = 0.960; ")
    assert re.search(r"\d+ ledger rows: \d+ ", text)


@pytest.mark.parametrize("bad", [{"site_url": "example.org"}, {"site_url": 3}, {"notebook": "x"}])
def test_bad_input_names_the_parameter(bad):
    arguments = {"notebook": sample_notebook(), "solutions": True, "site_url": None, **bad}
    with pytest.raises(ValueError, match=next(iter(bad))):
        notebook_conversion.plain_notebook(arguments.pop("notebook"), **arguments)
    with pytest.raises(ValueError, match="wheel_name"):
        notebook_install.add_install_cell(sample_notebook(), wheel_name="icllib.zip", site_url=None)


WHEEL = "icllib-0.1.0-py3-none-any.whl"
WHEEL_BYTES = b"the site's wheel"   # stands in for the wheel: the cell checks its SHA-256, not its contents
SHA256 = hashlib.sha256(WHEEL_BYTES).hexdigest()


def test_the_install_cell_installs_from_the_site_when_its_url_is_configured():
    notebook = notebook_install.add_install_cell(sample_notebook(), wheel_name=WHEEL, site_url=SAMPLE_URL,
                                                  wheel_sha256=SHA256)
    first = notebook.cells[0]
    assert first.metadata["tags"] == [notebook_install.INSTALL_MARK]
    assert f"icllib @ {SAMPLE_URL}/wheels/{WHEEL}#sha256={{SHA256}}" in first.source and SHA256 in first.source
    again = notebook_install.add_install_cell(notebook, wheel_name=WHEEL, site_url=SAMPLE_URL, wheel_sha256=SHA256)
    assert len(again.cells) == len(notebook.cells), "one install cell, not two"
    text = notebook_install.add_install_cell(chapter(ROOT / "notebooks" / "scan_snap_text.py"), wheel_name=WHEEL,
                                              site_url=SAMPLE_URL, wheel_sha256=SHA256).cells[0].source
    assert f"icllib[text] @ {SAMPLE_URL}/wheels/{WHEEL}#sha256=" in text and '"gensim"' in text
    assert not notebook_install.needs_text_extra(chapter(ROOT / "notebooks" / "balance.py"))


def run_install_cell(source: str, folder: Path, missing: str) -> subprocess.CompletedProcess:
    """Run the cell's code in ``folder`` with ``importlib.util.find_spec`` reporting ``missing`` as absent and pip
    replaced by a print of what it would install."""
    stub = (f"import importlib.util, subprocess\n_find = importlib.util.find_spec\n"
            f"importlib.util.find_spec = lambda name, *a: None if name == {missing!r} else _find(name, *a)\n"
            "subprocess.run = lambda command, **kw: print('PIP', command[-1])\n")
    return subprocess.run([sys.executable, "-c", stub + source], cwd=folder, capture_output=True, text=True)


def test_the_install_cell_without_a_site_url_uses_a_wheel_or_the_archive_beside_it_else_says_what_to_fetch(tmp_path):
    source = notebook_install.install_source(wheel_name=WHEEL, wheel_sha256=SHA256, site_url=None, text_extra=False,
                                              archive_name="icl-book-source.tar.xz")
    nothing = run_install_cell(source, tmp_path, missing="icllib")
    assert nothing.returncode != 0 and f"Download {WHEEL}" in nothing.stderr and "icl-book-source.tar.xz" in nothing.stderr
    (tmp_path / "icl-book-source.tar.xz").write_bytes(b"")
    archive = run_install_cell(source, tmp_path, missing="icllib")
    assert archive.returncode == 0 and f"PIP icllib @ file://{tmp_path}/icl-book-source.tar.xz" in archive.stdout
    (tmp_path / WHEEL).write_bytes(WHEEL_BYTES)
    wheel = run_install_cell(source, tmp_path, missing="icllib")
    assert f"PIP icllib @ file://{tmp_path}/{WHEEL}#sha256={SHA256}" in wheel.stdout
    present = run_install_cell(source, tmp_path, missing="nothing")
    assert present.returncode == 0 and "PIP" not in present.stdout, "icllib present: the cell installs nothing"


def test_the_install_cell_takes_only_the_exact_wheel_with_its_hash_over_https_and_refuses_another_icllib(tmp_path):
    """A stray icllib-*.whl beside the notebook never wins, a wheel with another SHA-256 is refused, the site is
    reached over HTTPS only, and an icllib of another version than the wheel's is not run."""
    source = notebook_install.install_source(wheel_name=WHEEL, wheel_sha256=SHA256, site_url=SAMPLE_URL,
                                              text_extra=False, archive_name="icl-book-source.tar.xz")
    (tmp_path / "icllib-9.9.9-py3-none-any.whl").write_bytes(b"someone else's wheel")
    stray = run_install_cell(source, tmp_path, missing="icllib")
    assert stray.returncode == 0 and f"PIP icllib @ {SAMPLE_URL}/wheels/{WHEEL}#sha256={SHA256}" in stray.stdout
    (tmp_path / WHEEL).write_bytes(b"tampered")
    tampered = run_install_cell(source, tmp_path, missing="icllib")
    assert tampered.returncode != 0 and "another SHA-256" in tampered.stderr and "PIP" not in tampered.stdout
    for address in ("http://example-org.github.io/icl-book", "ftp://example.org", "//example.org"):
        with pytest.raises(ValueError, match="site_url"):
            notebook_install.install_source(wheel_name=WHEEL, wheel_sha256=SHA256, site_url=address,
                                             text_extra=False, archive_name="icl-book-source.tar.xz")
    with pytest.raises(ValueError, match="wheel_sha256"):
        notebook_install.install_source(wheel_name=WHEEL, wheel_sha256="abc", site_url=None, text_extra=False,
                                         archive_name="icl-book-source.tar.xz")
    older = notebook_install.install_source(wheel_name="icllib-0.0.1-py3-none-any.whl", wheel_sha256=SHA256,
                                             site_url=SAMPLE_URL, text_extra=False,
                                             archive_name="icl-book-source.tar.xz")
    wrong_version = run_install_cell(older, tmp_path, missing="nothing")   # this environment's icllib is 0.1.0
    assert wrong_version.returncode != 0 and "this chapter needs icllib 0.0.1" in wrong_version.stderr


def test_the_sites_downloads_pin_the_wheel_the_build_makes():
    digest = notebook_install.wheel_digest(ROOT)
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        assert hashlib.sha256(notebook_install.build_wheel(ROOT, Path(folder)).read_bytes()).hexdigest() == digest


def test_a_download_in_one_call_fills_in_the_glued_values_kept_beside_the_execution(tmp_path):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_markdown_cell("T = {glue:text}`t:.2f`.")]
    executed = tmp_path / "tiny.ipynb"
    nbformat.write(notebook, executed)
    (tmp_path / "tiny.glue.json").write_text(
        '{"t": {"data": {"text/plain": "0.956"}, "metadata": {"scrapbook": {"name": "t"}}, '
        '"output_type": "display_data"}}', encoding="utf-8")
    plain = notebook_download.downloadable(executed, solutions=False, site_url=None, page="notebooks/tiny")
    assert plain.cells[0].metadata["tags"] == [notebook_install.INSTALL_MARK]
    assert plain.cells[1].source == "T = 0.96."


def test_the_wheel_holds_the_library_and_its_registry_and_requires_only_the_science_stack(tmp_path):
    import tomllib
    import zipfile

    wheel = notebook_install.build_wheel(ROOT, tmp_path / "a")
    assert wheel.name == notebook_install.wheel_name(ROOT)
    names = zipfile.ZipFile(wheel).namelist()
    import source_archive   # the wheel packs what git tracks, as the archive does

    registry = {path.name for path in source_archive.source_files(ROOT / "src" / "icllib" / "registry")
                if path.suffix == ".yaml" and path.parent.name == "registry"}
    assert registry and {f"icllib/registry/{name}" for name in registry} <= set(names)
    assert "icllib/registry/paper_results.json" in names and "icllib/claims.py" in names
    metadata = zipfile.ZipFile(wheel).read(f"icllib-{wheel.name.split('-')[1]}.dist-info/METADATA").decode()
    required = re.findall(r"^Requires-Dist: (.+)$", metadata, re.MULTILINE)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert set(required) == set(project["dependencies"]) | {
        f'{requirement}; extra == "{extra}"' for extra, requirements in project["optional-dependencies"].items()
        for requirement in requirements}
    assert "torch==2.13.0" in required and 'gensim==4.4.0; extra == "text"' in required
    assert not [name for name in required if re.match(r"(jupyter|sphinx|myst|pytest|black|nbval)", name)]
    assert notebook_install.build_wheel(ROOT, tmp_path / "b").read_bytes() == wheel.read_bytes(), "reproducible"


def test_a_chapter_that_glues_values_runs_without_myst_nb(tmp_path):
    source = notebook_install.install_source(wheel_name=WHEEL, wheel_sha256=SHA256, site_url=None, text_extra=False,
                                              archive_name="icl-book-source.tar.xz", glue_shim=True)
    chapter_code = "from myst_nb import glue\nglue('shown', 41 + 1)\nglue('hidden', 7, display=False)\n"
    ran = run_install_cell(source + "\n" + chapter_code, tmp_path, missing="myst_nb")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split() == ["42"], "displays what it is asked to display, nothing else"
    glued = chapter(ROOT / "notebooks" / "induction_emergence.py")
    assert notebook_install.imports_myst_nb(glued) == ("from myst_nb import glue" in markdown_and_code(glued))
    assert not notebook_install.imports_myst_nb(chapter(ROOT / "notebooks" / "balance.py"))


def markdown_and_code(notebook) -> str:
    return "\n".join(cell.source for cell in notebook.cells)


def launched(edition: str, repository: str = "https://github.com/example-org/icl-book") -> list[dict]:
    """The header buttons ``launch_the_download`` leaves on a chapter page of ``edition`` ("" or "student")."""
    from types import SimpleNamespace

    config = SimpleNamespace(course_edition=edition, html_theme_options={
        "repository_url": repository, "launch_buttons": {"colab_branch": "gh-pages"}})
    context = {"ipynb_source": "notebooks/balance.ipynb", "header_buttons": [{"buttons": [
        {"text": "Binder", "url": "https://mybinder.org/v2/gh/example-org/icl-book/main"},
        {"text": "Colab", "url": "https://colab.research.google.com/github/example-org/icl-book/blob/main/x.py"}]},
        {"buttons": [{"label": "download-source-button", "text": ".ipynb"},
                     {"label": "download-source-button", "text": ".py"}]}]}
    notebook_download.launch_the_download(SimpleNamespace(config=config), "notebooks/balance", "page.html", context,
                                          None)
    return [button for group in context["header_buttons"] for button in group["buttons"]]


def test_colab_opens_the_editions_own_download_and_the_student_edition_has_no_binder():
    colab = "https://colab.research.google.com/github/example-org/icl-book/blob/gh-pages/"
    published = {button["text"]: button.get("url") for button in launched("")}
    assert published == {"Binder": "https://mybinder.org/v2/gh/example-org/icl-book/main",
                         "Colab": f"{colab}_sources/notebooks/balance.ipynb", ".ipynb": None}
    # the student edition lies in course/student/ of the published site; Binder would open the repository's text
    # notebook, solutions and all
    student = {button["text"]: button.get("url") for button in launched("student")}
    assert student == {"Colab": f"{colab}course/student/_sources/notebooks/balance.ipynb", ".ipynb": None}
    assert [button["text"] for button in launched("student", "https://gitlab.com/org/book")] == [".ipynb"]
    assert notebook_download.edition_folder(type("Config", (), {"course_edition": "student"})) == "course/student/"
    assert notebook_download.edition_folder(type("Config", (), {})) == ""


def test_a_figure_with_a_slider_is_downloaded_as_its_default_frame_alone():
    """The frames and script of a figure with a slider stay on the page; the download keeps its image/png."""
    notebook = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("display(figure)")
    slider = {"text/html": '<div class="icl-slider" id="x"><svg></svg></div>', "image/png": "iVBORw0KGgo=",
              "text/plain": "Figure with a slider over 3 frames: ..."}
    table = {"text/html": "<table></table>", "text/plain": "a table"}
    cell.outputs = [nbformat.v4.new_output("display_data", data=dict(slider)),
                    nbformat.v4.new_output("display_data", data=dict(table))]
    notebook.cells.append(cell)
    still = notebook_download.still_figures(notebook).cells[0].outputs
    assert set(still[0]["data"]) == {"image/png", "text/plain"}
    assert still[1]["data"] == table
