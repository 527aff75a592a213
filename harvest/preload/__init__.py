"""Broad-crawl preload: sources, normalisation, DNS check, redirect discovery, transfer."""
