"""The write side of session 39, walked as a demanding new user types it, on both backends.

``ingest --goal g runs/ runs/run-1.json`` (a folder and a file in it), ``ingest --goal g run.json run.json`` (a
shell history recalled once too often), or a copy of a run in two folders: the batch listed the run twice, so its
reviews counted it twice (``review-verifier-attribution``'s ``reviewed_run_count`` 3 for two runs, its
attribution listing the baseline twice), while the report called the second one a ``duplicate``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import benchledger
from tests.helpers import invoke, row_counts

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo"
BASELINE, TREATMENT, COMPARISON = (str(DEMO / n) for n in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json"))


def _refused_in_one_line(url: str, *args: str, says: str) -> None:
    before = row_counts(url)
    done = invoke(url, *args)
    assert done.exit_code == 1, done.output
    assert done.stderr.splitlines() == [f"error: {says}"], done.stderr
    assert "Traceback" not in done.output
    assert row_counts(url) == before, "a refused ingest wrote something"


@pytest.mark.parametrize("how", ["the same path", "a folder and a file in it", "a copy in another folder"])
def test_the_same_document_twice_in_one_ingest_is_taken_once_and_said(migrated_url, tmp_path, how):
    # The batch listed it twice, so its reviews counted the run twice (reviewed_run_count 3 of two runs). Refusing it
    # instead (as this session first did) refused real data: the public run ledger's rows, saved one file each, hold
    # identical documents (runs of one job with the same outcome), and a folder of them could not be ingested.
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in (BASELINE, TREATMENT, COMPARISON):
        shutil.copy(name, runs)
    baseline = str(runs / "04-run-baseline.json")
    if how == "the same path":
        args, said = [baseline, baseline, str(runs / "05-run-treatment.json"), str(runs / "06-comparison.json")], (baseline, "given twice in this batch")
    elif how == "a folder and a file in it":
        args, said = [str(runs), baseline], (baseline, "given twice in this batch")
    else:
        (tmp_path / "copy").mkdir()
        copy = str(shutil.copy(baseline, tmp_path / "copy"))
        args, said = [str(runs), copy], (copy, f"the same document as {baseline} in this batch")
    dry = invoke(migrated_url, "ingest", "--goal", "twice", "--dry-run", *args)
    assert dry.exit_code == 0 and f"- taken once: {said[0]}: {said[1]}\n" in dry.stdout, dry.output

    done = invoke(migrated_url, "ingest", "--goal", "twice", "--format", "json", *args)
    assert done.exit_code == 0, done.output
    report = json.loads(done.stdout)
    assert report["taken_once"] == [{"source": said[0], "reason": said[1]}]
    assert report["appended_count"] == 3 and report["duplicate_count"] == 0
    show = json.loads(invoke(migrated_url, "show", "--goal", "twice", "--format", "json").stdout)
    reviewed = [row["payload"]["reviewed_run_count"] for row in show["projections"]["review-verifier-attribution"]]
    assert reviewed == [2], reviewed  # (each run counted once)
    assert invoke(migrated_url, "audit").exit_code == 0


def test_the_same_file_again_in_a_later_ingest_is_still_a_duplicate_not_a_refusal(migrated_url):
    """Across calls the same document is the same observation (docs/hash-chain.md): appended once, exit 0 (the quickstart relies on it)."""
    assert invoke(migrated_url, "ingest", "--goal", "again", BASELINE).exit_code == 0
    before = row_counts(migrated_url)
    done = invoke(migrated_url, "ingest", "--goal", "again", BASELINE, TREATMENT, COMPARISON)
    assert done.exit_code == 0 and "duplicates: 1" in done.stdout, done.output
    assert row_counts(migrated_url)["events"] == before["events"] + 3


def test_retract_says_none_for_a_lifecycle_with_no_first_blocker(migrated_url):
    """A lifecycle whose first blocker is empty (LoopX's "" once preflight_ready) read ``first blocker  -> ...``."""
    assert invoke(migrated_url, "ingest", "--goal", "blank", str(DEMO)).exit_code == 0
    assert invoke(migrated_url, "ingest", "--goal", "blank", "--attempt", "2", str(DEMO / "01-preflight.json")).exit_code == 0
    history = json.loads(invoke(migrated_url, "history", "--goal", "blank", "--kind", "run", "--format", "json").stdout)
    position = history["entries"][0]["position"]
    for dry_run in (["--dry-run"], []):
        done = invoke(migrated_url, "retract", f"@{position}", "--reason", "wrong image", *dry_run)
        assert done.exit_code == 0, done.output
        assert "lifecycle: phase preflight_ready, first blocker none -> phase preflight_ready, first blocker none (unchanged)" in done.stdout, done.stdout


def test_a_row_taken_out_of_a_loopx_run_ledger_is_named_as_such_and_import_loopx_advised(migrated_url, tmp_path):
    """A row of the public LoopX run ledger saved alone (``jq '.benchmarks[].cases[].runs[0]'``) was advised ``--kind``
    and every kind (``run``, ``comparison``, …); ``--kind run`` then said "no benchmark_run_v0 object"."""
    public = json.loads((REPO / "tests" / "data" / "loopx-public" / "benchmark-run-ledger.json").read_text())
    row = next(iter(next(iter(public["benchmarks"].values()))["cases"].values()))["runs"][0]
    saved = tmp_path / "row.json"
    saved.write_text(json.dumps(row))
    _refused_in_one_line(
        migrated_url, "ingest", "--goal", "rows", str(saved),
        says=f"{saved}: this is a row of a LoopX run ledger (a benchmark_run_ledger_row_v0: run_id, benchmark_id, case_id, "
        "recorded_at), not an artifact: bring in the run ledger that holds it with `benchledger import-loopx FILE --goal GOAL`; "
        "or --skip-unknown leaves it out (listed)",
    )
    done = invoke(migrated_url, "ingest", "--goal", "rows", "--skip-unknown", str(saved), BASELINE)
    assert done.exit_code == 0 and f"- skipped (--skip-unknown): {saved}: this is a row of a LoopX run ledger" in done.stdout, done.output


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_ingest_batches_takes_a_line_listing_the_same_artifact_twice_once(migrated_url, tmp_path, jobs):
    """A line ``{"artifacts": [baseline, baseline, treatment, comparison]}`` was taken, its reviews counting the baseline twice;
    it is taken once and said, as ``ingest`` takes a folder's copies of a run (refusing it refused real data:
    test_journeys_s39_regressions.py)."""
    baseline, treatment, comparison = (json.loads(Path(name).read_text()) for name in (BASELINE, TREATMENT, COMPARISON))
    good = {"goal_id": "bulk-twice", "kind": None, "artifacts": [baseline, treatment, comparison]}
    twice = {**good, "artifacts": [baseline, dict(reversed(baseline.items())), treatment, comparison]}  # (the same object, keys reordered)
    batches = tmp_path / "batches.ndjson"
    batches.write_text(json.dumps(twice) + "\n" + json.dumps(good) + "\n")  # (the same batch again: a duplicate)
    done = invoke(migrated_url, "ingest-batches", "--jobs", jobs, str(batches))
    assert done.exit_code == 0 and "- taken once: line 1: artifacts[1]: the same document as artifacts[0] in this batch\n" in done.stdout, done.output
    show = json.loads(invoke(migrated_url, "show", "--goal", "bulk-twice", "--format", "json").stdout)
    assert [row["payload"]["reviewed_run_count"] for row in show["projections"]["review-verifier-attribution"]] == [2]


def test_a_document_whose_lines_start_with_a_brace_is_one_document_on_standard_input(migrated_url):
    """``python -c 'print(json.dumps(run, indent=0))' | benchledger ingest --goal g -``: an array of objects puts a
    ``{`` at the start of a line, so standard input was read as NDJSON, a refusal a line ("<stdin>:1: invalid JSON: …"
    twenty times, then "... and N more"), where the same file named by its path is ingested."""
    run = json.loads(Path(BASELINE).read_text())
    run["failure_attribution_labels"] = [{"label": "a"}, {"label": "b"}]  # (any array of objects)
    text = json.dumps(run, indent=0)
    assert "\n{" in text
    done = invoke(migrated_url, "ingest", "--goal", "stdin-doc", "--format", "json", "-", input=text)
    assert done.exit_code == 0, done.output
    assert [e["source"] for e in json.loads(done.stdout)["events"]] == ["<stdin>"]
    # NDJSON on standard input is still NDJSON: one artifact a line
    lines = "\n".join(json.dumps(json.loads(Path(name).read_text())) for name in (TREATMENT, COMPARISON)) + "\n"
    done = invoke(migrated_url, "ingest", "--goal", "stdin-doc", "--format", "json", "-", input=lines)
    assert done.exit_code == 0, done.output
    assert [e["source"] for e in json.loads(done.stdout)["events"]] == ["<stdin>:1", "<stdin>:2"]


def test_ingesting_a_retracted_file_again_says_it_stays_withdrawn(migrated_url):
    """The same file after its event was retracted: "duplicate #4", exit 0, and nothing said of the retraction, so a user
    who re-sent it to put it back read that it was in the ledger while ``runs``, the reviews and the lifecycle leave it out."""
    assert invoke(migrated_url, "ingest", "--goal", "withdrawn", str(DEMO)).exit_code == 0
    history = json.loads(invoke(migrated_url, "history", "--goal", "withdrawn", "--kind", "run", "--format", "json").stdout)
    run_position = history["entries"][0]["position"]
    retraction = json.loads(invoke(migrated_url, "retract", f"@{run_position}", "--reason", "wrong image", "--format", "json").stdout)
    said = (
        f"{BASELINE} is the event @{run_position}, withdrawn by the retraction @{retraction['position']} (wrong image): "
        "it stays withdrawn (a retraction is final), so the goal reads it as absent"
    )
    for dry_run in (["--dry-run"], []):
        done = invoke(migrated_url, "ingest", "--goal", "withdrawn", *dry_run, BASELINE)
        assert done.exit_code == 0, done.output
        assert f"- note: {said}\n" in done.stdout, done.stdout
    report = json.loads(invoke(migrated_url, "ingest", "--goal", "withdrawn", "--format", "json", BASELINE).stdout)
    assert report["notes"] == [said]
    # a file that was never retracted says nothing of the kind
    assert "withdrawn by" not in invoke(migrated_url, "ingest", "--goal", "withdrawn", TREATMENT).stdout


def test_the_library_takes_the_same_artifact_twice_in_one_batch_once_as_ingest_does(migrated_url, tmp_path):
    """``ledger.ingest_artifacts(goal, [run, run, …])`` listed the run twice in its batch (its reviews counted it
    twice); refused instead, the documented ``ingest_artifacts(goal, load_artifacts(glob))`` refused a folder of the
    public runs, whose copies are identical documents. It is taken once and said, as ``ingest`` takes a file."""
    runs = tmp_path / "runs"
    runs.mkdir()
    for name in (BASELINE, TREATMENT, COMPARISON):
        shutil.copy(name, runs)
    copy = shutil.copy(BASELINE, runs / "04-run-baseline-copy.json")
    with benchledger.open(migrated_url) as ledger:
        loaded = benchledger.ledger.load_artifacts(sorted(str(path) for path in runs.glob("*.json")))
        assert len(loaded) == 4  # (loading makes no batch: every document)
        done = ledger.ingest_artifacts("lib-twice", loaded)
        assert done.batch.status == "appended" and done.appended_count == 3
        # (sorted, the copy comes first: the original is the repeat)
        assert done.notes == (f"taken once: {runs / '04-run-baseline.json'}: the same document as {copy} in this batch",)
        reviewed = [row.payload["reviewed_run_count"] for row in ledger.show("lib-twice").projections["review-verifier-attribution"]]
        assert reviewed == [2], reviewed  # (each run counted once)


def test_merge_from_an_export_file_names_the_command_that_merges_it(migrated_url, tmp_path):
    """``merge --from team.ndjson`` (an export, where --from takes a ledger) advised ``sqlite:////…/team.ndjson``, a URL
    that then failed as "not a SQLite database"; a real SQLite ledger's path is still advised its URL."""
    assert invoke(migrated_url, "ingest", "--goal", "exported", BASELINE).exit_code == 0
    export = tmp_path / "team.ndjson"
    export.write_text(invoke(migrated_url, "export").stdout)
    before = row_counts(migrated_url)
    done = invoke(migrated_url, "merge", "--from", str(export))
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"benchledger: {export} is not a database URL (use sqlite:///PATH or postgresql://USER@HOST/DATABASE; {export} is a "
        f"file but not a SQLite ledger: an export is read by `benchledger merge {export}` or `benchledger import-ndjson {export}`)\n"
    ), done.stderr
    assert row_counts(migrated_url) == before
    ledger = tmp_path / "mine.sqlite"
    assert invoke(f"sqlite:///{ledger}", "ingest", "--goal", "mine", TREATMENT).exit_code == 0
    done = invoke(migrated_url, "merge", "--from", str(ledger))
    assert done.exit_code == 2 and f"for the file {ledger}: sqlite:///{ledger})" in done.stderr, done.stderr


