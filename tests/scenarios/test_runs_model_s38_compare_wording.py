"""Session 38: compare's first paragraph says truly what `runs --summary` counts.

It said `runs --summary` "counts every run of the arm"; the summary's rate is passed / (passed + failed) over the arm's
current, countable, unretracted runs (on the public LoopX ledger, codex-goal-mode-baseline's Terminal-Bench rate is
11/38 of 45 rows: 4 are not countable and 3 unscored).
"""

from __future__ import annotations

import json

from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER as PUBLIC

TERMINAL_BENCH = "terminal-bench@2.0"
SAID = (
    "Each arm's pass rate is the mean of its per-task pass rates over the tasks both arms ran (countable, scored runs), "
    "so it differs from the pooled rate of `runs --summary`: passed / (passed + failed) over the arm's current, countable, "
    "unretracted runs of every task; tasks only one arm ran are counted in the last columns and named below."
)
SAID_WITH_ARCHIVED = (
    "Each arm's pass rate is the mean of its per-task pass rates over the tasks both arms ran (countable, scored runs and "
    "archived ones that nothing else leaves out), so it differs from the pooled rate of `runs --summary --include-archived`: "
    "passed / (passed + failed) over the arm's current, countable, unretracted runs and archived ones that nothing else "
    "leaves out of every task; tasks only one arm ran are counted in the last columns and named below."
)


def _first_paragraph(url: str, *args: str) -> str:
    result = invoke(url, "compare", "--benchmark", TERMINAL_BENCH, *args)
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split("\n\n")[0].split())


def test_compare_says_what_runs_summary_counts(migrated_url):
    assert invoke(migrated_url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    assert _first_paragraph(migrated_url) == SAID
    assert _first_paragraph(migrated_url, "--include-archived") == SAID_WITH_ARCHIVED
    # and it is what the summary counts: 45 rows of the arm, 41 counted (4 not countable), 38 scored
    rows = [json.loads(line) for line in invoke(migrated_url, "export").stdout.splitlines()[:-1]]
    arm_rows = [r for r in rows if r["kind"] == "benchmark_run_ledger_row_v0" and r["payload"].startswith("{")
                and json.loads(r["payload"]).get("arm_id") == "codex_goal_mode_baseline"
                and json.loads(r["payload"])["benchmark_id"] == TERMINAL_BENCH]
    summary = json.loads(invoke(migrated_url, "runs", "--summary", "--benchmark", TERMINAL_BENCH, "--arm", "codex-goal-mode-baseline",
                                "--format", "json").stdout)["pass_rates"]
    (rate,) = summary
    assert (len(arm_rows), rate["runs"], rate["not_countable"], rate["passed"], rate["failed"]) == (45, 41, 4, 11, 27)
