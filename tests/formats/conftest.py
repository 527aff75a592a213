"""Fixtures of the format tests: the oracle venv (surt, cdxj-indexer), as the indexing tests
use it."""

from tests.support.cdx_oracle import oracle

__all__ = ["oracle"]
