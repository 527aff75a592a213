"""The job generators' splitting rules, each pinned by a small hand-checked case."""

from __future__ import annotations

from dataclasses import replace

from harvest.jobgen import default, fixed
from harvest.jobgen.expectation import expected_objects
from harvest.jobgen.model import ConfigInfo, HarvestLimits, HistoryEntry, JobGenSettings

S = JobGenSettings()
SELECTIVE = HarvestLimits(snapshot=False)
GB = 1_000_000_000


def cfg(cid, domain=None, template="t", max_objects=-1, max_bytes=GB, attributes="{}"):
    return ConfigInfo(cid, domain or f"d{cid}.test", template, max_objects, max_bytes, attributes)


def split(configs, limits=SELECTIVE, settings=S):
    return [j.config_ids for j in default.generate(configs, limits, settings)]


def test_same_template_and_limits_share_one_job():
    assert split([cfg(1), cfg(2), cfg(3)]) == [[1, 2, 3]]


def test_templates_and_attributes_are_never_mixed():
    configs = [
        cfg(1, template="a"),
        cfg(2, template="b"),
        cfg(3, template="a"),
        cfg(4, template="a", attributes='{"obey_robots": false}'),
    ]
    # sorted by template, then attributes as text ('{"obey..."' < '{}' in byte order)
    assert split(configs) == [[4], [1, 3], [2]]


def test_a_domain_appears_once_per_job():
    assert split([cfg(1, "x.test"), cfg(2, "x.test")]) == [[1], [2]]


def test_snapshot_jobs_hold_at_most_fixed_domain_count_snapshot():
    settings = replace(S, fixed_domain_count_snapshot=2)
    limits = HarvestLimits(snapshot=True, max_bytes=-1)
    assert split([cfg(i) for i in range(1, 6)], limits, settings) == [[1, 2], [3, 4], [5]]


