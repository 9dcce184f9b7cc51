"""A fold's events built from their rows with the fields set at once (``event_records.row_to_event``) are the
events ``StoredEvent(*row)`` builds: equal, hashed alike, as frozen, their payload decoded alike."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from benchledger.ledger.storage.event_records import StoredEvent, row_to_event
from benchledger.ledger.storage.store import Store
from tests.helpers import invoke

DEMO = sorted(str(p) for p in (Path(__file__).parents[2] / "examples" / "demo").glob("*.json"))


def test_an_event_built_from_its_row_is_the_dataclass_built_one(tmp_path):
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    assert invoke(url, "ingest", "--goal", "g", *DEMO).exit_code == 0
    ledger = Store.open(url)
    try:
        with ledger.transaction() as tx:
            events = tx.read_goal("g")
    finally:
        ledger.close()
    assert events
    for event in events:
        row = dataclasses.astuple(event)
        built, reference = row_to_event(row), StoredEvent(*row)
        assert type(built) is StoredEvent
        assert built == reference and hash(built) == hash(reference) and repr(built) == repr(reference)
        assert built.payload == reference.payload
        with pytest.raises(dataclasses.FrozenInstanceError):
            built.kind = "changed"  # type: ignore[misc]
    with pytest.raises(ValueError):
        row_to_event(dataclasses.astuple(events[0])[:-1])
