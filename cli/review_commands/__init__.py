"""One module per review command; each defines ``command`` (a click command)."""

# Order of the commands in ``benchledger benchmark --help``.
MODULES = (
    "claim_review",
    "learning_ledger",
    "attempt_learning_gate",
    "adapter_kwargs_review",
    "baseline_failure_gate",
    "lifecycle_state",
    "verifier_attribution",
    "runner_invariants",
)
