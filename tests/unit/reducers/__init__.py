"""Each review's reducer (and its stateless command) on compacted inputs: one rule per test."""
