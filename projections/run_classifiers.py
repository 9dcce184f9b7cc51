"""Derived classifiers over a COMPACTED ``benchmark_run_v0`` (spec common-inputs-part1 §6).

Several reviews judge a run by the same few derived facts: its normalized mode,
the kinds of its trial exceptions and worker-start statuses, whether a
pre-worker startup blocker was recorded, its failure labels, its score-failure
attribution and the evidence that a LoopX-assisted worker actually ran. Each
fact is one small function here so every review reads it the same way.

All functions take the compacted run (at most 3 compacted trials) and never fail
on missing or mistyped fields. Payloads are decoded JSON, so a JSON object is
recognized as a ``dict``: these checks run for every trial and field of every
review, and an ``isinstance`` against the ``Mapping`` ABC costs several times more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from benchledger.projections.artifacts.safe import as_object, is_int

# Substrings of the normalized mode that mark a baseline arm.
BASELINE_MODE_MARKERS = ("hardened-codex", "bare-codex")

# D-EXC exception kinds of ``trials[].exception_type``.
AGENT_SETUP_TIMEOUT = "agent_setup_timeout"
AGENT_TIMEOUT = "agent_timeout"
AGENT_SETUP_FAILURE = "agent_setup_failure"
AGENT_EXCEPTION = "agent_exception"
# Exception texts that mean "no exception happened".
NO_EXCEPTION_TEXTS = frozenset({"none", "null", "no_exception"})

# D-WSS worker-start-status kinds (AGENT_SETUP_FAILURE is shared with D-EXC).
ENVIRONMENT_SETUP_FAILURE = "environment_setup_failure"
WORKER_START_STATUS_KINDS = {
    "pre_worker_agent_setup_failed": AGENT_SETUP_FAILURE,
    "environment_setup_failed_before_worker": ENVIRONMENT_SETUP_FAILURE,
}

# D-STARTUP: the marker value and the fields searched for it.
PRE_WORKER_STARTUP_BLOCKER_RECORDED = "pre_worker_startup_blocker_recorded"
STARTUP_BLOCKER_FIELDS = (
    "worker_bridge_materialization_status",
    "worker_bridge_materialization_blocker",
    "pre_worker_startup_blocker",
    "first_blocker",
    "repeat_blocked_by",
)

# D-LABELS derived labels.
AGENT_SETUP_TIMEOUT_LABEL = "agent_setup_timeout_before_worker_start"
AGENT_SETUP_FAILED_LABEL = "agent_setup_failed_before_worker_start"
AGENT_TIMEOUT_LABEL = "agent_timeout_before_solution_completion"
ENVIRONMENT_SETUP_FAILED_LABEL = "environment_setup_failed_before_worker"
MAX_FAILURE_LABELS = 8

# D-ATTR attributions.
NO_ATTRIBUTION = "none"
AGENT_SETUP_TIMEOUT_SCORE_FAILURE = "agent_setup_timeout_score_failure"
AGENT_SETUP_SCORE_FAILURE = "agent_setup_score_failure"
AGENT_TIMEOUT_SCORE_FAILURE = "agent_timeout_score_failure"


# Runs whose derived facts are held by identity (see per_run); when full, the memory starts over. A run is read
# again by the reviews of its own batch, a few events later: more only keeps payloads a replay has done with
# alive for the collector to walk (512 made replay --jobs 1 4% slower; 32 hits as often).
RECENT_RUNS = 32
_Fact = TypeVar("_Fact")


def per_run(derive: Callable[[Mapping[str, Any]], _Fact]) -> Callable[[Mapping[str, Any]], _Fact]:
    """``derive`` worked out once per run object, while it is among the last :data:`RECENT_RUNS` asked about.

    A fold reviews each run several times (its runner invariants, its attempt
    gate, then its batch's claim review, learning ledger and verifier
    attribution), always the same decoded payload; a payload is never changed
    once decoded (reducers build new objects), so the same object gives the
    same facts. The run is held beside its facts, so its id is not reused
    while they are.
    """
    held: dict[int, tuple[Mapping[str, Any], _Fact]] = {}

    def facts(run: Mapping[str, Any]) -> _Fact:
        known = held.get(id(run))
        if known is not None and known[0] is run:
            return known[1]
        if len(held) >= RECENT_RUNS:
            held.clear()
        value = derive(run)
        held[id(run)] = (run, value)
        return value

    return facts


def _int_or_zero(value: Any) -> int:
    return value if is_int(value) else 0


def _stripped_text(value: Any) -> str | None:
    """The stripped text of a non-blank string, else ``None``."""
    return (value.strip() or None) if isinstance(value, str) else None


def _trials(run: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    trials = run.get("trials")
    if not isinstance(trials, list):
        return []
    return [trial for trial in trials if isinstance(trial, dict)]


def mode_spelling(value: Any) -> str:
    """D-MODE of one value: a text lower-cased with ``_`` → ``-``, anything else empty."""
    return value.lower().replace("_", "-") if isinstance(value, str) else ""


def normalized_mode(run: Mapping[str, Any], field: str = "mode") -> str:
    """D-MODE: ``run[field]`` (``mode`` or ``job_name``) lower-cased with ``_`` → ``-``."""
    return mode_spelling(run.get(field))


def is_baseline_run(run: Mapping[str, Any]) -> bool:
    """A hardened/bare Codex arm (by mode substring) or a run flagged as the hardened-install baseline."""
    mode = normalized_mode(run)
    for marker in BASELINE_MODE_MARKERS:
        if marker in mode:
            return True
    return run.get("hardened_install_baseline") is True


def exception_kind(value: Any) -> str | None:
    """D-EXC: the kind of a trial's ``exception_type``, or ``None``."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if not text:
        return None
    if "setup" in text and "timeout" in text:
        return AGENT_SETUP_TIMEOUT
    if "timeout" in text:
        return AGENT_TIMEOUT
    if "agent" in text and "setup" in text:
        return AGENT_SETUP_FAILURE
    if text not in NO_EXCEPTION_TEXTS:
        return AGENT_EXCEPTION
    return None


