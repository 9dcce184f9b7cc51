"""Bulk, streamed intake as a user runs it, on both backends.

``ingest-batches FILE``: every line validated before anything is written, then
appended in transactions of about a thousand artifacts that an interrupted run
leaves whole and a re-run completes; ``ingest --batch-per-directory ROOT``:
one batch per directory of a job tree, all or nothing. The memory-bound logic
(chunked appends inside one transaction) is checked by what it holds, not timed.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _attempt(task: str) -> list[dict]:
    """A baseline run, a treatment run and their comparison, for ``task`` (distinct documents per task)."""
    runs = [{**_demo(n), "task_id": task} for n in ("04-run-baseline.json", "05-run-treatment.json")]
    return [*runs, {**_demo("06-comparison.json"), "comparison_id": f"cmp-{task}"}]


def _batch_file(path: Path, lines: list[object]) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _batches(count: int) -> list[dict]:
    return [{"goal_id": f"goal-{i % 3}", "kind": None, "artifacts": _attempt(f"task-{i}")} for i in range(count)]


def test_a_bad_line_in_the_middle_writes_nothing_and_is_named(migrated_url, tmp_path):
    lines: list[object] = _batches(6)
    lines[3] = {"goal_id": "goal-1", "kind": None, "artifacts": [{"schema_version": "no_such_schema_v0"}]}
    path = _batch_file(tmp_path / "batches.ndjson", lines)
    before = row_counts(migrated_url)

    result = invoke(migrated_url, "ingest-batches", str(path), "--format", "json")

    assert result.exit_code == 1
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["error_count"] == 1
    assert [e["line"] for e in report["errors"]] == [4]
    assert "cannot tell the artifact kind" in report["errors"][0]["error"]
    assert f"{path}:4: artifacts[0]" in result.stderr
    assert row_counts(migrated_url) == before


def test_refusals_speak_of_the_line_and_its_kind_field_not_of_ingests_options(migrated_url, tmp_path):
    # ingest-batches has no --kind: a batch gives its kind in its line's "kind"; and the line is named once.
    path = _batch_file(
        tmp_path / "batches.ndjson",
        [
            {"goal_id": "g", "kind": None, "artifacts": [{"schema_version": "no_such_schema_v0"}]},
            {"goal_id": "g", "kind": "preflight", "artifacts": _attempt("t")[:1]},
            {"goal_id": "g", "kind": None, "artifacts": [{**_attempt("t")[0], "job_name": "/home/me/job"}]},
        ],
    )

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 1
    assert "--kind" not in result.output
    assert f'error: {path}:1: artifacts[0]: cannot tell the artifact kind (no known schema_version); give the line a "kind", one of: ' in result.stderr
    assert f'error: {path}:2: artifacts[0]: "kind": "preflight" contradicts its schema_version' in result.stderr
    assert 'set the line\'s "kind" to null for it' in result.stderr
    assert f"error: {path}:3: artifacts[0]: $.job_name of this run holds a local path" in result.stderr
    assert result.stdout.count(str(path)) == 1  # (the heading; each refusal says "line N:")
    assert "- line 3: artifacts[0]: $.job_name" in result.stdout
    assert row_counts(migrated_url)["events"] == 0


def test_refusals_are_listed_first_twenty_then_counted(migrated_url, tmp_path):
    lines: list[object] = ["not json" if i % 2 else {"goal_id": "bad goal!", "artifacts": _attempt("t")} for i in range(25)]
    lines.append(_batches(1)[0])
    path = _batch_file(tmp_path / "batches.ndjson", lines)

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 1
    assert "- ... and 5 more" in result.stdout
    assert result.stderr.count("error: ") == 21 and "error: ... and 5 more" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_line_holding_a_secret_is_refused_by_the_stores_guard(migrated_url, tmp_path):
    secret = {**_demo("04-run-baseline.json"), "job_name": "postgresql://admin:pw@db.internal/prod"}
    path = _batch_file(tmp_path / "batches.ndjson", [*_batches(2), {"goal_id": "g", "kind": None, "artifacts": [secret]}])

    result = invoke(migrated_url, "ingest-batches", str(path), "--format", "json")

    assert result.exit_code == 1
    (error,) = json.loads(result.stdout)["errors"]
    assert error["line"] == 3 and "job_name" in error["error"] and "admin:pw" not in result.output
    assert row_counts(migrated_url)["events"] == 0


def test_a_rerun_after_an_interruption_appends_only_the_rest(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)  # two batches (of three artifacts) per transaction
    path = _batch_file(tmp_path / "batches.ndjson", _batches(10))
    committed = []
    real_commit = bulk.Ingest.commit

    def interrupted(unit):
        if len(committed) == 2:
            raise KeyboardInterrupt  # the user's Ctrl-C (or a kill) after two transactions committed
        committed.append(real_commit(unit))
        return committed[-1]

    monkeypatch.setattr(bulk.Ingest, "commit", interrupted)
    assert invoke(migrated_url, "ingest-batches", str(path)).exit_code == 130  # interrupted, what committed is kept
    assert row_counts(migrated_url)["events"] == 4 * 4  # four whole batches: three members and a manifest each
    monkeypatch.setattr(bulk.Ingest, "commit", real_commit)

    rest = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (rest["batches"], rest["artifacts"], rest["transactions"]) == (10, 30, 3)  # (the two of duplicates alone wrote nothing)
    assert (rest["appended"], rest["duplicates"], rest["batches_appended"]) == (18, 12, 6)
    again = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))
    assert (again["appended"], again["duplicates"], again["batches_appended"], again["transactions"]) == (0, 30, 0, 0)
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True
    # each batch went to its own goal, whole (four batches of goal-0, three of the others)
    goals = {g["goal_id"]: g for g in _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]}
    assert {goal: g["event_count"] for goal, g in goals.items()} == {"goal-0": 16, "goal-1": 12, "goal-2": 12}


def test_a_transaction_ends_at_its_bytes_too_and_a_larger_line_is_one_alone(migrated_url, tmp_path, monkeypatch):
    """docs/performance.md ("Memory"): a transaction holds about 1,000 artifacts or 32 MiB of them, whichever comes first,
    so that one of large documents stays within the bound; a line larger than that is a transaction of its own."""
    from benchledger.ledger.service import bulk

    path = _batch_file(tmp_path / "batches.ndjson", _batches(6))  # (three artifacts a line: far from the artifact bound)
    committed: list[int] = []
    real_transaction = bulk._transaction
    monkeypatch.setattr(bulk, "_transaction", lambda ledger, batches, folds: (committed.append(len(batches)), real_transaction(ledger, batches, folds))[1])
    first, second = (_spooled_bytes(line, f"{path}:{number}") for number, line in enumerate(_batches(2), 1))
    monkeypatch.setattr(bulk, "TRANSACTION_BYTES", first + second)  # (two lines' worth: the lines are all of one size)

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert committed == [2, 2, 2] and report["transactions"] == 3 and report["appended"] == 18
    committed.clear()
    monkeypatch.setattr(bulk, "TRANSACTION_BYTES", 1)  # (every line larger than a transaction's bytes)
    twin = _batch_file(tmp_path / "twin.ndjson", [{**line, "goal_id": f"twin-{i}"} for i, line in enumerate(_batches(3))])
    assert _json(invoke(migrated_url, "ingest-batches", str(twin), "--format", "json"))["transactions"] == 3 and committed == [1, 1, 1]


def _spooled_bytes(line: dict, where: str) -> int:
    """The bytes of ``line``'s spool line, as ``ingest-batches`` validates it at ``where`` (``FILE:LINE``, which its
    artifacts' origins name): what a transaction's byte bound counts."""
    from benchledger.ledger.service import bulk, bulk_spool

    batch = bulk._batch_line(json.dumps(line).encode(), where)
    judged = bulk.check_batch(batch.goal_id, batch.artifacts, source=batch.source)
    return len(bulk_spool.spool_line(batch, judged.members, judged.receipt))


def test_an_interruption_counts_only_the_transactions_that_wrote_something(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)  # two batches (of three artifacts) per transaction
    path = _batch_file(tmp_path / "batches.ndjson", _batches(10))
    first = _batch_file(tmp_path / "first.ndjson", _batches(10)[:4])  # (the file's first two transactions, stored before)
    assert invoke(migrated_url, "ingest-batches", str(first)).exit_code == 0
    commits = []
    real_commit = bulk.Ingest.commit

    def interrupted(unit):
        commits.append(unit)
        if len(commits) == 3:
            raise KeyboardInterrupt  # the user's Ctrl-C, after two transactions of duplicates alone committed
        return real_commit(unit)

    monkeypatch.setattr(bulk.Ingest, "commit", interrupted)
    before = row_counts(migrated_url)
    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 130 and row_counts(migrated_url) == before
    assert result.stderr == f"benchledger: interrupted; {path}: while appending lines 5-6: nothing was written\n"


def test_standard_input_is_read_like_a_file(migrated_url, tmp_path):
    text = _batch_file(tmp_path / "b.ndjson", _batches(2)).read_text()

    report = _json(invoke(migrated_url, "ingest-batches", "-", "--format", "json", input=text))
    bad = invoke(migrated_url, "ingest-batches", "-", input=text + "[1]\n")

    assert (report["file"], report["appended"]) == ("<stdin>", 6)
    assert bad.exit_code == 1 and "error: <stdin>:3: a batch line must be a JSON object" in bad.stderr


def test_ingest_batches_reads_regular_files_only(migrated_url, tmp_path):
    import os

    fifo = tmp_path / "fifo.ndjson"
    os.mkfifo(fifo)

    result = invoke(migrated_url, "ingest-batches", str(fifo))

    assert result.exit_code == 1 and "not a regular file" in result.output


def _job_tree(root: Path) -> Path:
    for index, job in enumerate(["job-b", "job-a", "nested/job-c"]):
        folder = root / job
        folder.mkdir(parents=True)
        for number, document in enumerate(_attempt(f"task-{index}")):
            (folder / f"{number}.json").write_text(json.dumps(document))
    (root / "notes").mkdir()
    (root / "notes" / "README.txt").write_text("not an artifact")
    return root


def test_batch_per_directory_makes_one_batch_per_job(migrated_url, tmp_path):
    root = _job_tree(tmp_path / "jobs")

    report = _json(invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(root), "--format", "json"))

    assert [Path(b["directory"]).relative_to(root).as_posix() for b in report["batches"]] == ["job-a", "job-b", "nested/job-c"]
    assert [b["appended_count"] for b in report["batches"]] == [3, 3, 3] and report["appended_count"] == 9
    goal = _json(invoke(migrated_url, "goals", "--format", "json"))["goals"][0]
    assert (goal["goal_id"], goal["event_count"]) == ("tree", 12)
    again = _json(invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(root), "--format", "json"))
    assert {b["batch_status"] for b in again["batches"]} == {"duplicate"} and again["appended_count"] == 0


def test_batch_per_directory_is_all_or_nothing_across_the_tree(migrated_url, tmp_path):
    root = _job_tree(tmp_path / "jobs")
    (root / "nested" / "job-c" / "1.json").write_text("{broken")

    result = invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(root))

    assert result.exit_code == 1 and "nested/job-c/1.json: invalid JSON" in result.output
    assert row_counts(migrated_url)["events"] == 0
    assert invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(root), str(root)).exit_code == 2
    (tmp_path / "empty" / "job").mkdir(parents=True)
    empty = invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(tmp_path / "empty"))
    assert empty.exit_code == 2 and "no artifact to ingest" in empty.output and "goal 'tree' was not created" in empty.output


def test_an_ingest_larger_than_a_chunk_is_one_transaction(migrated_url, tmp_path, monkeypatch):
    """The streamed ingest appends chunk by chunk but commits once: a refusal after the first chunks writes nothing."""
    from benchledger.ledger.service import ingest
    from benchledger.ledger.storage.store import ChunkedAppend

    monkeypatch.setattr(ingest, "CHUNK_ARTIFACTS", 4)
    ndjson = tmp_path / "runs.ndjson"
    documents = [document for i in range(5) for document in _attempt(f"task-{i}")]
    ndjson.write_text("".join(json.dumps(d) + "\n" for d in documents))
    chunks = []
    real_append = ChunkedAppend.append
    monkeypatch.setattr(ChunkedAppend, "append", lambda self, appends, **kw: chunks.append(appends) or real_append(self, appends, **kw))

    report = _json(invoke(migrated_url, "ingest", "--goal", "big", str(ndjson), "--format", "json"))

    assert report["appended_count"] == 15 and report["batch_status"] == "appended"
    assert [sum(len(a.events) for a in chunk) for chunk in chunks] == [4, 4, 4, 4]  # members; the last three with the manifest
    assert [e["source"] for e in report["events"]] == [f"{ndjson}:{n}" for n in range(1, 16)]
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True

    chunks.clear()
    with ndjson.open("a") as out:
        out.write(json.dumps({**_demo("04-run-baseline.json"), "job_name": "/home/x/.ssh/id_rsa"}) + "\n")
    before = row_counts(migrated_url)
    refused = invoke(migrated_url, "ingest", "--goal", "big2", str(ndjson))
    assert refused.exit_code == 1 and f"{ndjson}:16" in refused.output
    assert len(chunks) == 4  # the first chunks were appended inside the transaction, then rolled back
    assert row_counts(migrated_url) == before


def test_after_a_refusal_later_chunks_are_still_checked_not_appended(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import ingest

    monkeypatch.setattr(ingest, "CHUNK_ARTIFACTS", 2)
    folder = tmp_path / "in"
    folder.mkdir()
    for number in range(6):
        document = {**_demo("04-run-baseline.json"), "task_id": f"t{number}"}
        if number in (1, 4):
            document["job_name"] = "/home/x/.ssh/id_rsa"
        (folder / f"{number}.json").write_text(json.dumps(document))

    result = invoke(migrated_url, "ingest", "--goal", "g", str(folder), "--format", "json")

    assert result.exit_code == 1
    assert [Path(e["source"]).name for e in json.loads(result.stdout)["errors"]] == ["1.json", "4.json"]
    assert row_counts(migrated_url)["events"] == 0


def test_the_streamed_ingest_report_is_the_json_of_the_whole_report():
    from benchledger.cli.output import json_listing

    report = {"ok": True, "goal_id": "g", "nested": {"a": [1, 2]}, "text": "é"}
    events = [{"event_id": "e1", "position": 1}, {"event_id": "e2", "position": 2, "source": "ü"}]
    for listed in ([], events[:1], events):
        expected = json.dumps({**report, "events": listed}, indent=2, ensure_ascii=False) + "\n"
        assert "".join(json_listing(report, "events", iter(listed))) == expected


def test_a_manifest_may_list_more_members_than_a_document_may_hold():
    """An ingest of a 64 MiB NDJSON of small documents has a manifest over the 4 MiB a document may have; it is storable."""
    from benchledger.ledger.service.ingest import manifest_event, manifest_member
    from benchledger.ledger.storage.canonical import canonical_json
    from benchledger.ledger.storage.guard import MAX_PAYLOAD_BYTES, Storable, storage_problems

    members = [manifest_member(f"{n:064x}", "result", None) for n in range(MAX_PAYLOAD_BYTES // 90 + 1)]
    manifest = manifest_event(members)
    body = manifest.canonical[0]
    assert len(body) > MAX_PAYLOAD_BYTES
    assert storage_problems([Storable("g", manifest.kind, manifest.schema_version, "cli ingest", manifest.payload, body)]) == []
    document = {"schema_version": "benchmark_result_v0", "notes": ["x" * 1000] * (MAX_PAYLOAD_BYTES // 1000)}
    (problem,) = storage_problems([Storable("g", "result", "benchmark_result_v0", "cli ingest", document, canonical_json(document))])
    assert "larger than the 4194304-byte limit" in problem[1]


def test_what_is_appended_is_what_was_validated_whatever_happens_to_the_file(migrated_url, tmp_path, monkeypatch):
    """The file is read once: validation spools the normalized batches and the append reads the spool, not the file."""
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 3)  # a transaction per batch
    lines = _batches(4)
    path = _batch_file(tmp_path / "batches.ndjson", lines)
    validate = bulk._validate

    def validated_then_edited(*args):
        validated = validate(*args)
        _batch_file(path, [*lines[:2], {**lines[2], "goal_id": "elsewhere"}, "not json"])
        return validated

    monkeypatch.setattr(bulk, "_validate", validated_then_edited)
    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["appended"], report["batches_appended"], report["transactions"]) == (12, 4, 4)
    goals = {g["goal_id"]: g["event_count"] for g in _json(invoke(migrated_url, "goals", "--format", "json"))["goals"]}
    assert goals == {"goal-0": 8, "goal-1": 4, "goal-2": 4}


def test_a_file_whose_name_is_not_utf8_is_ingested(migrated_url, tmp_path):
    """Its name (a lone surrogate in Python) is part of every artifact's origin, which the spool keeps."""
    path = _batch_file(tmp_path / "backlog-\udcff.ndjson", _batches(2))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["appended"], report["batches_appended"]) == (6, 2)


