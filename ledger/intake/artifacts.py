"""From documents to artifacts: kind detection, normalization and ingest's extra guards."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.errors import capped
from benchledger.ledger.intake.files import SourceDocument, read_documents
from benchledger.ledger.json_paths import nodes
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import DECLARED_KINDS, detect_kind, normalize
from benchledger.projections.artifacts.safe import is_public_safe
from benchledger.projections.runs import LOOPX_RUN_LEDGER_SCHEMA

# Joins the strings of a payload so that one public-safe test covers them all.
# The joined text is public-safe exactly when each string is: no part of
# LOCAL_PATH_PATTERN or SECRET_PATTERN matches a double quote (their character
# classes exclude it, it is not whitespace, it has no case), so no match spans
# two strings; just before a match it passes the tests the start of a string
# passes (it is no word character for \b, neither "<" nor in [a-z0-9_] for the
# look-behinds); and neither pattern tests what follows a match.
_STRING_SEPARATOR = '"'


def _strings_and_keys(payload: Any) -> list[str]:
    """Every string of ``payload``, dictionary keys included (as ``str``), in no particular order."""
    texts: list[str] = []
    containers: list[Any] = [[payload]]
    while containers:
        node = containers.pop()
        if isinstance(node, dict):
            texts.extend(map(str, node))
            node = node.values()
        for child in node:
            if isinstance(child, str):
                texts.append(child)
            elif isinstance(child, (dict, list)):
                containers.append(child)
    return texts


def unsafe_strings(payload: Any, path: str = "") -> list[str]:
    """JSON paths of strings (keys included) that look like a local path or a secret.

    Compaction already drops such text; lifecycle inputs are kept as LoopX reads
    them, so a persisted ledger checks every payload before storing it: the
    ledger never keeps a local path or a secret, whatever the kind.
    """
    # Nearly every payload is safe, which one test of its joined strings shows
    # without building a path for each node.
    if is_public_safe(_STRING_SEPARATOR.join(_strings_and_keys(payload))):
        return []
    return sorted(
        f"{where} (a key)" if is_key else where
        for where, node, is_key in nodes(payload, path or "$")
        if isinstance(node, str) and not is_public_safe(node)
    )


def refuse_unsafe(artifact: Artifact) -> None:
    unsafe = unsafe_strings(artifact.payload)
    if unsafe:
        raise IntakeError(
            f"{', '.join(unsafe)} of this {artifact.kind} looks like a local path or a secret; "
            "the ledger does not store those (remove it, or run the review without --goal)"
        )


class KindContradicted(IntakeError):
    """``--kind`` names another kind than the document's own ``schema_version`` (a usage error: exit 2)."""


def to_artifact(document: SourceDocument, kind: str | None) -> Artifact:
    """Normalize one document as the kind it declares, else as ``kind``; refusals raise :class:`IntakeError`.

    A declared (top-level) schema wins: ``kind`` is for documents that declare
    none we know (lifecycle inputs, adapter invocations), and naming another
    kind for one that does raises :class:`KindContradicted`. What compaction
    drops (LoopX drops a ``comparison_id`` that is a local path) is dropped, as
    LoopX does: the artifact is still one observation of its own, told apart by
    its source hash.
    """
    value = document.value
    schema = value.get("schema_version") if isinstance(value, dict) else None
    declared = DECLARED_KINDS.get(schema) if isinstance(schema, str) else None
    if kind is not None and declared is not None and declared != kind:
        raise KindContradicted(
            f"--kind {kind} contradicts its schema_version {schema!r}, which is a {declared}; "
            "a document that declares its kind is stored as that kind (drop --kind for it)"
        )
    kind = kind or detect_kind(value)
    if kind is None:
        if isinstance(value, dict) and value.get("schema_version") == LOOPX_RUN_LEDGER_SCHEMA:
            raise IntakeError(
                f"this is a LoopX run ledger ({LOOPX_RUN_LEDGER_SCHEMA}), not an artifact: "
                "bring it in with `benchledger import-loopx FILE --goal GOAL`"
            )
        raise IntakeError(
            "cannot tell the artifact kind (no known schema_version); pass --kind, one of: " + ", ".join(KINDS)
        )
    try:
        payload = normalize(kind, value)
    except NotCompactable as exc:
        raise IntakeError(f"not a compactable {kind} artifact" + (f": {exc}" if str(exc) else "")) from exc
    except IntakeError:
        raise
    except Exception as exc:  # the front door never answers with a traceback
        raise IntakeError(f"the {kind} normalizer could not read it ({type(exc).__name__}: {exc})") from exc
    artifact = Artifact(kind, payload, document.sha256)
    refuse_unsafe(artifact)
    return artifact


def collect_artifacts(files: Iterable[str], kind: str | None) -> tuple[list[Artifact], list[str], list[tuple[str, str]]]:
    """Read and normalize every document of ``files``.

    Returns the artifacts, the source (``path`` or ``path:line``) of each, and
    every refusal as ``(source, reason)``: ingest writes nothing when there is one.
    A ``kind`` that contradicts documents' declared schemas raises
    :class:`KindContradicted` (naming them) once every document is read.
    """
    artifacts: list[Artifact] = []
    sources: list[str] = []
    errors: list[tuple[str, str]] = []
    contradicted: list[str] = []
    for file in files:
        try:
            for document in read_documents(file):
                try:
                    artifacts.append(to_artifact(document, kind))
                    sources.append(document.source)
                except KindContradicted as exc:
                    contradicted.append(f"{document.source}: {exc}")
                except IntakeError as exc:
                    errors.append((document.source, str(exc)))
        except IntakeError as exc:
            source, reason = getattr(exc, "source", file), getattr(exc, "reason", str(exc))
            errors.append((source, reason))
    if contradicted:
        raise KindContradicted("; ".join(capped(contradicted)) + "; nothing was written")
    return artifacts, sources, errors
