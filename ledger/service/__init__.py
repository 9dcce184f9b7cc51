"""The service room: ingest, materialization, maintenance (replay, status, audit), reviews, retraction, exchange, LoopX import.

It puts the storage room and the pure projections together; it never imports
``benchledger.ledger.read``'s views.
"""
