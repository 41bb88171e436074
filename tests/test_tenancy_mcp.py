"""Tenancy across every MCP tool: the intruder walk of tests/test_tenancy.py, through ``/mcp``.

The same two accounts with data of every kind (tests/support/world.py). For every tool the
caller (an admin key of the account that has data too) names the intruder's ids, then ids that
do not exist, then its own: the first two must answer exactly alike (the whole result, ids
aside) and change nothing of the intruder's; the third must succeed. No answer may show the
intruder's data. A tool the registry lists without a case here fails.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from core import services
from core.actors import actor_for_account
from core.mcp.registry import tools
from tests.support.mcp import rpc
from tests.support.world import SharedWorld, Side, build_side, shared_world
from tests.test_tenancy import INTRUDER, OWN, Case, Target, intruder_state, normalised

pytestmark = pytest.mark.django_db

Arguments = dict[str, Any]


def _ids(build: Any) -> Case:
    return Case(lambda t: ("", build(t), None))


def _names(build: Any) -> Case:
    return Case(lambda t: ("", build(t), None), names_ids=False, intruder_names=True)


def _none(arguments: Arguments) -> Case:
    return Case(lambda t: ("", arguments, None), names_ids=False)


def _job(selector: str, value: str, case: Case) -> Case:
    """``case`` calling the tool's job ``value`` (its ``selector`` among the arguments)."""

    def build(target: Target | None) -> Any:
        path, arguments, extra = case.build(target)
        return path, {selector: value, **(arguments or {})}, extra

    return Case(build, names_ids=case.names_ids, intruder_names=case.intruder_names)


