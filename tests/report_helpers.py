"""The report tests' ledgers: the shipped demo goal, and the same goal with hostile artifact text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.helpers import invoke

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo"
SCRIPT = "<script>alert(1)</script>"
IMAGE = "<img src=x onerror=alert(1)>"
HOSTILE_TEXTS = (SCRIPT, IMAGE)


def ingest_demo(url: str, goal: str) -> None:
    """The quickstart's ingests, as a user types them (examples/quickstart.sh)."""
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        assert invoke(url, "ingest", "--goal", goal, "--kind", kind, str(DEMO / name)).exit_code == 0
    assert invoke(url, "ingest", "--goal", goal, str(DEMO / "04-run-baseline.json")).exit_code == 0
    runs = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", goal, *runs).exit_code == 0


def ingest_hostile(url: str, goal: str, folder: Path) -> None:
    """The demo's runs and comparison with markup in job names, modes, labels, task and comparison ids."""
    folder.mkdir(parents=True, exist_ok=True)
    documents = {name: json.loads((DEMO / name).read_text()) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")}
    for name, arm in (("04-run-baseline.json", "baseline"), ("05-run-treatment.json", "treatment")):
        run = documents[name]
        run["job_name"] = f"{SCRIPT}-{arm}"
        run["mode"] = f"{IMAGE}-{arm}"
        run["failure_attribution_labels"] = [SCRIPT, IMAGE]
    comparison = documents["06-comparison.json"]
    comparison["task_id"] = SCRIPT
    comparison["comparison_id"] = IMAGE
    comparison["baseline_scenario_id"] = f"{IMAGE}-baseline"
    comparison["treatment_scenario_id"] = f"{IMAGE}-treatment"
    paths = []
    for name, document in documents.items():
        (folder / name).write_text(json.dumps(document))
        paths.append(str(folder / name))
    result = invoke(url, "ingest", "--goal", goal, *paths)
    assert result.exit_code == 0, result.output


@contextmanager
def pages_of(kind: str, url: str, folder: Path) -> Iterator[str]:
    """The base URL of ``url``'s pages: a report written into ``folder`` (``kind`` "report") or a running ``serve``."""
    if kind == "report":
        output = folder / "site"
        result = invoke(url, "report", "--output", str(output))
        assert result.exit_code == 0, result.output
        yield output.as_uri() + "/"
        return
    with running_serve(url) as (base, _):
        yield base


@contextmanager
def running_serve(url: str, *options: str) -> Iterator[tuple[str, subprocess.Popen]]:
    """``benchledger serve --port 0`` on ``url`` in a child process; yields its base URL once it listens."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchledger", "--database-url", url, "serve", "--port", "0", *options],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        line = process.stdout.readline()
        match = re.search(r"http://[^/]+/", line)
        if match is None:
            process.kill()
            raise AssertionError(f"serve did not announce its URL: {line!r} {process.stderr.read()}")
        yield match.group(0), process
    finally:
        process.terminate()
        process.wait(timeout=10)


PUBLIC_LEDGER = Path(__file__).resolve().parent / "data" / "loopx-public" / "benchmark-run-ledger.json"


def public_runs(folder: Path) -> list[Path]:
    """The public LoopX run ledger's 303 rows as ``benchmark_run_v0`` runs (real modes, real failure labels), one file each."""
    ledger = json.loads(PUBLIC_LEDGER.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for benchmark in ledger["benchmarks"].values():
        for case in benchmark["cases"].values():
            for row in case["runs"]:
                run = {
                    "schema_version": "benchmark_run_v0",
                    "source_runner": "harbor",
                    "benchmark_id": row["benchmark_id"],
                    "job_name": row.get("job_name") or row["run_id"],
                    "mode": row.get("mode") or row.get("arm_id") or "unknown",
                    "real_run": True,
                    "submit_eligible": False,
                    "leaderboard_evidence": False,
                    "official_task_score": {"kind": "verifier_reward", "value": row.get("official_score") or 0.0, "passed": bool(row.get("official_passed"))},
                    "failure_attribution_labels": row.get("failure_labels") or [],
                }
                paths.append(folder / f"run-{row['run_id']}.json")
                paths[-1].write_text(json.dumps(run))
    return paths


def ingest_attempts(url: str, goal: str, folder: Path, count: int) -> None:
    """``count`` attempts of the demo case in one goal, as a team runs it again: each a preflight of its own (a new one opens
    the next attempt), then the demo's launch and post-launch (the same bytes in a new attempt are a new observation),
    its runs and its comparison (named apart)."""
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(1, count + 1):
        preflight = {**json.loads((DEMO / "01-preflight.json").read_text()), "case_attempt": number}
        (folder / f"{number}-preflight.json").write_text(json.dumps(preflight))
        for kind, path in (("preflight", folder / f"{number}-preflight.json"), ("launch", DEMO / "02-launch.json"), ("post-launch", DEMO / "03-post-launch.json")):
            result = invoke(url, "ingest", "--goal", goal, "--kind", kind, str(path))
            assert result.exit_code == 0, result.output
        paths = []
        for name, field, value in (
            ("04-run-baseline.json", "job_name", f"baseline-{number}"),
            ("05-run-treatment.json", "job_name", f"treatment-{number}"),
            ("06-comparison.json", "comparison_id", f"pair-{number}"),
        ):
            document = json.loads((DEMO / name).read_text())
            document[field] = value
            paths.append(folder / f"{number}-{name}")
            paths[-1].write_text(json.dumps(document))
        result = invoke(url, "ingest", "--goal", goal, *map(str, paths))
        assert result.exit_code == 0, result.output
