"""The skill graph's MCP tools (docs/mcp.md): ``discover_skills``, ``get_skill_context``,
``list_skills``, ``propose_skill``, ``record_skill_usage``, and the agents' ``rank_agents`` and
``get_learning_profile`` (seed 000's ``query_learnings``), over the calls the API's views make."""

from __future__ import annotations

from typing import Any

from core import serializers as strict
from core.mcp import Call, CursorInput, Tool, page, paged
from core.selectors import agent_get
from skills.apis.catalog import (
    SkillContextApi,
    SkillContextOutput,
    SkillDiscoverApi,
    SkillListCreateApi,
    SkillOutput,
)
from skills.apis.learning import AgentLearningProfileApi, AgentRankApi, TaskInput
from skills.apis.proposals import ProposalCreateApi, SkillProposalOutput
from skills.apis.usage import UsageRecordApi, UsageRecordInput
from skills.selectors import catalog as catalog_selectors
from skills.selectors import learning as learning_selectors
from skills.services import proposals as proposal_services
from skills.services import usage as usage_services


class SkillContextInput(strict.InputSerializer):
    skill_id = strict.IdField()
    routing_key = SkillContextApi.FilterSerializer._declared_fields["routing_key"]


class ListSkillsInput(CursorInput):
    category = SkillListCreateApi.FilterSerializer._declared_fields["category"]
    status = SkillListCreateApi.FilterSerializer._declared_fields["status"]


class UsageInput(UsageRecordInput):
    agent_id = strict.IdField(
        required=False, help_text="The agent that ran the task; default: you (the key's agent)."
    )


class ProfileInput(strict.InputSerializer):
    agent_id = strict.IdField(
        required=False, help_text="An agent of your account; default: you (the key's agent)."
    )


def _context(call: Call) -> dict[str, Any]:
    skill = catalog_selectors.skill_get(actor=call.actor, skill_id=call.data["skill_id"])
    context = catalog_selectors.skill_context(
        actor=call.actor, skill=skill, key=call.data.get("routing_key")
    )
    return dict(SkillContextOutput(context).data)


def _list(call: Call) -> dict[str, Any]:
    skills = catalog_selectors.skill_list(
        actor=call.actor, category=call.data.get("category"), status=call.data.get("status")
    )
    rows, cursor = page(skills, call.data)
    return {"results": SkillOutput(rows, many=True).data, "next_cursor": cursor}


def _discover(call: Call) -> dict[str, Any]:
    data = call.data
    hits = catalog_selectors.skill_discover(
        actor=call.actor,
        description=data["description"],
        top_k=data["top_k"],
        mode=data["mode"],
        fusion=data["fusion"],
        category=data.get("category"),
        statuses=data["statuses"],
    )
    return dict(
        SkillDiscoverApi.OutputSerializer(
            {"mode": data["mode"], "results": hits, "timings_ms": hits.timings_ms}
        ).data
    )


def _propose(call: Call) -> dict[str, Any]:
    proposal = proposal_services.research_and_propose(actor=call.actor, **call.data)
    return dict(SkillProposalOutput(proposal).data)


def _usage(call: Call) -> dict[str, Any]:
    record = {"agent_id": call.actor.agent_id, **call.data}
    created = usage_services.usage_record(
        actor=call.actor, records=[usage_services.UsageInput(**record)]
    )
    return dict(UsageRecordApi.OutputSerializer({"count": len(created), "records": created}).data)


def _rank(call: Call) -> dict[str, Any]:
    ranking = learning_selectors.rank_agents(actor=call.actor, **call.data)
    return dict(AgentRankApi.OutputSerializer(ranking).data)


def _profile(call: Call) -> dict[str, Any]:
    agent_id = call.data.get("agent_id") or call.actor.agent_id
    agent = agent_get(actor=call.actor, agent_id=agent_id or 0)
    profile = learning_selectors.learning_profile(agent=agent)
    return dict(AgentLearningProfileApi.OutputSerializer(profile).data)


