"""benchledger as a library: :func:`open` a :class:`Ledger`, then one method per thing a command does.

Every ``benchledger`` command is a call into this module (``cli/`` imports no
other part of the ledger). Answers are the typed results of
:mod:`benchledger.ledger.results`, whose ``as_dict()`` is what the command
prints with ``--format json``; every error a caller can cause is a
:class:`benchledger.errors.BenchledgerError`. docs/python-api.md shows it at work.

Importing this module is cheap on purpose (every command imports it): the
storage, service and read modules are imported inside the methods that use
them, so a command loads only what it runs.

Longer than 500 lines: it is the whole library API in one place, a method per
command (each a few lines of delegation under the docstring a caller reads);
split by command, a reader would have to assemble what the library offers.
"""

from __future__ import annotations

import sys
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from benchledger.errors import InvalidInput, LedgerUnavailable, capped, redact_url
from benchledger.ledger.results import (
    Attempt,
    AuditProblem,
    AuditReport,
    ClaimBundle,
    ClaimCheck,
    Comparison,
    Comparisons,
    ConsistencyCheck,
    ConsistencyProof,
    CurrentRun,
    FaultedRow,
    FoldedByOtherVersions,
    GoalRow,
    Goals,
    GoalView,
    History,
    HistoryEntry,
    InclusionProof,
    InclusionProofs,
    LaggingGoal,
    LedgerInfo,
    Lifecycle,
    Listing,
    LoopxImport,
    MissingProjection,
    Outcome,
    PassRate,
    ProjectionRow,
    Refusal,
    ReplayReport,
    RetractedBy,
    RetractedEvent,
    Retraction,
    Review,
    Run,
    RunListing,
    RunPair,
    SchemaUpgrade,
    SignedCheckpoint,
    StaleProjection,
    StandbyReplay,
    StatusReport,
    TreeHead,
)
from benchledger.ledger.storage.canonical import escape_lone_surrogates

if TYPE_CHECKING:
    from benchledger.ledger.service.bulk_report import BatchFileIngest
    from benchledger.ledger.service.exchange import ImportedExport
    from benchledger.ledger.service.goal_archive import GoalArchive
    from benchledger.ledger.service.ingest_outcome import BatchOutcome, IngestOutcome
    from benchledger.ledger.service.intake.reading import Document
    from benchledger.ledger.service.loopx_import import ImportPlan
    from benchledger.ledger.service.merge import MergeReport
    from benchledger.ledger.storage.store import Store
    from benchledger.projections.artifacts import Artifact

__all__ = [
    "FilesPlan", "Ledger", "LoopxPlan", "ReportViews", "escape_lone_surrogates", "evaluate_review",
    "execute_baseline_failure_gate", "is_goal_id", "load_artifacts", "open", "open_existing", "plan_ingest",
    "plan_ingest_tree", "plan_loopx_import", "read_json", "schema_head", "schema_revision", "upgrade_schema",
    "upgrade_schema_sql", "verify_claim", "verify_consistency", "generate_key", "writes_committed",
]

LIBRARY_SOURCE = "library"
# How ``ingest --batch-per-directory`` orders a job tree's batches (:func:`plan_ingest_tree`).
INGEST_ORDERS = ("name", "time")
# The bootstrap resamples a comparison takes, fewest and most (``Ledger.compare``, ``compare --resamples``): fewer make
# its interval noise, more cost time and memory and change nothing a verdict reads.
RESAMPLES = (100, 100_000)


def open(
    url: str | None = None, *, older_schema: Literal["upgrade", "refuse", "as-is"] = "upgrade", create: bool = True,
    create_default: bool = True,
) -> Ledger:
    """Open the ledger at ``url``, else at ``BENCHLEDGER_DATABASE_URL``, else the embedded default (created on first use).

    ``older_schema``: what a SQLite ledger at an older schema revision gets:
    ``"upgrade"`` migrates it, first keeping a copy of its file
    (:attr:`Ledger.upgraded` says so); ``"refuse"`` raises
    :class:`~benchledger.errors.LedgerUnavailable` naming ``db upgrade``;
    ``"as-is"`` leaves it (only :meth:`Ledger.info` can read such a ledger). A
    server ledger at an older revision is refused, except ``"as-is"``.
    ``create``: a SQLite file the URL names that does not exist yet becomes a
    new, empty ledger (:attr:`Ledger.created` names it); ``False`` refuses it
    instead, creating nothing (a ``LedgerUnavailable`` saying there is no ledger
    there: a mistyped path is not an empty ledger). The embedded default is
    created either way, unless ``create_default`` is ``False`` (a dry run, which writes nothing): then an empty
    in-memory ledger stands for it until it exists (not :attr:`Ledger.persistent`), and no file or folder is made.
    An empty server database is refused: ``db upgrade`` (:func:`upgrade_schema`) makes it a ledger.
    """
    from benchledger.ledger.storage.config import default_ledger_path, new_ledger_file
    from benchledger.ledger.storage.store import Store, open_store

    if url is not None and not isinstance(url, str):
        raise InvalidInput(f"the ledger URL must be a str (sqlite:///PATH or postgresql://USER@HOST/DATABASE), not {type(url).__name__}")
    new_file = new_ledger_file(url, create=create)
    if new_file is not None and not create_default and new_file == default_ledger_path():
        stand_in = Store.open("sqlite://", older=older_schema)
        stand_in.guarded = True  # (what the dry run would append is refused as the ledger, once made, will refuse it)
        return Ledger(stand_in)
    ledger = Ledger(open_store(url, older=older_schema))
    ledger.created = new_file if new_file is not None and new_file.exists() else None
    return ledger


def open_existing(url: str | None = None) -> Ledger | None:
    """The ledger ``url`` (else the environment) names, as it is: neither created nor migrated; ``None`` where :func:`open` would create a SQLite file."""
    from benchledger.ledger.storage.config import existing_url
    from benchledger.ledger.storage.store import Store

    found = existing_url(url)
    return None if found is None else Ledger(Store.open(found, migrate=False))


def writes_committed() -> int:
    """Write transactions this process committed to a persistent ledger (0 when it never opened one)."""
    store = sys.modules.get("benchledger.ledger.storage.store")  # (not imported: then nothing was written)
    return store.Store.writes_committed if store is not None else 0