SIGNED_URLS = {  # (short enough that a run's compaction, which cuts a text at 120 characters, keeps the signature)
    "azure-sas": "https://acct.blob.core.windows.net/logs/run.log?sv=2022-11-02&sp=r&sig=q8C1tN2sG7mWv%2FkJ9YxQe3bHf0Lr5ZpA%3D",
    "gcs-v4": "https://storage.googleapis.com/bench-logs/run.log?X-Goog-Signature=5d2c7a19f0e4b6a8c3d1e9f7a2b4c6d8e0f1a3b5",
    "cloudfront": "https://d111111abcdef8.cloudfront.net/run.log?Expires=1796000000&Signature=nitfHRCrtziwO2HwPfWw~yYDhUF5Ew",
}


@pytest.mark.parametrize("service", sorted(SIGNED_URLS))
def test_a_signed_url_is_refused_as_the_credential_it_is_and_a_plain_url_is_kept(migrated_url, tmp_path, service):
    """A pre-signed URL grants whoever holds it what its signature allows (Azure's SAS ``sig=``, Google Cloud Storage's
    ``X-Goog-Signature=``, CloudFront's ``Signature=``): it was stored, where S3's (its ``X-Amz-Credential=AKIA…``) and a
    URL with a password are refused."""
    run = json.loads(Path(BASELINE).read_text())
    run["job_name"] = SIGNED_URLS[service]
    signed = tmp_path / "signed.json"
    signed.write_text(json.dumps(run))
    _refused_in_one_line(
        migrated_url, "ingest", "--goal", "signed", str(signed),
        says=f"{signed}: $.job_name of this run holds a signed URL's signature (?sig=…, X-Goog-Signature=…, Signature=…) [signed-url]",
    )
    run["job_name"] = "https://storage.googleapis.com/bench-logs/run.log?generation=1733443200&alt=media"  # (no signature)
    signed.write_text(json.dumps(run))
    assert invoke(migrated_url, "ingest", "--goal", "signed", str(signed)).exit_code == 0


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_a_utf16_file_is_named_as_such(migrated_url, tmp_path, encoding):
    """Windows PowerShell's ``loopx … > run.json`` writes UTF-16 with a byte-order mark: refused as "not valid UTF-8
    (invalid start byte at byte 0)", and without the mark as "contains a NUL character", neither saying what the file is."""
    run = tmp_path / "run.json"
    run.write_bytes(Path(BASELINE).read_text().encode(encoding))
    _refused_in_one_line(
        migrated_url, "ingest", "--goal", "wide", str(run),
        says=f"{run}: is UTF-16 or UTF-32 text (Windows PowerShell's > writes UTF-16), not UTF-8: save it as plain UTF-8",
    )


