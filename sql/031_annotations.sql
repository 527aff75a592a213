-- harvestflow harvest database, version 031: curators' annotations and QA feedback.
-- Owner: harvest.selection.annotations (targets) and harvest.selection.qa_feedback (jobs).

-- A target's annotations (a selection record): why it is in the legal-deposit scope, the
-- licence for open access, free notes. Versioned: every change is a new row with who and when;
-- the newest row of a record is its annotation, the others its history.
CREATE TABLE target_annotations (
    version_id      bigserial PRIMARY KEY,
    record_id       integer NOT NULL REFERENCES selection_records (record_id) ON DELETE CASCADE,
    -- [{"kind": "domain" | "address" | "manual", "text": "..."}]
    scope_evidence  jsonb NOT NULL DEFAULT '[]'::jsonb,
    licence_status  text NOT NULL DEFAULT 'not_requested'
        CHECK (licence_status IN ('not_requested', 'requested', 'granted', 'refused')),
    licence_date    date,
    licence_note    text,
    notes           text,
    changed_by      text NOT NULL,
    changed_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX target_annotations_record ON target_annotations (record_id, version_id);

-- QA feedback on a crawled instance (a job): who wrote what, when; the QA status the comment
-- set (the job's status is the newest one set); and the directives for the next harvest of
-- the selection record it is about (URLs to add, a new budget), applied once by the next
-- selection transfer (pending -> applied, or refused when nothing could be applied).
CREATE TABLE job_qa_comments (
    comment_id       bigserial PRIMARY KEY,
    job_id           bigint NOT NULL REFERENCES jobs (job_id) ON DELETE CASCADE,
    record_id        integer REFERENCES selection_records (record_id) ON DELETE SET NULL,
    author           text NOT NULL,
    written_at       timestamptz NOT NULL DEFAULT now(),
    qa_status        text CHECK (qa_status IN ('not_checked', 'passed', 'issues', 'failed')),
    body             text NOT NULL DEFAULT '',
    add_urls         text[] NOT NULL DEFAULT '{}',
    max_objects      bigint,
    max_bytes        bigint,
    directive_state  text CHECK (directive_state IN ('pending', 'applied', 'refused')),
    applied_at       timestamptz,
    applied_note     text
);
CREATE INDEX job_qa_comments_job ON job_qa_comments (job_id, comment_id);
CREATE INDEX job_qa_comments_record ON job_qa_comments (record_id, comment_id);
CREATE INDEX job_qa_comments_pending ON job_qa_comments (comment_id)
    WHERE directive_state = 'pending';

-- a "raise the budget" directive, applied: the record's own per-domain limits, which replace
-- the selection mapping's budget for its configuration (NULL: the mapping's)
ALTER TABLE selection_records ADD COLUMN max_objects bigint;
ALTER TABLE selection_records ADD COLUMN max_bytes bigint;
