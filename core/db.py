"""Database helpers shared by the apps' migrations and queries."""

from __future__ import annotations

import re
from typing import Any

from django.db import migrations
from django.db.models import QuerySet


class DatabaseOnDelete(migrations.operations.base.Operation):
    """Make a foreign key cascade (or set null) in PostgreSQL itself.

    For derived rows that exist in bulk (chunks, postings), Django's delete collector would load
    every row into memory; the model field says ``DO_NOTHING`` and the database does the work.
    """

    reduces_to_sql = True
    reversible = True

    def __init__(self, table: str, column: str, action: str) -> None:
        if action not in {"CASCADE", "SET NULL"}:
            raise ValueError("action must be CASCADE or SET NULL")
        self.table, self.column, self.action = table, column, action

    def state_forwards(self, app_label: str, state: Any) -> None:
        pass

    def _sql(self, action: str) -> str:
        # Table and column names come from migration code, never from input.
        return f"""
DO $$
DECLARE r record;
BEGIN
  FOR r IN
    SELECT con.conname, pg_get_constraintdef(con.oid) AS def
    FROM pg_constraint con
    JOIN pg_attribute att ON att.attrelid = con.conrelid AND att.attnum = ANY (con.conkey)
    WHERE con.contype = 'f' AND con.conrelid = '{self.table}'::regclass
      AND att.attname = '{self.column}' AND array_length(con.conkey, 1) = 1
  LOOP
    EXECUTE format('ALTER TABLE {self.table} DROP CONSTRAINT %I', r.conname);
    EXECUTE format(
      'ALTER TABLE {self.table} ADD CONSTRAINT %I %s {action} DEFERRABLE INITIALLY DEFERRED',
      r.conname,
      regexp_replace(r.def, ' (ON DELETE [A-Z ]+|DEFERRABLE.*)$', '')
    );
  END LOOP;
END $$;
"""  # noqa: S608

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        schema_editor.execute(self._sql(f"ON DELETE {self.action}"), params=None)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        schema_editor.execute(self._sql(""), params=None)

    def describe(self) -> str:
        return f"ON DELETE {self.action} for {self.table}.{self.column}"


def queryset_sql(queryset: QuerySet[Any], prefix: str) -> tuple[str, dict[str, Any]]:
    """A queryset as SQL with named parameters (``%(<prefix>_<n>)s``), to embed as a subquery
    in raw SQL that binds by name (the search engine's filters): access rules written once as
    querysets stay the one definition. Django's compiled SQL escapes a literal ``%`` as ``%%``,
    so every ``%s`` it holds is a placeholder."""
    sql, params = queryset.query.get_compiler(using=queryset.db).as_sql()
    names = iter(range(len(params)))
    named = re.sub(r"(?<!%)%s", lambda _: f"%({prefix}_{next(names)})s", sql)
    return named, {f"{prefix}_{n}": value for n, value in enumerate(params)}
