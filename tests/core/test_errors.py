from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.urls("tests.core.urls_boom")
def test_unexpected_error_is_a_500_with_request_id_and_no_internals(agent_client, caplog) -> None:
    agent_client.client.raise_request_exception = False
    with caplog.at_level(logging.ERROR, logger="engram.request"):
        response = agent_client.client.get("/api/v1/boom", HTTP_X_REQUEST_ID="req-123")
    assert response.status_code == 500
    body = response.json()
    assert body["error"]["code"] == "internal_error"
    assert body["error"]["details"] == {"request_id": "req-123"}
    assert "hunter2" not in response.content.decode()
    assert response["X-Request-ID"] == "req-123"
    assert any("hunter2" in (r.exc_text or "") or r.exc_info for r in caplog.records)


def test_unknown_api_path_is_json_404(client) -> None:
    response = client.get("/api/v1/does-not-exist")
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "not_found"


def test_insane_request_ids_are_replaced(client) -> None:
    response = client.get("/healthz", HTTP_X_REQUEST_ID="bad id\nwith newline")
    assert response["X-Request-ID"] != "bad id\nwith newline"
    assert len(response["X-Request-ID"]) == 32