def is_goal_id(text: str) -> bool:
    """Whether ``text`` can name a goal: 1-121 letters, digits, ``_ . : -``, starting with a letter or digit."""
    from benchledger.ledger.storage.event_records import GOAL_ID_PATTERN

    return GOAL_ID_PATTERN.fullmatch(text) is not None


ListingType = TypeVar("ListingType", bound=Listing[Any])


class Ledger:
    """One ledger database: what every command reads and writes through. Close it (or use ``with``)."""

    def __init__(self, store: Store, *, owned: bool = True) -> None:
        self._open_store: Store | None = store
        self._owned = owned
        # The streamed listings it made and a caller may not have read to their end: each holds a snapshot's
        # connection until it is released, which close() does (a half-read listing would otherwise keep it).
        self._listings: weakref.WeakSet[Listing[Any]] = weakref.WeakSet()
        # The SQLite file :func:`open` created (a new, empty ledger: the embedded default or a file a URL named), else None.
        self.created: Path | None = None

    # -- the ledger itself -------------------------------------------------------------------

    def close(self) -> None:
        """Release the ledger's connections, those of its listings not read to their end included; every later call
        (and reading on in such a listing) raises :class:`~benchledger.errors.LedgerUnavailable`."""
        for listing in list(self._listings):
            listing.close()
        if self._owned and self._open_store is not None:
            self._open_store.close()
        self._open_store = None

    def _held(self, listing: ListingType) -> ListingType:
        self._listings.add(listing)
        return listing

    @property
    def _store(self) -> Store:
        # (a closed store would silently open new connections: a closed ledger says so instead)
        if self._open_store is None:
            raise LedgerUnavailable("this ledger is closed (close() or the end of its `with`): benchledger.open(url) opens it again")
        return self._open_store

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def persistent(self) -> bool:
        """False for an in-memory ledger (``sqlite://``), which ends with the process."""
        return self._store.persistent

    @property
    def upgraded(self) -> SchemaUpgrade | None:
        """The schema migration opening this ledger made (an older SQLite ledger, ``older_schema="upgrade"``), else None."""
        upgraded = self._store.upgraded
        return None if upgraded is None else _schema_upgrade(upgraded)

    @property
    def url(self) -> str:
        """The ledger's URL, password included (to hand to another process; :meth:`info` prints it redacted)."""
        return self._store.engine.url.render_as_string(hide_password=False)

    @contextmanager
    def snapshot(self) -> Iterator[Ledger]:
        """A read-only view of the ledger as it is now: every read through it sees this one moment."""
        with self._store.snapshot() as view:
            yield Ledger(view, owned=False)

    def info(self) -> LedgerInfo:
        """Which ledger this is: URL (password redacted), backend, schema revision, events, goals, file size."""
        from benchledger.ledger.read import views

        return LedgerInfo(**views.info(self._store))

    def standby(self) -> StandbyReplay | None:
        """How far behind its primary the ledger is when it is a PostgreSQL hot standby (read-only), else ``None``."""
        from benchledger.ledger.read import views

        replay = views.standby(self._store)
        return None if replay is None else StandbyReplay(**replay)

    def refuse_writes_on_standby(self) -> None:
        """Raise :class:`~benchledger.errors.LedgerUnavailable` (exit 2) naming the ledger when it is a PostgreSQL hot
        standby: a command that writes asks before it reads its input (every write transaction asks again)."""
        from benchledger.ledger.storage.engine import StandbyIsReadOnly, shown_url, standby_replay

        if self._store.dialect != "postgresql":
            return
        # (asked of the storage room itself: an ingest loads no read model, tests/cli/test_startup.py)
        with self._store.reading() as connection:
            if standby_replay(connection) is not None:
                raise StandbyIsReadOnly.at(shown_url(self._store.engine.url))

    def has_goal(self, goal_id: str) -> bool:
        return self._store.head(goal_id) is not None

    def goal_ids(self) -> list[str]:
        """Every goal's id, sorted (its stream head only: cheaper than :meth:`goals`)."""
        return [head["goal_id"] for head in self._store.heads()]

    def event_count(self, goal_id: str | None = None) -> int:
        """How many events the ledger (or ``goal_id``, which must exist) holds."""
        return self._store.require_goal(goal_id)["last_version"] if goal_id is not None else self._store.event_count()

    def last_position(self) -> int:
        """The ledger's last event position (0 when empty): it moves whenever anything is appended."""
        from benchledger.ledger.read import runs

        return runs.last_position(self._store)

    # -- reading goals -----------------------------------------------------------------------

    def goals(self, *, limit: int | None = None, after: str | None = None, include_archived: bool = False) -> Goals:
        """Every goal by id (the first ``limit``; with ``after``, of those whose id sorts after it: the next page), read a
        page at a time from one snapshot as it is iterated; archived goals (:meth:`archive_goal`) only with
        ``include_archived`` (their ``archived`` is true)."""
        from benchledger.ledger.read import views

        with ExitStack() as held:
            view = held.enter_context(self._store.snapshot())
            rows = (GoalRow(**row) for row in views.goal_listing(view, limit=_limit(limit), after=after, include_archived=include_archived))
            return self._held(Goals(rows, held.pop_all().close))

    def show(
        self, goal_id: str, *, as_of: str | None = None, projection: str | None = None, key: str | None = None,
        limit: int | None = None, offset: int = 0,
    ) -> GoalView:
        """A goal's current state: the latest row of each projection; ``projection`` lists that one's rows (``key``, ``limit``, ``offset``).

        ``as_of`` (a global position, or an ISO-8601 time the ledger recorded) replays only the events up to then.
        """
        from benchledger.ledger.read import views

        shown = views.show(
            self._store, goal_id, as_of=as_of, projection=projection, key=key, limit=_limit(limit), offset=_whole_number("offset", offset)
        )
        return GoalView(
            shown["goal_id"],
            shown["as_of_position"],
            shown["head_position"],
            {name: [ProjectionRow(**row) for row in rows] for name, rows in shown["projections"].items()},
            shown["counts"],
            [Attempt(**attempt) for attempt in shown["attempts"]],
            shown["as_of_time"],
            shown["as_of_period"],
            shown["as_of_after_last_event"],
        )

    def history(
        self, goal_id: str, *, as_of: str | None = None, kind: str | None = None, since: str | None = None,
        until: str | None = None, limit: int | None = None, changes_only: bool = False, attempt: str | None = None,
    ) -> History:
        """The goal's events, each with the lifecycle after it, read a page at a time from one snapshot as it is iterated.

        ``as_of``: only the events up to then; ``kind``: only entries of that
        event kind; ``since`` / ``until``: a position or a recorded time;
        ``limit``: the latest N selected; ``changes_only``: the entries after
        which the lifecycle differs; ``attempt``: only the events of that attempt. (Positions and ISO-8601 times, as
        ``history --help`` says.)
        """
        from benchledger.ledger.read import views
        from benchledger.projections.catalog import EVENT_KINDS

        if kind is not None and kind not in EVENT_KINDS:  # (else: an empty history, as if the goal held none of a kind it may hold)
            raise InvalidInput(f"kind {kind!r} is not an event kind; one of: {', '.join(EVENT_KINDS)} (or None: every kind)")
        # (the latest N entries: N is 1 or more, as `history --limit` takes it)
        limit = _whole_number("limit", limit, what="of rows", least=1, none=True)
        query = views.HistoryFilter(as_of=as_of, kind=kind, since=since, until=until, limit=limit, changes_only=changes_only, attempt=attempt)
        with ExitStack() as held:
            view = held.enter_context(views.history_reader(self._store, goal_id, query))
            as_of = view.as_of
            return self._held(History(
                goal_id, as_of and as_of.position, map(_history_entry, view.entries), held.pop_all().close,
                as_of and as_of.time, as_of and as_of.period, as_of and as_of.after_last_event,
            ))

    # -- runs --------------------------------------------------------------------------------

    def runs(
        self, *, goal_id: str | None = None, benchmark: str | None = None, case: str | None = None, arm: str | None = None,
        mode: str | None = None, status: str | None = None, limit: int | None = None,
    ) -> RunListing[Run]:
        """Every run (imported LoopX rows and ingested runs), latest version of each, that the filters match (the first ``limit``).

        A filter value no run can have is refused, naming the values there are.
        """
        from benchledger.ledger.read import runs

        found = runs.select_runs(self._store, goal_id=goal_id, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status)
        return RunListing("runs", [Run(**view) for view in found[:_limit(limit)]])

    def current_runs(
        self, *, goal_id: str | None = None, benchmark: str | None = None, case: str | None = None, arm: str | None = None,
        mode: str | None = None, status: str | None = None, limit: int | None = None,
    ) -> RunListing[CurrentRun]:
        """Each goal, benchmark, case and arm with its current countable run; ``arm``, ``mode``, ``status`` filter by that run."""
        from benchledger.ledger.read import runs

        found = runs.select_runs(
            self._store, goal_id=goal_id, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status, current=True
        )
        return RunListing("current_runs", [_current_run(entry) for entry in found[:_limit(limit)]])

    def run_pairs(
        self, *, goal_id: str | None = None, benchmark: str | None = None, case: str | None = None, arm: str | None = None,
        mode: str | None = None, status: str | None = None, limit: int | None = None,
    ) -> RunListing[RunPair]:
        """A task's baseline and treatment runs side by side; ``arm``, ``mode``, ``status`` keep pairs one of whose runs matches."""
        from benchledger.ledger.read import runs

        found = runs.select_pairs(self._store, goal_id=goal_id, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status)
        return RunListing("pairs", [_run_pair(pair) for pair in found[:_limit(limit)]])

    def pass_rates(
        self, *, goal_id: str | None = None, benchmark: str | None = None, case: str | None = None, arm: str | None = None,
        mode: str | None = None, status: str | None = None, current: bool = False, include_archived: bool = False,
    ) -> RunListing[PassRate]:
        """Pass rates per benchmark and arm over the countable runs the filters match (``current``: each arm's current run only).

        Archived, superseded, retracted and otherwise not countable runs are
        counted in their own columns; ``include_archived`` counts archived runs in the rate.
        """
        from benchledger.ledger.read import runs

        found = runs.run_pass_rates(
            self._store, goal_id=goal_id, benchmark=benchmark, case=case, arm=arm, mode=mode, status=status, current=current,
            include_archived=include_archived,
        )
        return RunListing("pass_rates", [PassRate(**rate) for rate in found], counted=runs.counted_sentence(current, include_archived))

    def compare(
        self, *, goal_ids: Sequence[str] = (), as_of: str | None = None, benchmark: str | None = None, baseline: str | None = None,
        treatment: str | None = None, include_archived: bool = False, seed: int = 0, resamples: int = 2000,
    ) -> Comparisons:
        """Per benchmark, ``treatment`` against ``baseline`` (both, or neither: every arm pair a pair names) over the tasks both ran.

        Paired difference of per-task pass rates with a seeded cluster-bootstrap
        interval, the exact McNemar (or sign) test, Holm-adjusted across the
        benchmarks of this call, and a verdict (docs/statistics.md).
        """
        from benchledger.ledger.read import compare
        from benchledger.projections.runs import arm_of

        # (the bootstrap's generator takes a seed of 0 or more: -1 was its raw ValueError, an internal error)
        seed, resamples = _whole_number("seed", seed), _whole_number("resamples", resamples, least=RESAMPLES[0], most=RESAMPLES[1])
        if baseline is not None and treatment is not None and arm_of(baseline) == arm_of(treatment):
            raise InvalidInput(
                f"baseline {baseline!r} and treatment {treatment!r} are the same arm ({arm_of(baseline)!r}): a comparison needs two arms"
            )
        found = compare.compare(  # (a goal named twice is one goal of the scope, which says it once)
            self._store, goal_ids=tuple(dict.fromkeys(_items("goal_ids", goal_ids))), as_of=as_of, benchmark=benchmark, baseline=baseline, treatment=treatment,
            include_archived=_flag("include_archived", include_archived), seed=seed, resamples=resamples,
        )
        return Comparisons(found["scope"], [Comparison(**c) for c in found["comparisons"]])

    # -- maintenance -------------------------------------------------------------------------

    def status(self) -> StatusReport:
        """Projections stored by another reducer version or missing, faulted rows, and goals whose projections lag."""
        from benchledger.ledger.service import maintenance

        report = maintenance.status(self._store)
        return StatusReport(
            report["ok"],
            [StaleProjection(**s) for s in report["stale"]],
            [FoldedByOtherVersions(**f) for f in report["folded_by_other_versions"]],
            [MissingProjection(**m) for m in report["missing"]],
            [FaultedRow(**f) for f in report["faulted"]],
            [LaggingGoal(**g) for g in report["lagging_goals"]],
        )

    def replay(
        self, *, goal_id: str | None = None, projection: str | None = None, jobs: int = 1, progress: Callable[[int], None] | None = None
    ) -> ReplayReport:
        """Recompute the stored projections (of ``goal_id``, of ``projection``) from the events, in one transaction.

        ``jobs`` worker processes fold the goals; ``progress`` is called with the
        number of events folded at each step. A reducer that raises marks its row faulted.
        """
        from benchledger.ledger.service import maintenance

        started = time.perf_counter()
        report = maintenance.replay(self._store, goal_id=goal_id, projection=projection, progress=progress, jobs=_jobs(jobs))
        elapsed = time.perf_counter() - started
        return ReplayReport(
            report["goals"],
            report["events"],
            report["rows"],
            report["rows_changed"],
            report["counts_repaired"],
            report["heads_repaired"],
            report["log_nodes_repaired"],
            [FaultedRow(**f) for f in report["faulted"]],
            round(elapsed, 3),
            round(report["events"] / elapsed, 1) if elapsed > 0 else None,
        )

    def audit(
        self, *, goal_id: str | None = None, expect_digest: str | None = None, jobs: int = 1, progress: Callable[[int], None] | None = None,
        projections: bool = True,
    ) -> AuditReport:
        """Prove the ledger (or ``goal_id``): hashes, chains, versions, positions, every projection against a replay; its digest.

        ``expect_digest``: a digest an earlier audit printed, which the history must still have.
        ``projections=False``: the history alone (``audit --history-only``): no projection is
        refolded (``projections_checked`` 0, ``projections_scope`` ``"not checked"``).
        """
        from benchledger.ledger.service import maintenance

        report = maintenance.audit(self._store, goal_id=goal_id, expect_digest=expect_digest, jobs=_jobs(jobs), progress=progress, projections=projections)
        return AuditReport(
            report["ok"],
            report["events_checked"],
            report["goals_checked"],
            report["projections_checked"],
            report["digest"],
            [AuditProblem(**p) for p in report["problems"]],
            report["expected_digest"],
            report["expected_digest_verified"],
            report["projections"],
        )

    # -- proofs (docs/proofs.md) ------------------------------------------------------------

    def checkpoint(self, *, tree_size: int | None = None, origin: str | None = None) -> TreeHead:
        """The C2SP checkpoint (unsigned) of the tree of the first ``tree_size`` events (default: every event)."""
        from benchledger.ledger.service import proofs

        head = proofs.tree_head(self._store, tree_size=_whole_number("tree_size", tree_size, none=True), origin=origin or proofs.DEFAULT_ORIGIN)
        return TreeHead(head.origin, head.size, head.root.hex(), head.text())

    def sign_checkpoint(self, signing_key: str, *, origin: str | None = None, key_source: str = "signing key") -> SignedCheckpoint:
        """Sign the log's tree head with ``signing_key`` (the text ``generate_key`` made) and keep it (``checkpoint --key``).

        The key is used and dropped, never stored. Refused (``CheckFailed``) when the
        last signed checkpoint's root is no longer the log's at its size.
        """
        from benchledger.ledger.service import proofs
        from benchledger.ledger.service.signing import signer

        return SignedCheckpoint(**proofs.sign_checkpoint(self._store, signer(signing_key, key_source), origin=origin))

    def publish(self, goal_id: str, comparison_id: str, signing_key: str, *, origin: str | None = None, key_source: str = "signing key") -> ClaimBundle:
        """The claim bundle of comparison ``comparison_id`` of ``goal_id``: its reviews, the events they are a fold of, an
        inclusion proof of each against a checkpoint signed with ``signing_key``: the one kept of the log as it is now, else
        one signed now (and kept)."""
        from benchledger.ledger.service import claims
        from benchledger.ledger.service.signing import signer

        bundle, kept, reused = claims.publish(self._store, goal_id, comparison_id, signer(signing_key, key_source), origin=origin)
        return ClaimBundle(bundle, SignedCheckpoint(**kept), reused)

    def checkpoints(self) -> list[SignedCheckpoint]:
        """The checkpoints ``sign_checkpoint`` signed, oldest first."""
        from benchledger.ledger.service import proofs

        return [SignedCheckpoint(**kept) for kept in proofs.signed_checkpoints(self._store)]

    def prove(self, event_ids: Sequence[str], *, tree_size: int | None = None, checkpoint: int | None = None) -> InclusionProofs:
        """An RFC 9162 inclusion proof of each event in the tree of the first ``tree_size`` events (default: every event),
        or in the tree of signed checkpoint number ``checkpoint``."""
        from benchledger.ledger.service import proofs

        tree_size, checkpoint = _whole_number("tree_size", tree_size, none=True), _whole_number("checkpoint", checkpoint, none=True)
        report = proofs.prove(self._store, _items("event_ids", event_ids), tree_size=tree_size, checkpoint=checkpoint)
        return InclusionProofs(report["tree_size"], report["root_hash"], report["checkpoint"], [InclusionProof(**p) for p in report["proofs"]])

    def prove_consistency(self, old_size: int, new_size: int | None = None) -> ConsistencyProof:
        """An RFC 9162 consistency proof from the tree of ``old_size`` events to the tree of ``new_size`` (default: every event)."""
        from benchledger.ledger.service import proofs

        old_size, new_size = _whole_number("old_size", old_size), _whole_number("new_size", new_size, none=True)
        return ConsistencyProof(**proofs.prove_consistency(self._store, old_size, new_size))

    # -- writing -----------------------------------------------------------------------------

    def ingest(
        self, goal_id: str, paths: Sequence[str], *, kind: str | None = None, dry_run: bool = False, source: str = LIBRARY_SOURCE,
        new_goal: bool = False, attempt: str | int | None = None,
    ) -> IngestOutcome:
        """Read the documents of ``paths`` (files, folders, NDJSON) and append them to ``goal_id`` as one batch: all or none.

        ``kind`` names every document's kind (lifecycle inputs carry none). A
        refused document writes nothing: the outcome lists every refusal. A new goal whose name is close to an
        existing goal's raises :class:`~benchledger.errors.InvalidInput` ("did you mean"), unless ``new_goal``
        says it is meant (here and in every method that writes into a goal; docs/cli.md, "New goals"). ``attempt`` (here,
        in :meth:`ingest_files` and :meth:`ingest_artifacts`) names the attempt of the goal the batch joins; ``None``: the
        attempt rule places it (docs/linking.md, "Naming the attempt").
        """
        return self.ingest_files(plan_ingest(goal_id, paths), kind=kind, dry_run=dry_run, source=source, new_goal=new_goal, attempt=attempt)

    def ingest_files(
        self,
        plan: FilesPlan,
        *,
        kind: str | None = None,
        dry_run: bool = False,
        source: str = LIBRARY_SOURCE,
        progress: Callable[[Iterable[str]], Iterable[str]] | None = None,
        skip_unknown: bool = False,
        new_goal: bool = False,
        attempt: str | int | None = None,
    ) -> IngestOutcome:
        """Read and append the batches of ``plan`` (:func:`plan_ingest`, :func:`plan_ingest_tree`) in one transaction: all or none.

        The files are read as the transaction goes; ``progress`` wraps each batch's list of files as it is read.
        ``skip_unknown``: documents whose kind cannot be told are left out, listed in the outcome's ``skipped``.
        """
        from benchledger.ledger.service.ingest import Ingest

        dry_run, skip_unknown, new_goal = _flag("dry_run", dry_run), _flag("skip_unknown", skip_unknown), _flag("new_goal", new_goal)
        unit = Ingest(self._store, _text("source", source), dry_run=dry_run, inputs=plan.inputs, skip_unknown=skip_unknown)
        for label, files in plan.batches:
            unit.add_files(plan.goal_id, files, kind=kind, label=label, progress=progress, new_goal=new_goal, attempt=attempt)
        return unit.commit()

    def ingest_artifacts(
        self, goal_id: str, artifacts: Sequence[Artifact], *, dry_run: bool = False, source: str = LIBRARY_SOURCE, new_goal: bool = False,
        attempt: str | int | None = None,
    ) -> BatchOutcome:
        """Append normalized ``artifacts`` (:func:`load_artifacts`; one alone, or a list) to ``goal_id`` as one batch, in one
        transaction (what the store refuses raises :class:`~benchledger.errors.InvalidEvent`, nothing written; anything
        but artifacts, such as documents as dicts, :class:`~benchledger.errors.InvalidInput`). An artifact the list holds
        already is taken once, as ``ingest`` takes a repeated file, and said in the batch's ``notes``."""
        import dataclasses

        from benchledger.ledger.service.ingest import ingest, member_event
        from benchledger.ledger.service.intake.artifacts import repeated_in_batch

        held, taken_once, first = [], [], {}
        for index, artifact in enumerate(_artifacts(artifacts)):
            where = artifact.origin or f"artifacts[{index}]"
            repeated = repeated_in_batch(first, where, member_event(artifact).event_id(goal_id))
            if repeated is None:
                held.append(artifact)
            else:
                taken_once.append(f"taken once: {where}: {repeated}")
        outcome = ingest(
            self._store, goal_id, held, source=_text("source", source), dry_run=_flag("dry_run", dry_run),
            new_goal=_flag("new_goal", new_goal), attempt=attempt,
        )
        return dataclasses.replace(outcome, notes=(*outcome.notes, *taken_once)) if taken_once else outcome

    def ingest_batch_file(
        self, path: str, *, name: str | None = None, started: Callable[[int], None] | None = None,
        progress: Callable[[int], None] | None = None, jobs: int = 1,
    ) -> BatchFileIngest:
        """``ingest-batches``: an NDJSON file of batches, every line validated first, then appended about a thousand artifacts per transaction.

        ``name`` is what messages call the file; ``started`` is told how many
        artifacts were validated, ``progress`` how many each transaction committed;
        ``jobs`` worker processes validate the lines (the same outcome as one).
        """
        from benchledger.ledger.service.bulk import ingest_batch_file

        return ingest_batch_file(self._store, path, name=name, started=started, progress=progress, jobs=_jobs(jobs))

    def archive_goal(self, goal_id: str, *, archived: bool = True, source: str = LIBRARY_SOURCE) -> GoalArchive:
        """Archive ``goal_id`` (``archived=False``: unarchive it): an event that hides it from :meth:`goals` and the
        report's index, never a deletion; nothing is written when it is so already."""
        from benchledger.ledger.service.goal_archive import set_archived

        return set_archived(self._store, goal_id, _flag("archived", archived), source=_text("source", source))

    def retract(
        self, event_ids: Sequence[str], reason: str, *, goal_id: str | None = None, source: str = LIBRARY_SOURCE, dry_run: bool = False
    ) -> Retraction:
        """Append a retraction of ``event_ids`` (one goal's) with ``reason``: from it on, the goal reads as if they were absent.

        An event is named by its id, a unique prefix of it (at least 4 characters) or ``@POSITION``;
        ``dry_run``: everything is checked, the answer says what would change, nothing is written.
        """
        from benchledger.ledger.service.retract import retract

        done = retract(
            self._store, _items("event_ids", event_ids), _text("reason", reason), goal_id=goal_id, source=_text("source", source),
            dry_run=_flag("dry_run", dry_run),
        )
        plan = done.plan
        return Retraction(
            done.goal_id, done.event_id, done.position, [e.event_id for e in plan.withdrawn], plan.reason, done.dry_run,
            [RetractedEvent(e.event_id, e.position, e.kind, summary) for e, summary in zip(plan.withdrawn, done.withdrawn_summaries)],
            None if plan.lifecycle_before is None else Lifecycle(**plan.lifecycle_before),
            None if plan.lifecycle_after is None else Lifecycle(**plan.lifecycle_after),
            plan.verdicts_before,
            plan.verdicts_after,
        )

    # -- exchange ----------------------------------------------------------------------------

    def export(self, *, goal_id: str | None = None) -> Iterator[str]:
        """Every event (or ``goal_id``'s, which must exist) as one NDJSON line, in position order, then the trailer line."""
        from benchledger.ledger.service.exchange import export_lines

        return export_lines(self._store, goal_id=goal_id)

    def import_export(self, path: str, *, unverifiable_tail: bool = False, name: str | None = None) -> ImportedExport:
        """Restore an :meth:`export` file into this empty ledger, exactly, once it verifies as a whole.

        Refused (:class:`~benchledger.ledger.ExportRefused`, nothing written)
        unless every line, chain and the trailer hold; ``unverifiable_tail``
        accepts a file without the trailer. Messages call the file ``name``.
        """
        from benchledger.ledger.service.exchange import import_export

        return import_export(self._store, path, unverifiable_tail=unverifiable_tail, name=name)

    def merge(self, path: str, *, unverifiable_tail: bool = False, name: str | None = None) -> MergeReport:
        """Merge an :meth:`export` file of another ledger into this one, all or nothing (docs/interop.md, "merge").

        A goal this ledger lacks is copied whole; a goal both hold is taken only where one copy is a prefix
        of the other (the rest appended). Events are stored verbatim, so a merged goal's digest is the same in
        both ledgers. Refused (:class:`~benchledger.ledger.ExportRefused`, nothing written) unless the file
        verifies; :class:`~benchledger.ledger.MergeRefused` names each goal whose copies have parted and the
        first stream version where they differ. Messages call the file ``name``.
        """
        from benchledger.ledger.service.merge import merge_export

        return merge_export(self._store, path, unverifiable_tail=unverifiable_tail, name=name)

    def merge_from(self, url: str) -> MergeReport:
        """:meth:`merge` of the ledger at ``url`` (read in one snapshot, neither created nor migrated)."""
        from benchledger.ledger.service.merge import merge_ledger

        return merge_ledger(self._store, url)

    def import_loopx(self, plan: LoopxPlan, *, dry_run: bool = False, new_goal: bool = False) -> LoopxImport:
        """Append what :func:`plan_loopx_import` read to its goal, all or nothing (``dry_run``: report it, write nothing)."""
        from benchledger.ledger.service.loopx_import import import_plan

        return _loopx_import(import_plan(self._store, plan.goal_id, plan.plan, dry_run=dry_run, new_goal=new_goal))

    # -- reviews and the report --------------------------------------------------------------

    def keep_review(
        self, goal_id: str, name: str, artifacts: Sequence[Artifact], options: Mapping[str, Any], *, new_goal: bool = False
    ) -> Review:
        """:func:`evaluate_review`, keeping the inputs in ``goal_id`` as one batch with the review's flags (nothing when they cannot be kept)."""
        from benchledger.ledger.service.reviews import evaluate_and_keep

        payload, archived_goals = evaluate_and_keep(self._store, goal_id, name, artifacts, options, new_goal=new_goal)
        return Review(name, payload, archived_goals)

    def report_views(self) -> ReportViews:
        """What the report's pages read (``benchledger report`` and ``serve``)."""
        return ReportViews(self._store)


