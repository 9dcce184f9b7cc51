"""Record LoopX 0.4.8's ``lifecycle-state`` on each attempt of the week scenario (tests/scenarios/test_attempts.py).

A goal's attempts (docs/linking.md, "Attempts inside a goal") must each read
as LoopX reads that attempt's own evidence. The scenario's attempts are made
of corpus files; this script runs LoopX as a black box on each attempt's files
(``--format json``) and stores its answers beside the scenario:

    tests/scenarios/attempts/loopx-answers.json   {attempt name: LoopX's lifecycle-state payload}

    python -m tests.scenarios.record_attempts    # LoopX 0.4.8: $BENCHLEDGER_LOOPX, else loopx on PATH
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.conformance.cases import CORPUS
from tests.loopx import require_loopx

LIFECYCLE = CORPUS / "cases" / "lifecycle-state"
ANSWERS = Path(__file__).parent / "attempts" / "loopx-answers.json"
# LoopX's flag for each lifecycle kind.
FLAGS = {
    "preflight": "--preflight-json",
    "launch": "--launch-json",
    "post-launch": "--post-launch-json",
    "run": "--benchmark-run-json",
    "comparison": "--benchmark-comparison-json",
    "claim-review": "--claim-review-json",
    "learning-ledger": "--benchmark-learning-ledger-json",
}
# The first case, run to its budget count (lifecycle-05: its launch is the id-less fixture every launch of it writes).
FIRST_CASE = {
    "preflight": LIFECYCLE / "lifecycle-05" / "preflight.json",
    "launch": LIFECYCLE / "lifecycle-05" / "launch.json",
    "post-launch": LIFECYCLE / "lifecycle-05" / "post-launch.json",
    "run": LIFECYCLE / "lifecycle-05" / "run.json",
    "comparison": LIFECYCLE / "lifecycle-05" / "comparison.json",
    "claim-review": LIFECYCLE / "lifecycle-05" / "claim-review.json",
    "learning-ledger": LIFECYCLE / "lifecycle-05" / "ledger.json",
}
# The second case's own preflight (another document than the first case's).
SECOND_PREFLIGHT = LIFECYCLE / "lifecycle-08" / "preflight.json"
# A learning ledger that arrives after the second case was launched (another document than the first case's).
LATE_LEDGER = LIFECYCLE / "lifecycle-09" / "ledger.json"
# Each attempt of the scenario, by the evidence it holds once the week is over (or at the point the test checks it).
ATTEMPTS = {
    "first-case": FIRST_CASE,
    "second-case-preflighted": {"preflight": SECOND_PREFLIGHT},
    # its preflight retracted: the attempt is still there (an attempt is the events' place), with no evidence
    "second-case-preflight-retracted": {},
    # launched with the same id-less launch fixture as the first case
    "second-case-launched": {"preflight": SECOND_PREFLIGHT, "launch": FIRST_CASE["launch"]},
    # then a learning ledger that arrives late joins the open attempt
    "second-case-late-ledger": {"preflight": SECOND_PREFLIGHT, "launch": FIRST_CASE["launch"], "learning-ledger": LATE_LEDGER},
    # a learning ledger named into the first attempt (ingest --attempt 1) while the second is open: the first case's newest
    "first-case-late-ledger": {**FIRST_CASE, "learning-ledger": LATE_LEDGER},
    # the first case's launch file named into a third attempt (ingest --attempt 3), which it opens
    "third-case-launched": {"launch": FIRST_CASE["launch"]},
}


def lifecycle_state(loopx: str, evidence: dict[str, Path]) -> dict:
    """LoopX's ``lifecycle-state`` payload on ``evidence`` (kind -> file)."""
    args = [arg for kind, path in evidence.items() for arg in (FLAGS[kind], str(path))]
    answer = subprocess.run([loopx, "benchmark", "lifecycle-state", *args, "--format", "json"], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(answer.stdout)


def main() -> None:
    loopx = require_loopx()
    answers = {name: lifecycle_state(loopx, evidence) for name, evidence in ATTEMPTS.items()}
    ANSWERS.write_text(json.dumps(answers, indent=2, sort_keys=True) + "\n")
    print(f"recorded {len(answers)} attempts in {ANSWERS}")


if __name__ == "__main__":
    main()
