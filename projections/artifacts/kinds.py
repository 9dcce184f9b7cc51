"""The artifact kinds: each one's schema, how it is recognised and how it is normalized.

``normalize(kind, value)`` is the one entry point the review commands and
``benchledger ingest`` share, so a payload stored in the ledger is exactly what
the review would have computed from the file.

* Compacted kinds (run, comparison, result, learning-ledger) go through
  LoopX 0.4.8's compaction; an input it cannot compact raises
  :class:`NotCompactable`.
* ``claim-review`` is only schema-checked (common-inputs.md §6).
* ``preflight``, ``launch`` and ``post-launch`` are read raw by lifecycle-state
  (common-inputs.md §7): what it reads is kept verbatim, every other field
  keeps only its name (``projections.artifacts.lifecycle_records``), so private
  paths in, say, a launch summary's job directory are never stored.
* ``adapter-invocation`` (an argv list, or a kwargs object) is reduced to the
  generated ``loopx_*`` key names the adapter review reads; values are never kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from benchledger.projections.artifacts import KINDS, NotAnObject, NotCompactable
from benchledger.projections.artifacts.adapter_invocation import KEYS_FIELD, invocation_payload, loopx_keys
from benchledger.projections.artifacts.comparison import compact_comparison
from benchledger.projections.artifacts.learning_ledger import compact_learning_ledger
from benchledger.projections.artifacts.lifecycle_records import KEPT_FIELDS, PRINTED
from benchledger.projections.artifacts.result import compact_result

CLAIM_REVIEW_SCHEMA = "benchmark_claim_review_v0"


def _compact_run(value: dict[str, Any]) -> dict[str, Any]:
    # Imported on use: the run compactor is large and only run artifacts need it.
    from benchledger.projections.artifacts.run import compact_run

    return compact_run(value)


def _read_part(value: dict[str, Any], reads: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``value`` that ``reads`` names; other fields keep their name, not their value."""
    kept: dict[str, Any] = {}
    for key, item in value.items():
        if key not in reads:
            kept[key] = None
        elif reads[key] == PRINTED:
            kept[key] = str(item) if isinstance(item, (dict, list)) and item else item
        elif isinstance(reads[key], Mapping) and isinstance(item, dict):
            kept[key] = _read_part(item, reads[key])
        else:
            kept[key] = item
    return kept


