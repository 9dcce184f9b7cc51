"""From documents to artifacts: kind detection and normalization (what may be stored, the store decides: ledger.storage.guard)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from benchledger.errors import capped
from benchledger.ledger.service.intake.files import SourceDocument, read_documents
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import DECLARED_KINDS, detect_kind, normalize
from benchledger.projections.baseline_failure_gate import BASELINE_KINDS
from benchledger.projections.runs import LOOPX_RUN_LEDGER_SCHEMA


class KindContradicted(IntakeError):
    """``--kind`` names another kind than the document's own ``schema_version`` (a usage error: exit 2)."""


@dataclass(frozen=True)
class KindSetting:
    """How the caller's user gives a kind, so that a refusal says what to change there."""

    given: str  # the kind as the user gave it, ``{kind}`` in place of the kind
    drop: str  # how to stop giving it
    give: str  # how to give one


KIND_OPTION = KindSetting("--kind {kind}", "drop --kind for it", "pass --kind")
# ``ingest-batches``: a line's own "kind" field (the command has no --kind)
BATCH_KIND_FIELD = KindSetting('"kind": "{kind}"', 'set the line\'s "kind" to null for it', 'give the line a "kind"')


def to_artifact(document: SourceDocument, kind: str | None, setting: KindSetting = KIND_OPTION) -> Artifact:
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
            f"{setting.given.format(kind=kind)} contradicts its schema_version {schema!r}, which is a {declared}; "
            f"a document that declares its kind is stored as that kind ({setting.drop})"
        )
    detected = kind is None
    kind = kind or detect_kind(value)
    if kind is None:
        if isinstance(value, dict) and value.get("schema_version") == LOOPX_RUN_LEDGER_SCHEMA:
            raise IntakeError(
                f"this is a LoopX run ledger ({LOOPX_RUN_LEDGER_SCHEMA}), not an artifact: "
                "bring it in with `benchledger import-loopx FILE --goal GOAL`"
            )
        raise IntakeError(
            f"cannot tell the artifact kind (no known schema_version); {setting.give}, one of: " + ", ".join(KINDS)
        )
    try:
        payload = normalize(kind, value)
    except NotCompactable as exc:
        if detected and kind == BASELINE_KINDS[0]:
            # A result, else the run it carries (BASELINE_KINDS): LoopX reads an envelope whose
            # benchmark_result does not compact as its run (docs/interop.md), and so does ingest.
            try:
                return Artifact(BASELINE_KINDS[1], normalize(BASELINE_KINDS[1], value), document.sha256, origin=document.source)
            except NotCompactable:
                pass
        raise IntakeError(f"not a compactable {kind} artifact" + (f": {exc}" if str(exc) else "")) from exc
    except IntakeError:
        raise
    except Exception as exc:  # the front door never answers with a traceback
        raise IntakeError(f"the {kind} normalizer could not read it ({type(exc).__name__}: {exc})") from exc
    # What may be stored (no local path or secret, finite numbers, ...) the store itself decides: ledger.storage.guard.
    return Artifact(kind, payload, document.sha256, origin=document.source)


@dataclass(frozen=True)
class Refused:
    """A document (or a file) intake refused: where (``path`` or ``path:line``) and why."""

    source: str
    reason: str


def read_artifacts(files: Iterable[str], kind: str | None, contradicted: list[str]) -> Iterator[Artifact | Refused]:
    """Each document of ``files`` normalized, one at a time as it is read, or why it was refused.

    A document whose schema contradicts ``kind`` is not yielded but added to
    ``contradicted`` (``source: reason``): the caller raises
    :func:`refuse_contradicted` once everything is read, as that is a usage error.
    """
    for file in files:
        try:
            for document in read_documents(file):
                try:
                    yield to_artifact(document, kind)
                except KindContradicted as exc:
                    contradicted.append(f"{document.source}: {exc}")
                except IntakeError as exc:
                    yield Refused(document.source, str(exc))
        except IntakeError as exc:
            yield Refused(getattr(exc, "source", file), getattr(exc, "reason", str(exc)))


def refuse_contradicted(contradicted: list[str]) -> None:
    """Raise :class:`KindContradicted` naming the documents :func:`read_artifacts` found contradicting ``--kind``."""
    if contradicted:
        raise KindContradicted("; ".join(capped(contradicted)) + "; nothing was written")


def collect_artifacts(files: Iterable[str], kind: str | None) -> tuple[list[Artifact], list[str], list[tuple[str, str]]]:
    """Read and normalize every document of ``files`` (:func:`read_artifacts`, all held in memory).

    Returns the artifacts, the source (``path`` or ``path:line``) of each, and
    every refusal as ``(source, reason)``: ingest writes nothing when there is one.
    A ``kind`` that contradicts documents' declared schemas raises
    :class:`KindContradicted` (naming them) once every document is read.
    """
    artifacts: list[Artifact] = []
    errors: list[tuple[str, str]] = []
    contradicted: list[str] = []
    for item in read_artifacts(files, kind, contradicted):
        if isinstance(item, Refused):
            errors.append((item.source, item.reason))
        else:
            artifacts.append(item)
    refuse_contradicted(contradicted)
    return artifacts, [a.origin for a in artifacts], errors
