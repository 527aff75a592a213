"""The continuous crawl's pool and queue: its own (``crawl_continuous``), created by `harvestflow
up` and listened to by the workers, never a slot of the selective harvests' ``crawl_high``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from app.runtime.airflow_commands import pools
from app.runtime.workers import all_queues
from harvestflow.settings import PROJECT_ROOT, load

DAGS = PROJECT_ROOT / "dags"


def _load(path: Path) -> ModuleType:
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    spec = importlib.util.spec_from_file_location(f"conttest_{path.stem}", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_continuous_crawl_runs_on_its_own_pool_and_queue_not_crawl_high() -> None:
    crawl = _load(DAGS / "continuous_crawl.py").dag.get_task("crawl")
    assert (crawl.pool, crawl.queue) == ("crawl_continuous", "crawl_continuous")
    high, low = load(environ={}).crawl_pools
    assert crawl.pool not in (high, low)


def test_up_creates_the_continuous_pool_and_workers_listen_to_its_queue(tmp_path: Path) -> None:
    settings = load(environ={"HARVESTFLOW_DATA_DIR": str(tmp_path)})
    assert pools(settings) == {"crawl_high": 2, "crawl_low": 1, "crawl_continuous": 1}
    assert "crawl_continuous" in all_queues(settings)
    env = {"HARVESTFLOW_AIRFLOW__CONTINUOUS_POOL": "news", "HARVESTFLOW_DATA_DIR": str(tmp_path)}
    renamed = load(environ=env)
    assert pools(renamed)["news"] == 1 and "news" in all_queues(renamed)
    hf_common = _load(DAGS / "hf_common.py")
    assert hf_common.continuous_pool(env) == "news"
