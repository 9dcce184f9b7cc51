"""Intake: kind detection and the compactors that turn an input file into what the ledger stores."""
