"""The one error root of benchledger, and its exit codes.

Every error a user can cause (a bad input, an unknown goal, a database that
cannot be used) is a :class:`BenchledgerError`: ``str()`` is a one-line
message naming the problem, ``exit_code`` the process exit status the command
line ends with. ``benchledger.cli.main`` prints ``benchledger: <message>`` on
stderr and exits with that code, in one place; library callers catch this one
class. Every layer may import this module (it imports nothing of benchledger).

Exit codes (docs/cli.md, "Exit codes", states them for users):

* 0 – ok;
* 1 – a check, audit or gate said no (:data:`CHECK_FAILED`): an audit found
  problems, a review's verdict is not ok, a ``--require-*`` gate refused, an
  ingest or import refused its inputs (each one listed), the ledger refused
  to store an input's content (:class:`InvalidEvent`: too long, not finite, a local path or secret);
* 2 – usage, bad input or an unusable database (:data:`USAGE`);
* 70 – an internal error: a bug in benchledger (:data:`INTERNAL_ERROR`);
* 130 – interrupted (Ctrl-C, :data:`INTERRUPTED`): what committed before stays, the rest was not written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

OK = 0
CHECK_FAILED = 1
USAGE = 2
# sysexits.h's EX_SOFTWARE: "an internal software error has been detected".
INTERNAL_ERROR = 70
# 128 + SIGINT, what a shell reports for a command Ctrl-C stopped.
INTERRUPTED = 130


class BenchledgerError(Exception):
    """An error the user can act on; ``str()`` is its one-line message."""

    exit_code = USAGE


class InvalidInput(BenchledgerError):
    """An argument, a file or a value that benchledger cannot take (nothing was written)."""


class InvalidGoalId(InvalidInput, ValueError):
    """A goal id that cannot name a goal's stream."""


class UnknownGoal(InvalidInput, LookupError):
    """The ledger holds no goal of that id."""

    @classmethod
    def named(cls, goal_id: str, close: Sequence[str] = (), *, names_a_file: bool = False) -> UnknownGoal:
        """The one message every command gives for a goal the ledger does not hold (``close``: goals one typo away;
        ``names_a_file``: ``goal_id`` is the path of a file, a path given for a goal)."""
        suggestion = f"; did you mean {' or '.join(repr(name) for name in close)}?" if close else ""
        path = f"; {goal_id!r} is a file here, not a goal's name" if names_a_file else ""
        return cls(f"no goal {goal_id!r} in this ledger{suggestion}{path} (`benchledger goals` lists them)")


class LedgerUnavailable(BenchledgerError):
    """The database cannot be used: unreachable, not a ledger, unwritable, or at another schema revision."""


class CheckFailed(BenchledgerError):
    """A check or gate said no, as a result rather than a fault."""

    exit_code = CHECK_FAILED


class WorkerDied(BenchledgerError):
    """A worker process of ``replay --jobs`` / ``audit --jobs`` / ``ingest-batches --jobs`` ended abruptly (killed, out of memory); nothing was written."""


class LedgerError(BenchledgerError):
    """Base class of the errors of the ledger's store (raised by ``benchledger.ledger.storage``)."""


class VersionConflict(LedgerError):
    """``expected_version`` did not match the goal's current version."""

    def __init__(self, goal_id: str, expected: int, actual: int) -> None:
        super().__init__(f"goal {goal_id!r} is at version {actual}, not the expected {expected}")
        self.goal_id, self.expected, self.actual = goal_id, expected, actual


class CorruptEvent(LedgerError):
    """A stored event no longer decodes: the database was changed outside benchledger."""


class InconsistentHead(LedgerError):
    """A goal's stream head disagrees with its last event, or is missing: it was changed outside benchledger.

    An append builds on the head (the next version and chain link): it refuses
    rather than write events that would carry the tamper into the immutable chain.
    """

    def __init__(self, goal_id: str, problem: str) -> None:
        super().__init__(
            f"goal {goal_id!r}: {problem} (changed outside benchledger); nothing was written: "
            "`benchledger audit` names the problem, `benchledger replay` rebuilds the heads from the events"
        )
        self.goal_id = goal_id


class InconsistentLog(LedgerError):
    """The Merkle log (docs/proofs.md) disagrees with the events in a way an append cannot build on: changed outside benchledger."""

    def __init__(self, problem: str) -> None:
        super().__init__(
            f"the ledger's Merkle log {problem} (changed outside benchledger); nothing was written: "
            "`benchledger audit` names the problem, `benchledger replay` rebuilds the log from the events"
        )


class InvalidEvent(LedgerError, ValueError):
    """An event's stored columns would not fit the schema (checked alike on every backend).

    Like an ingest that refuses a file, the store refusing an input's content is a check saying no.
    """

    exit_code = CHECK_FAILED


_PASSWORD_IN_URL = re.compile(r"(://[^:/@]*:)[^@/]*@")


def redact_url(url: str) -> str:
    """``url`` with its password (if any) replaced by ``***``: safe to print."""
    return _PASSWORD_IN_URL.sub(r"\1***@", url)


# How many items of a list of problems a message or report shows (the rest are counted).
SHOWN_PROBLEMS = 20


def capped(items: list[str], limit: int = SHOWN_PROBLEMS, *, total: int | None = None) -> list[str]:
    """The first ``limit`` of ``items``, then one line counting the rest: an error list stays readable.

    ``total`` counts the whole list when ``items`` holds only its first part (a reader that stopped listing).
    """
    total = len(items) if total is None else total
    if total <= limit:
        return list(items[:limit])
    return [*items[:limit], f"... and {total - limit} more"]
