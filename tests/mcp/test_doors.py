"""Each MCP tool (and each job of a tool) answers what its REST operation answers for the same
input: REST and MCP are two doors to one service.

One account's data of every kind (tests/support/world.py). For every case the REST operation
the registry names (``Job.rest``) is called with the arguments (path parameters in the URL, the
rest as the query string of a GET or the JSON body of a write), then the tool with the same
arguments, on the same data: a write's REST call runs in a savepoint rolled back before the
tool's call. The answers must be equal, but for what cannot be: the time spent
(``timings_ms``), a write's new ids and timestamps, absolute URLs (a tool answers paths), and a
list's paging links (a tool answers ``next_cursor``: docs/mcp.md, "Tools").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import pytest
from django.db import transaction
from django.test import Client

from core import services
from core.actors import actor_for_account
from core.mcp.registry import Job, Tool, tools
from tests.support.mcp import tool_call
from tests.support.world import Side, build_side
from tests.test_tenancy import OWN, Target

pytestmark = pytest.mark.django_db

Build = Callable[[Target], dict[str, Any]]

# Case name: ``tool`` (its default job) or ``tool.job``; the arguments, from the side's ids.
CASES: dict[str, Build] = {
    "memory_write": lambda t: {"tier": "long_term", "content": "The office is in Lisbon."},
    "memory_write.structured": lambda t: {
        "text": "The crane schedule changes every spring with the harbour tides"
    },
    "memory_write.knowledge_item": lambda t: {
        "base": t.knowledge_base,
        "key": "door-test",
        "content": "The tide turns at noon.",
    },
    "memory_write.knowledge_relationship": lambda t: {
        "source": {"base": t.knowledge_base, "key": t.memory_key},
        "target": {"base": t.knowledge_base, "key": "harbour"},
        "relationship_type": "close_to",
    },
    "memory_read": lambda t: {"key": t.memory_key, "session_id": t.session_id},
    "memory_read.knowledge_item": lambda t: {"base": t.knowledge_base, "key": t.memory_key},
    "memory_search": lambda t: {"query": "note", "top_k": 5},
    "memory_search.long_term": lambda t: {"query": "deploy on Fridays", "top_k": 5},
    "memory_search.similar": lambda t: {"query": "release train Thursday"},
    "memory_search.related": lambda t: {"related": [{"kind": "entry", "id": t.entry_id}]},
    "memory_search.summary": lambda t: {"query": "release train Thursday"},
    "memory_search.knowledge_item": lambda t: {"query": "tide", "bases": [t.knowledge_base]},
    "memory_consolidate": lambda t: {"session_id": t.session_id, "dry_run": True},
    "memory_consolidate.maintenance": lambda t: {"dry_run": True, "context_ids": [t.context_id]},
    "memory_consolidate.maintenance_status": lambda t: {"job_id": t.job_id},
    "memory_stats": lambda t: {"session_id": t.session_id},
    "create_memory_pool": lambda t: {"pool_id": "door-test-pool"},
    "list_memory_pools": lambda t: {},
    "read_shared_memory": lambda t: {"pool_id": t.pool_id, "key": "note"},
    "write_shared_memory": lambda t: {"pool_id": t.pool_id, "key": "door", "value": {"a": 1}},
    "read_pool_events": lambda t: {"pool_id": t.pool_id},
    "delete_memory_pool": lambda t: {"pool_id": t.pool_id},
    "conversation": lambda t: {"conversation_id": t.conversation_id, "last": 5},
    "conversation.add_messages": lambda t: {
        "conversation_id": t.conversation_id,
        "messages": [{"role": "user", "content": "I moved to Porto."}],
    },
    "conversation.summarize": lambda t: {"conversation_id": t.conversation_id},
    "get_context": lambda t: {"query": "deploys on Fridays", "token_budget": 2000},
    "query_knowledge_base": lambda t: {"query": "tomatoes basil", "top_k": 5},
    "query_knowledge_base.graph": lambda t: {"query": "city river harbour"},
    "query_knowledge_base.agentic": lambda t: {"query": "tomatoes basil", "max_rounds": 1},
    "search_documents": lambda t: {"query": "tomatoes basil", "top_k": 5},
    "add_document": lambda t: {"knowledge_base_id": t.kb_id, "text": "Basil likes sun."},
    "process_document": lambda t: {"document_id": t.document_id},
    "search_knowledge_graph": lambda t: {"query": "city river", "top_k": 5},
    "get_graph_neighbors": lambda t: {"node_id": t.node_id, "hops": 2},
    "discover_skills": lambda t: {"description": "deploy service cluster"},
    "get_skill_context": lambda t: {"skill_id": t.skill_id},
    "list_skills": lambda t: {},
    "propose_skill": lambda t: {"name": "Door test skill", "description": "deploy"},
    "record_skill_usage": lambda t: {"agent_id": t.agent_id, "task_type": "x", "success": True},
    "rank_agents": lambda t: {"title": "deploy", "task_type": "deployment"},
    "get_learning_profile": lambda t: {"agent_id": t.agent_id},
    "read_page": lambda t: {"page_id": t.page_id},
    "write_page": lambda t: {"title": "Door test page", "content": "[[Harbour Notes]]"},
    "page_backlinks": lambda t: {"page_id": t.page_id},
    "search_pages": lambda t: {"query": "harbour notes"},
}
# What differs between two answers to the same request at different moments.
TIMES = re.compile(r"(^|_)(at|ms)$|^timings_ms$|^valid_(from|to)$")
NEW_IDS = re.compile(r"(^|_)ids?$|^lineage$|^version$|^checksum$|^slug$|^url$|_url$")


def _cases() -> dict[str, tuple[Tool, Job]]:
    found = {}
    for tool in tools().values():
        for job in tool.jobs:
            name = tool.name if job.value == tool.default else f"{tool.name}.{job.value}"
            found[name] = (tool, job)
    return found


def test_every_tool_and_job_has_a_door_case() -> None:
    assert sorted(set(_cases()) ^ set(CASES)) == [], "add a case for each new tool or job"


def _normalised(value: Any, *, writes: bool) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if TIMES.search(key) or (writes and NEW_IDS.search(key)):
                continue
            out[key] = _normalised(item, writes=writes)
        return out
    if isinstance(value, list):
        return [_normalised(item, writes=writes) for item in value]
    if isinstance(value, str):
        return value.removeprefix("http://testserver")
    if isinstance(value, float):
        return round(value, 3)  # a recency decays between the two calls
    return value


def _rest(client: Client, secret: str, job: Job, arguments: dict[str, Any]) -> tuple[int, Any]:
    """The REST operation ``job.rest`` called with ``arguments``."""
    method, _, url = job.rest.partition(" ")
    url = url.split("?")[0]
    rest = dict(arguments)
    for name in re.findall(r"{(\w+)}", url):
        value = rest.pop("key", rest.pop("path", "")) if name == "path" else rest.pop(name)
        url = url.replace(f"{{{name}}}", str(value))
    headers = {"HTTP_AUTHORIZATION": f"Bearer {secret}"}
    if method in ("GET", "DELETE"):
        query = urlencode({k: v for k, v in rest.items()}, doseq=True)
        response = getattr(client, method.lower())(f"{url}?{query}" if query else url, **headers)
    else:
        response = getattr(client, method.lower())(
            url, json.dumps(rest), content_type="application/json", **headers
        )
    return response.status_code, response.json() if response.content else None


@pytest.fixture
def own(django_capture_on_commit_callbacks: Any) -> Side:
    return build_side(OWN, django_capture_on_commit_callbacks)


def test_each_tool_answers_what_its_rest_operation_answers(
    own: Side, django_capture_on_commit_callbacks: Any
) -> None:
    _, secret = services.api_key_create(
        actor=actor_for_account(own.account.pk), agent=own.agent, scopes=["admin"]
    )
    target, client, differ = Target.of(own), Client(), []
    for name, (tool, job) in _cases().items():
        arguments = CASES[name](target)
        writes = job.scope != "read"
        with transaction.atomic():
            status, answer = _rest(client, secret, job, arguments)
            transaction.set_rollback(writes)
        assert 200 <= status < 300, (name, status, answer)
        picked = {tool.selector: job.value} if job.value != tool.default else {}
        with django_capture_on_commit_callbacks(execute=False):
            result = tool_call(secret, tool.name, {**picked, **arguments})
        assert not result["isError"], (name, result["structuredContent"])
        through_mcp = result["structuredContent"]
        if answer is None:  # 204: a deletion
            assert through_mcp == {"pool_id": arguments["pool_id"], "deleted": True}, name
            continue
        if "next_cursor" in through_mcp:  # a list: the page's items (its links: next_cursor)
            through_mcp, answer = through_mcp["results"], answer["results"]
        paths = _differences(
            _normalised(through_mcp, writes=writes), _normalised(answer, writes=writes)
        )
        if paths:
            differ.append((name, paths[:5]))
    assert not differ, "\n".join(f"{n}: {p}" for n, p in differ)


def _differences(a: Any, b: Any, at: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ, as paths with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        found = [f"{at}.{k}: only one side" for k in set(a) ^ set(b)]
        for k in set(a) & set(b):
            found += _differences(a[k], b[k], f"{at}.{k}")
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{at}[{i}]")
        ]
    return [] if a == b else [f"{at}: {str(a)[:80]!r} != {str(b)[:80]!r}"]
