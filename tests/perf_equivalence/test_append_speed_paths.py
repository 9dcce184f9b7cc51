"""The append path's shortcuts agree with the definitions they replace.

* ``canonical.event_id_for`` computes UUIDv5 by hand: it must equal ``uuid.uuid5``;
* ``canonical_json`` reuses one encoder and skips the surrogate search on ASCII text:
  it must equal ``json.dumps`` with the canonical options, lone surrogates escaped;
* ``NewEvent`` remembers its ids per goal: each must be the id computed afresh.
"""

from __future__ import annotations

import json
import re
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from benchledger.ledger.storage import canonical
from benchledger.ledger.storage.event_records import NewEvent
from benchledger.ledger.storage.verification import verify_events
from tests import helpers

texts = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=12)
digests = st.text(alphabet="0123456789abcdef", min_size=64, max_size=64)


@settings(max_examples=500)
@given(texts, texts, digests, st.none() | digests)
def test_event_id_is_uuid5_of_the_documented_name(goal_id, kind, payload_sha256, source_sha256):
    name = f"{goal_id}\n{kind}\n{payload_sha256}" + (f"\n{source_sha256}" if source_sha256 else "")
    assert canonical.event_id_for(goal_id, kind, payload_sha256, source_sha256) == str(
        uuid.uuid5(canonical.EVENT_ID_NAMESPACE, name)
    )


# Strings with lone surrogates too (a review command stores none, but reads them as LoopX does).
json_texts = st.lists(st.text(max_size=3) | st.sampled_from(["\ud800", "\udfff", "\U0001f600", "é"]), max_size=3).map(
    "".join
)
json_values = helpers.json_values(json_texts, max_leaves=15)


@settings(max_examples=500)
@given(json_values)
def test_canonical_json_is_the_documented_layout(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = re.sub("[\ud800-\udfff]", lambda m: f"\\u{ord(m.group()):04x}", text)
    assert canonical.canonical_json(value) == expected


@settings(max_examples=200)
@given(st.lists(texts, min_size=1, max_size=3), st.booleans(), st.none() | digests, json_values)
def test_an_event_remembers_the_ids_it_has_in_each_goal(goal_ids, keyed_on_source, source_sha256, payload):
    new = NewEvent("run", payload, source_sha256=source_sha256, keyed_on_source=keyed_on_source)
    digest = canonical.sha256_hex(canonical.canonical_json(payload))
    for _ in range(2):  # (asked again, the answers are the remembered ones)
        for goal_id in goal_ids:
            keyed = keyed_on_source and source_sha256
            assert new.event_id(goal_id) == canonical.event_id_for(
                goal_id, "run", digest, source_sha256 if keyed else None
            )
            assert new.earlier_id(goal_id) == (canonical.event_id_for(goal_id, "run", digest) if keyed else None)


# --- the insert: COPY on PostgreSQL, executemany elsewhere ---------------------------------

TRICKY_TEXTS = ["back\\slash", 'quote " and \\" escaped', "tab\tnew\nline\rreturn", "\\N", "\\.", "é…\U0001f600", ""]


def test_events_are_stored_exactly_as_appended_whatever_their_characters(ledger):
    """Every column of every event reads back as appended (PostgreSQL writes them with COPY's escaped text)."""
    new_events = [
        NewEvent(
            "run", {"text": text, "k\\ey": [text, None]}, text or None, source_sha256="ab" * 32 if index % 2 else None
        )
        for index, text in enumerate(TRICKY_TEXTS)
    ]
    appended = ledger.append("goal-x", new_events, source="ingest \\ x")
    stored = ledger.read_goal("goal-x")
    assert [a.event for a in appended] == stored
    assert [event.payload for event in stored] == [new.payload for new in new_events]
    assert [event.schema_version for event in stored] == [text or None for text in TRICKY_TEXTS]
    assert {event.source for event in stored} == {"ingest \\ x"}
    assert verify_events(ledger.read_all(), ledger.heads()).problems == []  # (the chains hash what was read back)


def test_an_insert_the_database_refuses_is_rolled_back_as_a_database_error(ledger):
    """A refused COPY surfaces as SQLAlchemy's error (as any other statement's does), and nothing is written."""
    ledger.append("goal-x", [NewEvent("run", {"n": 1})], source="test")
    # A constraint added behind the store's back (an append checks its goal's head against the events, so a
    # version taken behind its back is refused before the insert): the same payload in another goal breaks it.
    with ledger.engine.begin() as connection:
        connection.execute(text("CREATE UNIQUE INDEX one_event_per_payload ON events (payload_sha256)"))
    with pytest.raises(IntegrityError):
        ledger.append("goal-y", [NewEvent("run", {"n": 1})], source="test")
    assert ledger.event_count() == 1


def test_events_are_found_by_id_among_more_ids_than_one_query_holds(ledger):
    """PostgreSQL looks ids up in arrays of 10,000, SQLite in IN lists of 500: every stored id is found, once."""
    appended = ledger.append("goal-x", [NewEvent("run", {"n": n}) for n in range(3)], source="test")
    stored_ids = [a.event.event_id for a in appended]
    asked = [str(uuid.UUID(int=n)) for n in range(10_500)]
    asked[10_250:10_250] = stored_ids  # (beyond the first array, and twice)
    found = ledger.events_by_id([*asked, stored_ids[0]])
    assert found == {a.event.event_id: a.event for a in appended}
