-- harvestflow harvest database, version 030: selection records edited in the browser, and the
-- audit of every write of the curator pages.

-- One row per field a curator changed on a selection record (pages or bulk edit): who, when,
-- the field, the value before and after (as text, as the page shows them). The import writes
-- none: its own report says what a file changed.
CREATE TABLE selection_history (
    change_id    bigserial PRIMARY KEY,
    record_id    integer NOT NULL REFERENCES selection_records (record_id) ON DELETE CASCADE,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    changed_by   text NOT NULL,
    field        text NOT NULL,
    old_value    text,
    new_value    text
);
CREATE INDEX selection_history_record ON selection_history (record_id, change_id);

-- Every write made through the curator pages (selection records, job actions, annotations):
-- who, when, what (an action name), on what (a target such as "record 12" or "job 7"), and
-- the detail (before/after, arguments) as JSON. Rows are never updated nor deleted.
CREATE TABLE audit_log (
    audit_id     bigserial PRIMARY KEY,
    at           timestamptz NOT NULL DEFAULT now(),
    username     text NOT NULL,
    action       text NOT NULL,
    target       text NOT NULL,
    detail       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_target ON audit_log (target, audit_id);
CREATE INDEX audit_log_at ON audit_log (at);
