"""benchledger: the durable, auditable ledger of agent-benchmark evidence.

The repository keeps its layers as top-level folders; installed, they are the
subpackages of this one import package, and their imports run one way only:

* :mod:`benchledger.cli` – parsing and printing (click);
* :mod:`benchledger.ledger` – persistence and the application service;
* :mod:`benchledger.projections` – pure LoopX semantics: normalizers, reducers, linking rules.

:mod:`benchledger.errors` holds the one error root every layer raises from.
"""

__version__ = "0.1.0"
