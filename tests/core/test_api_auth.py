from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from core import services
from core.actors import actor_for_account
from core.models import Agent, ApiKey

pytestmark = pytest.mark.django_db

ME = "/api/v1/me"


def error_code(response) -> str:
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message", "details"}
    return str(body["error"]["code"])


def test_me_returns_the_calling_agent(agent_client) -> None:
    response = agent_client.client.get(ME)
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == agent_client.agent.id
    assert body["account"]["id"] == agent_client.agent.account_id
    assert body["key"] == {
        "prefix": agent_client.key.prefix,
        "name": "",
        "scopes": ["read", "write"],
    }
    assert response["X-Request-ID"]


def test_missing_key_is_401() -> None:
    response = APIClient().get(ME)
    assert response.status_code == 401
    assert error_code(response) == "not_authenticated"


@pytest.mark.parametrize(
    "header",
    ["Bearer nonsense", "Token eng_abc", "Bearer", "Bearer eng_aaaaaaaaaaaa_" + "x" * 43],
)
def test_invalid_keys_are_401(header: str) -> None:
    response = APIClient().get(ME, HTTP_AUTHORIZATION=header)
    assert response.status_code == 401
    assert error_code(response) in {"invalid_api_key", "invalid_auth_header"}


def test_wrong_secret_for_a_real_prefix_is_401(agent_client) -> None:
    forged = f"eng_{agent_client.key.prefix}_{'A' * 43}"
    response = APIClient().get(ME, HTTP_AUTHORIZATION=f"Bearer {forged}")
    assert response.status_code == 401
    assert error_code(response) == "invalid_api_key"


def test_x_api_key_header_is_accepted(agent_client) -> None:
    response = APIClient().get(ME, HTTP_X_API_KEY=agent_client.secret)
    assert response.status_code == 200


def test_revoked_key_is_401(agent_client) -> None:
    services.api_key_revoke(
        actor=actor_for_account(agent_client.agent.account_id), key=agent_client.key
    )
    response = agent_client.client.get(ME)
    assert response.status_code == 401
    assert error_code(response) == "key_revoked"