TOOL_CASES: dict[str, Case] = {
    # Memory: sessions, keys and pool ids are the caller's own names; contexts are ids.
    "memory_write": _ids(
        lambda t: {"tier": "long_term", "content": "mine", "context": t.context_id}
    ),
    "memory_read": _ids(lambda t: {"key": t.memory_key, "session_id": t.session_id}),
    "memory_search": _ids(
        lambda t: {
            "query": "note",
            "tiers": ["working", "short_term"],
            "filters": {"session_id": t.session_id},
        }
    ),
    "memory_search.long_term": _job(
        "kind",
        "long_term",
        _ids(
            lambda t: {
                "query": f"{INTRUDER}LTM notes about the deploy on Fridays",
                "filters": {"context_ids": [t.context_id]},
            }
        ),
    ),
    "memory_consolidate": _ids(lambda t: {"session_id": t.session_id, "dry_run": True}),
    "memory_consolidate.maintenance": _job(
        "action", "maintenance", _ids(lambda t: {"dry_run": True, "context_ids": [t.context_id]})
    ),
    "memory_consolidate.maintenance_status": _job(
        "action", "maintenance_status", _ids(lambda t: {"job_id": t.job_id})
    ),
    "memory_stats": _ids(lambda t: {"session_id": t.session_id}),
    "memory_write.structured": _job(
        "kind",
        "structured",
        _ids(
            lambda t: {
                "text": "The crane schedule changes every spring with the harbour tides",
                "related": [{"kind": "entry", "id": t.entry_id}],
            }
        ),
    ),
    "memory_search.similar": _job(
        "kind", "similar", _none({"query": f"{INTRUDER}TOOL release train Thursday"})
    ),
    "memory_search.related": _job(
        "kind", "related", _ids(lambda t: {"related": [{"kind": "entry", "id": t.entry_id}]})
    ),
    "memory_search.summary": _job(
        "kind", "summary", _none({"query": f"{INTRUDER}TOOL release train Thursday"})
    ),
    "conversation.add_messages": _job(
        "action",
        "add_messages",
        _ids(
            lambda t: {
                "conversation_id": t.conversation_id,
                "messages": [{"role": "user", "content": "injected"}],
            }
        ),
    ),
    "conversation": _job(
        "action", "recent", _ids(lambda t: {"conversation_id": t.conversation_id, "last": 5})
    ),
    "conversation.summarize": _job(
        "action", "summarize", _ids(lambda t: {"conversation_id": t.conversation_id})
    ),
    "get_context": _ids(
        lambda t: {
            "query": "moved to Porto; deploys on Fridays; tomatoes and basil",
            "conversation_id": t.conversation_id,
            "token_budget": 32000,
        }
    ),
    "create_memory_pool": _names(lambda t: {"pool_id": t.pool_id}),
    "list_memory_pools": _none({}),
    "read_shared_memory": _ids(lambda t: {"pool_id": t.pool_id, "key": "note"}),
    "write_shared_memory": _ids(lambda t: {"pool_id": t.pool_id, "key": "note", "value": "x"}),
    "read_pool_events": _ids(lambda t: {"pool_id": t.pool_id}),
    "delete_memory_pool": _ids(lambda t: {"pool_id": t.pool_id}),
    # Knowledge items: base names are the caller's to take; the intruder's answer like missing.
    "memory_write.knowledge_item": _job(
        "kind",
        "knowledge_item",
        _names(lambda t: {"base": t.knowledge_base, "key": t.memory_key, "content": "mine"}),
    ),
    "memory_read.knowledge_item": _job(
        "kind", "knowledge_item", _ids(lambda t: {"base": t.knowledge_base, "key": t.memory_key})
    ),
    "memory_search.knowledge_item": _job(
        "kind",
        "knowledge_item",
        _ids(lambda t: {"query": f"{INTRUDER}KNOW tide turns noon", "bases": [t.knowledge_base]}),
    ),
    "memory_write.knowledge_relationship": _job(
        "kind",
        "knowledge_relationship",
        _ids(
            lambda t: {
                "source": {"base": t.knowledge_base, "key": t.memory_key},
                "target": {"base": t.knowledge_base, "key": "harbour"},
                "relationship_type": "close_to",
            }
        ),
    ),
    # Knowledge bases and documents.
    "query_knowledge_base": _ids(
        lambda t: {
            "query": f"{INTRUDER}CHUNK tomatoes basil",
            "filters": {"knowledge_base_ids": [t.kb_id]},
        }
    ),
    "search_documents": _ids(
        lambda t: {
            "query": f"{INTRUDER}CHUNK tomatoes basil",
            "filters": {"knowledge_base_ids": [t.kb_id]},
        }
    ),
    "query_knowledge_base.agentic": _job(
        "kind",
        "agentic",
        _ids(lambda t: {"query": "tomatoes basil garden", "knowledge_base_ids": [t.kb_id]}),
    ),
    "add_document": _ids(lambda t: {"knowledge_base_id": t.kb_id, "text": "injected"}),
    "process_document": _ids(lambda t: {"document_id": t.document_id, "force": True}),
    # The knowledge graph.
    "search_knowledge_graph": _none({"query": f"{INTRUDER}NODE city river"}),
    "get_graph_neighbors": _ids(lambda t: {"node_id": t.node_id, "hops": 2}),
    "query_knowledge_base.graph": _job(
        "kind", "graph", _none({"query": f"{INTRUDER}NODE city river harbour"})
    ),
    # Skills and agents.
    "discover_skills": _none({"description": f"{INTRUDER}SKILLDESC deploy service cluster"}),
    "get_skill_context": _ids(lambda t: {"skill_id": t.skill_id}),
    "list_skills": _none({}),
    "propose_skill": _names(lambda t: {"name": t.proposal_name, "description": "deploy"}),
    "record_skill_usage": _ids(
        lambda t: {
            "agent_id": t.agent_id,
            "skill_id": t.skill_id,
            "task_type": "x",
            "success": True,
        }
    ),
    "rank_agents": _none({"title": "deploy", "task_type": "deployment"}),
    "get_learning_profile": _ids(lambda t: {"agent_id": t.agent_id}),
    # Pages: titles are the caller's to take; ids and titles name only its own pages.
    "read_page": _ids(lambda t: {"page_id": t.page_id}),
    "write_page": _names(lambda t: {"title": t.page_title, "content": "[[Harbour Notes]]"}),
    "page_backlinks": _ids(lambda t: {"page_id": t.page_id}),
    "search_pages": _none({"query": f"{INTRUDER}PAGE harbour notes"}),
}
# Second ways of naming the same things.
MORE_CASES: dict[str, tuple[str, Case]] = {
    "search_knowledge_graph_walk": (
        "search_knowledge_graph",
        _none({"query": f"{INTRUDER}NODE city river", "mode": "graph", "max_hops": 3}),
    ),
    "long_term_memory_search_graph": (
        "memory_search",
        _none(
            {
                "kind": "long_term",
                "query": f"{INTRUDER}LTM the office is in Lisbon",
                "mode": "graph",
            }
        ),
    ),
    "read_page_by_title": ("read_page", _ids(lambda t: {"title": t.page_title})),
    "page_backlinks_by_title": ("page_backlinks", _ids(lambda t: {"title": t.page_title})),
    "memory_write_key": (
        "memory_write",
        _names(
            lambda t: {
                "tier": "short_term",
                "key": t.memory_key,
                "value": 1,
                "session_id": t.session_id,
            }
        ),
    ),
    "memory_read_short_term": (
        "memory_read",
        _ids(lambda t: {"key": t.memory_key, "session_id": t.session_id, "tier": "short_term"}),
    ),
}