def test_the_json_report_names_a_file_whose_name_is_not_utf8_exactly(migrated_url, tmp_path):
    """A lone surrogate is escaped in the JSON, as every ``--format json`` escapes it (a console printed a '?' in its place)."""
    import subprocess
    import sys

    path = _batch_file(tmp_path / "backlog-\udcff.ndjson", _batches(2))
    command = [sys.executable, "-m", "benchledger", "--database-url", migrated_url, "ingest-batches", str(path), "--format", "json"]
    result = subprocess.run(command, capture_output=True, check=True)

    assert json.loads(result.stdout)["file"] == str(path)


def test_the_ingest_json_report_names_a_file_whose_name_is_not_utf8_exactly(migrated_url, tmp_path):
    """The events of ``ingest --format json`` are streamed, and escape a lone surrogate as ``echo_json`` does."""
    import subprocess
    import sys

    path = tmp_path / "run-\udcff.json"
    path.write_text(json.dumps(_attempt("task-1")[0]))
    command = [sys.executable, "-m", "benchledger", "--database-url", migrated_url, "ingest", "--goal", "g", str(path), "--format", "json"]
    result = subprocess.run(command, capture_output=True, check=True)

    assert [event["source"] for event in json.loads(result.stdout)["events"]] == [str(path)]


