"""Every read is one snapshot: what a read command reports was true of one moment.

* Inside :meth:`Store.snapshot` a write committed between two reads is not
  seen (events, heads, projection rows, counts), on both backends; the same
  two reads outside a snapshot do see it (the negative control: the check
  would catch reads from two moments).
* ``audit`` and ``export`` run in a loop, as a user types them, beside 8
  processes ingesting: no audit reports a problem, and every export imports
  into a fresh ledger with the digest its trailer printed. With the snapshot
  switched off (each read on its own connection, as before), it failed in 3
  of 4 runs: on SQLite 2 of 12 and 2 of 14 audits, on PostgreSQL 0 of 10 and
  1 of 11, reported ``head_mismatch`` or ``head_missing``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchledger.errors import LedgerError
from benchledger.ledger.service.ingest import ingest
from benchledger.ledger.service.intake.artifacts import collect_artifacts
from benchledger.ledger.service.intake.files import expand_paths
from benchledger.ledger.service.maintenance import audit
from benchledger.ledger.storage.store import Store
from tests.helpers import invoke
from tests.reliability.test_concurrency import run_writers, write_batch

REPO = Path(__file__).resolve().parents[2]
# Bounds the audit loop whatever the machine's speed (it normally stops when the writers are done).
MOST_ROUNDS = 60


def _ingest(ledger: Store, folder: Path, goal: str) -> None:
    artifacts, _, errors = collect_artifacts(expand_paths([str(folder)]), None)
    assert not errors
    ingest(ledger, goal, artifacts, source="test")


def _everything(ledger: Store) -> tuple:
    return (
        [e.event_id for e in ledger.read_all()],
        ledger.heads(),
        ledger.projection_rows(),
        ledger.event_count(),
    )


def test_a_write_committed_between_two_reads_of_one_snapshot_is_not_seen(ledger, tmp_path):
    _ingest(ledger, write_batch(tmp_path / "first", "first"), "g")
    with ledger.snapshot() as view:
        before = _everything(view)
        _ingest(ledger, write_batch(tmp_path / "second", "second"), "g")  # commits while the view is open
        _ingest(ledger, write_batch(tmp_path / "third", "third"), "other")
        assert _everything(view) == before
        assert view.head("other") is None
        assert audit(view)["events_checked"] == before[3]
        with view.snapshot() as inner:  # a snapshot inside a snapshot is the same moment
            assert _everything(inner) == before
    after = _everything(ledger)
    assert after[3] > before[3] and ledger.head("other") is not None


def test_reads_outside_a_snapshot_see_each_commit(ledger, tmp_path):
    """The negative control: without a snapshot two reads are two moments, which the test above would catch."""
    _ingest(ledger, write_batch(tmp_path / "first", "first"), "g")
    before = _everything(ledger)
    _ingest(ledger, write_batch(tmp_path / "second", "second"), "g")
    assert _everything(ledger) != before


def test_a_snapshot_refuses_to_write(ledger, tmp_path):
    with ledger.snapshot() as view, pytest.raises(LedgerError, match="read-only"):
        _ingest(view, write_batch(tmp_path / "b", "b"), "g")


# -- audit and export beside 8 writers -------------------------------------------------------


def _auditor(url: str, workdir: str) -> None:
    """Audit and export the ledger at ``url`` until ``workdir/stop`` appears; one JSON line per round in ``workdir/rounds``."""
    folder = Path(workdir)
    with open(folder / "rounds", "w") as rounds:
        for number in range(MOST_ROUNDS):
            result = invoke(url, "audit", "--format", "json")
            report = json.loads(result.stdout)
            exported = invoke(url, "export")
            assert exported.exit_code == 0, exported.output
            trailer = json.loads(exported.stdout.splitlines()[-1])
            export = folder / f"export-{number}.ndjson"
            export.write_bytes(exported.stdout_bytes)
            copy_url = f"sqlite:///{folder / f'copy-{number}.sqlite'}"
            imported = invoke(copy_url, "import-ndjson", str(export), "--format", "json")
            copy = json.loads(imported.stdout)
            rounds.write(
                json.dumps(
                    {
                        "audit_exit": result.exit_code,
                        "events_checked": report["events_checked"],
                        "problems": report["problems"],
                        "export_digest": trailer["digest"],
                        "import_exit": imported.exit_code,
                        "import_digest": copy.get("digest"),
                    }
                )
                + "\n"
            )
            rounds.flush()
            (folder / "ready").touch()
            if (folder / "stop").exists():
                return


def test_audit_and_export_beside_eight_writers_report_one_moment(migrated_url, tmp_path):
    audits = tmp_path / "audits"
    audits.mkdir()
    auditor = subprocess.Popen(
        [sys.executable, "-c", f"from tests.reliability.test_snapshot_reads import _auditor; _auditor({migrated_url!r}, {str(audits)!r})"],
        cwd=REPO,
        env={**os.environ, "BENCHLEDGER_HOME": str(tmp_path / "home")},
    )
    try:
        deadline = time.monotonic() + 120
        while not (audits / "ready").exists():  # (the writers start once the auditor is looping)
            assert auditor.poll() is None, "the auditor died before its first round"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        writers = tmp_path / "writers"
        writers.mkdir()
        codes, _ = run_writers(migrated_url, writers)
    finally:
        (audits / "stop").touch()
        assert auditor.wait(timeout=300) == 0
    assert set(codes.values()) == {0}
    rounds = [json.loads(line) for line in (audits / "rounds").read_text().splitlines()]
    final = Store.open(migrated_url)
    try:
        total = final.event_count()
    finally:
        final.close()
    during = [r for r in rounds if 0 < r["events_checked"] < total]
    assert during, f"no audit ran while the writers wrote ({len(rounds)} rounds): the test proved nothing"
    for r in rounds:
        assert (r["audit_exit"], r["problems"]) == (0, []), r
        assert r["import_exit"] == 0 and r["import_digest"] == r["export_digest"], r
