from __future__ import annotations

import pytest

from core import health

pytestmark = pytest.mark.django_db


def test_healthz(client) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}


def test_readyz_reports_every_component_green(client) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200, response.json()
    components = response.json()["components"]
    assert set(components) == {"database", "redis", "broker", "embeddings"}
    assert all(c["ok"] for c in components.values())
    assert components["database"]["pgvector"]
    assert components["embeddings"]["dimensions"] == 384


def test_readyz_is_503_when_redis_is_unreachable(client, settings, tmp_path) -> None:
    settings.REDIS_URL = f"unix://{tmp_path}/nothing.sock"
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["components"]["redis"] == {
        "ok": False,
        "error": "ConnectionError",
        "ms": body["components"]["redis"]["ms"],
    }
    assert body["components"]["database"]["ok"]


def test_readyz_names_a_missing_pgvector(monkeypatch, client) -> None:
    monkeypatch.setitem(
        health.CHECKS,
        "database",
        lambda: {"ok": False, "error": "pgvector extension is not installed"},
    )
    response = client.get("/readyz")
    assert response.status_code == 503
    assert (
        response.json()["components"]["database"]["error"] == "pgvector extension is not installed"
    )
