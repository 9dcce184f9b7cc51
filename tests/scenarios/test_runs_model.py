"""The runs model as a user meets it (issue 26): pairs of the right task, pass rates that say what they count,
arms whatever their spelling, and one set of numbers in `runs`, `runs --paired`, `runs --summary`, the report and `compare`.

CLI calls as a user types them, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from benchledger.projections import runs as model
from tests.helpers import invoke

GOAL = "tb2-week"
BENCH = "terminal-bench@2.0"


def _run(task: str | None, mode: str, passed: bool, *, trials: bool = True) -> dict:
    """A compact run of ``task`` in ``mode``; its task is named by its trial (``trials``) or only by the comparison beside it."""
    run = {
        "schema_version": "benchmark_run_v0", "benchmark_id": BENCH, "job_name": f"terminal-bench-2-0-{task}-{mode}", "mode": mode,
        "official_task_score": {"kind": "terminal_bench_verifier_reward", "value": 1.0 if passed else 0.0, "passed": passed},
    }
    if trials and task:
        run["trials"] = [{"task_id": task, "exception_type": "none"}]
    return run


def _comparison(task: str, baseline: str | None, treatment: str | None, delta: float, name: str) -> dict:
    found = {"schema_version": "benchmark_comparison_v0", "task_id": f"{BENCH}/{task}", "comparison_id": name, "benchmark_id": BENCH,
             "official_task_score_delta": delta}
    if baseline:
        found["baseline_scenario_id"] = baseline
    if treatment:
        found["treatment_scenario_id"] = treatment
    return found


def _files(folder: Path, name: str, *documents: dict) -> list[str]:
    paths = []
    for index, document in enumerate(documents):
        path = folder / f"{name}-{index}.json"
        path.write_text(json.dumps(document))
        paths.append(str(path))
    return paths


def _ok(url: str, *args: str) -> str:
    result = invoke(url, *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def _pairs(url: str, *args: str) -> list[dict]:
    return json.loads(_ok(url, "runs", "--paired", "--format", "json", *args))["pairs"]


def _two_attempts(url: str, folder: Path) -> None:
    """A team's week: db-wal-recovery (hardened-codex vs codex-loopx, tasks named by the trials), then fix-git
    (Codex_Goal_Mode vs codex-loopx, tasks named only by the comparison), each run pair ingested with its comparison."""
    _ok(url, "ingest", "--goal", GOAL, *_files(folder, "wal", _run("db-wal-recovery", "hardened-codex", False),
        _run("db-wal-recovery", "codex-loopx", True), _comparison("db-wal-recovery", "hardened-codex", "codex-loopx", 1.0, "wal-pair")))
    _ok(url, "ingest", "--goal", GOAL, *_files(folder, "git", _run("fix-git", "Codex_Goal_Mode", True, trials=False),
        _run("fix-git", "codex-loopx", False, trials=False), _comparison("fix-git", "codex-goal-mode", "codex-loopx", -1.0, "git-pair")))


def test_each_comparison_pairs_the_runs_of_its_own_task_in_the_cli_and_the_report(migrated_url, tmp_path):
    from benchledger.ledger.read import report_views
    from benchledger.ledger.storage.store import Store

    _two_attempts(migrated_url, tmp_path)
    pairs = {p["pair_id"]: p for p in _pairs(migrated_url, "--goal", GOAL)}
    assert set(pairs) == {"wal-pair", "git-pair"}
    for pair_id, task, baseline, treatment in (("wal-pair", "db-wal-recovery", "hardened-codex", "codex-loopx"),
                                               ("git-pair", "fix-git", "codex-goal-mode", "codex-loopx")):
        pair = pairs[pair_id]
        assert pair["case_id"] == task and pair["baseline"]["case_id"] == task and pair["treatment"]["case_id"] == task
        assert (pair["baseline"]["arm"], pair["treatment"]["arm"]) == (baseline, treatment)
        assert pair["baseline_found_by"] == pair["treatment_found_by"] == "scenario"
    # The spelling recorded is kept beside the arm; a task named only by the comparison says so.
    assert pairs["git-pair"]["baseline"]["arm_spelling"] == "Codex_Goal_Mode" and pairs["git-pair"]["baseline"]["case_from"] == "comparison"
    # The report's attempts table shows the same runs (each batch's own): arms and scores agree with --paired.
    ledger = Store.open(migrated_url)
    try:
        attempts = {a["comparison_id"]: a for a in report_views.batches(ledger, GOAL)["rows"]}
    finally:
        ledger.close()
    for pair_id, pair in pairs.items():
        shown = attempts[pair_id]
        assert model.arm_of(shown["baseline"]["mode"]) == pair["baseline"]["arm"]
        assert model.arm_of(shown["treatment"]["mode"]) == pair["treatment"]["arm"]
        assert shown["score_delta"] == pair["score_delta"]
    # --case takes the form --paired prints and the benchmark-prefixed form alike.
    assert [p["pair_id"] for p in _pairs(migrated_url, "--case", "fix-git")] == ["git-pair"]
    assert [p["pair_id"] for p in _pairs(migrated_url, "--case", f"{BENCH}/fix-git")] == ["git-pair"]
    assert len(json.loads(_ok(migrated_url, "runs", "--case", f"{BENCH}/fix-git", "--format", "json"))["runs"]) == 2


def test_a_side_the_batch_lacks_comes_from_an_earlier_run_of_its_task_or_says_why_it_is_missing(migrated_url, tmp_path):
    _two_attempts(migrated_url, tmp_path)
    # A re-run of fix-git's treatment with its comparison, without a baseline: the baseline is fix-git's earlier one, marked.
    _ok(migrated_url, "ingest", "--goal", GOAL, *_files(tmp_path, "rerun", _run("fix-git", "codex-loopx", True),
        _comparison("fix-git", "codex-goal-mode", "codex-loopx", 0.0, "git-rerun")))
    # A comparison of a task no baseline run ever had: never another task's run (db-wal-recovery's hardened-codex).
    _ok(migrated_url, "ingest", "--goal", GOAL, *_files(tmp_path, "lonely", _run("regex-log", "codex-loopx", True),
        _comparison("regex-log", "hardened-codex", "codex-loopx", 1.0, "regex-pair")))
    pairs = {p["pair_id"]: p for p in _pairs(migrated_url, "--goal", GOAL)}
    rerun = pairs["git-rerun"]
    assert rerun["baseline_found_by"] == "earlier_run" and rerun["baseline"]["case_id"] == "fix-git"
    assert rerun["baseline"]["event_id"] == pairs["git-pair"]["baseline"]["event_id"]
    lonely = pairs["regex-pair"]
    assert lonely["baseline"] is None and lonely["baseline_missing"] == "no hardened-codex run of regex-log in its batch or recorded before it"
    table = _ok(migrated_url, "runs", "--paired", "--wide")
    assert "baseline from an earlier batch" in table and "no baseline: no hardened-codex run of regex-log" in table
    # Retract the treatment run of db-wal-recovery: the pair says so rather than showing an empty side.
    treatment = pairs["wal-pair"]["treatment"]["event_id"]
    _ok(migrated_url, "retract", treatment, "--reason", "the treatment ran against the wrong image", "--goal", GOAL)
    wal = {p["pair_id"]: p for p in _pairs(migrated_url)}["wal-pair"]
    assert wal["treatment"] is None and wal["treatment_missing"] == f"its batch's treatment run {treatment} was retracted"


def test_a_comparison_without_scenario_ids_pairs_the_runs_its_claim_review_read(migrated_url, tmp_path):
    # SkillsBench-style: no scenario ids; the claim review reads a hardened-codex run as the baseline, a codex-loopx run as the treatment.
    comparison = _comparison("weighted-gdp-calc", None, None, 1.0, "sb-pair")
    _ok(migrated_url, "ingest", "--goal", "sb", *_files(tmp_path, "sb", _run("weighted-gdp-calc", "codex-loopx", True),
        _run("weighted-gdp-calc", "hardened-codex", False), comparison))
    (pair,) = _pairs(migrated_url, "--goal", "sb")
    assert (pair["baseline"]["arm"], pair["treatment"]["arm"]) == ("hardened-codex", "codex-loopx")
    assert pair["baseline_found_by"] == pair["treatment_found_by"] == "claim_review"
    assert (pair["baseline_arm"], pair["treatment_arm"]) == ("hardened-codex", "codex-loopx")


def test_runs_summary_report_and_compare_print_the_same_numbers(migrated_url, tmp_path):
    from benchledger.ledger.read import report_views
    from benchledger.ledger.storage.store import Store

    _two_attempts(migrated_url, tmp_path)
    # A second goal runs the same arms on more tasks; an arm spelt two ways is one arm.
    for index, (task, base_passed, treat_passed) in enumerate([("t1", False, True), ("t2", False, True), ("t3", True, True), ("t4", False, False)]):
        _ok(migrated_url, "ingest", "--goal", "tb2-more", *_files(tmp_path, f"more{index}", _run(task, "Hardened_Codex", base_passed),
            _run(task, "codex-loopx", treat_passed), _comparison(task, "hardened-codex", "codex-loopx", 0.0, f"more-{task}")))
    listed = json.loads(_ok(migrated_url, "runs", "--format", "json"))["runs"]
    summary = json.loads(_ok(migrated_url, "runs", "--summary", "--format", "json"))["pass_rates"]
    by_arm = {(r["benchmark_id"], r["arm"]): r for r in summary}
    assert ("terminal-bench@2.0", "hardened-codex") in by_arm and all(r["arm"] == r["arm"].lower() for r in summary)
    for (benchmark, arm), rate in by_arm.items():
        mine = [r for r in listed if (r["benchmark_id"], r["arm"]) == (benchmark, arm) and r["countable"]]
        assert (rate["runs"], rate["passed"], rate["failed"]) == (
            len(mine), sum(r["score_status"] == "passed" for r in mine), sum(r["score_status"] == "failed" for r in mine))
    assert set(by_arm[(BENCH, "hardened-codex")]["arm_spellings"]) == {"hardened-codex", "Hardened_Codex"}
    # The report's per-goal rates are runs --summary --goal's, goal by goal.
    ledger = Store.open(migrated_url)
    try:
        index = {g["goal_id"]: g["pass_rates"] for g in report_views.goal_index(ledger)["goals"]}
    finally:
        ledger.close()
    for goal in (GOAL, "tb2-more"):
        assert index[goal] == json.loads(_ok(migrated_url, "runs", "--summary", "--goal", goal, "--format", "json"))["pass_rates"]
    # compare counts the same trials: every countable, scored run of a task both arms ran.
    found = json.loads(_ok(migrated_url, "compare", "--baseline", "HARDENED-codex", "--treatment", "codex_loopx", "--format", "json"))
    (comparison,) = found["comparisons"]
    both = {r["case_id"] for r in listed if r["arm"] == "hardened-codex"} & {r["case_id"] for r in listed if r["arm"] == "codex-loopx"}
    assert comparison["tasks"] == len(both) == 5
    assert comparison["baseline_trials"] == sum(1 for r in listed if r["arm"] == "hardened-codex" and r["case_id"] in both)
    per_task = {task: [r for r in listed if r["case_id"] == task and r["arm"] == "hardened-codex"] for task in both}
    expected = sum(sum(r["score_status"] == "passed" for r in rs) / len(rs) for rs in per_task.values()) / len(both)
    assert abs(comparison["baseline_pass_rate"] - expected) < 1e-9
    # fix-git was run by codex-goal-mode and codex-loopx only: compare names it as a task the baseline arm lacks.
    assert comparison["treatment_only_tasks"] == ["fix-git"] and comparison["baseline_only_tasks"] == []
    # The arm pairs that pairs name are compared without --baseline/--treatment, Holm-adjusted together.
    pairs = json.loads(_ok(migrated_url, "compare", "--format", "json"))["comparisons"]
    assert {(c["baseline_arm"], c["treatment_arm"]) for c in pairs} == {("hardened-codex", "codex-loopx"), ("codex-goal-mode", "codex-loopx")}
    assert all(c["adjusted_p_value"] >= c["p_value"] for c in pairs)


def test_compare_finds_a_real_effect_and_refuses_what_cannot_be_compared(migrated_url, tmp_path):
    tasks = []
    for index in range(24):
        task = f"task-{index:02d}"
        # the treatment passes every task; the baseline one in four
        tasks += [_run(task, "hardened-codex", index % 4 == 0), _run(task, "codex-loopx", True)]
    _ok(migrated_url, "ingest", "--goal", "effect", *_files(tmp_path, "effect", *tasks))
    table = _ok(migrated_url, "compare", "--baseline", "hardened-codex", "--treatment", "codex-loopx")
    assert "treatment better" in table
    (found,) = json.loads(_ok(migrated_url, "compare", "--baseline", "hardened-codex", "--treatment", "codex-loopx", "--format", "json"))["comparisons"]
    assert found["tasks"] == 24 and found["test"] == "mcnemar_exact" and found["discordant"] == [0, 18]
    assert found["interval"][0] > 0 and found["verdict"] == "treatment better"
    markdown = _ok(migrated_url, "compare", "--baseline", "hardened-codex", "--treatment", "codex-loopx", "--format", "markdown")
    assert markdown.startswith("## Treatment against baseline, per benchmark") and "| terminal-bench@2.0 | hardened-codex | codex-loopx |" in markdown
    # The same ledger and seed give the same interval; another seed may move it, never the test.
    again = json.loads(_ok(migrated_url, "compare", "--baseline", "hardened-codex", "--treatment", "codex-loopx", "--format", "json"))
    assert again["comparisons"][0]["interval"] == found["interval"]
    unknown = invoke(migrated_url, "compare", "--baseline", "hardend-codex", "--treatment", "codex-loopx")
    assert unknown.exit_code == 2 and "--baseline 'hardend-codex' is not the arm of any run here; choose from: codex-loopx, hardened-codex" in unknown.stderr
    alone = invoke(migrated_url, "compare", "--baseline", "hardened-codex")
    assert alone.exit_code == 2 and "--baseline and --treatment go together" in alone.stderr
    assert invoke(migrated_url, "compare", "--goal", "nope").exit_code == 2


# -- the model itself: every printed pair's runs share the comparison's task -------------------------------------


class _Event:
    def __init__(self, position: int, kind: str, payload: dict, goal: str = "g") -> None:
        self.position, self.kind, self.payload, self.goal_id = position, kind, payload, goal
        self.event_id, self.recorded_at = f"e{position}", f"2026-12-01T00:00:{position % 60:02d}.000000Z"


TASKS = st.sampled_from([None, "a", "b", f"{BENCH}/a"])
MODES = st.sampled_from(["hardened-codex", "codex-loopx", "Codex_LoopX", "codex-goal-mode", "probe"])
RUN = st.tuples(TASKS, MODES, st.booleans())
BATCH = st.tuples(st.lists(RUN, max_size=3), st.one_of(st.none(), st.tuples(st.sampled_from(["a", "b"]), st.one_of(st.none(), MODES), st.one_of(st.none(), MODES))))


def _events(batches) -> list[_Event]:
    found, position = [], 0
    for runs, comparison in batches:
        members = []
        for task, mode, passed in runs:
            position += 1
            found.append(_Event(position, "run", _run(task, mode, passed)))
            members.append(found[-1])
        if comparison is not None:
            position += 1
            found.append(_Event(position, "comparison", _comparison(comparison[0], comparison[1], comparison[2], 0.0, f"c{position}")))
            members.append(found[-1])
        if members:
            position += 1
            found.append(_Event(position, "ingest_batch", {"members": [{"event_id": m.event_id, "kind": m.kind} for m in members]}))
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(BATCH, max_size=6))
def test_every_pair_of_a_comparison_holds_runs_of_its_own_task_only(batches):
    for pair in model.pairs(_events(batches)):
        if pair["paired_by"] != "comparison":
            continue
        for side in ("baseline", "treatment"):
            run = pair[side]
            assert (run is None) != (pair[f"{side}_missing"] is None)
            if run is not None:
                assert run["case_id"] == pair["case_id"] and run["benchmark_id"] == BENCH
                if pair[f"{side}_found_by"] == "earlier_run":
                    assert run["position"] < pair["position"] and run["countable"]
        if pair["baseline"] is not None and pair["treatment"] is not None:
            assert pair["baseline"]["event_id"] != pair["treatment"]["event_id"]


def test_a_new_users_mistakes_with_runs_and_compare_are_one_line_and_a_regenerated_comparison_counts_no_trial_twice(migrated_url, tmp_path):
    _two_attempts(migrated_url, tmp_path)
    before = json.loads(_ok(migrated_url, "compare", "--format", "json"))["comparisons"]
    # A re-generated comparison file (other bytes, same id) ingested alone: a new observation, not new trials.
    regenerated = _comparison("fix-git", "codex-goal-mode", "codex-loopx", -1.0, "git-pair")
    regenerated["generated_at"] = "2026-12-05T00:00:00Z"
    _ok(migrated_url, "ingest", "--goal", GOAL, *_files(tmp_path, "regen", regenerated))
    after = json.loads(_ok(migrated_url, "compare", "--format", "json"))["comparisons"]
    assert [(c["tasks"], c["baseline_trials"], c["treatment_trials"]) for c in after] == [
        (c["tasks"], c["baseline_trials"], c["treatment_trials"]) for c in before]
    regen_pairs = [p for p in _pairs(migrated_url, "--case", "fix-git") if p["pair_id"] == "git-pair"]
    assert len(regen_pairs) == 2 and all(p["baseline"]["case_id"] == "fix-git" for p in regen_pairs)
    for args, message in (
        (("compare", "--goal", "nope"), "no goal 'nope'"),
        (("compare", "--as-of", "yesterday"), "--as-of 'yesterday' is neither a position nor an ISO-8601 time"),
        (("compare", "--benchmark", "tb"), "--benchmark 'tb' is not the benchmark of any run here; choose from: terminal-bench@2.0"),
        (("runs", "--case", "nope"), "--case 'nope' is not the case of any run here"),
        (("runs", "--include-archived"), "--include-archived applies to --summary only"),
    ):
        result = invoke(migrated_url, *args)
        assert result.exit_code == 2 and message in result.stderr and "Traceback" not in result.output, (args, result.output)
