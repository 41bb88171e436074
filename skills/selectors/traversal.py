"""Dependency traversal over the knowledge graph's ``depends_on`` edges between skill nodes:
a skill's chain of dependencies (transitively, with depths), the account's cycles, and team
coverage of the categories."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from core.models import Team
from rag.graph import selectors as graph
from rag.graph.selectors import DEPENDS_ON
from skills.categories import CATEGORIES
from skills.models import AgentSkill, Skill
from skills.tuning import TUNING

# How deep a dependency chain is followed, and how many cycles a scan reports.
MAX_DEPTH = graph.MAX_WALK_DEPTH
MAX_CYCLES = graph.MAX_CYCLES


@dataclass(frozen=True)
class ChainLink:
    node_id: int
    name: str
    depth: int
    skill: Skill | None


def dependency_chain(skill: Skill) -> list[ChainLink]:
    """Everything ``skill`` depends on, directly (depth 1) or through others, nearest first
    (then by name; each node once, at its shortest depth; cycle-safe): rag's directed walk
    along ``depends_on`` edges."""
    if skill.graph_node_id is None:
        return []
    reached = graph.walk(
        account_id=skill.account_id,
        sources=[skill.graph_node_id],
        relation_types=[DEPENDS_ON],
        direction=graph.OUT,
        max_depth=MAX_DEPTH,
    )
    skills = {
        s.graph_node_id: s
        for s in Skill.objects.defer("embedding").filter(
            graph_node_id__in=[r.node_id for r in reached]
        )
    }
    return [
        ChainLink(node_id=r.node_id, name=r.name, depth=r.depth, skill=skills.get(r.node_id))
        for r in reached
    ]


def dependency_cycles(account_id: int) -> list[list[int]]:
    """The ``depends_on`` cycles of the account's graph, each as its node ids starting from the
    lowest (each cycle once), at most ``MAX_CYCLES`` of at most ``MAX_DEPTH`` nodes."""
    return graph.cycles(
        account_id=account_id,
        relation_type=DEPENDS_ON,
        max_length=MAX_DEPTH,
        limit=MAX_CYCLES,
    )


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
                proficiency__gte=TUNING.learning.coverage_proficiency,
                skill__status=Skill.Status.ACTIVE,
            )
            .values_list("skill__category", "skill_id")
            .distinct()
        )
        coverage.append(TeamCoverage(team=team, agents=len(agent_ids), categories=dict(covered)))
    return coverage
