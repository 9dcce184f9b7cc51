"""baseline-failure-gate on baseline envelopes whose ``benchmark_result`` does not compact (issue 28, item 18).

The rule (docs/interop.md, "A baseline given as an envelope"): the result is
tried first; when it does not compact, the file is read as a run — the object
under ``benchmark_run`` when it is of the run schema, else the envelope itself
when it is — and the run's ``mode``, labelled as written whatever its spelling,
is the baseline scenario. Nothing else of the envelope counts.

* every recorded variant (``record_gate_envelopes.py``, LoopX 0.4.8's answers
  committed under ``gate_envelopes/``): whole JSON payload and exit code, and
  the markdown byte for byte;
* the recorded inputs are exactly the generator's variants (a change of the
  generator without re-recording fails here);
* ``--execute`` on both backends keeps the artifact LoopX read (the run) and
  the gate row LoopX printed, and ``ingest --kind`` of that kind accepts the file;
* live: hypothesis-generated envelopes of the same shape go through LoopX and
  benchledger, whole payloads equal (skipped, saying how, without LoopX;
  ``BENCHLEDGER_STRESS=1`` draws ten times as many, at random).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.cli.main import cli
from benchledger.ledger.storage.store import Store
from tests.conformance.cases import typed
from tests.conformance.record_gate_envelopes import (
    BASELINE_FILE,
    COMMAND,
    CONFIRMATIONS,
    ENVELOPES,
    FAILURES,
    FLAG_SETS,
    GOAL_MODE_SPELLINGS,
    IDENTITIES,
    OTHER_SPELLINGS,
    PLACEMENTS,
    RUN_CONTENTS,
    envelope,
    run_identity,
    variants,
)
from tests.helpers import invoke

VARIANTS = variants()
RECORDED = sorted(path.name for path in ENVELOPES.iterdir() if path.is_dir())


def benchledger(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.chdir(cwd)
    return CliRunner().invoke(cli, ["benchmark", COMMAND, *args], catch_exceptions=False)


def test_the_recorded_cases_are_the_generated_variants() -> None:
    assert RECORDED == sorted(v.name for v in VARIANTS), "run: python -m tests.conformance.record_gate_envelopes"
    for variant in VARIANTS:
        case_dir = ENVELOPES / variant.name
        spec = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
        assert (spec["command"], spec["args"], spec["covers"]) == (COMMAND, variant.args, variant.covers), variant.name
        assert json.loads((case_dir / BASELINE_FILE).read_text(encoding="utf-8")) == variant.baseline, variant.name


def test_the_variants_cover_the_shape() -> None:
    """Every failure, placement, identity field and spelling is recorded, and LoopX's answers differ by them."""
    covers = [v.covers.split(":", 1)[1].split("|") for v in VARIANTS]
    assert {c[0] for c in covers} == set(FAILURES)
    assert {c[1] for c in covers} == set(PLACEMENTS)
    assert {c[2] for c in covers} == set(IDENTITIES)
    assert {c[3] for c in covers} == set(GOAL_MODE_SPELLINGS + OTHER_SPELLINGS)
    scenarios = {
        json.loads((ENVELOPES / v.name / "expected.json").read_text(encoding="utf-8"))
        .get("benchmark_comparison", {})
        .get("baseline_scenario_id")
        for v in VARIANTS
    }
    assert {"baseline", "codex-goal-mode", "CODEX_GOAL_MODE", "Codex Goal Mode Baseline", None} <= scenarios