def _case_names() -> set[str]:
    """One case per job: ``tool`` for a tool's default job, ``tool.job`` for the others."""
    return {
        tool.name if job.value == tool.default else f"{tool.name}.{job.value}"
        for tool in tools().values()
        for job in tool.jobs
    }


def test_every_tool_and_job_has_a_tenancy_case() -> None:
    assert sorted(_case_names() ^ set(TOOL_CASES)) == [], "add a case for each new tool or job"


@pytest.fixture(scope="module")
def _sides_built(
    django_db_setup: None, django_db_blocker: Any
) -> Iterator[SharedWorld[tuple[Side, Side]]]:
    """Both sides, built once per module and worker (tests/support/world.py, shared_world)."""
    with shared_world(
        django_db_blocker,
        lambda capture: (build_side(OWN, capture), build_side(INTRUDER, capture)),
        state=lambda sides: (intruder_state(sides[0]), intruder_state(sides[1])),
    ) as world:
        yield world


@pytest.fixture
def sides(_sides_built: SharedWorld[tuple[Side, Side]], db: None) -> tuple[Side, Side]:
    """The two sides as built: each case's writes are rolled back, Redis is put back."""
    return _sides_built.fresh()


def _call(secret: str, tool: str, arguments: Arguments, capture: Any) -> tuple[Any, str]:
    with capture(execute=True):
        response = rpc(secret, "tools/call", {"name": tool, "arguments": arguments})
    assert response.status_code == 200, response.content
    text = response.content.decode()
    return json.loads(text)["result"], text


@pytest.mark.parametrize("case_name", sorted({*TOOL_CASES, *MORE_CASES}))
def test_foreign_ids_answer_like_missing_ones_through_every_tool(
    case_name: str, sides: tuple[Side, Side], django_capture_on_commit_callbacks: Any
) -> None:
    own, intruder = sides
    tool, case = MORE_CASES.get(case_name, (case_name.split(".")[0], TOOL_CASES.get(case_name)))
    assert case is not None
    _, secret = services.api_key_create(
        actor=actor_for_account(own.account.pk), agent=own.agent, scopes=["admin"]
    )
    before = intruder_state(intruder)
    seen: list[str] = []

    def run(target: Target | None) -> Any:
        _, arguments, _ = case.build(target)
        assert isinstance(arguments, dict)
        result, text = _call(secret, tool, arguments, django_capture_on_commit_callbacks)
        seen.append(text)
        return result

    if case.intruder_names:
        result = run(Target.of(intruder))
    elif case.names_ids:
        foreign_target, missing_target = Target.of(intruder), Target.missing()
        foreign, missing = run(foreign_target), run(missing_target)
        assert foreign["isError"] == missing["isError"], (tool, foreign, missing)
        assert normalised(foreign, foreign_target) == normalised(missing, missing_target)
        assert intruder_state(intruder) == before, f"{case_name} changed the intruder's data"
        result = run(Target.of(own))
    else:
        result = run(None)
    assert not result["isError"], (case_name, result)
    assert intruder_state(intruder) == before, f"{case_name} changed the intruder's data"
    for text in seen:
        assert INTRUDER not in text and INTRUDER.lower() not in text, (case_name, text[:500])
