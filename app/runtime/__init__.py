"""Running the platform: ``harvestflow up``, its workers, Airflow's processes and DAG runs."""
