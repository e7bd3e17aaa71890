"""The test suite: `make unit` runs the tests marked unit, `make test` runs them all (docs/architecture.md)."""
