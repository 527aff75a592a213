"""NetarchiveSuite's expectation rules, each pinned by a hand-computed example."""

from __future__ import annotations

from harvest.jobgen.expectation import best_history, bytes_per_object, expected_objects
from harvest.jobgen.model import ConfigInfo, HistoryEntry, JobGenSettings

S = JobGenSettings()  # NetarchiveSuite defaults
GB = 1_000_000_000


def cfg(history=(), max_objects=-1, max_bytes=GB) -> ConfigInfo:
    return ConfigInfo(1, "d.test", "t", max_objects, max_bytes, "{}", tuple(history))


def test_no_history_expects_max_domain_size():
    # min(maxDomainSize 5000, unlimited objects) = 5000; byte cap 1e9 // 38000 = 26315
    assert expected_objects(cfg(), S) == 5000


def test_no_history_capped_by_the_object_limit():
    assert expected_objects(cfg(max_objects=100), S) == 100


def test_completed_history_adds_a_tenth_of_the_headroom():
    # 50e6 bytes / 1000 objects = 50000 B/object; max = 1e9 // 50000 = 20000
    # 1000 + (20000 - 1000) / 10 = 2900
    h = [HistoryEntry(1000, 50_000_000, 0)]
    assert expected_objects(cfg(h), S) == 2900


def test_unfinished_history_adds_half_of_the_headroom():
    # stopped on the object limit: 1000 + (20000 - 1000) / 2 = 10500
    h = [HistoryEntry(1000, 50_000_000, 1)]
    assert expected_objects(cfg(h), S) == 10500


def test_small_harvest_with_small_objects_is_not_trusted():
    # 10 objects of 100 B: fewer than 50 objects -> 38000 B/object; max 26315
    # 10 + (26315 - 10) / 10 = 10 + 2630 = 2640
    h = [HistoryEntry(10, 1000, 0)]
    assert bytes_per_object(h[0], S) == 38000
    assert expected_objects(cfg(h), S) == 2640


def test_fifty_objects_are_enough_to_trust_small_objects():
    # 50 objects of 100 B: trusted; max = 1e9 // 100 = 10,000,000
    # 50 + (10,000,000 - 50) / 10 = 1,000,045
    h = [HistoryEntry(50, 5000, 0)]
    assert bytes_per_object(h[0], S) == 100
    assert expected_objects(cfg(h), S) == 1_000_045


def test_best_history_stops_at_the_newest_complete_harvest():
    # newest first: 100 (object limit), 300 (complete), 900 (complete, older: ignored)
    h = (HistoryEntry(100, 1, 1), HistoryEntry(300, 1, 0), HistoryEntry(900, 1, 0))
    assert best_history(h) == HistoryEntry(300, 1, 0)


def test_best_history_keeps_a_larger_unfinished_harvest_newer_than_the_complete_one():
    h = (HistoryEntry(500, 1, 1), HistoryEntry(200, 1, 0))
    assert best_history(h) == HistoryEntry(500, 1, 1)


def test_best_history_without_complete_harvest_is_the_largest():
    h = (HistoryEntry(5, 1, 4), HistoryEntry(70, 1, 6), HistoryEntry(20, 1, 1))
    assert best_history(h) == HistoryEntry(70, 1, 6)


def test_harvest_limits_override_the_configuration_limits():
    # snapshot budget 1000 objects per domain, no history: min(5000, 1000) = 1000
    assert expected_objects(cfg(), S, harvest_max_objects=1000) == 1000
    # harvest byte budget 3,800,000 -> 100 objects of 38000 B
    assert expected_objects(cfg(), S, harvest_max_bytes=3_800_000) == 100


def test_unlimited_configuration_uses_max_domain_size_as_maximum():
    # complete history 1000 objects, no limits at all: max = maxDomainSize 5000
    # 1000 + (5000 - 1000) / 10 = 1400
    h = [HistoryEntry(1000, 38_000_000, 0)]
    assert expected_objects(cfg(h, max_objects=-1, max_bytes=-1), S) == 1400


def test_expectation_never_exceeds_the_maximum():
    # 30000 objects harvested complete, but the byte limit allows only 1e9 // 38000 = 26315
    h = [HistoryEntry(30000, 30000 * 38000, 0)]
    assert expected_objects(cfg(h), S) == 26315


def test_the_configuration_limits_cap_a_larger_harvest_budget():
    # snapshot budget 10000 objects; the configuration allows 1e9 bytes; best harvest complete,
    # 100 objects of 1e7 bytes: maximum 10000 -> 100 + (10000 - 100) / 10 = 1090, but the
    # configuration's own limit is 1e9 // 1e7 = 100 objects: 100
    h = [HistoryEntry(100, 1_000_000_000, 0)]
    assert expected_objects(cfg(h), S, harvest_max_objects=10000) == 100
    # with an object limit of 50 on the configuration: capped at 50
    assert expected_objects(cfg(h, max_objects=50), S, harvest_max_objects=10000) == 50
