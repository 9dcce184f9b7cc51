"""From documents to artifacts: kind detection and normalization (what may be stored, the store decides: ledger.storage.guard)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from benchledger.errors import InvalidInput, capped
from benchledger.ledger.service.intake.files import (
    MAX_BATCH_ARTIFACTS,
    MAX_BATCH_BYTES,
    InputFileError,
    SourceDocument,
    read_each_document,
)
from benchledger.ledger.storage.privacy import privacy_rule
from benchledger.projections.artifacts import KINDS, Artifact, IntakeError, NotCompactable
from benchledger.projections.artifacts.kinds import (
    DECLARED_KINDS,
    RESULT_ELSE_RUN,
    detect_kind,
    normalize,
    normalize_result_else_run,
)
from benchledger.projections.runs import LOOPX_RUN_LEDGER_SCHEMA, ROW_IDENTITY_FIELDS, ROW_KIND, row_problems


class KindContradicted(IntakeError):
    """``--kind`` names another kind than the document's own ``schema_version`` (a usage error: exit 2)."""


class UnknownKind(IntakeError):
    """A document whose kind cannot be told: it declares no schema we know and no kind was given for it.

    ``str()`` is the whole refusal, advice included, for the :class:`KindSetting` it was raised for; its parts, for a
    caller that advises by what else it reads (:class:`Census`): ``what`` the document is, ``kinds`` a kind given for it
    could be (none: no kind reads it), ``when`` when one of them would, ``detail`` what it declares and what is known.
    """

    def __init__(self, message: str, *, what: str | None = None, kinds: tuple[str, ...] = (), when: str = "", detail: str = "") -> None:
        super().__init__(message)
        self.what, self.kinds, self.when, self.detail = message if what is None else what, kinds, when, detail


class NotAKind(InvalidInput):
    """A kind given for documents that is none of the artifact kinds (a usage error: exit 2, nothing read or written)."""


def checked_kind(kind: object) -> str | None:
    """``kind`` (``None``: each document's own), refused as :class:`NotAKind` unless it is one of :data:`KINDS`
    (what ``--kind`` offers; the command line refuses another before it gets here: the wording is the library's)."""
    if kind is None or (isinstance(kind, str) and kind in KINDS):
        return kind
    shown = repr(kind) if len(repr(kind)) <= 40 else repr(kind)[:37] + "..."
    raise NotAKind(f"kind {shown} is not an artifact kind; the kinds are: {', '.join(KINDS)} (None: each document's own)")


class RunLedger(UnknownKind):
    """A history to import, not an artifact: a LoopX run ledger (``import-loopx``), a line of ``benchledger export``."""


# What every line of `benchledger export` holds (an event record, or the trailer): never an artifact's fields.
EXPORT_RECORD = frozenset({"event_id", "stream_version", "payload_sha256", "prev_hash", "chain_hash"})


UNKNOWN_KIND = "cannot tell the artifact kind (no known schema_version)"
# The kinds that read a document whatever schema_version it declares, if any: LoopX reads the lifecycle inputs raw and an
# adapter invocation by its keys; every other kind is read only from its own schema (``--kind run`` of another is refused).
SCHEMA_FREE_KINDS = ("preflight", "launch", "post-launch", "adapter-invocation")
# Within a refusal, a value the document gave is shown at most this long.
SHOWN_CHARACTERS = 40


@dataclass(frozen=True)
class KindSetting:
    """How the caller's user gives a kind, so that a refusal says what to change there."""

    given: str  # the kind as the user gave it, ``{kind}`` in place of the kind
    drop: str  # how to stop giving it
    give: str  # how to give one


