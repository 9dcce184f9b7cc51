"""``benchledger merge``: another ledger's goals into this one, verbatim, all or nothing (docs/interop.md, "merge").

The other ledger comes as a ``benchledger export`` file, or by its URL (then
exported to a temporary file in one snapshot of it, and merged from there: one
way in). The file is verified whole first, as ``import-ndjson`` verifies it
(``service.exchange.verify_export``: every line, every goal's chain, the
trailer's count and digest). Then, in one write transaction under the append
lock, goal by goal:

* a goal this ledger lacks is copied whole;
* a goal both hold is taken only where one holds a prefix of the other: this
  ledger's copy ends at version k, the file's at version n; if n > k the file's
  event k+1 must link to this ledger's chain hash at version k (a chain hash
  covers every event before it), and its events k+1..n are appended; if n <= k
  this ledger's chain hash at version n must be the file's last one (nothing to
  take). Otherwise the goals have parted: the merge is refused naming each such
  goal and the first stream version at which the two differ.

The events are stored as they are (``Store.insert_verbatim``: same ids,
payloads, recorded times, sources and chain hashes, positions numbered after
this ledger's last), so a merged goal's digest (``audit --goal``) is the same in
both ledgers. The projections of every goal that gained events are rebuilt in
the same transaction, as ``import-ndjson`` rebuilds them (a reducer that raises
stores a faulted row, as ``replay`` does).

Memory stays bounded as for ``import-ndjson``: the file is read a line at a
time, keeping a few hashes per goal.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.service.exchange import (
    INSERT_CHUNK,
    TRAILER_KEY,
    ExportRefused,
    export_lines,
    export_records,
    verify_export,
)
from benchledger.ledger.service.materialize import rebuild_projections
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.engine import shown_url
from benchledger.ledger.storage.event_records import StoredEvent
from benchledger.ledger.storage.other_ledger import open_to_read, same_ledger
from benchledger.ledger.storage.store import Store
from benchledger.ledger.storage.transaction import Transaction
from benchledger.ledger.storage.verification import format_digest

# Events of a goal read at a time while looking for where two copies of it part.
CHAIN_PAGE = 200


class MergeRefused(ExportRefused):
    """Goals both ledgers hold have parted (neither copy is a prefix of the other); nothing was written."""


@dataclass(frozen=True)
class MergedGoal:
    """One goal of the merged file: what the merge did with it, and its digest as the file holds it."""

    goal_id: str
    # "copied": this ledger lacked it; "appended": this ledger held a prefix of it; "held": this ledger held all of it already
    action: str
    events_added: int
    # the goal's events in the file, and their goal digest (the same in this ledger now: ``audit --goal G --expect-digest``)
    source_events: int
    digest: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "goal_id": self.goal_id, "action": self.action, "events_added": self.events_added,
            "source_events": self.source_events, "digest": self.digest,
        }


@dataclass(frozen=True)
class MergeReport:
    """What ``merge`` did (its ``--format json``): every goal of the source, in goal id order."""

    source: str
    goals: list[MergedGoal]

    @property
    def events_added(self) -> int:
        return sum(goal.events_added for goal in self.goals)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": True, "source": self.source, "events_added": self.events_added, "goals": [goal.as_dict() for goal in self.goals]}


class _Parted(Exception):
    """Raised inside the write transaction (rolling it back): goal -> a stream version at which the two copies differ."""

    def __init__(self, goals: dict[str, int]) -> None:
        self.goals = goals


def merge_export(ledger: Store, path: str, *, name: str | None = None, unverifiable_tail: bool = False) -> MergeReport:
    """Merge the export file ``path`` into ``ledger`` (module docstring); all or nothing.

    Raises :class:`ExportRefused` when the file does not verify, :class:`MergeRefused` when goals have parted.
    Messages call the file ``name``, by default ``path``.
    """
    name = name or path
    scan = verify_export(path, unverifiable_tail=unverifiable_tail, name=name)
    done: list[MergedGoal] = []

    def attempt() -> None:
        byte_hash = hashlib.sha256()
        running: dict[str, str] = {}  # goal -> its running goal digest over the file's events
        added: dict[str, int] = {}
        held: dict[str, int] = {}  # goal -> the version this ledger holds it at (0: lacks it)
        parted: dict[str, int] = {}

        def records(tx: Transaction) -> Iterator[dict[str, Any]]:
            heads = tx.heads_of(sorted(scan.goals))
            for goal in sorted(scan.goals):
                head = heads.get(goal)
                held[goal] = head["last_version"] if head else 0
                last_version, last_chain = scan.tails[goal]
                if head is not None and last_version <= held[goal]:
                    ((_version, chain, *_),) = tx.chain_page(goal, after_version=last_version - 1, limit=1)
                    if chain != last_chain:
                        parted[goal] = last_version
            for _number, value in export_records(path, byte_hash, name):
                if TRAILER_KEY in value:
                    continue
                goal, version = value["goal_id"], value["stream_version"]
                running[goal] = canonical.digest_step(running.get(goal, canonical.GENESIS_HASH), value["chain_hash"])
                if goal in parted or version <= held[goal]:
                    continue
                if version == held[goal] + 1 and version > 1 and value["prev_hash"] != heads[goal]["last_chain_hash"]:
                    parted[goal] = held[goal]
                    continue
                added[goal] = added.get(goal, 0) + 1
                yield value
            if parted:
                raise _Parted(parted)

        def check_and_rebuild(tx: Transaction) -> None:
            if byte_hash.hexdigest() != scan.sha256:
                raise ExportRefused(name, ["the file changed while it was being merged"])
            for step in rebuild_projections(tx, sorted(added)):
                del step  # the rows are written as each step is rebuilt; one step in memory at a time

        ledger.insert_verbatim(records, chunk=INSERT_CHUNK, within=check_and_rebuild)
        done[:] = [
            MergedGoal(
                goal,
                "copied" if not held[goal] else "appended" if added.get(goal) else "held",
                added.get(goal, 0),
                scan.tails[goal][0],
                format_digest(scan.tails[goal][0], running[goal]),
            )
            for goal in sorted(scan.goals)
        ]

    try:
        ledger.retrying_when_locked(attempt)
    except _Parted as stop:
        problems = _where_parted(ledger, path, name, stop.goals)
        raise MergeRefused(name, problems) from None
    return MergeReport(name, done)


def merge_ledger(ledger: Store, url: str) -> MergeReport:
    """Merge the ledger at ``url`` into ``ledger``: exported (one snapshot of it) to a temporary file, then :func:`merge_export`."""
    source = open_to_read(url)
    where = shown_url(source.engine.url)
    if same_ledger(source.engine, ledger.engine):
        source.close()
        # (in the words of both ways in, as a refusal of a goal's name says how to mean it: NEW_GOAL_HOW)
        raise InvalidInput(f"--from {where} (library: merge_from's url) is the ledger this merges into: there is nothing to merge (name another ledger)")
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", prefix="benchledger-merge-", suffix=".ndjson") as spool:
        try:
            for line in export_lines(source):
                spool.write(line + "\n")
        finally:
            source.close()
        spool.flush()
        return merge_export(ledger, spool.name, name=where)


def _where_parted(ledger: Store, path: str, name: str, goals: dict[str, int]) -> list[str]:
    """For each goal that parted (known to differ at the version given), the first stream version at which the file's copy
    and this ledger's differ, said in a line: one more pass over the file beside this ledger's copy, read a page at a time."""
    found: dict[str, str] = {}
    with ledger.snapshot() as view:
        ours = {goal: view.read_all(goal_id=goal, batch_size=CHAIN_PAGE) for goal in goals}
        for _number, value in export_records(path, hashlib.sha256(), name):
            goal = value.get("goal_id")
            if goal not in goals or goal in found:
                continue
            here = next(ours[goal], None)
            if here is None or here.chain_hash != value["chain_hash"]:
                found[goal] = _parted_line(goal, value["stream_version"], here, value, name)
    return [found.get(goal) or _parted_line(goal, goals[goal], None, None, name) for goal in sorted(goals)]


def _parted_line(goal: str, version: int, here: StoredEvent | None, there: dict[str, Any] | None, name: str) -> str:
    ours = f"{here.kind} {here.event_id} recorded {here.recorded_at}" if here else "no event"
    theirs = f"{there['kind']} {there['event_id']} recorded {there['recorded_at']}" if there else "no event"
    return (
        f"goal {goal!r}: this ledger and {name} both hold it and differ from stream version {version} on "
        f"(here: {ours}; there: {theirs}); a merge takes a goal only where one copy is a prefix of the other"
    )
