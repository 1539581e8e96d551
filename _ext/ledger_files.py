"""The ledger's files: the records a build's ledger shows (one file per chapter, gathered into one), the archived
paper-scale runs the site carries, and the machine-readable ledger (ledger.json, ledger.csv, ledger.schema.json)
beside the ledger page. The page itself, its tables and their HTML, is ``ledger_page``'s.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import time
from pathlib import Path

import yaml

import executions
import ledger_history
from icllib import claims as claims_module
from icllib.config import mode

# In the site: the archived full runs (results/full/*.json), linked from the ledger; where the runs' RO-Crate
# (site_assets.copy_run_crate) names them, so that each is shipped once.
PAPER_SCALE_FOLDER = "provenance/full"


# A build keeps its checks' records apart from any other command's: one file per chapter, in a folder of the build's
# own (beside its HTML) and of its run mode, each replaced when its chapter is read again (executions.
# keep_chapter_records). The ledger reads those of this mode for the chapters this build has, and writes them
# together to results_file (what the build published). The notebook tests write elsewhere (claims.results_path), so
# `make test` running beside `make book` cannot put quick-mode numbers in the default ledger, and a check deleted
# from a chapter leaves nothing behind in an incremental build.

def records_folder(app) -> Path:
    """``<build>/claims/build-<mode>/``: this build's records, one ``<chapter>.jsonl`` each."""
    return Path(app.outdir).parent / "claims" / f"build-{mode()}"


def results_file(app) -> Path:
    """``<build>/claims/results.jsonl``: the records this build's ledger shows, one file (written by
    :func:`gather_results`)."""
    return Path(app.outdir).parent / "claims" / "results.jsonl"


def start_fresh_results(app):
    """Point the chapters this build reads at its own records folder; empty it for a fresh environment. A results
    file named in the environment (``ICLLIB_RESULTS``) is not this build's: the build leaves it alone."""
    folder = records_folder(app)
    os.environ[executions.BUILD_RECORDS_VARIABLE] = str(folder)
    os.environ.pop(claims_module.RESULTS_VARIABLE, None)
    if not app.env.all_docs:
        shutil.rmtree(folder, ignore_errors=True)
        results_file(app).unlink(missing_ok=True)


def gather_results(app) -> Path:
    """Write :func:`results_file` from this build's records: those of its run mode, of the chapters the build has
    (a chapter taken out of the book leaves its file, not its records); returns its path."""
    lines = []
    folder = records_folder(app)
    for path in sorted(folder.glob("*.jsonl")) if folder.is_dir() else ():
        if f"notebooks/{path.stem}" not in app.env.found_docs:
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("mode") == mode():
                lines.append(line)
    target = results_file(app)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return target


def copy_paper_scale_records(app, exception):
    """The archived full runs travel with the site, so that the ledger's links to them resolve (after
    ``site_assets.copy_run_crate``, which has put there those its crate describes: the same files)."""
    if exception is None and app.builder.format == "html":
        source = Path(app.srcdir).joinpath(*claims_module.ARCHIVE_FOLDER)
        target = Path(app.outdir) / PAPER_SCALE_FOLDER
        target.mkdir(parents=True, exist_ok=True)
        for path in source.glob("*.json"):
            shutil.copy2(path, target / path.name)


# ledger.json, field by field: the rows' keys and what each holds (the ledger page shows this table, and
# ledger.schema.json states it as a JSON Schema).
LEDGER_FIELDS = {
    "id": ("string", "the claim id, <chapter>.<what>; the row's anchor on the ledger page is claim-<id> with . and _ as -"),
    "chapter": ("string", "the chapter module that checks it (notebooks/<chapter>.py)"),
    "paper": ("string", "the BibTeX key of the paper (book/references.bib)"),
    "location": ("string", "where the published paper states it, in its own numbering (section, theorem, equation, "
                           "figure, appendix), with a short verbatim phrase in quotation marks where that helps a "
                           "search in the PDF"),
    "statement": ("string", "the paper's statement, quoted or closely paraphrased (its mathematics in TeX between $...$)"),
    "verdict": ("string", "one of the seven verdicts, or FAILED when a check of this build failed"),
    "verdict_since": ("string", "the date (YYYY-MM-DD) of the registry commit that gave the row its verdict; "
                                "\"uncommitted\" for a change not yet committed"),
    "verdict_history": ("array", "every change of the row's verdict, oldest first: {commit, from, to} (from is "
                                 "null when the row was added); the top-level commits give each commit's date "
                                 "and reason"),
    "evidence": ("string", "what the book checks, where sharper than the statement (may be empty)"),
    "run": ("string", "for not reproduced: the run at the paper's settings (may be empty)"),
    "deciding_run": ("string", "for inconclusive: the run that would decide it and its cost (may be empty)"),
    "reason": ("string", "for out of scope: why it is not checked (may be empty)"),
    "erratum": ("string", "the erratum it rests on (errata page anchor: the id in lower case, . and _ as -)"),
    "note": ("string", "the note it rests on"),
    "measured": ("array", "the values this build measured, one per check (strings, 6 significant digits)"),
    "check": ("array", "each check: expected value, tolerance and why"),
    "mode": ("string", "the run mode of this build's checks (quick, default, full), empty when none ran"),
    "paper_scale": ("string", "the archived full-mode run's result in words"),
    "paper_scale_measured": ("array", "the archived full-mode run's measured values (numbers or booleans)"),
    "paper_scale_failed": ("boolean", "true when a check of the archived full-mode run failed"),
    "row": ("string", "the row's address on the site, relative to the book folder"),
}
# ledger.csv is the table for a spreadsheet: the long texts and the histories stay in ledger.json (the site's weight).
CSV_LEFT_OUT = ("evidence", "run", "deciding_run", "reason", "verdict_history", "paper_scale_measured")
JSON_TYPES = {"string": {"type": "string"}, "boolean": {"type": "boolean"}, "array": {"type": "array"}}


