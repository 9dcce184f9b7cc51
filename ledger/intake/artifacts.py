"""From documents to artifacts: kind detection, normalization and ingest's extra guards."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from benchledger.ledger.intake.files import SourceDocument, read_documents
from benchledger.ledger.json_paths import nodes
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import detect_kind, normalize
from benchledger.projections.artifacts.safe import is_public_safe

# Identifier fields that must survive the public-safe filter: an artifact whose
# task or comparison id was a local path or a secret cannot be told apart from
# others, so ingest refuses it instead of storing it anonymised.
IDENTIFIER_FIELDS = ("goal_id", "task_id", "comparison_id")
# The kinds LoopX compacts through the public-safe filter (the others keep identifiers as given).
COMPACTED_KINDS = frozenset({"run", "comparison", "result", "learning-ledger"})


def _source_object(value: dict[str, Any], payload: dict[str, Any]) -> dict[str, Any]:
    """The object the normalizer compacted: ``value`` itself or its envelope's nested artifact."""
    schema = payload.get("schema_version")
    for nested in value.values():
        if isinstance(nested, dict) and schema is not None and nested.get("schema_version") == schema:
            return nested
    return value


def _dropped_identifiers(kind: str, value: Any, payload: Any) -> list[str]:
    if kind not in COMPACTED_KINDS or not isinstance(value, dict) or not isinstance(payload, dict):
        return []
    source = _source_object(value, payload)
    return [
        name
        for name in IDENTIFIER_FIELDS
        if isinstance(source.get(name), str) and source[name].strip() and not payload.get(name)
    ]


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


def to_artifact(document: SourceDocument, kind: str | None) -> Artifact:
    """Normalize one document as ``kind`` (detected when ``None``); refusals raise :class:`IntakeError`."""
    value = document.value
    if kind is None:
        kind = detect_kind(value)
        if kind is None:
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
    dropped = _dropped_identifiers(kind, value, payload)
    if dropped:
        raise IntakeError(
            f"{', '.join(dropped)} is empty after the public-safe filter (it looked like a local path or a secret)"
        )
    artifact = Artifact(kind, payload, document.sha256)
    refuse_unsafe(artifact)
    return artifact


def collect_artifacts(files: Iterable[str], kind: str | None) -> tuple[list[Artifact], list[str], list[tuple[str, str]]]:
    """Read and normalize every document of ``files``.

    Returns the artifacts, the source (``path`` or ``path:line``) of each, and
    every refusal as ``(source, reason)``: ingest writes nothing when there is one.
    """
    artifacts: list[Artifact] = []
    sources: list[str] = []
    errors: list[tuple[str, str]] = []
    for file in files:
        try:
            for document in read_documents(file):
                try:
                    artifacts.append(to_artifact(document, kind))
                    sources.append(document.source)
                except IntakeError as exc:
                    errors.append((document.source, str(exc)))
        except IntakeError as exc:
            source, reason = getattr(exc, "source", file), getattr(exc, "reason", str(exc))
            errors.append((source, reason))
    return artifacts, sources, errors
