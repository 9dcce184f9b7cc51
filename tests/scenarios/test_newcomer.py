"""A newcomer's afternoon: the README followed as written, then the usual mistakes, each checked as a user types it.

Every message must name the file or the setting and the problem, exit non-zero,
write nothing and show no traceback (BENCHLEDGER_DEBUG is unset here where a
test checks that no internal error escapes).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from click.testing import CliRunner

from benchledger.cli.main import cli
from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _as_typed(args: list[str], **env: str | None):
    """``benchledger ARGS`` as a user's shell runs it: BENCHLEDGER_DEBUG unset (an internal error shows no traceback), ``env`` set."""
    return CliRunner().invoke(cli, args, env={"BENCHLEDGER_DEBUG": None, **env})


def _embedded(args: list[str], home: Path):
    """``benchledger ARGS`` on the embedded default ledger of ``BENCHLEDGER_HOME=home``, as a user's shell runs it."""
    return _as_typed(args, BENCHLEDGER_HOME=str(home), BENCHLEDGER_DATABASE_URL=None)


def test_benchledger_home_pointing_to_a_file_is_named_not_an_internal_error(tmp_path):
    # A user sets BENCHLEDGER_HOME to the ledger file itself (or to any file) instead of its folder.
    home = tmp_path / "ledger.sqlite"
    home.write_bytes(b"not a folder")
    for args in (["goals"], ["ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")], ["info"]):
        result = _embedded(args, home)
        assert result.exit_code == 2, (args, result.output)
        assert (
            result.stderr
            == f"benchledger: BENCHLEDGER_HOME is {home}, which is not a directory: it must name the folder that holds ledger.sqlite\n"
        ), args
    assert home.read_bytes() == b"not a folder"
    # a file further up the path is named the same way
    below = _embedded(["goals"], home / "sub")
    assert below.exit_code == 2 and "which is not a directory" in below.stderr and "internal error" not in below.stderr


# -- Ctrl-C: one line saying what the ledger kept, and an exit code that is not "a check said no" --------


def _big_ndjson(path: Path, runs: int) -> Path:
    """``runs`` distinct compact runs, one a line: more than one chunk of an ingest."""
    run = json.loads((DEMO / "04-run-baseline.json").read_text())
    path.write_text("".join(json.dumps({**run, "job_name": f"job-{i}"}) + "\n" for i in range(runs)))
    return path


