"""The archived runs' RO-Crate (results/ro-crate-metadata.json, tools/ro_crate.py) against the archives: every
archived full and deciding run is a CreateAction whose result is its file, every file it names exists with the
size and SHA-256 it records, and it is what the archives give now; it travels in the source archive and the site."""

import json
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "_ext"))
import ro_crate  # noqa: E402
import site_assets  # noqa: E402
import source_archive  # noqa: E402


def _graph(results: Path) -> dict:
    crate = json.loads((results / ro_crate.CRATE_FILE).read_text(encoding="utf-8"))
    return {entity["@id"]: entity for entity in crate["@graph"]}


def test_the_committed_crate_describes_the_archives_as_they_are():
    assert ro_crate.crate_problems(RESULTS) == [], "run python tools/ro_crate.py and commit the crate"


def test_every_archived_run_is_a_create_action_with_what_the_profile_asks():
    graph = _graph(RESULTS)
    crate = json.loads((RESULTS / ro_crate.CRATE_FILE).read_text(encoding="utf-8"))
    assert crate["@context"][0] == "https://w3id.org/ro/crate/1.3/context"
    assert graph["ro-crate-metadata.json"]["about"] == {"@id": "./"}
    root = graph["./"]
    assert root["conformsTo"] == {"@id": ro_crate.PROFILE} and root["datePublished"] and root["license"]
    actions = {entity["result"]["@id"]: entity for entity in graph.values() if entity["@type"] == "CreateAction"}
    archived = {path.relative_to(RESULTS).as_posix() for path in
                [*RESULTS.glob("full/*.json"), *RESULTS.glob("deciding/*/*.json")]}
    assert archived and set(actions) == archived
    assert {part["@id"] for part in root["hasPart"]} == archived
    assert {mention["@id"] for mention in root["mentions"]} == {action["@id"] for action in actions.values()}
    for path, action in actions.items():
        run = json.loads((RESULTS / path).read_text(encoding="utf-8"))
        assert graph[action["instrument"]["@id"]]["version"] == run["commit"], path
        assert graph[action["agent"]["@id"]]["name"] == run["machine"], path
        assert action["startTime"] < action["endTime"], path
        values = {graph[item["@id"]]["name"]: graph[item["@id"]]["value"] for item in action["additionalProperty"]}
        assert set(values) == {"wall time", "device", "CUDA version", "torch version"}, path
        assert values["wall time"] == run["wall_s"] and values["device"] == run.get("device", "cpu"), path
        assert all(graph[item["@id"]]["@type"] == "PropertyValue" for item in action["additionalProperty"])
        assert graph[path]["@type"] == "File" and graph[path]["contentSize"] == str((RESULTS / path).stat().st_size)


def test_a_cuda_run_names_its_cuda_and_torch_versions():
    graph = _graph(RESULTS)
    action = graph["#run-deciding-b11-batch200-seeds-seed2"]
    values = {graph[item["@id"]]["name"]: graph[item["@id"]]["value"] for item in action["additionalProperty"]}
    assert (values["CUDA version"], values["torch version"]) == ("13.0", "2.11.0+cu130")
    assert action["endTime"].startswith("2026-11-26T05:26")   # a deciding run's date is when it ended


@pytest.fixture
def results(tmp_path):
    """A results folder of one full and one deciding run, copied from the book's, and its crate."""
    for relative in ("full/lsa.json", "deciding/standard-transformer-2048/gpt2-seed1.json"):
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(RESULTS / relative, tmp_path / relative)
    ro_crate.write_crate(tmp_path)
    return tmp_path


def test_the_check_names_a_changed_a_missing_and_an_undescribed_archive(results):
    assert ro_crate.crate_problems(results) == []
    changed = results / "full" / "lsa.json"
    changed.write_text(changed.read_text(encoding="utf-8").replace('"mode"', ' "mode"'), encoding="utf-8")
    assert any(problem.startswith("full/lsa.json: its size or SHA-256 differs") for problem in
               ro_crate.crate_problems(results))
    (results / "deciding" / "standard-transformer-2048" / "gpt2-seed1.json").unlink()
    assert any("gpt2-seed1.json: described in the crate, but not in" in problem
               for problem in ro_crate.crate_problems(results))
    shutil.copy2(RESULTS / "full" / "balance.json", results / "full" / "balance.json")
    assert any("balance.json: archived, but no CreateAction" in problem for problem in ro_crate.crate_problems(results))
    assert ro_crate.main(["--results", str(results), "--check"]) == 1
    assert ro_crate.main(["--results", str(results)]) == 0 and ro_crate.crate_problems(results) == []


def test_a_partial_run_is_a_failed_action_saying_why_it_stopped(results):
    path = results / "full" / "lsa.json"
    run = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**run, "partial": True, "stopped": "stopped by Ctrl-C in cell 2"}), encoding="utf-8")
    action = _graph_of(ro_crate.build_crate(results))["#run-full-lsa"]
    assert action["actionStatus"] == {"@id": "http://schema.org/FailedActionStatus"}
    assert action["error"] == "partial run: stopped by Ctrl-C in cell 2"


def _graph_of(crate: dict) -> dict:
    return {entity["@id"]: entity for entity in crate["@graph"]}


def test_a_file_that_is_not_a_run_is_named():
    with pytest.raises(ValueError, match="pending.yaml: not an archived run"):
        ro_crate.describe_run(RESULTS, RESULTS / "full" / "pending.yaml")


def test_the_crate_travels_in_the_source_archive_and_on_the_site(tmp_path):
    assert "results" in source_archive.MEMBERS
    assert RESULTS / ro_crate.CRATE_FILE in source_archive.source_files(RESULTS)
    app = SimpleNamespace(srcdir=str(ROOT), outdir=str(tmp_path / "html"), builder=SimpleNamespace(format="html"))
    site_assets.copy_run_crate(app, None)
    provenance = tmp_path / "html" / site_assets.PROVENANCE_FOLDER
    assert ro_crate.crate_problems(provenance) == []   # whole: every archive it names lies beside it
