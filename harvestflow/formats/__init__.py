"""Formats the whole platform shares, owned once: SURT and URL forms, CDX/CDXJ lines, crawl.log
lines, the sanitising of server-controlled values written into line-oriented files, and the
vocabularies stored as numbers or words (job status, stop reasons, Heritrix fetch status codes,
harvest channels: one enum each, so SQL and Python never hold a bare status number).

This package is part of the core: stage libraries (crawler, indexing, harvest, qa, preservation)
import it; it imports none of them.
"""
