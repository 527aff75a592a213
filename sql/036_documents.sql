-- harvestflow harvest database, version 036: documents of watched targets, owned by
-- the indexing stage's document step (indexing/documents).

-- One row per document payload (its WARC-Payload-Digest): the same PDF at two URLs or in two
-- crawls is one document with several captures. ``broken`` says why its own metadata could
-- not be read (NULL: read); ``state`` moves new -> available (replayed by the access service,
-- same digest) -> catalogued | rejected (a curator's decision).
CREATE TABLE documents (
    document_id     bigserial PRIMARY KEY,
    digest          text NOT NULL UNIQUE,
    record_id       integer,                  -- the watched selection record (target)
    kind            text NOT NULL,            -- pdf | word | odf | epub | other
    mime            text NOT NULL DEFAULT '',
    url             text NOT NULL,            -- the first capture's URL
    captured_at     timestamptz NOT NULL,     -- and time
    size            bigint,
    landing_url     text,                     -- the target's HTML page linking to it
    landing_captured_at timestamptz,
    link_text       text,
    title           text,
    authors         text[] NOT NULL DEFAULT '{}',
    published       text,                     -- as found: a year, a date
    language        text,
    isbn            text,
    issn            text,
    doi             text,
    sources         jsonb NOT NULL DEFAULT '{}',  -- {"document": {...}, "landing": {...}}
    broken          text,
    state           text NOT NULL DEFAULT 'new'
                    CHECK (state IN ('new', 'available', 'catalogued', 'rejected')),
    checked_at      timestamptz,              -- the last availability check
    check_detail    text,                     -- what it found
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_record ON documents (record_id, document_id);
CREATE INDEX documents_state ON documents (state);

-- Where each document was captured (a response or revisit record of a watched job's WARC). No
-- foreign key: a revisit's file may be read before the file of the payload it points to.
CREATE TABLE document_captures (
    file_name    text NOT NULL,
    "offset"     bigint NOT NULL,
    digest       text NOT NULL,
    url          text NOT NULL,
    captured_at  timestamptz NOT NULL,
    job_id       bigint,
    PRIMARY KEY (file_name, "offset")
);
CREATE INDEX document_captures_digest ON document_captures (digest);
CREATE INDEX document_captures_url ON document_captures (url);

-- The HTML pages of watched jobs and their links: where landing pages are found. ``meta`` is
-- the page's own metadata (title, citation_*, Dublin Core, schema.org JSON-LD).
CREATE TABLE document_pages (
    file_name    text NOT NULL,
    "offset"     bigint NOT NULL,
    url          text NOT NULL,
    captured_at  timestamptz NOT NULL,
    job_id       bigint,
    meta         jsonb NOT NULL DEFAULT '{}',
    links        integer NOT NULL DEFAULT 0,  -- links to documents found on it (a listing: many)
    PRIMARY KEY (file_name, "offset")
);
CREATE TABLE document_links (
    file_name    text NOT NULL,
    "offset"     bigint NOT NULL,             -- the page's record
    target_url   text NOT NULL,
    link_text    text NOT NULL DEFAULT '',
    PRIMARY KEY (file_name, "offset", target_url)
);
CREATE INDEX document_links_target ON document_links (target_url);

-- The step's progress per WARC (restartable: a file done is not read again; a killed run
-- resumes after the last batch written).
CREATE TABLE document_files (
    file_name      text PRIMARY KEY,
    job_id         bigint,
    resume_offset  bigint NOT NULL DEFAULT -1,
    done           boolean NOT NULL DEFAULT false,
    counts         jsonb NOT NULL DEFAULT '{}',
    errors         jsonb NOT NULL DEFAULT '[]',
    updated_at     timestamptz NOT NULL DEFAULT now()
);

-- Curators' corrections of a document's metadata and decisions, versioned: one row per change
-- (who, when, the fields as they were and as they became); never updated nor deleted.
CREATE TABLE document_versions (
    version_id   bigserial PRIMARY KEY,
    document_id  bigint NOT NULL REFERENCES documents (document_id) ON DELETE CASCADE,
    changed_at   timestamptz NOT NULL DEFAULT now(),
    changed_by   text NOT NULL,
    action       text NOT NULL,               -- correct | catalogue | reject | available
    before       jsonb NOT NULL DEFAULT '{}',
    after        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX document_versions_document ON document_versions (document_id, version_id);
