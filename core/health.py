"""Liveness and readiness probes (no authentication: they reveal only component status)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse

logger = logging.getLogger("engram.health")


def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


# Vector search sets hnsw.iterative_scan (rag.search), which pgvector has had since 0.8.0.
PGVECTOR_MIN_VERSION = (0, 8, 0)


def pgvector_version_supported(version: str) -> bool:
    """Whether an installed ``vector`` extension version (``"0.8.0"``) is new enough.

    Compared as numbers, part by part (``"0.10.0"`` is newer than ``"0.8.0"``), up to the first
    part that is not a plain number; a version that does not start with one is not supported.
    """
    parts: list[int] = []
    for piece in version.strip().split("."):
        if not (piece.isascii() and piece.isdigit()):
            break  # "0.8.0-dev" counts as 0.8
        parts.append(int(piece))
    if not parts:
        return False
    padded = tuple(parts) + (0,) * (len(PGVECTOR_MIN_VERSION) - len(parts))
    return padded >= PGVECTOR_MIN_VERSION


def _pgvector_version() -> str | None:
    """The ``vector`` extension's version in Engram's database, or None when not installed."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    return None if row is None else str(row[0])


def _check_database() -> dict[str, object]:
    version = _pgvector_version()
    if version is None:
        return {"ok": False, "error": "pgvector extension is not installed"}
    if not pgvector_version_supported(version):
        minimum = ".".join(map(str, PGVECTOR_MIN_VERSION))
        return {
            "ok": False,
            "pgvector": version,
            "error": f"pgvector {version} is older than {minimum}, which Engram needs: install "
            f"pgvector {minimum} or newer, then run ALTER EXTENSION vector UPDATE",
        }
    return {"ok": True, "pgvector": version}


_migrated: list[bool] = []  # once every migration is applied, it stays so for this process


def _check_migrations() -> dict[str, object]:
    """Every migration applied: a web server started before ``migrate`` finished is not ready.
    Reading the migration files costs tens of milliseconds, so a process checks until the
    answer is yes, then remembers it (a new release's migrations come with new processes)."""
    if _migrated:
        return {"ok": True}
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if pending:
        return {
            "ok": False,
            "error": f"{len(pending)} migrations not applied",
            "pending": len(pending),
        }
    _migrated.append(True)
    return {"ok": True}


def _check_redis() -> dict[str, object]:

    from core.redis_client import redis_from_url

    client = redis_from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True}


def _check_broker() -> dict[str, object]:
    from celery import current_app  # the project's app (core never imports config)

    with current_app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, timeout=2)
    return {"ok": True}


def _check_embeddings() -> dict[str, object]:
    from core.embeddings import get_embedding_provider

    provider = get_embedding_provider()
    vector = provider.embed_query("readiness probe")
    if len(vector) != provider.dimensions:
        return {"ok": False, "error": "embedding has the wrong dimensions"}
    return {"ok": True, "model": provider.model_id, "dimensions": provider.dimensions}


CHECKS: dict[str, Callable[[], dict[str, object]]] = {
    "database": _check_database,
    "migrations": _check_migrations,
    "redis": _check_redis,
    "broker": _check_broker,
    "embeddings": _check_embeddings,
}


def readiness() -> dict[str, dict[str, object]]:
    """Each component's check: ``ok``, what it found or its error, and the milliseconds it
    took (``/readyz``, and the installation operators' home in the admin)."""
    components: dict[str, dict[str, object]] = {}
    for name, check in CHECKS.items():
        started = time.perf_counter()
        try:
            result = check()
        except Exception as exc:  # a probe reports failures, it never raises
            logger.warning("readiness check %s failed: %s", name, exc)
            result = {"ok": False, "error": type(exc).__name__}
        result["ms"] = round((time.perf_counter() - started) * 1000, 1)
        components[name] = result
    return components


def readyz(request: HttpRequest) -> JsonResponse:
    components = readiness()
    ready = all(component["ok"] for component in components.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "components": components},
        status=200 if ready else 503,
    )
