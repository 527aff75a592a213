"""# Fixity audit (Airflow DAG)

Daily: re-reads preserved files in every copy (`[s3]` and the `[s3_replica]` second copy) and
compares their SHA-256 and size with the package manifest, the oldest-verified first: at least
`[preservation] audit_share_per_day` of the files (default 0.3 %), and every file last verified
`audit_period_days - 1` days ago (default 365), so each is read within the period. A bad or
missing copy is repaired from a good one (downloaded and checked, uploaded again, re-read) and
the repair is reported; a file bad in every copy goes to the manual queue and the run is red,
its log naming the file, the copies and the expected checksum.

## How to check it's working
1. `harvestflow preservation status` shows the files verified within the period and the last
   audit runs; the curator pages' Preservation page shows the same, and each package's last
   verification.
2. The `audit` task log ends with `fixity audit N: … good …, repaired …, bad in every copy 0`.
3. `harvestflow preservation audit --share 1` reads everything once by hand (same function).
"""

from datetime import timedelta
from typing import Any

from airflow.sdk import DAG, task

from hf_common import dag_args, task_logger

with DAG(
    dag_id="fixity_audit",
    schedule="@daily",
    doc_md=__doc__,
    **dag_args("preservation"),
) as dag:

    @task(
        retries=2,
        retry_delay=timedelta(minutes=10),
        show_return_value_in_logs=False,  # the summary lines stay the last lines
    )
    def audit() -> dict[str, Any]:
        """One audit run; a file bad in every copy fails the task without retry (a person
        must act: the manual queue), after every due file was read."""
        from airflow.sdk.exceptions import AirflowFailException

        from preservation.pipeline import audit as run_audit
        from preservation.pipeline import summary_lines

        result = run_audit()
        for line in summary_lines(result):
            task_logger().info("%s", line)
        if result["status"] == "failed":
            names = "; ".join(n for f in result["failed_files"] for n in f["notes"])
            raise AirflowFailException(
                f"{result['failed']} file(s) bad in every copy, put in the manual queue: {names}"
            )
        return {k: v for k, v in result.items() if isinstance(v, int | float | str)}

    audit()
