-- harvestflow harvest database, version 019: leases shared by every crawler of the cluster.
--
-- host_leases: one politeness per host across all crawler processes, on any worker, in any
-- job. A crawler takes a host's lease (holder, held_until) before a fetch, only when the host's
-- next allowed fetch time has come and nobody holds it (one atomic INSERT … ON CONFLICT … DO
-- UPDATE … WHERE … RETURNING), and gives it back after the fetch with the next allowed time
-- = fetch end + the template's delay. held_until bounds a lease whose crawler died.
CREATE TABLE host_leases (
    host          text PRIMARY KEY,
    next_fetch_at timestamptz NOT NULL,
    holder        text,
    held_until    timestamptz
);

-- job_leases: which crawler runs a job, kept alive by heartbeats from the crawler process
-- itself (not a PID file: the holder may be on another machine). A crawl task starts a crawler
-- only with the job's lease; another worker takes it over once the heartbeats stop
-- (expires_at passed) and resumes the job from its frontier state.
CREATE TABLE job_leases (
    job_id        bigint PRIMARY KEY REFERENCES jobs(job_id) ON DELETE CASCADE,
    holder        text NOT NULL,
    acquired_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at  timestamptz NOT NULL DEFAULT clock_timestamp(),
    expires_at    timestamptz NOT NULL
);
