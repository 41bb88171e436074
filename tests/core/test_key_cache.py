"""The per-process cache of API keys (core/key_cache.py): what it saves, and that every change the
services make to a key, an agent or an account is seen by the very next request, in every process.

Each process's cache is a dictionary in that process; another process only ever hears of a change
through the credentials generation in Redis. So these tests check that a change leaves this
process's cached row in place (exactly as another worker would still hold it) and that the next
request is refused all the same.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
import redis
from django.db import transaction
from django.utils import timezone
from rest_framework.test import APIClient

from core import key_cache, services
from core.actors import actor_for_account
from core.authentication import _key_row
from core.errors import StoreUnavailable
from core.models import Account, Agent, ApiKey
from core.redis_client import cache_redis
from tests.conftest import AuthedAgent

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"
WORKING = "/api/v1/memory/working/cache-test/k"
DEAD_CACHE = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "unix:///nonexistent/engram-cache.sock",
    }
}


def error_code(response: Any) -> str:
    return str(response.json()["error"]["code"])


def cached_row(key: ApiKey) -> tuple[Any, ...] | None:
    entry = key_cache._entries.get(key.prefix)
    return None if entry is None else entry.row


def tool(authed: AuthedAgent) -> Any:
    return actor_for_account(authed.agent.account_id)


def generation_key() -> str:
    found = cache_redis()
    assert found is not None
    return str(found[1].make_and_validate_key(key_cache.GENERATION_KEY))


def test_a_cached_key_authenticates_without_the_database(
    agent_client: AuthedAgent, django_assert_num_queries: Any
) -> None:
    assert agent_client.client.put(WORKING, {"value": 1}, format="json").status_code == 200
    assert cached_row(agent_client.key) is not None
    with django_assert_num_queries(0):
        response = agent_client.client.get(WORKING)
    assert response.status_code == 200 and response.json()["value"] == 1


def test_a_revoked_key_is_refused_at_once_after_it_was_cached(agent_client: AuthedAgent) -> None:
    assert agent_client.client.get(ME).status_code == 200
    stale = cached_row(agent_client.key)
    assert stale is not None
    services.api_key_revoke(actor=tool(agent_client), key=agent_client.key)
    # This process still holds the row it loaded, as another worker would: only the
    # generation says it is stale.
    assert cached_row(agent_client.key) == stale
    response = agent_client.client.get(ME)
    assert response.status_code == 401 and error_code(response) == "key_revoked"
    assert agent_client.client.get(WORKING).status_code == 401


def test_a_key_revoked_through_the_api_is_refused_by_the_next_request(
    make_agent_client: Callable[..., AuthedAgent],
) -> None:
    """What CI's schemathesis phase does: revoke a key, then use it."""
    admin = make_agent_client(scopes=("admin",))
    other = make_agent_client(agent=admin.agent)
    assert other.client.get(ME).status_code == 200
    revoked = admin.client.post(f"/api/v1/keys/{other.key.prefix}/revoke")
    assert revoked.status_code == 200
    assert cached_row(other.key) is not None
    response = other.client.get(ME)
    assert response.status_code == 401 and error_code(response) == "key_revoked"


def _disable_agent(a: AuthedAgent) -> None:
    services.agent_update(actor=tool(a), agent=a.agent, status="disabled")


def _deactivate_account(a: AuthedAgent) -> None:
    services.account_update(actor=tool(a), account=a.agent.account, is_active=False)


def _delete_key(a: AuthedAgent) -> None:
    services.api_key_delete(actor=tool(a), key=a.key)


def _delete_agent(a: AuthedAgent) -> None:
    services.agent_delete(actor=tool(a), agent=a.agent)


def _delete_account(a: AuthedAgent) -> None:
    services.account_delete(actor=tool(a), account=a.agent.account)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_disable_agent, "agent_disabled"),
        (_deactivate_account, "agent_disabled"),
        (_delete_key, "invalid_api_key"),
        (_delete_agent, "invalid_api_key"),
        (_delete_account, "invalid_api_key"),
    ],
)
def test_every_service_change_is_seen_by_the_next_request(
    agent_client: AuthedAgent, change: Callable[[AuthedAgent], None], expected: str
) -> None:
    assert agent_client.client.get(ME).status_code == 200
    assert cached_row(agent_client.key) is not None
    change(agent_client)
    response = agent_client.client.get(ME)
    assert response.status_code == 401 and error_code(response) == expected


def test_renaming_a_key_or_an_agent_reloads_them(agent_client: AuthedAgent) -> None:
    assert agent_client.client.get(ME).json()["key"]["name"] == ""
    services.api_key_update(actor=tool(agent_client), key=agent_client.key, name="renamed")
    assert agent_client.client.get(ME).json()["key"]["name"] == "renamed"
    services.agent_update(actor=tool(agent_client), agent=agent_client.agent, name="agent 2")
    assert agent_client.client.get(ME).json()["name"] == "agent 2"


