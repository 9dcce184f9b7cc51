"""More of the newcomer's afternoon (session 36), walked as typed, on both backends where the backend matters.

The wrong file given to `ingest-batches` (LoopX's pretty-printed run ledger),
`history --attempt` naming an attempt the goal never had, `merge --from` the
very ledger it merges into, a dry run that created the default ledger, and
Ctrl-C on `serve`, whose normal end it is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchledger.cli.main import cli
from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
PUBLIC_RUN_LEDGER = REPO / "tests" / "data" / "loopx-public" / "benchmark-run-ledger.json"
GOAL = "demo-db-wal-recovery"


def _quickstart(url: str) -> None:
    """examples/quickstart.sh's ingests, as it types them."""
    for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
        assert invoke(url, "ingest", "--goal", GOAL, "--kind", kind, str(DEMO / name)).exit_code == 0
    runs = [str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")]
    assert invoke(url, "ingest", "--goal", GOAL, *runs).exit_code == 0


# -- 1. ingest-batches given a LoopX run ledger --------------------------------------------------


def test_ingest_batches_of_a_loopx_run_ledger_is_one_line_naming_import_loopx(migrated_url, tmp_path):
    """The public run ledger (pretty JSON, 18,054 lines) was 18,054 'invalid JSON' problems; now one line, as import-ndjson says it."""
    assert PUBLIC_RUN_LEDGER.read_text().count("\n") > 1000  # (the file the walk met: one document over many lines)
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "ingest-batches", str(PUBLIC_RUN_LEDGER))
    assert result.exit_code == 1, result.output
    says = (
        f"error: {PUBLIC_RUN_LEDGER}: this is a LoopX run ledger (benchmark_run_ledger_v0), not an ingest-batches file: "
        "bring it in with `benchledger import-loopx FILE --goal GOAL`\n"
    )
    assert result.stderr == says, result.stderr
    assert "invalid JSON" not in result.output and "… and" not in result.output
    assert row_counts(migrated_url) == before
    as_json = json.loads(invoke(migrated_url, "ingest-batches", "--format", "json", str(PUBLIC_RUN_LEDGER)).stdout)
    assert as_json["error_count"] == 1 and "import-loopx" in as_json["errors"][0]["error"]
    # the same recogniser as import-ndjson's: its words for the same file
    assert "this is a LoopX run ledger (benchmark_run_ledger_v0), not an export" in invoke(migrated_url, "import-ndjson", str(PUBLIC_RUN_LEDGER)).stderr
    # any other one document over many lines: one line too, saying what a line of the file should be
    one = invoke(migrated_url, "ingest-batches", str(DEMO / "01-preflight.json"))
    assert one.exit_code == 1 and one.stderr.count("\n") == 1, one.stderr
    assert 'this is one JSON document over many lines, not an ingest-batches file (one batch a line: {"goal_id"' in one.stderr
    # what it suggests works, and a real batches file still goes in, one batch a line
    assert invoke(migrated_url, "import-loopx", str(PUBLIC_RUN_LEDGER), "--goal", "loopx-history").exit_code == 0
    batch = {"goal_id": GOAL, "kind": "preflight", "artifacts": [json.loads((DEMO / "01-preflight.json").read_text())]}
    (tmp_path / "batches.ndjson").write_text(json.dumps(batch) + "\n")
    assert invoke(migrated_url, "ingest-batches", str(tmp_path / "batches.ndjson")).exit_code == 0
    # a batch line that is itself broken is still named by its line
    (tmp_path / "broken.ndjson").write_text(json.dumps(batch) + "\n{not json\n")
    broken = invoke(migrated_url, "ingest-batches", str(tmp_path / "broken.ndjson"))
    assert broken.exit_code == 1 and f"{tmp_path / 'broken.ndjson'}:2: invalid JSON" in broken.stderr, broken.stderr


# -- 2. history --attempt the goal does not hold --------------------------------------------------


