-- harvestflow harvest database, version 042: indexes behind the curator overview and the
-- readers' home page.
--
-- The overview lists what needs a person (recent failed jobs, unsent missing URLs, the next
-- harvests, the last preload) and charts 90 days of growth; each of its queries reads a bounded
-- range of one of these indexes, so it answers as fast at 100,000 jobs as at ten.
CREATE INDEX IF NOT EXISTS jobs_status_enddate_idx ON jobs (status, enddate);
CREATE INDEX IF NOT EXISTS historyinfo_time_idx ON historyinfo (harvest_time)
    INCLUDE (harvest_id, objectcount, bytecount);
CREATE INDEX IF NOT EXISTS partialharvests_nextdate_idx ON partialharvests (nextdate);
CREATE INDEX IF NOT EXISTS preload_runs_started_idx ON preload_runs (started_at);
CREATE INDEX IF NOT EXISTS selection_records_warning_idx ON selection_records (modified_at)
    WHERE validation_status = 'warning';
CREATE INDEX IF NOT EXISTS access_missing_urls_unsent_idx ON access_missing_urls (job_id)
    WHERE patch_id IS NULL;
-- the readers' home page: captures and date range of each definition's collection
CREATE INDEX IF NOT EXISTS historyinfo_harvest_time_idx ON historyinfo (harvest_id, harvest_time)
    INCLUDE (objectcount);