def test_a_row_loaded_while_the_change_commits_is_not_trusted_afterwards(
    agent_client: AuthedAgent, django_capture_on_commit_callbacks: Any
) -> None:
    """Another process may read the new generation, then the row as it was before the
    revocation commits (its transaction cannot see the change yet): the generation set after the
    commit makes it load the row again."""
    before = _key_row(agent_client.key.prefix)
    assert before is not None
    with django_capture_on_commit_callbacks(execute=True), transaction.atomic():
        services.api_key_revoke(actor=tool(agent_client), key=agent_client.key)
        # "Another process", in between: the new generation, then the committed (old) row.
        generation = key_cache.current_generation()
        key_cache.remember(agent_client.key.prefix, before, generation)
        assert key_cache.cached(agent_client.key.prefix, generation) is not None
    assert key_cache.cached(agent_client.key.prefix, key_cache.current_generation()) is None
    response = agent_client.client.get(ME)
    assert response.status_code == 401 and error_code(response) == "key_revoked"


def test_a_change_that_redis_cannot_hear_about_fails_and_changes_nothing(
    agent_client: AuthedAgent, settings: Any
) -> None:
    assert agent_client.client.get(ME).status_code == 200
    settings.CACHES = DEAD_CACHE
    with pytest.raises(StoreUnavailable):
        services.api_key_revoke(actor=tool(agent_client), key=agent_client.key)
    with pytest.raises(StoreUnavailable):
        services.agent_update(actor=tool(agent_client), agent=agent_client.agent, status="disabled")
    agent_client.key.refresh_from_db()
    assert agent_client.key.revoked_at is None
    assert Agent.objects.get(pk=agent_client.agent.pk).is_active


def test_nothing_cached_is_trusted_while_redis_cannot_be_read(
    agent_client: AuthedAgent, settings: Any
) -> None:
    assert agent_client.client.get(ME).status_code == 200
    assert cached_row(agent_client.key) is not None
    settings.CACHES = DEAD_CACHE
    assert agent_client.client.get(ME).status_code == 200  # from the database
    # A change Redis never heard of (made by hand) is seen at once: the cache is not used.
    ApiKey.objects.filter(pk=agent_client.key.pk).update(revoked_at=timezone.now())
    assert agent_client.client.get(ME).status_code == 401
    assert cached_row(agent_client.key) is None  # forgotten: it may be stale when Redis is back


def test_a_lost_generation_vouches_for_nothing(agent_client: AuthedAgent) -> None:
    """A Redis that lost its data (restart without persistence) holds no generation."""
    assert agent_client.client.get(ME).status_code == 200
    found = cache_redis()
    assert found is not None
    found[0].delete(generation_key())
    ApiKey.objects.filter(pk=agent_client.key.pk).update(revoked_at=timezone.now())
    assert agent_client.client.get(ME).status_code == 401
    assert found[0].get(generation_key())  # set again for the next requests


def test_cached_rows_are_reloaded_after_their_maximum_age(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What bounds a change made behind the services' back (SQL by hand)."""
    assert agent_client.client.get(ME).status_code == 200
    Agent.objects.filter(pk=agent_client.agent.pk).update(status=Agent.Status.DISABLED)
    assert agent_client.client.get(ME).status_code == 200  # cached, as documented
    monkeypatch.setattr(key_cache, "MAX_AGE_SECONDS", 0.0)
    response = agent_client.client.get(ME)
    assert response.status_code == 401 and error_code(response) == "agent_disabled"


def test_a_cached_key_still_checks_the_secret_and_the_expiry(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert agent_client.client.get(ME).status_code == 200
    forged = f"eng_{agent_client.key.prefix}_{'A' * 43}"
    response = APIClient().get(ME, HTTP_AUTHORIZATION=f"Bearer {forged}")
    assert response.status_code == 401 and error_code(response) == "invalid_api_key"
    services.api_key_update(
        actor=tool(agent_client),
        key=agent_client.key,
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    assert agent_client.client.get(ME).status_code == 200
    later = timezone.now() + timedelta(minutes=6)
    monkeypatch.setattr(timezone, "now", lambda: later)
    response = agent_client.client.get(ME)
    assert response.status_code == 401 and error_code(response) == "key_expired"


def test_requests_share_no_instances(agent_client: AuthedAgent) -> None:
    """Each request gets its own key, agent and account objects built from the cached row."""
    from core.authentication import authenticated_key

    first, _, _ = authenticated_key(agent_client.key.prefix)
    second, _, _ = authenticated_key(agent_client.key.prefix)
    assert first is not None and second is not None
    assert first is not second and first.agent is not second.agent
    assert first.scopes is not second.scopes
    assert isinstance(first.agent.account, Account)


def test_a_cached_key_reads_the_generation_and_counts_its_request_in_one_round_trip(
    agent_client: AuthedAgent, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """Two round trips to Redis for a working-memory read: the credentials generation with the
    rate limit's count, then the data."""
    settings.API_THROTTLE_RATES = {"read": "3/minute", "write": "100/minute"}
    assert agent_client.client.put(WORKING, {"value": 1}, format="json").status_code == 200
    sent: list[bytes] = []
    original = redis.connection.AbstractConnection.send_packed_command

    def send(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(b"".join(command) if isinstance(command, list) else command)
        original(self, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", send)
    assert agent_client.client.get(WORKING).status_code == 200
    assert len(sent) == 2, sent
    assert b"credentials-generation" in sent[0] and b"INCR" in sent[0]
    # Counted once per request: the budget of 3 reads allows exactly two more.
    assert [agent_client.client.get(WORKING).status_code for _ in range(3)] == [200, 200, 429]
