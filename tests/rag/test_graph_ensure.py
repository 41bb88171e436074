"""The graph's one "find, adopt or create" (``rag.graph.services.node_ensure``) and the roles
registered per node kind (``rag.graph.node_types``): what every app writing nodes relies on."""

from __future__ import annotations

from typing import Any
from unittest import mock

import pytest
from django.contrib.auth import get_user_model

from core.actors import READ, WRITE_GRAPH, Actor, actor_for_user
from core.errors import Conflict, PermissionDenied
from core.models import Account
from core.services.accounts import membership_grant
from memory.knowledge.services import KNOWLEDGE_ENTITY_TYPE, WRITE_KNOWLEDGE
from rag.graph import node_types
from rag.graph import selectors as graph
from rag.graph import services as graph_services
from rag.graph.services import ensure
from rag.models import GraphNode
from rag.visibility import PUBLIC, source_of
from skills.roles import MANAGE_SKILLS

pytestmark = pytest.mark.django_db


def ensure_node(
    actor: Actor, name: str, account_id: int | None = None, **kwargs: Any
) -> graph_services.EnsuredNode:
    kwargs.setdefault("entity_type", "concept")
    account_id = account_id if account_id is not None else actor.account_id
    assert account_id is not None
    return graph_services.node_ensure(actor=actor, account_id=account_id, name=name, **kwargs)


def test_a_missing_node_is_made_and_found_again_by_type_and_name(actor: Actor) -> None:
    made = ensure_node(actor, "Harbor Library", fields={"description": "A library."})
    assert made.created
    again = ensure_node(actor, "harbor library", fields={"description": "A library."})
    assert not again.created and again.node.pk == made.node.pk
    assert GraphNode.objects.filter(account_id=actor.account_id).count() == 1


def test_a_found_node_gets_only_the_fields_that_changed(actor: Actor) -> None:
    made = ensure_node(actor, "Jonas Lind", initial={"metadata": {"kept": True}})
    with mock.patch.object(ensure, "node_update", wraps=graph_services.node_update) as update:
        ensure_node(actor, "Jonas Lind", fields={"name": "Jonas Lind"})
        assert update.call_count == 0  # nothing differs: nothing written
        found = ensure_node(actor, "Jonas Lind", fields={"description": "Runs the library."})
        assert update.call_count == 1
    assert found.node.pk == made.node.pk
    assert found.node.description == "Runs the library."
    assert found.node.metadata == {"kept": True}  # ``initial`` is written on creation only


def test_a_remembered_node_is_taken_by_id_whatever_its_name(actor: Actor) -> None:
    first = ensure_node(actor, "Old title").node
    found = ensure_node(actor, "New title", node_id=first.pk, fields={"name": "New title"})
    assert not found.created and found.node.pk == first.pk and found.node.name == "New title"
    gone = ensure_node(actor, "Other", node_id=10**9)  # a node deleted since: made anew
    assert gone.created


def test_match_by_key_finds_a_node_of_any_type_by_its_normalised_name(actor: Actor) -> None:
    person = ensure_node(actor, "Ada Lovelace", entity_type="person").node
    found = ensure_node(actor, "ada  lovelace", entity_type="organisation", match="key")
    assert not found.created and found.node.pk == person.pk
    other = ensure_node(actor, "Ada Lovelace", entity_type="organisation")  # by type: its own
    assert other.created and other.node.pk != person.pk


def test_same_source_keeps_a_private_sources_node_apart(actor: Actor) -> None:
    public = ensure_node(actor, "Kiruna", entity_type="place").node
    private = source_of("memory_entries", 4242)
    assert not private.is_public
    found = ensure_node(actor, "Kiruna", entity_type="place", same_source=True, source=PUBLIC)
    assert found.node.pk == public.pk
    with pytest.raises(Conflict):  # one node per type and name: the private one cannot be made
        ensure_node(actor, "Kiruna", entity_type="place", same_source=True, source=private)


