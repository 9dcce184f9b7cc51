"""The projection fold compiled by mypyc, against the fold as benchledger ships it (issue 31 item 4's structural step).

    .venv/bin/python -m benchmarks.compiled_fold                       # a 2x10^4-event ledger, 3 rounds, 2 pairs of runs
    .venv/bin/python -m benchmarks.compiled_fold --ledger /tmp/fold.sqlite --rounds 3 --pairs 2

Item 4 asks for the fold at 0.4x read + decode; written in Python it measures 0.14-0.23x here, and its profile is
spread over eight reducers and the linking rules (benchmarks/README.md, "The projection fold alone"). What would
a compiled fold give? ``projections/`` is typed under ``mypy --strict``, which is what mypyc compiles: this script

1. copies the installed ``benchledger`` package into a scratch folder (the strict editable install's link tree
   dereferenced) and compiles its ``projections/`` there with mypyc (needs gcc, the Python headers and mypy, which
   the ``test`` extra brings; about a minute and a half on 2 cores); the ledger and the CLI stay Python;
2. checks that the compiled fold's rows are the shipped fold's byte for byte (``benchmarks.fold_stages --rows-digest``
   run with each copy: every row of three folds of each goal);
3. runs ``benchmarks.fold_stages`` with each copy in turn, ``--pairs`` times (shipped, compiled, shipped, ...: a load
   that moves moves both), each in a process of its own on the same ledger, and prints the best of each measurement
   and the ratios: the fold against read + decode (read + decode is the json module's in both), and
   ``replay --jobs 1`` against the fold.

Nothing here is installed: the compiled copy lives in the scratch folder and is gone when the script ends.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import benchledger

REPO = Path(__file__).resolve().parents[1]
MEASURED = {"read": "read + json.loads", "fold": "fold alone", "replay": "`replay --jobs 1`"}


def compiled_copy(scratch: Path) -> Path:
    """A copy of the installed package whose ``projections/`` mypyc compiled; returns the folder to put on PYTHONPATH."""
    root = scratch / "compiled"
    # (not resolved: a strict editable install links each file, and the link tree is the package as a wheel lays it out)
    shutil.copytree(Path(benchledger.__file__).parent, root / "benchledger", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__"))
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "mypyc", "benchledger/projections/"], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"mypyc failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    built = sorted(root.glob("benchledger/projections/**/*.so"))
    print(f"mypyc compiled {len(built)} modules of projections/ in {time.perf_counter() - started:.0f} s")
    return root


def fold_stages(ledger: Path, rounds: int, *extra: str, path: Path | None = None) -> str:
    """``benchmarks.fold_stages`` in a process of its own, with ``path`` first on PYTHONPATH (the compiled copy)."""
    env = {"PYTHONPATH": str(path)} if path is not None else {}
    command = [sys.executable, "-m", "benchmarks.fold_stages", "--ledger", str(ledger), "--rounds", str(rounds), *extra]
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env={**_environment(), **env})
    if done.returncode != 0:
        raise SystemExit(f"benchmarks.fold_stages failed:\n{done.stdout[-4000:]}{done.stderr[-4000:]}")
    return done.stdout


def _environment() -> dict[str, str]:
    return {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}


def rates(output: str) -> dict[str, float]:
    """The events/s of each measurement of a fold_stages table."""
    found = {}
    for name, label in MEASURED.items():
        match = re.search(rf"^\| {re.escape(label)} \| ([0-9,]+) \|", output, re.MULTILINE)
        if match is None:
            raise SystemExit(f"no {label!r} row in benchmarks.fold_stages' output:\n{output}")
        found[name] = float(match[1].replace(",", ""))
    return found


def compiled_module(path: Path) -> str:
    """Where the compiled copy's projector comes from (a check that the run used the compiled modules)."""
    done = subprocess.run(
        [sys.executable, "-c", "import benchledger.projections.projector as p; print(p.__file__)"],
        cwd=REPO, capture_output=True, text=True, env={**_environment(), "PYTHONPATH": str(path)}, check=True,
    )
    return done.stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each fold_stages run (best of them)")
    parser.add_argument("--pairs", type=int, default=2, help="runs of each copy, alternated")
    parser.add_argument("--ledger", type=Path, default=None, help="SQLite file of the ledger: built when absent, reused when present")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="benchledger-compiled-") as scratch:
        ledger = args.ledger or Path(scratch) / "fold.sqlite"
        compiled = compiled_copy(Path(scratch))
        projector = compiled_module(compiled)
        if not projector.endswith(".so"):
            raise SystemExit(f"the compiled copy's projector is not the compiled module: {projector}")
        shipped_rows = fold_stages(ledger, 1, "--rows-digest").strip()
        compiled_rows = fold_stages(ledger, 1, "--rows-digest", path=compiled).strip()
        same = shipped_rows == compiled_rows
        print(f"rows, shipped:  {shipped_rows}\nrows, compiled: {compiled_rows}\n{'the same' if same else 'DIFFERENT'}")
        if not same:
            return 1
        best: dict[str, dict[str, float]] = {"shipped": {}, "compiled": {}}
        for _ in range(args.pairs):
            for copy, path in (("shipped", None), ("compiled", compiled)):
                for name, rate in rates(fold_stages(ledger, args.rounds, path=path)).items():
                    best[copy][name] = max(best[copy].get(name, 0.0), rate)
    print(f"\nBest of {args.pairs} runs of each, {args.rounds} rounds a run (events/s, CPU time of each process):")
    print("| | read + decode | fold alone | fold ÷ read + decode (target ≥ 0.4) | `replay --jobs 1` | replay ÷ fold (target ≥ 0.7) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for copy, found in best.items():
        print(f"| {copy} | {found['read']:,.0f} | {found['fold']:,.0f} | {found['fold'] / found['read']:.3f}x | "
              f"{found['replay']:,.0f} | {found['replay'] / found['fold']:.3f}x |")
    print(f"\ncompiled ÷ shipped: fold {best['compiled']['fold'] / best['shipped']['fold']:.2f}x, "
          f"replay {best['compiled']['replay'] / best['shipped']['replay']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
