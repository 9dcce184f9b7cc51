"""Real job trees and real files, as a user brings them in, on both backends (issue #28, items 11-13; #30.14).

A job tree holds more than artifacts (a ``job-summary.json``), files come
gzipped (``run.json.gz``), a backlog's lines carry different ``"source"``
labels, and a batch can be far larger than any review needs: each is a CLI
call as a user types it.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"


def _demo(name: str) -> dict:
    return json.loads((DEMO / name).read_text())


def _json(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _run(task: str) -> dict:
    return {**_demo("04-run-baseline.json"), "task_id": task}


def _exported(url) -> list[dict]:
    """The ledger's events as ``export`` writes them (the trailer left out)."""
    lines = [json.loads(line) for line in invoke(url, "export").stdout.splitlines()]
    return [line for line in lines if "event_id" in line]


# -- ingest-batches: transactions by size, whatever the lines' sources ------------------------------


def test_lines_of_alternating_sources_share_transactions(migrated_url, tmp_path):
    """docs/cli.md: "transactions of about 1,000 artifacts"; a new transaction at every change of "source" made 3,600 of 14,400 artifacts."""
    lines = [{"goal_id": f"g{i % 2}", "kind": None, "source": f"harvest-{i % 3}", "artifacts": [_run(f"t{i}")]} for i in range(30)]
    path = tmp_path / "backlog.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["batches"], report["appended"], report["transactions"]) == (30, 30, 1)
    sources = {(e["goal_id"], e["kind"], e["source"]) for e in _exported(migrated_url)}
    assert sources == {(f"g{i % 2}", kind, f"harvest-{i % 3}") for i in range(30) for kind in ("run", "ingest_batch")}
    assert _json(invoke(migrated_url, "audit", "--format", "json"))["ok"] is True


def test_transactions_are_cut_by_size_only(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import bulk

    monkeypatch.setattr(bulk, "TRANSACTION_ARTIFACTS", 4)
    # batches of 1, 2 and 3 artifacts, each line another source: 1+2 | 3 | 1+2 | 3 | ...
    lines = [
        {"goal_id": "g", "kind": None, "source": f"s{i}", "artifacts": [_run(f"t{i}-{n}") for n in range(1 + i % 3)]} for i in range(9)
    ]
    path = tmp_path / "backlog.ndjson"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["artifacts"], report["transactions"]) == (18, 6)


def test_a_gzip_backlog_is_read_decompressed(migrated_url, tmp_path):
    path = tmp_path / "backlog.ndjson.gz"
    path.write_bytes(gzip.compress(b"".join(json.dumps({"goal_id": "g", "kind": None, "artifacts": [_run(f"t{i}")]}).encode() + b"\n" for i in range(3))))

    report = _json(invoke(migrated_url, "ingest-batches", str(path), "--format", "json"))

    assert (report["batches"], report["appended"]) == (3, 3)


# -- gzip files: read as such, limits on what they decompress to ------------------------------------


def test_a_gzip_file_is_the_document_it_holds(migrated_url, tmp_path):
    job = tmp_path / "jobs" / "job-1"
    job.mkdir(parents=True)
    document = json.dumps(_run("t1")).encode()
    (job / "run.json.gz").write_bytes(gzip.compress(document))
    (job / "more.ndjson.gz").write_bytes(gzip.compress(b"".join(json.dumps(_run(f"t{n}")).encode() + b"\n" for n in (2, 3))))
    plain = tmp_path / "run.json"
    plain.write_bytes(document)

    tree = _json(invoke(migrated_url, "ingest", "--goal", "g", "--batch-per-directory", str(tmp_path / "jobs"), "--format", "json"))
    again = _json(invoke(migrated_url, "ingest", "--goal", "g", str(plain), "--format", "json"))
    piped = _json(invoke(migrated_url, "ingest", "--goal", "h", "-", "--format", "json", input=gzip.compress(document)))

    assert [Path(e["source"]).name for e in tree["events"]] == ["more.ndjson.gz:1", "more.ndjson.gz:2", "run.json.gz"]
    assert tree["appended_count"] == 3
    # the same bytes, compressed or not, are the same observation (the source hash is the decompressed bytes')
    assert (again["appended_count"], again["duplicate_count"]) == (0, 1)
    assert piped["appended_count"] == 1


