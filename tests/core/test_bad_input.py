"""Every request that used to answer 500 answers a 4xx with a code (or 503 when a provider or
store is down), and leaves nothing behind."""

from __future__ import annotations

import base64
import json
import logging
import os
import threading
import time
from typing import Any

import pytest
from django.db import OperationalError, connection
from django.urls import reverse
from rest_framework.test import APIClient

from rag.models import Document, KnowledgeBase, SearchQuery
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db

KBS = "/api/v1/rag/knowledge-bases"


def code(response) -> str:
    body = response.json()
    assert set(body) == {"error"}, body
    return str(body["error"]["code"])


def post_raw(client: APIClient, path: str, body: str):
    return client.generic("POST", path, body, content_type="application/json")


@pytest.fixture
def kb(agent_client) -> dict:
    response = agent_client.client.post(KBS, {"name": "Docs"}, format="json")
    assert response.status_code == 201
    return response.json()


@pytest.fixture
def admin(make_agent_client):
    return make_agent_client(scopes=("admin",))


def json_endpoints(kb_id: int) -> list[str]:
    return [
        KBS,
        f"{KBS}/{kb_id}/documents",
        f"{KBS}/{kb_id}/status",
        "/api/v1/rag/search",
        "/api/v1/rag/query",
        "/api/v1/keys",
    ]


def test_deeply_nested_json_is_400_invalid_json_everywhere(admin) -> None:
    kb = admin.client.post(KBS, {"name": "Deep"}, format="json").json()
    body = "[" * 1000 + "]" * 1000
    nested = '{"query": ' + "[" * 100 + "]" * 100 + "}"
    for path in json_endpoints(kb["id"]):
        for payload in (body, nested):
            response = post_raw(admin.client, path, payload)
            assert response.status_code == 400, (path, response.content[:200])
            assert code(response) == "invalid_json"
    assert KnowledgeBase.objects.filter(account_id=admin.agent.account_id).count() == 1


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_never_reach_the_database(agent_client, literal) -> None:
    response = post_raw(
        agent_client.client,
        "/api/v1/rag/search",
        f'{{"query": "x", "threshold": {literal}}}',
    )
    assert response.status_code == 400 and code(response) == "invalid_json"
    assert not SearchQuery.objects.exists()


def test_overflowing_weights_are_refused_and_analytics_stay_readable(agent_client, kb) -> None:
    client = agent_client.client
    huge = client.post(
        "/api/v1/rag/search",
        {"query": "x", "weights": {"vector": 1e308, "keyword": 1e308}},
        format="json",
    )
    assert huge.status_code == 400 and code(huge) == "validation_error"
    zero = client.post(
        "/api/v1/rag/search", {"query": "x", "weights": {"vector": 0, "keyword": 0}}, format="json"
    )
    assert zero.status_code == 400 and code(zero) == "invalid_weights"
    fine = client.post(
        "/api/v1/rag/search",
        {"query": "x", "weights": {"vector": 1000, "keyword": 1000}},
        format="json",
    )
    assert fine.status_code == 200, fine.json()
    # A row written before the API refused such numbers must not break analytics for good.
    SearchQuery.objects.create(
        account_id=agent_client.agent.account_id,
        query_text="finite",
        mode="hybrid",
        top_k=10,
        avg_score=0.5,
        latency_ms=3.0,
    )
    SearchQuery.objects.create(
        account_id=agent_client.agent.account_id,
        agent=agent_client.agent,  # an agent's query log shows its own queries
        query_text="legacy",
        mode="hybrid",
        top_k=10,
        avg_score=float("inf"),
        quality_score=float("nan"),
        latency_ms=float("inf"),
        stage_ms={"embed": 1.0},
    )
    analytics = client.get("/api/v1/rag/analytics")
    assert analytics.status_code == 200, analytics.content
    (hybrid,) = analytics.json()["modes"]
    assert hybrid["queries"] == 3
    assert hybrid["avg_score"] == 0.5  # the finite rows' average, not infinity
    queries = client.get("/api/v1/rag/queries")
    assert queries.status_code == 200
    legacy = next(q for q in queries.json()["results"] if q["query_text"] == "legacy")
    assert legacy["avg_score"] is None and legacy["quality_score"] is None


