-- Continuous crawl (issue 10): may the URL's ETag / Last-Modified be sent as a conditional
-- request? Set false (for good) once the validator said "unchanged" while the content or the
-- other validator said "changed": that header would have skipped a changed download.
ALTER TABLE continuous_url_state
    ADD COLUMN etag_trusted boolean NOT NULL DEFAULT true,
    ADD COLUMN lm_trusted boolean NOT NULL DEFAULT true;
