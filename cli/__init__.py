"""benchledger's command line: parsing and printing only; rules live in projections/, storage in ledger/."""

from benchledger._layers import refuse_bare_name

refuse_bare_name(__name__)
