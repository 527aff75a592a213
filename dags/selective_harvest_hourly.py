"""# Selective harvest — hourly (Airflow DAG)

Harvests the selective definitions made or edited in the curator pages or with
`harvestflow definitions` (their own schedules: every N hours, days, weeks or months, pinned to
a time or a day, or a cron expression) that are due in the hour before the run's date (schedule
`@hourly`), on the high-priority crawl channel. A definition changed in the pages is picked up
at the next hour: the run reads the harvest database, nothing needs a restart. Trigger it by
hand with the `harvest_id` param to harvest one definition now.
"""

from datetime import datetime

from hf_selective import build_selective_harvest

dag = build_selective_harvest(
    dag_id="selective_harvest_hourly",
    frequency="hourly",
    schedule="@hourly",
    doc=__doc__,
    start=datetime(2026, 1, 1),
)