def count_exceptions(run: Mapping[str, Any], kind: str) -> int:
    """Number of compacted trials whose exception has D-EXC kind ``kind``."""
    return sum(1 for trial in _trials(run) if exception_kind(trial.get("exception_type")) == kind)


def worker_start_kind(value: Any) -> str | None:
    """D-WSS: the kind of a trial's ``worker_start_status``, or ``None``."""
    return WORKER_START_STATUS_KINDS.get(value.strip()) if isinstance(value, str) else None


def startup_blocker_observed(obj: Any) -> bool:
    """D-STARTUP: did the run (or its ``worker_bridge_outcome``) record a pre-worker startup blocker?"""
    if not isinstance(obj, dict):
        return False
    count = obj.get("worker_startup_blocker_count")
    if is_int(count) and count > 0:
        return True
    # Any one field is enough, so only those the object holds are read (usually none).
    for field in obj.keys() & STARTUP_BLOCKER_FIELDS:
        value = obj[field]
        if not isinstance(value, str):
            continue
        text = value.strip()
        if text == PRE_WORKER_STARTUP_BLOCKER_RECORDED:
            return True
        if field == "pre_worker_startup_blocker" and text and text != NO_ATTRIBUTION:
            return True
    return startup_blocker_observed(obj.get("worker_bridge_outcome"))


def _recorded_labels(run: Mapping[str, Any]) -> list[str]:
    labels = run.get("failure_attribution_labels")
    if not isinstance(labels, list):
        return []
    # Compaction has already turned every label into a public-safe string.
    return [label for label in labels if isinstance(label, str)]


