"""``/metrics``: the Prometheus scrape, who may make it, and what is read at scrape time.

Access (docs/operations.md, "Metrics"): with ``METRICS_TOKEN`` set, a scrape carries
``Authorization: Bearer <token>`` (compared in constant time); without a token only loopback
peers (127.0.0.1, ::1, a unix-socket peer) may scrape. Everything else is answered with the API's
error body: 401 without credentials, 403 with wrong ones or from elsewhere.

Read at scrape time, from the one process that answers (cheap, bounded, and true for every
process at once): each Celery queue's length in the broker (``LLEN`` of the queue's list and of
its priority lists), and the database's connections by state (``pg_stat_activity`` of Engram's
database) with the server's ``max_connections``. A source that cannot be read reports
``engram_metrics_source_up 0`` instead of failing the scrape.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from prometheus_client import REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from core import metrics
from core.errors import error_body
from core.queue import queue_lengths

logger = logging.getLogger("engram.metrics")
_DB_STATES = ("active", "idle", "idle in transaction", "idle in transaction (aborted)")


def _loopback(address: str) -> bool:
    if not address or address.startswith("/"):
        return True  # a unix-socket peer: the socket file's permissions decided who connects
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def scrape_refusal(request: HttpRequest) -> JsonResponse | None:
    """Why this request may not scrape (the answer to send), or None when it may."""
    token: str = getattr(settings, "METRICS_TOKEN", "") or ""
    if not token:
        if _loopback(request.META.get("REMOTE_ADDR", "")):
            return None
        return JsonResponse(
            error_body(
                "metrics_forbidden",
                "Metrics are served to loopback addresses only; set METRICS_TOKEN to scrape "
                "from elsewhere.",
            ),
            status=403,
        )
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not given.strip():
        response = JsonResponse(
            error_body("not_authenticated", "A scrape needs Authorization: Bearer <token>."),
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    if not hmac.compare_digest(given.strip().encode(), token.encode()):
        return JsonResponse(
            error_body("authentication_failed", "The metrics token is not valid."), status=403
        )
    return None


class QueueLengths(Collector):
    """``engram_celery_queue_length{queue}``: messages waiting in each known queue."""

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "engram_celery_queue_length", "Messages waiting in a Celery queue.", labels=["queue"]
        )
        for name, length in queue_lengths().items():
            family.add_metric([name], length)
        yield family


class DatabaseConnections(Collector):
    """``engram_db_connections{state}`` (every client of Engram's database, all processes) and
    ``engram_db_max_connections``."""

    def collect(self) -> Iterator[Metric]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT state, count(*) FROM pg_stat_activity "
                "WHERE datname = current_database() AND backend_type = 'client backend' "
                "GROUP BY state"
            )
            counts = {str(state): int(n) for state, n in cursor.fetchall() if state}
            cursor.execute("SELECT current_setting('max_connections')::int")
            row = cursor.fetchone()
        family = GaugeMetricFamily(
            "engram_db_connections",
            "Connections to Engram's database by state (pg_stat_activity).",
            labels=["state"],
        )
        for state in _DB_STATES:
            family.add_metric([state], counts.pop(state, 0))
        family.add_metric(["other"], sum(counts.values()))
        yield family
        yield GaugeMetricFamily(
            "engram_db_max_connections",
            "The database server's max_connections.",
            value=int(row[0]) if row else 0,
        )


SOURCES: dict[str, Collector] = {
    "queues": QueueLengths(),
    "database": DatabaseConnections(),
}


class ScrapeTime(Collector):
    """What ``SOURCES`` read now, and whether each could be read."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "engram_metrics_source_up",
            "Whether a source read at scrape time answered (1) or not (0).",
            labels=["source"],
        )
        for name, source in SOURCES.items():
            try:
                found = list(source.collect())
            except Exception as exc:  # a scrape reports a source that is down, never fails
                logger.warning("metrics source %s failed: %s", name, exc)
                up.add_metric([name], 0)
                continue
            up.add_metric([name], 1)
            yield from found
        yield up


def registries(directory: Path | None) -> Iterable[CollectorRegistry]:
    """What a scrape reads: every process's files (multiprocess mode) or this process's own
    registry, then the scrape-time sources."""
    if directory is not None:
        combined = CollectorRegistry()
        MultiProcessCollector(combined, path=str(directory))
        yield combined
    else:
        yield REGISTRY
    now = CollectorRegistry()
    now.register(ScrapeTime())
    yield now


def exposition(directory: Path | None) -> bytes:
    return b"".join(generate_latest(registry) for registry in registries(directory))


def metrics_view(request: HttpRequest) -> HttpResponse:
    refusal = scrape_refusal(request)
    if refusal is not None:
        return refusal
    return HttpResponse(exposition(metrics.multiprocess_dir()), content_type=CONTENT_TYPE_LATEST)
