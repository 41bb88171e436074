"""Admin sign-in locks a username after too many failures (django-axes); agents' API keys are
never counted or locked."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.management import call_command
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from config.env import EngramEnv
from tests.conftest import AuthedAgent
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"


def sign_in(client: Client, username: str, password: str) -> int:
    response = client.post(
        reverse("admin:login"),
        {"username": username, "password": password, "next": reverse("admin:index")},
    )
    return response.status_code


def signed_in(client: Client) -> bool:
    return client.get(reverse("admin:index")).status_code == 200


def test_failures_lock_the_username_until_reset() -> None:
    user = UserFactory.create(username="alice", is_staff=True)
    limit = settings.AXES_FAILURE_LIMIT
    assert limit == EngramEnv().ADMIN_LOGIN_FAILURE_LIMIT == 5
    client = Client()
    for _ in range(limit - 1):
        assert sign_in(client, "alice", "wrong") == 200  # the form again, with its error
    assert sign_in(client, "alice", "wrong") == 429
    # Locked: the right password is refused too, from any client.
    for other in (client, Client(REMOTE_ADDR="10.9.8.7")):
        assert sign_in(other, "alice", PASSWORD) == 429
        assert not signed_in(other)
    # Other people sign in as usual.
    UserFactory.create(username="bob", is_staff=True)
    bob = Client()
    assert sign_in(bob, "bob", PASSWORD) == 302 and signed_in(bob)

    call_command("axes_reset", verbosity=0)
    assert sign_in(client, "alice", PASSWORD) == 302
    assert signed_in(client)
    user.refresh_from_db()
    assert user.last_login is not None


def test_a_success_clears_the_count_and_one_username_can_be_reset() -> None:
    UserFactory.create(username="carol", is_staff=True)
    client = Client()
    limit = settings.AXES_FAILURE_LIMIT
    for _ in range(limit - 1):
        sign_in(client, "carol", "wrong")
    assert sign_in(client, "carol", PASSWORD) == 302  # below the limit; resets the count
    client.logout()
    for _ in range(limit - 1):
        assert sign_in(client, "carol", "wrong") == 200
    assert sign_in(client, "carol", "wrong") == 429
    call_command("axes_reset_username", "carol", verbosity=0)
    assert sign_in(client, "carol", PASSWORD) == 302


def test_api_keys_are_never_counted_or_locked(agent_client: AuthedAgent) -> None:
    UserFactory.create(username=agent_client.agent.name, is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT + 2):
        bad = APIClient()
        bad.credentials(HTTP_AUTHORIZATION="Bearer eng_aaaaaaaaaaaa_" + "x" * 43)
        assert bad.get("/api/v1/me").status_code == 401
    assert not AccessAttempt.objects.exists()
    # A person locked under the agent's name changes nothing for the agent's key.
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), agent_client.agent.name, "wrong")
    assert AccessAttempt.objects.filter(username=agent_client.agent.name).exists()
    assert agent_client.client.get("/api/v1/me").status_code == 200


def test_lockout_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADMIN_LOGIN_FAILURE_LIMIT", "0")
    monkeypatch.setenv("ADMIN_LOGIN_COOLOFF_MINUTES", "0")
    env = EngramEnv()
    assert (env.ADMIN_LOGIN_FAILURE_LIMIT, env.ADMIN_LOGIN_COOLOFF_MINUTES) == (0, 0)
    monkeypatch.setenv("ADMIN_LOGIN_FAILURE_LIMIT", "-1")
    with pytest.raises(ValueError, match="ADMIN_LOGIN_FAILURE_LIMIT"):
        EngramEnv()


def test_sign_ins_without_a_request_are_not_counted_or_refused() -> None:
    """Django's test client ``login()`` and shells authenticate without a request: no web
    sign-in, so axes neither counts nor blocks them; the password still decides."""
    UserFactory.create(username="frank", is_staff=True)
    for _ in range(settings.AXES_FAILURE_LIMIT):
        assert not Client().login(username="frank", password="wrong")
    assert not AccessAttempt.objects.exists()
    assert Client().login(username="frank", password=PASSWORD)
    # Over HTTP the same user is counted and locked as usual.
    for _ in range(settings.AXES_FAILURE_LIMIT):
        sign_in(Client(), "frank", "wrong")
    assert sign_in(Client(), "frank", PASSWORD) == 429
