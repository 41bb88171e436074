"""Memory's write services check their actor themselves: called directly (no view in front),
an actor who may only read a context is refused with 403 ``context_read_only``, one who may not
read it (another account's agent, another agent of the account) with 404 ``context_not_found``,
and nothing changes. Also: own memories cannot be squatted (issue 14, 7.2), and one agent's
refused promotion does not stop the account's consolidation (7.3)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.actors import Actor, actor_for_account, actor_for_agent
from core.errors import Conflict, EngramError, NotFound, PermissionDenied, ValidationFailed
from core.models import ApiKey
from memory.long_term import services as ltm
from memory.maintenance.services import consolidation
from memory.models import (
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemorySnapshot,
    ShortTermEntry,
)
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory
from tests.memory.conftest import code

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner() -> Actor:
    return actor_for_agent(AgentFactory.create())


@pytest.fixture
def reader(owner: Actor) -> Actor:
    """An agent of the owner's account granted read access only."""
    assert owner.agent is not None
    return actor_for_agent(AgentFactory.create(account=owner.agent.account))


@pytest.fixture
def bystander(owner: Actor) -> Actor:
    """An agent of the owner's account without any access to the owner's context."""
    assert owner.agent is not None
    return actor_for_agent(AgentFactory.create(account=owner.agent.account))


@pytest.fixture
def intruder() -> Actor:
    return actor_for_agent(AgentFactory.create())


@pytest.fixture
def context(owner: Actor, reader: Actor) -> MemoryContext:
    context = ltm.context_create(actor=owner, name="plans")
    assert reader.agent is not None
    ltm.context_grant(actor=owner, context=context, agent_id=reader.agent.pk, level="read")
    ltm.entries_write(actor=owner, context=context, items=[ltm.EntryInput(content="the plan")])
    ltm.snapshot_create(actor=owner, context=context)
    return context


def _entry(context: MemoryContext) -> MemoryEntry:
    return MemoryEntry.objects.get(context=context, is_current=True)


WRITES: dict[str, Callable[[Actor, MemoryContext], Any]] = {
    "context_update": lambda a, c: ltm.context_update(actor=a, context=c, fields={"name": "x"}),
    "context_archive": lambda a, c: ltm.context_archive(actor=a, context=c, archived=True),
    "context_delete": lambda a, c: ltm.context_delete(actor=a, context=c),
    "context_grant": lambda a, c: ltm.context_grant(
        actor=a, context=c, agent_id=a.agent_id or 0, level="write"
    ),
    "context_revoke": lambda a, c: ltm.context_revoke(
        actor=a, context=c, agent_id=c.grants.get().agent_id
    ),
    "entries_write": lambda a, c: ltm.entries_write(
        actor=a, context=c, items=[ltm.EntryInput(content="mine now")]
    ),
    "entry_update": lambda a, c: ltm.entry_update(
        actor=a, entry=_entry(c), fields={"content": "rewritten"}
    ),
    "entry_importance_adjust": lambda a, c: ltm.entry_importance_adjust(
        actor=a, entry=_entry(c), delta=0.3
    ),
    "entries_archive": lambda a, c: ltm.entries_archive(
        actor=a, context=c, entries=[_entry(c)], archived=True
    ),
    "entry_delete": lambda a, c: ltm.entry_delete(actor=a, entry=_entry(c)),
    "snapshot_create": lambda a, c: ltm.snapshot_create(actor=a, context=c),
    "snapshot_restore": lambda a, c: ltm.snapshot_restore(
        actor=a, snapshot=MemorySnapshot.objects.get(context=c)
    ),
}


def _state(context: MemoryContext) -> tuple[Any, ...]:
    return (
        list(MemoryContext.objects.filter(pk=context.pk).values()),
        list(
            MemoryEntry.objects.filter(context_id=context.pk).values(
                "id", "content", "importance", "archived_at", "is_current"
            )
        ),
        list(MemoryContextGrant.objects.filter(context_id=context.pk).values()),
        MemorySnapshot.objects.filter(context_id=context.pk).count(),
    )


@pytest.mark.parametrize("service", sorted(WRITES))
def test_a_reader_may_not_write(service: str, context: MemoryContext, reader: Actor) -> None:
    before = _state(context)
    with pytest.raises(PermissionDenied) as refused:
        WRITES[service](reader, context)
    assert refused.value.code == "context_read_only"
    assert _state(context) == before


@pytest.mark.parametrize("service", sorted(WRITES))
@pytest.mark.parametrize("who", ["bystander", "intruder"])
def test_an_agent_without_access_finds_nothing(
    service: str, who: str, context: MemoryContext, request: pytest.FixtureRequest
) -> None:
    stranger: Actor = request.getfixturevalue(who)
    before = _state(context)
    with pytest.raises(NotFound) as refused:
        WRITES[service](stranger, context)
    assert refused.value.code == "context_not_found"
    assert _state(context) == before


