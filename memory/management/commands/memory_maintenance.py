from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.models import Account
from memory.maintenance.services import cluster_maintenance
from memory.models import MemoryMaintenanceReport


class Command(BaseCommand):
    help = (
        "Run cluster maintenance now (docs/memory/maintenance.md, 'Cluster maintenance'): merge "
        "each group of near-duplicate long-term memories into one. Every account, or --account; "
        "every unarchived context, or --context. --dry-run plans without changing anything; "
        "--scheduled applies the schedule's short-circuits. Prints one line per report "
        "(--json: the reports)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--account", type=int, action="append", default=[])
        parser.add_argument("--context", type=int, action="append", default=[])
        parser.add_argument("--dry-run", action="store_true")
        parser.add_argument("--scheduled", action="store_true")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **options: Any) -> None:
        accounts = Account.objects.order_by("pk")
        if options["account"]:
            accounts = accounts.filter(pk__in=options["account"])
            if accounts.count() != len(set(options["account"])):
                raise CommandError("No such account.")
        for account_id in accounts.values_list("pk", flat=True):
            report = cluster_maintenance.maintenance_run(
                account_id=account_id,
                trigger=MemoryMaintenanceReport.Trigger.COMMAND,
                actor_name="manage.py memory_maintenance",
                dry_run=options["dry_run"],
                context_ids=options["context"] or None,
                check_rules=options["scheduled"],
            )
            if options["json"]:
                from memory.maintenance.apis.reports import ReportOutput

                self.stdout.write(json.dumps(ReportOutput(report).data, default=str))
                continue
            if report.status == MemoryMaintenanceReport.Status.SHORT_CIRCUITED:
                self.stdout.write(
                    f"account {account_id}: report {report.pk} short-circuited: "
                    f"{report.short_circuit_detail}"
                )
                continue
            kind = "dry run" if report.dry_run else "run"
            self.stdout.write(
                f"account {account_id}: {kind} report {report.pk}: {report.entries_seen} "
                f"entries, {report.cluster_count} clusters, kept {report.kept_count} absorbing "
                f"{report.replaced_count}, skipped {report.skipped_count} "
                f"({report.timings_ms.get('total', 0):.0f} ms)"
            )
