"""`benchledger export` / `import-ndjson`: an exact round trip across backends, and refusals."""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import pytest

from benchledger.ledger.service.exchange import TRAILER_KEY
from benchledger.ledger.storage.schema import events
from benchledger.ledger.storage.store import Store
from tests.conformance.cases import CORPUS
from tests.helpers import invoke, row_counts

PAIR = CORPUS / "cases" / "review-claim" / "claim-review-01"
HOSTILE_VALID = Path(__file__).resolve().parents[1] / "hostile" / "valid"
DOCS = Path(__file__).resolve().parents[2] / "docs" / "hash-chain.md"


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


def stored_state(url: str) -> tuple[list[dict], list[dict], dict[str, dict[str, int]]]:
    """A ledger's stream heads, projection rows and stored row counts (by goal)."""
    ledger = Store.open(url)
    try:
        heads = ledger.heads()
        return heads, ledger.projection_rows(), {h["goal_id"]: ledger.projection_counts(h["goal_id"]) for h in heads}
    finally:
        ledger.close()


@pytest.fixture
def sqlite_source(tmp_path) -> str:
    url = f"sqlite:///{tmp_path / 'source.sqlite'}"
    build_source(url, tmp_path)
    return url


def event_records(dump: str) -> list[dict]:
    """The event records of an export's text (every line but the trailer)."""
    *events_part, trailer = (json.loads(line) for line in dump.splitlines())
    assert TRAILER_KEY in trailer
    return events_part


