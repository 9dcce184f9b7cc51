"""Pure reducers: one module per LoopX 0.4.8 review, plus the rules that link events to them.

Every review module exposes the same small surface (see :mod:`projections.review`):

* ``NAME`` – the command name (``review-claim``), ``VERSION`` – bumped whenever
  the reducer's output for the same events changes (stored rows older than
  the code are listed by ``benchledger status`` and rebuilt by ``replay``);
* ``reduce(inputs, options)`` – ``inputs`` maps an artifact kind (see
  ``benchledger.projections.artifacts.KINDS``) to the normalized payloads of that kind, in the
  order they were given; ``options`` holds the command's flags as plain JSON
  values. Returns the review payload. No I/O, no database, no clock;
* ``render_markdown(payload)`` – the reference's markdown view of a payload;
* ``error_payload(message, options)`` – the payload printed when an input is refused.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# command name -> module name; modules are imported lazily so a command only
# pays for the review it runs.
REVIEW_MODULES = {
    "review-claim": "claim_review",
    "learning-ledger": "learning_ledger",
    "attempt-learning-gate": "attempt_learning_gate",
    "review-adapter-kwargs": "adapter_kwargs_review",
    "baseline-failure-gate": "baseline_failure_gate",
    "lifecycle-state": "lifecycle_state",
    "review-verifier-attribution": "verifier_attribution",
    "review-runner-invariants": "runner_invariants",
}


def review_module(name: str) -> ModuleType:
    """Return the reducer module of the review command ``name``."""
    return importlib.import_module(f"benchledger.projections.{REVIEW_MODULES[name]}")