def test_a_zip_bomb_is_refused_naming_the_limit(migrated_url, tmp_path):
    bomb = tmp_path / "run.json.gz"
    bomb.write_bytes(gzip.compress(b'{"schema_version": "benchmark_run_v0", "job_name": "' + b"x" * (5 * 1024 * 1024) + b'"}'))
    assert bomb.stat().st_size < 64 * 1024  # (small on disk: only what it decompresses to is over the limit)

    result = invoke(migrated_url, "ingest", "--goal", "g", str(bomb))

    assert result.exit_code == 1
    assert f"error: {bomb}: decompressed file is larger than the 4194304-byte limit" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_gzip_ndjson_counts_its_limit_on_the_decompressed_bytes(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service.intake import files

    monkeypatch.setattr(files, "MAX_NDJSON_BYTES", 4096)
    lines = b"".join(json.dumps(_run(f"t{n}")).encode() + b"\n" for n in range(10))
    path = tmp_path / "runs.ndjson.gz"
    path.write_bytes(gzip.compress(lines))
    assert path.stat().st_size < 4096 < len(lines)

    result = invoke(migrated_url, "ingest", "--goal", "g", str(path))

    assert result.exit_code == 1 and "decompressed file is larger than the 4096-byte limit" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_broken_gzip_file_is_one_refusal(migrated_url, tmp_path):
    whole = gzip.compress(json.dumps(_run("t1")).encode())
    (tmp_path / "truncated.json.gz").write_bytes(whole[: len(whole) // 2])

    result = invoke(migrated_url, "ingest", "--goal", "g", str(tmp_path / "truncated.json.gz"))

    assert result.exit_code == 1
    assert "truncated.json.gz: not a readable gzip file (Compressed file ended before the end-of-stream marker was reached)" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


# -- job trees as they are: other JSON, a chosen subset, an order that is stated ---------------------


def _tree(root: Path) -> Path:
    """Two jobs as a harness leaves them: the artifacts, and a job-summary.json that is not one."""
    for job, task in (("job-b", "tb"), ("job-a", "ta")):
        (root / job).mkdir(parents=True)
        (root / job / "run.json").write_text(json.dumps(_run(task)))
        (root / job / "job-summary.json").write_text(json.dumps({"job": job, "trials": 1, "ok": True}))
    return root


def test_a_job_summary_is_refused_with_advice_that_works(migrated_url, tmp_path):
    root = _tree(tmp_path / "jobs")

    result = invoke(migrated_url, "ingest", "--goal", "tree", "--batch-per-directory", str(root))

    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert lines == [
        f"error: {root / job / 'job-summary.json'}: cannot tell the artifact kind (no known schema_version); --skip-unknown "
        "leaves it out (listed), or --include GLOB reads only the files of folders it matches; not --kind, which would "
        "contradict the documents that declare their kind (run)"
        for job in ("job-a", "job-b")
    ]
    assert row_counts(migrated_url)["events"] == 0
    # what --kind would do, as the advice says: contradict the runs (exit 2, nothing written)
    contradicted = invoke(migrated_url, "ingest", "--goal", "tree", "--kind", "preflight", "--batch-per-directory", str(root))
    assert contradicted.exit_code == 2 and "contradicts its schema_version 'benchmark_run_v0'" in contradicted.stderr
    # each option the advice names takes the tree in
    skipped = _json(invoke(migrated_url, "ingest", "--goal", "tree", "--skip-unknown", "--batch-per-directory", str(root), "--format", "json"))
    included = _json(invoke(migrated_url, "ingest", "--goal", "other", "--include", "run.json", "--batch-per-directory", str(root), "--format", "json"))
    assert skipped["appended_count"] == included["appended_count"] == 2
    assert skipped["skipped"] == [
        {"source": str(root / job / "job-summary.json"), "reason": "cannot tell the artifact kind (no known schema_version)"} for job in ("job-a", "job-b")
    ]
    assert "skipped" not in included


def test_without_declared_kinds_the_advice_is_kind_or_skip(migrated_url, tmp_path):
    (tmp_path / "preflight.json").write_text(json.dumps({"host": "h1", "ok": True}))

    result = invoke(migrated_url, "ingest", "--goal", "g", str(tmp_path / "preflight.json"))

    assert result.exit_code == 1
    assert "cannot tell the artifact kind (no known schema_version); pass --kind, one of: run, " in result.stderr
    assert "; or --skip-unknown leaves it out (listed)" in result.stderr
    assert invoke(migrated_url, "ingest", "--goal", "g", "--kind", "preflight", str(tmp_path / "preflight.json")).exit_code == 0


def test_skipped_documents_are_listed_in_the_markdown_report(migrated_url, tmp_path):
    root = _tree(tmp_path / "jobs")
    ledger = {"schema_version": "benchmark_run_ledger_v0", "rows": []}
    (root / "job-a" / "ledger.json").write_text(json.dumps(ledger))

    refused = invoke(migrated_url, "ingest", "--goal", "tree", "--include", "*.json", "--batch-per-directory", str(root))
    result = invoke(migrated_url, "ingest", "--goal", "tree", "--skip-unknown", "--batch-per-directory", str(root))

    assert refused.exit_code == 1 and "ledger.json: this is a LoopX run ledger" in refused.stderr and "--skip-unknown leaves it out" in refused.stderr
    assert result.exit_code == 0, result.output
    assert f"- skipped (--skip-unknown): {root / 'job-a' / 'job-summary.json'}: cannot tell the artifact kind (no known schema_version)" in result.stdout
    assert f"- skipped (--skip-unknown): {root / 'job-a' / 'ledger.json'}: this is a LoopX run ledger" in result.stdout
    assert "- appended: 2 event(s)" in result.stdout


def test_include_globs_match_names_or_paths(migrated_url, tmp_path):
    root = _tree(tmp_path / "jobs")
    (root / "job-a" / "notes.txt").write_text(json.dumps(_run("from-a-txt")))

    by_name = _json(invoke(migrated_url, "ingest", "--goal", "g1", "--include", "run.json", "--include", "*.txt", str(root), "--format", "json"))
    by_path = _json(invoke(migrated_url, "ingest", "--goal", "g2", "--include", "job-b/*.json", "--skip-unknown", str(root), "--format", "json"))

    assert sorted(Path(e["source"]).relative_to(root).as_posix() for e in by_name["events"]) == ["job-a/notes.txt", "job-a/run.json", "job-b/run.json"]
    assert [Path(e["source"]).relative_to(root).as_posix() for e in by_path["events"]] == ["job-b/run.json"]
    assert [Path(s["source"]).relative_to(root).as_posix() for s in by_path["skipped"]] == ["job-b/job-summary.json"]


def test_batches_in_time_order_of_what_their_documents_state(migrated_url, tmp_path):
    root = tmp_path / "jobs"
    # directory names sort one way, the jobs ran the other (times with different offsets, compared as instants)
    for job, launched in (("a-second", "2026-11-24T18:30:00+01:00"), ("b-first", "2026-11-24T17:02:11Z"), ("c-third", "2026-11-25T00:00:00Z")):
        (root / job).mkdir(parents=True)
        (root / job / "launch.json").write_text(json.dumps({**_demo("02-launch.json"), "launched_at": launched}))
        (root / job / "run.json").write_text(json.dumps(_run(job)))

    by_name = _json(invoke(migrated_url, "ingest", "--goal", "g1", "--batch-per-directory", str(root), "--format", "json"))
    by_time = _json(invoke(migrated_url, "ingest", "--goal", "g2", "--batch-per-directory", str(root), "--order", "time", "--format", "json"))

    assert [Path(b["directory"]).name for b in by_name["batches"]] == ["a-second", "b-first", "c-third"]
    assert [Path(b["directory"]).name for b in by_time["batches"]] == ["b-first", "a-second", "c-third"]
    history = _json(invoke(migrated_url, "history", "--goal", "g2", "--format", "json"))["entries"]
    assert [e["kind"] for e in history][:3] == ["launch", "run", "ingest_batch"]


def test_time_order_refuses_a_tree_whose_jobs_state_no_time(migrated_url, tmp_path):
    root = _tree(tmp_path / "jobs")

    result = invoke(migrated_url, "ingest", "--goal", "g", "--skip-unknown", "--batch-per-directory", str(root), "--order", "time")
    on_paths = invoke(migrated_url, "ingest", "--goal", "g", str(root), "--order", "time")

    assert result.exit_code == 2
    assert f"--order time: no document in {root / 'job-a'}, {root / 'job-b'} states its time (recorded_at, " in result.stderr
    assert "order the batches by directory name (--order name, the default)" in result.stderr
    assert on_paths.exit_code == 2 and "--order orders the batches of --batch-per-directory ROOT" in on_paths.output
    assert row_counts(migrated_url)["events"] == 0


# -- the limits of one batch, whatever the way in ------------------------------------------------------


def test_a_batch_past_the_artifact_limit_is_refused_naming_it(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service import bulk, ingest
    from benchledger.ledger.service.intake import artifacts

    for module in (artifacts, bulk, ingest):
        monkeypatch.setattr(module, "MAX_BATCH_ARTIFACTS", 3)
    runs = tmp_path / "runs.ndjson"
    runs.write_text("".join(json.dumps(_run(f"t{n}")) + "\n" for n in range(4)))
    backlog = tmp_path / "backlog.ndjson"
    backlog.write_text(json.dumps({"goal_id": "g", "kind": None, "artifacts": [_run(f"t{n}") for n in range(4)]}) + "\n")
    tree = tmp_path / "jobs"
    for job, count in (("job-a", 3), ("job-b", 4)):
        (tree / job).mkdir(parents=True)
        for n in range(count):
            (tree / job / f"run-{n}.json").write_text(json.dumps(_run(f"{job}-{n}")))

    one_file = invoke(migrated_url, "ingest", "--goal", "g", str(runs))
    one_line = invoke(migrated_url, "ingest-batches", str(backlog))
    one_job = invoke(migrated_url, "ingest", "--goal", "g", "--batch-per-directory", str(tree))

    assert one_file.exit_code == one_line.exit_code == one_job.exit_code == 1
    assert one_file.stderr == f"error: {runs}:4: the batch holds more than 3 artifacts, the limit of one batch; split it (ingest --batch-per-directory, ingest-batches)\n"
    assert one_line.stderr == f"error: {backlog}:1: the line holds 4 artifacts, more than 3, the limit of one batch; split it into lines of at most 3\n"
    assert one_job.stderr == f"error: {tree / 'job-b' / 'run-3.json'}: the batch holds more than 3 artifacts, the limit of one batch; split it (ingest --batch-per-directory, ingest-batches)\n"
    assert row_counts(migrated_url)["events"] == 0
    # at the limit, each is taken in
    runs.write_text("".join(json.dumps(_run(f"t{n}")) + "\n" for n in range(3)))
    assert _json(invoke(migrated_url, "ingest", "--goal", "g", str(runs), "--format", "json"))["appended_count"] == 3


def test_a_batch_past_the_byte_limit_is_refused_naming_it(migrated_url, tmp_path, monkeypatch):
    from benchledger.ledger.service.intake import artifacts

    monkeypatch.setattr(artifacts, "MAX_BATCH_BYTES", 2000)
    folder = tmp_path / "job"
    folder.mkdir()
    for n in range(4):
        (folder / f"run-{n}.json").write_text(json.dumps(_run(f"t{n}")))
    assert (folder / "run-0.json").stat().st_size * 3 > 2000

    result = invoke(migrated_url, "ingest", "--goal", "g", str(folder))

    assert result.exit_code == 1
    assert "the batch's documents are more than 2000 bytes, the limit of one batch" in result.stderr
    assert row_counts(migrated_url)["events"] == 0


def test_a_library_batch_past_the_limit_is_refused(migrated_url, monkeypatch):
    import pytest

    import benchledger
    from benchledger.errors import InvalidEvent
    from benchledger.ledger.service import ingest

    monkeypatch.setattr(ingest, "MAX_BATCH_ARTIFACTS", 2)
    ledger = benchledger.open(migrated_url)
    try:
        artifacts = benchledger.ledger.api.load_artifacts([str(DEMO / "04-run-baseline.json"), str(DEMO / "05-run-treatment.json"), str(DEMO / "06-comparison.json")])
        with pytest.raises(InvalidEvent, match="the batch holds 3 artifacts, more than 2, the limit of one batch"):
            ledger.ingest_artifacts("g", artifacts)
    finally:
        ledger.close()
    assert row_counts(migrated_url)["events"] == 0


def test_a_tree_of_nothing_but_unknown_documents_says_what_was_left_out(migrated_url, tmp_path):
    (tmp_path / "jobs" / "job-a").mkdir(parents=True)
    (tmp_path / "jobs" / "job-a" / "job-summary.json").write_text("{}")

    result = invoke(migrated_url, "ingest", "--goal", "g", "--skip-unknown", "--batch-per-directory", str(tmp_path / "jobs"))

    assert result.exit_code == 2
    assert "no artifact to ingest" in result.stderr and "--skip-unknown left out 1 document(s)" in result.stderr
    assert "goal 'g' was not created" in result.stderr
