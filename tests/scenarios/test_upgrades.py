"""Upgrading: a ledger written by an older benchledger, then used with this one (issue 28, items 1-4).

The older ledgers are written by real older commits of this repository, built
here from git history: each commit's layers are extracted (``git archive``)
into a temporary folder laid out as the installed package, and run with this
venv's python on ``PYTHONPATH``. f45266d is at schema revision 0003 (the
commit the issue names) and stored no ``comparison-batch`` rows, which a
learning ledger is now linked by; 698219f, the last before 0005, is at 0004
and folds as this build does.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from benchledger.ledger.storage.migrate import HEAD_REVISION
from tests.helpers import edit_in_sql, invoke

REPOSITORY = Path(__file__).resolve().parents[2]
DEMO = REPOSITORY / "examples" / "demo"
LOOPX_LEDGER = REPOSITORY / "tests" / "data" / "loopx-public" / "benchmark-run-ledger.json"
# commit -> the schema revision it wrote
OLDER_BUILDS = {"f45266d": "0003", "698219f": "0004"}
LAYERS = ("cli", "ledger", "projections", "migrations")


@pytest.fixture(scope="session")
def older_builds(tmp_path_factory):
    """commit -> a folder to put on PYTHONPATH that imports that commit's ``benchledger``."""
    built = {}
    for commit in OLDER_BUILDS:
        archive = subprocess.run(
            ["git", "-C", str(REPOSITORY), "archive", "--format=tar", commit, "src/benchledger", *LAYERS],
            capture_output=True, check=True,
        ).stdout
        root = tmp_path_factory.mktemp(f"benchledger-{commit}")
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root / "checkout", filter="data")
        package = root / "path" / "benchledger"
        shutil.copytree(root / "checkout" / "src" / "benchledger", package)
        for layer in LAYERS:  # (pyproject.toml's package-dir: each layer's folder is a subpackage)
            shutil.copytree(root / "checkout" / layer, package / layer)
        built[commit] = root / "path"
    return built


def run_older(build: Path, url: str, *args: str) -> subprocess.CompletedProcess:
    environment = {**os.environ, "PYTHONPATH": str(build)}
    environment.pop("BENCHLEDGER_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-m", "benchledger", "--database-url", url, *args], capture_output=True, text=True, env=environment, timeout=300
    )
    return done


@pytest.fixture(scope="session")
def written_by(older_builds, tmp_path_factory):
    """``written_by(commit, url)``: the ledger at ``url`` as the older build ``commit`` writes it (:func:`write_with`);
    a SQLite ledger is written once per commit and copied."""
    written: dict[str, Path] = {}

    def write(commit: str, url: str) -> None:
        if not url.startswith("sqlite"):
            write_with(older_builds[commit], url)
            return
        if commit not in written:
            written[commit] = tmp_path_factory.mktemp(f"ledger-{commit}") / "ledger.sqlite"
            write_with(older_builds[commit], f"sqlite:///{written[commit]}")
            assert not written[commit].with_name("ledger.sqlite-wal").exists()  # (the last connection folded the log into the file)
        shutil.copy(written[commit], sqlite_path(url))

    return write


def write_with(build: Path, url: str) -> None:
    """The demo goal, ingested step by step, and the public LoopX run ledger imported, by the older ``build``."""
    if url.startswith("postgresql"):
        assert run_older(build, url, "db", "upgrade").returncode == 0
    steps = [
        ("--kind", "preflight", str(DEMO / "01-preflight.json")),
        ("--kind", "launch", str(DEMO / "02-launch.json")),
        ("--kind", "post-launch", str(DEMO / "03-post-launch.json")),
        (str(DEMO / "04-run-baseline.json"), str(DEMO / "05-run-treatment.json"), str(DEMO / "06-comparison.json")),
    ]
    for step in steps:
        done = run_older(build, url, "ingest", "--goal", "demo", *step)
        assert done.returncode == 0, done.stderr
    done = run_older(build, url, "import-loopx", "--goal", "public", str(LOOPX_LEDGER))
    assert done.returncode == 0, done.stderr
    assert run_older(build, url, "audit").returncode == 0  # a clean ledger, as that build sees it


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sqlite_path(url: str) -> Path:
    return Path(url.removeprefix("sqlite:///"))


# What attempts inside a goal (issue 27) changed: a new projection, and the versions of three (projections/catalog.py).
ATTEMPTS_CHANGED = "attempt-evidence: none -> 1, attempt-lifecycle-state: none -> 1, goal-summary: 1 -> 2, lifecycle-step: 1 -> 2, projector-checkpoint: 1 -> 2"