def _items(name: str, given: Any) -> tuple[Any, ...]:
    """A sequence argument's items: one path or goal id given alone is that one (iterated, it would be its characters)."""
    if isinstance(given, str | PathLike):
        return (given,)
    try:
        return tuple(given)
    except TypeError:
        raise InvalidInput(f"{name} must be a list (or one str), not {type(given).__name__}") from None


def _jobs(jobs: Any) -> int:
    """A ``jobs``: a whole number of worker processes, 1 or more (1: all in this process)."""
    return int(_whole_number("jobs", jobs, what="of worker processes", least=1))


def _limit(limit: Any) -> int | None:
    """A ``limit``: None (every row) or a whole number of rows (a negative slice bound would drop rows from the end)."""
    return _whole_number("limit", limit, what="of rows", none=True)


def _whole_number(name: str, value: Any, *, what: str = "", least: int = 0, most: int | None = None, none: bool = False) -> Any:
    """A count, size or offset a caller gives: a whole number, ``least`` or more (and ``most`` or fewer, when given;
    ``none``: or None, the default it stands for); ``"3"``, ``2.5`` or ``True`` is a mistake, not a number."""
    if (none and value is None) or (
        isinstance(value, int) and not isinstance(value, bool) and value >= least and (most is None or value <= most)
    ):
        return value
    bounds = f"{least} or more" if most is None else f"{least} to {most}"
    raise InvalidInput(f"{name} must be a whole number{f' {what}' if what else ''} ({bounds}){' or None' if none else ''}, not {value!r}")


