from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core import services
from core.actors import actor_for_account
from core.errors import EngramError
from core.models import Account, Membership


class Command(BaseCommand):
    help = (
        "Create or update a staff user who signs in to the admin and give them a role in an "
        "account (roles add up; existing ones stay). Without --password an existing user keeps "
        "theirs and a new user gets a generated one, printed once."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, metavar="SLUG", help="the account's slug")
        parser.add_argument("--username", required=True)
        parser.add_argument(
            "--role", required=True, help=f"one of {', '.join(Membership.Role.values)}"
        )
        parser.add_argument(
            "--password",
            default=None,
            help="set this password (it shows in shell history: prefer the generated one)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        role, slug, username = options["role"], options["account"], options["username"]
        if role not in Membership.Role.values:
            raise CommandError(
                f"Unknown role {role!r}: use one of {', '.join(Membership.Role.values)}."
            )
        account = Account.objects.filter(slug=slug).first()
        if account is None:
            raise CommandError(f"No account with slug {slug!r}.")
        tool = actor_for_account(account.pk)
        try:
            with transaction.atomic():
                user, generated = services.staff_user_ensure(
                    actor=tool, username=username, password=options["password"]
                )
                services.membership_grant(account=account, user=user, role=role, actor=tool)
        except EngramError as exc:
            details = "; ".join(f"{k}: {' '.join(v)}" for k, v in exc.details.items())
            raise CommandError(f"{exc.message} {details}".strip()) from exc
        roles = sorted(
            Membership.objects.filter(account=account, user=user).values_list("role", flat=True)
        )
        self.stdout.write(f"{user.username} is {', '.join(roles)} of {account.slug}.")
        if generated is not None:
            self.stdout.write("Generated password (shown only now; change it after signing in):")
            self.stdout.write(generated)