def test_a_ledger_the_build_before_attempts_folded_is_stale_in_what_attempts_changed_only(ledger_url, written_by):
    # (698219f folded with the versions this build had before attempts; a build folding with this build's versions
    # is not in the history yet: then this test names it and expects "all projections are current" straight away)
    written_by("698219f", ledger_url)
    upgrade = invoke(ledger_url, "db", "upgrade")
    assert upgrade.exit_code == 0 and f"from schema revision 0004 to {HEAD_REVISION}" in upgrade.stderr
    status = invoke(ledger_url, "status").stdout
    assert f"stale: goal demo and 1 other(s) folded by a benchledger with other projection versions ({ATTEMPTS_CHANGED})" in status
    audit = json.loads(invoke(ledger_url, "audit", "--format", "json").stdout)
    assert audit["problem_count"] == audit["outdated_count"] > 0  # an older build's rows, not tampering
    def lifecycle() -> dict:
        return json.loads(invoke(ledger_url, "show", "--goal", "demo", "--projection", "lifecycle-state", "--format", "json").stdout)["projections"]

    lifecycle_before = lifecycle()
    assert "(" in invoke(ledger_url, "replay", "--if-stale").stdout
    assert (invoke(ledger_url, "status").stdout, invoke(ledger_url, "audit").exit_code) == ("all projections are current\n", 0)
    # a goal of one attempt: its lifecycle is what it was
    assert lifecycle() == lifecycle_before
    assert invoke(ledger_url, "replay", "--if-stale").stdout == "all projections are current: nothing replayed\n"


def test_an_older_builds_ledger_is_stale_until_replayed_and_audit_says_why(ledger_url, written_by):
    written_by("f45266d", ledger_url)

    upgrade = invoke(ledger_url, "db", "upgrade")
    assert upgrade.exit_code == 0, upgrade.output
    assert f"from schema revision 0003 to {HEAD_REVISION}" in upgrade.stderr

    status = invoke(ledger_url, "status")
    assert status.exit_code == 1, status.output
    assert "all projections are current" not in status.stdout
    assert "stale: goal demo and 1 other(s) folded by a benchledger with other projection versions (attempt-evidence: none -> 1, attempt-lifecycle-state: none -> 1, comparison-batch: none -> 1, goal-summary: 1 -> 2, lifecycle-step: 1 -> 2, projector-checkpoint: 1 -> 2)" in status.stdout
    stale = json.loads(invoke(ledger_url, "status", "--format", "json").stdout)
    (group,) = stale["folded_by_other_versions"]
    assert group == {
        "goals": 2, "first_goal": "demo", "differences": [
            {"projection": "attempt-evidence", "folded_version": None, "code_version": 1},
            {"projection": "attempt-lifecycle-state", "folded_version": None, "code_version": 1},
            {"projection": "comparison-batch", "folded_version": None, "code_version": 1},
            {"projection": "goal-summary", "folded_version": 1, "code_version": 2},
            {"projection": "lifecycle-step", "folded_version": 1, "code_version": 2},
            {"projection": "projector-checkpoint", "folded_version": 1, "code_version": 2},
        ],
    }

    audit = invoke(ledger_url, "audit")
    assert audit.exit_code == 1
    assert "not tampering: `benchledger replay` rebuilds them" in audit.stdout
    report = json.loads(invoke(ledger_url, "audit", "--format", "json").stdout)
    # every difference is an older build's, in the goals status named, each telling what to run
    assert report["problem_count"] == report["outdated_count"] == 16
    assert {(p["kind"], p["goal_id"]) for p in report["problems"]} == {("projection_outdated", "demo"), ("projection_outdated", "public")}
    assert all(p["detail"].endswith("run `benchledger replay`") for p in report["problems"])
    assert "comparison-batch [id:fixture-pair] was not computed by the benchledger that stored this goal" in audit.stdout

    # the upgrade recipe (docs/configuration.md): replays when stale, and only then
    replay = invoke(ledger_url, "replay", "--if-stale", "--jobs", "1")
    assert replay.exit_code == 0 and "(16 of them changed)" in replay.stdout, replay.output
    assert invoke(ledger_url, "status").stdout == "all projections are current\n"
    assert invoke(ledger_url, "audit").exit_code == 0
    again = invoke(ledger_url, "replay", "--if-stale")
    assert (again.exit_code, again.stdout) == (0, "all projections are current: nothing replayed\n")


