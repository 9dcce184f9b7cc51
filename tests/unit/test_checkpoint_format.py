"""A stored checkpoint is never trusted: whatever its payload holds, reading it gives its fields or says it is unusable.

An ingest resumes from the checkpoint row only when ``checkpoint_fields``
reads it; anything else it raises would escape the ingest's fallback (fold the
goal from its first event) and stop the ingest with an internal error.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from benchledger.projections.attempts import Attempts
from benchledger.projections.catalog import LIFECYCLE_KINDS
from benchledger.projections.checkpoint import (
    CheckpointUnusable,
    checkpoint_attempts,
    checkpoint_fields,
    checkpoint_last_attempt,
    checkpoint_payload,
    checkpoint_references,
)

GOOD = checkpoint_payload(7, {"run": (5, ("event_id", "e5")), "comparison": (7, ("batch_id", "b7"))}, ["e2"])

# the checkpoint's own field names, so that generated payloads come close to well-formed ones
KEYS = st.sampled_from(["event_id", "batch_id", "stream_version", "schema_version", "latest"]) | st.text(max_size=12)
json_scalars = st.none() | st.booleans() | st.integers(-3, 10) | st.text(max_size=4)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=8)


def test_a_checkpoint_reads_back_as_written():
    assert checkpoint_fields(GOOD) == (7, {"run": (5, ("event_id", "e5")), "comparison": (7, ("batch_id", "b7"))}, {"e2"})
    assert checkpoint_references(GOOD) == ["e5", "b7"]


@pytest.mark.parametrize(
    "evidence",
    [{"event_id": "e1"}, {"batch_id": "b1"}, {"stream_version": 0, "event_id": "e1"}, {"stream_version": True, "event_id": "e1"}, {"stream_version": 3, "event_id": 4}, "e1", None],
)
def test_malformed_evidence_is_unusable_not_a_crash(evidence: Any):
    tampered = {**GOOD, "latest": {"run": evidence}}
    with pytest.raises(CheckpointUnusable):
        checkpoint_fields(tampered)
    assert checkpoint_references(tampered) == []


@given(kind=st.sampled_from(LIFECYCLE_KINDS), evidence=json_values, retracted=json_values, stream_version=json_values)
def test_any_tampered_checkpoint_is_read_or_refused(kind: str, evidence: Any, retracted: Any, stream_version: Any):
    for tampered in (
        {**GOOD, "latest": {kind: evidence}},
        {**GOOD, "retracted": retracted},
        {**GOOD, "stream_version": stream_version},
        evidence,
    ):
        try:
            checkpoint_fields(tampered)
        except CheckpointUnusable:
            pass


def test_where_the_attempt_rule_stands_reads_back_as_written():
    written = Attempts("3", frozenset({"preflight", "launch"}), 4, 3)
    assert checkpoint_attempts(checkpoint_payload(7, {}, [], written)) == written
    assert checkpoint_attempts(GOOD) == Attempts()


@given(entry=json_values, field=st.sampled_from(["open", "held", "next_number", "count"]), value=json_values)
def test_a_tampered_attempt_is_read_or_refused(entry: Any, field: str, value: Any):
    for tampered in ({**GOOD, "attempt": entry}, {**GOOD, "attempt": {**GOOD["attempt"], field: value}}):
        try:
            checkpoint_attempts(tampered)
        except CheckpointUnusable:
            pass


def test_the_attempt_a_batch_named_last_reads_back_as_written():
    written = Attempts("3", frozenset({"launch"}), 4, 3)
    named = checkpoint_payload(7, {}, [], written, last="1")
    assert (checkpoint_attempts(named), checkpoint_last_attempt(named)) == (written, "1")
    assert checkpoint_last_attempt(checkpoint_payload(7, {}, [], written)) is None
    assert "last" not in GOOD["attempt"]  # (a goal whose batches name no attempt keeps the checkpoint it had)


@given(value=json_values)
def test_a_tampered_last_attempt_is_read_or_refused(value: Any):
    tampered = {**GOOD, "attempt": {**GOOD["attempt"], "last": value}}
    try:
        checkpoint_attempts(tampered)
        assert checkpoint_last_attempt(tampered) in (None, value)
    except CheckpointUnusable:
        pass