def test_history_of_an_attempt_the_goal_does_not_hold_is_refused_naming_its_attempts(migrated_url):
    _quickstart(migrated_url)
    refused = invoke(migrated_url, "history", GOAL, "--attempt", "9")
    assert refused.exit_code == 2, refused.output
    assert refused.stdout == ""
    assert refused.stderr == f"benchledger: --attempt 9 is not an attempt of goal '{GOAL}': its only attempt is 1\n", refused.stderr
    # as runs refuses a filter value no run has: exit 2, one line naming what there is
    runs = invoke(migrated_url, "runs", "--arm", "nope")
    assert runs.exit_code == 2 and runs.stderr.count("\n") == 1 and "choose from" in runs.stderr
    assert invoke(migrated_url, "history", GOAL, "--attempt", "9", "--format", "json").exit_code == 2
    # the attempt it holds is listed, and a second attempt widens the range named
    held = invoke(migrated_url, "history", GOAL, "--attempt", "1", "--format", "json")
    assert held.exit_code == 0 and len(json.loads(held.stdout)["entries"]) == 10
    assert invoke(migrated_url, "ingest", "--goal", GOAL, "--attempt", "2", str(DEMO / "01-preflight.json")).exit_code == 0
    again = invoke(migrated_url, "history", GOAL, "--attempt", "3")
    assert again.exit_code == 2 and again.stderr.endswith("its attempts are 1 to 2\n"), again.stderr
    second = invoke(migrated_url, "history", GOAL, "--attempt", "2", "--format", "json")
    assert second.exit_code == 0 and [e["attempt"] for e in json.loads(second.stdout)["entries"]] == ["2", "2"]


# -- 3. merge --from the ledger it merges into ----------------------------------------------------


def _spellings_of_the_same_ledger(url: str, tmp_path: Path) -> list[str]:
    """Other URLs of the ledger at ``url``: a symlink, a path through '..' and the URI filename (SQLite), the driver-less
    scheme (PostgreSQL)."""
    if url.startswith("sqlite"):
        path = Path(url.removeprefix("sqlite:///"))
        (tmp_path / "elsewhere").mkdir()
        (tmp_path / "elsewhere" / "link.sqlite").symlink_to(path)
        return [url, f"sqlite:///{tmp_path / 'elsewhere' / 'link.sqlite'}", f"sqlite:///{path.parent / 'elsewhere' / '..' / path.name}",
                f"sqlite:///file:{path}?immutable=1&uri=true"]  # (the URI form that reads a ledger in place: same file)
    return [url, url.replace("postgresql+psycopg2://", "postgresql://", 1)]


def test_merge_from_the_ledger_it_merges_into_is_refused_in_one_line(migrated_url, tmp_path):
    _quickstart(migrated_url)
    before = row_counts(migrated_url)
    for same in _spellings_of_the_same_ledger(migrated_url, tmp_path):
        result = invoke(migrated_url, "merge", "--from", same)
        assert result.exit_code == 2, (same, result.output)
        assert result.stdout == "" and result.stderr.count("\n") == 1, result.output
        assert "is the ledger this merges into: there is nothing to merge" in result.stderr, result.stderr
        assert "0 event(s) added" not in result.output
    assert row_counts(migrated_url) == before
    # another ledger (a SQLite file beside it) still merges
    other = f"sqlite:///{tmp_path / 'other.sqlite'}"
    assert invoke(other, "ingest", "--goal", "another-goal", str(DEMO / "01-preflight.json")).exit_code == 0
    # (read in place, as the refusal of a read-only folder advises: it said "no ledger file there")
    merged = invoke(migrated_url, "merge", "--from", f"sqlite:///file:{tmp_path / 'other.sqlite'}?immutable=1&uri=true")
    assert merged.exit_code == 0 and "# Merged" in merged.stdout and ": 2 event(s) added" in merged.stdout, merged.output  # (the preflight and its batch)


