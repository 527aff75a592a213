-- The Airflow task instance that crawled a job (dag_id, run_id, task_id, map_index), so the
-- curator views can link a job to its task log. Written by the crawl task when it starts.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS airflow_task jsonb;
