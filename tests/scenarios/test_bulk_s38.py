"""Session 38's bulk-intake defects, as a user types the commands, on both backends: what ``ingest`` and ``ingest-batches``
say of what they refused or wrote is the whole truth, and ``ingest-batches`` refuses before writing anything."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _file(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_ingest_refusing_more_files_than_it_lists_says_how_many_more_on_stdout_too(migrated_url, tmp_path):
    folder = tmp_path / "many"
    folder.mkdir()
    for i in range(1, 26):
        (folder / f"b{i:02}.json").write_text('{"schema_version":"benchmark_run_v0","x":NaN}')
    before = row_counts(migrated_url)

    result = invoke(migrated_url, "ingest", "--goal", "many-nans", str(folder))

    assert result.exit_code == 1 and "Traceback" not in result.output
    listed = [line for line in result.stdout.splitlines() if line.startswith("- ")]
    assert len(listed) == 21 and listed[-2].endswith("b20.json: NaN is not valid JSON (the ledger stores only finite numbers)")
    assert listed[-1] == "- ... and 5 more"
    assert result.stderr.splitlines()[-1] == "error: ... and 5 more"
    assert row_counts(migrated_url) == before


def test_ingest_batches_counts_the_ingest_batch_events_it_appends_beside_the_artifacts(migrated_url, tmp_path):
    run = _demo("05-run-treatment.json")
    path = _file(tmp_path / "five.ndjson", [{"goal_id": "five-runs", "kind": None, "artifacts": [{**run, "job_name": f"k{i}"}]} for i in range(5)])
    before = row_counts(migrated_url)["events"]

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 0, result.output
    events = row_counts(migrated_url)["events"] - before
    assert events == 10  # (5 runs, and the 5 ingest_batch events grouping them)
    assert "- appended: 5 event(s); duplicates: 0 (artifacts; +5 ingest_batch event(s) grouping them: 10 in all)" in result.stdout
    info = invoke(migrated_url, "info")
    assert [line.split()[-1] for line in info.stdout.splitlines() if line.startswith("events")] == [str(before + events)]

    again = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))
    report = json.loads(again.stdout)
    assert (report["appended"], report["batches_appended"], report["events_appended"], report["duplicates"]) == (0, 0, 0, 5)
    assert row_counts(migrated_url)["events"] - before == events
    plain = invoke(migrated_url, "ingest-batches", str(path)).stdout
    assert "- appended: 0 event(s); duplicates: 5; transactions: 0" in plain  # (nothing new: no batch event to mention)

    more = _file(tmp_path / "more.ndjson", [{"goal_id": "five-runs", "kind": None, "artifacts": [{**run, "job_name": f"m{i}"}]} for i in range(3)])
    report = json.loads(invoke(migrated_url, "ingest-batches", "--format", "json", str(more)).stdout)
    assert (report["appended"], report["batches_appended"], report["events_appended"]) == (3, 3, 6)
    assert row_counts(migrated_url)["events"] - before == events + report["events_appended"]


def _run(job: str) -> dict:
    return {**_demo("05-run-treatment.json"), "job_name": job}


def _line(goal: str, *artifacts: dict, attempt: str | None = None) -> dict:
    return {"goal_id": goal, "kind": None, "artifacts": list(artifacts), **({"attempt": attempt} if attempt else {})}


@pytest.fixture
def transaction_a_line(monkeypatch):
    """Every line a transaction of its own (as in a file of thousands of artifacts): a refusal found only while appending
    would come after the earlier lines' transactions committed."""
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 1)
    return bulk


def test_an_attempt_past_the_next_is_refused_while_validating_with_every_other_bad_line(migrated_url, tmp_path, transaction_a_line):
    lines: list[object] = [
        _line("bulk-goal", _run("j1")),
        _line("bulk-goal", _run("j2")),
        _line("other-goal", _run("j3"), attempt="2"),
        '{"goal_id": "bulk-goal", "kind": null, "artifacts": [{"schema_version": "benchmark_run_v0", "x": NaN}]}',
        _line("third-goal", _run("j5"), attempt="5"),
    ]
    path = tmp_path / "att.ndjson"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    before = row_counts(migrated_url)

    result = invoke(migrated_url, "ingest-batches", "--format", "json", str(path))

    assert result.exit_code == 1 and "Traceback" not in result.output, result.output
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["error_count"] == 3 and [e["line"] for e in report["errors"]] == [3, 4, 5]
    assert report["errors"][0]["error"] == (
        "attempt 2: the next attempt of goal other-goal is 1, so 2 would skip 1; name 1 to open it, or an attempt the goal has"
    )
    assert "NaN" in report["errors"][1]["error"] and "so 5 would skip 1-4" in report["errors"][2]["error"]
    assert row_counts(migrated_url) == before  # (the old code committed lines 1 and 2, then said "nothing was written")

    plain = invoke(migrated_url, "ingest-batches", str(path))
    assert plain.exit_code == 1 and "- line 3: attempt 2: the next attempt of goal other-goal is 1" in plain.stdout
    assert f"error: {path}:5: attempt 5:" in plain.stderr and row_counts(migrated_url) == before


