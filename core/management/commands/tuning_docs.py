from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from core import tuning


class Command(BaseCommand):
    help = (
        "Print every tunable (name, default, meaning, the benchmark behind it) from the tuning "
        "registry; --write puts the table into docs/tuning.md; --check fails when it is out of "
        "date."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="Update docs/tuning.md.")
        parser.add_argument("--check", action="store_true", help="Fail when out of date.")

    def handle(self, *args: Any, **options: Any) -> None:
        if not options["write"] and not options["check"]:
            self.stdout.write(tuning.docs_table())
            return
        path = Path(settings.BASE_DIR) / "docs" / "tuning.md"
        try:
            text = path.read_text()
            fresh = tuning.rendered_docs(text)
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        if fresh != text and options["write"]:
            path.write_text(fresh)
        if options["check"] and fresh != text:
            raise CommandError("Out of date: tuning.md (run tuning_docs --write).")
        self.stdout.write(f"{'Updated' if options['write'] and fresh != text else 'Up to date'}.")
