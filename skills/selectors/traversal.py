"""Dependency traversal over the knowledge graph's ``depends_on`` edges between skill nodes:
a skill's chain of dependencies (transitively, with depths), the account's cycles, and team
coverage of the categories."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db import connection

from core.models import Team
from skills.categories import CATEGORIES
from skills.models import AgentSkill, Skill

DEPENDS_ON = "depends_on"
MAX_DEPTH = 20
MAX_CYCLES = 1000
# An agent covers a category with an active assignment to an active skill of it at least this
# proficient.
COVERAGE_PROFICIENCY = 0.5


@dataclass(frozen=True)
class ChainLink:
    node_id: int
    name: str
    depth: int
    skill: Skill | None


def dependency_chain(skill: Skill) -> list[ChainLink]:
    """Everything ``skill`` depends on, directly (depth 1) or through others, nearest first
    (each node once, at its shortest depth; cycle-safe)."""
    if skill.graph_node_id is None:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE walk(node_id, depth) AS (
                SELECT %(start)s::bigint, 0
                UNION
                SELECT e.target_id, w.depth + 1 FROM walk w
                JOIN rag_graphedge e ON e.source_id = w.node_id
                WHERE e.account_id = %(account)s AND e.relation_type = %(relation)s
                  AND w.depth < %(max)s
            )
            SELECT w.node_id, min(w.depth), n.name FROM walk w
            JOIN rag_graphnode n ON n.id = w.node_id
            WHERE w.node_id <> %(start)s
            GROUP BY w.node_id, n.name
            ORDER BY min(w.depth), n.name
            """,
            {
                "start": skill.graph_node_id,
                "account": skill.account_id,
                "relation": DEPENDS_ON,
                "max": MAX_DEPTH,
            },
        )
        rows = cursor.fetchall()
    skills = {
        s.graph_node_id: s
        for s in Skill.objects.defer("embedding").filter(graph_node_id__in=[r[0] for r in rows])
    }
    return [
        ChainLink(node_id=node, name=name, depth=depth, skill=skills.get(node))
        for node, depth, name in rows
    ]


def dependency_cycles(account_id: int) -> list[list[int]]:
    """The ``depends_on`` cycles of the account's graph, each as its node ids starting from the
    lowest (each cycle once), at most ``MAX_CYCLES`` of at most ``MAX_DEPTH`` nodes."""
    with connection.cursor() as cursor:
        cursor.execute(
            """
            WITH RECURSIVE edges AS (
                SELECT source_id, target_id FROM rag_graphedge
                WHERE account_id = %(account)s AND relation_type = %(relation)s
            ),
            walk(start, node, path, closed) AS (
                SELECT source_id, target_id, ARRAY[source_id, target_id], source_id = target_id
                FROM edges
                UNION ALL
                SELECT w.start, e.target_id, w.path || e.target_id, e.target_id = ANY(w.path)
                FROM walk w JOIN edges e ON e.source_id = w.node
                WHERE NOT w.closed AND cardinality(w.path) <= %(max)s
            )
            SELECT path FROM walk
            WHERE closed AND node = start AND start = (SELECT min(x) FROM unnest(path) AS x)
            LIMIT %(limit)s
            """,
            {"account": account_id, "relation": DEPENDS_ON, "max": MAX_DEPTH, "limit": MAX_CYCLES},
        )
        paths = [list(row[0])[:-1] for row in cursor.fetchall()]
    seen: set[tuple[int, ...]] = set()
    cycles = []
    for path in paths:
        key = tuple(path)
        if key not in seen:
            seen.add(key)
            cycles.append(path)
    return cycles


@dataclass(frozen=True)
class TeamCoverage:
    team: Team
    agents: int
    categories: dict[str, int]  # category -> skills covered by the team's agents

    @property
    def missing(self) -> list[str]:
        return [c for c in CATEGORIES if c not in self.categories]


def team_coverage(account_id: int) -> list[TeamCoverage]:
    """Per team of the account: the categories its agents cover (active assignments to active
    skills with proficiency of at least 0.5), with how many skills cover each."""
    coverage = []
    for team in Team.objects.filter(account_id=account_id).order_by("name"):
        agent_ids = list(team.agents.values_list("pk", flat=True))
        covered = Counter(
            category
            for category, _skill in AgentSkill.objects.filter(
                agent_id__in=agent_ids,
                is_active=True,
                proficiency__gte=COVERAGE_PROFICIENCY,
                skill__status=Skill.Status.ACTIVE,
            )
            .values_list("skill__category", "skill_id")
            .distinct()
        )
        coverage.append(TeamCoverage(team=team, agents=len(agent_ids), categories=dict(covered)))
    return coverage
