"""Time the chapters (executed as notebooks, per run mode) and the registered kernels.

A kernel module is ``benchmarks/kernels_<module>.py`` with ``KERNELS = {"name": (fast, reference)}``: two
zero-argument callables that compute the same thing, the fast one as the chapter uses it and the
reference as the naive version it replaces. Both are timed in the same run and the ratio is reported.
A reference of ``None`` times the fast callable alone (a budget, where no reference is affordable).
"""

from __future__ import annotations

import argparse
import importlib
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
from executions import machine, read_source, run_kernel  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
RESULTS = ROOT / "benchmarks" / "results.json"


def time_chapter(notebook: Path, mode: str, *, save_to: Path | None = None, allow_errors: bool = False) -> float:
    """Wall time of executing one chapter in a fresh kernel in the given run mode.

    ``save_to``: a folder that receives the executed notebook (also when a cell fails), to read the measured
    values of a long run afterwards. ``allow_errors``: keep executing after a failing cell (a failed check), so
    that one long run reports every check; the failures are printed and the run's time is still returned.
    """
    import nbformat

    notebook_object = read_source(notebook)
    start = time.perf_counter()
    try:
        run_kernel(notebook_object, notebook, mode, ROOT / "_build" / "benchmarks" / "results.jsonl",
                   timeout=7200, allow_errors=allow_errors)
    finally:
        if save_to is not None:
            save_to.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook_object, save_to / f"{notebook.stem}.{mode}.ipynb")
    seconds = time.perf_counter() - start
    for cell in notebook_object.cells:
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                print(f"{notebook.stem} [{mode}]: {output['ename']}: {output['evalue']}", flush=True)
    return seconds


def best_time(function, repeat: int) -> float:
    """Best of ``repeat`` runs; a single run when one run already takes over five seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
        if times[-1] > 5:
            break
    return min(times)


def time_kernels(repeat: int, modules: list[str] | None = None) -> dict[str, dict[str, float]]:
    """Each kernel's times, with when and where they were measured (``modules``: only these, e.g. balance)."""
    results = {}
    measured = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "machine": machine()}
    for path in sorted((ROOT / "benchmarks").glob("kernels_*.py")):
        if modules and path.stem.removeprefix("kernels_") not in modules:
            continue
        module = importlib.import_module(f"benchmarks.{path.stem}")
        for name, (fast, reference) in module.KERNELS.items():
            if reference is None:
                fast_s = best_time(fast, repeat)
                results[f"{path.stem.removeprefix('kernels_')}.{name}"] = {"fast_s": fast_s, **measured}
                print(f"kernel {name}: {fast_s:.4g} s (no reference)", flush=True)
                continue
            fast_s, reference_s = best_time(fast, repeat), best_time(reference, repeat)
            results[f"{path.stem.removeprefix('kernels_')}.{name}"] = {
                "fast_s": fast_s, "reference_s": reference_s, "speedup": reference_s / fast_s, **measured,
            }
            print(f"kernel {name}: fast {fast_s:.4g} s, reference {reference_s:.4g} s, "
                  f"x{reference_s / fast_s:.1f}", flush=True)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--modes", nargs="+", default=["quick", "default"], choices=["quick", "default", "full"])
    parser.add_argument("--chapters", nargs="*", help="notebook names (default: every chapter)")
    parser.add_argument("--no-chapters", action="store_true", help="time only the kernels")
    parser.add_argument("--no-kernels", action="store_true", help="time only the chapters")
    parser.add_argument("--kernels", nargs="*", metavar="MODULE",
                        help="time only the kernels of these modules, e.g. balance (default: all)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per kernel (best is kept)")
    parser.add_argument("--output", type=Path, default=RESULTS)
    parser.add_argument("--save-executed", type=Path, metavar="DIR", help="write the executed notebooks here")
    parser.add_argument("--allow-errors", action="store_true",
                        help="run every cell even after a failed check (the failures are printed)")
    arguments = parser.parse_args()

    results = json.loads(arguments.output.read_text(encoding="utf-8")) if arguments.output.is_file() else {}
    chapters = results.setdefault("chapters", {})
    if not arguments.no_chapters:  # the date and machine at the top are the chapters'; each kernel has its own
        results.update(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                       machine=f"{machine()}, Python {platform.python_version()}")
        names = arguments.chapters or sorted(path.stem for path in NOTEBOOKS.glob("*.py"))
        for name in names:
            for mode in arguments.modes:
                seconds = time_chapter(NOTEBOOKS / f"{name}.py", mode, save_to=arguments.save_executed,
                                       allow_errors=arguments.allow_errors)
                chapters.setdefault(name, {})[mode] = round(seconds, 2)
                print(f"chapter {name} [{mode}]: {seconds:.1f} s", flush=True)
    if not arguments.no_kernels:
        results.setdefault("kernels", {}).update(time_kernels(arguments.repeat, arguments.kernels))
    arguments.output.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {arguments.output.relative_to(ROOT) if arguments.output.is_relative_to(ROOT) else arguments.output}")


if __name__ == "__main__":
    main()
