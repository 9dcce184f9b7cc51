"""LoopX 0.4.8 conformance: the corpus and its recorders, and the tests that hold benchledger to LoopX's payloads and acceptance."""
