"""Per-API-key rate limits: reads and writes each have a budget per window.

``API_THROTTLE_READ`` / ``API_THROTTLE_WRITE`` are ``<requests>/<second|minute|hour|day>`` or
``none``. Over budget, a request answers 429 ``throttled`` with ``Retry-After`` (the seconds until
the window ends). Counting is a fixed window in Redis (one atomic INCR per request, one round
trip, shared with the credentials generation's read when the key comes from the process's cache:
core/authentication.py), so a key can spend at most twice its budget across a window boundary.
If Redis is down, requests are let through: throttling protects the service, it must not take it
down. A request with a cached key is counted as it is authenticated, so one then refused for its
scope (403) may count too.
"""

from __future__ import annotations

import functools
import logging
import time
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.core.cache import cache
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from core.models import ApiKey
from core.redis_client import cache_redis

logger = logging.getLogger("engram.throttle")

_PERIODS = {"s": 1, "second": 1, "m": 60, "minute": 60, "h": 3600, "hour": 3600, "d": 86400}
_PERIODS["day"] = 86400


@functools.lru_cache(maxsize=64)
def parse_rate(rate: str | None) -> tuple[int, int] | None:
    """``"600/minute"`` -> (600, 60); ``None`` or ``"none"`` -> no limit."""
    if rate is None or rate.strip().lower() in ("", "none", "off"):
        return None
    count, _, period = rate.strip().partition("/")
    seconds = _PERIODS.get(period.strip().lower())
    if not count.strip().isdigit() or seconds is None or int(count) < 1:
        raise ValueError(f"invalid rate {rate!r}: use <n>/<second|minute|hour|day> or none")
    return int(count), seconds


@dataclass(frozen=True)
class Window:
    """The fixed window a request counts in: its counter (a cache key), budget and bounds."""

    counter: str
    budget: int
    seconds: int
    start: int
    now: float


def window_for(request: Request, view: Any, prefix: str) -> Window | None:
    """Where a request with the key ``prefix`` counts; None when its kind has no limit."""
    needed = getattr(view, "required_scope", None)
    if needed is None:
        kind = "read" if request.method in SAFE_METHODS else "write"
    else:
        kind = "read" if needed == "read" else "write"
    limits = parse_rate(settings.API_THROTTLE_RATES[kind])
    if limits is None:
        return None
    budget, seconds = limits
    now = time.time()
    start = int(now // seconds) * seconds
    return Window(f"throttle:{kind}:{prefix}:{start}", budget, seconds, start, now)


def count_in(pipe: Any, backend: Any, window: Window) -> None:
    """Queue the count on a Redis pipeline (its answer is the pipeline's last result): the
    counter is created with its expiry if missing (SET NX EX), then incremented."""
    key = backend.make_and_validate_key(window.counter)
    pipe.set(key, 0, ex=window.seconds + 1, nx=True)
    pipe.incr(key)


def precounted(request: Request, window: Window, used: int) -> None:
    """The request was counted already (in authentication's round trip to Redis, see
    core/authentication.py): the throttle takes this count instead of counting again."""
    request._engram_throttle_count = (window, used)  # type: ignore[attr-defined]


def _count(counter: str, timeout: int) -> int:
    """Count one request in the cache's Redis; returns the count. One round trip, on the
    process's shared client (``cache.add`` and ``cache.incr`` took three round trips, and
    Django's cache builds a Redis client object for every call)."""
    found = cache_redis()
    if found is None:  # another cache backend: its own two calls
        cache.add(counter, 0, timeout=timeout)
        return int(cache.incr(counter))
    client, backend = found
    key = backend.make_and_validate_key(counter)
    pipe = client.pipeline(transaction=False)
    pipe.set(key, 0, ex=timeout, nx=True)
    pipe.incr(key)
    return int(pipe.execute()[1])


class ApiKeyThrottle(BaseThrottle):
    """An operation counts against the budget of the scope it needs: reads (GET, and POSTs such
    as search that need only the read scope) against the read budget, the rest the write one."""

    def __init__(self) -> None:
        self._wait: float | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        key = request.auth
        if not isinstance(key, ApiKey):
            return True  # unauthenticated requests fail authentication anyway
        counted = getattr(request, "_engram_throttle_count", None)
        if counted is not None:
            window, used = counted
        else:
            window = window_for(request, view, key.prefix)
            if window is None:
                return True
            try:
                used = _count(window.counter, window.seconds + 1)
            except Exception as exc:  # Redis down
                logger.warning("throttle counter unavailable, request allowed: %s", exc)
                return True
        if used <= window.budget:
            return True
        self._wait = window.start + window.seconds - window.now
        return False

    def wait(self) -> float | None:
        return self._wait