def test_audit_tells_a_row_changed_outside_benchledger_from_an_older_builds_rows(ledger_url, written_by):
    written_by("f45266d", ledger_url)
    assert invoke(ledger_url, "db", "upgrade").exit_code == 0
    edit_in_sql(ledger_url, "UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'demo'")

    problems = json.loads(invoke(ledger_url, "audit", "--format", "json").stdout)["problems"]
    # (the older build computed review-claim at this build's version: that row is not its doing, the rest is)
    found = sorted((p["kind"], p["goal_id"], p["detail"].split(" ")[0]) for p in problems)
    assert [p for p in found if p[0] != "projection_outdated"] == [("projection_mismatch", "demo", "review-claim")]
    # (the projections the older build stored at other versions: comparison-batch, and those attempts changed)
    assert {p[2] for p in found if p[0] == "projection_outdated"} == {
        "attempt-evidence", "attempt-lifecycle-state", "comparison-batch", "goal-summary", "lifecycle-step", "projector-checkpoint",
    }


def test_a_checkpoint_edited_to_excuse_a_changed_row_is_not_an_older_build(ledger_url, written_by):
    written_by("f45266d", ledger_url)
    assert invoke(ledger_url, "db", "upgrade").exit_code == 0
    assert invoke(ledger_url, "replay").exit_code == 0
    # an edited row, and the goal's checkpoint made to claim an older review-claim version
    edit_in_sql(ledger_url, "UPDATE projection_rows SET payload = replace(payload, 'true', 'false') WHERE projection = 'review-claim' AND goal_id = 'demo'")
    edit_in_sql(
        ledger_url,
        "UPDATE projection_rows SET payload = replace(payload, '\"review-claim\"\\:1', '\"review-claim\"\\:0') "  # (\\: a colon, not a bind parameter)
        "WHERE projection = 'projector-checkpoint' AND goal_id = 'demo'",
    )
    problems = json.loads(invoke(ledger_url, "audit", "--format", "json").stdout)["problems"]
    assert problems and {p["kind"] for p in problems} == {"projection_mismatch"}


def test_a_read_only_command_refuses_an_older_sqlite_ledger_and_changes_nothing(tmp_path, older_builds, written_by):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    written_by("698219f", url)
    before = sha256(sqlite_path(url))

    for args in (["goals"], ["status"], ["audit"], ["show", "demo"], ["history", "demo"], ["export"], ["runs"], ["ingest", "--dry-run", "--goal", "demo", str(DEMO / "02-launch.json")]):
        refused = invoke(url, *args)
        assert refused.exit_code == 2, (args, refused.output)
        assert refused.stdout == ""
        assert refused.stderr.count("\n") == 1 and f"is at schema revision 0004; this benchledger needs revision {HEAD_REVISION}" in refused.stderr
        assert "run `benchledger db upgrade`" in refused.stderr
    info = invoke(url, "info")
    assert info.exit_code == 0 and f"0004 (this benchledger needs {HEAD_REVISION}: run `benchledger db upgrade`)" in info.stdout
    assert invoke(url, "db", "current").stdout == f"0004 (head {HEAD_REVISION}: needs `benchledger db upgrade`)\n"

    assert sha256(sqlite_path(url)) == before
    assert not list(tmp_path.glob("*.bak"))
    assert run_older(older_builds["698219f"], url, "goals").returncode == 0  # the teammate's older build still opens it


def test_a_command_that_writes_upgrades_an_older_sqlite_ledger_saying_so_and_keeping_the_file_as_it_was(tmp_path, older_builds, written_by):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    written_by("f45266d", url)
    original = tmp_path / "original.sqlite"
    shutil.copy(sqlite_path(url), original)

    ingest = invoke(url, "ingest", "--goal", "demo", str(DEMO / "02-launch.json"))
    assert ingest.exit_code == 0, ingest.output
    backup = tmp_path / "ledger.sqlite.0003.bak"
    assert ingest.stderr == (
        f"benchledger: note: upgraded the ledger at {url} from schema revision 0003 to {HEAD_REVISION}; the file as it was is kept as {backup} "
        f"(a benchledger older than revision {HEAD_REVISION} cannot open it)\n"
    )
    assert json.loads(invoke(url, "info", "--format", "json").stdout)["schema_revision"] == HEAD_REVISION
    # the copy is the ledger as the older build left it: that build opens it, and it holds what it held
    older = run_older(older_builds["f45266d"], f"sqlite:///{backup}", "export")
    assert older.returncode == 0, older.stderr
    assert older.stdout == run_older(older_builds["f45266d"], f"sqlite:///{original}", "export").stdout

    # a copy is never overwritten: the next upgrade from the same revision keeps its own
    shutil.copy(original, sqlite_path(url))
    assert invoke(url, "replay").exit_code == 0
    assert backup.exists() and (tmp_path / "ledger.sqlite.0003.2.bak").exists()


