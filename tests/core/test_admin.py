"""The admin as operators use it: every page renders; an API key's secret is shown once."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.urls import reverse
from rest_framework.test import APIClient

from core.actors import actor_for_account
from core.models import ApiKey
from tests.factories import AgentFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(client):
    user = UserFactory.create(is_staff=True, is_superuser=True)
    client.force_login(user)
    return client


def test_every_admin_page_renders(admin_client) -> None:
    AgentFactory.create()
    for model, model_admin in admin.site._registry.items():
        info = f"{model._meta.app_label}_{model._meta.model_name}"
        changelist = admin_client.get(reverse(f"admin:{info}_changelist"))
        assert changelist.status_code == 200, info
        if model_admin.has_add_permission(changelist.wsgi_request):
            assert admin_client.get(reverse(f"admin:{info}_add")).status_code == 200, info


def test_creating_a_key_in_the_admin_shows_the_secret_once(admin_client) -> None:
    agent = AgentFactory.create()
    response = admin_client.post(
        reverse("admin:core_apikey_add"),
        {
            "agent": agent.pk,
            "name": "ops",
            "scopes": ["read"],
            "expires_at_0": "",
            "expires_at_1": "",
        },
        follow=True,
    )
    assert response.status_code == 200
    shown = re.search(r"eng_[a-z0-9]{12}_[A-Za-z0-9_-]{43}", response.content.decode())
    assert shown, response.content.decode()[:2000]
    key = ApiKey.objects.get(agent=agent)
    assert key.scopes == ["read"] and shown.group(0).startswith(f"eng_{key.prefix}_")
    assert (
        APIClient().get("/api/v1/me", HTTP_AUTHORIZATION=f"Bearer {shown.group(0)}").status_code
        == 200
    )
    detail = admin_client.get(reverse("admin:core_apikey_change", args=[key.pk])).content.decode()
    assert shown.group(0) not in detail and key.hashed_secret not in detail


def test_revoke_action(admin_client) -> None:
    from core import services

    agent = AgentFactory.create()
    key, _ = services.api_key_create(actor=actor_for_account(agent.account_id), agent=agent)
    admin_client.post(
        reverse("admin:core_apikey_changelist"),
        {"action": "revoke_selected", "_selected_action": [key.pk]},
    )
    key.refresh_from_db()
    assert key.revoked_at is not None