# ``ingest --kind`` and the library's ``kind`` argument, which reach the same reader: both named, as a refusal of a goal's
# name says how to mean it (``service.ingest.NEW_GOAL_HOW``)
KIND_OPTION = KindSetting("--kind {kind} (library: kind='{kind}')", "drop --kind for it; library: kind=None", "pass --kind (library: kind=...)")
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
    if isinstance(value, dict) and (EXPORT_RECORD <= value.keys() or "benchledger_export" in value):
        # (its event's schema_version would pass it off as that kind: a preflight of nulls, the record's own fields)
        raise RunLedger(
            "this is a line of `benchledger export` (an event with its chain), not an artifact: restore it with "
            "`benchledger import-ndjson FILE` (into an empty ledger) or `benchledger merge FILE`"
        )
    schema = value.get("schema_version") if isinstance(value, dict) else None
    declared = _declared_kind(value)
    if kind is not None and declared is not None and declared != kind:
        raise KindContradicted(
            f"{setting.given.format(kind=kind)} contradicts its schema_version {schema!r}, which is a {declared}; "
            f"a document that declares its kind is stored as that kind ({setting.drop})"
        )
    detected = kind is None
    kind = kind or detect_kind(value)
    if kind is None:
        if isinstance(value, dict) and value.get("schema_version") == LOOPX_RUN_LEDGER_SCHEMA:
            raise RunLedger(
                f"this is a LoopX run ledger ({LOOPX_RUN_LEDGER_SCHEMA}), not an artifact: "
                "bring it in with `benchledger import-loopx FILE --goal GOAL`"
            )
        if isinstance(value, dict) and "schema_version" not in value and not row_problems(value):
            # (saved alone out of its run ledger, it declares nothing: a --kind advised for it would not read it)
            raise RunLedger(
                f"this is a row of a LoopX run ledger (a {ROW_KIND}: {', '.join(ROW_IDENTITY_FIELDS)}), not an artifact: "
                "bring in the run ledger that holds it with `benchledger import-loopx FILE --goal GOAL`"
            )
        raise unknown_kind(value, setting)
    try:
        payload = normalize(kind, value)
    except NotCompactable as exc:
        if detected and kind == RESULT_ELSE_RUN[0]:  # (a detected result that does not compact may be read as its run)
            try:
                return Artifact(*normalize_result_else_run(value), document.sha256, origin=document.source)
            except NotCompactable:
                pass
        unread = f" (its schema_version is {shown_value(schema)}, which benchledger does not read)" if schema is not None and _declared_kind(value) is None else ""
        raise IntakeError(f"not a compactable {kind} artifact" + (f": {exc}" if str(exc) else "") + unread) from exc
    except IntakeError:
        raise
    except Exception as exc:  # the front door never answers with a traceback
        raise IntakeError(f"the {kind} normalizer could not read it ({type(exc).__name__}: {exc})") from exc
    # What may be stored (no local path or secret, finite numbers, ...) the store itself decides: ledger.storage.guard.
    return Artifact(kind, payload, document.sha256, origin=document.source)


def shown_value(value: object) -> str:
    """A value a document gave, as a refusal may quote it: text shortened to :data:`SHOWN_CHARACTERS`, and never text the
    ledger may not keep (a local path, a secret: ``ledger.storage.privacy``), which is only said to be withheld; any
    other JSON value by its type."""
    if not isinstance(value, str):
        return f"a JSON {_json_type(value)}"
    if privacy_rule(value) is not None:
        return "a text withheld here (a local path or a secret)"
    return repr(value if len(value) <= SHOWN_CHARACTERS else value[: SHOWN_CHARACTERS - 3] + "...")


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _family(schema: str) -> str:
    """A schema_version without its version (``benchmark_run_v9``: ``benchmark_run``)."""
    return re.sub(r"_v[0-9]+$", "", schema)


def unknown_kind(value: object, setting: KindSetting = KIND_OPTION) -> UnknownKind:
    """Why ``value`` (whose kind is not detected, none given) cannot be stored, advising a kind only where one would read it.

    * an object without ``schema_version``: any kind may be meant (a lifecycle input carries none): :data:`UNKNOWN_KIND`;
    * an object whose ``schema_version`` is a newer (or older) version of a schema a kind reads only from it
      (``benchmark_run_v9``): no kind reads it, and the refusal says which version is read;
    * an object with another ``schema_version``: a lifecycle input or an adapter invocation may declare one of its own
      (:data:`SCHEMA_FREE_KINDS`); the refusal quotes it (:func:`shown_value`) and lists the schema_versions known;
    * an array: not an object; only an adapter invocation's argv list (strings) is one to read;
    * any other JSON value: not an object, and no kind reads it.
    """
    known = "the schema_versions benchledger knows: " + ", ".join(DECLARED_KINDS)
    if isinstance(value, dict):
        schema = value.get("schema_version")
        if schema is None:
            return _unknown(setting, UNKNOWN_KIND, KINDS)
        if isinstance(schema, str):
            read_only_from = {_family(s): (k, s) for s, k in DECLARED_KINDS.items() if k not in SCHEMA_FREE_KINDS}
            if _family(schema) in read_only_from:
                family_kind, read = read_only_from[_family(schema)]
                what = f"cannot tell the artifact kind: its schema_version {shown_value(schema)} is not one benchledger reads (a {family_kind}'s is {read})"
                return _unknown(setting, what, (), detail=known)
        declared = f"its schema_version, {shown_value(schema)}, is none of {known}"
        return _unknown(setting, UNKNOWN_KIND, SCHEMA_FREE_KINDS, when=", if it is a lifecycle input or an adapter invocation", detail=declared)
    what = f"cannot tell the artifact kind: not a JSON object but a JSON {_json_type(value)} (an artifact is a JSON object)"
    if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
        return _unknown(setting, what, ("adapter-invocation",), when=", if it is an adapter invocation's argv list")
    return _unknown(setting, what, ())


