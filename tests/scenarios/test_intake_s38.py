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


# -- 3. the library refuses what it does not take with a BenchledgerError that says what it takes ---------------------

TAKES = "load_artifacts(paths) reads and normalizes documents into them; ingest(goal_id, paths) takes the files"
KIND_LIST = "run, comparison, result, learning-ledger, claim-review, preflight, launch, post-launch, adapter-invocation"


def _refusal(call) -> str:
    import pytest

    from benchledger.errors import BenchledgerError, InvalidInput

    with pytest.raises(BenchledgerError) as raised:
        call()
    assert isinstance(raised.value, InvalidInput) and raised.value.exit_code == 2
    return str(raised.value)


def test_ingest_artifacts_refuses_documents_as_dicts_naming_what_it_takes(migrated_url):
    import benchledger
    from benchledger.ledger import load_artifacts

    with benchledger.open(migrated_url) as ledger:
        assert _refusal(lambda: ledger.ingest_artifacts("g", [RUN])) == f"artifacts[0] is a dict, not an Artifact: {TAKES}"
        assert _refusal(lambda: ledger.ingest_artifacts("g", RUN)) == f"artifacts must be a list of Artifact (or one), not a dict: {TAKES}"
        assert _refusal(lambda: ledger.ingest_artifacts("g", 5)) == f"artifacts must be a list of Artifact (or one), not an int: {TAKES}"
        assert row_counts(migrated_url)["events"] == 0
        (artifact,) = load_artifacts([str(DEMO / "04-run-baseline.json")])
        assert ledger.ingest_artifacts("g", artifact).batch.status == "appended"  # (one alone, as a path alone is one)


def test_ingest_takes_an_int_attempt_and_refuses_what_is_none_in_the_librarys_words(migrated_url):
    import benchledger

    with benchledger.open(migrated_url) as ledger:
        assert ledger.ingest("g", [str(DEMO / "04-run-baseline.json")], attempt=1).ok
        assert ledger.ingest("g", [str(DEMO / "05-run-treatment.json")], attempt=2).ok
        with ledger.history("g", attempt="2") as history:
            assert [entry.kind for entry in history] == ["run", "ingest_batch"]
        before = row_counts(migrated_url)
        for wrong, shown in ((0, "0"), (-1, "-1"), (True, "True"), ("02", "'02'"), (2.0, "2.0")):
            assert _refusal(lambda wrong=wrong: ledger.ingest("g", [str(DEMO / "06-comparison.json")], attempt=wrong)) == (
                f"attempt {shown} is not an attempt id: a whole number from 1 to 999999999 (an int, or its digits as a str "
                "such as '2'); nothing was written"
            )
        assert row_counts(migrated_url) == before


def test_an_unknown_kind_is_refused_as_no_kind_listing_the_kinds(migrated_url):
    import benchledger
    from benchledger.ledger import load_artifacts

    said = f"kind 'bogus' is not an artifact kind; the kinds are: {KIND_LIST} (None: each document's own)"
    with benchledger.open(migrated_url) as ledger:
        assert _refusal(lambda: ledger.ingest("g", [str(DEMO / "04-run-baseline.json")], kind="bogus")) == said
        assert _refusal(lambda: ledger.ingest("g", [str(DEMO / "01-preflight.json")], kind=3)).startswith("kind 3 is not an artifact kind;")
    assert _refusal(lambda: load_artifacts([str(DEMO / "01-preflight.json")], kind="bogus")) == said
    assert row_counts(migrated_url)["events"] == 0
    # the command line offers the same kinds
    cli = invoke(migrated_url, "ingest", "--goal", "g", "--kind", "bogus", str(DEMO / "01-preflight.json"))
    assert cli.exit_code == 2 and all(f"'{kind}'" in cli.stderr for kind in KIND_LIST.split(", "))


# -- 4. a document of unknown kind: what it declares, what is known, and a --kind only where one would read it ----------

KNOWN = (
    "the schema_versions benchledger knows: benchmark_run_v0, benchmark_comparison_v0, benchmark_result_v0, "
    "benchmark_learning_ledger_v0, benchmark_claim_review_v0, benchmark_preflight_v0, benchmark_preflight_envelope_v0, "
    "benchmark_preflight_fixture_v0, terminal_bench_managed_preflight_v0, benchmark_launch_fixture_v0, "
    "terminal_bench_case_run_launch_v0, terminal_bench_post_launch_materialization_v0"
)
SKIP = "--skip-unknown leaves it out (listed)"


