"""``./engram manage embeddings start|status|cutover|rollback|drop``: the embedding-model
migration (``core.embeddings.generations``; docs/portability.md, "Changing the embedding
model")."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.core.serializers.json import DjangoJSONEncoder

from core.embeddings import generations
from core.errors import EngramError


class Command(BaseCommand):
    help = (
        "Migrate the embeddings to the model EMBEDDING_NEXT_* configures, with no downtime: "
        "start (or resume) building the next generation, see its status, cut over to it, roll "
        "back to the previous generation, or drop the other generation."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("action", choices=["start", "status", "cutover", "rollback", "drop"])
        parser.add_argument(
            "--no-auto-cutover",
            action="store_true",
            help="start: build, then wait for a cut-over by hand",
        )
        parser.add_argument(
            "--foreground",
            action="store_true",
            help="start: build in this process (and wait), instead of on a worker",
        )
        parser.add_argument("--json", action="store_true", help="status as JSON")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        try:
            if action == "start":
                generation = generations.generation_start(
                    auto_cutover=not options["no_auto_cutover"],
                    enqueue=not options["foreground"],
                )
                self.stdout.write(f"building generation {generation.pk} ({generation.model_id})")
                if options["foreground"]:
                    self.stdout.write(generations.generation_build(generation.pk))
            elif action == "cutover":
                generation = generations.generation_cutover()
                self.stdout.write(f"generation {generation.pk} ({generation.model_id}) is current")
            elif action == "rollback":
                generation = generations.generation_rollback()
                self.stdout.write(
                    f"generation {generation.pk} ({generation.model_id}) is current again"
                )
            elif action == "drop":
                generation = generations.generation_drop()
                self.stdout.write(f"generation {generation.pk} ({generation.model_id}) dropped")
        except EngramError as exc:
            raise CommandError(f"{exc.code}: {exc.message}") from exc
        if action == "status" or options["json"]:
            self._status(as_json=options["json"])

    def _status(self, *, as_json: bool) -> None:
        found = generations.generation_status()
        if as_json:
            self.stdout.write(json.dumps(found, cls=DjangoJSONEncoder, indent=2))
            return
        for role in ("current", "next", "previous"):
            generation = found[role]
            if generation is not None:
                self.stdout.write(
                    f"{role}: generation {generation['id']} {generation['model_id']} "
                    f"({generation['dimensions']}d, {generation['status']})"
                )
        self.stdout.write(f"progress: {found['progress']:.1%}")
        for space in found["spaces"]:
            line = f"  {space['space']}: {space['units']} units, {space['stale']} stale"
            if "missing" in space:
                line += f", {space['missing']} missing in the other generation"
            self.stdout.write(line)
