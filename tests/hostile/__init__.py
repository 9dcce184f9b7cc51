"""The hostile-input corpus: hand-made files that a ledger's front door must survive (see README.md)."""
