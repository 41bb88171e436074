"""People act through their roles per account; every write records who did it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from core import services
from core.actors import (
    INSTALLATION_OPERATORS_GROUP,
    MANAGE_KNOWLEDGE_BASES,
    WRITE_DOCUMENTS,
    actor_for_account,
    actor_for_agent,
    actor_for_user,
    is_installation_operator,
)
from core.errors import PermissionDenied
from core.models import AuditEvent, Membership
from rag import services as rag_services
from rag.models import KnowledgeBase
from tests.factories import AccountFactory, AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


def test_roles_per_account_decide_what_a_person_may_do() -> None:
    a, b = AccountFactory.create(), AccountFactory.create()
    user = UserFactory.create(is_staff=True)
    services.membership_grant(account=a, user=user, role=Membership.Role.OPERATOR)
    services.membership_grant(account=b, user=user, role=Membership.Role.AUTHOR)
    actor = actor_for_user(user)
    assert actor.account_ids == {a.pk, b.pk}
    assert actor.has_role(a.pk, MANAGE_KNOWLEDGE_BASES)
    assert not actor.has_role(b.pk, MANAGE_KNOWLEDGE_BASES)
    assert actor.has_role(b.pk, WRITE_DOCUMENTS)
    assert actor.accounts_with(MANAGE_KNOWLEDGE_BASES) == {a.pk}
    with pytest.raises(PermissionDenied) as denied:
        actor.require(b.pk, MANAGE_KNOWLEDGE_BASES)
    assert denied.value.code == "role_required"
    # A foreign account is never allowed, whatever the role asked for.
    assert not actor.has_role(AccountFactory.create().pk, WRITE_DOCUMENTS)


def test_owners_superusers_agents_and_inactive_users() -> None:
    account, other = AccountFactory.create(), AccountFactory.create()
    owner = UserFactory.create(is_staff=True)
    services.membership_grant(account=account, user=owner, role=Membership.Role.OWNER)
    assert actor_for_user(owner).has_role(account.pk, MANAGE_KNOWLEDGE_BASES)
    root = actor_for_user(UserFactory.create(is_staff=True, is_superuser=True))
    assert root.has_role(other.pk, MANAGE_KNOWLEDGE_BASES) and {account.pk, other.pk} <= set(
        root.account_ids
    )
    agent = actor_for_agent(AgentFactory.create(account=account))
    assert agent.has_role(account.pk, MANAGE_KNOWLEDGE_BASES)
    assert not agent.has_role(other.pk, MANAGE_KNOWLEDGE_BASES)
    gone = UserFactory.create(is_staff=True, is_active=False)
    services.membership_grant(account=account, user=gone, role=Membership.Role.OWNER)
    assert actor_for_user(gone).account_ids == frozenset()
    account.is_active = False
    account.save(update_fields=["is_active"])
    assert account.pk not in actor_for_user(owner).account_ids


def test_installation_operators_are_superusers_or_in_the_group() -> None:
    user = UserFactory.create(is_staff=True)
    assert not is_installation_operator(user)
    user.groups.add(Group.objects.get_or_create(name=INSTALLATION_OPERATORS_GROUP)[0])
    assert is_installation_operator(user)
    assert is_installation_operator(UserFactory.create(is_superuser=True))


def test_a_reviewer_cannot_change_a_knowledge_base_and_nothing_changes() -> None:
    account = AccountFactory.create()
    kb = rag_services.knowledge_base_create(actor=actor_for_account(account.pk), name="KB")
    reviewer = UserFactory.create(is_staff=True)
    services.membership_grant(account=account, user=reviewer, role=Membership.Role.REVIEWER)
    with pytest.raises(PermissionDenied):
        rag_services.knowledge_base_update(
            actor=actor_for_user(reviewer), kb=kb, description="changed"
        )
    kb.refresh_from_db()
    assert kb.description == ""
    assert not AuditEvent.objects.filter(action="rag.knowledge_base.update").exists()


def test_writes_record_the_acting_person_and_only_changed_fields() -> None:
    account = AccountFactory.create()
    operator = UserFactory.create(is_staff=True)
    services.membership_grant(account=account, user=operator, role=Membership.Role.OPERATOR)
    actor = actor_for_user(operator)
    kb = rag_services.knowledge_base_create(actor=actor, account_id=account.pk, name="KB")
    # Ingestion moved the statistics meanwhile; the stale instance must not write them back.
    KnowledgeBase.objects.filter(pk=kb.pk).update(chunk_count=7, total_terms=70, status="paused")
    updated = rag_services.knowledge_base_update(
        actor=actor, kb=kb, description="new", name=kb.name
    )
    assert (updated.chunk_count, updated.total_terms, updated.status) == (7, 70, "paused")
    event = AuditEvent.objects.get(action="rag.knowledge_base.update")
    assert event.user_id == operator.pk and event.account_id == account.pk
    assert event.changes == {"description": "new"}
    assert event.target_id == str(kb.pk) and event.target_type == "rag.knowledgebase"


def test_keys_cannot_expire_in_the_past() -> None:
    from datetime import timedelta

    from django.utils import timezone

    from core.errors import ValidationFailed

    agent = AgentFactory.create()
    with pytest.raises(ValidationFailed) as exc:
        services.api_key_create(
            actor=actor_for_account(agent.account_id),
            agent=agent,
            expires_at=timezone.now() - timedelta(minutes=1),
        )
    assert exc.value.code == "invalid_expiry"


def test_migrating_creates_the_installation_operators_group() -> None:
    # The row itself may be gone: transactional tests truncate every table, data migrations'
    # rows included. Run the migration's step as migrate does.
    import importlib

    from django.apps import apps

    migration = importlib.import_module("core.migrations.0004_installation_operators_group")
    Group.objects.filter(name=INSTALLATION_OPERATORS_GROUP).delete()
    migration.create_group(apps, None)
    migration.create_group(apps, None)  # idempotent
    assert Group.objects.filter(name=INSTALLATION_OPERATORS_GROUP).count() == 1
