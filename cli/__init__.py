"""benchledger's command line: parsing and printing only; rules live in projections/, storage in ledger/."""
