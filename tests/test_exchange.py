"""`benchledger export` / `import-ndjson`: an exact round trip across backends, and refusals."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from benchledger.ledger.schema import events
from benchledger.ledger.store import Ledger
from tests.conformance.cases import CORPUS
from tests.helpers import invoke

PAIR = CORPUS / "cases" / "review-claim" / "claim-review-01"
DOCS = Path(__file__).resolve().parents[1] / "docs" / "hash-chain.md"


def build_source(url: str, tmp_path: Path) -> None:
    """Three goals whose events interleave in position order: ingests, a LoopX import, a review."""
    ledger_file = tmp_path / "loopx-ledger.json"
    rows = [
        {"run_id": f"r{i}", "benchmark_id": "terminal-bench@2.0", "case_id": "db-wal-recovery", "arm_id": "baseline",
         "recorded_at": f"2026-06-2{i}T12:00:00+08:00", "status": "completed", "score_status": "passed", "notes": "ünïcode kept"}
        for i in range(3)
    ]
    ledger_file.write_text(json.dumps({"schema_version": "benchmark_run_ledger_v0", "benchmarks": {
        "terminal-bench@2.0": {"cases": {"db-wal-recovery": {"runs": rows}}}}}), encoding="utf-8")
    steps = [
        ("ingest", "--goal", "alpha", str(PAIR / "run-1.json")),
        ("import-loopx", "--goal", "loopx", str(ledger_file)),
        ("ingest", "--goal", "beta", str(PAIR / "comparison.json"), str(PAIR / "run-1.json"), str(PAIR / "run-2.json")),
        ("ingest", "--goal", "alpha", str(PAIR / "run-2.json")),
    ]
    for step in steps:
        result = invoke(url, *step)
        assert result.exit_code == 0, result.output


def export(url: str, *args: str) -> str:
    result = invoke(url, "export", *args)
    assert result.exit_code == 0, result.output
    return result.stdout


def audit_digest(url: str, *args: str) -> str:
    result = invoke(url, "audit", "--format", "json", *args)
    report = json.loads(result.stdout)
    assert result.exit_code == 0 and report["ok"], result.output
    return report["digest"]


def stored_state(url: str) -> tuple[list[dict], list[dict]]:
    """A ledger's stream heads and projection rows."""
    ledger = Ledger.open(url)
    try:
        return ledger.heads(), ledger.projection_rows()
    finally:
        ledger.close()


@pytest.fixture
def sqlite_source(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'source.sqlite'}"
    build_source(url, tmp_path)
    return url


def test_export_lines_are_every_stored_field_in_position_order(sqlite_source):
    lines = export(sqlite_source).splitlines()
    ledger = Ledger.open(sqlite_source)
    try:
        stored = list(ledger.read_all())
    finally:
        ledger.close()
    records = [json.loads(line) for line in lines]
    assert [list(r) for r in records] == [[c.name for c in events.c]] * len(stored)
    assert records == [e.as_record() for e in stored]
    assert [r["position"] for r in records] == list(range(1, len(stored) + 1))
    assert len({r["goal_id"] for r in records}) == 3
    assert "ünïcode kept" in lines[2]  # non-ASCII written literally, as the payload text holds it


def test_round_trip_into_the_backend_reproduces_the_ledger_exactly(ledger, ledger_url, sqlite_source, tmp_path):
    dump = tmp_path / "ledger.ndjson"
    dump.write_text(export(sqlite_source), encoding="utf-8")
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["goals"] == ["alpha", "beta", "loopx"] and report["events_imported"] == len(dump.read_text().splitlines())
    assert report["digest"] == audit_digest(sqlite_source) == audit_digest(ledger_url)
    assert export(ledger_url) == dump.read_text(encoding="utf-8")
    assert stored_state(ledger_url) == stored_state(sqlite_source)
    # The imported ledger keeps working: appends continue its chains.
    more = invoke(ledger_url, "ingest", "--goal", "alpha", str(PAIR / "comparison.json"))
    assert more.exit_code == 0 and audit_digest(ledger_url) != report["digest"]


def test_round_trip_out_of_the_backend_into_sqlite(ledger, ledger_url, tmp_path):
    build_source(ledger_url, tmp_path)
    dump = tmp_path / "ledger.ndjson"
    dump.write_text(export(ledger_url), encoding="utf-8")
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    assert invoke(target, "import-ndjson", str(dump)).exit_code == 0
    assert audit_digest(target) == audit_digest(ledger_url)
    assert export(target) == dump.read_text(encoding="utf-8")


def test_the_hash_chain_doc_script_audits_an_export(sqlite_source, tmp_path):
    dump = tmp_path / "ledger.ndjson"
    dump.write_text(export(sqlite_source), encoding="utf-8")
    script = re.search(r"```python\n(.*?)```", DOCS.read_text(encoding="utf-8"), re.S).group(1)
    printed = io.StringIO()
    with contextlib.chdir(tmp_path), contextlib.redirect_stdout(printed):
        exec(script, {})
    assert printed.getvalue().strip() == audit_digest(sqlite_source)


