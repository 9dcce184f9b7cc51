"""Ingest accepts what LoopX accepts: every input of every conformance case LoopX compacted.

Whenever LoopX 0.4.8 compacted a case's inputs and answered (the corpus's
exit-0 cases), ``benchledger ingest --dry-run`` with the kind the input's flag
implies accepts each compacted file (runs, comparisons, results, learning
ledgers, baselines). Raw lifecycle inputs, which LoopX reads without any
compaction, are held to the ledger's at-rest policy instead (a post-launch
``first_blocker`` that is a ``/tmp`` path is not stored). The intake rules are
backend-independent, so one embedded ledger serves every case.
"""

from __future__ import annotations

import pytest

from benchledger.ledger.service.intake.reading import read_json
from benchledger.projections.artifacts import NotCompactable
from benchledger.projections.artifacts.kinds import normalize_result_else_run
from tests.conformance.cases import load_cases
from tests.helpers import invoke

# The kind each review flag compacts its file as (cli/review_commands).
FLAG_KINDS = {
    "--benchmark-run-json": "run",
    "--benchmark-comparison-json": "comparison",
    "--benchmark-learning-ledger-json": "learning-ledger",
}
BASELINE_FLAG = "--baseline-result-json"


def _baseline_kind(path: str) -> str:
    """baseline-failure-gate reads its baseline as the first kind that compacts it (a result, else a run)."""
    try:
        return normalize_result_else_run(read_json(path).value)[0]
    except NotCompactable:
        raise AssertionError(f"{path}: LoopX accepted a baseline no kind compacts") from None


def _inputs(case) -> list[tuple[str, str]]:
    """(file, kind) of every input file the case's flags name."""
    inputs = []
    for flag, value in zip(case.args, case.args[1:]):
        flag, _, attached = flag.partition("=")
        value = attached or value
        path = case.directory / value
        if flag in FLAG_KINDS:
            inputs.append((str(path), FLAG_KINDS[flag]))
        elif flag == BASELINE_FLAG and value != "-":
            inputs.append((str(path), _baseline_kind(str(path))))
    return inputs


ACCEPTED = [case for case in load_cases() if case.expected_exit == 0 and any(a.split("=")[0] in (*FLAG_KINDS, BASELINE_FLAG) for a in case.args)]


@pytest.fixture(scope="module")
def embedded_url(tmp_path_factory):
    url = f"sqlite:///{tmp_path_factory.mktemp('accepts') / 'ledger.sqlite'}"
    assert invoke(url, "db", "upgrade").exit_code == 0  # created and migrated once (a read would refuse a missing file)
    return url


def test_the_corpus_has_accepted_inputs_of_every_flag():
    flags = {a.split("=")[0] for case in ACCEPTED for a in case.args}
    assert set(FLAG_KINDS) | {BASELINE_FLAG} <= flags


@pytest.mark.parametrize("case", ACCEPTED, ids=lambda case: case.id)
def test_ingest_dry_run_accepts_every_input_loopx_accepted(embedded_url, case):
    for path, kind in _inputs(case):
        result = invoke(embedded_url, "ingest", "--goal", "accepts", "--dry-run", "--kind", kind, path)
        assert result.exit_code == 0, f"{path} as {kind}: {result.output}"