def _flag(name: str, value: Any) -> bool:
    """A yes-or-no a caller gives: ``True`` or ``False`` (``archived="no"`` would otherwise archive)."""
    if isinstance(value, bool):
        return value
    raise InvalidInput(f"{name} must be True or False, not {value!r}")


def _text(name: str, value: Any) -> str:
    """A label or reason a caller gives: a string."""
    if isinstance(value, str):
        return value
    raise InvalidInput(f"{name} must be a string, not {value!r}")


def _history_entry(entry: dict[str, Any]) -> HistoryEntry:
    outcome, lifecycle, retracted_by = entry["outcome"], entry["lifecycle"], entry["retracted_by"]
    return HistoryEntry(
        **{
            **entry,
            "outcome": None if outcome is None else Outcome(**outcome),
            "lifecycle": None if lifecycle is None else Lifecycle(**lifecycle),
            "retracted_by": None if retracted_by is None else RetractedBy(**retracted_by),
        }
    )


def _current_run(entry: dict[str, Any]) -> CurrentRun:
    return CurrentRun(**{**entry, "current": Run.of(entry["current"])})


def _run_pair(pair: dict[str, Any]) -> RunPair:
    return RunPair(**{**pair, "baseline": Run.of(pair["baseline"]), "treatment": Run.of(pair["treatment"])})


