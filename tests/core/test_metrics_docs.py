"""The example alert rules and Grafana dashboard (docs/ops/) parse, and read only metrics that
Engram exports."""

from __future__ import annotations

import json
import re

import pytest
import yaml
from prometheus_client import REGISTRY

from config.env import BASE_DIR
from core.metrics_scrape import ScrapeTime

OPS = BASE_DIR / "docs" / "ops"
# Series a name in an expression may end with, for each metric type.
_SUFFIXES = {
    "counter": ("_total",),
    "histogram": ("_bucket", "_count", "_sum"),
    "gauge": ("",),
    "summary": ("", "_count", "_sum"),
}
_ENGRAM_NAME = re.compile(r"\bengram_[a-z0-9_]+")


def exported() -> set[str]:
    """Every series name a scrape can show: the recorded metrics and the scrape-time ones."""
    families = [*REGISTRY.collect(), *ScrapeTime().collect()]
    return {
        family.name + suffix for family in families for suffix in _SUFFIXES.get(family.type, ("",))
    }


def rule_expressions() -> list[str]:
    rules = yaml.safe_load((OPS / "prometheus-rules.yml").read_text())
    found = [rule["expr"] for group in rules["groups"] for rule in group["rules"]]
    assert all(
        ("record" in rule) != ("alert" in rule)
        for group in rules["groups"]
        for rule in group["rules"]
    )
    return found


def dashboard_expressions() -> list[str]:
    dashboard = json.loads((OPS / "grafana-dashboard.json").read_text())
    assert dashboard["panels"]
    return [target["expr"] for panel in dashboard["panels"] for target in panel["targets"]]


@pytest.mark.django_db  # the scrape-time sources read the database and the broker
def test_rules_and_dashboard_parse_and_read_only_exported_metrics() -> None:
    names = exported()
    expressions = rule_expressions() + dashboard_expressions()
    assert len(expressions) > 20
    referenced = {name for expr in expressions for name in _ENGRAM_NAME.findall(expr)}
    assert referenced, "the examples read Engram's metrics"
    assert sorted(referenced - names) == []


def test_operations_doc_links_both_files() -> None:
    doc = (BASE_DIR / "docs" / "operations.md").read_text()
    assert "(ops/prometheus-rules.yml)" in doc
    assert "(ops/grafana-dashboard.json)" in doc
