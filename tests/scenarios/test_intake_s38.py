"""Intake, session 38, as a user meets it: an NDJSON file whose every problem is named in one pass, an ingest that
writes nothing saying the truth about its goal, the library refusing what it does not take as the docs promise, a
document of unknown kind refused with advice that works, and ``merge --from`` the ledger itself under another
spelling; on both backends."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import invoke, row_counts

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
RUN = json.loads((DEMO / "04-run-baseline.json").read_text())
LOCAL_PATH = "$.job_name of this run holds a local path (/home/, /root/, /mnt/, /media/, /workspace, /Users/, /Volumes/, /private/, temp dirs) [posix-local-path]"
BAD_JSON = "invalid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)"


def _ndjson(path: Path, lines: list) -> Path:
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


# -- 1. an NDJSON file: every line's problem, not only those before the first line that does not parse ---------------


def test_every_problem_of_an_ndjson_file_is_named_past_a_line_that_does_not_parse(migrated_url, tmp_path):
    runs = [{**RUN, "job_name": f"/home/{who}/{i}"} for who in ("u", "v") for i in range(3)]
    path = _ndjson(tmp_path / "paths.ndjson", [*runs[:3], "{bad", *runs[3:]])

    result = invoke(migrated_url, "ingest", "--goal", "n1", str(path))

    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        *(f"error: {path}:{n}: {LOCAL_PATH}" for n in (1, 2, 3)),
        f"error: {path}:4: {BAD_JSON}",
        *(f"error: {path}:{n}: {LOCAL_PATH}" for n in (5, 6, 7)),
    ]
    assert row_counts(migrated_url)["events"] == 0


def test_a_nan_line_then_a_broken_one_are_both_named(migrated_url, tmp_path):
    path = tmp_path / "nan.ndjson"
    path.write_text(json.dumps(RUN).replace("{", '{"x": NaN, ', 1) + "\n{bad\n")

    result = invoke(migrated_url, "ingest", "--goal", "n1", "--format", "json", str(path))

    assert result.exit_code == 1
    assert json.loads(result.stdout)["errors"] == [
        {"source": f"{path}:1", "error": "NaN is not valid JSON (the ledger stores only finite numbers)"},
        {"source": f"{path}:2", "error": BAD_JSON},
    ]


def test_a_file_of_broken_lines_is_listed_capped_and_bounded_by_the_batch_limit(migrated_url, tmp_path):
    path = _ndjson(tmp_path / "many.ndjson", ["{bad"] * 5003)

    result = invoke(migrated_url, "ingest", "--goal", "n1", "--format", "json", str(path))

    report = json.loads(result.stdout)
    assert result.exit_code == 1 and report["error_count"] == 5001  # (the 5001st line passes the limit of one batch)
    assert len(report["errors"]) == 20 and report["errors"][-1]["source"] == f"{path}:20"
    assert result.stderr.splitlines()[-1] == "error: ... and 4981 more"


def test_the_library_names_every_problem_of_an_ndjson_file_too(migrated_url, tmp_path):
    import benchledger

    path = _ndjson(tmp_path / "runs.ndjson", ["{bad", {**RUN, "job_name": "/home/u/1"}, RUN])
    with benchledger.open(migrated_url) as ledger:
        outcome = ledger.ingest("n1", [str(path)])
    assert not outcome.ok
    assert outcome.errors == ((f"{path}:1", BAD_JSON), (f"{path}:2", LOCAL_PATH))


# -- 2. "was not created" only of a goal that does not exist ----------------------------------------------------------


def test_an_empty_folder_into_an_existing_goal_does_not_say_the_goal_was_not_created(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", "g1", str(DEMO / "04-run-baseline.json")).exit_code == 0
    (tmp_path / "emptydir").mkdir()
    before = row_counts(migrated_url)

    held = invoke(migrated_url, "ingest", "--goal", "g1", str(tmp_path / "emptydir"))
    new = invoke(migrated_url, "ingest", "--goal", "brand-new", str(tmp_path / "emptydir"))

    said = f"{tmp_path / 'emptydir'}: no artifact to ingest (a folder is read for *.json, *.ndjson and *.jsonl, gzipped or not, or what --include matches); nothing was written"
    assert (held.exit_code, held.stderr) == (2, f"benchledger: {said}, goal 'g1' is unchanged\n")
    assert (new.exit_code, new.stderr) == (2, f"benchledger: {said}, goal 'brand-new' was not created\n")
    assert row_counts(migrated_url) == before
