"""The archived runs as an RO-Crate: ``results/ro-crate-metadata.json``, written from the archives alone.

``python tools/ro_crate.py`` describes every archived full run (``results/full/<chapter>.json``, written by
``make paper-scale``) and every deciding run (``results/deciding/<experiment>/<run>.json``, written by
``python -m icllib.deciding run``) in the `RO-Crate <https://w3id.org/ro/crate>`_ format, a JSON-LD file that
provenance tools read without knowing this book. Both drivers write it again after they archive;
``python tools/ro_crate.py --check`` (and ``tests/test_ro_crate.py``) fails when it no longer describes the
archives as they are. The file travels in the source archive (it lies in ``results/``) and on the site, in
``provenance/`` beside copies of the archives it names (``_ext/site_assets.py``).

The crate's root is the ``results/`` folder. It follows RO-Crate 1.3 and its Process Run Crate profile 0.6: the
profile's first version for RO-Crate 1.2 or later (its compatibility table supports no profile version on 1.2
itself). Each run is a ``CreateAction``:

- ``instrument``: the chapter's notebook, or the deciding experiment, at the commit the run recorded
  (``SoftwareSourceCode`` with that ``version``);
- ``agent``: the machine the run recorded (an ``IndividualProduct``; the archives keep no host name);
- ``startTime`` and ``endTime``: a full run records when it started, a deciding run when it ended (to the minute),
  and both their wall time, from which the other end follows;
- ``additionalProperty``: ``PropertyValue`` s for the wall time, the device, the CUDA version (``none`` on the
  CPU) and the PyTorch version (``not recorded`` where an older deciding run kept none);
- ``result``: the archive file, a ``File`` with its size and SHA-256; ``actionStatus`` is failed for a partial
  full run (its ``error`` says why it stopped).

Plain ``json``: the JSON-LD contexts are named by URL, never fetched. The file is the same for the same archives
(sorted, no generation date), so it changes only when a run is archived.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import re
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
CRATE_FILE = "ro-crate-metadata.json"
RO_CRATE = "https://w3id.org/ro/crate/1.3"
CONTEXT = [f"{RO_CRATE}/context", "https://w3id.org/ro/terms/workflow-run/context"]   # named, never fetched
PROFILE = "https://w3id.org/ro/wfrun/process/0.6"
LICENSE = "https://creativecommons.org/licenses/by/4.0/"   # the book's text and figures, as LICENSE-TEXT
DATE_FORMAT = "%Y-%m-%d %H:%M UTC"   # the archives' "date"
FULL, DECIDING = "full", "deciding"


def archives(results: Path) -> list[Path]:
    """The archive files under ``results``: ``full/*.json`` and ``deciding/*/*.json``, sorted."""
    results = Path(results)
    return sorted([*results.glob(f"{FULL}/*.json"), *results.glob(f"{DECIDING}/*/*.json")])


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._]+", "-", text).strip("-").lower()


def _iso(moment: datetime.datetime) -> str:
    return moment.isoformat(timespec="seconds")


def _times(run: dict, kind: str) -> tuple[str, str]:
    """``startTime`` and ``endTime``: a full run's ``date`` is its start, a deciding run's its end."""
    date = datetime.datetime.strptime(run["date"], DATE_FORMAT).replace(tzinfo=datetime.timezone.utc)
    wall = datetime.timedelta(seconds=round(float(run["wall_s"])))
    return (_iso(date), _iso(date + wall)) if kind == FULL else (_iso(date - wall), _iso(date))


def _versions(run: dict) -> tuple[str, str, str]:
    """The device, CUDA and PyTorch versions a run recorded (a CUDA device's description names both)."""
    device = run.get("device", "cpu")   # full runs archived before ICLLIB_DEVICE existed ran on the CPU
    cuda = re.search(r"CUDA ([^,)]+)", device)
    torch = re.search(r"torch ([^,)]+)", device)
    torch = torch[1] if torch else run.get("versions", {}).get("torch", "not recorded")
    return device, cuda[1] if cuda else "none", torch


def _property(action: str, name: str, value, **more) -> dict:
    return {"@id": f"{action}-{_slug(name)}", "@type": "PropertyValue", "name": name, "value": value, **more}


def _file(results: Path, path: Path) -> dict:
    data = path.read_bytes()
    return {"@id": path.relative_to(results).as_posix(), "@type": "File", "name": path.name,
            "encodingFormat": "application/json", "contentSize": str(len(data)),
            "sha256": hashlib.sha256(data).hexdigest()}


def describe_run(results: Path, path: Path) -> list[dict]:
    """The entities describing the archive ``path`` (under ``results``): its ``CreateAction`` first, then its
    instrument, agent, ``PropertyValue`` s and ``File``. Raises ``ValueError`` naming the file when it is not an
    archived run."""
    try:
        run = json.loads(Path(path).read_text(encoding="utf-8"))
        kind = Path(path).relative_to(results).parts[0]
        if kind == FULL:
            what, label = run["chapter"], f"chapter {run['chapter']} (notebooks/{run['chapter']}.py)"
            name, action = f"Full-mode run of chapter {what}", f"#run-full-{_slug(what)}"
            command = f"make paper-scale CHAPTER={what}"
        else:
            what, label = run["experiment"], f"deciding experiment {run['experiment']} (src/icllib/deciding.py)"
            name, action = f"Deciding run {run['run']} of {what}", f"#run-deciding-{_slug(what)}-{_slug(run['run'])}"
            command = f"python -m icllib.deciding run {what} --runs {run['run']}"
        start, end = _times(run, kind)
        commit = str(run["commit"])
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise ValueError(f"{path}: not an archived run ({type(error).__name__}: {error})") from None
    device, cuda, torch = _versions(run)
    instrument = f"#{kind}-{_slug(what)}@{_slug(commit.split()[0])}"
    agent = f"#machine-{_slug(run['machine'])}"
    properties = [_property(action, "wall time", run["wall_s"], unitCode="SEC", unitText="s"),
                  _property(action, "device", device), _property(action, "CUDA version", cuda),
                  _property(action, "torch version", torch)]
    entry = {"@id": action, "@type": "CreateAction", "name": name, "description": command,
             "instrument": {"@id": instrument}, "agent": {"@id": agent}, "startTime": start, "endTime": end,
             "result": {"@id": Path(path).relative_to(results).as_posix()},
             "additionalProperty": [{"@id": item["@id"]} for item in properties],
             "actionStatus": {"@id": "http://schema.org/CompletedActionStatus"}}
    if run.get("partial"):
        entry.update(actionStatus={"@id": "http://schema.org/FailedActionStatus"},
                     error=f"partial run: {run.get('stopped', 'stopped before its last cell')}")
    return [entry,
            {"@id": instrument, "@type": "SoftwareSourceCode", "name": f"The book's {label} at commit {commit}",
             "version": commit, "programmingLanguage": "Python"},
            {"@id": agent, "@type": "IndividualProduct", "name": run["machine"],
             "description": "The machine the run recorded (its CPU, cores and system; a GPU run names its GPU)"},
            *properties, _file(results, Path(path))]


def build_crate(results: Path = RESULTS) -> dict:
    """The RO-Crate metadata document describing every archive under ``results`` (:func:`archives`)."""
    results = Path(results)
    graph: dict[str, dict] = {}
    actions, files = [], []
    for path in archives(results):
        entities = describe_run(results, path)
        actions.append({"@id": entities[0]["@id"]})
        files.append({"@id": entities[-1]["@id"]})
        for entity in entities:
            graph.setdefault(entity["@id"], entity)   # an instrument or a machine shared by several runs
    ends = [entity["endTime"] for entity in graph.values() if entity["@type"] == "CreateAction"]
    published = max(ends)[:10] if ends else datetime.date.today().isoformat()
    root = {"@id": "./", "@type": "Dataset", "name": "Paper-scale and deciding runs of 'How Transformers Learn "
            "In Context'", "description": "Each full-mode run of a chapter (full/) and each pre-registered deciding "
            "run (deciding/), archived with its records, commit, machine, device and wall time.",
            "datePublished": published, "license": {"@id": LICENSE}, "conformsTo": {"@id": PROFILE},
            "hasPart": files, "mentions": actions}
    fixed = [{"@id": CRATE_FILE, "@type": "CreativeWork", "conformsTo": {"@id": RO_CRATE}, "about": {"@id": "./"}},
             root, {"@id": PROFILE, "@type": "CreativeWork", "name": "Process Run Crate", "version": "0.6"},
             {"@id": LICENSE, "@type": "CreativeWork", "name": "CC BY 4.0"}]
    return {"@context": CONTEXT, "@graph": fixed + sorted(graph.values(), key=lambda entity: entity["@id"])}


def crate_text(results: Path = RESULTS) -> str:
    """:func:`build_crate` as the file holds it."""
    return json.dumps(build_crate(results), indent=1, ensure_ascii=False) + "\n"


def write_crate(results: Path = RESULTS) -> Path:
    """Write ``<results>/ro-crate-metadata.json`` from the archives (atomically); returns its path."""
    target = Path(results) / CRATE_FILE
    temporary = target.with_name(f".{CRATE_FILE}.{os.getpid()}.tmp")
    temporary.write_text(crate_text(results), encoding="utf-8")
    os.replace(temporary, target)   # a reader sees the old crate or the new one, never half of one
    return target


def crate_problems(results: Path = RESULTS) -> list[str]:
    """What the crate in ``results`` gets wrong about the archives there: an archive it does not describe as
    the result of a run, a file it names that is absent or whose size or SHA-256 differs, a missing context or
    profile, or any other difference from the crate the archives give now (:func:`build_crate`)."""
    results = Path(results)
    path = results / CRATE_FILE
    if not path.is_file():
        return [f"{path} is missing: run python tools/ro_crate.py"]
    crate = json.loads(path.read_text(encoding="utf-8"))
    graph = {entity["@id"]: entity for entity in crate.get("@graph", [])}
    problems = []
    if crate.get("@context") != CONTEXT or graph.get(CRATE_FILE, {}).get("conformsTo") != {"@id": RO_CRATE}:
        problems.append(f"{path}: not an RO-Crate {RO_CRATE.rsplit('/', 1)[1]} metadata document")
    if graph.get("./", {}).get("conformsTo") != {"@id": PROFILE}:
        problems.append(f"{path}: its root does not conform to {PROFILE}")
    results_of = {entity["result"]["@id"] for entity in graph.values() if entity.get("@type") == "CreateAction"}
    for archive in archives(results):
        if archive.relative_to(results).as_posix() not in results_of:
            problems.append(f"{archive}: archived, but no CreateAction of the crate has it as its result")
    for entity in graph.values():
        if entity.get("@type") == "File":
            problems += _file_problems(results, entity)
    if not problems and crate != build_crate(results):
        problems.append(f"{path}: differs from what the archives give now: run python tools/ro_crate.py")
    return problems


def _file_problems(results: Path, entity: dict) -> list[str]:
    target = results / entity["@id"]
    if not target.is_file():
        return [f"{entity['@id']}: described in the crate, but not in {results}"]
    data = target.read_bytes()
    if entity.get("contentSize") != str(len(data)) or entity.get("sha256") != hashlib.sha256(data).hexdigest():
        return [f"{entity['@id']}: its size or SHA-256 differs from the crate's: run python tools/ro_crate.py"]
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--results", type=Path, default=RESULTS, help="the archives' folder (default: results)")
    parser.add_argument("--check", action="store_true", help="check the crate against the archives; write nothing")
    arguments = parser.parse_args(argv)
    if arguments.check:
        problems = crate_problems(arguments.results)
        for problem in problems:
            print(problem, file=sys.stderr)
        return 1 if problems else 0
    target = write_crate(arguments.results)
    print(f"[ro-crate] {len(archives(arguments.results))} runs described in {target}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