def _write(path: Path, value) -> Path:
    path.write_text(json.dumps(value))
    return path


def test_a_newer_run_schema_is_quoted_with_the_known_ones_and_no_kind_is_advised(migrated_url, tmp_path):
    path = _write(tmp_path / "v9.json", {**RUN, "schema_version": "benchmark_run_v9"})

    result = invoke(migrated_url, "ingest", "--goal", "g", str(path))
    forced = invoke(migrated_url, "ingest", "--goal", "g", "--kind", "run", str(path))

    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {path}: cannot tell the artifact kind: its schema_version 'benchmark_run_v9' is not one benchledger reads "
        f"(a run's is benchmark_run_v0); {SKIP}; {KNOWN}\n"
    )
    assert "--kind" not in result.stderr
    # what --kind run would have said, had it been advised: no such run is read
    assert forced.stderr == (
        f"error: {path}: not a compactable run artifact: no benchmark_run_v0 object "
        "(its schema_version is 'benchmark_run_v9', which benchledger does not read)\n"
    )
    assert row_counts(migrated_url)["events"] == 0


def test_another_schema_is_quoted_shortened_and_the_kinds_that_read_any_are_advised(migrated_url, tmp_path):
    path = _write(tmp_path / "other.json", {"schema_version": "acme_runner_summary_" + "x" * 60, "ok": True})

    result = invoke(migrated_url, "ingest", "--goal", "g", str(path))

    assert result.exit_code == 1
    assert result.stderr == (
        f"error: {path}: cannot tell the artifact kind (no known schema_version); pass --kind, one of: preflight, launch, "
        f"post-launch, adapter-invocation, if it is a lifecycle input or an adapter invocation; or {SKIP}; "
        f"its schema_version, 'acme_runner_summary_{'x' * 17}...', is none of {KNOWN}\n"  # (40 characters shown)
    )
    # and the advice works: a lifecycle input declaring a schema of its own is read as the kind given
    assert invoke(migrated_url, "ingest", "--goal", "g", "--kind", "preflight", str(path)).exit_code == 0


def test_a_schema_version_that_is_a_path_or_a_secret_is_never_echoed(migrated_url, tmp_path):
    for secret in ("/home/alice/private/schema", "token=ghp_0123456789abcdefghijABCDEFGHIJ012345"):
        path = _write(tmp_path / "leak.json", {"schema_version": secret})
        result = invoke(migrated_url, "ingest", "--goal", "g", "--format", "json", str(path))
        assert result.exit_code == 1 and secret not in result.output and "alice" not in result.output and "ghp_" not in result.output
        assert "its schema_version, a text withheld here (a local path or a secret), is none of" in result.output


def test_an_array_is_not_a_json_object_and_only_an_argv_list_is_advised_a_kind(migrated_url, tmp_path):
    numbers, argv, number = _write(tmp_path / "numbers.json", [1, 2, 3]), _write(tmp_path / "argv.json", ["--n-tasks", "5"]), _write(tmp_path / "n.json", 3)

    result = invoke(migrated_url, "ingest", "--goal", "g", str(numbers), str(argv), str(number))

    assert result.exit_code == 1
    assert result.stderr.splitlines() == [
        f"error: {numbers}: cannot tell the artifact kind: not a JSON object but a JSON array (an artifact is a JSON object); {SKIP}",
        f"error: {argv}: cannot tell the artifact kind: not a JSON object but a JSON array (an artifact is a JSON object); "
        f"pass --kind, one of: adapter-invocation, if it is an adapter invocation's argv list; or {SKIP}",
        f"error: {number}: cannot tell the artifact kind: not a JSON object but a JSON number (an artifact is a JSON object); {SKIP}",
    ]
    assert invoke(migrated_url, "ingest", "--goal", "g", "--kind", "adapter-invocation", str(argv)).exit_code == 0


