"""StatsD lines as Airflow's client sends them, turned into the series /metrics shows."""

from __future__ import annotations

import time

from statsd import StatsClient

from harvestflow.monitoring.statsd_receiver import StatsdReceiver, StatsdStore
from tests.support.environment import free_port


def _wait_for(store: StatsdStore, n: int) -> dict:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        series = store.snapshot()
        if len(series) >= n:
            return series
        time.sleep(0.05)
    raise AssertionError(f"{n} series not received: {store.snapshot()}")


def test_counters_gauges_and_timers_from_the_statsd_client_become_labelled_series() -> None:
    """Through a real UDP socket from the ``statsd`` client Airflow uses: a counter sampled at
    0.5 counts double, a gauge moves by a delta, a timer is a count and a sum in seconds, and
    InfluxDB tags become labels."""
    store = StatsdStore()
    receiver = StatsdReceiver(store, "127.0.0.1", free_port())
    receiver.start()
    try:
        client = StatsClient("127.0.0.1", receiver.port)
        client._send("airflow.ti.finish,dag_id=d,state=failed:1|c|@0.5")  # sampled as sent
        client.gauge("airflow.pool.open_slots,pool_name=crawl_high", 2)
        client.gauge("airflow.pool.open_slots,pool_name=crawl_high", -1, delta=True)
        client.timing("airflow.task.duration,dag_id=d", 1500)
        client.timing("airflow.task.duration,dag_id=d", 500)
        _wait_for(store, 3)
        time.sleep(0.3)  # the datagrams after the third series' first
        series = store.snapshot()
    finally:
        receiver.stop()
    finish = series[("airflow_ti_finish", (("dag_id", "d"), ("state", "failed")))]
    assert (finish.kind, finish.value) == ("c", 2.0)
    slots = series[("airflow_pool_open_slots", (("pool_name", "crawl_high"),))]
    assert (slots.kind, slots.value) == ("g", 1.0)
    duration = series[("airflow_task_duration", (("dag_id", "d"),))]
    assert (duration.kind, duration.count, duration.value) == ("ms", 2, 2.0)


def test_a_gauge_not_updated_for_its_ttl_goes_and_a_name_keeps_its_first_type() -> None:
    store = StatsdStore(gauge_ttl_s=60)
    store.feed("harvestflow.crawl.running,job=1:1|g\nx:1|c", now=1000.0)
    store.feed("x:5|g", now=1001.0)  # same name, another type: refused
    assert store.dropped == 1
    assert set(store.snapshot(now=1059.0)) == {
        ("harvestflow_crawl_running", (("job", "1"),)),
        ("x", ()),
    }
    assert set(store.snapshot(now=1061.0)) == {("x", ())}  # counters stay


def test_a_datagram_of_garbage_is_counted_never_raised() -> None:
    store = StatsdStore()
    store.feed("\x00\xff:|||\n:1|c\nname:1|c|@zero")
    assert store.dropped == 3 and store.snapshot() == {}
