"""Session 38: `runs --current --summary` counts what it leaves out, as its first line says, on the public LoopX run ledger.

It said "runs left out are counted by why (archived, superseded, retracted, not countable)" and showed 0 in every one
of those columns, and the ten SkillsBench arms whose every run was left out (193 archived runs) were not in the table.
"""

from __future__ import annotations

import json

from tests.helpers import invoke
from tests.report_helpers import PUBLIC_LEDGER as PUBLIC

SKILLSBENCH, TERMINAL_BENCH = "skillsbench@1.1", "terminal-bench@2.0"
COUNTS = ("runs", "passed", "failed", "unscored", "pass_rate", "archived", "superseded", "retracted", "not_countable")
LEFT_OUT = ("archived", "superseded", "retracted", "not_countable")


def _imported(url: str) -> str:
    assert invoke(url, "import-loopx", str(PUBLIC), "--goal", "loopx-public").exit_code == 0
    return url


def _rates(url: str, *args: str) -> dict[tuple[str, str], dict]:
    result = invoke(url, "runs", "--summary", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return {(r["benchmark_id"], r["arm"]): r for r in json.loads(result.stdout)["pass_rates"]}


def _row(rate: dict) -> list:
    return [rate[k] for k in COUNTS]


def test_current_summary_counts_the_runs_it_leaves_out_and_lists_every_arm(migrated_url):
    url = _imported(migrated_url)
    current = _rates(url, "--current", "--benchmark", SKILLSBENCH)
    plain = _rates(url, "--benchmark", SKILLSBENCH)
    assert sorted(current) == sorted(plain) and len(current) == 11  # (the ten arms of archived runs only are there, with 0 runs)
    assert _row(current[(SKILLSBENCH, "codex-app-server-goal-baseline")]) == [3, 2, 1, 0, 0.6667, 27, 0, 0, 14]
    assert _row(current[(SKILLSBENCH, "codex-loopx-treatment")]) == [0, 0, 0, 0, None, 50, 0, 0, 9]
    assert _row(current[(SKILLSBENCH, "baseline")]) == [0, 0, 0, 0, None, 37, 0, 0, 0]
    assert sum(r["archived"] + r["not_countable"] for r in current.values()) == 193 + 10  # (every archived row, and 10 others)
    for key, rate in plain.items():  # every run left out is left out of both, for the same reason
        assert [current[key][k] for k in LEFT_OUT] == [rate[k] for k in LEFT_OUT], key


def test_current_summary_leaves_out_earlier_countable_runs_and_says_so(migrated_url):
    url = _imported(migrated_url)
    current = _rates(url, "--current", "--benchmark", TERMINAL_BENCH)
    plain = _rates(url, "--benchmark", TERMINAL_BENCH)
    baseline = (TERMINAL_BENCH, "codex-goal-mode-baseline")
    assert _row(current[baseline]) == [17, 11, 6, 0, 0.6471, 0, 0, 0, 4]
    assert _row(plain[baseline]) == [41, 11, 27, 3, 0.2895, 0, 0, 0, 4]  # (24 earlier countable runs: their cases' current runs stand for them)
    table = invoke(url, "runs", "--current", "--summary", "--benchmark", TERMINAL_BENCH).stdout
    first = " ".join(table.split("\n\n")[0].split())
    assert first == (
        "Pass rates count each arm's current countable run of each case per benchmark and arm: passed / (passed + failed); "
        "runs left out are counted by why (archived, superseded, retracted, not countable); "
        "a case's earlier countable runs of an arm are not counted at all: its current run replaces them."
    ), first
    (line,) = [line for line in table.splitlines() if line.split()[1:2] == ["codex-goal-mode-baseline"]]
    assert line.split()[2:] == ["17", "11", "6", "0", "65%", "0", "0", "0", "4"], line


def test_current_summary_counts_a_retracted_run_and_its_arm_chosen_by_arm_is_the_same_row(migrated_url):
    url = _imported(migrated_url)
    listed = json.loads(invoke(url, "runs", "--current", "--benchmark", TERMINAL_BENCH, "--arm", "hardened-codex-baseline",
                               "--format", "json").stdout)["current_runs"]
    withdrawn = next(e["current"] for e in listed if e["current"] is not None)
    assert invoke(url, "retract", withdrawn["event_id"], "--reason", "wrong task").exit_code == 0
    key = (TERMINAL_BENCH, "hardened-codex-baseline")
    current, plain = _rates(url, "--current", "--benchmark", TERMINAL_BENCH)[key], _rates(url, "--benchmark", TERMINAL_BENCH)[key]
    assert (current["retracted"], plain["retracted"]) == (1, 1)
    assert [current[k] for k in LEFT_OUT] == [plain[k] for k in LEFT_OUT]
    assert _rates(url, "--current", "--benchmark", TERMINAL_BENCH, "--arm", "hardened_codex_baseline") == {key: current}
    # --status chooses the cases whose current run has it, as `runs --current --status` lists them
    passed = _rates(url, "--current", "--benchmark", SKILLSBENCH, "--status", "passed")
    assert _row(passed[(SKILLSBENCH, "codex-app-server-goal-baseline")])[:5] == [2, 2, 0, 0, 1.0]


def test_current_summary_refuses_include_archived_which_it_cannot_honour(migrated_url):
    url = _imported(migrated_url)
    refused = invoke(url, "runs", "--current", "--summary", "--include-archived")
    assert refused.exit_code == 2, refused.output
    assert "--include-archived does not apply to --current: an archived run is never a current run" in refused.stderr
    assert refused.stdout == ""
