"""Entries waiting for their index (a conversation's messages are stored at once and indexed by
a worker) and the marks of applied read flushes (reads are buffered in Redis, not written by the
request): docs/memory/conversations.md, "When a message becomes searchable" and "Reads and writes at the same
time". The queue's rows go with their entry and context in the database itself: the foreign keys
are declared here, ON DELETE CASCADE (Django would create its own constraints only at the end of
the migration, too late for ``core.db.DatabaseOnDelete``).
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0017_maintenance_jobs"),
    ]

    operations = [
        migrations.CreateModel(
            name="AccessFlush",
            fields=[
                (
                    "pk",
                    models.CompositePrimaryKey(
                        "token",
                        "context_id",
                        blank=True,
                        editable=False,
                        primary_key=True,
                        serialize=False,
                    ),
                ),
                ("token", models.CharField(max_length=64)),
                ("context_id", models.BigIntegerField()),
                ("applied_at", models.DateTimeField(db_index=True)),
            ],
        ),
        migrations.CreateModel(
            name="PendingIndex",
            fields=[
                (
                    "entry",
                    models.OneToOneField(
                        db_constraint=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        primary_key=True,
                        related_name="+",
                        serialize=False,
                        to="memory.memoryentry",
                    ),
                ),
                ("keyword", models.BooleanField(default=True)),
                ("embed", models.BooleanField(default=True)),
                ("indexed", models.BooleanField(default=False)),
                ("queued_at", models.DateTimeField()),
                ("claim", models.CharField(blank=True, max_length=64)),
                ("claimed_at", models.DateTimeField(blank=True, null=True)),
                ("attempts", models.PositiveSmallIntegerField(default=0)),
                ("error", models.TextField(blank=True)),
                ("failed_at", models.DateTimeField(blank=True, null=True)),
                (
                    "context",
                    models.ForeignKey(
                        db_constraint=False,
                        db_index=False,
                        on_delete=django.db.models.deletion.DO_NOTHING,
                        related_name="+",
                        to="memory.memorycontext",
                    ),
                ),
            ],
            options={
                "verbose_name": "entry waiting for its index",
                "verbose_name_plural": "entries waiting for their index",
                "indexes": [
                    models.Index(
                        condition=models.Q(("failed_at__isnull", True)),
                        fields=["context", "entry"],
                        name="ltm_pending_index_todo",
                    )
                ],
            },
        ),
        migrations.RunSQL(
            "ALTER TABLE memory_pendingindex ADD CONSTRAINT memory_pendingindex_entry_fk "
            "FOREIGN KEY (entry_id) REFERENCES memory_memoryentry (id) ON DELETE CASCADE "
            "DEFERRABLE INITIALLY DEFERRED; "
            "ALTER TABLE memory_pendingindex ADD CONSTRAINT memory_pendingindex_context_fk "
            "FOREIGN KEY (context_id) REFERENCES memory_memorycontext (id) ON DELETE CASCADE "
            "DEFERRABLE INITIALLY DEFERRED",
            reverse_sql="ALTER TABLE memory_pendingindex DROP CONSTRAINT memory_pendingindex_entry_fk; "
            "ALTER TABLE memory_pendingindex DROP CONSTRAINT memory_pendingindex_context_fk",
        ),
    ]
