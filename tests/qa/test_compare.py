"""Comparisons from stored figures: counts add up over days, shares and rates are recomputed;
two runs of a definition are told apart per domain."""

from __future__ import annotations

import pandas as pd

from qa.compare import combine_stats, diff_runs, diff_tables


def test_counts_add_up_and_shares_are_recomputed_not_summed() -> None:
    day1 = [("general", "urls", 10), ("general", "duration_s", 100), ("general", "bytes", 1000),
            ("general", "duplicate_urls", 5), ("general", "urls_per_s", 0.1),
            ("tld", "fr|urls", 6), ("tld", "com|urls", 4), ("tld", "fr|share", 0.6),
            ("top_domains_urls", "a.fr", 6)]  # fmt: skip
    day2 = [("general", "urls", 30), ("general", "duration_s", 100), ("general", "bytes", 3000),
            ("general", "duplicate_urls", 0), ("tld", "fr|urls", 30),
            ("tld", "fr|share", 1.0)]  # fmt: skip
    total = combine_stats(day1 + day2)
    assert total[("general", "urls")] == 40
    assert total[("general", "urls_per_s")] == 0.2  # 40 URLs / 200 s, not 0.1 + ...
    assert total[("general", "duplicate_share")] == 0.125
    assert total[("tld", "fr|share")] == 0.9  # 36 / 40
    assert total[("tld", "com|share")] == 0.1
    assert ("top_domains_urls", "a.fr") not in total


def test_diff_tables_lists_keys_of_either_side() -> None:
    table = diff_tables({("g", "a"): 10.0}, {("g", "a"): 15.0, ("g", "b"): 1.0})
    rows = {r.key: r for r in table.itertuples(index=False)}
    assert rows["a"].change == 5 and rows["a"].change_pct == 50.0
    assert rows["b"].a == 0 and pd.isna(rows["b"].change_pct)  # no base: no percentage


def test_two_runs_grew_shrank_failed_limits_new_gone() -> None:
    cols = ["domain", "objects", "bytes", "stopreason"]
    a = pd.DataFrame([("grow.fr", 100, 1, 0), ("shrink.fr", 100, 1, 0), ("fail.fr", 50, 1, 0),
                      ("limit.fr", 100, 1, 0), ("same.fr", 100, 1, 0), ("gone.fr", 5, 1, 0)],
                     columns=cols)  # fmt: skip
    b = pd.DataFrame([("grow.fr", 150, 1, 0), ("shrink.fr", 50, 1, 0), ("fail.fr", 0, 0, 4),
                      ("limit.fr", 105, 1, 1), ("same.fr", 105, 1, 0), ("new.fr", 3, 1, 0)],
                     columns=cols)  # fmt: skip
    table, groups = diff_runs(a, b, threshold=0.1)
    assert groups == {"grew": ["grow.fr"], "shrank": ["shrink.fr"], "newly_failed": ["fail.fr"],
                      "hit_limits": ["limit.fr"], "new": ["new.fr"], "gone": ["gone.fr"]}  # fmt: skip
    row = table.set_index("domain").loc["limit.fr"]
    assert row["stop_b"] == "object limit" and row["objects_change_pct"] == 5.0