def test_a_full_temporary_folder_is_named_and_nothing_is_written(migrated_url, tmp_path, monkeypatch):
    """Validation spools what it validated to a temporary file: a disk without room for it is one line, exit 2, not an internal error."""
    import errno
    import io

    from benchledger.ledger.service import bulk

    class FullDisk(io.BytesIO):
        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(bulk.tempfile, "TemporaryFile", lambda **options: FullDisk())
    path = _batch_file(tmp_path / "batches.ndjson", _batches(2))

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 2
    assert result.stderr == (
        f"benchledger: {path}: cannot write the validated batches to a temporary file (No space left on device); "
        "nothing was written (TMPDIR names where such files go)\n"
    )
    assert row_counts(migrated_url)["events"] == 0


def test_each_event_is_guarded_once(migrated_url, tmp_path, monkeypatch):
    """Validation guards every line (a refusal writes nothing); the guard's receipt spares the append judging the same content again."""
    from benchledger.ledger.storage import append

    judged: list[str] = []

    def counted(check):
        def judge(items):
            items = list(items)
            judged.extend(item.kind for item in items)
            return check(items)

        return judge

    monkeypatch.setattr(append, "storage_problems", counted(append.storage_problems))
    monkeypatch.setattr(append, "refuse_unstorable", counted(append.refuse_unstorable))
    path = _batch_file(tmp_path / "batches.ndjson", _batches(4))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert report["appended"] == 12
    assert sorted(judged) == sorted(["comparison", "run", "run", "ingest_batch"] * 4)


