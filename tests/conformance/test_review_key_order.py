"""The report's review pages show each review's keys in LoopX 0.4.8's order (issue 28 item 9), though the ledger stores them sorted."""

from __future__ import annotations

import json

from benchledger.cli.web import review_fields
from tests.conformance.record_key_order import KEY_ORDER_FILE, expected_payloads, key_orders


def test_the_recorded_key_order_is_what_the_corpus_says():
    """cli/web/review_key_order.json is derived from the corpus (python -m tests.conformance.record_key_order), not kept by hand."""
    assert json.loads(KEY_ORDER_FILE.read_text()) == key_orders()


def _keys_in_order(node: review_fields.Shown) -> list:
    return [(key, _keys_in_order(item)) for key, item in node.items]


def _loopx_order(value) -> list:
    if isinstance(value, dict):
        return [(key, _loopx_order(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [("", _loopx_order(item)) for item in value]
    return []


def test_every_case_stored_sorted_is_shown_in_loopx_order():
    cases = 0
    for review, printed in expected_payloads():
        stored = json.loads(json.dumps(printed, sort_keys=True))  # what the ledger keeps
        assert _keys_in_order(review_fields.shown(review, stored)) == _loopx_order(printed), review
        cases += 1
    assert cases > 400


def test_keys_no_case_showed_follow_sorted():
    shown = review_fields.shown("review-claim", {"zz_new": 1, "aa_new": 2, "task_id": "t", "schema_version": "v"})
    assert [key for key, _ in shown.items] == ["schema_version", "task_id", "aa_new", "zz_new"]
