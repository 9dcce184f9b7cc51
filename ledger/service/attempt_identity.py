"""The identity of an observation within its goal's attempts: the same bytes in a new attempt are a new observation.

An artifact's event id covers its goal, kind, compact payload and source bytes
(docs/hash-chain.md), so a document ingested again is the same event: nothing
is appended. Lifecycle records often carry no id at all (LoopX's launch
fixture is ``{"schema_version": "benchmark_launch_fixture_v0",
"process_started": true}`` for every launch), so the second attempt of a goal
(``projections.attempts``) can hold a preflight, launch or post-launch record
byte for byte the same as the first attempt's. Such a record is a new
observation when the attempt it joins (the goal's open attempt, as the rule
stands after the events before it) holds no evidence of its kind yet: it is
then stored with the source hash of its bytes *in that attempt*
(:func:`~benchledger.ledger.storage.canonical.attempt_source_sha256`), so its
id differs from the first attempt's while ``audit`` still recomputes it from
the stored fields. Otherwise (the open attempt has one) it is the stored
event, as before: re-ingesting an attempt's files into it appends nothing, and
a goal of one attempt keeps every id (docs/linking.md, "Attempts inside a goal").

A batch named into an attempt (``ingest --attempt N``) is observed in attempt
``N`` instead of the open one: what ``N`` holds is the open attempt's (the
checkpoint's), nothing for an attempt it opens, or for an earlier attempt the
kinds its ``attempt-evidence`` row names. So an earlier attempt's file sent
again into that attempt appends nothing, and into another attempt it is a new
observation there.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping

from benchledger.errors import InvalidInput
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.event_records import NewEvent, StoredEvent
from benchledger.ledger.storage.transaction import Transaction
from benchledger.projections.attempts import Attempts, place, place_named
from benchledger.projections.catalog import ATTEMPT_EVIDENCE, CHECKPOINT, CURRENT_KEY
from benchledger.projections.checkpoint import CheckpointUnusable, checkpoint_attempts, checkpoint_fields, evidence_refs

# The records observed anew in a later attempt when the bytes repeat: what starts an attempt, often without any id.
# (Runs, comparisons, reviews and learning ledgers name their task, trial or comparison: the same bytes are the same document.)
REOBSERVED = frozenset({"preflight", "launch", "post-launch"})


class InvalidAttempt(InvalidInput):
    """An attempt named in a form attempts are not numbered in (``projections.attempts.ATTEMPT_ID``), or past the next one."""


class AttemptPlacement:
    """Where the attempt rule stands in each goal an ingest writes, advanced by the events it appends, in order."""

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx
        self._rules: dict[str, Attempts | None] = {}
        self._seen: set[str] = set()  # ids of the events this ingest placed already
        self._earlier_held: dict[tuple[str, str], frozenset[str]] = {}  # (goal, earlier attempt) -> the kinds it holds

    def _rule(self, goal_id: str) -> Attempts | None:
        """The rule's state after the goal's stored events (:meth:`_read_rules`), then after what this ingest placed."""
        if goal_id not in self._rules:
            self._read_rules([goal_id])
        return self._rules[goal_id]

    def _read_rules(self, goal_ids: Iterable[str]) -> None:
        """The rule's state after each goal's stored events, read for all of ``goal_ids`` at once (two reads, not two a goal:
        a transaction of ``ingest-batches`` writes to a few hundred goals): its checkpoint's, advanced by any event after it
        (``None``: the goal holds events but no checkpoint this code can read, as after an upgrade, so its attempts are not
        known before the fold of this ingest, which reads the goal whole; it is not read twice for this)."""
        unread = [goal for goal in dict.fromkeys(goal_ids) if goal not in self._rules]
        if not unread:
            return
        heads = {goal: head["last_version"] for goal, head in self.tx.heads_of(unread).items()}
        held = [goal for goal in unread if heads.get(goal, 0)]
        rows = self.tx.projection_row_of_goals(held, CHECKPOINT, CURRENT_KEY) if held else {}
        for goal_id in unread:
            head, row = heads.get(goal_id, 0), rows.get(goal_id)
            state: Attempts | None = Attempts()
            after = 0
            if head and (row is None or row["payload"] is None):
                state = None
            elif row is not None:
                try:
                    checkpoint = json.loads(row["payload"])
                    after, state = checkpoint_fields(checkpoint)[0], checkpoint_attempts(checkpoint)
                except (ValueError, CheckpointUnusable):
                    state = None
            if state is not None and head > after:  # (events the checkpoint does not reflect yet: placed from it)
                for event in self.tx.read_goal(goal_id, after_version=after):
                    state = place(state, event.kind)
            self._rules[goal_id] = state

    def next_attempt(self, goal_id: str) -> int | None:
        """The number the goal's next attempt takes, after what this ingest placed (``None``: its attempts are not known)."""
        state = self._rule(goal_id)
        return None if state is None else state.next_number

    def events(self, appends: Iterable[tuple[str, NewEvent, bool, str | None]]) -> list[NewEvent]:
        """``appends`` (goal, event, whether it is an artifact, the attempt it is named into), each as it is to be appended:
        a preflight, launch or post-launch artifact already stored but absent from its attempt is re-keyed to that attempt."""
        appends = list(appends)
        self._read_rules(goal for goal, _, _, _ in appends)
        # (every artifact's: a repeated run joins no attempt, a new one may make the next launch open one)
        wanted = [i for goal, new, artifact, _ in appends if artifact for i in (new.event_id(goal), new.earlier_id(goal)) if i]
        stored = self.tx.events_by_id(wanted) if wanted else {}
        placed: list[NewEvent] = []
        for goal_id, new, artifact, named in appends:
            state = self._rule(goal_id)
            if state is None:
                placed.append(new)  # (attempts not known yet: the same bytes are the stored event, as before attempts)
                continue
            if named is not None and int(named) > state.next_number:
                # (the fold would open it, leaving the numbers between unopened: almost always a typo of the next one)
                raise InvalidAttempt(
                    f"attempt {named}: the next attempt of goal {goal_id} is {state.next_number}, so {named} would skip "
                    f"{_skipped_text(state.next_number, int(named) - 1)}; name {state.next_number} to open it, or an "
                    "attempt the goal has; nothing was written"
                )
            attempt = named if named is not None else state.open
            held = self._held(goal_id, state, attempt)
            repeated = artifact and self._repeated(goal_id, new, stored)
            if repeated and new.kind in REOBSERVED and attempt is not None and new.kind not in held and new.source_sha256:
                new = dataclasses.replace(new, source_sha256=canonical.attempt_source_sha256(new.source_sha256, attempt))
                repeated = self._repeated(goal_id, new, self.tx.events_by_id([new.event_id(goal_id)]))
            if not repeated:
                self._rules[goal_id] = place(state, new.kind) if named is None else place_named(state, new.kind, named)
                if attempt is not None and attempt != self._rules[goal_id].open:
                    self._earlier_held[(goal_id, attempt)] = held | {new.kind}
                self._seen.add(new.event_id(goal_id))
            placed.append(new)
        return placed

    def _held(self, goal_id: str, state: Attempts, attempt: str | None) -> frozenset[str]:
        """The lifecycle kinds ``attempt`` holds: the open one's (the rule's), none for one a name opens, an earlier one's
        as its ``attempt-evidence`` row names them (read once an ingest)."""
        if attempt is None or attempt == state.open:
            return state.held
        if int(attempt) >= state.next_number:
            return frozenset()
        if (goal_id, attempt) not in self._earlier_held:
            row = self.tx.projection_row_of_goals([goal_id], ATTEMPT_EVIDENCE, attempt).get(goal_id)
            try:
                kinds = frozenset(evidence_refs(json.loads(row["payload"])["latest"])) if row is not None and row["payload"] else frozenset()
            except (ValueError, KeyError, TypeError, CheckpointUnusable):
                kinds = frozenset()  # (a row that does not read: as an attempt holding nothing, its bytes observed anew)
            self._earlier_held[(goal_id, attempt)] = kinds
        return self._earlier_held[(goal_id, attempt)]


    def _repeated(self, goal_id: str, new: NewEvent, stored: Mapping[str, StoredEvent]) -> bool:
        """Whether ``new`` is stored (under its id, or an older ledger's content-only id as this very observation) or placed here already."""
        own, earlier = new.event_id(goal_id), new.earlier_id(goal_id)
        if own in stored or own in self._seen:
            return True
        return earlier is not None and earlier in stored and new.same_observation(stored[earlier])


def _skipped_text(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"
