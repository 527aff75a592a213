-- harvestflow harvest database, version 020: live control of running crawl jobs.
-- The channel between the curator pages / CLI and a running crawler, which may be on another
-- machine: an operator's action is a row here (pending); the crawler polls the pending rows of
-- its job every few seconds (crawler/control.py), applies the action and marks it applied (or
-- refused) with a message. Rows are never deleted: the table is also the audit of every action
-- on a job (who asked, when, what the crawler did and when).
CREATE TABLE job_actions (
    action_id     bigserial PRIMARY KEY,
    job_id        bigint NOT NULL REFERENCES jobs(job_id),
    action        text NOT NULL CHECK (action IN ('pause', 'resume', 'stop', 'filter', 'limits')),
    arguments     jsonb NOT NULL DEFAULT '{}',     -- filter: kind/pattern/name/save; limits: ...
    requested_by  text NOT NULL,                   -- the Airflow user or the CLI's --user
    requested_at  timestamptz NOT NULL DEFAULT now(),
    state         text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'applied', 'refused')),
    applied_at    timestamptz,                     -- when the crawler applied (or refused) it
    message       text                             -- the crawler's (or the refusal's) words
);
-- the crawler's poll: the pending actions of one job, oldest first
CREATE INDEX job_actions_pending ON job_actions (job_id, action_id) WHERE state = 'pending';
-- the job page's history
CREATE INDEX job_actions_job ON job_actions (job_id, requested_at);

-- a domain of a job stopped by an operator while it still had URLs queued: stop reason 7
-- (harvestflow/formats/stop_reasons.py; 0-6 are NetarchiveSuite's)
ALTER TABLE historyinfo DROP CONSTRAINT historyinfo_stopreason_check;
ALTER TABLE historyinfo ADD CONSTRAINT historyinfo_stopreason_check
    CHECK (stopreason BETWEEN 0 AND 7);