def test_expired_key_is_401(agent_client) -> None:
    ApiKey.objects.filter(pk=agent_client.key.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    response = agent_client.client.get(ME)
    assert response.status_code == 401
    assert error_code(response) == "key_expired"


def test_disabled_agent_is_401(agent_client) -> None:
    Agent.objects.filter(pk=agent_client.agent.pk).update(status=Agent.Status.DISABLED)
    response = agent_client.client.get(ME)
    assert response.status_code == 401
    assert error_code(response) == "agent_disabled"


def test_key_use_is_recorded(agent_client) -> None:
    assert agent_client.key.last_used_at is None
    agent_client.client.get(ME)
    agent_client.key.refresh_from_db()
    assert agent_client.key.last_used_at is not None


def test_several_keys_per_agent_work_independently(make_agent_client) -> None:
    first = make_agent_client()
    second = make_agent_client(agent=first.agent)
    services.api_key_revoke(actor=actor_for_account(first.agent.account_id), key=first.key)
    assert first.client.get(ME).status_code == 401
    assert second.client.get(ME).status_code == 200


def test_only_the_hash_of_the_secret_is_stored(agent_client) -> None:
    stored = ApiKey.objects.get(pk=agent_client.key.pk)
    # eng_<prefix>_<secret>: the secret itself may contain "_".
    secret_part = agent_client.secret.split("_", 2)[2]
    assert secret_part not in stored.hashed_secret
    assert agent_client.secret.startswith(f"eng_{stored.prefix}_")


# --- scopes -------------------------------------------------------------------------------------


def test_read_only_key_cannot_write(make_agent_client) -> None:
    reader = make_agent_client(scopes=("read",))
    assert reader.client.get(ME).status_code == 200
    admin_only = reader.client.get("/api/v1/keys")
    assert admin_only.status_code == 403
    assert error_code(admin_only) == "insufficient_scope"
    assert admin_only.json()["error"]["details"]["required_scope"] == "admin"


def test_write_scope_is_needed_for_unsafe_methods(make_agent_client) -> None:
    reader = make_agent_client(scopes=("read",))
    response = reader.client.post(ME, {}, format="json")
    assert response.status_code == 403
    assert error_code(response) == "insufficient_scope"


def test_admin_scope_implies_read(make_agent_client) -> None:
    admin = make_agent_client(scopes=("admin",))
    assert admin.client.get(ME).status_code == 200


# --- key management -----------------------------------------------------------------------------


def test_admin_key_rotates_a_key(make_agent_client) -> None:
    admin = make_agent_client(scopes=("admin",))
    created = admin.client.post(
        "/api/v1/keys",
        {"agent_id": admin.agent.id, "scopes": ["read"], "name": "rotated"},
        format="json",
    )
    assert created.status_code == 201, created.json()
    new_key = created.json()["key"]
    assert APIClient().get(ME, HTTP_AUTHORIZATION=f"Bearer {new_key}").status_code == 200
    listed = admin.client.get("/api/v1/keys").json()
    assert {k["prefix"] for k in listed["results"]} == {admin.key.prefix, created.json()["prefix"]}
    assert all("key" not in k and "hashed_secret" not in k for k in listed["results"])
    revoked = admin.client.post(f"/api/v1/keys/{created.json()['prefix']}/revoke")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"]
    assert APIClient().get(ME, HTTP_AUTHORIZATION=f"Bearer {new_key}").status_code == 401


@pytest.mark.parametrize(
    "payload",
    [
        {"agent_id": "x", "scopes": ["read"]},
        {"scopes": ["read"]},
        {"agent_id": 1, "scopes": []},
        {"agent_id": 1, "scopes": ["root"]},
        {"agent_id": 1, "scopes": ["read"], "expires_at": "tomorrow"},
    ],
)
def test_key_create_validates_input(make_agent_client, payload) -> None:
    admin = make_agent_client(scopes=("admin",))
    before = ApiKey.objects.count()
    response = admin.client.post("/api/v1/keys", payload, format="json")
    assert response.status_code == 400
    assert error_code(response) == "validation_error"
    assert ApiKey.objects.count() == before


def test_malformed_json_is_400(make_agent_client) -> None:
    admin = make_agent_client(scopes=("admin",))
    response = admin.client.post("/api/v1/keys", '{"agent_id": 1,', content_type="application/json")
    assert response.status_code == 400
    assert error_code(response) == "invalid_json"


def test_wrong_content_type_is_415(make_agent_client) -> None:
    admin = make_agent_client(scopes=("admin",))
    response = admin.client.post("/api/v1/keys", "agent_id=1", content_type="text/plain")
    assert response.status_code == 415
    assert error_code(response) == "unsupported_media_type"


# --- tenancy: another account's data is invisible on every endpoint -----------------------------


def test_agent_list_shows_only_own_account(agent_client, other_agent_client) -> None:
    body = agent_client.client.get("/api/v1/agents").json()
    assert [a["id"] for a in body["results"]] == [agent_client.agent.id]


def test_agent_detail_of_other_account_is_404(agent_client, other_agent_client) -> None:
    response = agent_client.client.get(f"/api/v1/agents/{other_agent_client.agent.id}")
    assert response.status_code == 404
    assert error_code(response) == "agent_not_found"
    assert agent_client.client.get(f"/api/v1/agents/{agent_client.agent.id}").status_code == 200


def test_me_never_shows_other_accounts(agent_client, other_agent_client) -> None:
    assert (
        agent_client.client.get(ME).json()["account"]["id"] != other_agent_client.agent.account_id
    )


def test_keys_of_other_accounts_are_invisible(make_agent_client) -> None:
    mine = make_agent_client(scopes=("admin",))
    theirs = make_agent_client(scopes=("admin",))
    listed = mine.client.get("/api/v1/keys").json()["results"]
    assert theirs.key.prefix not in {k["prefix"] for k in listed}
    assert mine.client.get(f"/api/v1/keys?agent_id={theirs.agent.id}").json()["results"] == []
    create = mine.client.post(
        "/api/v1/keys", {"agent_id": theirs.agent.id, "scopes": ["read"]}, format="json"
    )
    assert create.status_code == 404
    revoke = mine.client.post(f"/api/v1/keys/{theirs.key.prefix}/revoke")
    assert revoke.status_code == 404
    theirs.key.refresh_from_db()
    assert theirs.key.revoked_at is None


def test_agent_list_query_count(agent_client, django_assert_max_num_queries) -> None:
    from tests.factories import AgentFactory

    AgentFactory.create_batch(5, account=agent_client.agent.account)
    with django_assert_max_num_queries(4):
        response = agent_client.client.get("/api/v1/agents")
    assert len(response.json()["results"]) == 6


def test_the_key_lookup_loads_key_agent_and_account_in_one_query(agent_client) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from core.authentication import key_with_agent

    Agent.objects.filter(pk=agent_client.agent.pk).update(metadata={"team": "blue"})
    stored = ApiKey.objects.select_related("agent", "agent__account").get(pk=agent_client.key.pk)
    with CaptureQueriesContext(connection) as queries:
        key = key_with_agent(stored.prefix)
        assert key is not None
        loaded = (
            key.pk,
            key.hashed_secret,
            key.scopes,
            key.revoked_at,
            key.agent.pk,
            key.agent.name,
            key.agent.status,
            key.agent.account.pk,
            key.agent.account.is_active,
        )
    assert len(queries) == 1
    assert loaded == (
        stored.pk,
        stored.hashed_secret,
        stored.scopes,
        None,
        stored.agent.pk,
        stored.agent.name,
        stored.agent.status,
        stored.agent.account.pk,
        True,
    )
    assert key.agent.metadata == {"team": "blue"}  # JSON is loaded on first use
    assert key_with_agent("nosuchprefix") is None
