"""Issue 31's commands walked as a demanding user types them, on both backends.

`ingest-batches --jobs N` fed what a user's file really holds (nothing, a line
that is not JSON, the wrong kind, the same line twice, a local path) and
interrupted half way; `audit --jobs` and `replay --jobs` with and without a
goal; and the mistakes around them (a typo'd `--jobs`, a digest that is no
digest, an empty file named as the ledger). Every mistake is one line, a
non-zero exit and nothing written.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def _doc(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _lines(path: Path, *batches: dict) -> str:
    path.write_text("".join(json.dumps(batch) + "\n" for batch in batches))
    return str(path)


def _refused(url: str, *args: str, says: str, code: int) -> None:
    before = row_counts(url)
    result = invoke(url, *args)
    assert result.exit_code == code, result.output
    assert says in result.stderr, result.stderr
    assert "Traceback" not in result.output
    assert row_counts(url) == before


@pytest.mark.parametrize("jobs", ["2", "1"])
def test_ingest_batches_takes_a_users_file_with_either_jobs(migrated_url, tmp_path, jobs):
    preflight = {"goal_id": "tb2-db-wal", "kind": None, "artifacts": [_doc("01-preflight.json")]}
    runs = {"goal_id": "tb2-db-wal", "kind": None, "artifacts": [_doc(n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]}

    _refused(migrated_url, "ingest-batches", "--jobs", jobs, str(tmp_path / "missing.ndjson"), says="missing.ndjson: No such file or directory", code=1)
    (tmp_path / "empty.ndjson").write_text("")
    _refused(migrated_url, "ingest-batches", "--jobs", jobs, str(tmp_path / "empty.ndjson"), says="no batch to ingest", code=2)
    not_json = _lines(tmp_path / "not-json.ndjson", preflight)
    with open(not_json, "a") as out:
        out.write("{not json\n")
    _refused(migrated_url, "ingest-batches", "--jobs", jobs, not_json, says="not-json.ndjson:2: invalid JSON", code=1)
    wrong_kind = _lines(tmp_path / "wrong-kind.ndjson", {**runs, "kind": "launch"})
    _refused(migrated_url, "ingest-batches", "--jobs", jobs, wrong_kind, says="contradicts its schema_version", code=1)

    # the same line twice: taken once; the whole file again: nothing new
    report = json.loads(invoke(migrated_url, "ingest-batches", "--jobs", jobs, "--format", "json", _lines(tmp_path / "b.ndjson", preflight, preflight, runs)).stdout)
    assert (report["ok"], report["batches"], report["appended"], report["duplicates"], report["batches_appended"]) == (True, 3, 4, 1, 2)
    again = invoke(migrated_url, "ingest-batches", "--jobs", jobs, "--format", "json", str(tmp_path / "b.ndjson"))
    assert again.exit_code == 0 and json.loads(again.stdout)["appended"] == 0

    # a local path in a field is dropped before it is stored (docs/privacy.md)
    local = {**_doc("01-preflight.json"), "notes": "/home/me/secret/run.log"}
    assert invoke(migrated_url, "ingest-batches", "--jobs", jobs, _lines(tmp_path / "p.ndjson", {"goal_id": "scratch-paths", "kind": "preflight", "artifacts": [local]})).exit_code == 0
    assert "/home/me" not in invoke(migrated_url, "export", "--goal", "scratch-paths").stdout

    # the workers' audit and replay, of everything and of one goal, agree with what was written
    whole = json.loads(invoke(migrated_url, "audit", "--jobs", "2", "--format", "json").stdout)
    one = json.loads(invoke(migrated_url, "audit", "--jobs", "2", "--goal", "tb2-db-wal", "--format", "json").stdout)
    assert whole["ok"] and one["ok"] and one["events_checked"] < whole["events_checked"]
    for goal in ([], ["--goal", "tb2-db-wal"]):
        replay = invoke(migrated_url, "replay", "--jobs", "2", *goal, "--format", "json")
        assert replay.exit_code == 0 and json.loads(replay.stdout)["rows_changed"] == 0


def test_audit_and_replay_mistakes_are_one_line_each(migrated_url):
    # an empty ledger audits clean, with the empty digest
    empty = json.loads(invoke(migrated_url, "audit", "--jobs", "2", "--format", "json").stdout)
    assert empty["ok"] and empty["digest"] == "0:" + "0" * 64
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", str(DEMO / "01-preflight.json")).exit_code == 0
    for command in ("audit", "replay"):
        _refused(migrated_url, command, "--jobs", "2", "--goal", "tb2-db-wall", says="no goal 'tb2-db-wall'", code=2)
    for digest in ("xyz", "5:abc", "-3:" + "0" * 64, ""):
        _refused(migrated_url, "audit", "--expect-digest", digest, says="not a benchledger digest", code=2)


@pytest.mark.parametrize("command", ["ingest-batches", "audit", "replay"])
def test_a_typod_jobs_count_is_named_as_a_count(migrated_url, tmp_path, command):
    file = [str(tmp_path / "b.ndjson")] if command == "ingest-batches" else []
    for typo, says in (("abc", "'abc' is not a valid integer."), ("1.5", "'1.5' is not a valid integer."), ("0", "0 is not in the range 1<=x<="), ("-1", "-1 is not in the range"), ("64", "64 is not in the range")):
        result = invoke(migrated_url, command, "--jobs", typo, *file)
        assert result.exit_code == 2 and f"Error: Invalid value for '--jobs': {says}" in result.stderr, result.stderr
        assert "integer range" not in result.stderr
    assert "--jobs N " in invoke(migrated_url, command, "--help").stdout


def test_an_empty_file_named_as_the_ledger_is_not_an_empty_ledger(tmp_path):
    """`touch ledger.sqlite` (or a copy that failed) is refused by a read as a missing file is, and left as it was."""
    file = tmp_path / "ledger.sqlite"
    file.touch()
    url = f"sqlite:///{file}"
    for read in (["goals"], ["info"], ["audit"], ["history", "--goal", "tb2-db-wal"], ["report", "-o", str(tmp_path / "site")]):
        result = invoke(url, *read)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(f"benchledger: no ledger at {file}: it is an empty file, nothing has been ingested there"), result.stderr
        assert file.stat().st_size == 0 and sorted(p.name for p in tmp_path.iterdir()) == ["ledger.sqlite"]
    current = invoke(url, "db", "current")
    assert current.exit_code == 0 and current.stdout.startswith("not initialized") and file.stat().st_size == 0
    # a command that writes makes it a ledger, and says it created one
    written = invoke(url, "ingest", "--goal", "tb2-db-wal", str(DEMO / "01-preflight.json"))
    assert written.exit_code == 0 and f"created a new, empty ledger at {file}" in written.stderr
    assert invoke(url, "goals").exit_code == 0


@pytest.mark.parametrize("after_fork", [0.0, 0.3], ids=["as-workers-fork", "workers-running"])
def test_ctrl_c_in_ingest_batches_with_workers_leaves_whole_batches_and_no_worker(migrated_url, tmp_path, after_fork):
    """Ctrl-C reaches the command and its forked workers (one process group): exit 130 and one line (also the moment a
    worker is forked: it starts with SIGINT held, then ignores it), no process left, nothing half-written, and the same
    file again appends the rest."""
    preflight = _doc("01-preflight.json")
    # many goals' lines: the validation takes long enough to be interrupted with workers running
    path = _lines(tmp_path / "many.ndjson", *({"goal_id": f"bulk-{n:05d}", "new_goal": True, "kind": "preflight", "artifacts": [preflight]} for n in range(6000)))
    env = {**os.environ, "BENCHLEDGER_DATABASE_URL": migrated_url}
    command = [sys.executable, "-m", "benchledger", "ingest-batches", "--jobs", "2", path]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not _children(process.pid):  # the workers have started
        time.sleep(0.05)
    assert _children(process.pid), "no worker was started"
    time.sleep(after_fork)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err
    assert err.decode().startswith("benchledger: interrupted"), err
    assert "Traceback" not in err.decode() and "Exception ignored" not in err.decode(), err
    time.sleep(0.5)
    assert not _group(process.pid)
    assert json.loads(invoke(migrated_url, "audit", "--format", "json").stdout)["ok"] is True
    rest = invoke(migrated_url, "ingest-batches", "--jobs", "2", "--format", "json", path)
    assert rest.exit_code == 0
    report = json.loads(rest.stdout)
    assert report["appended"] + report["duplicates"] == 6000 and report["appended"] > 0
    assert json.loads(invoke(migrated_url, "audit", "--format", "json").stdout)["ok"] is True


def _children(pid: int) -> list[str]:
    return subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout.split()


def _group(pgid: int) -> list[str]:
    """The live processes of the group ``pgid`` (a zombie has ended: reaping it is its new parent's, PID 1's, business)."""
    rows = subprocess.run(["ps", "-eo", "pid=,pgid=,stat="], capture_output=True, text=True).stdout.splitlines()
    return [row for row in rows if row.split()[1] == str(pgid) and not row.split()[2].startswith("Z")]


def test_ctrl_c_while_a_statement_runs_is_an_interruption_not_a_lost_server(migrated_url):
    """SQLAlchemy counts a Ctrl-C raised inside a statement as a disconnect: `report` interrupted on a primary said the
    server closed the connection (a standby's advice, exit 2) instead of `interrupted` (exit 130)."""
    from sqlalchemy import text

    from benchledger.ledger.storage.engine import create_ledger_engine

    engine = create_ledger_engine(migrated_url)
    # a statement of about a second; Ctrl-C a tenth of a second into it
    slow = "SELECT pg_sleep(1)" if engine.dialect.name == "postgresql" else "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000000) SELECT count(*) FROM n"
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGINT))
    try:
        with pytest.raises(KeyboardInterrupt), engine.connect() as connection:
            timer.start()
            connection.execute(text(slow))
    finally:
        timer.cancel()
        engine.dispose()


