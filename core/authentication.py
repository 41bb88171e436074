from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connection
from django.db.models import JSONField, Model
from django.utils import timezone
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from core import key_cache, throttling
from core.api_keys import hash_secret, hashes_match, parse_key
from core.models import Account, Agent, ApiKey

# Writing last_used_at on every request would turn every read into a write; once a minute is
# plenty for "when was this key last used".
LAST_USED_RESOLUTION_SECONDS = 60


def _columns(model: type[Model], alias: str) -> tuple[list[str], str]:
    """The model's columns the lookup loads (JSON ones stay deferred: they need converters and
    no request reads them before the view), and their SQL."""
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, JSONField)]
    return [f.attname for f in fields], ", ".join(f'{alias}."{f.column}"' for f in fields)


_KEY, _KEY_SQL = _columns(ApiKey, "k")
_AGENT, _AGENT_SQL = _columns(Agent, "a")
_ACCOUNT, _ACCOUNT_SQL = _columns(Account, "c")
_LOOKUP = (
    f"SELECT {_KEY_SQL}, {_AGENT_SQL}, {_ACCOUNT_SQL} "  # noqa: S608 - names are code
    f"FROM {ApiKey._meta.db_table} k "
    f"JOIN {Agent._meta.db_table} a ON a.id = k.agent_id "
    f"JOIN {Account._meta.db_table} c ON c.id = a.account_id "
    "WHERE k.prefix = %s"
)


def _key_row(prefix: str) -> tuple[Any, ...] | None:
    with connection.cursor() as cursor:
        cursor.execute(_LOOKUP, [prefix])
        row = cursor.fetchone()
    return None if row is None else tuple(row)


def _key_from_row(row: tuple[Any, ...]) -> ApiKey:
    """New instances of the key, its agent and the account (never shared between requests)."""
    agent_end = len(_KEY) + len(_AGENT)
    row = tuple(list(value) if isinstance(value, list) else value for value in row)  # scopes
    key = ApiKey.from_db(DEFAULT_DB_ALIAS, _KEY, row[: len(_KEY)])
    agent = Agent.from_db(DEFAULT_DB_ALIAS, _AGENT, row[len(_KEY) : agent_end])
    agent.account = Account.from_db(DEFAULT_DB_ALIAS, _ACCOUNT, row[agent_end:])
    key.agent = agent
    return key


def key_with_agent(prefix: str) -> ApiKey | None:
    """The key with this prefix, its agent and the agent's account, in one query.

    It is what ``select_related("agent", "agent__account")`` would run, without compiling the
    query each time (half the cost of authenticating, measured in
    bench/memory/memory_working.py). The prefix is unique: at most one row.
    """
    row = _key_row(prefix)
    return None if row is None else _key_from_row(row)


def authenticated_key(
    prefix: str, also: Callable[[Any, Any], None] | None = None
) -> tuple[ApiKey | None, key_cache.CachedKey | None, list[Any] | None]:
    """``key_with_agent``, from this process's cache while the credentials generation read now
    is the one the row was loaded under (core/key_cache.py), else from the database; with the
    cache entry and the answers of the Redis commands ``also`` queued with the generation's read
    (None when Redis could not be read)."""
    generation, answers = key_cache.generation_and(also)  # before the database: see key_cache
    entry = key_cache.cached(prefix, generation)
    if entry is None:
        row = _key_row(prefix)
        if row is None:
            return None, None, answers
        entry = key_cache.remember(prefix, row, generation)
    return _key_from_row(entry.row), entry, answers


_HASHED_SECRET = _KEY.index("hashed_secret")


class ApiKeyAuthentication(BaseAuthentication):
    """``Authorization: Bearer eng_...`` (or ``X-API-Key: eng_...``) for agents.

    Sets ``request.user`` to the :class:`Agent` and ``request.auth`` to the :class:`ApiKey`.
    """

    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Agent, ApiKey] | None:
        raw = self._raw_key(request)
        if raw is None:
            return None
        parsed = parse_key(raw)
        if parsed is None:
            raise exceptions.AuthenticationFailed("Malformed API key.", code="invalid_api_key")
        prefix, secret = parsed
        # Hashed first, whatever happens next, so a missing prefix costs what a wrong secret does.
        hashed = hash_secret(secret)
        window = self._window_to_count(request, prefix, hashed)
        key, entry, answers = authenticated_key(
            prefix, functools.partial(throttling.count_in, window=window) if window else None
        )
        if window is not None and answers:
            throttling.precounted(request, window, int(answers[-1]))
        if key is None or entry is None or not hashes_match(hashed, key.hashed_secret):
            raise exceptions.AuthenticationFailed("Invalid API key.", code="invalid_api_key")
        if key.revoked_at is not None:
            raise exceptions.AuthenticationFailed("This API key was revoked.", code="key_revoked")
        if not key.is_usable:
            raise exceptions.AuthenticationFailed("This API key has expired.", code="key_expired")
        if not key.agent.is_active or not key.agent.account.is_active:
            raise exceptions.AuthenticationFailed("This agent is disabled.", code="agent_disabled")
        self._touch(key, entry)
        return key.agent, key

    def _raw_key(self, request: Request) -> str | None:
        header = request.headers.get("Authorization", "")
        if header:
            parts = header.split()
            if len(parts) != 2 or parts[0].lower() != self.keyword.lower():
                raise exceptions.AuthenticationFailed(
                    "Use 'Authorization: Bearer <api key>'.", code="invalid_auth_header"
                )
            return parts[1]
        return request.headers.get("X-API-Key") or None

    @staticmethod
    def _window_to_count(request: Request, prefix: str, hashed: str) -> throttling.Window | None:
        """The rate-limit window to count this request in while reading the credentials
        generation (one round trip to Redis for both): only for a key this process has cached
        whose secret matches, so a request can never spend another key's budget; the throttle
        counts every other request itself, once authenticated."""
        entry = key_cache.peek(prefix)
        if entry is None or not hashes_match(hashed, entry.row[_HASHED_SECRET]):
            return None
        view = (getattr(request, "parser_context", None) or {}).get("view")
        return throttling.window_for(request, view, prefix)

    @staticmethod
    def _touch(key: ApiKey, entry: key_cache.CachedKey) -> None:
        """Record the use at most once a minute per key and process (the cached row keeps the
        ``last_used_at`` it was loaded with; the entry remembers this process's last write)."""
        now = timezone.now()
        last = entry.touched_at or key.last_used_at
        if last and (now - last).total_seconds() < LAST_USED_RESOLUTION_SECONDS:
            return
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = entry.touched_at = now

    def authenticate_header(self, request: Any) -> str:
        return self.keyword
