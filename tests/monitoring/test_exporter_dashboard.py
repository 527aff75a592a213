"""The Grafana dashboard and the monitoring page name only metrics the code exports, and the
page names every one of them (a renamed metric leaves no panel silently empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from harvestflow.monitoring.push import CRAWL_GAUGES

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs" / "engineers"
NAME = re.compile(r"\bharvestflow_[a-z_]+[a-z]\b")
SOURCES = [
    *(REPO / "harvestflow" / "monitoring").glob("*.py"),
    *REPO.glob("*/gauges.py"),
]


def exported() -> set[str]:
    names = {f"harvestflow_crawl_{g}" for g in CRAWL_GAUGES}
    for path in SOURCES:
        names |= set(re.findall(r'"(harvestflow_[a-z_]+)"', path.read_text()))
    return names


def test_every_metric_of_the_dashboard_is_exported() -> None:
    dash = json.loads((DOCS / "grafana-dashboard.json").read_text())
    used = {n for p in dash["panels"] for t in p["targets"] for n in NAME.findall(t["expr"])}
    assert len(used) >= 10  # the regex found the panels
    assert used - exported() == set()


def test_the_monitoring_page_names_every_exported_metric_and_no_other() -> None:
    page = set(NAME.findall((DOCS / "monitoring.md").read_text()))
    assert exported() - page == set()
    assert page - exported() == set()