@pytest.mark.parametrize("name", RECORDED)
def test_json_payload_is_loopx_s(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case_dir = ENVELOPES / name
    spec = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    result = benchledger([*spec["args"], "--format", "json"], case_dir, monkeypatch)
    expected = json.loads((case_dir / "expected.json").read_text(encoding="utf-8"))
    assert typed(json.loads(result.stdout)) == typed(expected)
    assert result.exit_code == spec["expected_exit"]


@pytest.mark.parametrize("name", RECORDED)
def test_markdown_is_loopx_s(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    case_dir = ENVELOPES / name
    spec = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
    result = benchledger(spec["args"], case_dir, monkeypatch)
    assert result.stdout == (case_dir / "expected.md").read_text(encoding="utf-8")
    assert result.exit_code == spec["markdown_exit"]


# -- live: generated envelopes through LoopX and benchledger ----------------------------------------

WORDS = ("codex", "goal", "mode", "cli", "baseline", "hardened", "loopx", "treatment", "tb", "fix")
SEPARATORS = ("_", "-", " ", "")


@st.composite
def spellings(draw: st.DrawFn) -> str:
    """A mode as runners spell it: goal-mode words (or others) joined by ``_``, ``-`` or spaces, in any case."""
    words = draw(st.lists(st.sampled_from(WORDS), min_size=1, max_size=5))
    if draw(st.booleans()):
        words = [*words, "goal", "mode"]
    text = draw(st.sampled_from(SEPARATORS)).join(words)
    respell: Callable[[str], str] = draw(st.sampled_from((str.lower, str.upper, str.title)))
    return respell(text)


FLAGS = st.builds(
    lambda confirmations, extra: [*confirmations, *extra],
    st.lists(st.sampled_from(CONFIRMATIONS), unique=True),
    st.sampled_from(FLAG_SETS) | spellings().map(lambda mode: ("--baseline-mode", mode)),
)
RUNS = st.builds(
    lambda identity, spelling, content: {**run_identity(identity, spelling), **content},
    st.sampled_from(IDENTITIES),
    spellings() | st.sampled_from(GOAL_MODE_SPELLINGS + OTHER_SPELLINGS),
    st.sampled_from(RUN_CONTENTS),
)
ENVELOPE_DOCUMENTS = st.builds(envelope, st.sampled_from(list(FAILURES.values())), st.sampled_from(PLACEMENTS), RUNS)


def loopx_answer(loopx: str, args: list[str], cwd: Path) -> tuple[dict[str, Any], int]:
    process = subprocess.run(
        [loopx, "benchmark", COMMAND, *args, "--format", "json"],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=120,
    )
    return json.loads(process.stdout), process.returncode


# Each example runs LoopX (about 2 s): 20 fixed examples by default, 200 random ones under BENCHLEDGER_STRESS=1.
STRESS = os.environ.get("BENCHLEDGER_STRESS") == "1"


@settings(
    max_examples=200 if STRESS else 20,
    deadline=None,
    derandomize=not STRESS,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(document=ENVELOPE_DOCUMENTS, flags=FLAGS)
def test_generated_envelopes_answer_as_loopx_does(
    loopx: str, monkeypatch: pytest.MonkeyPatch, document: dict[str, Any], flags: list[str]
) -> None:
    args = ["--benchmark-id", "terminal-bench@2.0", "--baseline-result-json", BASELINE_FILE, *flags]
    with tempfile.TemporaryDirectory() as scratch:
        cwd = Path(scratch)
        (cwd / BASELINE_FILE).write_text(json.dumps(document), encoding="utf-8")
        expected, expected_exit = loopx_answer(loopx, args, cwd)
        result = benchledger([*args, "--format", "json"], cwd, monkeypatch)
    assert typed(json.loads(result.stdout)) == typed(expected)
    assert result.exit_code == expected_exit


# -- kept in a ledger: what is stored reproduces LoopX's answer ------------------------------------

# The variants LoopX answered (every other one: each execute is a transaction on both backends).
ACCEPTED = [
    name for name in RECORDED if json.loads((ENVELOPES / name / "case.json").read_text())["expected_exit"] == 0
][::2]
SOURCE_KINDS = {"compact_benchmark_result_v0": "result", "compact_benchmark_run_v0": "run"}


def test_executed_the_gate_is_loopx_s_and_keeps_the_kind_loopx_read(
    migrated_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--execute`` keeps the envelope as the artifact LoopX read (its run) and the gate row LoopX printed."""
    ledger = Store.open(migrated_url)
    try:
        for index, name in enumerate(ACCEPTED):
            case_dir = ENVELOPES / name
            spec = json.loads((case_dir / "case.json").read_text(encoding="utf-8"))
            expected = json.loads((case_dir / "expected.json").read_text(encoding="utf-8"))
            goal = f"gate-envelope-{index}"
            monkeypatch.chdir(case_dir)
            args = [*spec["args"], "--execute", "--goal-id", goal, "--no-global-sync", "--format", "json"]
            result = invoke(migrated_url, "benchmark", COMMAND, *args)
            assert result.exit_code == 0, (name, result.output)
            payload = json.loads(result.stdout)
            assert typed(payload["benchmark_comparison"]) == typed(expected["benchmark_comparison"]), name
            assert payload["baseline_gate_cli"] == expected["baseline_gate_cli"], name
            kind = SOURCE_KINDS[expected["baseline_gate_cli"]["source"]]
            assert [event.kind for event in ledger.read_goal(goal)] == [kind, "ingest_batch"], name
            (row,) = ledger.projection_rows(goal_id=goal, projection=COMMAND)
            assert typed(json.loads(row["payload"])["benchmark_comparison"]) == typed(
                expected["benchmark_comparison"]
            ), name
            dry_run = invoke(migrated_url, "ingest", "--goal", goal, "--dry-run", "--kind", kind, BASELINE_FILE)
            assert dry_run.exit_code == 0, (name, dry_run.output)
            # Without --kind, ingest reads the file as the gate did (a result, else the run it carries): the very artifact stored.
            plain = invoke(migrated_url, "ingest", "--goal", goal, "--dry-run", BASELINE_FILE)
            assert plain.exit_code == 0 and re.search(rf"- duplicate +{kind} ", plain.stdout), (name, plain.output)
    finally:
        ledger.close()