def test_smaller_byte_limit_starts_a_new_job():
    # sorted by byte limit descending: 1e9 first; 5e8 is below the job's limit
    assert split([cfg(2, max_bytes=GB // 2), cfg(1), cfg(3, max_bytes=GB // 2)]) == [[1], [2, 3]]


def test_a_byte_limit_set_by_a_configuration_must_be_equal():
    # unlimited sorts first and sets no limit; the 5e8 one is below it: two jobs. The 5e8 job's
    # limit comes from its configuration, so nothing but 5e8 may join it.
    assert split([cfg(1, max_bytes=-1), cfg(2, max_bytes=GB // 2)]) == [[1], [2]]


def test_a_byte_limit_set_by_the_harvest_accepts_larger_configuration_limits():
    # snapshot budget 1e8 bytes per domain: 1e9 and 5e8 are both above it -> one job
    limits = HarvestLimits(snapshot=True, max_bytes=100_000_000)
    assert split([cfg(1), cfg(2, max_bytes=GB // 2)], limits) == [[1, 2]]


def test_total_expected_size_closes_the_job():
    # no history: each config expects 5000 objects; 5000 + 5000 <= 10000 < 15000
    settings = replace(S, max_total_size=10000)
    assert split([cfg(1), cfg(2), cfg(3)], settings=settings) == [[1, 2], [3]]


def test_a_single_configuration_above_max_total_size_still_gets_a_job():
    settings = replace(S, max_total_size=100)
    assert split([cfg(1), cfg(2)], settings=settings) == [[1], [2]]


def test_relative_size_difference_over_100_and_absolute_over_2000_splits():
    # expected 5000 and 40: 5000 / 40 = 125 > 100 and 4960 > 2000
    assert split([cfg(1), cfg(2, max_objects=40)]) == [[1], [2]]


def test_relative_size_difference_of_exactly_100_is_accepted():
    # expected 5000 and 50: 5000 / 50 = 100, not over 100
    assert split([cfg(1), cfg(2, max_objects=50)]) == [[1, 2]]


def test_relative_size_difference_is_a_real_ratio_not_an_integer_one():
    # maxDomainSize raised so that no-history expectations are the object limits: 5025 and 50.
    # 5025 / 50 = 100.5 > 100 (NetarchiveSuite divides as float; 5025 // 50 would be 100)
    settings = replace(S, max_domain_size=10000)
    assert split([cfg(1, max_objects=5025), cfg(2, max_objects=50)], settings=settings) == [
        [1],
        [2],
    ]


def test_an_expectation_of_zero_counts_as_one_in_the_ratio():
    # expected 2500 and 0 (object limit 0): spread 2500 > 2000, ratio 2500 / 1 > 100 -> split
    assert split([cfg(1, max_objects=2500), cfg(2, max_objects=0)]) == [[1], [2]]
    # expected 2000 and 0: spread 2000 is not over minAbsoluteSizeDifference -> together
    assert split([cfg(1, max_objects=2000), cfg(2, max_objects=0)]) == [[1, 2]]


def test_small_absolute_difference_is_accepted_whatever_the_ratio():
    # expected 1500 and 10: ratio 150 > 100 but 1490 <= 2000
    assert split([cfg(1, max_objects=1500), cfg(2, max_objects=10)]) == [[1, 2]]


def test_largest_expected_size_comes_first_within_a_job():
    assert split([cfg(1, max_objects=10), cfg(2, max_objects=1500)]) == [[2, 1]]


def test_jobs_never_span_two_chunks():
    settings = replace(S, domain_config_subset_size=2)
    assert split([cfg(1), cfg(2), cfg(3)], settings=settings) == [[1, 2], [3]]


def test_generation_is_lazy_chunk_by_chunk():
    settings = replace(S, domain_config_subset_size=2)
    pulled = []

    def source():
        for i in range(1, 100):
            pulled.append(i)
            yield cfg(i)

    first = next(default.generate(source(), SELECTIVE, settings))
    assert first.config_ids == [1, 2]
    assert len(pulled) <= 3  # only the first chunk (and the look-ahead of one) was read


def test_fixed_generator_groups_by_template_and_limits_and_fills_to_the_count():
    settings = replace(S, fixed_domain_count_snapshot=2)
    limits = HarvestLimits(snapshot=True)
    configs = [cfg(1), cfg(2, max_objects=10), cfg(3), cfg(4), cfg(5, max_objects=10)]
    jobs = [j.config_ids for j in fixed.generate(configs, limits, settings)]
    assert sorted(jobs) == [[1, 3], [2, 5], [4]]


def test_fixed_generator_focused_count_zero_gives_one_configuration_per_job():
    # NetarchiveSuite accepts a configuration while the job holds fewer than the count: with
    # fixedDomainCountFocused 0 (its default) never, so each job has its first configuration only
    configs = [cfg(i) for i in range(1, 4)]
    jobs = [j.config_ids for j in fixed.generate(configs, SELECTIVE, S)]
    assert jobs == [[1], [2], [3]]


def test_fixed_generator_focused_count_fills_selective_jobs():
    settings = replace(S, fixed_domain_count_focused=3)
    configs = [cfg(i) for i in range(1, 8)]
    jobs = [j.config_ids for j in fixed.generate(configs, SELECTIVE, settings)]
    assert jobs == [[1, 2, 3], [4, 5, 6], [7]]


def test_default_generator_snapshot_count_zero_means_no_count_limit():
    # the default generator checks fixedDomainCountSnapshot only when it is above 0
    settings = replace(S, fixed_domain_count_snapshot=0)
    limits = HarvestLimits(snapshot=True, max_bytes=-1)
    assert split([cfg(i) for i in range(1, 6)], limits, settings) == [[1, 2, 3, 4, 5]]


def test_can_accept_refuses_a_larger_limit_when_the_job_limit_came_from_a_configuration():
    job = default.new_job(cfg(1, max_bytes=GB // 2), SELECTIVE, S)
    assert job.config_sets_byte_limit and job.max_bytes_per_domain == GB // 2
    assert not default.can_accept(job, cfg(2, max_bytes=GB), SELECTIVE, S)
    assert default.can_accept(job, cfg(3, max_bytes=GB // 2), SELECTIVE, S)


def test_a_configuration_is_counted_under_the_job_limits_not_the_harvest_ones():
    # Selective harvest (no harvest limits). Both configurations allow 1e9 bytes; cfg 1 also
    # 50000 objects, so the job it starts has limits (50000 objects, 1e9 bytes).
    # cfg 1: complete, 20000 objects of 10000 B: max min(50000, 1e9 / 1e4 = 100000) = 50000,
    #   20000 + (50000 - 20000) / 10 = 23000 (the same in the job).
    # cfg 2: complete, 1000 objects of 10000 B, no object limit:
    #   sorting (its own limits): max 100000, 1000 + 99000 / 10 = 10900
    #   in the job (50000, 1e9): max 50000, 1000 + 49000 / 10 = 5900
    # maxTotalSize 30000: 23000 + 5900 fits (NetarchiveSuite), 23000 + 10900 would not.
    settings = replace(S, max_total_size=30000)
    first = cfg(1, max_objects=50000)
    first.history = (HistoryEntry(20000, 200_000_000, 0),)
    second = cfg(2)
    second.history = (HistoryEntry(1000, 10_000_000, 0),)
    assert expected_objects(first, settings) == 23000
    assert expected_objects(second, settings) == 10900
    assert expected_objects(second, settings, 50000, GB) == 5900
    jobs = list(default.generate([second, first], SELECTIVE, settings))
    assert [j.config_ids for j in jobs] == [[1, 2]]
    assert (jobs[0].total_expected, jobs[0].min_expected, jobs[0].max_expected) == (
        28900,
        5900,
        23000,
    )


def test_fixed_generator_sorts_each_chunk_by_configuration_name_stably():
    # NetarchiveSuite: chunks of domainConfigSubsetSize, each sorted by the configuration's name
    # (ConfigNamesComparator, a stable sort), jobs under construction carried across chunks.
    # Hand-checked, count 2, chunks of 4:
    #   chunk 1: 1 zeta, 2 alpha, 3 mid, 4 alpha -> alpha 2, alpha 4, mid 3, zeta 1 -> [2, 4], [3, 1]
    #   chunk 2: 5 beta, 6 alpha                 -> alpha 6, beta 5               -> [6, 5]
    settings = replace(S, fixed_domain_count_snapshot=2, domain_config_subset_size=4)
    limits = HarvestLimits(snapshot=True)
    names = {1: "zeta", 2: "alpha", 3: "mid", 4: "alpha", 5: "beta", 6: "alpha"}
    configs = [replace(cfg(i), name=n) for i, n in names.items()]
    jobs = [j.config_ids for j in fixed.generate(configs, limits, settings)]
    assert jobs == [[2, 4], [3, 1], [6, 5]]
