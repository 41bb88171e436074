from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.errors import EngramError
from core.portability.services import account_import


class Command(BaseCommand):
    help = (
        "Import an account archive made by `export` into an account (created when it does not "
        "exist). All or nothing, checked first; importing the same file again changes nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", metavar="FILE", help="the archive to import")
        parser.add_argument("--account", required=True, metavar="SLUG", help="the target account")
        parser.add_argument("--name", default="", help="the account's name, if it is created")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        if not path.is_file():
            raise CommandError(f"No such file: {path}")
        try:
            report = account_import(
                path=path, account_slug=options["account"], account_name=options["name"]
            )
        except EngramError as exc:
            raise CommandError(f"{exc.message} [{exc.code}]") from exc
        if report.already_imported:
            self.stdout.write(
                f"{path} was imported into {report.account.slug} already: nothing changed"
            )
            return
        for kind, count in report.counts.items():
            self.stdout.write(f"{kind}: {count}")
        self.stdout.write(
            f"imported into {report.account.slug}; indexes and embeddings are rebuilt by the "
            "workers (memory.index_pending) after the commit"
        )