def test_a_goal_export_is_renumbered_with_its_chain_intact(ledger, ledger_url, sqlite_source, tmp_path):
    dump = tmp_path / "beta.ndjson"
    dump.write_text(export(sqlite_source, "--goal", "beta"), encoding="utf-8")
    original = [json.loads(line) for line in dump.read_text().splitlines()]
    assert [r["position"] for r in original] != list(range(1, len(original) + 1))
    assert invoke(ledger_url, "import-ndjson", str(dump)).exit_code == 0
    imported = [json.loads(line) for line in export(ledger_url).splitlines()]
    assert [r["position"] for r in imported] == list(range(1, len(original) + 1))
    assert [{**r, "position": 0} for r in imported] == [{**r, "position": 0} for r in original]
    # Same running hash as the source's audit of that goal; only the covered position differs.
    assert audit_digest(ledger_url).split(":")[1] == audit_digest(sqlite_source, "--goal", "beta").split(":")[1]


def tamper_payload(records: list[dict]) -> list[dict]:
    victim = next(r for r in records if r["kind"] == "run")
    victim["payload"] = victim["payload"].replace("terminal-bench", "terminal-bunch", 1)
    return records


def tamper_recorded_at(records: list[dict]) -> list[dict]:
    records[2]["recorded_at"] = records[2]["recorded_at"].replace("Z", "1Z")
    return records


def drop_inner(records: list[dict]) -> list[dict]:
    return records[:2] + records[3:]


def drop_goal_tail(records: list[dict]) -> list[dict]:
    # The last event of one goal (not the last line): only the positions reveal it.
    last_of = {r["goal_id"]: i for i, r in enumerate(records)}
    victim = min(i for i in last_of.values())
    assert victim < len(records) - 1
    return records[:victim] + records[victim + 1 :]


def swap(records: list[dict]) -> list[dict]:
    records[3], records[4] = records[4], records[3]
    return records


def non_canonical(records: list[dict]) -> list[dict]:
    import hashlib

    from benchledger.ledger import canonical

    body = json.dumps(json.loads(records[0]["payload"]), indent=1)
    records[0]["payload"], records[0]["payload_sha256"] = body, hashlib.sha256(body.encode()).hexdigest()
    records[0]["event_id"] = canonical.event_id_for(records[0]["goal_id"], records[0]["kind"], records[0]["payload_sha256"])
    return records


@pytest.mark.parametrize(
    "tamper, expected",
    [
        (tamper_payload, "payload_hash"),
        (tamper_recorded_at, "chain_hash"),
        (drop_inner, "chain_link"),
        (drop_goal_tail, "positions are not 1..N"),
        (swap, "positions are not in increasing order"),
        (non_canonical, "payload is not canonical JSON"),
    ],
)
def test_a_file_that_does_not_verify_is_refused_and_nothing_is_written(ledger, ledger_url, sqlite_source, tmp_path, tamper, expected):
    records = tamper([json.loads(line) for line in export(sqlite_source).splitlines()])
    dump = tmp_path / "tampered.ndjson"
    dump.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and any(expected in p for p in report["problems"]), report
    assert f"error: {dump}: " in result.stderr
    assert ledger.event_count() == 0 and ledger.heads() == [] and ledger.projection_rows() == []


@pytest.mark.parametrize(
    "line, expected",
    [
        ("{not json", "line 1: invalid JSON"),
        ('{"position": 1}', "line 1: fields differ from an exported event (missing: ['chain_hash',"),
        ("[]", "line 1: not a JSON object"),
    ],
)
def test_malformed_lines_are_refused_with_their_line(ledger, ledger_url, tmp_path, line, expected):
    dump = tmp_path / "bad.ndjson"
    dump.write_text(line + "\n")
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 1
    assert any(p.startswith(expected) for p in json.loads(result.stdout)["problems"])
    assert ledger.event_count() == 0


def test_field_types_and_widths_are_checked_before_inserting(ledger, ledger_url, sqlite_source, tmp_path):
    records = [json.loads(line) for line in export(sqlite_source).splitlines()]
    records[0]["stream_version"] = True
    records[1]["source"] = "x" * 65
    records[2]["goal_id"] = "../escape"
    records[3]["source"] = "cli\x00ingest"
    dump = tmp_path / "bad.ndjson"
    dump.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    problems = json.loads(result.stdout)["problems"]
    assert problems[:4] == [
        "line 1: stream_version is not a positive integer",
        "line 2: source is longer than 64 characters",
        "line 3: goal_id '../escape' is not a valid goal id",
        "line 4: source contains a NUL character",
    ]
    assert ledger.event_count() == 0


def test_a_non_empty_target_is_refused(ledger, ledger_url, sqlite_source, tmp_path):
    dump = tmp_path / "ledger.ndjson"
    dump.write_text(export(sqlite_source), encoding="utf-8")
    assert invoke(ledger_url, "ingest", "--goal", "existing", str(PAIR / "run-1.json")).exit_code == 0
    before = export(ledger_url)
    result = invoke(ledger_url, "import-ndjson", str(dump))
    assert result.exit_code == 1
    assert "the target ledger already holds 2 event(s); import-ndjson restores only into an empty ledger" in result.stderr
    assert export(ledger_url) == before


def test_export_of_an_unknown_goal_is_an_error(sqlite_source):
    result = invoke(sqlite_source, "export", "--goal", "nope")
    assert result.exit_code == 2 and "no goal 'nope'" in result.stderr
