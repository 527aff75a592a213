"""Fixtures of the indexing tests: the reference tools (oracles)."""

from tests.support.cdx_oracle import oracle

__all__ = ["oracle"]
