"""Teams and agents of an account (its owners manage them)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction

from core.actors import MANAGE_ACCOUNT, Actor
from core.audit import audit_record
from core.errors import Conflict, ValidationFailed
from core.key_cache import credentials_changed
from core.models import Account, Agent, Team
from core.writes import changes_of, changes_validate, row_delete, row_update

TEAM_UPDATABLE_FIELDS = ("name", "description")
AGENT_UPDATABLE_FIELDS = ("name", "description", "status", "metadata")


def _name_taken(kind: str) -> Conflict:
    return Conflict(f"{kind} with this name exists.", code="name_taken")


def team_create(*, actor: Actor, account: Account, name: str, description: str = "") -> Team:
    actor.require(account.pk, MANAGE_ACCOUNT)
    team = Team(account=account, name=name, description=description)
    try:
        team.full_clean(exclude=["account"], validate_unique=False, validate_constraints=False)
    except DjangoValidationError as exc:
        raise ValidationFailed("Invalid team.", details=exc.message_dict) from exc
    try:
        with transaction.atomic():
            team.save()
            audit_record(
                actor=actor,
                action="core.team.create",
                account_id=account.pk,
                target=team,
                changes={"name": name, "description": description},
            )
    except IntegrityError as exc:
        raise _name_taken("A team") from exc
    return team


def team_update(*, actor: Actor, team: Team, **fields: Any) -> Team:
    actor.require(team.account_id, MANAGE_ACCOUNT)
    changes = changes_of(team, fields, TEAM_UPDATABLE_FIELDS)
    if not changes:
        return team
    changes_validate(team, changes)
    return row_update(
        actor=actor,
        instance=team,
        changes=changes,
        action="core.team.update",
        account_id=team.account_id,
        conflicts={"team_unique_name_per_account": lambda: _name_taken("A team")},
    )


def team_delete(*, actor: Actor, team: Team) -> None:
    actor.require(team.account_id, MANAGE_ACCOUNT)
    row_delete(
        actor=actor,
        instance=team,
        action="core.team.delete",
        account_id=team.account_id,
        changes={"name": team.name},
    )


def _teams_of_account(account_id: int, teams: Iterable[Team]) -> list[Team]:
    team_list = list(teams)
    if any(team.account_id != account_id for team in team_list):
        raise ValidationFailed(
            "Teams must belong to the agent's account.", code="team_account_mismatch"
        )
    return team_list


@transaction.atomic
def agent_create(
    *,
    actor: Actor,
    account: Account,
    name: str,
    description: str = "",
    metadata: dict[str, Any] | None = None,
    teams: Iterable[Team] = (),
) -> Agent:
    actor.require(account.pk, MANAGE_ACCOUNT)
    team_list = _teams_of_account(account.pk, teams)
    agent = Agent(account=account, name=name, description=description, metadata=metadata or {})
    try:
        agent.full_clean(validate_unique=False, validate_constraints=False)
    except DjangoValidationError as exc:
        raise ValidationFailed("Invalid agent.", details=exc.message_dict) from exc
    try:
        with transaction.atomic():
            agent.save()
    except IntegrityError as exc:
        raise _name_taken("An agent") from exc
    agent.teams.set(team_list)
    audit_record(
        actor=actor,
        action="core.agent.create",
        account_id=account.pk,
        target=agent,
        changes={"name": name, "teams": [t.pk for t in team_list]},
    )
    return agent


def agent_update(
    *, actor: Actor, agent: Agent, teams: Iterable[Team] | None = None, **fields: Any
) -> Agent:
    """Change an agent's fields and (``teams`` given) its teams, which stay in its account."""
    actor.require(agent.account_id, MANAGE_ACCOUNT)
    changes = changes_of(agent, fields, AGENT_UPDATABLE_FIELDS)
    team_list: list[Team] = []
    team_ids: list[int] | None = None
    if teams is not None:
        team_list = _teams_of_account(agent.account_id, teams)
        if {t.pk for t in team_list} != set(agent.teams.values_list("pk", flat=True)):
            team_ids = sorted(t.pk for t in team_list)
    if not changes and team_ids is None:
        return agent
    changes_validate(agent, changes)
    with transaction.atomic():
        if changes:  # API keys load the agent's row: its status decides whether they work
            credentials_changed()
        return row_update(
            actor=actor,
            instance=agent,
            changes=changes,
            action="core.agent.update",
            account_id=agent.account_id,
            audit_changes={**changes, **({"teams": team_ids} if team_ids is not None else {})},
            conflicts={"agent_unique_name_per_account": lambda: _name_taken("An agent")},
            then=(lambda: agent.teams.set(team_list)) if team_ids is not None else None,
        )


def agent_delete(*, actor: Actor, agent: Agent) -> None:
    """Delete an agent with its keys (its searches and audit events keep their rows)."""
    actor.require(agent.account_id, MANAGE_ACCOUNT)
    with transaction.atomic():
        credentials_changed()
        row_delete(
            actor=actor,
            instance=agent,
            action="core.agent.delete",
            account_id=agent.account_id,
            changes={"name": agent.name},
        )
