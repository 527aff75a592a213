-- harvestflow harvest database, version 035: watched targets.
--
-- The crawl feed's ``watched`` and ``documentUrlScheme``: official publications found on a
-- watched target are extracted from its crawls as documents (indexing/documents). The scheme
-- is a URL prefix the target's documents start with (W3ACT's "document URL scheme"), or NULL:
-- then only the type of a file (PDF, Word, ODF, EPUB) makes it a document.
ALTER TABLE selection_records ADD COLUMN watched boolean NOT NULL DEFAULT false;
ALTER TABLE selection_records ADD COLUMN document_url_scheme text;
