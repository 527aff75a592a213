"""Sitemaps are read by default in selective harvests, not in the broad crawl:
the effective template of each selection depth (template file + mapping attributes) says so,
and the crawler's job spec reads the key."""

from __future__ import annotations

from crawler.jobspec import from_dict
from harvest.selection.mapping import load_mapping
from harvest.templates import TEMPLATES_DIR, load_template_file


def _effective(depth: str) -> dict:
    choice = load_mapping().config_for("medium", "monthly", depth)
    _, _, spec = load_template_file(TEMPLATES_DIR / f"{choice.template}.toml")
    return {**spec, **choice.attributes}


def test_selective_depths_read_sitemaps_and_the_snapshot_does_not():
    reached = {d: _effective(d) for d in ("two_clicks", "host", "domain")}
    assert all(spec["extract_sitemaps"] is True for spec in reached.values()), reached
    # a sitemap's pages are two hops away: depths that stop before them leave sitemaps off
    assert _effective("page")["extract_sitemaps"] is False
    assert _effective("one_click")["extract_sitemaps"] is False
    _, _, snapshot = load_template_file(TEMPLATES_DIR / "default_snapshot.toml")
    assert snapshot["extract_sitemaps"] is False
    spec = from_dict({"job_id": 1, "seeds": [], "template": _effective("domain")})
    assert spec.template.extract_sitemaps is True