# -- reviews -------------------------------------------------------------------------------------


def evaluate_review(name: str, artifacts: Sequence[Artifact], options: Mapping[str, Any]) -> Review:
    """Review ``artifacts`` as ``benchledger benchmark NAME`` does: through a throwaway in-memory ledger, nothing kept."""
    from benchledger.ledger.service.reviews import evaluate_review as evaluate

    payload, _ = evaluate(name, artifacts, options)
    return Review(name, payload)


def execute_baseline_failure_gate(
    artifacts: Sequence[Artifact], options: Mapping[str, Any], *, url: str | None = None, new_goal: bool = False
) -> Review:
    """``baseline-failure-gate --execute``: review as a dry run; if the gate passes, keep it in its goal of the ledger at ``url``."""
    from benchledger.ledger.service.reviews import execute_baseline_failure_gate as execute
    from benchledger.projections.baseline_failure_gate import NAME

    return Review(NAME, *execute(artifacts, options, database_url=url, new_goal=new_goal))


def verify_consistency(
    old_checkpoint: str,
    new_checkpoint: str,
    proof: str,
    *,
    public_keys: Sequence[tuple[str, str]] = (),
    names: tuple[str, str, str] = ("OLD", "NEW", "PROOF"),
) -> ConsistencyCheck:
    """Check, with no ledger, that the log of the ``new_checkpoint`` text grew from the ``old_checkpoint`` one by the ``proof``
    text ``prove-consistency --format json`` printed, and with ``public_keys`` (``(text, where)``: a key file, or a file of one
    key a line) that both checkpoints are signed by one of them; :class:`~benchledger.projections.merkle.ProofError` (a check
    that says no) when not."""
    from benchledger.ledger.service import proofs

    keys = []
    if public_keys:
        from benchledger.ledger.service.signing import verifier_keys

        keys = verifier_keys(public_keys)
    return ConsistencyCheck(**proofs.verify_consistency(old_checkpoint, new_checkpoint, proof, keys=keys, names=names))


