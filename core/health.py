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


def _check_database() -> dict[str, object]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        row = cursor.fetchone()
    if row is None:
        return {"ok": False, "error": "pgvector extension is not installed"}
    return {"ok": True, "pgvector": row[0]}


def _check_redis() -> dict[str, object]:
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
    try:
        client.ping()
    finally:
        client.close()
    return {"ok": True}


def _check_broker() -> dict[str, object]:
    from config.celery import app

    with app.connection_for_write() as conn:
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
    "redis": _check_redis,
    "broker": _check_broker,
    "embeddings": _check_embeddings,
}


def readyz(request: HttpRequest) -> JsonResponse:
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
    ready = all(component["ok"] for component in components.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", "components": components},
        status=200 if ready else 503,
    )