# Slotted, not frozen: one is built per run on every review, and a frozen dataclass pays
# a setattr call per field.
@dataclass(slots=True)
class RunFailure:
    """What a run says about its failure, its trials classified once: the input of D-LABELS and D-ATTR.

    A review that needs both a run's labels and its attribution builds one and
    asks it twice rather than walking the trials again. Only trials give
    worker-start kinds: a run-level ``worker_start_status`` never survives
    compaction, so it is deliberately not consulted.
    """

    recorded_labels: list[str]
    recorded_attribution: str
    # The D-EXC / D-WSS kinds that occur among the trials (``None`` for a trial without one).
    exception_kinds: set[str | None]
    worker_start_kinds: set[str | None]
    startup_blocker: bool

    @classmethod
    def of(cls, run: Mapping[str, Any]) -> RunFailure:
        """The run's failure (one per run object: see :func:`per_run`; nothing changes one once built)."""
        return _run_failure(run)

    @classmethod
    def derive(cls, run: Mapping[str, Any]) -> RunFailure:
        exception_kinds, worker_start_kinds = set(), set()
        for trial in _trials(run):
            exception_kinds.add(exception_kind(trial.get("exception_type")))
            worker_start_kinds.add(worker_start_kind(trial.get("worker_start_status")))
        # Positional, in field order: a keyword call to a class costs several times more.
        return cls(
            _recorded_labels(run),
            _stripped_text(run.get("score_failure_attribution")) or NO_ATTRIBUTION,
            exception_kinds,
            worker_start_kinds,
            startup_blocker_observed(run),
        )

    def labels(self) -> list[str]:
        """D-LABELS: recorded labels plus labels derived from trials, deduplicated, at most 8."""
        exceptions, starts = self.exception_kinds, self.worker_start_kinds
        labels = self.recorded_labels.copy()
        # Derived labels in the reference's order; deduplication keeps each label's first place.
        if AGENT_SETUP_TIMEOUT in exceptions:
            labels.append(AGENT_SETUP_TIMEOUT_LABEL)
        if AGENT_SETUP_FAILURE in exceptions:
            labels.append(AGENT_SETUP_FAILED_LABEL)
        if AGENT_TIMEOUT in exceptions:
            labels.append(AGENT_TIMEOUT_LABEL)
        if AGENT_SETUP_FAILURE in starts:
            labels.append(AGENT_SETUP_FAILED_LABEL)
        if ENVIRONMENT_SETUP_FAILURE in starts:
            labels.append(ENVIRONMENT_SETUP_FAILED_LABEL)
        if self.startup_blocker:
            labels.append(PRE_WORKER_STARTUP_BLOCKER_RECORDED)
        return list(dict.fromkeys(labels))[:MAX_FAILURE_LABELS]

    def attribution(self) -> str:
        """D-ATTR: the recorded attribution, or one derived from trials when it is ``none``."""
        if self.recorded_attribution != NO_ATTRIBUTION:
            return self.recorded_attribution
        exceptions, starts = self.exception_kinds, self.worker_start_kinds
        if AGENT_SETUP_TIMEOUT in exceptions:
            return AGENT_SETUP_TIMEOUT_SCORE_FAILURE
        if (
            AGENT_SETUP_FAILURE in exceptions
            or AGENT_SETUP_FAILURE in starts
            or ENVIRONMENT_SETUP_FAILURE in starts
            or self.startup_blocker
        ):
            return AGENT_SETUP_SCORE_FAILURE
        if AGENT_TIMEOUT in exceptions:
            return AGENT_TIMEOUT_SCORE_FAILURE
        return NO_ATTRIBUTION


_run_failure = per_run(RunFailure.derive)
_labels = per_run(lambda run: tuple(_run_failure(run).labels()))


def failure_labels(run: Mapping[str, Any]) -> list[str]:
    """D-LABELS of a run (see :meth:`RunFailure.labels`)."""
    return list(_labels(run))


def score_failure_attribution(run: Mapping[str, Any]) -> str:
    """D-ATTR of a run (see :meth:`RunFailure.attribution`)."""
    return RunFailure.of(run).attribution()


def treatment_worker_evidence(run: Mapping[str, Any]) -> dict[str, Any]:
    """D-EVIDENCE: did a LoopX-assisted worker demonstrably run? Key order is the payload's."""
    return dict(_worker_evidence(run))  # (a copy: the caller may keep it in its payload)


def _treatment_worker_evidence(run: Mapping[str, Any]) -> dict[str, Any]:
    counters = as_object(run.get("interaction_counters"))
    calls = as_object(counters.get("loopx_cli_calls"))
    observation = as_object(run.get("active_user_observation"))

    run_call_total = run.get("worker_loopx_cli_call_total")
    cli_call_total = run_call_total if is_int(run_call_total) else _int_or_zero(calls.get("total"))
    schema_ok_count = _int_or_zero(run.get("worker_benchmark_run_schema_ok_count"))
    decisions = _int_or_zero(counters.get("controller_action_decisions"))
    heartbeats = _int_or_zero(counters.get("heartbeat_count"))
    state_reads = _int_or_zero(counters.get("loopx_state_reads"))
    state_writes = _int_or_zero(counters.get("loopx_state_writes"))
    controller_present = counters.get("loopx_automation_loop") is True and (
        counters.get("controller_trace_present") is True
        or any(count > 0 for count in (decisions, heartbeats, state_reads, state_writes))
    )
    observed = (
        observation.get("observed_after_worker_start") is True
        or observation.get("worker_observation_proof") is True
    )
    return {
        "worker_loopx_cli_call_total": cli_call_total,
        "worker_benchmark_run_schema_ok_count": schema_ok_count,
        "outer_loopx_controller_present": controller_present,
        "outer_loopx_controller_action_decisions": decisions,
        "outer_loopx_heartbeat_count": heartbeats,
        "loopx_state_reads": state_reads,
        "loopx_state_writes": state_writes,
        "active_user_observed_after_worker_start": observed,
        "present": cli_call_total > 0 or schema_ok_count > 0 or controller_present or observed,
    }


_worker_evidence = per_run(_treatment_worker_evidence)
