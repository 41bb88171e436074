from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.mcp import docs


class Command(BaseCommand):
    help = (
        "Print the MCP tool table made from the registry; --write puts it into docs/mcp.md and "
        "the tool count into README.md; --check fails when either is out of date."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--write", action="store_true", help="Update the files.")
        parser.add_argument("--check", action="store_true", help="Fail when out of date.")

    def handle(self, *args: Any, **options: Any) -> None:
        pairs = [
            (docs.docs_path(), docs.rendered_docs),
            (docs.readme_path(), docs.rendered_readme),
        ]
        if not options["write"] and not options["check"]:
            self.stdout.write(docs.table())
            return
        stale = []
        for path, render in pairs:
            try:
                text = path.read_text()
                fresh = render(text)
            except (OSError, ValueError) as exc:
                raise CommandError(str(exc)) from exc
            if fresh != text:
                stale.append(path.name)
                if options["write"]:
                    path.write_text(fresh)
        if options["check"] and stale:
            raise CommandError(f"Out of date: {', '.join(stale)} (run mcp_docs --write).")
        self.stdout.write(f"{'Updated' if options['write'] and stale else 'Up to date'}.")