@pytest.mark.parametrize(
    "metadata",
    [{"note": "a\u0000b"}, {"a\u0000": 1}, {"note": "\ud800"}, {"nested": [{"x": "\udfff"}]}],
)
def test_nul_and_lone_surrogates_are_400_and_store_nothing(agent_client, kb, metadata) -> None:
    # JSON escapes (\\u0000, \\ud800) are how such strings arrive in a valid UTF-8 body.
    body = json.dumps({"text": "hello", "metadata": metadata}, ensure_ascii=True)
    response = post_raw(agent_client.client, f"{KBS}/{kb['id']}/documents", body)
    assert response.status_code == 400 and code(response) == "invalid_characters"
    assert not Document.objects.exists()


def test_nul_in_the_url_is_400(admin) -> None:
    response = admin.client.post("/api/v1/keys/a%00b/revoke")
    assert response.status_code == 400 and code(response) == "invalid_characters"
    listed = admin.client.get("/api/v1/keys?agent_id=1%00")
    assert listed.status_code == 400 and code(listed) == "invalid_characters"


@pytest.mark.parametrize("value", ["²", "x", "1.5", "-1", "0", "99999999999999999999999"])
def test_query_parameters_go_through_serializers(admin, value) -> None:
    response = admin.client.get("/api/v1/keys", {"agent_id": value})
    assert response.status_code == 400 and code(response) == "validation_error"


def test_unknown_fields_and_parameters_are_refused(admin, kb) -> None:
    client = admin.client
    typo = client.post(
        "/api/v1/rag/search", {"query": "x", "filters": {"doc_type": ["runbook"]}}, format="json"
    )
    assert typo.status_code == 400 and code(typo) == "unknown_field"
    assert "doc_type" in typo.json()["error"]["details"]["filters"]
    body = client.post(KBS, {"name": "New", "colour": "blue"}, format="json")
    assert body.status_code == 400 and code(body) == "unknown_field"
    assert not KnowledgeBase.objects.filter(name="New").exists()
    param = client.get(f"{KBS}/{kb['id']}/documents", {"stauts": "indexed"})
    assert param.status_code == 400 and code(param) == "unknown_field"
    unpaged = client.get("/api/v1/me", {"cursor": "x"})
    assert unpaged.status_code == 400 and code(unpaged) == "unknown_field"


@pytest.mark.parametrize(
    "payload",
    [
        {"name": 0},
        {"name": "x", "chunk_size": "64"},
        {"name": "x", "chunk_size": 64.5},
        {"name": "x", "chunk_size": True},
        {"name": ""},
        {"name": "x", "description": None},
    ],
)
def test_values_must_have_their_documented_json_type(agent_client, payload) -> None:
    response = agent_client.client.post(KBS, payload, format="json")
    assert response.status_code == 400 and code(response) == "validation_error"
    assert not KnowledgeBase.objects.exists()


def test_bad_cursor_and_page_size_are_400(agent_client, kb) -> None:
    client = agent_client.client
    assert code(client.get(KBS, {"cursor": "garbage"})) == "invalid_cursor"
    for size in ("0", "501", "x", "²"):
        response = client.get(KBS, {"page_size": size})
        assert response.status_code == 400 and code(response) == "invalid_page_size"
    assert client.get(KBS, {"page_size": "1"}).json()["results"][0]["id"] == kb["id"]


def test_ids_too_large_for_a_bigint_are_404(agent_client) -> None:
    response = agent_client.client.get(f"{KBS}/{10**30}")
    assert response.status_code == 404 and code(response) == "not_found"


