"""Output a spreadsheet or a reader cannot be fooled by (issue 30 items 11 and 12), on both backends.

A job name is the artifact's text: ``--format csv`` must not hand a
spreadsheet a formula, and a right-to-left override must not make
``job-<RLO>gnp.exe`` read as ``job-exe.png`` in a table, markdown or a page;
JSON keeps the value as recorded.
"""

from __future__ import annotations

import csv
import io
import json

from tests.helpers import ingest_unguarded, invoke
from tests.report_helpers import DEMO, ingest_demo

GOAL = "demo-db-wal-recovery"
FORMULA = "+SUM(1+1)*cmd|' /C calc'!A0"
SPOOFED = "job-\u202egnp.exe"


def _ingest_runs(url: str, *names: str, field: str = "case_id", **fields: str) -> None:
    """Runs whose ``field`` (and job name) is each of ``names``."""
    ingest_demo(url, GOAL)
    run = json.loads((DEMO / "05-run-treatment.json").read_text())
    # unguarded: this test is about display, whatever the storage guard decides about such names
    ingest_unguarded(url, GOAL, [("run", {**run, "job_name": name, field: name, **fields}) for name in names], source="display test")


def test_csv_cells_that_start_a_formula_are_neutralized_and_json_keeps_them(migrated_url):
    names = [FORMULA, "=HYPERLINK(\"http://x\")", "@SUM(A1)", "-2+3", "\tcmd", "-0.25"]
    # (the benchmark id is printed as recorded; a case id is a task id, its surrounding blanks dropped)
    _ingest_runs(migrated_url, *names, field="benchmark_id")
    result = invoke(migrated_url, "runs", "--goal", GOAL, "--format", "csv")
    assert result.exit_code == 0, result.output
    cases = {row["benchmark"] for row in csv.DictReader(io.StringIO(result.stdout))}
    for name in names[:-1]:
        assert "'" + name in cases and name not in cases, name
    assert "-0.25" in cases  # text that is a plain number runs nothing and is kept
    recorded = invoke(migrated_url, "runs", "--goal", GOAL, "--format", "json").stdout
    assert FORMULA in {run["benchmark_id"] for run in json.loads(recorded)["runs"]}


def test_invisible_format_characters_are_shown_in_tables_markdown_and_the_report(migrated_url, tmp_path):
    _ingest_runs(migrated_url, SPOOFED, mode=SPOOFED)  # the mode: what `show` prints of a run
    shown = "job-\\u202egnp.exe"
    table = invoke(migrated_url, "runs", "--goal", GOAL, "--wide")
    assert shown in table.stdout and "\u202e" not in table.stdout
    document = invoke(migrated_url, "show", GOAL, "--format", "markdown")
    assert document.exit_code == 0 and shown in document.stdout and "\u202e" not in document.stdout
    recorded = json.loads(invoke(migrated_url, "runs", "--goal", GOAL, "--format", "json").stdout)
    assert SPOOFED in {run["case_id"] for run in recorded["runs"]}
    site = tmp_path / "site"
    assert invoke(migrated_url, "report", "--output", str(site)).exit_code == 0
    page = (site / "goals" / GOAL / "index.html").read_text()
    assert shown in page and "\u202e" not in page
    charts = page.split('<script type="application/json" id="figures">')[1].split("</script>")[0]
    assert "\u202e" not in json.dumps(json.loads(charts), ensure_ascii=False)  # nor in what the charts draw
    from benchledger.cli.web.figures import plain

    assert plain(SPOOFED) == shown  # every chart text (labels, legends, hovers) goes through plain
