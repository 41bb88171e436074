"""Recreate the knowledge graph's page and article nodes and their ``references`` edges from the
pages themselves (after a restore, a bulk import, or edits made around the services)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from content.services import links
from core.models import Account


class Command(BaseCommand):
    help = (
        "For every page (of the named accounts, or all): make or update its graph node, then "
        "make its outgoing references edges exactly its current links; delete page and article "
        "nodes that no longer belong to a page or an article. Embeddings are refreshed where the "
        "text changed. Safe to re-run: an up-to-date graph is left as it is."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--account", action="append", default=[], help="an account slug (repeatable)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = Account.objects.order_by("pk")
        if options["account"]:
            accounts = accounts.filter(slug__in=options["account"])
            missing = set(options["account"]) - set(accounts.values_list("slug", flat=True))
            if missing:
                raise CommandError(f"No such account: {', '.join(sorted(missing))}")
        totals = {"pages": 0, "edges_created": 0, "edges_removed": 0, "orphans_removed": 0}
        for account in accounts:

            def progress(ids: list[int], name: str = account.slug) -> Iterable[int]:
                return tqdm(ids, desc=name, leave=False)

            result = links.graph_rebuild(account_id=account.pk, progress=progress)
            for name, value in result.items():
                totals[name] += value
            self.stdout.write(f"{account.slug}: {result}")
        self.stdout.write(f"done: {totals}")
