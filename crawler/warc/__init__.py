"""WARC output: the records of a fetch, the rolling files, metadata records, redaction."""
