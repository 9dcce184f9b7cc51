"""benchmarks/compare.py measures what it says: its generated ledger is what a user ingests, and its verdicts read its own figures."""

from __future__ import annotations

import json

from benchmarks import compare as bench
from tests.helpers import invoke


def test_the_generated_ledger_holds_n_tasks_x_5_trials_x_2_arms_that_compare_pairs(migrated_url, tmp_path):
    lines = bench.batch_lines(6, seed=3)
    path = tmp_path / "batches.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert invoke(migrated_url, "ingest-batches", str(path)).exit_code == 0
    found = bench.measure(migrated_url, repeat=1)
    assert found["runs"] == 6 * bench.TRIALS * 2 and found["tasks"] == 6
    compared = json.loads(invoke(migrated_url, "compare", "--format", "json").stdout)["comparisons"]
    assert [(c["benchmark_id"], c["baseline_arm"], c["treatment_arm"], c["tasks"]) for c in compared] == [
        ("skillsbench@1.1", bench.BASELINE, bench.TREATMENT, 3), ("terminal-bench@2.0", bench.BASELINE, bench.TREATMENT, 3),
    ]
    assert [c["baseline_trials"] for c in compared] == [3 * bench.TRIALS] * 2
    assert found["compare"] > 0 and found["summary"] > 0 and found["compare_wall"] > 0 and found["summary_wall"] > 0


def result(runs, compare, summary):
    return {"runs": runs, "tasks": runs // 10, "difference": [0.1, 0.1], "compare": compare, "summary": summary,
            "compare_wall": compare, "summary_wall": summary, "compare_peak": 100 * bench.MIB}


def test_the_report_holds_each_target_to_its_own_figures(capsys):
    held = {100: result(1_000, 0.05, 0.02), 1_000: result(10_000, 0.5, 0.2)}
    assert bench.report(held, {100: 48 * bench.MIB, 1_000: 56 * bench.MIB}, "SQLite") == 0
    assert "10.0x for 10x the tasks ✅" in capsys.readouterr().out
    superlinear = {100: result(1_000, 0.05, 0.02), 1_000: result(10_000, 0.65, 0.3)}
    assert bench.report(superlinear, {100: 48 * bench.MIB, 1_000: 56 * bench.MIB}, "SQLite") == 1
    assert "13.0x for 10x the tasks ❌" in capsys.readouterr().out
    too_dear = {100: result(1_000, 0.07, 0.02)}
    assert bench.report(too_dear, {100: 48 * bench.MIB}, "SQLite") == 1
    assert "3.50x ❌" in capsys.readouterr().out
    memory = {100: result(1_000, 0.05, 0.02), 1_000: result(10_000, 0.5, 0.2)}
    assert bench.report(memory, {100: 48 * bench.MIB, 1_000: 80 * bench.MIB}, "SQLite") == 1
    assert "1.67x ❌" in capsys.readouterr().out