TOOLS = (
    Tool(
        name="discover_skills",
        rest="POST /api/v1/skills/discover",
        title="Discover skills",
        description=(
            "Find the account's skills (reusable, reviewed procedures) that fit a "
            "`description` of what needs doing, best first, each explained. Active skills "
            "unless `statuses` says otherwise. Then get_skill_context gives one's procedure."
        ),
        scope="read",
        input=SkillDiscoverApi.InputSerializer,
        output=SkillDiscoverApi.OutputSerializer,
        run=_discover,
        summary=lambda out: f"{len(out['results'])} skills.",
        hints={
            "description": "What needs doing, in words (at most 2,000 characters), e.g. "
            "summarise a contract.",
            "top_k": "How many skills, 1 to 100 (default 10).",
            "mode": "hybrid (default), vector or keyword.",
            "fusion": "How hybrid stages are fused: rrf (default) or weighted.",
            "category": "Only skills of this category, e.g. analysis.",
            "statuses": 'Skill statuses to include (default ["active"]).',
        },
    ),
    Tool(
        name="get_skill_context",
        rest="GET /api/v1/skills/{skill_id}/context",
        title="Get a skill's context",
        description=(
            "What you need to run a skill: its active version routed to you (A/B tests route "
            "by `routing_key`, default you), the skills it depends on and that depend on it, "
            "and the account's most relevant documents and pages."
        ),
        scope="read",
        input=SkillContextInput,
        output=SkillContextOutput,
        run=_context,
        hints={
            "skill_id": "The skill's id (from discover_skills or list_skills), e.g. 5.",
            "routing_key": "The key A/B tests route by (default: you).",
        },
        summary=lambda out: f"Context of skill {out['skill']['name']}.",
    ),
    Tool(
        name="list_skills",
        rest="GET /api/v1/skills",
        title="List skills",
        description=(
            "The account's skills, newest first, optionally of one `category` and `status`. "
            "Paged: pass `next_cursor` back as `cursor` for more."
        ),
        scope="read",
        input=ListSkillsInput,
        output=paged(SkillOutput),
        run=_list,
        hints={
            "category": "Only this category, e.g. analysis.",
            "status": "Only this status, e.g. active.",
        },
        summary=lambda out: (
            f"{len(out['results'])} skills."
            + (" More with next_cursor." if out["next_cursor"] else "")
        ),
    ),
    Tool(
        name="propose_skill",
        rest="POST /api/v1/skills/proposals",
        title="Propose a skill",
        description=(
            "Propose a new skill for review: related skills, documents and pages are "
            "researched, the category inferred (unless given) and a procedure drafted. It is "
            "a draft unless `submit` puts it in the reviewers' queue; a person approves it."
        ),
        scope="write",
        input=ProposalCreateApi.InputSerializer,
        output=SkillProposalOutput,
        run=_propose,
        hints={
            "name": "The skill's name, e.g. Summarise a contract.",
            "description": "What it does and when to use it.",
            "category": "Its category (inferred when not given).",
            "dependencies": "Ids of skills it builds on, e.g. [2].",
            "tags": 'Labels, e.g. ["legal"].',
            "execution_context": "Any JSON object: what it needs to run (tools, inputs).",
            "submit": "Put it in the reviewers' queue now (default: a draft).",
        },
        summary=lambda out: f"Proposal {out['id']} ({out['status']}).",
    ),
    Tool(
        name="record_skill_usage",
        rest="POST /api/v1/skills/usage",
        title="Record a skill's use",
        description=(
            "Report that an agent (default: you) ran a task of `task_type`, with a skill or "
            "not, and whether it succeeded. It counts for the skill's version (A/B), the "
            "skill, the agent's learning profile for the task type and its trust score."
        ),
        scope="write",
        input=UsageInput,
        output=UsageRecordApi.OutputSerializer,
        run=_usage,
        hints={
            "task_type": "The kind of task run, e.g. summarisation.",
            "success": "Whether the task succeeded.",
            "skill_id": "The skill used, if any, e.g. 5.",
            "version_id": "The skill version used (A/B tests), if known.",
            "duration_ms": "How long it took, in milliseconds.",
            "occurred_at": "When it ran (ISO 8601; default now).",
        },
        summary=lambda out: f"Recorded {out['count']} use.",
    ),
    Tool(
        name="rank_agents",
        rest="POST /api/v1/agents/rank",
        title="Rank agents for a task",
        description=(
            "The account's agents ranked for a task (its `title`, `description` and "
            "`task_type`, inferred when not given) by learned expertise, confidence and load, "
            "best first."
        ),
        scope="read",
        input=TaskInput,
        output=AgentRankApi.OutputSerializer,
        run=_rank,
        hints={
            "title": "The task's title, e.g. Review the Q3 contract.",
            "description": "What the task involves.",
            "task_type": "Its type (inferred when not given), e.g. review.",
            "use_recency": "Weigh recent results more (default true).",
        },
        summary=lambda out: f"{len(out['results'])} agents ranked for {out['task_type']}.",
    ),
    Tool(
        name="get_learning_profile",
        rest="GET /api/v1/agents/{agent_id}/learning-profile",
        title="An agent's learning profile",
        description=(
            "What an agent (default: you) has learned: per task type its executions, success "
            "rates, confidence and learning curve, with its trust score and load."
        ),
        scope="read",
        input=ProfileInput,
        output=AgentLearningProfileApi.OutputSerializer,
        run=_profile,
        summary=lambda out: f"Learning profile of agent {out['agent_id']}.",
    ),
)