def test_verify_consistency_names_an_empty_checkpoint_file_as_empty(migrated_url, tmp_path):
    """An empty checkpoint file (``benchledger checkpoint > c.checkpoint`` that failed) read "a checkpoint's text ends
    with a newline"."""
    assert invoke(migrated_url, "ingest", "--goal", "proved", BASELINE).exit_code == 0
    checkpoint, empty, proof = tmp_path / "c.checkpoint", tmp_path / "empty.checkpoint", tmp_path / "proof.json"
    checkpoint.write_text(invoke(migrated_url, "checkpoint").stdout)
    proof.write_text(invoke(migrated_url, "prove-consistency", "2", "--format", "json").stdout)
    empty.write_text("")
    assert invoke(migrated_url, "verify-consistency", str(checkpoint), str(checkpoint), str(proof)).exit_code == 0
    done = invoke(migrated_url, "verify-consistency", str(checkpoint), str(empty), str(proof))
    assert done.exit_code == 2, done.output
    assert done.stderr == f"benchledger: {empty}: is empty, not a checkpoint (`benchledger checkpoint > FILE` writes one)\n", done.stderr


def test_a_job_trees_report_keeps_each_batchs_notes(migrated_url, tmp_path):
    """``ingest --batch-per-directory`` of a job whose folder holds the comparison and not its runs said nothing, where
    ``ingest`` of that folder notes that the claim review reads no run: a job tree's report dropped every batch's notes."""
    for job, names in (("job-1", (BASELINE, TREATMENT)), ("job-2", (COMPARISON,))):
        (tmp_path / "tree" / job).mkdir(parents=True)
        for name in names:
            shutil.copy(name, tmp_path / "tree" / job)
    tree = tmp_path / "tree"
    done = invoke(migrated_url, "ingest", "--goal", "jobs", "--dry-run", "--batch-per-directory", str(tree))
    assert done.exit_code == 0, done.output
    assert f"): {tree}/job-2 (1 to append, 0 duplicate)\n  - note: this batch holds a comparison and no run:" in done.stdout, done.stdout
    report = json.loads(invoke(migrated_url, "ingest", "--goal", "jobs", "--format", "json", "--batch-per-directory", str(tree)).stdout)
    notes = {batch["directory"]: batch.get("notes") for batch in report["batches"]}
    assert notes[f"{tree}/job-1"] is None and notes[f"{tree}/job-2"][0].startswith("this batch holds a comparison and no run"), notes
