"""# Selective harvest — annual (Airflow DAG)

Harvests the curators' selective harvest definitions of frequency **annual** that are due at the
run's date (schedule `@yearly`), on the high-priority crawl channel. Trigger it by hand with the
`harvest_id` param to harvest one definition now; backfilling a past date harvests what was due
then, once (jobs are keyed by definition and run).
"""

from datetime import datetime

from hf_selective import build_selective_harvest

dag = build_selective_harvest(
    dag_id="selective_harvest_annual",
    frequency="annual",
    schedule="@yearly",
    doc=__doc__,
    start=datetime(2026, 1, 1),
)
