"""Services for accounts, members, teams and agents: roles decide, installation-level fields
stay with superusers and tools, an account keeps an owner, every write is audited."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User

from core import services
from core.actors import actor_for_account, actor_for_user
from core.errors import Conflict, PermissionDenied, ValidationFailed
from core.models import Account, AuditEvent, Membership
from tests.factories import AccountFactory, AgentFactory, TeamFactory, UserFactory

pytestmark = pytest.mark.django_db


def member(account: Account, role: str) -> User:
    user = UserFactory.create(is_staff=True)
    services.membership_grant(account=account, user=user, role=role)
    return user


def test_owners_rename_but_slugs_and_activity_are_installation_level() -> None:
    account = AccountFactory.create(slug="acme")
    owner = actor_for_user(member(account, "owner"))
    services.account_update(actor=owner, account=account, name="Acme Inc")
    for field, value in (("slug", "other"), ("is_active", False)):
        with pytest.raises(PermissionDenied) as denied:
            services.account_update(actor=owner, account=account, **{field: value})
        assert denied.value.code == "superuser_required"
    with pytest.raises(PermissionDenied):
        services.account_delete(actor=owner, account=account)
    with pytest.raises(PermissionDenied):
        services.account_update(
            actor=actor_for_user(member(account, "operator")), account=account, name="x"
        )
    account.refresh_from_db()
    assert (account.name, account.slug, account.is_active) == ("Acme Inc", "acme", True)
    root = actor_for_user(UserFactory.create(is_staff=True, is_superuser=True))
    services.account_update(actor=root, account=account, slug="acme-2")
    AccountFactory.create(slug="taken")
    with pytest.raises(Conflict):
        services.account_update(actor=root, account=account, slug="taken")
    event = AuditEvent.objects.filter(action="core.account.update").first()
    assert event is not None and event.changes == {"slug": "acme-2"}


def test_memberships_need_an_owner_and_keep_one() -> None:
    account = AccountFactory.create()
    owner_user = member(account, "owner")
    owner = actor_for_user(owner_user)
    newcomer = UserFactory.create(is_staff=True)
    with pytest.raises(PermissionDenied):
        services.membership_grant(
            actor=actor_for_user(member(account, "operator")),
            account=account,
            user=newcomer,
            role="owner",
        )
    with pytest.raises(ValidationFailed) as invalid:
        services.membership_grant(actor=owner, account=account, user=newcomer, role="admin")
    assert invalid.value.code == "invalid_role"
    mine = Membership.objects.get(user=owner_user, account=account)
    with pytest.raises(Conflict) as last:
        services.membership_revoke(actor=owner, membership=mine)
    assert last.value.code == "last_owner"
    with pytest.raises(Conflict):
        services.membership_update(actor=owner, membership=mine, role="reviewer")
    services.membership_grant(actor=owner, account=account, user=newcomer, role="owner")
    services.membership_update(actor=owner, membership=mine, role="reviewer")
    assert Membership.objects.get(pk=mine.pk).role == "reviewer"
    assert {"core.membership.grant", "core.membership.update"} <= set(
        AuditEvent.objects.filter(account=account).values_list("action", flat=True)
    )


def test_teams_and_agents_stay_in_their_account() -> None:
    account, other = AccountFactory.create(), AccountFactory.create()
    owner = actor_for_user(member(account, "owner"))
    team = services.team_create(actor=owner, account=account, name="ops")
    with pytest.raises(Conflict):
        services.team_create(actor=owner, account=account, name="ops")
    with pytest.raises(PermissionDenied):
        services.team_create(actor=owner, account=other, name="ops")
    agent = AgentFactory.create(account=account, name="a1")
    AgentFactory.create(account=account, name="a2")
    with pytest.raises(ValidationFailed) as mismatch:
        services.agent_update(actor=owner, agent=agent, teams=[TeamFactory.create(account=other)])
    assert mismatch.value.code == "team_account_mismatch"
    with pytest.raises(Conflict):
        services.agent_update(actor=owner, agent=agent, name="a2")
    services.agent_update(actor=owner, agent=agent, teams=[team], status="disabled")
    agent.refresh_from_db()
    assert agent.status == "disabled" and list(agent.teams.all()) == [team]
    services.team_update(actor=owner, team=team, description="on call")
    services.team_delete(actor=owner, team=team)
    services.agent_delete(actor=owner, agent=agent)
    actions = list(
        AuditEvent.objects.filter(account=account).order_by("id").values_list("action", flat=True)
    )
    assert actions[-5:] == [
        "core.team.create",
        "core.agent.update",
        "core.team.update",
        "core.team.delete",
        "core.agent.delete",
    ]


def test_api_keys_are_deleted_by_owners_only() -> None:
    agent = AgentFactory.create()
    key, _ = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    with pytest.raises(PermissionDenied):
        services.api_key_delete(actor=actor_for_user(member(agent.account, "operator")), key=key)
    services.api_key_delete(actor=actor_for_user(member(agent.account, "owner")), key=key)
    assert not agent.api_keys.exists()
    assert AuditEvent.objects.filter(action="core.api_key.delete", target_id=str(key.pk)).exists()


def test_staff_users_are_installation_level() -> None:
    account = AccountFactory.create()
    with pytest.raises(PermissionDenied):
        services.staff_user_ensure(actor=actor_for_user(member(account, "owner")), username="x")
    user, generated = services.staff_user_ensure(actor=actor_for_account(account.pk), username="x")
    assert generated and user.check_password(generated) and user.is_staff
    again, none = services.staff_user_ensure(actor=actor_for_account(account.pk), username="x")
    assert again.pk == user.pk and none is None and again.check_password(generated)