def test_bodies_over_the_limit_are_413(agent_client, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    response = agent_client.client.post(KBS, {"name": "x" * 2000}, format="json")
    assert response.status_code == 413 and code(response) == "request_too_large"


def test_a_base64_upload_at_the_size_limit_fits_in_a_request(
    agent_client, kb, settings, django_capture_on_commit_callbacks
) -> None:
    # The limit counts the file; its base64 form in JSON is a third larger.
    size = settings.RAG_MAX_UPLOAD_BYTES
    settings.RAG_MAX_EXTRACTED_CHARS = size  # this test is about bytes, not text
    data = (b"word " * (size // 5 + 1))[:size]
    body = json.dumps({"content_base64": base64.b64encode(data).decode(), "filename": "big.txt"})
    assert len(body) > size * 4 // 3
    with django_capture_on_commit_callbacks(execute=False):
        response = agent_client.client.generic(
            "POST", f"{KBS}/{kb['id']}/documents", body, content_type="application/json"
        )
    assert response.status_code == 201, response.content[:300]
    assert Document.objects.get().size_bytes == size


def test_an_embedding_outage_is_503_with_retry_after(agent_client, kb, embeddings_down) -> None:
    embeddings_down()
    response = agent_client.client.post("/api/v1/rag/search", {"query": "x"}, format="json")
    assert response.status_code == 503 and code(response) == "provider_unavailable"
    assert response.json()["error"]["details"]["provider"] == "embeddings"
    assert int(response["Retry-After"]) > 0


def test_an_admin_page_whose_store_is_down_is_a_503_page(monkeypatch) -> None:
    """Not a server error: the page says what is down and when to try again."""
    import redis
    from django.test import Client

    from memory.maintenance.admin import rot as rot_admin

    def down(**kwargs):
        raise redis.ConnectionError("Connection refused")

    monkeypatch.setattr(rot_admin.rot, "rot_report", down)
    AccountFactory.create()
    client = Client()
    client.force_login(UserFactory.create(is_staff=True, is_superuser=True))
    page = client.get(reverse("admin:memory_rot_report"))
    assert page.status_code == 503 and page["Retry-After"] == "10"
    assert "Redis is unavailable." in page.content.decode()


def test_a_database_outage_is_503(agent_client, monkeypatch) -> None:
    from rag import selectors

    def down(**kwargs):
        raise OperationalError("connection to server failed")

    monkeypatch.setattr(selectors, "knowledge_base_list", down)
    response = agent_client.client.get(KBS)
    assert response.status_code == 503 and code(response) == "store_unavailable"
    assert response["Retry-After"]


def test_401_names_the_scheme() -> None:
    response = APIClient().get("/api/v1/me")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


@pytest.mark.django_db(transaction=True)
def test_racing_creates_of_one_name_give_one_201_and_one_409(make_agent_client) -> None:
    authed = make_agent_client()
    barrier = threading.Barrier(2)
    statuses: list[tuple[int, str]] = []

    def create() -> None:
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {authed.secret}")
        barrier.wait()
        response = client.post(KBS, {"name": "Same"}, format="json")
        body = response.json()
        statuses.append((response.status_code, body.get("error", {}).get("code", "")))
        connection.close()

    threads = [threading.Thread(target=create) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(statuses) == [(201, ""), (409, "name_taken")]


def test_throttling_per_key_with_retry_after(make_agent_client, settings) -> None:
    settings.API_THROTTLE_RATES = {"read": "3/minute", "write": "1/minute"}
    first, second = make_agent_client(), make_agent_client()
    assert [first.client.get("/api/v1/me").status_code for _ in range(3)] == [200] * 3
    throttled = first.client.get("/api/v1/me")
    assert throttled.status_code == 429 and code(throttled) == "throttled"
    assert 1 <= int(throttled["Retry-After"]) <= 60
    assert second.client.get("/api/v1/me").status_code == 200  # budgets are per key
    assert first.client.post(KBS, {"name": "a"}, format="json").status_code == 201
    assert first.client.post(KBS, {"name": "b"}, format="json").status_code == 429


def test_the_throttle_counts_in_one_redis_round_trip(monkeypatch) -> None:
    from django.core.cache import caches

    from core import throttling

    backend: Any = caches["default"]

    def two_calls(*args: object, **kwargs: object) -> None:
        raise AssertionError("the counter took the generic add + incr path")

    monkeypatch.setattr(backend, "add", two_calls)
    counter = f"throttle:test:{os.getpid()}:{time.time_ns()}"
    assert [throttling._count(counter, 5) for _ in range(3)] == [1, 2, 3]
    assert (
        0
        < backend._cache.get_client(backend.make_and_validate_key(counter)).ttl(
            backend.make_and_validate_key(counter)
        )
        <= 5
    )


def test_throttling_lets_requests_through_when_redis_is_down(agent_client, settings) -> None:
    settings.API_THROTTLE_RATES = {"read": "1/minute", "write": "1/minute"}
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "unix:///nonexistent/engram.sock",
        }
    }
    assert [agent_client.client.get("/api/v1/me").status_code for _ in range(3)] == [200] * 3


def test_an_admin_403_is_not_logged_as_an_unhandled_error(client, caplog) -> None:
    user = UserFactory.create(is_staff=True)
    client.force_login(user)
    with caplog.at_level(logging.INFO, logger="engram.request"):
        response = client.get(reverse("admin:auth_user_changelist"))
    assert response.status_code == 403
    assert not [r for r in caplog.records if r.name == "engram.request" and r.levelno >= 40]


def test_repeated_or_empty_parameters_and_null_bodies_are_400(agent_client, kb) -> None:
    client = agent_client.client
    repeated = client.get(f"{KBS}?page_size=1&page_size=2")
    assert repeated.status_code == 400 and code(repeated) == "validation_error"
    empty = client.get(f"{KBS}/{kb['id']}/documents?status=")
    assert empty.status_code == 400 and code(empty) == "validation_error"
    document = client.post(f"{KBS}/{kb['id']}/documents", {"text": "hi"}, format="json").json()
    null = post_raw(client, f"/api/v1/rag/documents/{document['id']}/reprocess", "null")
    assert null.status_code == 400 and code(null) == "validation_error"
    no_body = client.post(f"/api/v1/rag/documents/{document['id']}/reprocess")
    assert no_body.status_code == 202


def test_lengths_count_the_string_as_sent(agent_client) -> None:
    response = agent_client.client.post(
        "/api/v1/rag/search", {"query": "\n" + "x" * 4000}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["error"]["details"]["query"][0].startswith("At most 4000")


def test_searches_spend_the_read_budget(make_agent_client, settings) -> None:
    settings.API_THROTTLE_RATES = {"read": "100/minute", "write": "1/minute"}
    reader = make_agent_client(scopes=("read",))
    for _ in range(3):
        response = reader.client.post("/api/v1/rag/search", {"query": "x"}, format="json")
        assert response.status_code == 200, response.json()


def test_a_listed_string_is_as_long_as_sent_not_as_trimmed(agent_client) -> None:
    """A tag of 100 characters after a leading no-break space is 101 characters as sent: over
    the schema's maxLength, so refused, not trimmed to fit (schemathesis found it)."""
    tag = "\u00a0" + "x" * 100
    answer = agent_client.client.post(
        "/api/v1/skills/proposals", {"name": "Roll back", "tags": ["ok", tag]}, format="json"
    )
    assert answer.status_code == 400 and code(answer) == "validation_error", answer.content
    assert answer.json()["error"]["details"]["tags"] == {"1": ["At most 100 characters."]}
    fine = agent_client.client.post(
        "/api/v1/skills/proposals", {"name": "Roll back", "tags": ["x" * 100]}, format="json"
    )
    assert fine.status_code == 201, fine.content
