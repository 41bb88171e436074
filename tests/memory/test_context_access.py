"""Who may read a long-term context: the written-out statement the searches ask on every call
(``readable_context_ids``) gives the ORM rule's answer (``readable_by``), case by case, with an
intruder account that owns a context of every kind."""

from __future__ import annotations

import pytest
from django.utils import timezone

from core.actors import actor_for_agent
from core.models import Agent
from memory.long_term.context_access import readable_context_ids, readable_contexts
from memory.models import MemoryContext, MemoryContextGrant
from tests.factories import AccountFactory, AgentFactory, TeamFactory

Scope = MemoryContext.Scope
Level = MemoryContextGrant.Level


def _context(name: str, owner: Agent, scope: str = Scope.AGENT, **extra: object) -> MemoryContext:
    return MemoryContext.objects.create(
        account=owner.account, name=name, owner=owner, scope=scope, **extra
    )


@pytest.mark.django_db
def test_the_statement_and_the_orm_rule_read_the_same_contexts() -> None:
    account, intruder_account = AccountFactory.create(), AccountFactory.create()
    reader = AgentFactory.create(account=account)
    other = AgentFactory.create(account=account)
    intruder = AgentFactory.create(account=intruder_account)
    ours, theirs = TeamFactory.create(account=account), TeamFactory.create(account=account)
    ours.agents.add(reader, other)
    theirs.agents.add(other)
    _context("own", reader)
    _context("own archived", reader, archived_at=timezone.now())
    _context("other's", other)
    granted = {level: _context(f"granted {level}", other) for level in Level.values}
    for level, context in granted.items():
        MemoryContextGrant.objects.create(context=context, agent=reader, level=level)
    elsewhere = _context("granted to another", other)
    MemoryContextGrant.objects.create(context=elsewhere, agent=intruder, level=Level.WRITE)
    _context("account", other, Scope.ACCOUNT)
    _context("global", other, Scope.GLOBAL)
    _context("our team", other, Scope.TEAM, team=ours)
    _context("their team", other, Scope.TEAM, team=theirs)
    # The intruder's account holds one of every kind, its team counting the reader's id too.
    intruder_team = TeamFactory.create(account=intruder_account)
    intruder_team.agents.add(intruder)
    for scope in Scope.values:
        _context(
            f"intruder {scope}", intruder, scope,
            team=intruder_team if scope == Scope.TEAM else None,
        )  # fmt: skip

    names = dict(MemoryContext.objects.values_list("id", "name"))
    for agent in (reader, other, intruder):
        orm = readable_contexts(actor_for_agent(agent)).values_list("pk", flat=True)
        assert readable_context_ids(agent) == tuple(sorted(set(orm)))
    assert {names[i] for i in readable_context_ids(reader)} == {
        "own", "own archived", "granted read", "granted write", "account", "global", "our team",
    }  # fmt: skip
    assert {names[i] for i in readable_context_ids(intruder)} == {
        f"intruder {scope}" for scope in Scope.values
    }
