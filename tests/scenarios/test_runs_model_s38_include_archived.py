"""Session 38: `--include-archived` lifts the archive exclusion only, on the public LoopX run ledger, as a user types it.

A LoopX row can be archived *and* left out by LoopX's attempt accounting (``case_attempt_countable: false``,
a closeout marker's ``benchmark_budget_countable: false``). The row kept one reason, the archive, so
`runs --summary --include-archived` and `compare --include-archived` counted it: codex-loopx-treatment's
SkillsBench rate was 13/34 over 59 runs where LoopX counts 13/32 over 50.
"""

from __future__ import annotations

import json

from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER as PUBLIC

SKILLSBENCH = "skillsbench@1.1"
ACCOUNTING_FLAGS = ("case_attempt_countable", "benchmark_budget_countable")


def _rows(benchmark: str) -> list[dict]:
    document = json.loads(PUBLIC.read_text(encoding="utf-8"))
    return [row for case in document["benchmarks"][benchmark]["cases"].values() for row in case["runs"]]


def _arm(row: dict) -> str:
    return (row.get("arm_id") or row["mode"]).lower().replace("_", "-")


def _excluded_by_accounting(row: dict) -> bool:
    return row.get("status") == "running" or any(row.get(flag) is False for flag in ACCOUNTING_FLAGS)


def _json(url: str, *args: str) -> dict:
    result = invoke(url, *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _imported(url: str) -> str:
    assert invoke(url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    return url


def _rates(url: str, *args: str) -> dict[str, dict]:
    return {r["arm"]: r for r in _json(url, "runs", "--summary", "--benchmark", SKILLSBENCH, *args)["pass_rates"]}


def test_include_archived_counts_only_the_rows_countable_apart_from_their_archive(migrated_url):
    url = _imported(migrated_url)
    with_archived = _rates(url, "--include-archived")
    # A hand count of the file: every arm's rows that nothing but the archive leaves out.
    for arm, rate in with_archived.items():
        rows = [r for r in _rows(SKILLSBENCH) if _arm(r) == arm]
        counted = [r for r in rows if not _excluded_by_accounting(r)]
        outcomes = [r["score_status"] for r in counted]
        want = (len(counted), outcomes.count("passed"), outcomes.count("failed"), len(rows) - len(counted))
        assert (rate["runs"], rate["passed"], rate["failed"], rate["not_countable"]) == want, arm
    loopx = with_archived["codex-loopx-treatment"]
    assert (loopx["runs"], loopx["passed"], loopx["failed"], loopx["unscored"], loopx["pass_rate"]) == (50, 13, 19, 18, 0.4062)
    assert (loopx["archived"], loopx["superseded"], loopx["retracted"], loopx["not_countable"]) == (50, 0, 0, 9)
    app_server = with_archived["codex-app-server-goal-baseline"]
    assert (app_server["runs"], app_server["passed"], app_server["failed"], app_server["unscored"]) == (30, 2, 28, 0)
    assert (app_server["archived"], app_server["not_countable"]) == (27, 14)


def test_the_archived_column_is_what_include_archived_adds_and_the_rest_stays_out(migrated_url):
    """Each run is left out once, for the reason that keeps it out even with --include-archived: the summary's columns
    tally the listing's `countable` column, and the flag moves the archived column, no more, into the runs."""
    url = _imported(migrated_url)
    plain, with_archived = _rates(url), _rates(url, "--include-archived")
    app_server = plain["codex-app-server-goal-baseline"]
    assert [app_server[k] for k in ("runs", "passed", "failed", "archived", "not_countable")] == [3, 2, 1, 27, 14]
    assert [plain["codex-loopx-treatment"][k] for k in ("runs", "archived", "not_countable")] == [0, 50, 9]
    for arm, rate in plain.items():
        assert with_archived[arm]["runs"] == rate["runs"] + rate["archived"], arm
        assert with_archived[arm]["not_countable"] == rate["not_countable"], arm
    listed = _json(url, "runs", "--benchmark", SKILLSBENCH, "--arm", "codex-app-server-goal-baseline")["runs"]
    reasons = [r["not_countable_reason"] for r in listed]
    assert (reasons.count("archived"), sum(1 for r in reasons if r not in (None, "archived"))) == (27, 14)
    assert sum(r["archived"] for r in listed) == 31  # (the rows LoopX archived: 4 of them are not countable besides)


def test_an_archived_row_that_is_no_case_attempt_says_so(migrated_url):
    url = _imported(migrated_url)
    (row,) = [r for r in _json(url, "runs", "--case", "3d-scan-calc")["runs"] if r["run_id"] == "decbde35b3b4"]
    assert (row["archived"], row["countable"], row["not_countable_reason"]) == (True, False, "case_attempt_countable=false")
    table = invoke(url, "runs", "--case", "3d-scan-calc").stdout
    (line,) = [line for line in table.splitlines() if "decbde35b3b4" in line]
    assert line.rstrip().endswith("no: case_attempt_countable=false"), line


def test_compare_include_archived_leaves_out_the_rows_attempt_accounting_excludes(migrated_url):
    url = _imported(migrated_url)
    (found,) = _json(
        url, "compare", "--include-archived", "--benchmark", SKILLSBENCH, "--baseline", "baseline", "--treatment", "codex-loopx-treatment"
    )["comparisons"]
    assert (found["tasks"], found["baseline_trials"], found["treatment_trials"]) == (15, 20, 31)
    assert (found["baseline_pass_rate"], found["treatment_pass_rate"]) == (1 / 3, 0.34)
    assert (found["baseline_only_tasks"], found["treatment_only_tasks"]) == (["bike-rebalance", "travel-planning"], ["powerlifting-coef-calc"])
    # Without the flag the note counts the archived runs the flag would add, not those it would leave out anyway: those
    # are counted by their own reason.
    (plain,) = _json(url, "compare", "--benchmark", SKILLSBENCH, "--baseline", "baseline", "--treatment", "codex-loopx-treatment")["comparisons"]
    assert plain["note"] == (
        "no task has countable, scored runs in both arms; 9 run(s) with case_attempt_countable=false, 87 archived run(s) of these "
        "arms are left out (--include-archived counts the archived ones)"
    )
