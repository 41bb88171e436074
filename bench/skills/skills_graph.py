"""The skill graph's latency goals (issue 10): ranking 1,000 agents with history for a task
(p95 <= 50 ms) and skill discovery at 10,000 skills (p95 <= 25 ms).

Ranking: 1,000 agents, each with 60 executions of ``code_review`` (and 20 of another type)
spread over 60 days, written through ``skills.services.usage.usage_record`` in batches, so the
learning profiles are exactly what the services keep; 10% of the agents carry open task
assignments. Each measured call is ``rank_agents`` for ``code_review`` with recency (the
heavier variant), and the same through the HTTP API (``POST /api/v1/agents/rank``, in-process
test client: routing, authentication, serialisation included).

Discovery: 10,000 skills written through ``skills.services.catalog.skill_create`` (search
index, graph node, initial version). As in bench/memory/memory_long_term.py the embeddings during
the build come from a word-hash stand-in (same model id and dimensions; the local model embeds about
25 texts a second here), each measured query passes the stand-in's vector (``query_vector``),
and the local model's query embedding is timed separately.

    uv run python bench/skills/skills_graph.py [--agents 1000] [--skills 10000] [--no-build]

Prints one JSON object; docs/benchmarks.md records the figures. The data is reused by later
runs (account ``engram-bench-skills``).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout: bench.* importable
from bench._setup import django_session
from bench.memory.memory_long_term import WordHashEmbeddings

VERBS = [
    "deploy", "review", "test", "debug", "document", "analyse", "plan", "research", "migrate",
    "monitor", "optimise", "integrate", "automate", "design", "secure", "summarise", "triage",
    "backup", "restore", "scale", "profile", "refactor", "translate", "index",
]  # fmt: skip
OBJECTS = [
    "kubernetes service", "pull request", "database schema", "payment api", "search index",
    "release notes", "incident report", "terraform module", "docker image", "frontend bundle",
    "etl pipeline", "auth flow", "billing service", "log stream", "metrics dashboard",
    "mobile app", "data warehouse", "cache layer", "message queue", "cron job", "user guide",
    "test suite", "ci workflow", "graph model",
]  # fmt: skip
CATEGORIES = ["deployment", "code_review", "testing", "debugging", "documentation", "analysis"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--agents", type=int, default=1000)
    parser.add_argument("--skills", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--no-build", action="store_true")
    args = parser.parse_args()
    with django_session():
        report = run(args)
    print(json.dumps(report, indent=2))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from unittest import mock

    from django.db import connection
    from django.utils import timezone
    from rest_framework.test import APIClient
    from tqdm import tqdm

    from core import services as core_services
    from core.actors import actor_for_account, actor_for_agent, actor_for_user
    from core.embeddings import get_embedding_provider
    from core.models import Account, Agent
    from rag.evaluation import percentiles
    from skills.models import Skill, TaskAssignment
    from skills.selectors.catalog import skill_discover
    from skills.selectors.learning import rank_agents
    from skills.services import catalog, usage
    from tests.factories import UserFactory

    rng = random.Random(10)
    account = Account.objects.filter(
        slug="engram-bench-skills"
    ).first() or core_services.account_create(
        name="Engram skill benchmarks", slug="engram-bench-skills"
    )
    tool = actor_for_account(account.pk)
    reviewer_user = UserFactory.create(username="bench-skills-reviewer", is_staff=True)
    core_services.membership_grant(account=account, user=reviewer_user, role="reviewer")
    reviewer = actor_for_user(reviewer_user)

    # 1. Agents with history.
    agents = list(Agent.objects.filter(account=account).order_by("pk"))
    build: dict[str, float] = {}
    if not args.no_build and len(agents) < args.agents:
        started = time.perf_counter()
        for i in tqdm(range(len(agents), args.agents), desc="agents"):
            agents.append(
                core_services.agent_create(actor=tool, account=account, name=f"bench-agent-{i}")
            )
        now = timezone.now()
        pending: list[usage.UsageInput] = []
        for agent in tqdm(agents, desc="history"):
            skill_rate = rng.uniform(0.3, 0.95)
            for task_type, count in (("code_review", 60), ("deployment", 20)):
                for _ in range(count):
                    pending.append(
                        usage.UsageInput(
                            agent_id=agent.pk,
                            task_type=task_type,
                            success=rng.random() < skill_rate,
                            duration_ms=rng.randint(100, 100_000),
                            occurred_at=now - timedelta(minutes=rng.randint(0, 60 * 24 * 60)),
                        )
                    )
            if len(pending) >= 960:
                usage.usage_record(actor=tool, account_id=account.pk, records=pending)
                pending = []
        if pending:
            usage.usage_record(actor=tool, account_id=account.pk, records=pending)
        for agent in agents[::10]:
            TaskAssignment.objects.create(
                account=account, agent=agent, title="busy", task_type="other", method="learned"
            )
        build["agents_seconds"] = round(time.perf_counter() - started, 1)

    # 2. Skills.
    provider = get_embedding_provider()
    stand_in = WordHashEmbeddings(provider.model_id, provider.dimensions)
    existing = Skill.objects.filter(account=account).count()
    if not args.no_build and existing < args.skills:
        started = time.perf_counter()
        with mock.patch.object(catalog, "get_embedding_provider", return_value=stand_in):
            for i in tqdm(range(existing, args.skills), desc="skills"):
                verb, thing = rng.choice(VERBS), rng.choice(OBJECTS)
                catalog.skill_create(
                    actor=reviewer,
                    account_id=account.pk,
                    name=f"{verb} {thing} {i}",
                    category=CATEGORIES[i % len(CATEGORIES)],
                    status="active",
                    description=f"How to {verb} the {thing} safely, step by step ({i}).",
                    procedure=f"1. Prepare the {thing}.\n2. {verb.title()} it.\n3. Verify.",
                    tags=[verb, thing.split()[0]],
                )
        build["skills_seconds"] = round(time.perf_counter() - started, 1)

    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE skills_skill")
        cursor.execute("VACUUM ANALYZE skills_skillposting")
        cursor.execute("VACUUM ANALYZE skills_learningprofile")
        cursor.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
        for relation in (
            "skills_learningprofile",
            "skills_skill",
            "skills_skill_vec_g1",  # the first embedding generation's index
            "skill_posting_impact",
            "skills_skillterm",
        ):
            cursor.execute("SELECT pg_prewarm(%s)", [relation])

    def rounded(values: list[float]) -> dict[str, float]:
        return {k: round(v, 2) for k, v in percentiles(values, (50, 95, 99)).items()}

    # 3. Ranking latency.
    caller = agents[0]
    actor = actor_for_agent(caller)
    for _ in range(args.warmup):
        rank_agents(actor=actor, title="Review", task_type="code_review", use_recency=True)
    ranking_ms = []
    for _ in range(args.queries):
        started = time.perf_counter()
        ranking = rank_agents(
            actor=actor, title="Review this", task_type="code_review", use_recency=True
        )
        ranking_ms.append((time.perf_counter() - started) * 1000)
    _, secret = core_services.api_key_create(actor=tool, agent=caller, scopes=["read"])
    client = APIClient(SERVER_NAME="localhost")
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = {"title": "Review the pull request", "task_type": "code_review", "use_recency": True}
    for _ in range(20):
        client.post("/api/v1/agents/rank", body, format="json")
    api_ms = []
    for _ in range(args.queries):
        started = time.perf_counter()
        response = client.post("/api/v1/agents/rank", body, format="json")
        api_ms.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.content

    # 4. Discovery latency, the query vector given.
    questions = [
        f"{rng.choice(VERBS)} the {rng.choice(OBJECTS)}" for _ in range(args.queries + args.warmup)
    ]

    def discover(text: str) -> float:
        vector = stand_in.embed_query(text)
        started = time.perf_counter()
        skill_discover(actor=actor, description=text, top_k=10, query_vector=vector)
        return (time.perf_counter() - started) * 1000

    for text in questions[args.queries :]:
        discover(text)
    discover_ms = [discover(text) for text in questions[: args.queries]]
    embeds = []
    provider.embed_query("warm up")
    for text in questions[: args.queries]:
        started = time.perf_counter()
        provider.embed_query(text)
        embeds.append((time.perf_counter() - started) * 1000)

    return {
        "agents": Agent.objects.filter(account=account).count(),
        "ranked_candidates": ranking.candidates,
        "skills": Skill.objects.filter(account=account).count(),
        "build": build,
        "rank_agents_ms": rounded(ranking_ms),
        "rank_api_ms": rounded(api_ms),
        "discover_ms_query_vector_given": rounded(discover_ms),
        "query_embedding_ms_local_model": rounded(embeds),
        "embeddings": "word-hash stand-in during the build (see the module docstring)",
        "cpu": f"{__import__('os').cpu_count()} cores",
    }


if __name__ == "__main__":
    main()
