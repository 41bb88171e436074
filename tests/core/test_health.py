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
    assert set(components) == {"database", "migrations", "redis", "broker", "embeddings"}
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


@pytest.mark.parametrize(
    ("version", "supported"),
    [
        ("0.8.0", True),
        ("0.8.1", True),
        ("0.10.0", True),
        ("1.0", True),
        ("0.8", True),
        ("0.7.4", False),
        ("0.7.99", False),
        ("0.5.1", False),
        ("0", False),
        ("", False),
        ("dev", False),
    ],
)
def test_pgvector_versions_compare_as_numbers(version: str, supported: bool) -> None:
    assert health.pgvector_version_supported(version) is supported


def test_readyz_fails_on_pgvector_older_than_0_8(monkeypatch, client) -> None:
    monkeypatch.setattr(health, "_pgvector_version", lambda: "0.7.4")
    response = client.get("/readyz")
    assert response.status_code == 503
    database = response.json()["components"]["database"]
    assert database["ok"] is False
    assert database["pgvector"] == "0.7.4"
    assert "older than 0.8.0" in database["error"]


def test_the_real_server_has_a_supported_pgvector() -> None:
    version = health._pgvector_version()
    assert version is not None
    assert health.pgvector_version_supported(version)
    assert health._check_database() == {"ok": True, "pgvector": version}


def test_readyz_is_503_while_migrations_are_pending(client, monkeypatch) -> None:
    from django.db.migrations.executor import MigrationExecutor

    monkeypatch.setattr(health, "_migrated", [])
    monkeypatch.setattr(MigrationExecutor, "migration_plan", lambda self, targets: [("m", False)])
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["components"]["migrations"]["error"] == "1 migrations not applied"
