from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.actors import actor_for_account
from core.errors import EngramError
from core.models import Account
from core.portability.services import account_export


class Command(BaseCommand):
    help = (
        "Export an account (or one agent's share of it) to a versioned, checksummed archive "
        "(docs/portability.md). API key secrets are never exported."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", required=True, metavar="SLUG", help="the account's slug")
        parser.add_argument("--out", required=True, metavar="FILE", help="the archive to write")
        parser.add_argument(
            "--with-vectors",
            action="store_true",
            help="include embeddings (without them, an import embeds again)",
        )
        parser.add_argument(
            "--agent",
            metavar="NAME",
            help="only this agent's share: its own memory, like an agent file",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        account = Account.objects.filter(slug=options["account"]).first()
        if account is None:
            raise CommandError(f"No account with slug {options['account']!r}.")
        try:
            report = account_export(
                actor=actor_for_account(account.pk),
                account=account,
                out=Path(options["out"]),
                with_vectors=options["with_vectors"],
                agent_name=options["agent"],
            )
        except EngramError as exc:
            raise CommandError(exc.message) from exc
        for kind, count in report.counts.items():
            self.stdout.write(f"{kind}: {count}")
        self.stdout.write(f"wrote {report.path} (sha256 of its manifest: {report.digest})")
