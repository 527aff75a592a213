"""Celery's configuration for Airflow's CeleryExecutor: Airflow's own, with publishing that
waits for the broker (``[celery] celery_config_options``, set by ``harvestflow up`` and
``harvestflow worker``; app.runtime.airflow_config.publish_env says why).

Not a plugin (no AirflowPlugin here): it sits in the plugins folder because that folder is on
the path of every Airflow process, scheduler and Celery workers alike, and a library of ours may
not import Airflow.
"""

from __future__ import annotations

from typing import Any

from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG

CELERY_CONFIG: dict[str, Any] = {
    **DEFAULT_CELERY_CONFIG,
    # a publish retries the broker's connection without end (Celery's default: 3 tries in under
    # a second, then the executor fails the task); [celery] operation_timeout ends each try
    "task_publish_retry_policy": {
        "max_retries": None,
        "interval_start": 0,
        "interval_step": 0.2,
        "interval_max": 0.5,
    },
}