def verify_claim(bundle: str, public_keys: Sequence[tuple[str, str]], *, name: str = "claim bundle") -> ClaimCheck:
    """Check the text of a claim bundle ``publish`` wrote, with no ledger and no network: the checkpoint's signature by
    one of ``public_keys`` (``(text, where)``), every event's hashes and chain, every inclusion proof, and the reviews
    recomputed from the events; ``CheckFailed`` (exit status 1) naming the first problem."""
    from benchledger.ledger.service import claims
    from benchledger.ledger.service.signing import verifier_keys

    return ClaimCheck(**claims.verify_bundle(bundle, verifier_keys(public_keys), name))


def generate_key(name: str) -> tuple[str, str]:
    """A new Ed25519 note key named ``name`` (the ``[sign]`` extra): ``(signing key text, public key text)``, as ``keygen`` writes them."""
    from benchledger.ledger.service.signing import generate_key as generate

    return generate(name)


def read_json(path: str, *, stdin_dash: bool = False) -> Document:
    """A review input file read and parsed as LoopX reads it (``value``, ``sha256``); ``-`` is standard input when ``stdin_dash``."""
    from benchledger.ledger.service.intake.reading import read_json as read

    return read(path, stdin_dash=stdin_dash)


def load_artifacts(paths: Iterable[str], *, kind: str | None = None) -> list[Artifact]:
    """Every document of ``paths`` read and normalized as ``ingest`` reads it; any refused one raises :class:`InvalidInput` naming each."""
    from benchledger.ledger.service.intake.artifacts import collect_artifacts

    artifacts, _, refused = collect_artifacts([str(path) for path in _items("paths", paths)], kind)
    if refused:
        raise InvalidInput("; ".join(capped([f"{source}: {reason}" for source, reason in refused])))
    return artifacts


