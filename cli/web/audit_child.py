"""``benchledger audit`` in a child process: the audit ``serve``'s index shows, and the one ``report`` writes into its index.

The audit folds every event it covers again; in a thread of the process that
renders the pages it held the interpreter they need (a 10^4-event goal's page
took twice as long under ``serve`` while a 10^5-event ledger was being
audited). A child process folds on another core: ``serve`` re-runs it as the
ledger grows (at a lower priority: its pages come first), ``report`` runs it
while it writes every page but the index (:class:`AuditsBeside`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from typing import Any

from benchledger.errors import WorkerDied


class AuditChild:
    """One ``benchledger audit [--goal G] [--history-only] --jobs 1 --format json`` of the ledger at ``url``, started now.

    ``niceness`` lowers the child's priority (``os.setpriority``: 0 normal .. 19 lowest).
    ``history_only``: the history alone, no projection refolded (``report``'s default; ``serve`` runs the full audit).
    The child reads its own snapshot, taken as it starts: what it read is in the
    result (``events_checked``, and the moment in its ``digest``).
    """

    def __init__(self, url: str, goal: str | None = None, *, niceness: int = 0, history_only: bool = False) -> None:
        self.goal = goal
        self._options = ["--history-only"] if history_only else []
        command = [sys.executable, "-m", "benchledger", "audit", "--jobs", "1", "--format", "json", *self._options]
        # (the URL goes in the environment, not the arguments: other users can read a process's arguments)
        self._process = subprocess.Popen(
            command + (["--goal", goal] if goal is not None else []),
            env={**os.environ, "BENCHLEDGER_DATABASE_URL": url}, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        if niceness:
            os.setpriority(os.PRIO_PROCESS, self._process.pid, niceness)

    def result(self) -> dict[str, Any]:
        """What ``audit --format json`` printed (clean or with problems), once the child is done.

        Raises :class:`WorkerDied` naming why when the child printed no audit: it
        failed (its own one-line error, e.g. the database went away) or was killed.
        """
        output, errors = self._process.communicate()
        code = self._process.returncode
        if code in (0, 1):  # clean, or problems found: either way the audit's report
            try:
                return json.loads(output)
            except ValueError:
                pass
        scope = "`" + " ".join(["benchledger audit", *(["--goal", self.goal] if self.goal is not None else []), *self._options]) + "`"
        if code < 0:
            why = f"it was ended by signal {-code}"
        else:
            lines = errors.decode(errors="replace").strip().splitlines()
            why = lines[-1].removeprefix("benchledger: ") if lines else f"it exited with status {code} and printed no audit"
        raise WorkerDied(f"the audit ({scope}, a child process) failed: {why}")

    def kill(self) -> None:
        """End the child now (a no-op once it has ended)."""
        self._process.kill()


class AuditsBeside:
    """The audits a report shows (each goal named, one after another; else the whole ledger's), run beside the page writing.

    ``history_only`` (``report``'s default): each audit checks the history alone (``audit --history-only``).

    The first child is started at once, the others one after another by a
    thread that only waits on them (it holds no interpreter time the pages
    need); :meth:`results` waits for them, :meth:`stop` kills the one running
    and starts no other.
    """

    def __init__(self, url: str, goals: list[str], *, history_only: bool = False) -> None:
        self._url = url
        self._history_only = history_only
        self._goals: list[str | None] = list(goals) or [None]
        self._lock = threading.Lock()
        self._stopped = False
        self._results: list[dict[str, Any]] = []
        self._failure: WorkerDied | None = None
        self._child: AuditChild = self._start(self._goals[0])  # started before the first page is written
        self._thread = threading.Thread(target=self._run, daemon=True, name="benchledger-report-audit")
        self._thread.start()

    def _start(self, goal: str | None) -> AuditChild:
        try:
            return AuditChild(self._url, goal, history_only=self._history_only)
        except OSError as exc:  # no process could be started (too many processes, no memory)
            raise WorkerDied(f"the audit could not be started: {exc.strerror or exc}") from exc

    def _run(self) -> None:
        for goal in self._goals[1:]:
            if not self._collect():
                return
            with self._lock:
                if self._stopped:
                    return
                try:
                    self._child = self._start(goal)
                except WorkerDied as exc:
                    self._failure = exc
                    return
        self._collect()

    def _collect(self) -> bool:
        """Keep the running child's result once it ends; False (its failure kept) when it printed none."""
        try:
            self._results.append(self._child.result())
        except WorkerDied as exc:
            self._failure = exc
            return False
        return True

    def done(self) -> bool:
        """Whether every audit has ended (the report need not wait)."""
        return not self._thread.is_alive()

    def results(self) -> list[dict[str, Any]]:
        """Each audit's ``audit --format json`` result, in the order of the goals; waits for them. Raises :class:`WorkerDied` if one failed."""
        self._thread.join()
        if self._failure is not None:
            raise self._failure
        return self._results

    def stop(self) -> None:
        """End the audit running, start no other, and wait for the thread (the report failed or was interrupted)."""
        with self._lock:
            self._stopped = True
            child = self._child
        child.kill()
        self._thread.join()
