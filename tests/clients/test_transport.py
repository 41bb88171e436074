"""The client's HTTP handling without a server (httpx's mock transport): the request each method
builds, errors by status with the API's code, retries after ``Retry-After``, and pages followed
to the end, sync and async."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import pytest

import engram_client  # isort: skip
from engram_client import AsyncEngram, Engram  # isort: skip


def _client(handler: Any, **options: Any) -> Engram:
    http = httpx.Client(transport=httpx.MockTransport(handler))
    return Engram(base_url="http://engram.test/", api_key="eng_k", http_client=http, **options)


def test_a_method_sends_its_path_body_and_query_and_leaves_none_out() -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json={"id": 1})

    client = _client(handler)
    client.memories.working.set("s 1", "a/b", value=None)
    client.graph.path(from_=3, to=4)
    client.memories.long_term.contexts.list(include_archived=True)
    client.conversations.create(title="t")
    put, path, listed, created = seen
    assert put.method == "PUT" and put.url.raw_path == b"/api/v1/memory/working/s%201/a%2Fb"
    assert json.loads(put.content) == {"value": None}  # a required value is sent even when None
    assert put.headers["Authorization"] == "Bearer eng_k"
    assert path.url.params == httpx.QueryParams({"from": "3", "to": "4"}) and not path.content
    assert listed.url.params["include_archived"] == "true"
    assert json.loads(created.content) == {"title": "t"}


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (400, engram_client.BadRequestError),
        (401, engram_client.AuthenticationError),
        (403, engram_client.PermissionDeniedError),
        (404, engram_client.NotFoundError),
        (409, engram_client.ConflictError),
        (413, engram_client.PayloadTooLargeError),
        (429, engram_client.RateLimitError),
        (503, engram_client.ServiceUnavailableError),
        (500, engram_client.InternalServerError),
        (418, engram_client.APIError),
    ],
)
def test_errors_by_status_carry_the_code(status: int, kind: type[Exception]) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        body = {"error": {"code": "some_code", "message": "Why.", "details": {"a": 1}}}
        headers = {"X-Request-ID": "r-1", "Retry-After": "7"}
        return httpx.Response(status, json=body, headers=headers)

    with pytest.raises(kind) as caught:
        _client(handler).agents.me()
    error = caught.value
    assert isinstance(error, engram_client.APIError)
    assert (error.status, error.code, error.message) == (status, "some_code", "Why.")
    assert (error.details, error.request_id, error.retry_after) == ({"a": 1}, "r-1", 7.0)


def test_an_error_without_the_json_shape_keeps_its_status_and_a_connection_error() -> None:
    with pytest.raises(engram_client.APIError) as caught:
        _client(lambda request: httpx.Response(502, text="bad gateway")).agents.me()
    assert (caught.value.status, caught.value.code) == (502, "http_error")

    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    with pytest.raises(engram_client.APIConnectionError):
        _client(refuse).agents.me()


def test_429_and_503_are_retried_after_retry_after_when_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []
    monkeypatch.setattr("engram_client._client.time.sleep", waits.append)
    answers = iter([429, 503, 200])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(answers)
        if status == 200:
            return httpx.Response(200, json={"id": 5})
        return httpx.Response(
            status,
            json={"error": {"code": "x", "message": "", "details": {}}},
            headers={"Retry-After": "90"},
        )

    assert _client(handler, max_retries=2, max_retry_wait=3).agents.me()["id"] == 5
    assert waits == [3, 3]
    with pytest.raises(engram_client.RateLimitError):
        _client(lambda r: httpx.Response(429, json={})).agents.me()


def _pages(request: httpx.Request) -> httpx.Response:
    cursor = request.url.params.get("cursor")
    if cursor is None:
        return httpx.Response(
            200,
            json={
                "next": "http://engram.test/api/v1/agents?cursor=2",
                "previous": None,
                "results": [{"id": 1}, {"id": 2}],
            },
        )
    if cursor == "2":
        return httpx.Response(
            200,
            json={
                "next": "http://engram.test/api/v1/agents?cursor=3",
                "previous": None,
                "results": [{"id": 3}],
            },
        )
    # an empty page with a next link (pool events point after the last event) ends the walk
    return httpx.Response(
        200, json={"next": "http://engram.test/api/v1/agents?cursor=3", "results": []}
    )


def test_pages_are_followed_to_the_end() -> None:
    page = _client(_pages).agents.list(page_size=2)
    assert [agent["id"] for agent in page.results] == [1, 2]
    assert [agent["id"] for agent in page] == [1, 2, 3]
    assert [len(p.results) for p in page.iter_pages()] == [2, 1, 0]


def test_the_async_client_builds_the_same_requests() -> None:
    async def run() -> list[int]:
        http = httpx.AsyncClient(transport=httpx.MockTransport(_pages))
        async with AsyncEngram(base_url="http://engram.test", api_key="k", http_client=http) as c:
            return [agent["id"] async for agent in await c.agents.list()]

    assert asyncio.run(run()) == [1, 2, 3]
