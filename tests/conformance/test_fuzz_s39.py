"""What a differential fuzz against LoopX 0.4.8 (session 39) found benchledger printing otherwise, held to LoopX's answers.

Each case of ``fuzz_s39/`` is typed as a user types it (``benchledger benchmark
<command> <argv...>``, in the case's folder, its ``stdin`` file on standard
input, in the locale LoopX answered in) and must print what LoopX printed
there, byte for byte, with LoopX's exit status: both formats. LoopX's answers
were recorded by ``python -m tests.conformance.record_fuzz_s39``, never
computed here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conformance.record_fuzz_s39 import FUZZ_CASES, environment, expanded
from tests.helpers import invoke

RUNS = [
    (case, fmt)
    for case in sorted(path for path in FUZZ_CASES.iterdir() if (path / "case.json").is_file())
    for fmt in ("json", "markdown")
]


@pytest.mark.parametrize(("case", "fmt"), RUNS, ids=[f"{case.name}-{fmt}" for case, fmt in RUNS])
def test_prints_what_loopx_printed(case: Path, fmt: str):
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    stdin = (case / spec["stdin"]).read_bytes() if spec.get("stdin") else b""
    result = subprocess.run(
        [sys.executable, "-m", "benchledger", "benchmark", spec["command"], *expanded(spec["argv"][fmt])],
        cwd=case,
        input=stdin,
        capture_output=True,
        timeout=120,
        env=environment(),
    )
    assert result.stdout == (case / f"{fmt}.stdout").read_bytes(), result.stderr
    assert result.returncode == int((case / f"{fmt}.exit").read_text())


# Cases whose fix is in what the ledger stores: a review kept with --goal (its inputs ingested and the review reduced
# from the stored events) prints LoopX's answer as well, on both backends.
STORED = ["lifecycle-raw-object-printed"]


@pytest.mark.parametrize("name", STORED)
def test_a_kept_review_prints_what_loopx_printed(name: str, migrated_url: str, monkeypatch):
    case = FUZZ_CASES / name
    spec = json.loads((case / "case.json").read_text(encoding="utf-8"))
    monkeypatch.chdir(case)
    result = invoke(migrated_url, "benchmark", spec["command"], *spec["argv"]["json"], "--goal", "fuzz-s39")
    assert result.stdout_bytes == (case / "json.stdout").read_bytes()
    assert result.exit_code == int((case / "json.exit").read_text())