def test_a_line_may_name_the_attempt_the_earlier_lines_of_the_file_make_next(migrated_url, tmp_path, transaction_a_line):
    first = [_line("fresh-goal", _run("a1")), _line("fresh-goal", _run("a2"), attempt="2")]  # (line 1 opens attempt 1)
    before = row_counts(migrated_url)

    skipping = _file(tmp_path / "skip.ndjson", [*first, _line("fresh-goal", _run("a3"), attempt="4")])
    refused = invoke(migrated_url, "ingest-batches", "--format", "json", str(skipping))
    assert refused.exit_code == 1
    (error,) = json.loads(refused.stdout)["errors"]
    assert error == {
        "line": 3,
        "error": "attempt 4: the next attempt of goal fresh-goal is 3, so 4 would skip 3; name 3 to open it, or an attempt "
        "the goal has (counting what the file's earlier lines open)",
    }
    assert row_counts(migrated_url) == before

    fixed = _file(tmp_path / "fixed.ndjson", [*first, _line("fresh-goal", _run("a3"), attempt="3"), _line("fresh-goal", _run("a4"), attempt="1")])
    appended = invoke(migrated_url, "ingest-batches", "--format", "json", str(fixed))
    assert appended.exit_code == 0, appended.output
    report = json.loads(appended.stdout)
    assert (report["transactions"], report["events_appended"]) == (4, 8)
    assert row_counts(migrated_url)["events"] - before["events"] == 8
    assert invoke(migrated_url, "history", "fresh-goal", "--attempt", "3").exit_code == 0
    assert invoke(migrated_url, "history", "fresh-goal", "--attempt", "4").exit_code == 2


def test_the_attempts_are_counted_from_the_ledger_and_what_opens_none_opens_none(migrated_url, tmp_path, transaction_a_line):
    case = [_demo("01-preflight.json"), _demo("02-launch.json"), _run("b1")]
    assert invoke(migrated_url, "ingest-batches", str(_file(tmp_path / "first.ndjson", [_line("held-goal", *case)]))).exit_code == 0
    before = row_counts(migrated_url)
    again = {**_demo("01-preflight.json"), "generated_at": "2026-12-05T08:00:00Z"}

    lines = [
        _line("held-goal", _run("b1")),  # (stored already: opens nothing, the next attempt is still 2)
        _line("held-goal", _run("b2"), attempt="3"),
        _line("held-goal", again, _demo("02-launch.json")),  # (a second case: its preflight opens attempt 2)
        _line("held-goal", _run("b3"), attempt="3"),
        _line("held-goal", _run("b4"), attempt="5"),
    ]
    result = invoke(migrated_url, "ingest-batches", "--format", "json", str(_file(tmp_path / "more.ndjson", lines)))

    assert result.exit_code == 1, result.output
    errors = json.loads(result.stdout)["errors"]
    assert [e["line"] for e in errors] == [2, 5]
    assert errors[0]["error"].startswith("attempt 3: the next attempt of goal held-goal is 2, so 3 would skip 2;")
    assert errors[1]["error"].startswith("attempt 5: the next attempt of goal held-goal is 4, so 5 would skip 4;")
    assert row_counts(migrated_url) == before

    del lines[1], lines[-1]
    result = invoke(migrated_url, "ingest-batches", "--format", "json", str(_file(tmp_path / "fixed.ndjson", lines)))
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["events_appended"] == 5  # (3 new artifacts, and 2 batches: the stored run's adds nothing)
    assert invoke(migrated_url, "history", "held-goal", "--attempt", "3").exit_code == 0


def test_a_refusal_only_the_append_finds_names_its_lines_and_what_the_earlier_transactions_kept(migrated_url, tmp_path, transaction_a_line, monkeypatch):
    """What validation cannot foresee (another writer opening attempts, creating a goal one typo away, meanwhile) is
    refused by the append's own check: that transaction wrote nothing, and the message says what the earlier ones kept."""
    monkeypatch.setattr(transaction_a_line, "_check_attempts", lambda *args: None)  # (as if the ledger changed after it)
    path = _file(tmp_path / "late.ndjson", [_line("late-goal", _run("c1")), _line("late-goal", _run("c2")), _line("late-other", _run("c3"), attempt="2")])
    before = row_counts(migrated_url)["events"]

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.stderr.strip() == (
        f"benchledger: {path}: while appending line 3: attempt 2: the next attempt of goal late-other is 1, so 2 would skip "
        "1; name 1 to open it, or an attempt the goal has; this transaction wrote nothing; the 2 transaction(s) before it "
        "committed 2 batch(es) of the lines before line 3, which stay: running the file again appends only what is missing"
    )
    assert row_counts(migrated_url)["events"] - before == 4


def test_the_library_gets_the_append_s_own_error_said_in_the_file_s_terms(migrated_url, tmp_path, transaction_a_line, monkeypatch):
    import benchledger.ledger as library
    from benchledger.ledger.service.attempt_identity import InvalidAttempt

    monkeypatch.setattr(transaction_a_line, "_check_attempts", lambda *args: None)  # (as if the ledger changed after it)
    path = _file(tmp_path / "late.ndjson", [_line("lib-goal", _run("d1")), _line("lib-other", _run("d2"), attempt="3")])
    with library.open(migrated_url) as ledger, pytest.raises(InvalidAttempt, match=r"late\.ndjson: while appending line 2: attempt 3: .*; the 1 transaction"):
        ledger.ingest_batch_file(str(path))