@pytest.mark.parametrize("ledger_url", ["postgresql"], indirect=True)
def test_merge_from_another_schema_of_the_same_database_is_another_ledger(migrated_url):
    """One database, a ledger per schema (the search_path in the URL): not the same ledger, so the merge goes ahead."""
    from sqlalchemy import create_engine, text

    from tests.conftest import POSTGRES_URL, _postgres_schema_url

    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin = create_engine(migrated_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        other = _postgres_schema_url(schema)
        assert POSTGRES_URL and invoke(other, "db", "upgrade").exit_code == 0
        _quickstart(other)
        merged = invoke(migrated_url, "merge", "--from", other)
        assert merged.exit_code == 0 and "10 event(s) added" in merged.stdout, merged.output
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


# -- 4. a dry run with no ledger yet --------------------------------------------------------------


def _embedded(args: list[str], home: Path):
    """``benchledger ARGS`` on the embedded default ledger of ``BENCHLEDGER_HOME=home``, as a user's shell runs it."""
    return CliRunner().invoke(cli, args, env={"BENCHLEDGER_HOME": str(home), "BENCHLEDGER_DATABASE_URL": None, "BENCHLEDGER_DEBUG": None})


def test_a_dry_run_with_no_ledger_yet_leaves_no_file_behind(tmp_path):
    home = tmp_path / "home" / "benchledger"
    note = "benchledger: note: no ledger yet (the default one is created by the first command that writes): this dry run is judged against an empty ledger and creates none\n"
    dry = _embedded(["ingest", "--goal", GOAL, "--dry-run", str(DEMO / "01-preflight.json"), str(DEMO / "02-launch.json")], home)
    assert dry.exit_code == 0, dry.output
    assert "would append: 2 event(s)" in dry.stdout and dry.stderr == note
    loopx = _embedded(["import-loopx", str(PUBLIC_RUN_LEDGER), "--goal", "loopx-history", "--dry-run", "--format", "json"], home)
    assert loopx.exit_code == 0, loopx.output
    assert json.loads(loopx.stdout)["dry_run"] is True and json.loads(loopx.stdout)["events_appended"] == 303
    assert loopx.stderr == note
    assert not (tmp_path / "home").exists()  # no file, and no folder for one
    # the first command that writes creates it, saying so; a dry run then reads the ledger there is
    made = _embedded(["ingest", "--goal", GOAL, str(DEMO / "01-preflight.json")], home)
    assert made.exit_code == 0 and f"created a new, empty ledger at {home / 'ledger.sqlite'}" in made.stderr
    again = _embedded(["ingest", "--goal", GOAL, "--dry-run", "--format", "json", str(DEMO / "01-preflight.json")], home)
    assert again.exit_code == 0 and again.stderr == "" and json.loads(again.stdout)["duplicate_count"] == 1


def test_a_dry_run_into_a_named_file_that_does_not_exist_is_still_refused(tmp_path):
    """Only the embedded default is stood in for: a typo in a URL is not an empty ledger (docs/configuration.md)."""
    url = f"sqlite:///{tmp_path / 'typo.sqlite'}"
    for args in (["ingest", "--goal", GOAL, "--dry-run", str(DEMO / "01-preflight.json")],
                 ["import-loopx", str(PUBLIC_RUN_LEDGER), "--goal", "loopx-history", "--dry-run"]):
        result = invoke(url, *args)
        assert result.exit_code == 2 and f"no ledger at {tmp_path / 'typo.sqlite'}" in result.stderr, result.output
    assert list(tmp_path.iterdir()) == []


# -- 5. Ctrl-C on serve ---------------------------------------------------------------------------


def test_ctrl_c_on_serve_is_its_normal_end_stopped_and_exit_0(migrated_url):
    """docs/cli.md: 130 for an interrupted command, except `serve`, whose end Ctrl-C is: `stopped`, exit 0."""
    _quickstart(migrated_url)
    command = [sys.executable, "-m", "benchledger", "--database-url", migrated_url, "serve", "--port", "0"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # (its own session, SIGINT at its default, as a terminal's Ctrl-C reaches a foreground job: the whole process group)
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        started = process.stdout.readline()
        assert started.startswith("serving http://127.0.0.1:") and "(Ctrl-C stops)" in started, started
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, (process.returncode, stderr)
    assert stderr.strip().splitlines()[-1] == "stopped", stderr
    assert "Traceback" not in stderr and "interrupted" not in stderr
    # what the help and the docs say of it
    assert "Ctrl-C (or SIGTERM) ends it, saying \"stopped\", exit 0" in " ".join(invoke(migrated_url, "serve", "--help").stdout.split())
    exit_codes = (REPO / "docs" / "cli.md").read_text()
    assert "except `serve`, which runs until it is stopped: Ctrl-C (or SIGTERM) is its normal end, and it says `stopped` and exits 0" in exit_codes
