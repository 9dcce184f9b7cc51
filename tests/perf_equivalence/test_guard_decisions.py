"""The store's guard decides exactly as it did when tests/data/guard-decisions.json.gz was recorded.

The recording (``python -m tests.record_guard_decisions``) holds the guard's
answers — every problem and its message, per write — on generated writes built
from pieces of every rule's matches and near misses, on every JSON document of
the corpus, and on single texts. The guard's screens are there for speed only:
whatever they skip, the answers must not move.
"""

from __future__ import annotations

import gzip
import json

import pytest

from benchledger.ledger.storage import guard
from benchledger.ledger.storage.privacy import is_credential_field, privacy_rule
from tests.record_guard_decisions import FIXTURE, corpus_case, corpus_digest, decisions


@pytest.fixture(scope="module")
def recorded():
    return json.loads(gzip.decompress(FIXTURE.read_bytes()))


def test_generated_writes_get_the_recorded_answers(recorded):
    cases = recorded["generated"]
    assert sum(1 for case in cases if case["problems"]) > len(cases) // 3  # refusals and clean writes alike
    assert sum(1 for case in cases if not case["problems"]) > len(cases) // 3
    differ = [index for index, case in enumerate(cases) if decisions(case["items"]) != case["problems"]]
    assert not differ, f"{len(differ)} writes decided otherwise, the first: {cases[differ[0]]}"


def test_corpus_documents_get_the_recorded_answers(recorded):
    compared = [case for case in recorded["corpus"] if corpus_digest_or_none(case["path"]) == case["sha256"]]
    assert len(compared) > len(recorded["corpus"]) * 0.9  # (a document changed since the recording is not compared)
    differ = [case["path"] for case in compared if decisions(corpus_case(case["path"])) != case["problems"]]
    assert not differ, differ[:5]


def test_texts_get_the_recorded_answers(recorded):
    differ = [
        (text, value)
        for text, value, rule, credential in recorded["texts"]
        if [privacy_rule(text), is_credential_field(text, value)] != [rule, credential]
    ]
    assert not differ, differ[:5]


def corpus_digest_or_none(path: str) -> str | None:
    try:
        return corpus_digest(path)
    except FileNotFoundError:
        return None


@pytest.mark.parametrize(
    "payload",
    [
        # keys that JSON spells otherwise than str() does (one type a dict: canonical JSON sorts them)
        {True: "/home/alice", False: {"password": "hunter2"}},
        {1.5: {"nan": "x"}, 7.0: "ok", 1e300: "~/x"},
        {"n": {None: "null"}},
        {"a": 'say "token=abcdefghijkl"'},  # a quote inside a string: escaped in the body, the walk screens it
        {"p\u212a": "x", "\u017fk": "ak=1", "task": "sk-0123456789"},  # letters that fold to ASCII ones
        ["/tmp/x", {"k": ["ghp_0123456789abcdef"]}],
        # what only the text as a reader sees it breaks: percent-encoded, fullwidth, with invisible characters
        {"note": "postgresql%3A%2F%2Fadmin%3As3cret%40db", "k\u200b": "%2Fhome%2Falice", "85%": "x"},
        {"pass\u200bword": "hunter2", "p": "\uff54\uff4f\uff4b\uff45\uff4e\uff1aabcdefghijkl", "\u017fk": "ak=1"},
    ],
)
def test_a_payload_screened_twice_gets_the_walks_answer(payload):
    """Once when its texts are new, once when they have been screened before (the second answer comes from the cache)."""
    from benchledger.ledger.storage.canonical import canonical_json
    from benchledger.ledger.storage.guard import payload_problems
    from tests.perf_equivalence.test_intake_fast_paths import refused_places_by_definition

    body = canonical_json(payload)
    first, second = payload_problems(payload, body), payload_problems(payload, body)
    assert first == second
    places = {place for place, problem in first if problem.startswith("holds ")}
    places |= {f"{place} (credential)" for place, problem in first if problem.endswith("[credential-field]")}
    assert places == refused_places_by_definition(payload)


def test_the_cache_of_screened_texts_stays_bounded():

    for start in range(0, guard._SCREENED_CLEAN_LIMIT + 1000, 500):
        payload = [f"text-{n}" for n in range(start, start + 500)]
        assert guard.payload_problems(payload, json.dumps(payload, separators=(",", ":"))) == []
        assert len(guard._SCREENED_CLEAN) <= guard._SCREENED_CLEAN_LIMIT
