"""core's kinds of an account export (``core.portability``): teams and agents with their team
memberships. Never API keys: an imported agent has none until someone makes one. People's
memberships stay behind: users belong to an installation, and a same-named user elsewhere is
not the same person."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from core.models import Agent, Team
from core.portability.kinds import ExportScope, ImportScope, Kind, Row, ref, when

TEAM = "core.team"
AGENT = "core.agent"


def _teams(scope: ExportScope) -> Iterator[Row]:
    teams = Team.objects.filter(account=scope.account)
    if scope.single_agent:
        teams = teams.filter(agents__in=scope.agent_ids).distinct()
    for team in teams.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": team.pk,
            "name": team.name,
            "description": team.description,
            "created_at": team.created_at,
            "updated_at": team.updated_at,
        }


def _teams_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = Team.objects.bulk_create(
        [
            Team(
                account=scope.account,
                name=row["name"],
                description=row["description"],
                created_at=when(row["created_at"]),
            )
            for row in rows
        ]
    )
    for row, team in zip(rows, made, strict=True):
        scope.remember(TEAM, row["id"], team.pk)
    _keep_updated_at(Team, made, rows)


def _agents(scope: ExportScope) -> Iterator[Row]:
    agents = Agent.objects.filter(pk__in=scope.agent_ids).prefetch_related("teams")
    for agent in agents.order_by("pk").iterator(chunk_size=1000):
        yield {
            "id": agent.pk,
            "name": agent.name,
            "description": agent.description,
            "status": agent.status,
            "metadata": agent.metadata,
            "teams": [ref(TEAM, team.pk) for team in sorted(agent.teams.all(), key=_pk)],
            "created_at": agent.created_at,
            "updated_at": agent.updated_at,
        }


def _pk(team: Team) -> int:
    return team.pk


def _agents_load(scope: ImportScope, rows: Sequence[Row]) -> None:
    made = Agent.objects.bulk_create(
        [
            Agent(
                account=scope.account,
                name=row["name"],
                description=row["description"],
                status=row["status"],
                metadata=row["metadata"],
                created_at=when(row["created_at"]),
            )
            for row in rows
        ]
    )
    links: list[Any] = []
    for row, agent in zip(rows, made, strict=True):
        scope.remember(AGENT, row["id"], agent.pk)
        links.extend(
            Agent.teams.through(agent_id=agent.pk, team_id=scope.required(team))
            for team in row["teams"]
        )
    Agent.teams.through.objects.bulk_create(links)
    _keep_updated_at(Agent, made, rows)


def _keep_updated_at(model: Any, made: Sequence[Team | Agent], rows: Sequence[Row]) -> None:
    """``auto_now`` stamps the import's time on a create: the source's time is written back."""
    for item, row in zip(made, rows, strict=True):
        item.updated_at = when(row["updated_at"])
    model.objects.bulk_update(made, ["updated_at"])


KINDS = (
    Kind(
        name=TEAM,
        schema={
            "name": "str: unique in the account",
            "description": "str",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_teams,
        load=_teams_load,
    ),
    Kind(
        name=AGENT,
        schema={
            "name": "str: unique in the account",
            "description": "str",
            "status": "str: active | disabled",
            "metadata": "object",
            "teams": f"[ref:{TEAM}] the teams it belongs to",
            "created_at": "datetime",
            "updated_at": "datetime",
        },
        rows=_agents,
        load=_agents_load,
    ),
)
