"""Integrity checks over stored events: hashes, chains, versions, positions, heads, digest;
and of a goal's stored row counts against its rows.

Pure over what it is given (events in position order and the stream heads), so
the same checks run on any backend and on an export file. The projection part
of ``benchledger audit`` lives in the service room (``ledger.service.maintenance``: it needs the reducers).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from benchledger.errors import InvalidInput
from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.event_records import StoredEvent


@dataclass(frozen=True)
class Problem:
    kind: str
    goal_id: str | None
    position: int | None
    detail: str

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "goal_id": self.goal_id, "position": self.position, "detail": self.detail}


@dataclass
class ChainReport:
    events_checked: int = 0
    goals: set[str] = field(default_factory=set)
    digest: str = ""
    problems: list[Problem] = field(default_factory=list)
    # Whether the history has the expected digest (``None``: none was expected).
    expected_digest_verified: bool | None = None


def format_digest(last_position: int, running: str) -> str:
    """A digest names how much history it covers: ``<last position>:<running hash>``."""
    return f"{last_position}:{running}"


class InvalidDigest(InvalidInput, ValueError):
    """An ``--expect-digest`` value that is not a digest ``audit`` prints."""


# What ``format_digest`` prints: a position no ledger can exceed (a BIGINT), canonical
# decimal (no sign, no leading zero), then the running SHA-256 in lower-case hex.
_DIGEST = re.compile(r"(0|[1-9][0-9]{0,18}):([0-9a-f]{64})")
_MAX_POSITION = 2**63 - 1


def parse_digest(digest: str) -> tuple[int, str]:
    """``(position, running hash)`` of a digest ``audit`` printed; anything else (empty, truncated,
    upper-case, a position past any ledger's) is a usage error, never a mismatch."""
    match = _DIGEST.fullmatch(digest)
    if match is None or int(match.group(1)) > _MAX_POSITION:
        raise InvalidDigest(f"not a benchledger digest: {digest!r} (expected '<position>:<sha256>' as audit prints it)")
    return int(match.group(1)), match.group(2)


@dataclass(frozen=True, slots=True)
class _Tail:
    """What the chain check keeps of each goal's last event: never its payload (a ledger of many goals stays small)."""

    goal_id: str
    position: int
    stream_version: int
    chain_hash: str
    recorded_at: str


def verify_events(
    ordered_events: Iterable[StoredEvent],
    heads: Iterable[dict[str, Any]],
    *,
    scope_goal: str | None = None,
    expect_digest: str | None = None,
) -> ChainReport:
    """Check every event and every goal chain; compute the digest of the events checked.

    ``ordered_events`` must be in position order. With ``scope_goal`` only that
    goal's events are given, so global gap checks are skipped, and the digest
    is the goal's: it counts stream versions, not positions (docs/hash-chain.md
    §4), so it stays the same in a ledger that holds the goal alone, after an
    ``export --goal`` and ``import-ndjson``. With ``expect_digest`` the running
    digest at the digest's position (or version) must match: the earlier
    history is unchanged, whatever was appended after it.
    """
    report = ChainReport()
    running = canonical.GENESIS_HASH
    last_position = 0
    covered = 0  # what the digest counts: the last position, or the goal's last version
    expected_position, expected_running = parse_digest(expect_digest) if expect_digest is not None else (None, None)
    digest_checked = expected_position == 0 and expected_running == canonical.GENESIS_HASH
    tails: dict[str, _Tail] = {}

    def problem(kind: str, event: StoredEvent | _Tail | None, detail: str, goal_id: str | None = None) -> None:
        report.problems.append(
            Problem(kind, event.goal_id if event else goal_id, event.position if event else None, detail)
        )

    for event in ordered_events:
        report.events_checked += 1
        report.goals.add(event.goal_id)
        if scope_goal is None and event.position != last_position + 1:
            problem("position_gap", event, f"position {event.position} follows {last_position}")
        if event.position <= last_position:
            problem("position_order", event, f"position {event.position} is not after {last_position}")
        previous = tails.get(event.goal_id)
        # (per goal: a merge, ``benchledger merge``, places a goal recorded elsewhere after events recorded later here)
        if previous is not None and event.recorded_at < previous.recorded_at:
            problem("time_order", event, f"recorded_at {event.recorded_at} is before {previous.recorded_at}, its goal's previous event's")
        last_position = event.position

        if canonical.sha256_hex(event.payload_text) != event.payload_sha256:
            problem("payload_hash", event, "payload does not hash to payload_sha256")
        if event.event_id not in canonical.event_id_forms(event.goal_id, event.kind, event.payload_sha256, event.source_sha256):
            problem("event_id", event, "event_id does not match goal, kind, payload hash (and source hash)")

        expected_version = previous.stream_version + 1 if previous else 1
        if event.stream_version != expected_version:
            problem("version_gap", event, f"stream_version {event.stream_version}, expected {expected_version}")
        expected_prev = previous.chain_hash if previous else canonical.GENESIS_HASH
        if event.prev_hash != expected_prev:
            problem("chain_link", event, "prev_hash is not the previous event's chain hash in this goal")
        recomputed = canonical.chain_hash(
            event.prev_hash,
            goal_id=event.goal_id,
            stream_version=event.stream_version,
            kind=event.kind,
            schema_version=event.schema_version,
            payload_sha256=event.payload_sha256,
            event_id=event.event_id,
            recorded_at=event.recorded_at,
            source=event.source,
            source_sha256=event.source_sha256,
        )
        if recomputed != event.chain_hash:
            problem("chain_hash", event, "chain_hash does not match the event's fields")
        tails[event.goal_id] = _Tail(event.goal_id, event.position, event.stream_version, event.chain_hash, event.recorded_at)

        running = canonical.digest_step(running, event.chain_hash)
        covered = event.position if scope_goal is None else event.stream_version
        if expected_position is not None and covered == expected_position:
            digest_checked = True
            if running != expected_running:
                # The digest covers every event up to here, of every goal in scope: which one differs no
                # digest can tell, so the problem names the two digests and no goal (not this event's).
                report.problems.append(Problem(
                    "digest_mismatch", scope_goal, event.position,
                    f"history up to {_covered_name(scope_goal)} {expected_position} of the {_scope_name(scope_goal)} has digest "
                    f"{format_digest(expected_position, running)}, not the expected {expect_digest}: an event at or before it "
                    "was changed, removed, inserted or reordered (another problem names it where its own hashes no longer match), "
                    "or the digest is another ledger's",
                ))

    if expected_position is not None and not digest_checked:
        report.problems.append(Problem(
            "digest_mismatch", scope_goal, None,
            f"the {_scope_name(scope_goal)} has no event at {_covered_name(scope_goal)} {expected_position}: "
            "history was truncated, or the digest is another ledger's",
        ))
    if expected_position is not None:
        report.expected_digest_verified = digest_checked and not any(p.kind == "digest_mismatch" for p in report.problems)

    for head in heads:
        goal_id = head["goal_id"]
        if scope_goal is not None and goal_id != scope_goal:
            continue
        tail = tails.pop(goal_id, None)
        if tail is None:
            problem("missing_events", None, f"stream head at version {head['last_version']} but no events", goal_id)
        elif (tail.stream_version, tail.chain_hash, tail.position, tail.recorded_at) != (
            head["last_version"],
            head["last_chain_hash"],
            head["last_position"],
            head["last_recorded_at"],  # (`goals` and the report show it as the goal's last activity)
        ):
            problem(
                "head_mismatch",
                tail,
                f"stream head says version {head['last_version']} at position {head['last_position']} recorded {head['last_recorded_at']}, "
                f"last event is version {tail.stream_version} at position {tail.position} recorded {tail.recorded_at}",
            )
    for goal_id, tail in tails.items():
        problem("head_missing", tail, "events without a stream head", goal_id)

    report.digest = format_digest(covered, running)
    return report


def _covered_name(scope_goal: str | None) -> str:
    return "position" if scope_goal is None else "version"


def _scope_name(scope_goal: str | None) -> str:
    return "ledger" if scope_goal is None else f"goal {scope_goal!r}"


def count_problems(goal_id: str, counts: Mapping[str, int], held: Mapping[str, int]) -> list[Problem]:
    """The goal's stored counts per projection (``counts``) that differ from the number of rows it holds (``held``, by projection).

    ``show`` prints the stored counts without counting the rows: a count changed
    outside benchledger (or rows deleted or added beside their count) is named
    here; ``benchledger replay`` recounts.
    """
    return [
        Problem("projection_count_mismatch", goal_id, None, f"{name} holds {held.get(name, 0)} row(s), its stored count says {counts.get(name, 0)}")
        for name in sorted(counts.keys() | held.keys())
        if counts.get(name, 0) != held.get(name, 0)
    ]