# -- ingest -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilesPlan:
    """The files an ingest reads into ``goal_id``, batch by batch (``(label, files)``: a job tree's directory, or
    ``None`` for the one batch of PATHs), and what its messages call them (``inputs``)."""

    goal_id: str
    batches: tuple[tuple[str | None, tuple[str, ...]], ...]
    inputs: str

    @property
    def file_count(self) -> int:
        return sum(len(files) for _, files in self.batches)


def plan_ingest(goal_id: str, paths: Sequence[str], *, include: Sequence[str] = ()) -> FilesPlan:
    """``ingest PATH...``: the files ``paths`` name (folders read for ``*.json``, ``*.ndjson``, ``*.jsonl``, gzipped or not,
    sorted; or for what an ``include`` GLOB matches), one batch; no ledger involved."""
    from benchledger.ledger.service.intake.files import expand_paths

    if not isinstance(goal_id, str):
        raise InvalidInput(f"goal_id must be a goal's name (a str), not {type(goal_id).__name__}")
    paths = _items("paths", paths)
    return FilesPlan(goal_id, ((None, tuple(expand_paths([str(path) for path in paths], include))),), ", ".join(map(str, paths)))


def plan_ingest_tree(goal_id: str, root: str, *, include: Sequence[str] = (), order: str = "name") -> FilesPlan:
    """``ingest --batch-per-directory ROOT``: a batch per directory below ``root`` that directly holds input files (``include``
    as :func:`plan_ingest`), ordered by directory ``name`` or by the ``time`` their documents state; no ledger involved
    (``time`` reads the documents once for their times)."""
    from benchledger.ledger.service.intake.tree import directory_batches

    # (a tree without input files is one empty batch: its ingest is refused as holding no artifact, naming the goal)
    batches = tuple((directory, tuple(files)) for directory, files in directory_batches(root, include=include, order=order)) or ((root, ()),)
    return FilesPlan(goal_id, batches, root)


# -- import-loopx --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoopxPlan:
    """What :func:`plan_loopx_import` read of a LoopX history: the events to append to ``goal_id``, or the rows it refuses."""

    goal_id: str
    plan: ImportPlan

    @property
    def ok(self) -> bool:
        return not self.plan.refused

    def refusal(self, *, dry_run: bool = False) -> LoopxImport:
        """The report of a plan that refuses rows: nothing to append, every refusal listed (no ledger needed)."""
        from benchledger.ledger.service.loopx_import import ImportReport

        return _loopx_import(ImportReport(self.goal_id, self.plan, 0, 0, dry_run))


def plan_loopx_import(path: str, goal_id: str) -> LoopxPlan:
    """Read a LoopX run ledger or runtime history (a root, goal folder, runs folder or ``index.jsonl``) for ``goal_id``; no ledger involved."""
    from benchledger.ledger.service.loopx_import import plan_import

    return LoopxPlan(goal_id, plan_import(path, goal_id))


def _loopx_import(report: Any) -> LoopxImport:
    fields = report.as_dict()
    del fields["ok"]  # (a property of the result: no refusal)
    return LoopxImport(**{**fields, "refused": [Refusal(**r) for r in fields["refused"]]})


# -- the schema ----------------------------------------------------------------------------------


