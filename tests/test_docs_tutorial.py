"""docs/tutorial.md cannot go stale: its Python blocks run, in order and in one namespace, against
a live server (pytest-django's live server: Django's own threaded WSGI server, serving the API and
``/mcp`` as gunicorn does; Celery eager, so what the worker does has happened when a request
answers), with ENGRAM_URL and ENGRAM_API_KEY set as a reader sets them. Every path it names
resolves in the URLconf, and its JSON configurations parse."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from core import services
from core.actors import actor_for_account
from core.mcp.registry import tools
from memory.models import KnowledgeItem, MemoryEntry
from rag.models import Document
from tests.factories import AgentFactory
from tests.support import docs

TUTORIAL = docs.ROOT / "docs" / "tutorial.md"


@pytest.mark.slow
@pytest.mark.real_embeddings  # the context's floors and the search rank by meaning, as a reader's
@pytest.mark.django_db(transaction=True)
def test_the_python_blocks_run_in_order_against_a_live_server(
    live_server: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    agent = AgentFactory.create()
    _, secret = services.api_key_create(
        actor=actor_for_account(agent.account_id), agent=agent, scopes=["read", "write"]
    )
    monkeypatch.setenv("ENGRAM_URL", live_server.url)
    monkeypatch.setenv("ENGRAM_API_KEY", secret)
    monkeypatch.syspath_prepend(str(docs.CLIENT_SRC))  # as `pip install ./clients/python` would
    blocks = docs.blocks(TUTORIAL, "python")
    assert len(blocks) >= 6
    namespace: dict[str, Any] = {"__name__": "tutorial"}
    for line, code in blocks:
        exec(compile(code, f"{TUTORIAL}:{line}", "exec"), namespace)  # noqa: S102
    printed = capsys.readouterr().out

    # 2: the client is the tutorial's agent.
    assert namespace["me"]["id"] == agent.id
    # 3: MCP listed every tool and wrote a long-term memory of the agent's own.
    assert f"{len(tools())} tools" in printed
    written = namespace["written"]
    assert written["tier"] == "long_term"
    entry = MemoryEntry.objects.get(pk=written["entry_id"])
    assert entry.content == "Maria prefers window seats and quiet rooms."
    assert entry.context.is_agent_memory and entry.context.owner_id == agent.id
    # 4: seven messages, indexed, and the offline extractor's fact.
    chat = namespace["client"].conversations.retrieve(namespace["chat"]["id"])
    assert chat["message_count"] == 7 and chat["indexing"]["waiting"] == 0
    assert "7 assistant Then a twin room from the 16th." in printed
    fact = KnowledgeItem.objects.get(content="Maria lives in Porto.")
    assert fact.source_context_id == chat["context_id"]
    # 5 and 6: contexts within budget, with provenance, the guide found and drawn on.
    document = Document.objects.get(pk=namespace["document"]["id"])
    assert document.status == "indexed" and document.knowledge_base.account_id == agent.account_id
    hits = namespace["found"]["results"]
    assert hits and hits[0]["document_id"] == document.pk and "peanuts" in hits[0]["text"]
    context = namespace["context"]
    assert 0 < context["tokens"] <= context["token_budget"] == 600
    assert "Taberna" in context["context"] or "Ramiro" in context["context"]
    chunk = namespace["chunks"][0]
    assert chunk["source"]["document_id"] == document.pk
    assert chunk["text"] in context["context"]
    turns = [i for s in context["sections"] for i in s["items"] if i["kind"] == "turn"]
    assert {t["source"]["conversation_id"] for t in turns} == {chat["id"]}


def test_every_path_the_tutorial_names_is_a_route() -> None:
    paths = docs.paths(TUTORIAL.read_text())
    assert {"/api/v1/me", "/mcp", "/admin/", "/api/v1/rag/search", "/readyz"} <= paths
    assert {p for p in paths if p.startswith("/admin/") and p.count("/") > 3}
    missing = docs.unrouted(paths)
    assert missing == [], f"docs/tutorial.md names paths that no route serves: {missing}"


def test_every_curl_in_the_tutorial_names_a_route() -> None:
    curls = [
        line
        for _, code in docs.blocks(TUTORIAL, "sh")
        for line in code.splitlines()
        if "curl " in line
    ]
    assert len(curls) >= 3
    for line in curls:
        assert docs.paths(line), f"a curl without a path the test can check: {line}"


def test_the_tools_the_tutorial_calls_are_registered() -> None:
    called = set(re.findall(r'call_tool\(\s*"(\w+)"', TUTORIAL.read_text()))
    assert called and called <= set(tools())


def test_the_json_configurations_parse() -> None:
    configs = docs.blocks(TUTORIAL, "json")
    assert configs
    for line, code in configs:
        try:
            json.loads(code)
        except json.JSONDecodeError as error:  # pragma: no cover - the message is the point
            pytest.fail(f"docs/tutorial.md:{line}: {error}")
