"""Metric helpers whose boundaries the golden day does not reach."""

from __future__ import annotations

import pytest

from qa.metrics import size_bucket


@pytest.mark.parametrize(
    ("urls", "bucket"),
    [(0, "<10"), (9, "<10"), (10, "10-10000"), (10_000, "10-10000"), (10_001, ">10000")],
)
def test_domain_size_buckets_match_the_broad_crawl_budget(urls: int, bucket: str) -> None:
    # < 10 URLs, 10-10,000, > 10,000 (the BnF broad crawl's budget per domain)
    assert size_bucket(urls) == bucket
