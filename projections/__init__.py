"""Pure reducers: one module per LoopX 0.4.8 review, plus the rules that link events to them.

Every review module exposes the same small surface (:class:`ReviewModule`):

* ``NAME`` – the command name (``review-claim``), ``VERSION`` – bumped whenever
  the reducer's output for the same events changes (stored rows older than
  the code are listed by ``benchledger status`` and rebuilt by ``replay``);
* ``reduce(inputs, options)`` – ``inputs`` maps an artifact kind (see
  ``benchledger.projections.artifacts.KINDS``) to the normalized payloads of that kind, in the
  order they were given; ``options`` holds the command's flags as plain JSON
  values. Returns the review payload. No I/O, no database, no clock;
* ``DEFAULT_OPTIONS`` – the options of a command given no flags (what a projection is reduced with);
* ``render_markdown(payload)`` – the reference's markdown view of a payload;
* ``error_payload(message, options)`` – the payload printed when an input is refused.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from benchledger._layers import refuse_bare_name

refuse_bare_name(__name__)

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


class ReviewModule(Protocol):
    """The surface every review module exposes (above)."""

    @property
    def NAME(self) -> str: ...

    @property
    def VERSION(self) -> int: ...

    @property
    def DEFAULT_OPTIONS(self) -> Mapping[str, Any]: ...

    def reduce(self, inputs: Mapping[str, Sequence[Any]], options: Mapping[str, Any]) -> dict[str, Any]: ...

    def render_markdown(self, payload: Mapping[str, Any]) -> str: ...

    def error_payload(self, message: str, options: Mapping[str, Any]) -> dict[str, Any]: ...


def review_module(name: str) -> ReviewModule:
    """Return the reducer module of the review command ``name``."""
    # (asked for several times an event by a fold: held once imported, import_module is a dozen dict look-ups)
    module = _IMPORTED.get(name)
    if module is None:
        # (imported by name, which the type checker cannot follow: the list below holds each module to ReviewModule)
        module = _IMPORTED[name] = cast(ReviewModule, importlib.import_module(f"benchledger.projections.{REVIEW_MODULES[name]}"))
    return module


_IMPORTED: dict[str, ReviewModule] = {}


if TYPE_CHECKING:
    from benchledger.projections import (
        adapter_kwargs_review,
        attempt_learning_gate,
        baseline_failure_gate,
        claim_review,
        learning_ledger,
        lifecycle_state,
        runner_invariants,
        verifier_attribution,
    )

    # Every module REVIEW_MODULES names, held to ReviewModule by the type checker (a review added there is added here).
    REVIEWS: tuple[ReviewModule, ...] = (
        adapter_kwargs_review,
        attempt_learning_gate,
        baseline_failure_gate,
        claim_review,
        learning_ledger,
        lifecycle_state,
        runner_invariants,
        verifier_attribution,
    )
