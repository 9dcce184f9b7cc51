"""One command line, learned once: --format, the goal, validated filters, fitted tables, pairs, completion.

Scenario tests as a user types the commands, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from benchledger.cli.output import display_width, fit_widths, table_text, utc_text
from benchledger.errors import USAGE
from tests.cli.test_import_loopx import PUBLIC, public_rows
from tests.conformance.cases import CORPUS
from tests.helpers import invoke, row_counts

DEMO = Path(__file__).parents[2] / "examples" / "demo"
GATE = CORPUS / "cases" / "baseline-failure-gate" / "baseline-gate-04"
NARROW = {"COLUMNS": "80"}
# Every listing command, in every listing form (each takes --format table|json|csv and --wide).
LISTINGS = [
    ["goals"],
    ["history", "--goal", "demo"],
    ["history", "--goal", "loopx-public"],
    ["runs"],
    ["runs", "--current"],
    ["runs", "--paired"],
    ["runs", "--summary"],
]
UTC_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


def ingest_demo(url: str, goal: str = "demo") -> None:
    """The quickstart's steps: preflight, launch, post-launch, the baseline run, then both runs and the comparison."""
    for kind, name in (("preflight", "01-preflight"), ("launch", "02-launch"), ("post-launch", "03-post-launch")):
        assert invoke(url, "ingest", "--goal", goal, "--kind", kind, str(DEMO / f"{name}.json")).exit_code == 0
    assert invoke(url, "ingest", "--goal", goal, str(DEMO / "04-run-baseline.json")).exit_code == 0
    files = [str(DEMO / f) for f in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", goal, *files).exit_code == 0


@pytest.fixture
def demo_and_loopx(migrated_url):
    """A ledger holding the demo goal and the public LoopX run ledger (goal loopx-public)."""
    ingest_demo(migrated_url)
    assert invoke(migrated_url, "import-loopx", "--goal", "loopx-public", str(PUBLIC)).exit_code == 0
    return migrated_url


def ok(url, *args, env=None) -> str:
    result = invoke(url, *args, env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


# -- --format: the same names everywhere, the root option agreeing -----------------------------------------------


def test_every_listing_takes_table_json_and_csv_and_the_root_format_agrees(demo_and_loopx):
    url = demo_and_loopx
    for listing in LISTINGS:
        table = ok(url, *listing, "--format", "table", "--wide")
        assert table == ok(url, *listing, "--wide"), listing  # table is the default
        document = json.loads(ok(url, *listing, "--format", "json"))
        assert document == json.loads(ok(url, "--format", "json", *listing)), listing
        rows = list(csv.reader(io.StringIO(ok(url, *listing, "--format", "csv"))))
        assert ok(url, "--format", "csv", *listing) == ok(url, *listing, "--format", "csv")
        # The CSV holds the table's header and one record per table row, uncut.
        lines = table.splitlines()
        lines = lines[lines.index("") + 1:] if "--summary" in listing else [line for line in lines if not line.startswith("as of")]
        assert [h for h in rows[0] if h] == re.split(r"\s{2,}", lines[0].strip()), listing
        assert len(rows) - 1 == len(lines) - 2, listing
    # A command's own --format wins over the root one.
    assert json.loads(ok(url, "--format", "csv", "goals", "--format", "json"))["goals"]


def test_the_root_format_a_command_does_not_offer_is_a_usage_error(demo_and_loopx):
    result = invoke(demo_and_loopx, "--format", "csv", "show", "--goal", "demo")
    assert result.exit_code == USAGE
    assert "--format csv does not apply here: this command prints json, markdown" in result.stderr
    result = invoke(demo_and_loopx, "--format", "table", "status")
    assert result.exit_code == USAGE and "markdown, json" in result.stderr
    # markdown where a command has a document form, the same name for the same thing.
    assert ok(demo_and_loopx, "--format", "markdown", "history", "--goal", "demo").startswith("# Lifecycle history of `demo`")
    assert ok(demo_and_loopx, "--format", "markdown", "show", "--goal", "demo").startswith("# Goal `demo`")
    assert invoke(demo_and_loopx, "goals", "--format", "markdown").stdout.startswith("| goal |")
    assert invoke(demo_and_loopx, "status", "--format", "csv").exit_code == USAGE


@pytest.mark.parametrize(
    "command",
    [["export"], ["export", "--goal", "demo"], ["report", "--output", "site"], ["serve"], ["db", "current"], ["db", "upgrade"]],
    ids=" ".join,
)
def test_a_root_format_before_a_command_without_formats_is_refused_not_ignored(demo_and_loopx, tmp_path, command):
    """``benchledger --format json export`` is refused: printing NDJSON would ignore the option the user gave."""
    before = row_counts(demo_and_loopx)
    result = CliRunner().invoke(cli, ["--database-url", demo_and_loopx, "--format", "json", *command], catch_exceptions=False)
    assert result.exit_code == USAGE, result.output
    assert f"the root option --format json does not apply to `{command[0]}`: it has one output form and no --format" in result.stderr
    assert result.stdout == "" and not (tmp_path / "site").exists()
    assert row_counts(demo_and_loopx) == before
    # without the root --format the command runs as before
    if command[0] in ("export", "db"):
        assert invoke(demo_and_loopx, *command).exit_code == 0


def test_review_commands_keep_loopx_formats_and_take_the_root_format():
    runner = CliRunner()
    args = ["review-claim", "--benchmark-comparison-json", str(DEMO / "06-comparison.json"),
            "--benchmark-run-json", str(DEMO / "04-run-baseline.json"), "--benchmark-run-json", str(DEMO / "05-run-treatment.json")]
    own = runner.invoke(cli, ["benchmark", *args, "--format", "json"])
    root = runner.invoke(cli, ["--format", "json", "benchmark", *args])
    assert own.exit_code == root.exit_code and own.stdout == root.stdout and json.loads(own.stdout)["schema_version"]
    assert runner.invoke(cli, ["benchmark", *args]).stdout.startswith("#")  # LoopX's default: markdown
    refused = runner.invoke(cli, ["benchmark", *args, "--format", "table"])
    assert refused.exit_code == USAGE and "'table' is not one of 'markdown', 'json'" in refused.stderr


# -- the goal: --goal everywhere, old spellings hidden aliases -------------------------------------------------------


def test_the_goal_is_passed_as_goal_everywhere_and_old_spellings_still_work(demo_and_loopx):
    url = demo_and_loopx
    for command in (["history"], ["show"]):
        by_option = ok(url, *command, "--goal", "demo", "--format", "json")
        assert ok(url, *command, "demo", "--format", "json") == by_option  # positional: hidden alias
        assert ok(url, *command, "--goal-id", "demo", "--format", "json") == by_option  # --goal-id: hidden alias
        help_text = ok(url, *command, "--help")
        assert "--goal GOAL" in help_text and "--goal-id" not in help_text and "[GOAL]" not in help_text
        two = invoke(url, *command, "demo", "--goal", "loopx-public")
        assert two.exit_code == USAGE and "two goals given" in two.stderr
        missing = invoke(url, *command)
        assert missing.exit_code == USAGE and "Missing option '--goal'" in missing.stderr
    assert ok(url, "runs", "--goal-id", "demo", "--format", "json") == ok(url, "runs", "--goal", "demo", "--format", "json")
    assert invoke(url, "audit", "--goal", "no/such").exit_code == USAGE  # validated like every --goal


def test_baseline_failure_gate_takes_goal_and_keeps_loopx_goal_id():
    runner = CliRunner()
    case = json.loads((GATE / "case.json").read_text())
    args = [str(GATE / a) if a.endswith(".json") else a for a in case["args"]]
    assert "--goal-id" in args
    loopx_spelling = runner.invoke(cli, ["benchmark", "baseline-failure-gate", *args, "--format", "json"])
    ours = [("--goal" if a == "--goal-id" else a) for a in args]
    new_spelling = runner.invoke(cli, ["benchmark", "baseline-failure-gate", *ours, "--format", "json"])
    assert loopx_spelling.exit_code == new_spelling.exit_code == case["expected_exit"]
    assert json.loads(loopx_spelling.stdout) == json.loads(new_spelling.stdout) == json.loads((GATE / "expected.json").read_text())
    help_text = runner.invoke(cli, ["benchmark", "baseline-failure-gate", "--help"]).stdout
    assert "--goal GOAL" in help_text


# -- filters are validated --------------------------------------------------------------------------------------------


def test_filters_that_cannot_match_are_refused_with_the_choices(demo_and_loopx):
    url = demo_and_loopx
    status = invoke(url, "runs", "--status", "pased")
    assert status.exit_code == USAGE and status.stdout == ""
    assert "--status 'pased' is not a run or score status; choose from: blocked, completed, failed, missing" in status.stderr
    kind = invoke(url, "history", "demo", "--kind", "runs")
    assert kind.exit_code == USAGE and kind.stdout == ""
    assert "'runs' is not one of 'run', 'comparison'" in kind.stderr and "'benchmark_run_ledger_row_v0'" in kind.stderr
    benchmark = invoke(url, "runs", "--benchmark", "terminal-bench@3.0", "--current")
    assert benchmark.exit_code == USAGE and "choose from: skillsbench-cloud-oracle-sanity@v0, skillsbench@1.1" in benchmark.stderr
    arm = invoke(url, "runs", "--goal", "demo", "--arm", "codex_loopx_treatment")  # an arm of another goal only
    assert arm.exit_code == USAGE and "choose from: codex-loopx, hardened-codex" in arm.stderr
    # A known status no run has is an answer (nothing is running), not a mistake.
    assert json.loads(ok(url, "runs", "--status", "running", "--format", "json")) == {"runs": []}
    # A status a LoopX row has beyond the known ones filters as before.
    probes = json.loads(ok(url, "runs", "--status", "not_run_worker_materialization_probe", "--format", "json"))["runs"]
    assert len(probes) == 2
    assert [e["kind"] for e in json.loads(ok(url, "history", "demo", "--kind", "comparison", "--format", "json"))["entries"]] == ["comparison"]


# -- tables fit the terminal, one time form ----------------------------------------------------------------------------


def test_no_listing_prints_a_line_wider_than_columns_without_wide(demo_and_loopx):
    url = demo_and_loopx
    for listing in LISTINGS:
        narrow = ok(url, *listing, env=NARROW).splitlines()
        # A line runs past 80 only for ids that are never cut: a run id is a 36-character UUID, a LoopX pair id
        # longer still, which with the goal and the time leave too little of 80 (tests/scenarios/test_trust_items.py).
        assert narrow and (max(display_width(line) for line in narrow) <= 80 or listing[0] == "runs"), listing
        wide = ok(url, *listing, "--wide", env=NARROW).splitlines()
        assert len(wide) == len(narrow), listing  # cut, never wrapped or dropped
    # --wide prints every cell whole: the long LoopX case and arm names are there in full.
    wide = ok(url, "runs", "--wide", env=NARROW)
    assert max(len(line) for line in wide.splitlines()) > 80
    assert "skillsbench_raw_codex_autonomous_max5_baseline" in wide
    assert "skillsbench_raw_codex_autonomous_max5_baseline" not in ok(url, "runs", env=NARROW)
    assert "…" in ok(url, "runs", env=NARROW)
    assert max(len(line) for line in ok(url, "runs", env={"COLUMNS": "200"}).splitlines()) <= 200


def test_times_are_utc_in_one_form_across_commands(demo_and_loopx):
    url = demo_and_loopx
    rows = list(csv.DictReader(io.StringIO(ok(url, "runs", "--goal", "loopx-public", "--format", "csv"))))
    recorded = {r["run"]: r["recorded (UTC)"] for r in rows}
    source = {r["run_id"]: r["recorded_at"] for r in public_rows()}
    # LoopX writes local times with an offset; every one is shown in UTC.
    assert all(UTC_TIME.match(t) for t in recorded.values())
    some = next(run for run, at in source.items() if at.endswith("+08:00"))
    assert recorded[some] == utc_text(source[some]) and recorded[some] != source[some]
    for listing, column in ((["goals"], "last activity (UTC)"), (["history", "demo"], "recorded"), (["runs", "--current"], "recorded (UTC)")):
        values = [r[column] for r in csv.DictReader(io.StringIO(ok(url, *listing, "--format", "csv"))) if r[column]]
        assert values and all(UTC_TIME.match(v) for v in values), listing
    # JSON keeps each value as recorded.
    runs = json.loads(ok(url, "runs", "--goal", "loopx-public", "--format", "json"))["runs"]
    assert {r["run_id"]: r["recorded_at"] for r in runs}[some] == source[some]


def test_the_fitting_rule_cuts_the_widest_columns_first():
    assert fit_widths([5, 10, 40], 80) == [5, 10, 40]
    assert fit_widths([5, 10, 40, 40], 50) == [5, 10, 15, 14]  # 44 characters of cells + 6 of gaps; the spare one goes left
    assert fit_widths([5, 10, 40], None) == [5, 10, 40]
    text = table_text(["a", "b"], [["x" * 30, "y\nz"]], width=20)
    assert text.splitlines()[2] == "x" * 7 + "…" + "x" * 7 + "  y z" and all(len(line) <= 20 for line in text.splitlines())  # cut in the middle
    # Wide characters take two columns: cut and padded by what the terminal shows.
    wide = table_text(["job", "x"], [["测试任务名称很长很长", "ok"], ["🚀 launch", "y"]], width=16).splitlines()
    assert wide[2] == "测试任…很长   ok" and max(display_width(line) for line in wide) <= 16


# -- runs: arms side by side, pass rates ------------------------------------------------------------------------------


def test_runs_paired_puts_baseline_and_treatment_on_one_row(demo_and_loopx):
    url = demo_and_loopx
    pairs = json.loads(ok(url, "runs", "--paired", "--goal", "demo", "--format", "json"))["pairs"]
    assert len(pairs) == 1
    (pair,) = pairs
    assert (pair["paired_by"], pair["pair_id"], pair["case_id"]) == ("comparison", "fixture-pair", "db-wal-recovery")
    assert (pair["baseline"]["arm"], pair["baseline"]["score_status"]) == ("hardened-codex", "failed")
    assert (pair["treatment"]["arm"], pair["treatment"]["score_status"]) == ("codex-loopx", "passed")
    assert pair["score_delta"] == 1.0
    table = ok(url, "runs", "--paired", "--goal", "demo", "--wide").splitlines()
    assert len(table) == 3 and re.search(r"hardened-codex\s+failed 0\s+codex-loopx\s+passed 1\s+\+1$", table[2])
    # LoopX rows pair within their run group: the latest baseline-role and treatment-role arm.
    loopx = json.loads(ok(url, "runs", "--paired", "--goal", "loopx-public", "--format", "json"))["pairs"]
    groups: dict = {}
    for r in public_rows():
        groups.setdefault((r["benchmark_id"], r["case_id"], r["run_group_id"]), set()).add(
            "treatment" if "treatment" in r["arm_id"] else "baseline" if "baseline" in r["arm_id"] else None)
    assert len(loopx) == sum(1 for roles in groups.values() if {"baseline", "treatment"} <= roles)
    cobol = next(p for p in loopx if p["case_id"] == "cobol-modernization")
    assert (cobol["baseline"]["arm"], cobol["treatment"]["arm"]) == ("hardened-codex-baseline", "codex-loopx-treatment")
    assert (cobol["baseline"]["arm_spelling"], cobol["treatment"]["arm_spelling"]) == ("hardened_codex_baseline", "codex_loopx_treatment")
    # Filters choose the pairs; --paired with --current is a usage error.
    assert json.loads(ok(url, "runs", "--paired", "--case", "cobol-modernization", "--format", "json"))["pairs"] == [cobol]
    assert invoke(url, "runs", "--paired", "--current").exit_code == USAGE


def test_runs_summary_prints_pass_rates_per_benchmark_and_arm(demo_and_loopx):
    url = demo_and_loopx
    rates = json.loads(ok(url, "runs", "--summary", "--format", "json"))["pass_rates"]
    by_arm = {(r["benchmark_id"], r["arm"]): r for r in rates}
    # A hand count from the JSON: the arm is the arm id (else mode) lower-cased with "_" as "-"; archived,
    # running and attempt-accounting-excluded rows stay out of the rate, and archived ones that nothing else leaves out are
    # counted apart (an archived row LoopX's accounting excludes too is "not countable": --include-archived keeps it out).
    rows = [r for r in public_rows() if (r["benchmark_id"], (r.get("arm_id") or r["mode"]).lower().replace("_", "-")) == ("skillsbench@1.1", "codex-loopx-treatment")]
    countable = [r for r in rows if r.get("status") != "running"
                 and r.get("case_attempt_countable") is not False and r.get("benchmark_budget_countable") is not False]
    archived = [r for r in countable if r.get("archive_state") == "archived" or r.get("archived_at")]
    counted = [r for r in countable if r not in archived]
    passed = sum(r["score_status"] == "passed" for r in counted)
    failed = sum(r["score_status"] == "failed" for r in counted)
    expected = by_arm[("skillsbench@1.1", "codex-loopx-treatment")]
    assert len(archived) > 0 and (expected["runs"], expected["passed"], expected["failed"], expected["archived"]) == (len(counted), passed, failed, len(archived))
    assert expected["pass_rate"] == (round(passed / (passed + failed), 4) if passed + failed else None)
    assert by_arm[("terminal-bench@2.0", "codex-loopx")]["pass_rate"] == 1.0
    assert by_arm[("terminal-bench@2.0", "hardened-codex")]["pass_rate"] == 0.0
    table = ok(url, "runs", "--summary", "--benchmark", "terminal-bench@2.0", "--goal", "demo", "--wide").splitlines()
    assert " ".join(table[: table.index("")]).startswith("Pass rates count current, countable, unretracted runs per benchmark and arm")
    table = table[table.index("") + 1:]
    assert re.split(r"\s{2,}", table[0]) == [
        "benchmark", "arm", "runs", "passed", "failed", "unscored", "pass rate", "archived", "superseded", "retracted", "not countable",
        "arm as recorded"]
    assert [line.split()[1:] for line in table[2:]] == [
        ["codex-loopx", "1", "1", "0", "0", "100%", "0", "0", "0", "0", "codex-loopx"],
        ["hardened-codex", "1", "0", "1", "0", "0%", "0", "0", "0", "0", "hardened-codex"]]
    # --include-archived counts SkillsBench's archived runs in the rate, and says so first.
    with_archived = json.loads(ok(url, "runs", "--summary", "--include-archived", "--format", "json"))
    assert "archived ones" in with_archived["counted"]
    entry = {(r["benchmark_id"], r["arm"]): r for r in with_archived["pass_rates"]}[("skillsbench@1.1", "codex-loopx-treatment")]
    assert entry["runs"] == len(counted) + len(archived)
    # With --current an arm counts its current countable run only.
    current = json.loads(ok(url, "runs", "--summary", "--current", "--case", "3d-scan-calc", "--format", "json"))["pass_rates"]
    assert sum(r["runs"] for r in current) == 1


# -- history: outcomes, the artifact's own time, what --as-of compares ---------------------------------------------------


def test_history_shows_outcomes_and_both_times(demo_and_loopx):
    url = demo_and_loopx
    entries = json.loads(ok(url, "history", "demo", "--format", "json"))["entries"]
    runs = [e for e in entries if e["kind"] == "run"]
    assert [e["outcome"] for e in runs] == [{"score_status": "failed", "score": 0.0}, {"score_status": "passed", "score": 1.0}]
    assert [e["summary"].split(" terminal-bench")[0] for e in runs] == ["failed 0", "passed 1"]
    assert all(e["artifact_time"] is None for e in entries)  # compaction keeps no time of the run
    rows = list(csv.DictReader(io.StringIO(ok(url, "history", "loopx-public", "--format", "csv"))))
    first = min(public_rows(), key=lambda r: (utc_text(r["recorded_at"]), r["run_id"]))
    assert rows[0]["artifact time"] == utc_text(first["recorded_at"]) and rows[0]["recorded"] != rows[0]["artifact time"]
    assert rows[0]["summary"].startswith(f"{first['score_status']}")


def test_as_of_says_which_time_it_compares(demo_and_loopx):
    url = demo_and_loopx
    help_text = " ".join(ok(url, "history", "--help").split())
    assert "compared with the ledger's recording time, recorded_at, never an artifact's own time" in help_text
    entries = json.loads(ok(url, "history", "demo", "--format", "json"))["entries"]
    moment = entries[3]["recorded_at"]
    table = ok(url, "history", "demo", "--as-of", moment).splitlines()
    assert table[0] == f"as of position 4: the events the ledger recorded (recorded_at, UTC) at or before {moment}"
    assert ok(url, "history", "demo", "--as-of", "3").splitlines()[0] == "as of position 3"
    markdown = ok(url, "history", "demo", "--as-of", moment, "--format", "markdown").splitlines()[0]
    assert markdown == f"# Lifecycle history of `demo` (as of position 4: the events the ledger recorded (recorded_at, UTC) at or before {moment})"


# -- shell completion ------------------------------------------------------------------------------------------------


def complete(words: str, env: dict | None = None) -> list[str]:
    result = CliRunner().invoke(
        cli, [], prog_name="benchledger", catch_exceptions=False,
        env={"_BENCHLEDGER_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)), **(env or {})},
    )
    assert result.exit_code == 0
    return result.stdout.split()


def test_goal_options_complete_goal_names_from_the_ledger(demo_and_loopx, tmp_path):
    url = demo_and_loopx
    assert complete(f"benchledger --database-url {url} history --goal ") == ["plain,demo", "plain,loopx-public"]
    assert complete(f"benchledger --database-url {url} runs --goal lo") == ["plain,loopx-public"]
    assert complete("benchledger runs --goal ", env={"BENCHLEDGER_DATABASE_URL": url}) == ["plain,demo", "plain,loopx-public"]
    # An unusable ledger completes nothing, silently, and creates nothing.
    assert complete("benchledger --database-url postgresql://u@127.0.0.1:1/x history --goal ") == []
    home = tmp_path / "home"
    assert complete("benchledger history --goal ", env={"BENCHLEDGER_HOME": str(home), "BENCHLEDGER_DATABASE_URL": None}) == []
    assert not home.exists()