@pytest.mark.parametrize("command", ["audit", "replay"])
def test_ctrl_c_while_audit_or_replay_workers_start_is_one_line(migrated_url, tmp_path, command):
    """A Ctrl-C reaches the whole process group; a spawned worker still importing printed a traceback of its own."""
    preflight = _doc("01-preflight.json")
    # three steps of goals (200 a step): workers are started
    path = _lines(tmp_path / "goals.ndjson", *({"goal_id": f"fold-{n:03d}", "new_goal": True, "kind": "preflight", "artifacts": [preflight]} for n in range(450)))
    assert invoke(migrated_url, "ingest-batches", "--jobs", "1", path).exit_code == 0
    env = {**os.environ, "BENCHLEDGER_DATABASE_URL": migrated_url}
    process = subprocess.Popen([sys.executable, "-m", "benchledger", command, "--jobs", "2"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(_children(process.pid)) < 2:  # (the resource tracker and a worker)
        time.sleep(0.02)
    assert len(_children(process.pid)) >= 2, "no worker was started"
    time.sleep(0.1)  # (a worker importing)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert (process.returncode, err.decode()) == (130, "benchledger: interrupted; nothing was written\n")
    time.sleep(0.5)
    assert not _group(process.pid)
    assert invoke(migrated_url, command, "--jobs", "2").exit_code == 0


def test_serve_on_a_port_already_taken_is_one_line(migrated_url):
    """A second `serve` on the port the first holds (or an address this machine lacks) says so, never an internal error."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        env = {**os.environ, "BENCHLEDGER_DATABASE_URL": migrated_url}
        done = subprocess.run([sys.executable, "-m", "benchledger", "serve", "--port", port], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"benchledger: cannot listen on 127.0.0.1:{port}: Address already in use"
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr


def test_import_ndjson_of_many_goals_lists_a_screenful(migrated_url, tmp_path):
    """An export of a team ledger (hundreds of goals) imported: the summary names the first goals and counts the rest,
    not every name on one line."""
    preflight = _doc("01-preflight.json")
    path = _lines(tmp_path / "goals.ndjson", *({"goal_id": f"team-{n:03d}", "new_goal": True, "kind": "preflight", "artifacts": [preflight]} for n in range(25)))
    assert invoke(migrated_url, "ingest-batches", "--jobs", "1", path).exit_code == 0
    exported = tmp_path / "ledger.ndjson"
    export = invoke(migrated_url, "export")
    assert export.exit_code == 0, export.output
    exported.write_text(export.stdout)
    other = tmp_path / "other.sqlite"
    result = invoke(f"sqlite:///{other}", "import-ndjson", str(exported))
    assert result.exit_code == 0, result.output
    goals_line = next(line for line in result.stdout.splitlines() if line.startswith("- goals: "))
    assert goals_line.count("team-") == 20 and goals_line.endswith("... and 5 more"), goals_line


def test_the_reports_history_only_audit_as_a_user_meets_it(migrated_url, tmp_path):
    """`audit --history-only` (what `report` shows by default) walked with a newcomer's mistakes: an unknown goal, a digest
    that is no digest, `report --full-audit` of an unknown goal, a mistyped ledger path: one line each, exit 2, nothing
    written; then on the real goal it proves the same history as the full audit and says the projections were not checked."""
    assert invoke(migrated_url, "ingest", "--goal", "tb2-db-wal", "--new-goal", *(str(p) for p in sorted(DEMO.glob("*.json")))).exit_code == 0
    _refused(migrated_url, "audit", "--history-only", "--goal", "tb2-db-wall", says="no goal 'tb2-db-wall'", code=2)
    _refused(migrated_url, "audit", "--history-only", "--expect-digest", "garbage", says="not a benchledger digest", code=2)
    _refused(migrated_url, "report", "--full-audit", "--goal", "tb2-db-wall", "--output", str(tmp_path / "site"), says="no goal 'tb2-db-wall'", code=2)
    assert not (tmp_path / "site").exists()
    typo = tmp_path / "typo.sqlite"
    result = invoke(f"sqlite:///{typo}", "audit", "--history-only")
    assert result.exit_code == 2 and result.stderr.startswith(f"benchledger: no ledger at {typo}"), result.output
    assert not typo.exists()
    history = json.loads(invoke(migrated_url, "audit", "--history-only", "--format", "json").stdout)
    full = json.loads(invoke(migrated_url, "audit", "--format", "json").stdout)
    assert history["ok"] and full["ok"] and history["digest"] == full["digest"]
    assert (history["projections"], history["projections_checked"]) == ("not checked", 0)
    assert full["projections"] == "checked" and full["projections_checked"] > 0
    shown = invoke(migrated_url, "audit", "--history-only", "--expect-digest", full["digest"])
    assert shown.exit_code == 0 and "- projections checked: not checked" in shown.stdout and "is unchanged" in shown.stdout
