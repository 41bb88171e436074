from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from core import services
from core.actors import actor_for_account
from core.errors import EngramError
from core.models import Account, Agent, ApiKey


def parse_scopes(raw: str) -> list[str]:
    scopes = [scope.strip() for scope in raw.split(",") if scope.strip()]
    unknown = sorted(set(scopes) - set(ApiKey.Scope.values))
    if unknown or not scopes:
        raise CommandError(
            f"Bad --scopes {raw!r}: use a comma-separated subset of "
            f"{', '.join(ApiKey.Scope.values)} (unknown: {', '.join(unknown) or 'none given'})."
        )
    return scopes


class Command(BaseCommand):
    help = (
        "Create an agent in an account (or reuse the one with this name) and a new API key for it. "
        "The key is printed alone on the last line, once: it cannot be shown again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, metavar="SLUG", help="the account's slug")
        parser.add_argument(
            "--create-account",
            action="store_true",
            help="create the account (named after its slug) if it does not exist",
        )
        parser.add_argument("--name", required=True, help="the agent's name in the account")
        parser.add_argument(
            "--scopes", default="read,write", help="comma-separated: read, write, admin"
        )
        parser.add_argument("--description", default="", help="for a new agent")
        parser.add_argument("--key-name", default="create_agent", help="a label for the key")

    def handle(self, *args: Any, **options: Any) -> None:
        scopes = parse_scopes(options["scopes"])  # before any write
        slug, name = options["account"], options["name"]
        try:
            with transaction.atomic():
                account = Account.objects.filter(slug=slug).first()
                account_created = account is None
                if account is None:
                    if not options["create_account"]:
                        raise CommandError(
                            f"No account with slug {slug!r} (add --create-account to create it)."
                        )
                    account = services.account_create(name=slug, slug=slug)
                if not account.is_active:
                    raise CommandError(f"Account {slug!r} is inactive: its keys would not work.")
                tool = actor_for_account(account.pk)
                agent = Agent.objects.filter(account=account, name=name).first()
                agent_created = agent is None
                if agent is None:
                    agent = services.agent_create(
                        actor=tool, account=account, name=name, description=options["description"]
                    )
                elif not agent.is_active:
                    raise CommandError(f"Agent {name!r} is disabled: enable it in the admin first.")
                _, secret = services.api_key_create(
                    actor=tool, agent=agent, scopes=scopes, name=options["key_name"]
                )
        except EngramError as exc:
            raise CommandError(exc.message) from exc
        self.stdout.write(
            f"account {account.slug} ({'created' if account_created else 'existing'}), "
            f"agent {agent.name} ({'created' if agent_created else 'existing'}), "
            f"new key with scopes {','.join(sorted(scopes))}; the key (shown only now):"
        )
        self.stdout.write(secret)
