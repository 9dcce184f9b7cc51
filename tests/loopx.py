"""Where LoopX 0.4.8, the reference benchledger answers as, is found: never at an assumed path.

``$BENCHLEDGER_LOOPX`` names its executable; otherwise ``loopx`` on ``PATH``.
The tests that run it live skip with :data:`MISSING` when neither gives one
(``.ci/run`` installs it in a venv of its own and sets the variable, so CI
runs them); the recording scripts and the benchmarks find it the same way.
"""

from __future__ import annotations

import os
import shutil
import subprocess

ENV = "BENCHLEDGER_LOOPX"
VERSION = "0.4.8"
MISSING = (
    f"LoopX {VERSION} not found: set {ENV} to its executable or put loopx on PATH "
    f"(python3 -m venv /tmp/loopx && /tmp/loopx/bin/pip install loopx=={VERSION})"
)


def loopx_executable() -> str | None:
    """LoopX's executable (``$BENCHLEDGER_LOOPX``, else ``loopx`` on PATH), or None when there is neither.

    One that is found must be LoopX 0.4.8: another version answers differently,
    and a named one that cannot be run is an error, not an absence.
    """
    found = os.environ.get(ENV) or shutil.which("loopx")
    if not found:
        return None
    try:
        answer = subprocess.run([found, "--version"], capture_output=True, text=True, timeout=60)
    except OSError as error:
        raise RuntimeError(f"cannot run LoopX at {found} ({ENV}): {error.strerror}") from error
    if answer.stdout.split() != ["loopx", VERSION]:
        raise RuntimeError(f"{found} is not LoopX {VERSION} (--version: {(answer.stdout or answer.stderr).strip()!r}); set {ENV}")
    return found


def require_loopx() -> str:
    """LoopX's executable for a recording script, which stops with :data:`MISSING` when there is none."""
    found = loopx_executable()
    if found is None:
        raise SystemExit(MISSING)
    return found