@pytest.mark.parametrize("service", sorted(WRITES))
def test_the_owner_may(service: str, context: MemoryContext, owner: Actor) -> None:
    WRITES[service](owner, context)


def test_access_is_counted_only_where_the_actor_may_read(
    context: MemoryContext, intruder: Actor, reader: Actor
) -> None:
    entry = _entry(context)
    ltm.entries_accessed(actor=intruder, entries=[entry], action="read")
    ltm.access_flush()
    entry.refresh_from_db()
    assert entry.access_count == 0
    ltm.entries_accessed(actor=reader, entries=[entry], action="read")
    ltm.access_flush()
    entry.refresh_from_db()
    assert entry.access_count == 1


# --- own memories cannot be squatted (7.2) ----------------------------------------------------


def test_own_memory_names_are_reserved(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    victim = make_agent_client(account=agent_client.agent.account)
    for name in (f"agent:{victim.agent.pk}", "Agent:1", "agent:anything"):
        squat = agent_client.client.post("/api/v1/memory/contexts", {"name": name}, format="json")
        assert squat.status_code == 400 and code(squat) == "context_name_reserved"
    mine = agent_client.client.post("/api/v1/memory/contexts", {"name": "ok"}, format="json")
    renamed = agent_client.client.patch(
        f"/api/v1/memory/contexts/{mine.json()['id']}",
        {"name": f"agent:{victim.agent.pk}"},
        format="json",
    )
    assert renamed.status_code == 400 and code(renamed) == "context_name_reserved"
    # The victim's own-memory write works, into its own flagged context.
    written = victim.client.post("/api/v1/memory/entries", {"content": "mine"}, format="json")
    assert written.status_code == 201
    own = MemoryContext.objects.get(pk=written.json()["context_id"])
    assert (own.owner_id, own.is_agent_memory, own.name) == (
        victim.agent.pk,
        True,
        f"agent:{victim.agent.pk}",
    )


LOOKALIKES = [
    "agent\uff1a3",  # a full-width colon
    "agent\u200b:3",  # a zero-width space
    "\u200eagent:3",  # a left-to-right mark first
    "age\u00adnt:3",  # a soft hyphen
    "agent\u2060:3",  # a word joiner
    "agent\ufe13\ufe0f3",  # a presentation-form colon, then a variation selector
    "\uff41\uff47\uff45\uff4e\uff54:3",  # full-width letters
    "conversation\u200d:abc",  # a zero-width joiner
    " \ufeffAGENT:3",  # white space and a byte order mark
    "agent\u034f:3",  # the combining grapheme joiner
]


@pytest.mark.parametrize("name", LOOKALIKES)
def test_names_that_only_look_reserved_are_reserved(agent_client: AuthedAgent, name: str) -> None:
    contexts = "/api/v1/memory/contexts"
    squat = agent_client.client.post(contexts, {"name": name}, format="json")
    assert squat.status_code == 400 and code(squat) == "context_name_reserved", squat.json()
    mine = agent_client.client.post(contexts, {"name": "ok"}, format="json").json()
    renamed = agent_client.client.patch(f"{contexts}/{mine['id']}", {"name": name}, format="json")
    assert renamed.status_code == 400 and code(renamed) == "context_name_reserved"
    assert MemoryContext.objects.get(pk=mine["id"]).name == "ok"


def test_names_are_stored_normalised(agent_client: AuthedAgent) -> None:
    contexts = "/api/v1/memory/contexts"
    made = agent_client.client.post(
        contexts, {"name": " Ｒｅｌｅａｓｅ\u200b notes "}, format="json"
    )
    assert made.status_code == 201 and made.json()["name"] == "Release notes"
    # One name, however it is written.
    again = agent_client.client.post(contexts, {"name": "Release\u2060 notes"}, format="json")
    assert again.status_code == 409 and code(again) == "context_name_taken"
    blank = agent_client.client.post(contexts, {"name": "\u200b\u200c"}, format="json")
    assert blank.status_code == 400 and code(blank) == "invalid_context_name"


def test_agent_memory_type_is_not_chosen_by_hand(agent_client: AuthedAgent) -> None:
    contexts = "/api/v1/memory/contexts"
    typed = agent_client.client.post(
        contexts, {"name": "mine", "context_type": "agent_memory"}, format="json"
    )
    assert typed.status_code == 400 and code(typed) == "context_type_reserved"
    made = agent_client.client.post(contexts, {"name": "mine"}, format="json").json()
    assert made["context_type"] == "project_context"
    changed = agent_client.client.patch(
        f"{contexts}/{made['id']}", {"context_type": "agent_memory"}, format="json"
    )
    assert changed.status_code == 400 and code(changed) == "context_type_reserved"
    assert not MemoryContext.objects.filter(context_type="agent_memory").exists()
    # The agent's own memory is still made with it.
    written = agent_client.client.post("/api/v1/memory/entries", {"content": "x"}, format="json")
    own = MemoryContext.objects.get(pk=written.json()["context_id"])
    assert (own.context_type, own.is_agent_memory) == ("agent_memory", True)


def test_people_in_the_admin_cannot_choose_reserved_types_either() -> None:
    agent = AgentFactory.create()
    person = actor_for_account(agent.account_id)
    for context_type in ("agent_memory", "conversation"):
        with pytest.raises(ValidationFailed) as refused:
            ltm.context_create(actor=person, name="x", context_type=context_type)
        assert refused.value.code == "context_type_reserved"
    with pytest.raises(ValidationFailed) as refused:
        ltm.context_create(actor=person, name="agent\uff1a1")
    assert refused.value.code == "context_name_reserved"


def test_an_own_memory_keeps_its_name(agent_client: AuthedAgent) -> None:
    written = agent_client.client.post("/api/v1/memory/entries", {"content": "x"}, format="json")
    context_id = written.json()["context_id"]
    renamed = agent_client.client.patch(
        f"/api/v1/memory/contexts/{context_id}", {"name": "elsewhere"}, format="json"
    )
    assert renamed.status_code == 409 and code(renamed) == "agent_memory_protected"


def test_own_memory_is_a_flag_not_a_name() -> None:
    agent = AgentFactory.create()
    actor = actor_for_agent(agent)
    # A context with the name made behind the services' back (as before names were reserved)
    # is not the agent's own memory, and does not stop it from being made.
    other = AgentFactory.create(account=agent.account)
    MemoryContext.objects.create(account=agent.account, owner=other, name="decoy")
    own = ltm.agent_memory_context(actor=actor)
    assert own.is_agent_memory and own.owner_id == agent.pk
    assert ltm.agent_memory_context(actor=actor).pk == own.pk


# --- one agent's refusal does not stop the account's consolidation (7.3) -------------------------


def _often_read(agent_client: AuthedAgent, key: str) -> None:
    stored = agent_client.client.put(
        f"/api/v1/memory/short-term/s1/{key}", {"value": f"{key} value"}, format="json"
    )
    assert stored.status_code in (200, 201), stored.content
    ShortTermEntry.objects.filter(agent=agent_client.agent, key=key).update(access_count=9)


def test_a_squat_no_longer_breaks_the_account_run(
    make_agent_client: Callable[..., AuthedAgent],
) -> None:
    admin = make_agent_client(scopes=[ApiKey.Scope.READ, ApiKey.Scope.WRITE, ApiKey.Scope.ADMIN])
    first = make_agent_client(account=admin.agent.account)
    second = make_agent_client(account=admin.agent.account)
    _often_read(first, "alpha")
    _often_read(second, "beta")
    # The probe: another agent takes the second agent's own-memory name first.
    first.client.post(
        "/api/v1/memory/contexts", {"name": f"agent:{second.agent.pk}"}, format="json"
    )
    run = admin.client.post("/api/v1/memory/consolidate", {"jobs": ["promote"]}, format="json")
    assert run.status_code == 200, run.content
    assert run.json()["report"]["promote"]["promoted"] == 2
    for agent in (first.agent, second.agent):
        assert (
            MemoryEntry.objects.filter(context__owner=agent, context__is_agent_memory=True).count()
            == 1
        )


def test_one_agents_refusal_is_counted_and_the_rest_promoted(
    make_agent_client: Callable[..., AuthedAgent], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = make_agent_client()
    second = make_agent_client(account=first.agent.account)
    _often_read(first, "alpha")
    _often_read(second, "beta")
    refused_agent = first.agent.pk
    original = consolidation._promote_agent

    def promote(agent: Any, entries: Any) -> tuple[int, int]:
        if agent.pk == refused_agent:
            raise Conflict("refused", code="context_archived")
        return original(agent, entries)

    monkeypatch.setattr(consolidation, "_promote_agent", promote)
    counts = consolidation.consolidation_promote(account_id=first.agent.account_id)
    assert counts == {"candidates": 2, "promoted": 1, "agents_failed": 1}
    assert not MemoryEntry.objects.filter(context__owner_id=refused_agent).exists()
    assert MemoryEntry.objects.filter(context__owner=second.agent).count() == 1


def test_account_consolidation_needs_the_admin_scope_in_the_service(owner: Actor) -> None:
    assert owner.agent is not None
    key = ApiKey(agent=owner.agent, scopes=[ApiKey.Scope.READ, ApiKey.Scope.WRITE])
    limited = actor_for_agent(owner.agent, key)
    with pytest.raises(PermissionDenied) as refused:
        consolidation.memory_consolidate(actor=limited, jobs=["promote"])
    assert refused.value.code == "insufficient_scope"
    with pytest.raises(ValidationFailed):
        consolidation.memory_consolidate(actor=limited, session_id="s1", jobs=["prune"])
    assert isinstance(refused.value, EngramError)
