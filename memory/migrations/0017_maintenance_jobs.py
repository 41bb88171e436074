# Cluster maintenance asked for now runs as a job (memory/maintenance/models/jobs.py).

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0004_installation_operators_group"),
        ("memory", "0016_derived_visibility"),
    ]

    operations = [
        migrations.CreateModel(
            name="MaintenanceJob",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("actor", models.CharField(blank=True, max_length=200)),
                (
                    "trigger",
                    models.CharField(
                        choices=[
                            ("schedule", "Schedule"),
                            ("api", "API"),
                            ("admin", "Admin"),
                            ("command", "Command"),
                            ("mcp", "MCP tool"),
                        ],
                        max_length=10,
                    ),
                ),
                ("dry_run", models.BooleanField(default=False)),
                ("context_ids", models.JSONField(blank=True, null=True)),
                (
                    "status",
                    models.CharField(
                        choices=[
                            ("queued", "Queued"),
                            ("running", "Running"),
                            ("completed", "Completed"),
                            ("failed", "Failed"),
                        ],
                        default="queued",
                        max_length=10,
                    ),
                ),
                ("error_code", models.CharField(blank=True, max_length=100)),
                ("error", models.TextField(blank=True)),
                ("claim", models.CharField(blank=True, max_length=255)),
                ("attempts", models.PositiveSmallIntegerField(default=0)),
                ("created_at", models.DateTimeField(auto_now_add=True)),
                ("started_at", models.DateTimeField(blank=True, null=True)),
                ("finished_at", models.DateTimeField(blank=True, null=True)),
                (
                    "account",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="+",
                        to="core.account",
                    ),
                ),
                (
                    "agent",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="core.agent",
                    ),
                ),
                (
                    "report",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to="memory.memorymaintenancereport",
                    ),
                ),
            ],
            options={
                "verbose_name": "memory maintenance job",
                "ordering": ["-created_at", "-id"],
                "indexes": [
                    models.Index(
                        condition=models.Q(("status__in", ["queued", "running"])),
                        fields=["status", "created_at"],
                        name="memory_maint_job_open",
                    )
                ],
                "constraints": [
                    models.CheckConstraint(
                        condition=models.Q(
                            ("status__in", ["queued", "running", "completed", "failed"])
                        ),
                        name="memory_maint_job_status_valid",
                    )
                ],
            },
        ),
    ]