def test_db_upgrade_sql_starts_from_the_databases_revision(ledger_url, written_by):
    written_by("698219f", ledger_url)
    sql = invoke(ledger_url, "db", "upgrade", "--sql")
    assert sql.exit_code == 0, sql.output
    assert sql.stdout.startswith("-- the ledger at ") and f": schema revision 0004 to {HEAD_REVISION}\n" in sql.stdout
    assert "Running upgrade 0004 -> 0005" in sql.stdout
    assert "0003 -> 0004" not in sql.stdout and "CREATE TABLE events" not in sql.stdout
    assert invoke(ledger_url, "db", "current").stdout.startswith("0004 ")  # read, nothing changed

    assert invoke(ledger_url, "db", "upgrade").exit_code == 0
    assert invoke(ledger_url, "db", "upgrade", "--sql").stdout.endswith(f"is at schema revision {HEAD_REVISION}: nothing to run\n")
    # --from-revision still connects to nothing
    offline = invoke("postgresql://nobody@127.0.0.1:1/absent", "db", "upgrade", "--sql", "--from-revision", "0004")
    assert offline.exit_code == 0 and "Running upgrade 0004 -> 0005" in offline.stdout


def test_version_names_the_build_commit_and_schema_head():
    commit = subprocess.run(["git", "-C", str(REPOSITORY), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    from benchledger import __version__

    done = subprocess.run([sys.executable, "-m", "benchledger", "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith(f"benchledger {__version__} (commit {commit}")
    assert done.stdout.endswith(f", schema revision {HEAD_REVISION})\n")


# What status and audit say of an upgrade rests on one rule: a change to what a projection stores bumps its version
# (projections/catalog.py). The rows this corpus folds into, per projection: (its version, a digest of its rows). A
# change to a reducer or linking rule that changes them without a version bump fails here, before a ledger an older
# build folded could pass for current.
PINNED_ROWS = {
    "attempt-evidence": (1, "4ae576b679b5bd08"),
    "attempt-learning-gate": (2, "4e9f95689585aa0e"),
    "attempt-lifecycle-state": (1, "74cbce67e9c9e7d6"),
    "comparison-batch": (1, "3ca7017b0968187e"),
    "goal-summary": (2, "9f9395ee62fbe459"),
    "learning-ledger": (1, "c463cd00ed680bf4"),
    "lifecycle-state": (1, "f5d1ae7d8ae1dd1f"),
    "lifecycle-step": (2, "5a9cd3e962d4f59a"),
    "projector-checkpoint": (2, "e56fbcbda9eef4a6"),  # (digested without its `versions`, which any bump changes)
    "review-claim": (1, "4abd9c1635596c8d"),
    "review-runner-invariants": (1, "c992f5d9bfae5f9e"),
    "review-verifier-attribution": (1, "d482cfb80c212609"),
}


def test_a_change_to_what_a_projection_stores_comes_with_a_new_version(tmp_path):
    from benchledger.ledger.api import open as open_ledger
    from benchledger.ledger.api import plan_loopx_import
    from benchledger.ledger.storage.store import Store
    from benchledger.projections.catalog import CHECKPOINT, projection_versions

    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    with open_ledger(url) as ledger:
        for kind, name in (("preflight", "01-preflight.json"), ("launch", "02-launch.json"), ("post-launch", "03-post-launch.json")):
            ledger.ingest("demo", [str(DEMO / name)], kind=kind)
        ledger.ingest("demo", [str(DEMO / name) for name in ("04-run-baseline.json", "05-run-treatment.json", "06-comparison.json")])
        ledger.import_loopx(plan_loopx_import(str(LOOPX_LEDGER), "public"))
    store = Store.open(url)
    digests = {}
    for row in store.projection_rows():
        payload = row["payload"]
        if row["projection"] == CHECKPOINT:
            payload = json.dumps({k: v for k, v in json.loads(payload).items() if k != "versions"}, sort_keys=True)
        digests.setdefault(row["projection"], hashlib.sha256()).update(json.dumps([row["goal_id"], row["key"], row["status"], payload, row["error"]]).encode())
    store.close()
    versions = projection_versions()
    found = {name: (versions[name], digest.hexdigest()[:16]) for name, digest in digests.items()}
    changed = [
        f"{name}: its rows changed at version {versions[name]}: bump its version (status then lists the rows older builds stored as stale) "
        f"and pin {found[name]}"
        for name, (version, pinned) in PINNED_ROWS.items()
        if version == versions[name] and pinned != found[name][1]
    ]
    assert not changed, changed
    assert {name: version for name, (version, _) in PINNED_ROWS.items()} == {name: versions[name] for name in found}, f"pin the new versions: {found}"
