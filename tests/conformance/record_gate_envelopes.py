"""Record LoopX 0.4.8's ``baseline-failure-gate`` on baseline envelopes whose result does not compact.

The shape (issue 28, item 18): one file ``{"benchmark_result": …, "benchmark_run": …}``
whose ``benchmark_result`` is of its schema but does not compact (a
non-numeric control-plane score, an unsafe text, nothing but the schema …),
beside a run whose mode is spelled one of the many ways a goal-mode baseline
is named. The conformance corpus holds no such file. This script builds the
variants (:func:`variants`, deterministic: which result field fails and how,
where the run is — nested, the envelope itself, nested without its schema,
absent —, ``mode`` / ``job_name`` / both, goal-mode and other spellings, the
run's score, the operator's flags), runs LoopX as a black box on each
(``--format json`` and markdown) and stores the case beside its answers:

    tests/conformance/gate_envelopes/<variant>/   case.json, baseline.json, expected.json, expected.md

``tests/conformance/test_gate_envelopes.py`` holds benchledger to every recorded
answer (whole payloads) and, with LoopX present, compares generated envelopes live.

    python -m tests.conformance.record_gate_envelopes    # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.loopx import require_loopx

COMMAND = "baseline-failure-gate"
ENVELOPES = Path(__file__).parent / "gate_envelopes"
BASELINE_FILE = "baseline.json"
RESULT_SCHEMA = "benchmark_result_v0"
RUN_SCHEMA = "benchmark_run_v0"

# How a benchmark_result of its schema fails to compact: every field it has is dropped.
FAILURES: dict[str, dict[str, Any]] = {
    "cp-value-text": {"control_plane_score": {"value": "high"}},
    "cp-value-bool-kind-zero": {"control_plane_score": {"kind": 0, "value": True}},
    "cp-not-object": {"control_plane_score": "high"},
    "cp-passed-text": {"control_plane_score": {"passed": "yes", "value": None}},
    "official-value-text": {"official_task_score": {"value": "0.0", "passed": "false"}},
    "counts-text": {"counts": {"step_count": "n/a"}, "spend_count": None},
    "unsafe-text": {"task_id": "/tmp/private/task", "scenario_id": "token=abcdefghijklmnop", "terminal_state": " "},
    "schema-only": {},
}

# Goal-mode spellings (LoopX's own, the run ledger's, respelled), then other arms.
GOAL_MODE_SPELLINGS = (
    "codex_goal_mode_baseline",
    "codex-goal-mode",
    "CODEX_GOAL_MODE",
    "codex_cli_goal_mode",
    "Codex Goal Mode Baseline",
    "tb_fix_code_vulnerability_goal_mode",
)
OTHER_SPELLINGS = ("codex", "hardened_codex_baseline", "hardened-codex", "codex_loopx_treatment")
SPELLINGS = GOAL_MODE_SPELLINGS + OTHER_SPELLINGS

# The run beside the result: its score and status decide whether the baseline failed.
RUN_CONTENTS: tuple[dict[str, Any], ...] = (
    {
        "official_task_score": {"kind": "terminal_bench_verifier", "value": 0.0},
        "trials": [{"task_id": "fix-code-vulnerability"}],
    },
    {"official_task_score": {"passed": True, "value": 1}},
    {"runner_return_status": "completed", "score_failure_attribution": "worker_trace_without_benchmark_run_writeback"},
    {},
    {
        "official_score": 0,
        "case_ids": ["cobol-modernization"],
        "failure_attribution_labels": ["none", "verifier_timeout"],
    },
)

CONFIRMATIONS = (
    "--control-plane-addressable",
    "--same-task-semantics",
    "--same-runner-protocol",
    "--trace-publicness-verified",
)
FLAG_SETS: tuple[tuple[str, ...], ...] = (
    (),
    CONFIRMATIONS,
    ("--baseline-mode", "codex-goal-mode"),
    ("--control-plane-addressable", "--baseline-mode", "CODEX_CLI_GOAL_MODE", "--treatment-scenario-id", "codex-loopx"),
)

# Where the run is: under benchmark_run; the envelope itself; under benchmark_run without its schema;
# the same, in an envelope that is itself of the run schema (but names no mode); nowhere.
PLACEMENTS = ("nested", "envelope", "nested-no-schema", "envelope-around-no-schema", "absent")
IDENTITIES = ("mode", "job_name", "both")


def run_identity(identity: str, spelling: str) -> dict[str, str]:
    """The run's ``mode`` and/or ``job_name`` spelled ``spelling`` (with both, the job name is another arm's)."""
    if identity == "both":
        return {"mode": spelling, "job_name": "tb_job_hardened_codex"}
    return {identity: spelling}


def envelope(failure: dict[str, Any], placement: str, run: dict[str, Any]) -> dict[str, Any]:
    """The baseline file: a result that does not compact, and ``run`` where ``placement`` puts it."""
    document: dict[str, Any] = {"benchmark_result": {"schema_version": RESULT_SCHEMA, **failure}}
    if placement == "nested":
        document["benchmark_run"] = {"schema_version": RUN_SCHEMA, **run}
    elif placement == "envelope":
        document.update({"schema_version": RUN_SCHEMA, **run})
    elif placement in ("nested-no-schema", "envelope-around-no-schema"):
        document["benchmark_run"] = dict(run)
        if placement == "envelope-around-no-schema":
            document["schema_version"] = RUN_SCHEMA
    return document


@dataclass(frozen=True)
class Variant:
    name: str
    baseline: dict[str, Any]
    args: list[str]
    covers: str


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _variant(
    index: int, failure: str, placement: str, identity: str, spelling: str, content: int, flags: int
) -> Variant:
    run = {**run_identity(identity, spelling), **RUN_CONTENTS[content]}
    name = f"{index:02d}-{failure}-{placement}-{identity}-{_slug(spelling)}"
    args = ["--benchmark-id", "terminal-bench@2.0", "--baseline-result-json", BASELINE_FILE, *FLAG_SETS[flags]]
    covers = f"gate-envelope:{failure}|{placement}|{identity}|{spelling}|run-{content}|flags-{flags}"
    return Variant(name, envelope(FAILURES[failure], placement, run), args, covers)


def variants() -> list[Variant]:
    """Every recorded variant, in a fixed order (the axes cycle against each other)."""
    failures = list(FAILURES)
    found: list[Variant] = []
    # Every spelling as mode, job name and both, the run nested under benchmark_run.
    for spelling in SPELLINGS:
        for identity in IDENTITIES:
            i = len(found)
            found.append(
                _variant(
                    i,
                    failures[i % len(failures)],
                    "nested",
                    identity,
                    spelling,
                    i % len(RUN_CONTENTS),
                    i % len(FLAG_SETS),
                )
            )
    # Every failure with the envelope itself as the run, and with the run nested without its schema.
    for placement in ("envelope", "nested-no-schema", "envelope-around-no-schema"):
        for n, failure in enumerate(failures):
            i = len(found)
            spelling = GOAL_MODE_SPELLINGS[n % len(GOAL_MODE_SPELLINGS)]
            found.append(
                _variant(i, failure, placement, IDENTITIES[n % 2], spelling, n % len(RUN_CONTENTS), n % len(FLAG_SETS))
            )
    # No run at all.
    for failure in failures[:3]:
        found.append(_variant(len(found), failure, "absent", "mode", GOAL_MODE_SPELLINGS[0], 0, 0))
    return found


def write_case(target: Path, variant: Variant, expected_exit: int, markdown_exit: int) -> None:
    spec = {
        "command": COMMAND,
        "args": variant.args,
        "expected_exit": expected_exit,
        "markdown_exit": markdown_exit,
        "volatile": [],
        "origin": "generated-gate-envelope",
        "covers": variant.covers,
    }
    (target / "case.json").write_text(json.dumps(spec, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_baseline(target: Path, variant: Variant) -> None:
    (target / BASELINE_FILE).write_text(
        json.dumps(variant.baseline, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )


def run_loopx(loopx: str, args: list[str], cwd: Path) -> tuple[bytes, int]:
    process = subprocess.run(
        [loopx, "benchmark", COMMAND, *args], cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True, timeout=120
    )
    return process.stdout, process.returncode


def record(loopx: str, variant: Variant) -> str:
    target = ENVELOPES / variant.name
    target.mkdir(parents=True)
    write_baseline(target, variant)
    stdout, code = run_loopx(loopx, [*variant.args, "--format", "json"], target)
    markdown, markdown_code = run_loopx(loopx, variant.args, target)
    (target / "expected.json").write_bytes(stdout)
    (target / "expected.md").write_bytes(markdown)
    write_case(target, variant, code, markdown_code)
    return variant.name


def main() -> None:
    loopx = require_loopx()
    shutil.rmtree(ENVELOPES, ignore_errors=True)
    with ThreadPoolExecutor(max_workers=2) as pool:
        names = list(pool.map(lambda variant: record(loopx, variant), variants()))
    print(f"recorded {len(names)} gate envelope cases in {ENVELOPES}")


if __name__ == "__main__":
    main()