def _interleaved(count: int) -> list[dict]:
    """Batches of three goals in arrival order: lifecycle evidence between attempts, one attempt sent twice."""
    lifecycle = ["01-preflight.json", "02-launch.json", "03-post-launch.json"]
    lines = []
    for i in range(count):
        artifacts = [_demo(lifecycle[i // 3])] if i % 2 and i // 3 < len(lifecycle) else _attempt(f"task-{i % 6}")
        lines.append({"goal_id": f"goal-{i % 3}", "kind": None, "artifacts": artifacts})
    return lines


def _stored_rows(url) -> list[dict]:
    from benchledger.ledger.storage.store import Store

    ledger = Store.open(url)
    try:
        return [row for goal in ("goal-0", "goal-1", "goal-2") for row in ledger.projection_rows(goal_id=goal)]
    finally:
        ledger.close()


def _resumes_counted(monkeypatch, noted: Path) -> Callable[[], list[str]]:
    """The goal of every fold resumed from a stored checkpoint, in order, in this process or a fold worker (noted in a file)."""
    from benchledger.projections.projector import GoalProjector

    real_resume = GoalProjector.resume.__func__

    def counted(cls, checkpoint, *, strict, earlier):
        with noted.open("a") as out:
            out.write(f"{earlier.goal_id}\n")
        return real_resume(cls, checkpoint, strict=strict, earlier=earlier)

    monkeypatch.setattr(GoalProjector, "resume", classmethod(counted))
    return lambda: noted.read_text().split() if noted.exists() else []


@pytest.mark.parametrize("jobs", ["1", "2"])  # (2: the goals are folded, and kept, by fold workers)
@pytest.mark.parametrize("chunk", [100, 2], ids=["a-chunk-a-transaction", "chunks-of-2"])
def test_a_run_folds_each_goal_once_across_its_transactions_and_stores_what_a_replay_makes(migrated_url, tmp_path, monkeypatch, jobs, chunk):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)  # each goal's batches span several transactions
    monkeypatch.setattr(bulk, "APPEND_CHUNK_ARTIFACTS", chunk)  # (2: and the chunks of a transaction)
    resumed = _resumes_counted(monkeypatch, tmp_path / "resumed.txt")
    path = _batch_file(tmp_path / "batches.ndjson", _interleaved(18))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))

    assert report["transactions"] >= 7 and report["duplicates"] > 0  # (of 9: those of duplicates alone are not counted)
    assert resumed() == []  # every goal was new in the run: folded from its first event, then continued
    ingested = _stored_rows(migrated_url)
    assert {row["projection"] for row in ingested} >= {"projector-checkpoint", "lifecycle-step", "learning-ledger"}
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0
    assert _stored_rows(migrated_url) == ingested  # every row, the checkpoints and lifecycle steps included
    # the next run keeps no projector of this one: it resumes the goals from their stored checkpoints
    more = [{"goal_id": f"goal-{i}", "kind": None, "artifacts": _attempt(f"later-{i}")} for i in range(3)]
    _json(invoke(migrated_url, "ingest-batches", str(_batch_file(tmp_path / "more.ndjson", more)), "--jobs", jobs, "--format", "json"))
    assert sorted(resumed()) == ["goal-0", "goal-1", "goal-2"]
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_goal_another_writer_appended_to_meanwhile_is_resumed_from_its_checkpoint(migrated_url, tmp_path, monkeypatch, jobs):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 6)
    resumed = _resumes_counted(monkeypatch, tmp_path / "resumed.txt")
    other = _batch_file(tmp_path / "other.ndjson", [{"goal_id": "goal-1", "kind": None, "artifacts": [_demo("02-launch.json")]}])
    real_commit = bulk.Ingest.commit
    transactions = []

    def another_writer_between(unit):
        transactions.append(real_commit(unit))
        if len(transactions) == 1:  # (its own run: it holds no projector of this one)
            with monkeypatch.context() as patch:
                patch.setattr(bulk.Ingest, "commit", real_commit)
                _json(invoke(migrated_url, "ingest-batches", str(other), "--format", "json"))
        return transactions[-1]

    monkeypatch.setattr(bulk.Ingest, "commit", another_writer_between)
    path = _batch_file(tmp_path / "batches.ndjson", _interleaved(9))

    _json(invoke(migrated_url, "ingest-batches", str(path), "--jobs", jobs, "--format", "json"))

    # goal-1 (in the first transaction) moved under the run: its next fold resumes from the other writer's checkpoint
    assert resumed() == ["goal-1", "goal-1"]  # the other writer's, then the run's
    ingested = _stored_rows(migrated_url)
    assert _json(invoke(migrated_url, "replay", "--format", "json"))["rows_changed"] == 0
    assert _stored_rows(migrated_url) == ingested
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_a_spool_line_read_back_holds_the_validated_events_whatever_their_strings_hold():
    """The spool keeps each payload as the canonical JSON its event id was made from, and the append reads it back as such
    (not serialized again): the events read back are the validated ones, a record separator or a newline inside a string
    included (JSON escapes them, so a part of the line never holds one raw)."""
    from benchledger.ledger.service import bulk, bulk_spool

    run = {**_demo("04-run-baseline.json"), "job_name": "split\x1ehere\nand é ✓ \U0001f600", "score": 0.1 + 0.2}
    line = {"goal_id": "goal-spool", "kind": None, "artifacts": [run, _demo("01-preflight.json")], "attempt": 2}
    batch = bulk._batch_line(json.dumps(line).encode(), "batches.ndjson:1")
    judged = bulk.check_batch(batch.goal_id, batch.artifacts, source=batch.source, attempt=batch.attempt)
    spooled = bulk_spool.spool_line(batch, judged.members, judged.receipt)

    back = bulk_spool.unspooled(spooled)

    assert spooled.count(b"\n") == 1 and spooled.endswith(b"\n")
    assert (back.goal_id, back.source, back.receipt, back.attempt, back.size) == ("goal-spool", batch.source, judged.receipt, "2", len(spooled))
    assert [a.payload for a in back.artifacts] == [a.payload for a in batch.artifacts]
    assert [(n.canonical, n.event_id("goal-spool"), n.kind) for n in back.members] == [
        (n.canonical, n.event_id("goal-spool"), n.kind) for n in judged.members
    ]