def test_ctrl_c_during_an_ingest_says_nothing_was_written_and_exits_130(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import ingest
    from benchledger.ledger.storage.store import ChunkedAppend

    invoke(migrated_url, "ingest", "--goal", "kept", str(DEMO / "04-run-baseline.json"))
    counts = row_counts(migrated_url)
    chunks = []
    real_append = ChunkedAppend.append

    def interrupted(*args, **kwargs):
        if chunks:
            raise KeyboardInterrupt  # the user's Ctrl-C while the second chunk is appended
        chunks.append(real_append(*args, **kwargs))
        return chunks[-1]

    monkeypatch.setattr(ChunkedAppend, "append", interrupted)
    result = invoke(
        migrated_url, "ingest", "--goal", "big", str(_big_ndjson(tmp_path / "big.ndjson", ingest.CHUNK_ARTIFACTS + 20))
    )

    assert chunks, "the interruption came after a chunk was appended inside the transaction"
    assert result.exit_code == 130, result.output
    assert result.stderr == "benchledger: interrupted; nothing was written\n"
    assert row_counts(migrated_url) == counts
    monkeypatch.undo()
    assert json.loads(invoke(migrated_url, "audit", "--format", "json").stdout)["ok"] is True


def test_ctrl_c_during_ingest_batches_says_what_was_kept_and_a_rerun_appends_the_rest(
    migrated_url, tmp_path, monkeypatch
):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 1)  # one batch (of one run) per transaction
    run = json.loads((DEMO / "04-run-baseline.json").read_text())
    path = tmp_path / "backlog.ndjson"
    lines = [{"goal_id": "g", "kind": None, "artifacts": [{**run, "job_name": f"job-{i}"}]} for i in range(4)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    committed = []
    real_commit = bulk.Ingest.commit

    def interrupted(unit):
        if len(committed) == 2:
            raise KeyboardInterrupt  # Ctrl-C after two transactions committed
        committed.append(real_commit(unit))
        return committed[-1]

    monkeypatch.setattr(bulk.Ingest, "commit", interrupted)
    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 130, result.output
    assert result.stderr == (
        f"benchledger: interrupted; {path}: while appending line 3: this transaction wrote nothing; the 2 transaction(s) "
        "before it committed 2 batch(es) of the lines before line 3, which stay: running the file again appends only what is missing\n"
    )
    assert row_counts(migrated_url)["events"] == 2 * 2  # two batches: a run and its manifest each
    monkeypatch.setattr(bulk.Ingest, "commit", real_commit)
    rest = json.loads(invoke(migrated_url, "ingest-batches", str(path), "--format", "json").stdout)
    assert (rest["appended"], rest["duplicates"]) == (2, 2)


def test_report_into_a_folder_that_cannot_be_made_names_it_in_one_line(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    blocker = tmp_path / "site.html"  # the user gave a file where the report's folder should go, one level up
    blocker.write_text("mine")
    result = invoke(migrated_url, "report", "--output", str(blocker / "site"))
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith(f"benchledger: cannot write the report into {blocker / 'site'}: ")
    assert "Not a directory" in result.stderr and len(result.stderr.splitlines()) == 1
    assert blocker.read_text() == "mine"


def test_an_in_memory_database_url_is_refused_rather_than_an_ingest_that_vanishes(tmp_path):
    # `export BENCHLEDGER_DATABASE_URL=sqlite:///$LEDGER` with LEDGER unset is `sqlite:///`: SQLite's in-memory
    # database. The ingest said "appended: 1 event(s)", exit 0, and the event was gone when the process ended.
    run = str(DEMO / "04-run-baseline.json")
    for url in ("sqlite:///", "sqlite://", "sqlite:///:memory:"):
        for args in (["ingest", "--goal", "g", run], ["goals"], ["audit"]):
            result = _as_typed(args, BENCHLEDGER_DATABASE_URL=url)
            assert result.exit_code == 2, (url, args, result.output)
            assert result.stderr == (
                f"benchledger: {url} is an in-memory database: nothing written there outlives the command; "
                "name a file (sqlite:///PATH) or a server (postgresql://USER@HOST/DATABASE)\n"
            ), (url, args)
    # a review without --goal still runs in its throwaway ledger, whatever the URL says
    review = CliRunner().invoke(
        cli, ["--database-url", "sqlite:///", "benchmark", "review-verifier-attribution", "--benchmark-run-json", run]
    )
    assert review.exit_code in (0, 1) and review.stderr == "" and review.stdout.strip(), review.output


def test_a_goal_given_twice_is_refused_not_the_last_one_silently_taken(migrated_url):
    # `export --goal a --goal b > backup.ndjson` exported b alone, exit 0; `ingest --goal a --goal b` wrote into b.
    run = str(DEMO / "04-run-baseline.json")
    for goal in ("a", "b"):
        assert invoke(migrated_url, "ingest", "--goal", goal, run).exit_code == 0
    counts = row_counts(migrated_url)
    for args in (
        ["ingest", "--goal", "a", "--goal", "b", str(DEMO / "05-run-treatment.json")],
        ["export", "--goal", "a", "--goal", "b"],
        ["audit", "--goal", "a", "--goal-id", "b"],
        ["runs", "--goal", "a", "--goal", "b"],
        ["history", "--goal", "a", "--goal", "b"],
        ["show", "--goal", "a", "--goal", "b"],
        ["replay", "--goal", "a", "--goal", "b"],
    ):
        result = invoke(migrated_url, *args)
        assert result.exit_code == 2, (args, result.output)
        assert "--goal given twice ('a', 'b'): this command takes one goal" in result.stderr, (args, result.stderr)
        assert result.stdout == "", args
    assert row_counts(migrated_url) == counts
    # the same goal twice is still that goal
    same = invoke(migrated_url, "export", "--goal", "a", "--goal", "a")
    assert same.exit_code == 0 and all('"goal_id":"a"' in line for line in same.stdout.splitlines()[:-1])


def test_report_and_serve_name_an_unknown_goal_as_every_other_command_does(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")).exit_code == 0
    expected = invoke(migrated_url, "show", "--goal", "nosuch").stderr
    assert expected == "benchledger: no goal 'nosuch' in this ledger (`benchledger goals` lists them)\n"
    for args in (
        ["report", "--goal", "g", "--goal", "nosuch", "--output", str(tmp_path / "site")],
        ["serve", "--goal", "nosuch", "--port", "0"],
    ):
        result = invoke(migrated_url, *args)
        assert (result.exit_code, result.stderr) == (2, expected), args


def test_an_export_piped_into_import_ndjson_dash_restores_the_ledger(migrated_url, tmp_path):
    # `benchledger export | benchledger --database-url … import-ndjson -`, as `ingest -` and `ingest-batches -` read
    # standard input; it said "-: No such file or directory".
    source = f"sqlite:///{tmp_path / 'source.sqlite'}"
    assert invoke(source, "ingest", "--goal", "g", str(DEMO)).exit_code == 0
    exported = invoke(source, "export")
    digest = json.loads(invoke(source, "audit", "--format", "json").stdout)["digest"]

    restored = invoke(migrated_url, "import-ndjson", "-", "--format", "json", input=exported.stdout)

    assert restored.exit_code == 0, restored.output
    assert json.loads(restored.stdout)["digest"] == digest
    assert invoke(migrated_url, "audit", "--expect-digest", digest).exit_code == 0
    # a truncated copy on standard input is refused like a truncated file, nothing written
    counts = row_counts(f"sqlite:///{tmp_path / 'empty.sqlite'}")
    lost_tail = "".join(exported.stdout.splitlines(keepends=True)[:-2])
    refused = invoke(f"sqlite:///{tmp_path / 'empty.sqlite'}", "import-ndjson", "-", input=lost_tail)
    assert refused.exit_code == 1 and "<stdin>" in refused.output, refused.output
    assert row_counts(f"sqlite:///{tmp_path / 'empty.sqlite'}") == counts


def test_a_search_path_naming_no_schema_says_to_create_it(tmp_path):
    # The README's own recipe with the CREATE SCHEMA step forgotten: `goals` said "run db upgrade", and
    # `db upgrade` said only "no schema has been selected to create in".
    import pytest

    from tests.conftest import POSTGRES_URL, _postgres_schema_url

    if not POSTGRES_URL:
        pytest.skip("BENCHLEDGER_TEST_POSTGRES_URL is not set")
    url = _postgres_schema_url("nc_no_such_schema")
    result = invoke(url, "db", "upgrade")
    assert result.exit_code == 2, result.output
    assert result.stderr.endswith(
        ": no schema of the search_path (nc_no_such_schema) exists: create it first "
        "(CREATE SCHEMA nc_no_such_schema), then run `benchledger db upgrade` again\n"
    ), result.stderr


def test_a_ledger_on_a_read_only_medium_says_why_and_how_to_read_it(tmp_path):
    # A ledger copied onto a read-only mount (an archive, a CI artifact): every command, reads included,
    # said only "unable to open database file" (SQLite's WAL index must be written beside the file).
    import shutil
    import subprocess

    import pytest

    writable, mount = tmp_path / "ledger", tmp_path / "read-only"
    writable.mkdir()
    mount.mkdir()
    url = f"sqlite:///{writable / 'ledger.sqlite'}"
    assert invoke(url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")).exit_code == 0
    # (the WAL checkpointed into the file, as a copy of a closed ledger is)
    if (
        shutil.which("mount") is None
        or subprocess.run(["mount", "--bind", str(writable), str(mount)], capture_output=True).returncode
    ):
        pytest.skip("needs a read-only bind mount (root)")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(mount)], capture_output=True).returncode:
            pytest.skip("needs a read-only bind mount (root)")
        path = mount / "ledger.sqlite"
        result = _as_typed(["--database-url", f"sqlite:///{path}", "goals"])
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"benchledger: cannot use the ledger at sqlite:///{path}: its folder {mount} is read-only, and SQLite writes "
            f"its write-ahead-log index beside the ledger even to read it: copy it to a writable folder, or read it in place "
            f"with --database-url 'sqlite:///file:{path}?immutable=1&uri=true' (only while nothing writes to it)\n"
        )
        in_place = invoke(f"sqlite:///file:{path}?immutable=1&uri=true", "goals", "--format", "json")
        assert in_place.exit_code == 0 and [g["goal_id"] for g in json.loads(in_place.stdout)["goals"]] == ["g"]
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def test_as_of_the_time_a_table_shows_includes_that_row(migrated_url):
    # Tables print recorded times to the second; `--as-of` (and `--until`) with the time shown on a row
    # left that row out, since the ledger records microseconds (08:52:54Z < 08:52:54.189480Z).
    for name in ("01-preflight.json", "02-launch.json"):
        assert invoke(migrated_url, "ingest", "--goal", "g", "--kind", name[3:-5], str(DEMO / name)).exit_code == 0
    rows = list(csv.DictReader(io.StringIO(invoke(migrated_url, "history", "--goal", "g", "--format", "csv").stdout)))
    launch = next(row for row in rows if row["kind"] == "launch")
    shown = launch["recorded"]
    assert shown.endswith("Z") and "." not in shown

    as_of = invoke(migrated_url, "history", "--goal", "g", "--as-of", shown, "--format", "json")
    assert launch["pos"] in {str(e["position"]) for e in json.loads(as_of.stdout)["entries"]}, as_of.stdout
    until = invoke(migrated_url, "history", "--goal", "g", "--until", shown, "--format", "json")
    assert launch["pos"] in {str(e["position"]) for e in json.loads(until.stdout)["entries"]}
    show = json.loads(invoke(migrated_url, "show", "--goal", "g", "--as-of", shown).stdout)
    assert show["as_of_position"] >= int(launch["pos"])
    # a time given with a fraction is still compared exactly
    exact = shown.replace("Z", ".000000Z")
    before = json.loads(invoke(migrated_url, "history", "--goal", "g", "--as-of", exact, "--format", "json").stdout)
    recorded = {str(e["position"]): e["recorded_at"] for e in json.loads(as_of.stdout)["entries"]}
    if recorded[launch["pos"]] > exact:  # (unless the launch was recorded at .000000 exactly)
        assert launch["pos"] not in {str(e["position"]) for e in before["entries"]}


def test_ctrl_c_after_an_ingest_committed_says_it_is_kept(migrated_url, monkeypatch):
    from benchledger.cli import ingest as ingest_cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C while the committed ingest's report is printed

    monkeypatch.setattr(ingest_cli, "echo_pieces", interrupted)
    result = invoke(migrated_url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json"))

    assert result.exit_code == 130, result.output
    assert (
        result.stderr
        == "benchledger: interrupted; the 1 transaction(s) it committed are kept, nothing after them was written\n"
    )
    monkeypatch.undo()
    assert json.loads(invoke(migrated_url, "goals", "--format", "json").stdout)["goals"][0]["event_count"] == 2


def test_kind_given_twice_is_refused_rather_than_storing_a_preflight_as_a_launch(migrated_url, tmp_path):
    # `ingest --kind preflight pre.json --kind launch launch.json` reads as "this kind for this file";
    # click kept the last --kind for both, so a preflight without a schema was stored as a launch.
    documents = {}
    for name, kind in (("01-preflight.json", "preflight"), ("02-launch.json", "launch")):
        document = json.loads((DEMO / name).read_text())
        document.pop("schema_version")
        documents[kind] = tmp_path / f"{kind}.json"
        documents[kind].write_text(json.dumps(document))
    result = invoke(
        migrated_url,
        "ingest",
        "--goal",
        "g",
        "--kind",
        "preflight",
        str(documents["preflight"]),
        "--kind",
        "launch",
        str(documents["launch"]),
    )
    assert result.exit_code == 2, result.output
    assert (
        "--kind given twice ('preflight', 'launch'): it names the kind of every document; ingest each kind on its own"
        in result.stderr
    )
    assert row_counts(migrated_url)["events"] == 0


def test_retract_with_two_reasons_is_refused_rather_than_keeping_the_last(migrated_url):
    assert invoke(migrated_url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json")).exit_code == 0
    (run,) = [
        e
        for e in json.loads(invoke(migrated_url, "history", "--goal", "g", "--format", "json").stdout)["entries"]
        if e["kind"] == "run"
    ]
    counts = row_counts(migrated_url)
    result = invoke(migrated_url, "retract", run["event_id"], "--reason", "wrong host", "--reason", "stale image")
    assert result.exit_code == 2, result.output
    assert "--reason given twice ('wrong host', 'stale image'): one retraction keeps one reason" in result.stderr
    assert row_counts(migrated_url) == counts


def test_a_database_url_naming_a_folder_says_so(tmp_path):
    # `--database-url sqlite:///ledgers` for the folder that holds the ledger: SQLite said only "unable to open database file".
    result = _as_typed(["--database-url", f"sqlite:///{tmp_path}", "goals"])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"benchledger: cannot use the ledger at sqlite:///{tmp_path}: {tmp_path} is a folder; "
        f"name the ledger file (sqlite:///{tmp_path / 'ledger.sqlite'})\n"
    )


def test_a_dry_run_of_an_empty_folder_is_refused_like_the_ingest(migrated_url, tmp_path):
    # `ingest --dry-run` first, as a careful user does: an empty folder (or one holding only a symlinked
    # folder, which is not followed) was an internal error (ValueError, exit 70) instead of "no artifact".
    empty = tmp_path / "jobs"
    empty.mkdir()
    (empty / "linked").symlink_to(DEMO, target_is_directory=True)
    for args in (["ingest", "--goal", "g", str(empty)], ["ingest", "--goal", "g", "--batch-per-directory", str(empty)]):
        real = invoke(migrated_url, *args)
        dry = invoke(migrated_url, *args[:3], "--dry-run", *args[3:])
        assert (real.exit_code, dry.exit_code) == (2, 2), (args, dry.output)
        assert dry.stderr == real.stderr and "no artifact to ingest" in dry.stderr, dry.stderr
    assert row_counts(migrated_url)["events"] == 0
