-- Indexing chain, version 004: what the chain needs beyond index_manifest in 001.
-- collection: the sub-chain (per-harvest-definition index) a file was routed to ('' = main);
-- source_deleted_at: when cleanarcrepository removed the job's original WARC.
ALTER TABLE index_manifest ADD COLUMN IF NOT EXISTS collection text NOT NULL DEFAULT '';
ALTER TABLE index_manifest ADD COLUMN IF NOT EXISTS source_deleted_at timestamptz;
ALTER TABLE index_manifest ADD COLUMN IF NOT EXISTS records bigint;
CREATE INDEX IF NOT EXISTS index_manifest_harvest_idx ON index_manifest (harvest_id);
