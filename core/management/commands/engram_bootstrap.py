from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from core import services
from core.actors import actor_for_account
from core.models import Account


class Command(BaseCommand):
    help = (
        "First start only: create a demo account, an agent with an API key and an admin user, and "
        "print the admin login and the key once. Does nothing if any account or superuser exists."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        if Account.objects.exists() or user_model.objects.filter(is_superuser=True).exists():
            self.stdout.write("Engram is already set up; nothing to create.")
            return
        password = secrets.token_urlsafe(12)
        with transaction.atomic():
            admin = user_model.objects.create_superuser(
                username="admin", email="admin@localhost", password=password
            )
            account = services.account_create(name="Demo", slug="demo", owner=admin)
            system = actor_for_account(account.pk)
            agent = services.agent_create(
                actor=system,
                account=account,
                name="demo-agent",
                description="Created on first start.",
            )
            _, key = services.api_key_create(
                actor=system, agent=agent, scopes=["read", "write"], name="first-start key"
            )
        self.stdout.write(
            "\n".join(
                [
                    "",
                    "=" * 72,
                    "Engram first start: save these now, they are not shown again.",
                    f"  admin login     : admin / {password}",
                    f"  agent           : {agent.name} (account {account.slug})",
                    f"  agent API key   : {key}",
                    "=" * 72,
                    "",
                ]
            )
        )
