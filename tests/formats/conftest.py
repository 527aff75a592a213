"""Fixtures of the format tests: the oracle venv (surt, cdxj-indexer), as the indexing tests
use it."""

from tests.indexing.conftest import oracle

__all__ = ["oracle"]
