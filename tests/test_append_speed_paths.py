"""The append path's shortcuts agree with the definitions they replace (issue 15, store-only append).

* ``canonical.event_id_for`` computes UUIDv5 by hand: it must equal ``uuid.uuid5``;
* ``canonical_json`` reuses one encoder and skips the surrogate search on ASCII text:
  it must equal ``json.dumps`` with the canonical options, lone surrogates escaped;
* ``NewEvent`` remembers its ids per goal: each must be the id computed afresh.
"""

from __future__ import annotations

import json
import re
import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from benchledger.ledger import canonical
from benchledger.ledger.append import NewEvent

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
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | json_texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(json_texts, children, max_size=4),
    max_leaves=15,
)


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
