"""The operator CLI: create_agent prints a new key alone on its last line; create_member creates
or updates a staff user with a role. Both write through services (audited)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from core.models import Account, Agent, ApiKey, AuditEvent, Membership
from tests.factories import AccountFactory, UserFactory

pytestmark = pytest.mark.django_db


def run(command: str, *args: str) -> list[str]:
    out = StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue().rstrip("\n").split("\n")


def me(key: str) -> dict:
    response = APIClient().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == 200, response.content
    return response.json()


def test_create_agent_creates_once_and_prints_a_new_key_each_run() -> None:
    args = ("--account", "acme", "--create-account", "--name", "scout", "--scopes", "read,admin")
    first = run("create_agent", *args)[-1]
    second = run("create_agent", *args)[-1]
    assert first != second and first.startswith("eng_") and " " not in first
    account = Account.objects.get(slug="acme")
    agent = Agent.objects.get(account=account, name="scout")
    assert Agent.objects.filter(account=account).count() == 1
    assert me(first)["id"] == me(second)["id"] == agent.pk
    keys = ApiKey.objects.filter(agent=agent)
    assert keys.count() == 2 and all(k.scopes == ["admin", "read"] for k in keys)
    actions = list(
        AuditEvent.objects.filter(account=account).order_by("id").values_list("action", flat=True)
    )
    assert actions == [
        "core.account.create",
        "core.agent.create",
        "core.api_key.create",
        "core.api_key.create",
    ]


def test_create_agent_refuses_unknown_accounts_and_bad_scopes() -> None:
    with pytest.raises(CommandError, match="--create-account"):
        run("create_agent", "--account", "nope", "--name", "a")
    with pytest.raises(CommandError, match="Bad --scopes 'read,root'"):
        run(
            "create_agent",
            "--account",
            "nope",
            "--create-account",
            "--name",
            "a",
            "--scopes",
            "read,root",
        )
    with pytest.raises(CommandError, match="Bad --scopes"):
        run("create_agent", "--account", "nope", "--create-account", "--name", "a", "--scopes", "")
    assert not Account.objects.filter(slug="nope").exists()
    assert not Agent.objects.exists()


def test_create_agent_in_an_existing_account() -> None:
    account = AccountFactory.create(slug="existing")
    key = run("create_agent", "--account", "existing", "--name", "helper")[-1]
    assert ApiKey.objects.get(agent__account=account).scopes == ["read", "write"]
    me(key)


def sign_in(username: str, password: str) -> bool:
    client = Client()
    response = client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
    )
    return response.status_code == 302 and client.get(reverse("admin:index")).status_code == 200


def test_create_member_creates_a_staff_user_with_a_generated_password() -> None:
    account = AccountFactory.create(slug="acme")
    lines = run("create_member", "--account", "acme", "--username", "dana", "--role", "operator")
    password = lines[-1]
    assert lines[0] == "dana is operator of acme."
    assert "shown only now" in lines[-2] and len(password) >= 16
    user = User.objects.get(username="dana")
    assert user.is_staff and not user.is_superuser and user.check_password(password)
    assert sign_in("dana", password)
    # Again with another role: roles add up, the password stays, nothing is printed for it.
    lines = run("create_member", "--account", "acme", "--username", "dana", "--role", "author")
    assert lines == ["dana is author, operator of acme."]
    user.refresh_from_db()
    assert user.check_password(password)
    assert set(
        Membership.objects.filter(user=user, account=account).values_list("role", flat=True)
    ) == {
        "operator",
        "author",
    }
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"core.user.create", "core.membership.grant"} <= actions


def test_create_member_sets_a_given_password_and_makes_the_user_staff() -> None:
    AccountFactory.create(slug="acme")
    UserFactory.create(username="erin", is_staff=False)
    lines = run(
        "create_member",
        "--account",
        "acme",
        "--username",
        "erin",
        "--role",
        "reviewer",
        "--password",
        "a-long enough passphrase",
    )
    assert lines == ["erin is reviewer of acme."]
    user = User.objects.get(username="erin")
    assert user.is_staff and user.check_password("a-long enough passphrase")
    event = AuditEvent.objects.get(action="core.user.update")
    assert "a-long enough passphrase" not in str(event.changes)


def test_create_member_refuses_bad_input_and_changes_nothing() -> None:
    AccountFactory.create(slug="acme")
    with pytest.raises(CommandError, match="Unknown role 'admin'"):
        run("create_member", "--account", "acme", "--username", "f", "--role", "admin")
    with pytest.raises(CommandError, match="No account with slug 'nope'"):
        run("create_member", "--account", "nope", "--username", "f", "--role", "owner")
    with pytest.raises(CommandError, match=r"too short|too common"):
        run(
            "create_member",
            "--account",
            "acme",
            "--username",
            "f",
            "--role",
            "owner",
            "--password",
            "abc",
        )
    with pytest.raises(CommandError, match="Invalid username"):
        run("create_member", "--account", "acme", "--username", "no spaces!", "--role", "owner")
    assert not User.objects.exists()
    assert not Membership.objects.exists()
