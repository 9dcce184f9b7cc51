"""``fold_jobs.collector_frozen``: what a forked worker inherits is frozen out of its collector's reach, and thawed again
in the parent unless the parent froze objects itself (the command line does)."""

from __future__ import annotations

import gc
import os

import pytest

from benchledger.ledger.service.fold_jobs import collector_frozen

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="workers are forked only where the system can fork")


def _frozen_in_a_child() -> int:
    """How many objects a child forked now finds frozen (it reports through a pipe, then ends)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: no pytest teardown, only the answer)
        os.write(write, str(gc.get_freeze_count()).encode())
        os._exit(0)
    os.close(write)
    answer = int(os.read(read, 64))
    os.close(read)
    os.waitpid(pid, 0)
    return answer


def test_a_worker_forked_inside_inherits_its_objects_frozen_and_the_parent_thaws_them():
    gc.unfreeze()  # (a process that froze nothing, as a library caller's)
    held = [object() for _ in range(1000)]  # noqa: F841 (objects alive at the fork)
    assert _frozen_in_a_child() == 0

    with collector_frozen():
        frozen_inside = gc.get_freeze_count()
        in_the_child = _frozen_in_a_child()

    assert frozen_inside > 0 and in_the_child > 0  # (what the child finds frozen: those, less any it has freed since)
    assert gc.get_freeze_count() == 0  # (the parent's collections see them again)


def test_a_process_that_froze_objects_itself_keeps_them_frozen():
    gc.unfreeze()
    gc.freeze()  # (as the command line freezes what its imports made)
    try:
        before = gc.get_freeze_count()
        with collector_frozen():
            pass
        assert gc.get_freeze_count() >= before > 0
    finally:
        gc.unfreeze()
