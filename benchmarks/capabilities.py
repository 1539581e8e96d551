"""The chapters on other CPUs' kernels: each check's difference against its tolerance, run on one machine.

A float32 result differs in its last digits from one CPU to the next: PyTorch picks AVX-512, AVX2 or generic
kernels (``ATEN_CPU_CAPABILITY``), NumPy its own SIMD paths (``NPY_DISABLE_CPU_FEATURES``), MKL and OpenBLAS
theirs (``MKL_ENABLE_INSTRUCTIONS``, ``OPENBLAS_CORETYPE``). :data:`PROFILES` sets all four as a CPU of each
kind would, so one machine runs the chapters as others do.

    python -m benchmarks.capabilities report [--mode quick] [PROFILE ...]   # benchmarks/capabilities.{json,md}
    python -m benchmarks.capabilities test PROFILE                         # the notebook tests on PROFILE

``report`` executes every chapter under its own kernels and under each profile (each in its own execution
cache under ``_build/capabilities/``), then compares each profile's records with the native ones by
``tools/compare_records.py --margins``: per check, the largest difference against the slack the native value
leaves before its check fails. ``test`` is ``make test``'s second leg (``make test-kernels``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import compare_records  # noqa: E402
from execution_keys import CPU_KERNEL_VARIABLES  # noqa: E402
from executions import machine  # noqa: E402

# NumPy 2.4 dispatches by group: X86_V3 is AVX2 and FMA, X86_V4 and AVX512_* are AVX-512 (X86_V2 is its floor).
PROFILES = {
    "avx512": {"ATEN_CPU_CAPABILITY": "avx512", "MKL_ENABLE_INSTRUCTIONS": "AVX512", "OPENBLAS_CORETYPE": "SkylakeX"},
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "NPY_DISABLE_CPU_FEATURES": "X86_V4 AVX512_ICL AVX512_SPR",
             "MKL_ENABLE_INSTRUCTIONS": "AVX2", "OPENBLAS_CORETYPE": "Haswell"},
    "default": {"ATEN_CPU_CAPABILITY": "default", "NPY_DISABLE_CPU_FEATURES": "X86_V3 X86_V4 AVX512_ICL AVX512_SPR",
                "MKL_ENABLE_INSTRUCTIONS": "SSE4_2", "OPENBLAS_CORETYPE": "Prescott"},
}
CHAPTERS = sorted(path.stem for path in (ROOT / "notebooks").glob("*.py"))
OUTPUT = ROOT / "benchmarks" / "capabilities"


def environment(profile: str | None) -> dict[str, str]:
    """This process's variables with ``profile``'s kernels (None: the CPU's own, as this shell sets them)."""
    if profile is not None and profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    variables = dict(os.environ)
    if profile is not None:
        for name in CPU_KERNEL_VARIABLES:
            variables.pop(name, None)
        variables.update(PROFILES[profile])
    return variables


def kernels_in_use(variables: dict[str, str]) -> dict[str, str]:
    """What PyTorch and NumPy report they run on under ``variables`` (asked of a fresh interpreter)."""
    probe = ("import json, numpy, torch; from numpy._core._multiarray_umath import __cpu_features__ as f;"
             "print(json.dumps({'torch': torch.backends.cpu.get_cpu_capability(),"
             "'numpy': max((k for k in ('X86_V2', 'X86_V3', 'X86_V4') if f.get(k)), default='?')}))")
    out = subprocess.run([sys.executable, "-c", probe], env=variables, capture_output=True, text=True, check=True)
    return {**json.loads(out.stdout), **{name: variables.get(name, "") for name in CPU_KERNEL_VARIABLES}}


def run_chapters(profile: str | None, mode: str, jobs: int) -> tuple[Path, float]:
    """Execute every chapter under ``profile`` into its own cache; that folder and the wall time."""
    folder = ROOT / "_build" / "capabilities" / (profile or "native")
    variables = {**environment(profile), "ICLLIB_MODE": mode, "ICLLIB_EXECUTIONS": str(folder)}
    started = time.perf_counter()
    subprocess.run([sys.executable, str(ROOT / "_ext" / "executions.py"), "--jobs", str(jobs)], cwd=ROOT,
                   env=variables, check=True)
    return folder, time.perf_counter() - started


def export(folder: Path, chapter: str, mode: str) -> Path:
    """The records of the latest execution of ``chapter`` in ``mode`` stored in the profile's own cache ``folder``
    (the newest by file time: the run just made, even if a source was edited since)."""
    wanted = {"notebook": f"{chapter}.py", "mode": mode}
    stored = [facts for facts in folder.glob("*.json")
              if wanted.items() <= json.loads(facts.read_text(encoding="utf-8")).items()]
    if not stored:
        raise RuntimeError(f"{folder} holds no {mode} execution of {chapter}.py")
    latest = max(stored, key=lambda facts: facts.stat().st_mtime)
    out = folder / f"{chapter}.{mode}.jsonl"
    out.write_text(latest.with_suffix(".records.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    return out


def report(profiles: list[str], mode: str, jobs: int) -> int:
    """Run, compare, and write ``benchmarks/capabilities.json`` and ``.md``; exit status 1 on a thin margin."""
    runs = {}
    for profile in [None, *profiles]:
        folder, seconds = run_chapters(profile, mode, jobs)
        runs[profile or "native"] = {"kernels": kernels_in_use(environment(profile)), "seconds": round(seconds, 1),
                                     "records": {c: export(folder, c, mode) for c in CHAPTERS}}
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine(), "mode": mode,
              "thin": compare_records.THIN, "runs": {}, "chapters": {}}
    lines = [f"# The chapters on other CPUs' kernels ({mode} mode)", "",
             f"Measured {result['date']} on {result['machine']} by `python -m benchmarks.capabilities report`.",
             "Each profile's run against the native one: per check, the largest difference of its measured value,",
             "the native value's slack (how far it may move before its check fails) and the share of that slack",
             f"used; a share of {compare_records.THIN} or more is a thin margin, a flip is a pass in one run and a",
             "failure in the other. Yes/no checks must give the same answer.", ""]
    for name, run in runs.items():
        result["runs"][name] = {"kernels": run["kernels"], "seconds": run["seconds"]}
        kernels = ", ".join(f"{k}={v}" for k, v in run["kernels"].items() if v)
        lines.append(f"- **{name}**: {kernels}; all chapters in {run['seconds']:.0f} s")
    problems = 0
    for chapter in CHAPTERS:
        native = compare_records.records_by_id(runs["native"]["records"][chapter])
        lines += ["", f"## {chapter}", ""]
        result["chapters"][chapter] = {}
        for profile in profiles:
            other = compare_records.records_by_id(runs[profile]["records"][chapter])
            found = compare_records.margins(native, other)
            missing = compare_records.unmatched(native, other)
            smallest = max(found, key=lambda m: (m.share, m.difference), default=None)
            thin = [m.claim for m in found if m.thin]
            problems += len(thin) + len(missing)
            result["chapters"][chapter][profile] = {
                "checks": len(found), "thin": thin, "unmatched": missing,
                "smallest margin": None if smallest is None else
                {"check": smallest.claim, "share": smallest.share, "difference": smallest.difference}}
            lines += [f"### {profile} against native: {len(found)} checks, {len(thin)} thin, "
                      f"{len(missing)} unmatched" + (f"; smallest margin `{smallest.claim}` "
                                                     f"({smallest.share:.2g} of its slack)" if smallest else ""),
                      "", compare_records.margin_table(found), ""]
    OUTPUT.with_suffix(".json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    OUTPUT.with_suffix(".md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{problems} thin margins or unmatched checks; wrote {OUTPUT.with_suffix('.md').relative_to(ROOT)}")
    return 1 if problems else 0


def test(profile: str, jobs: int) -> int:
    """The notebook tests (every chapter, quick mode) under ``profile``'s kernels."""
    variables = {**environment(profile), "ICLLIB_MODE": os.environ.get("ICLLIB_MODE", "quick")}
    print(f"[kernels] notebooks under {profile}: {kernels_in_use(variables)}", flush=True)
    command = [sys.executable, "-m", "pytest", "-q", "-n", str(jobs), "--dist", "loadfile", "notebooks"]
    return subprocess.run(command, cwd=ROOT, env=variables).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    compare = commands.add_parser("report", help="run every chapter under each profile and compare the records")
    compare.add_argument("profiles", nargs="*", help=f"default: all of {', '.join(PROFILES)}")
    compare.add_argument("--mode", default="quick", choices=("quick", "default"))
    check = commands.add_parser("test", help="the notebook tests under one profile's kernels")
    check.add_argument("profile", choices=list(PROFILES))
    for sub in (compare, check):
        sub.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    arguments = parser.parse_args(argv)
    if arguments.command == "report":
        for profile in arguments.profiles:
            environment(profile)   # refuses an unknown profile before an hour of runs
        return report(arguments.profiles or list(PROFILES), arguments.mode, arguments.jobs)
    return test(arguments.profile, arguments.jobs)


if __name__ == "__main__":
    sys.exit(main())