def test_beside_documents_that_declare_their_kind_the_advice_is_still_skip_or_include_and_the_schema_is_quoted(migrated_url, tmp_path):
    other = _write(tmp_path / "other.json", {"schema_version": "no_such_schema_v0"})

    result = invoke(migrated_url, "ingest", "--goal", "g", str(DEMO / "04-run-baseline.json"), str(other))
    skipped = invoke(migrated_url, "ingest", "--goal", "g", "--skip-unknown", "--format", "json", str(DEMO / "04-run-baseline.json"), str(other))

    assert result.stderr == (
        f"error: {other}: cannot tell the artifact kind (no known schema_version); {SKIP}, or --include GLOB reads only the "
        "files of folders it matches; not --kind, which would contradict the documents that declare their kind (run); "
        f"its schema_version, 'no_such_schema_v0', is none of {KNOWN}\n"
    )
    assert json.loads(skipped.stdout)["skipped"] == [{"source": str(other), "reason": "cannot tell the artifact kind (no known schema_version)"}]


def test_ingest_batches_quotes_the_schema_it_does_not_read_too(migrated_url, tmp_path):
    path = _ndjson(tmp_path / "b.ndjson", [{"goal_id": "g", "kind": None, "artifacts": [{**RUN, "schema_version": "benchmark_run_v9"}]}])

    result = invoke(migrated_url, "ingest-batches", str(path))

    assert result.exit_code == 1
    assert (
        f"error: {path}:1: artifacts[0]: cannot tell the artifact kind: its schema_version 'benchmark_run_v9' is not one "
        f"benchledger reads (a run's is benchmark_run_v0); {KNOWN}"
    ) in result.stderr


# -- 5. merge --from the ledger it merges into, whatever the spelling of its server -----------------------------------


def _other_spellings(url: str, tmp_path: Path) -> list[str]:
    """URLs that reach the ledger at ``url`` by another way: a hard link (SQLite); another host name for the same server,
    the default port left out, the socket directory (PostgreSQL)."""
    from sqlalchemy.engine import make_url

    if url.startswith("sqlite"):
        link = tmp_path / "hard-link.sqlite"
        link.hardlink_to(url.removeprefix("sqlite:///"))
        return [f"sqlite:///{link}"]
    parsed = make_url(url)
    host = {"127.0.0.1": "localhost", "localhost": "127.0.0.1"}.get(parsed.host or "localhost", "localhost")
    spellings = [parsed.set(host=host), parsed.set(host=host, port=None)]
    sockets = [d for d in ("/var/run/postgresql", "/run/postgresql", "/tmp") if Path(d, f".s.PGSQL.{parsed.port or 5432}").exists()]
    if sockets:
        spellings.append(parsed.set(host=None, port=None, query={**parsed.query, "host": sockets[0]}))
    return [spelling.render_as_string(hide_password=False) for spelling in spellings]


def test_merge_from_the_same_server_under_another_host_name_is_refused_as_itself(migrated_url, tmp_path):
    assert invoke(migrated_url, "ingest", "--goal", "g1", str(DEMO / "04-run-baseline.json")).exit_code == 0
    before = row_counts(migrated_url)
    for same in _other_spellings(migrated_url, tmp_path):
        result = invoke(migrated_url, "merge", "--from", same)
        assert (result.exit_code, result.stdout) == (2, ""), (same, result.output)
        assert result.stderr.endswith(" is the ledger this merges into: there is nothing to merge (name another ledger)\n"), result.stderr
    assert row_counts(migrated_url) == before


def test_another_schema_of_the_same_postgresql_database_is_another_ledger_and_merges(migrated_url):
    import uuid

    import pytest
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    if not migrated_url.startswith("postgresql"):
        pytest.skip("a schema of a PostgreSQL database")
    schema = f"t_{uuid.uuid4().hex[:16]}"
    admin_url = make_url(migrated_url).difference_update_query(["options"])
    admin = create_engine(admin_url)
    with admin.begin() as connection:
        connection.execute(text(f'CREATE SCHEMA "{schema}"'))
    try:
        other = make_url(migrated_url).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(hide_password=False)
        other = other.replace("127.0.0.1", "localhost")  # (another spelling of the same server: still another ledger)
        assert invoke(other, "db", "upgrade").exit_code == 0
        assert invoke(other, "ingest", "--goal", "elsewhere", str(DEMO / "04-run-baseline.json")).exit_code == 0
        merged = invoke(migrated_url, "merge", "--from", other, "--format", "json")
        assert merged.exit_code == 0, merged.output
        assert json.loads(merged.stdout)["events_added"] == 2
    finally:
        with admin.begin() as connection:
            connection.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