def _lifecycle_input(kind: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A raw lifecycle input, reduced to what lifecycle-state reads of it (LoopX never compacts these)."""
    return lambda value: _read_part(value, KEPT_FIELDS[kind])


def _checked_claim_review(value: dict[str, Any]) -> dict[str, Any]:
    """A claim review is accepted as given iff its own top-level schema is exact (no envelope)."""
    if value.get("schema_version") != CLAIM_REVIEW_SCHEMA:
        raise NotCompactable(f"schema_version is not {CLAIM_REVIEW_SCHEMA}")
    return value


def _adapter_invocation(value: Any) -> dict[str, list[str]]:
    """The generated ``loopx_*`` key names of an argv list, or of a kwargs object's keys.

    An already normalized payload (``{"loopx_kwarg_keys": [...]}``) normalizes
    to itself, so stored payloads can be ingested again.
    """
    if isinstance(value, list):
        return invocation_payload(value)
    if isinstance(value, dict):
        if value.keys() == {KEYS_FIELD} and isinstance(value[KEYS_FIELD], list):
            return {KEYS_FIELD: loopx_keys(value[KEYS_FIELD])}
        return {KEYS_FIELD: loopx_keys(value)}
    raise NotAnObject("an adapter invocation must be a JSON argv list or a kwargs object")


@dataclass(frozen=True)
class KindSpec:
    """How one artifact kind is recognised and normalized.

    ``schema`` is the ``schema_version`` its payload carries (``None``: it has
    no fixed one); ``envelope_key`` the key a wrapped artifact of this kind sits
    under; ``objects_only`` whether anything but a JSON object is refused
    before the normalizer sees it.
    """

    normalizer: Callable[[Any], Any]
    schema: str | None = None
    envelope_key: str | None = None
    objects_only: bool = True
    # Other schema_versions a document of this kind declares (LoopX's lifecycle
    # inputs: fixtures and runner outputs name theirs, though LoopX never checks them).
    declared_schemas: tuple[str, ...] = ()


KIND_SPECS: dict[str, KindSpec] = {
    "run": KindSpec(_compact_run, "benchmark_run_v0", "benchmark_run"),
    "comparison": KindSpec(compact_comparison, "benchmark_comparison_v0", "benchmark_comparison"),
    "result": KindSpec(compact_result, "benchmark_result_v0", "benchmark_result"),
    "learning-ledger": KindSpec(
        compact_learning_ledger, "benchmark_learning_ledger_v0", "benchmark_learning_ledger"
    ),
    "claim-review": KindSpec(_checked_claim_review, CLAIM_REVIEW_SCHEMA),
    "preflight": KindSpec(
        _lifecycle_input("preflight"),
        declared_schemas=(
            "benchmark_preflight_v0",
            "benchmark_preflight_envelope_v0",
            "benchmark_preflight_fixture_v0",
            "terminal_bench_managed_preflight_v0",
        ),
    ),
    "launch": KindSpec(
        _lifecycle_input("launch"), declared_schemas=("benchmark_launch_fixture_v0", "terminal_bench_case_run_launch_v0")
    ),
    "post-launch": KindSpec(_lifecycle_input("post-launch"), declared_schemas=("terminal_bench_post_launch_materialization_v0",)),
    "adapter-invocation": KindSpec(_adapter_invocation, objects_only=False),
}

# Kind -> the schema_version its (compacted or checked) payload carries.
KIND_SCHEMAS: dict[str, str] = {kind: spec.schema for kind, spec in KIND_SPECS.items() if spec.schema}
# Every schema_version that names a kind -> that kind (a document declaring one is of that kind).
DECLARED_KINDS: dict[str, str] = {
    schema: kind for kind, spec in KIND_SPECS.items() for schema in ((spec.schema,) if spec.schema else ()) + spec.declared_schemas
}


def normalize(kind: str, value: Any) -> Any:
    """The stored payload of ``value`` as an artifact of ``kind``.

    Raises :class:`NotAnObject` when ``value`` has the wrong JSON type,
    :class:`NotCompactable` when the kind's normalizer refuses it, and
    :class:`~benchledger.projections.artifacts.IntakeError` with the reference's text for other
    refusals (e.g. a comparison whose ``result_refs`` is a number).
    """
    spec = KIND_SPECS.get(kind)
    if spec is None:
        raise ValueError(f"unknown artifact kind {kind!r}; expected one of: {', '.join(KINDS)}")
    if spec.objects_only and not isinstance(value, dict):
        raise NotAnObject(f"a {kind} artifact must be a JSON object")
    return spec.normalizer(value)


def detect_kind(value: Any) -> str | None:
    """The kind a document declares, or ``None`` when it declares none we know.

    A known envelope key holding an object of its kind's schema wins (as in
    compaction), then the top-level ``schema_version`` (:data:`DECLARED_KINDS`,
    the lifecycle inputs' own schemas included). A document that declares no
    known schema (many lifecycle inputs, adapter argv lists) is never guessed.
    """
    if not isinstance(value, Mapping):
        return None
    for kind, spec in KIND_SPECS.items():
        nested = value.get(spec.envelope_key) if spec.envelope_key else None
        if isinstance(nested, Mapping) and nested.get("schema_version") == spec.schema:
            return kind
    schema = value.get("schema_version")
    return DECLARED_KINDS.get(schema) if isinstance(schema, str) else None


# A result, else the run it carries: LoopX reads an envelope whose benchmark_result does not compact as its
# run (docs/interop.md, "A baseline given as an envelope"); baseline-failure-gate and ingest alike.
RESULT_ELSE_RUN = ("result", "run")


def normalize_result_else_run(value: Any) -> tuple[str, Any]:
    """``value`` as a result artifact, else as a run (:data:`RESULT_ELSE_RUN`): ``(kind, payload)``.

    Raises the run's :class:`NotCompactable` when neither compacts.
    """
    try:
        return RESULT_ELSE_RUN[0], normalize(RESULT_ELSE_RUN[0], value)
    except NotCompactable:
        return RESULT_ELSE_RUN[1], normalize(RESULT_ELSE_RUN[1], value)