def book_release(app) -> dict:
    """The book's version and release date (CITATION.cff) and the date of this build."""
    citation = yaml.safe_load((Path(app.srcdir) / "CITATION.cff").read_text(encoding="utf-8"))
    return {"book": citation.get("title", ""), "version": str(citation.get("version", "")),
            "released": str(citation.get("date-released", "")), "built": time.strftime("%Y-%m-%d", time.gmtime()),
            "mode": mode()}


def ledger_row(claim, verdict: str, since: dict, history: list[dict], measured: list, checks: list, run_mode: str,
               full_run: str, full_records: list[dict], failed_at_paper_scale: bool, row: str) -> dict:
    """A claim's row of ledger.json (the fields of :data:`LEDGER_FIELDS`)."""
    return {
        "id": claim.id, "chapter": claim.chapter, "paper": claim.paper, "location": claim.location,
        "statement": claim.statement, "verdict": verdict,
        "verdict_since": (since[claim.id]["date"] or ledger_history.UNCOMMITTED) if claim.id in since else "",
        "verdict_history": history,
        "evidence": claim.evidence or "", "run": claim.run or "", "deciding_run": claim.deciding_run or "",
        "reason": claim.reason or "", "erratum": claim.erratum or "", "note": claim.note or "",
        "measured": measured, "check": checks, "mode": run_mode, "paper_scale": full_run,
        "paper_scale_measured": [record["measured"] for record in full_records],
        "paper_scale_failed": failed_at_paper_scale,
        "row": row,
    }


# What the ledger's search reads of a row: every column of ledger.json but the row's own address; the verdicts of its
# history count ("corrected" finds a row corrected once), the commits do not.
SEARCH_LEFT_OUT = ("row", "paper_scale_failed")


def search_text(row: dict) -> str:
    """A ledger.json row as the ledger's search reads it: every column's text, lists joined, in lower case,
    ASCII as the registry writes it (``eta_y``); ledger.js adds each text's Unicode form (``ηy``) and folds the
    reader's query the same way, so that "eta_y", "ηY" and "inconclusive" all find their rows.

    Raises ``ValueError`` naming ``row`` for anything but a mapping of ledger.json's fields."""
    if not isinstance(row, dict) or "id" not in row:
        raise ValueError(f"row must be a row of ledger.json (a dict with its id), got {row!r:.60}")
    parts: list[str] = []
    for key, value in row.items():
        if key in SEARCH_LEFT_OUT or value is None:
            continue
        if key == "verdict_history":
            parts += [str(change.get("to") or "") for change in value]
        elif isinstance(value, list):
            parts += [str(item) for item in value]
        else:
            parts.append(str(value))
    return " ".join(" ".join(part.split()) for part in parts if part).lower()


def write_machine_readable_ledger(folder: Path, rows: list[dict], release: dict, commits: dict) -> None:
    """``ledger.json``, ``ledger.csv`` and ``ledger.schema.json`` beside the ledger page: the rows of its
    tables, in the same order, with the book's version and the build's date (several measured values or checks
    of one claim are joined by " | " in the CSV)."""
    folder.mkdir(parents=True, exist_ok=True)
    fields = {name: description for name, (_kind, description) in LEDGER_FIELDS.items()}
    document = {**release, "fields": fields, "commits": commits, "rows": rows}
    (folder / "ledger.json").write_text(json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n",
                                        encoding="utf-8")
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "ledger.json of the book " + release["book"],
        "type": "object",
        "required": [*release, "fields", "commits", "rows"],
        "properties": {**{key: {"type": "string"} for key in release}, "fields": {"type": "object"},
                       "commits": {"type": "object", "description": "the registry commits the rows' histories "
                                   "name: {date, why}"},
                       "rows": {"type": "array", "items": {
                           "type": "object", "required": list(LEDGER_FIELDS), "additionalProperties": False,
                           "properties": {name: {**JSON_TYPES[kind], "description": description}
                                          for name, (kind, description) in LEDGER_FIELDS.items()}}}},
    }
    (folder / "ledger.schema.json").write_text(json.dumps(schema, indent=1) + "\n", encoding="utf-8")
    with open(folder / "ledger.csv", "w", newline="", encoding="utf-8") as handle:
        names = [name for name in LEDGER_FIELDS if name not in CSV_LEFT_OUT] + ["book_version", "built"]
        writer = csv.DictWriter(handle, fieldnames=names)
        writer.writeheader()
        for row in rows:
            line = {key: " | ".join(map(str, value)) if isinstance(value, list) else value
                    for key, value in row.items() if key not in CSV_LEFT_OUT}
            writer.writerow({key: spreadsheet_safe(value) for key, value in
                             {**line, "book_version": release["version"], "built": release["built"]}.items()})


# A spreadsheet evaluates a cell that starts with one of these as a formula (=HYPERLINK(...), +cmd|...).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value):
    """A CSV cell that no spreadsheet evaluates: text starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return gets a leading ``'``, as OWASP advises for CSV injection; a number (``-0.25``) stays as it is."""
    if not isinstance(value, str) or not value.startswith(FORMULA_STARTS):
        return value
    try:
        float(value)
    except ValueError:
        return "'" + value
    return value