def _unknown(setting: KindSetting, what: str, kinds: tuple[str, ...], *, when: str = "", detail: str = "") -> UnknownKind:
    advice = f"; {setting.give}, one of: {', '.join(kinds)}{when}" if kinds else ""
    return UnknownKind(f"{what}{advice}{_detail(detail)}", what=what, kinds=kinds, when=when, detail=detail)


def _detail(detail: str) -> str:
    return f"; {detail}" if detail else ""


@dataclass(frozen=True)
class Refused:
    """A document (or a file) intake refused: where (``path`` or ``path:line``) and why."""

    source: str
    reason: str


@dataclass
class Census:
    """What reading an ingest's files found besides its artifacts, over all its batches (:func:`read_artifacts`).

    What to advise for a document of unknown kind depends on the whole
    ingest: ``--kind`` would contradict every document that declares another
    kind, so it is advised only when none declares one. ``skip_unknown``
    (``--skip-unknown``): such documents, and LoopX run ledgers, are left out
    and listed in ``skipped`` instead of refused.
    """

    skip_unknown: bool = False
    contradicted: list[str] = field(default_factory=list)  # "source: reason", a usage error once all is read
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (source, why)
    declared: set[str] = field(default_factory=set)  # the kinds documents declared
    unknown: dict[tuple[str, str], UnknownKind] = field(default_factory=dict)  # (source, reason refused with): why
    taken_once: list[tuple[str, str]] = field(default_factory=list)  # (source, what it repeats): left out of its batch

    def advised(self, refusals: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """``refusals`` (``(source, reason)``, in reading order) with each of a document of unknown kind (its reason
        what :func:`read_artifacts` refused it as, noted in ``unknown``) advising only what would take it in with the rest:
        a kind that would read it when no document declares its kind, else --skip-unknown or --include."""
        return [(source, self._advice(self.unknown[source, reason]) if (source, reason) in self.unknown else reason) for source, reason in refusals]

    def _advice(self, why: UnknownKind) -> str:
        if not why.kinds:
            advice = "--skip-unknown leaves it out (listed)"
        elif self.declared:
            advice = (
                "--skip-unknown leaves it out (listed), or --include GLOB reads only the files of folders it matches; "
                f"not --kind, which would contradict the documents that declare their kind ({', '.join(sorted(self.declared))})"
            )
        else:
            advice = f"pass --kind, one of: {', '.join(why.kinds)}{why.when}; or --skip-unknown leaves it out (listed)"
        return f"{why.what}; {advice}{_detail(why.detail)}"

    def refuse_contradicted(self) -> None:
        """Raise :class:`KindContradicted` naming the documents found contradicting ``--kind``."""
        if self.contradicted:
            raise KindContradicted("; ".join(capped(self.contradicted)) + "; nothing was written")


def _declared_kind(value: object) -> str | None:
    schema = value.get("schema_version") if isinstance(value, dict) else None
    return DECLARED_KINDS.get(schema) if isinstance(schema, str) else None


def _over_batch_limit(source: str, artifacts: int, size: int) -> Refused | None:
    """Why a batch may not grow to ``artifacts`` documents of ``size`` bytes in all (the limits of one batch), if it may not."""
    if artifacts > MAX_BATCH_ARTIFACTS:
        return Refused(source, f"the batch holds more than {MAX_BATCH_ARTIFACTS} artifacts, the limit of one batch; split it (ingest --batch-per-directory, ingest-batches)")
    if size > MAX_BATCH_BYTES:
        return Refused(source, f"the batch's documents are more than {MAX_BATCH_BYTES} bytes, the limit of one batch; split it (ingest --batch-per-directory, ingest-batches)")
    return None


def repeated_in_batch(first_source: dict[str, str], source: str, identity: str) -> str | None:
    """What the document at ``source`` repeats when its batch holds it already (its ``identity``, a source hash or an
    event id, is in ``first_source``, each one of the batch and where it was first read), else ``None``, noting it there.

    The same bytes (or, embedded, the same object) twice in one batch is one observation listed twice: the batch's
    reviews would count it twice (a run named twice, a folder and a file in it, a copy), while a later ingest of it
    is a duplicate. It is taken once: files (:func:`read_artifacts`), an ingest-batches line's objects (``service.bulk``)
    and the library's list of artifacts (``Ledger.ingest_artifacts``) alike."""
    earlier = first_source.get(identity)
    if earlier is None:
        first_source[identity] = source
        return None
    return "given twice in this batch" if earlier == source else f"the same document as {earlier} in this batch"


def read_artifacts(files: Iterable[str], kind: str | None, census: Census, *, once: bool = True) -> Iterator[Artifact | Refused]:
    """Each document of ``files`` (one batch) normalized, one at a time as it is read, or why it was refused.

    A document whose schema contradicts ``kind`` is not yielded but noted in
    ``census`` (the caller raises :meth:`Census.refuse_contradicted` once
    everything is read, as that is a usage error). One whose kind cannot be
    told is skipped (``census.skip_unknown``) or refused as what it is (:func:`unknown_kind`),
    which :meth:`Census.advised` completes once everything is read.
    A batch past :data:`MAX_BATCH_ARTIFACTS` documents or :data:`MAX_BATCH_BYTES`
    is refused at the document that passes the limit, and read no further.
    A line of NDJSON that does not parse is refused and the lines after it are read
    on (:func:`read_each_document`): every problem of the file is named at once.
    A document the batch holds already (:func:`repeated_in_batch`: the same bytes named twice, a folder and a file in
    it, a copy) is taken once: left out, and listed in ``census.taken_once`` (``once=False``: every document is
    yielded, for a reader that makes no batch of them).
    """
    count = size = 0
    first_source: dict[str, str] = {}  # (each document's source hash: where the batch read it first)
    for file in files:
        try:
            for document in read_each_document(file):
                # (a line that does not parse is refused and the lines after it are read on; it counts as a document
                # of the batch, which keeps a file of bad lines to as many refusals as a batch holds documents)
                count, size = count + 1, size + (document.size if isinstance(document, SourceDocument) else 0)
                over = _over_batch_limit(document.source, count, size)
                if over is not None:
                    yield over
                    return
                if isinstance(document, InputFileError):
                    yield Refused(document.source, document.reason)
                    continue
                declared = _declared_kind(document.value)
                if declared is not None:
                    census.declared.add(declared)
                try:
                    artifact = to_artifact(document, kind)
                    repeated = repeated_in_batch(first_source, document.source, document.sha256) if once else None
                    if repeated is None:
                        yield artifact
                    else:
                        census.taken_once.append((document.source, repeated))
                except KindContradicted as exc:
                    census.contradicted.append(f"{document.source}: {exc}")
                except UnknownKind as exc:
                    if census.skip_unknown:
                        census.skipped.append((document.source, str(exc) if isinstance(exc, RunLedger) else exc.what))
                    elif isinstance(exc, RunLedger):
                        yield Refused(document.source, f"{exc}; or --skip-unknown leaves it out (listed)")
                    else:
                        census.unknown[document.source, exc.what] = exc
                        yield Refused(document.source, exc.what)
                except IntakeError as exc:
                    yield Refused(document.source, str(exc))
        except IntakeError as exc:
            yield Refused(getattr(exc, "source", file), getattr(exc, "reason", str(exc)))


def collect_artifacts(files: Iterable[str], kind: str | None) -> tuple[list[Artifact], list[str], list[tuple[str, str]]]:
    """Read and normalize every document of ``files`` (:func:`read_artifacts`, all held in memory).

    Returns the artifacts, the source (``path`` or ``path:line``) of each, and
    every refusal as ``(source, reason)``: ingest writes nothing when there is one.
    A ``kind`` that contradicts documents' declared schemas raises
    :class:`KindContradicted` (naming them) once every document is read.
    """
    artifacts: list[Artifact] = []
    errors: list[tuple[str, str]] = []
    census = Census()
    for item in read_artifacts(files, checked_kind(kind), census, once=False):  # (a list to use, no batch yet)
        if isinstance(item, Refused):
            errors.append((item.source, item.reason))
        else:
            artifacts.append(item)
    census.refuse_contradicted()
    return artifacts, [a.origin for a in artifacts], census.advised(errors)
