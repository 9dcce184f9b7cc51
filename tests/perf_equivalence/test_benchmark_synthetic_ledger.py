"""The benchmark's synthetic ledgers are real ledgers: built by the store's own record builder, they audit clean."""

from __future__ import annotations

import pytest

from benchledger.ledger.service.maintenance import audit
from benchledger.ledger.storage.store import Store
from benchmarks import workload
from benchmarks.synthetic_ledger import build_big_ledger, build_templates, clone_goal, verify_goal


@pytest.fixture(scope="module")
def templates():
    return build_templates(workload.load_templates(), count=3, seed=7)


def test_a_clone_in_place_is_the_appended_goal_byte_for_byte(templates):
    """Cloned under its own id, positions and timestamps, a goal reproduces every stored field of the append."""
    for template in templates:
        goal_id = template.events[0].goal_id
        records, _rows, head = clone_goal(
            template, goal_id, [e.position for e in template.events], [e.recorded_at for e in template.events]
        )
        assert records == [e.as_record() for e in template.events]
        assert head["last_chain_hash"] == template.events[-1].chain_hash


def test_a_built_ledger_audits_clean(migrated_url, templates):
    ledger = Store.open(migrated_url)
    try:
        measured, written = build_big_ledger(ledger, templates, target_events=300, measured_template=1, window=4)
        assert written == ledger.event_count() >= 300
        verify_goal(ledger, measured)
        report = audit(ledger)
        assert report["problems"] == []
    finally:
        ledger.close()
