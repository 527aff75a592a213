"""Formats the whole platform shares, owned once: SURT and URL forms, CDX/CDXJ lines, crawl.log
lines, and the sanitising of server-controlled values written into line-oriented files.

This package is part of the core: stage libraries (crawler, indexing, harvest, qa, preservation)
import it; it imports none of them.
"""