def write_lines(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_export_lines_are_every_stored_field_in_position_order(sqlite_source):
    *lines, _trailer = export(sqlite_source).splitlines()
    ledger = Store.open(sqlite_source)
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
    assert report["goals"] == ["alpha", "beta", "loopx"] and report["events_imported"] == len(dump.read_text().splitlines()) - 1
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
    original = original[:-1]  # (the trailer)
    assert [r["position"] for r in original] != list(range(1, len(original) + 1))
    assert invoke(ledger_url, "import-ndjson", str(dump)).exit_code == 0
    imported = event_records(export(ledger_url))
    assert [r["position"] for r in imported] == list(range(1, len(original) + 1))
    assert [{**r, "position": 0} for r in imported] == [{**r, "position": 0} for r in original]
    # A goal's digest counts its versions, not positions: the copy holding the goal alone has the same one.
    assert audit_digest(ledger_url) == audit_digest(ledger_url, "--goal", "beta") == audit_digest(sqlite_source, "--goal", "beta")


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

    from benchledger.ledger.storage import canonical

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
    *records, trailer = (json.loads(line) for line in export(sqlite_source).splitlines())
    dump = write_lines(tmp_path / "tampered.ndjson", [*tamper(records), trailer])
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
    records = event_records(export(sqlite_source))
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


# -- the trailer: an export proves its own completeness ------------------------------------


def test_the_export_ends_with_a_trailer_of_count_last_position_and_digest(sqlite_source):
    whole = export(sqlite_source).splitlines()
    assert json.loads(whole[-1]) == {
        TRAILER_KEY: "trailer-v1", "goal_id": None, "events": len(whole) - 1, "last_position": len(whole) - 1,
        "digest": audit_digest(sqlite_source),
    }
    beta = export(sqlite_source, "--goal", "beta").splitlines()
    trailer = json.loads(beta[-1])
    assert trailer["goal_id"] == "beta" and trailer["events"] == len(beta) - 1
    assert trailer["last_position"] == json.loads(beta[-2])["position"]
    assert trailer["digest"] == audit_digest(sqlite_source, "--goal", "beta")


def cut_last_line(lines: list[str]) -> list[str]:
    return lines[:-1]


def cut_last_event(lines: list[str]) -> list[str]:
    return lines[:-2] + lines[-1:]


def cut_last_event_and_trailer(lines: list[str]) -> list[str]:
    return lines[:-2]


def line_after_trailer(lines: list[str]) -> list[str]:
    return lines + lines[-2:-1]


def trailer_of_another_export(lines: list[str]) -> list[str]:
    trailer = json.loads(lines[-1])
    return lines[:-2] + [json.dumps({**trailer, "events": trailer["events"] - 1, "last_position": trailer["last_position"] - 1})]


@pytest.mark.parametrize(
    "cut, expected",
    [
        (cut_last_line, "no export trailer: the file is cut short"),
        (cut_last_event, "the trailer counts"),
        (cut_last_event_and_trailer, "no export trailer"),
        (line_after_trailer, "follows the export trailer"),
        (trailer_of_another_export, "the trailer's digest"),
    ],
)
def test_an_export_that_lost_its_tail_is_refused_and_nothing_is_written(ledger, ledger_url, sqlite_source, tmp_path, cut, expected):
    """Export, drop the last line(s), import-ndjson into a fresh ledger: refused, exit 1, nothing written."""
    lines = export(sqlite_source).splitlines()
    dump = tmp_path / "cut.ndjson"
    dump.write_text("\n".join(cut(lines)) + "\n", encoding="utf-8")
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 1, result.output
    assert any(expected in p for p in json.loads(result.stdout)["problems"]), result.stdout
    assert ledger.event_count() == 0 and ledger.heads() == [] and ledger.projection_rows() == []


def test_an_export_without_trailer_imports_only_with_the_flag_that_says_its_tail_is_unverified(ledger, ledger_url, sqlite_source, tmp_path):
    lines = export(sqlite_source).splitlines()
    old = tmp_path / "old.ndjson"
    old.write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    assert invoke(ledger_url, "import-ndjson", str(old)).exit_code == 1
    result = invoke(ledger_url, "import-ndjson", "--unverifiable-tail", str(old))
    assert result.exit_code == 0, result.output
    assert "tail: NOT verified" in result.stdout
    assert audit_digest(ledger_url) == audit_digest(sqlite_source)
    # The flag only excuses a missing trailer: a wrong one is still refused.
    fresh = f"sqlite:///{tmp_path / 'fresh.sqlite'}"
    wrong = tmp_path / "wrong.ndjson"
    wrong.write_text("\n".join(trailer_of_another_export(lines)) + "\n", encoding="utf-8")
    assert invoke(fresh, "import-ndjson", "--unverifiable-tail", str(wrong)).exit_code == 1
    assert row_counts(fresh)["events"] == 0


def test_an_empty_ledger_exports_a_trailer_and_imports_as_empty(ledger, ledger_url, tmp_path):
    dump = tmp_path / "empty.ndjson"
    dump.write_text(export(ledger_url), encoding="utf-8")
    assert json.loads(dump.read_text())["events"] == 0
    target = f"sqlite:///{tmp_path / 'target.sqlite'}"
    result = invoke(target, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 0 and json.loads(result.stdout)["events_imported"] == 0


# -- a goal's digest survives its own export -----------------------------------------------


def test_a_goal_digest_verifies_on_a_copy_made_from_the_goal_export(ledger, ledger_url, tmp_path):
    build_source(ledger_url, tmp_path)
    source_digest = audit_digest(ledger_url, "--goal", "beta")
    whole_digest = audit_digest(ledger_url)
    assert source_digest.split(":")[0] != whole_digest.split(":")[0]  # beta's 4 versions, not the ledger's positions
    dump = tmp_path / "beta.ndjson"
    dump.write_text(export(ledger_url, "--goal", "beta"), encoding="utf-8")
    copy = f"sqlite:///{tmp_path / 'copy.sqlite'}"
    assert invoke(copy, "import-ndjson", str(dump)).exit_code == 0
    result = invoke(copy, "audit", "--goal", "beta", "--expect-digest", source_digest)
    assert result.exit_code == 0, result.output
    # The source keeps verifying the digest it printed after the goal grows.
    assert invoke(ledger_url, "ingest", "--goal", "beta", str(HOSTILE_VALID / "result.json")).exit_code == 0
    assert invoke(ledger_url, "audit", "--goal", "beta", "--expect-digest", source_digest).exit_code == 0
    # A goal digest that is not the goal's history fails, with what it covers named.
    version, running = source_digest.split(":")
    forged = f"{version}:{'0' * 64}"
    result = invoke(copy, "audit", "--goal", "beta", "--expect-digest", forged, "--format", "json")
    assert result.exit_code == 1 and "history up to version" in result.stdout
    result = invoke(copy, "audit", "--goal", "beta", "--expect-digest", f"{int(version) + 5}:{running}", "--format", "json")
    assert result.exit_code == 1 and "no event at version" in result.stdout


# -- import-ndjson reads regular files only, a line at a time ------------------------------


@pytest.mark.parametrize("kind", ["dev-zero", "symlink-to-dev-zero", "fifo"])
def test_import_ndjson_refuses_what_is_not_a_regular_file_without_hanging(ledger, ledger_url, tmp_path, kind):
    import os
    import time

    path = tmp_path / "export.ndjson"
    if kind == "dev-zero":
        path = Path("/dev/zero")
    elif kind == "symlink-to-dev-zero":
        path.symlink_to("/dev/zero")
    else:
        os.mkfifo(path)
    started = time.monotonic()
    result = invoke(ledger_url, "import-ndjson", str(path))
    assert time.monotonic() - started < 30
    assert result.exit_code == 2
    assert result.stderr.strip() == f"benchledger: {path}: not a regular file (devices, FIFOs and sockets are not read)"
    assert ledger.event_count() == 0


def test_an_over_long_line_is_refused_when_the_reading_reaches_it(ledger, ledger_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import exchange

    monkeypatch.setattr(exchange, "MAX_EXPORT_LINE_BYTES", 1000)
    dump = tmp_path / "long.ndjson"
    dump.write_bytes(b'{"position": 1, "x": "' + b"y" * 5000 + b'"}\n')
    result = invoke(ledger_url, "import-ndjson", str(dump))
    assert result.exit_code == 2 and f"{dump}:1: line is larger than the 1000-byte limit" in result.stderr
    assert ledger.event_count() == 0


@pytest.mark.parametrize(
    "kind, schema_version, expected",
    [
        ("forged-kind", None, "kind 'forged-kind' is not an event kind this benchledger knows"),
        ("run", "benchmark_run_v9", "schema_version 'benchmark_run_v9' is not the one this benchledger records for kind 'run' ('benchmark_run_v0')"),
        ("ingest_batch", None, "schema_version None is not the one this benchledger records for kind 'ingest_batch' ('benchledger_ingest_batch_v0')"),
        ("preflight", "benchmark_preflight_v0", "schema_version 'benchmark_preflight_v0' is not the one this benchledger records for kind 'preflight' (None)"),
    ],
)
def test_an_event_of_a_kind_or_schema_this_benchledger_does_not_know_is_refused_with_its_line(ledger, ledger_url, sqlite_source, tmp_path, kind, schema_version, expected):
    """Hashes consistent (the events were appended by the store, then exported), but no fold of this code reads them
    as their writer meant: refused, nothing written (issue 30, item 10)."""
    from benchledger.ledger.storage.event_records import NewEvent

    source = Store.open(sqlite_source)
    try:
        source.append("alpha", [NewEvent(kind, {"note": "from another benchledger"}, schema_version)], source="test")
        line = source.event_count()
    finally:
        source.close()
    dump = tmp_path / "ledger.ndjson"
    dump.write_text(export(sqlite_source), encoding="utf-8")
    result = invoke(ledger_url, "import-ndjson", "--format", "json", str(dump))
    assert result.exit_code == 1, result.output
    [problem] = json.loads(result.stdout)["problems"]
    assert problem.startswith(f"line {line}: {expected}")
    assert row_counts(ledger_url)["events"] == 0