def schema_head() -> str:
    """The schema revision this benchledger reads and writes."""
    from benchledger.ledger.storage.migrate import HEAD_REVISION

    return HEAD_REVISION


def schema_revision(url: str | None = None) -> str | None:
    """The schema revision of the ledger at ``url`` (``None``: not initialized); nothing is migrated."""
    from benchledger.ledger.storage.config import resolve_url
    from benchledger.ledger.storage.migrate import ledger_revision

    return ledger_revision(resolve_url(url))


def upgrade_schema(url: str | None = None, revision: str = "head") -> SchemaUpgrade:
    """Migrate the ledger at ``url`` to ``revision`` (a SQLite file: keeping a copy of it as it was first); what it did."""
    from benchledger.ledger.storage.config import resolve_url
    from benchledger.ledger.storage.migrate import upgrade_ledger

    where = resolve_url(url)
    before, now, upgraded = upgrade_ledger(where, revision)
    if upgraded is None:
        return SchemaUpgrade(redact_url(where), None, now, None, created=before is None and now is not None)
    return _schema_upgrade(upgraded)


def _schema_upgrade(upgraded: Any) -> SchemaUpgrade:
    return SchemaUpgrade(upgraded.where, upgraded.from_revision, upgraded.to_revision, None if upgraded.backup is None else str(upgraded.backup))


def upgrade_schema_sql(url: str | None = None, revision: str = "head", from_revision: str | None = None) -> str:
    """The SQL that would migrate the ``url`` ledger to ``revision``, for its backend: from ``from_revision`` (connecting
    to nothing), else from the revision the database is at (read, nothing else)."""
    from benchledger.ledger.storage.config import resolve_url
    from benchledger.ledger.storage.migrate import upgrade_sql

    return upgrade_sql(resolve_url(url), revision, from_revision)


# -- the report ----------------------------------------------------------------------------------


class ReportViews:
    """The data of the report's pages (``benchledger report`` / ``serve``): bounded reads shaped for its templates.

    Each method answers one part of a page as a mapping the HTML templates
    read (``ledger.read.report_views`` documents each), a page's worth at most.
    """

    def __init__(self, store: Store) -> None:
        from benchledger.ledger.read import report_attempts, report_views

        self._store = store
        self._views = report_views
        self._attempts = report_attempts
        self.index_page_size: int = report_views.INDEX_PAGE_SIZE
        self.attempts_page_size: int = report_attempts.ATTEMPTS_PAGE_SIZE
        self.batches_page_size: int = report_views.BATCHES_PAGE_SIZE

    def goal_index(
        self, goal_ids: Sequence[str] | None = None, *, limit: int, offset: int = 0, pass_rates: bool = True, include_archived: bool = False
    ) -> dict[str, Any]:
        return self._views.goal_index(self._store, goal_ids, limit=limit, offset=offset, pass_rates=pass_rates, include_archived=include_archived)

    def goal_overview(self, goal_id: str, *, pass_rates: bool = True) -> dict[str, Any]:
        return self._views.goal_overview(self._store, goal_id, pass_rates=pass_rates)

    def pass_rates(self, goal_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
        from benchledger.ledger.read.runs import goal_pass_rates

        return goal_pass_rates(self._store, goal_ids)

    def goal_last_position(self, goal_id: str) -> int | None:
        return self._views.goal_last_position(self._store, goal_id)

    def attempts(self, goal_id: str, *, limit: int, start: tuple[int, str] | None = None) -> dict[str, Any]:
        """A page of the goal's attempts (``attempt-lifecycle-state`` rows), each with its timeline and its comparisons' reviews."""
        return self._attempts.lifecycle_attempts(self._store, goal_id, limit=limit, start=start)

    def attempts_page_start(self, goal_id: str, *, offset: int) -> tuple[int, str] | None:
        return self._attempts.attempts_page_start(self._store, goal_id, offset=offset)

    def retractions(self, goal_id: str) -> list[dict[str, Any]]:
        return self._attempts.retractions(self._store, goal_id)

    def batches(self, goal_id: str, *, limit: int, start: tuple[int, str] | None = None) -> dict[str, Any]:
        """A page of the goal's comparisons table: the batches that held a comparison, each with its attempt and reviews."""
        return self._views.batches(self._store, goal_id, limit=limit, start=start)

    def batches_page_start(self, goal_id: str, *, offset: int) -> tuple[int, str] | None:
        return self._views.batches_page_start(self._store, goal_id, offset=offset)

    def chart_series(self, goal_id: str) -> dict[str, Any]:
        from benchledger.ledger.read import report_charts

        return report_charts.chart_series(self._store, goal_id)

    def lifecycle_timeline(self, goal_id: str) -> dict[str, Any]:
        return self._views.lifecycle_timeline(self._store, goal_id)

    def latest_reviews(self, goal_id: str) -> list[dict[str, Any]]:
        return self._views.latest_reviews(self._store, goal_id)

    def attempt_reviews(self, goal_id: str, key: str) -> list[dict[str, Any]]:
        return self._views.attempt_reviews(self._store, goal_id, key)

    def goal_runs(self, goal_ids: Sequence[str] | None = None) -> dict[str, Any]:
        """``compare`` over the goals (none: the ledger) and each goal's pass rates, from one reading of their runs."""
        return self._views.goal_runs(self._store, goal_ids)


def _artifacts(given: Any) -> tuple[Artifact, ...]:
    """``ingest_artifacts``' artifacts: :class:`Artifact` s (one alone is that one); documents (dicts, JSON text) are
    refused, naming what reads them (an ``AttributeError`` from deep in the write, before)."""
    from benchledger.projections.artifacts import Artifact

    how = "load_artifacts(paths) reads and normalizes documents into them; ingest(goal_id, paths) takes the files"
    if isinstance(given, Artifact):
        return (given,)
    if isinstance(given, Mapping | str | bytes | PathLike) or not isinstance(given, Iterable):
        raise InvalidInput(f"artifacts must be a list of Artifact (or one), not {_a(type(given).__name__)}: {how}")
    items = tuple(given)
    for index, item in enumerate(items):
        if not isinstance(item, Artifact):
            raise InvalidInput(f"artifacts[{index}] is {_a(type(item).__name__)}, not an Artifact: {how}")
    return items


def _a(noun: str) -> str:
    return f"{'an' if noun[:1].lower() in 'aeiou' else 'a'} {noun}"