def test_an_adoptable_rule_can_refuse_a_namesake(actor: Actor) -> None:
    held = ensure_node(actor, "Deploy", entity_type="tool").node

    def taken(node: GraphNode) -> bool:
        raise Conflict("held", code="name_taken")

    with pytest.raises(Conflict) as raised:
        ensure_node(actor, "Deploy", entity_type="tool", adoptable=taken)
    assert raised.value.code == "name_taken"
    assert graph.node_by_id(held.pk) is not None


def test_a_concurrent_creation_is_found_and_taken(actor: Actor) -> None:
    """The lookup misses (another writer's node is not committed yet), the insert collides with
    the node that writer made: the retry finds it and brings it up to date."""
    theirs = ensure_node(actor, "Race").node
    real = ensure._by_name
    calls: list[str] = []

    def first_miss(*args: Any) -> GraphNode | None:
        calls.append(args[3])
        return None if len(calls) == 1 else real(*args)

    with mock.patch.object(ensure, "_by_name", side_effect=first_miss):
        ours = ensure_node(actor, "race", fields={"description": "Ours."})
    assert calls == ["type", "type"]
    assert not ours.created and ours.node.pk == theirs.pk
    assert ours.node.description == "Ours."


# --- roles per node kind -----------------------------------------------------------------------


def test_the_apps_register_the_roles_of_their_node_kinds() -> None:
    assert node_types.node_roles(entity_type="skill") == MANAGE_SKILLS
    assert node_types.node_roles(entity_type=KNOWLEDGE_ENTITY_TYPE) == WRITE_KNOWLEDGE
    assert node_types.node_roles(entity_type="page") == WRITE_GRAPH
    assert node_types.node_roles(entity_type="person") == WRITE_GRAPH
    # What extraction derived from a memory context is memory's, unless its type is registered.
    assert node_types.node_roles(entity_type="person", derived_space="memory_entries") == (
        WRITE_KNOWLEDGE
    )
    assert node_types.edge_roles(source_entity_type="skill") == MANAGE_SKILLS
    assert node_types.edge_roles(source_entity_type="skill", derived_space="memory_entries") == (
        WRITE_KNOWLEDGE
    )


def test_registering_a_kind_again_with_other_roles_is_refused() -> None:
    node_types.node_type_register("skill", MANAGE_SKILLS)  # the same again: fine
    with pytest.raises(ValueError):
        node_types.node_type_register("skill", READ)


def _person(account: Account, role: str) -> Actor:
    user = get_user_model().objects.create_user(username=f"{role}-{account.pk}", password="x")
    membership_grant(account=account, user=user, role=role)
    return actor_for_user(user)


def test_the_node_kind_decides_the_role_checked_whoever_writes(actor: Actor) -> None:
    account = Account.objects.get(pk=actor.account_id)
    author, reviewer = _person(account, "author"), _person(account, "reviewer")
    own = account.pk
    concept = ensure_node(author, "Graph theory", own).node  # the graph's role: authors write
    with pytest.raises(PermissionDenied) as raised:
        ensure_node(author, "deploy-service", own, entity_type="skill")
    assert raised.value.code == "role_required"
    skill = ensure_node(reviewer, "deploy-service", own, entity_type="skill").node
    with pytest.raises(PermissionDenied):
        graph_services.node_update(actor=author, node=skill, fields={"description": "x"})
    with pytest.raises(PermissionDenied):  # an edge from a skill node is the skill's
        graph_services.edge_create(
            actor=author, account_id=account.pk, source_id=skill.pk, target_id=concept.pk,
            relation_type="uses",
        )  # fmt: skip
    with pytest.raises(PermissionDenied):  # nor may a concept become a skill
        graph_services.node_update(actor=author, node=concept, fields={"entity_type": "skill"})
    graph_services.node_delete(actor=reviewer, node=skill)
    assert graph.node_by_id(skill.pk) is None
