"""Artifact intake: reading compact JSON artifacts and normalizing them.

Everything in this package is pure (no database, no clock). The normalizers
reproduce LoopX 0.4.8's compaction, so the payload stored in an event is
exactly what the reviews consume. Ingest and the review commands share them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from benchledger.errors import InvalidInput


class IntakeError(InvalidInput, ValueError):
    """An input could not be read or normalized; ``str()`` is the reference's error text."""


class NotAnObject(IntakeError):
    """The JSON document is not of the shape the kind expects (usually: not an object)."""


class NotCompactable(IntakeError):
    """The document is an object but the kind's normalizer cannot compact it."""


@dataclass(frozen=True)
class Artifact:
    """One normalized compact artifact, ready to become one event.

    ``kind`` is one of :data:`KINDS`; ``payload`` is the normalized document the
    reviews read; ``source_sha256`` is the SHA-256 of the original bytes (kept as
    provenance instead of the bytes themselves); ``role`` names the slot the
    artifact filled in a review command (e.g. ``baseline``), when it matters;
    ``origin`` says where it was read from (a file, ``file:line``), for messages.
    """

    kind: str
    payload: Any
    source_sha256: str | None = None
    role: str | None = None
    origin: str | None = None


# Kind names as users type them (``--kind``) and as events record them.
KINDS = (
    "run",
    "comparison",
    "result",
    "learning-ledger",
    "claim-review",
    "preflight",
    "launch",
    "post-launch",
    "adapter-invocation",
)
