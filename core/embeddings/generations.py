"""Embedding-model migration with no downtime and a rollback: index generations.

A *generation* (``core.models.EmbeddingGeneration``) is one model's vectors across every
embedded table (chunks, long-term entries, knowledge items, graph nodes, pages, articles and
skills; each app registers its tables with ``register``). Every embedded table has two vector
columns (``core.embeddings.schema``): ``embedding`` holds the *current* generation, the one
searches read; ``embedding_next`` holds the other one, each with its own type and HNSW index.

- ``generation_start``: the model configured as ``EMBEDDING_NEXT_*`` becomes the *next*
  generation; its column is retyped (``vector(n)``, any width) and a Celery job
  (``generation_build``) embeds every unit that has a current vector, in batches, writing its
  position per table after each, so that a stopped job resumes where it was.
- While it runs, searches keep reading the current generation, and every write embeds its units
  for the other generation too (``written``, which the writers call).
- When every unit is embedded, the job builds the next generation's HNSW indexes and, unless the
  generation was started with ``auto_cutover=False``, cuts over.
- ``generation_cutover`` swaps the two columns' names in one transaction (metadata only, for
  every table at once): the next generation becomes current and the old one *previous*, still
  kept up to date by the writes. Queries embed with the model of the current generation
  (``query_provider``: the next model's settings while they name it).
- ``generation_rollback`` swaps back, in one action, until ``generation_drop`` drops the
  previous generation (its column emptied and its indexes dropped) by hand.

Guarantees and limits are in docs/portability.md, "Changing the embedding model".
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from core.embeddings import schema
from core.embeddings.base import EmbeddingError, EmbeddingProvider, vector_literal
from core.errors import Conflict, NotFound, ProviderUnavailable
from core.models import EmbeddingGeneration

logger = logging.getLogger("engram.embeddings")

Generation = EmbeddingGeneration
Role = EmbeddingGeneration.Role
Status = EmbeddingGeneration.Status

#: Units embedded per provider call and per progress write.
BATCH = 256
#: How long a cut-over, a rollback or a start waits for the tables' locks before giving up
#: (409 ``generation_busy``; nothing changed).
LOCK_TIMEOUT = "10s"
#: How long a process trusts what it read of the generations (``state``).
STATE_TTL_SECONDS = 1.0
#: Sweeps for units written while a build ran, before the job gives up finishing them.
SWEEPS = 5


# --- embedded tables -------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddedTable:
    """One table of units with vectors. ``texts`` gives the text each unit is embedded as
    (the same text its writers embed), for the ids given, leaving out ids that are gone.
    ``index_where``: the condition of its HNSW index (the searchable rows); ``indexed=False``:
    a table searched by exact comparison only, which has no HNSW index."""

    name: str
    table: str
    label: str
    texts: Callable[[Sequence[int]], dict[int, str]]
    index_where: str = ""
    indexed: bool = True
    # Its rows carry ``account_id`` (articles are the installation's).
    account_owned: bool = True


_TABLES: dict[str, EmbeddedTable] = {}


def register(table: EmbeddedTable) -> None:
    """Declare an embedded table (an app's ``ready``). Registering a name again replaces it."""
    _TABLES[table.name] = table


def embedded_tables() -> list[EmbeddedTable]:
    return [_TABLES[name] for name in sorted(_TABLES)]


def embedded_table(name: str) -> EmbeddedTable:
    return _TABLES[name]


# --- which model each generation is ---------------------------------------------------------


def next_provider() -> EmbeddingProvider | None:
    """The provider ``EMBEDDING_NEXT_*`` configures, or None when no next model is configured."""
    from core import embeddings

    return embeddings.next_embedding_provider()


def settings_provider() -> EmbeddingProvider:
    from core import embeddings

    return embeddings.settings_embedding_provider()


def _next_fields() -> dict[str, Any]:
    provider = settings.EMBEDDING_NEXT_PROVIDER or "openai"
    model = settings.EMBEDDING_NEXT_MODEL or ("all-MiniLM-L6-v2" if provider == "local" else "")
    return {
        "provider": provider,
        "model": model,
        "base_url": (settings.EMBEDDING_NEXT_BASE_URL or "") if provider == "openai" else "",
    }


def provider_for(model_id: str) -> EmbeddingProvider | None:
    """The configured provider that writes ``model_id``'s vectors: the current settings'
    (``EMBEDDING_*``) or the next model's (``EMBEDDING_NEXT_*``); None when neither does."""
    configured = settings_provider()
    if configured.model_id == model_id:
        return configured
    following = next_provider()
    if following is not None and following.model_id == model_id:
        return following
    return None


@dataclass(frozen=True)
class State:
    """What a process knows of the generations, read at most every ``STATE_TTL_SECONDS``."""

    current: str | None  # model id
    current_dimensions: int | None
    other: str | None  # model id of the next or previous generation
    other_id: int | None
    other_role: str | None


_state_lock = threading.Lock()
_state: tuple[float, int, State] | None = None  # (read at, pid, state)


def state(*, fresh: bool = False) -> State:
    """The generations' model ids, as this process last read them (``fresh``: read now)."""
    global _state
    now = time.monotonic()
    with _state_lock:
        if (
            not fresh
            and _state is not None
            and _state[1] == os.getpid()
            and now - _state[0] < STATE_TTL_SECONDS
        ):
            return _state[2]
    rows = list(
        Generation.objects.exclude(role=Role.DROPPED).values_list(
            "role", "model_id", "dimensions", "pk"
        )
    )
    current = next(((m, d) for r, m, d, _ in rows if r == Role.CURRENT), (None, None))
    other = next(((r, m, pk) for r, m, _, pk in rows if r != Role.CURRENT), (None, None, None))
    read = State(
        current=current[0],
        current_dimensions=current[1],
        other=other[1],
        other_id=other[2],
        other_role=other[0],
    )
    with _state_lock:
        _state = (now, os.getpid(), read)
    return read


def forget_state() -> None:
    """Make the next ``state()`` read the database (after a change, and in tests)."""
    global _state
    with _state_lock:
        _state = None


def query_provider(configured: EmbeddingProvider) -> EmbeddingProvider:
    """The provider that embeds queries (``core.embeddings.get_embedding_provider``): the next
    model's while the current generation is the next model's (after a cut-over, until the
    settings are moved), else the configured one. Reads nothing while no next model is
    configured."""
    following = next_provider()
    if following is None:
        return configured
    if state().current == following.model_id:
        return following
    return configured


class GenerationMoved(Exception):
    """The current generation changed between embedding a query and searching with it: the
    caller embeds the query again (``query_provider``) and retries."""


def cutover_possible() -> bool:
    """Whether a cut-over may rename the vector columns under a query: a next model is
    configured and the recorded current generation is a configured model's (not a record the
    settings have left behind)."""
    if next_provider() is None:
        return False
    current = state().current
    return current is not None and provider_for(current) is not None


def check_query_model(current_model_id: str | None, query_model_id: str) -> None:
    """Raise ``GenerationMoved`` when the database's current generation (read in the query's
    own transaction) is another configured model than the query's."""
    if current_model_id is None or current_model_id == query_model_id:
        return
    if next_provider() is None or provider_for(current_model_id) is None:
        return  # a stale record, not a cut-over
    forget_state()
    raise GenerationMoved(current_model_id)


# --- writes: both generations ---------------------------------------------------------------


def written(name: str, ids: Sequence[int]) -> None:
    """Writers call this when they write the current vectors of units of table ``name``, in the
    write's transaction: while another generation exists (a build, or a previous generation
    kept for a rollback), the units' other vectors are marked stale at once (atomically with
    the write) and embedded again once the transaction commits. A provider that is down leaves
    them to the sweeps (the build's, and the catch-up before a cut-over or a rollback), and
    ``generation_status`` counts them as missing meanwhile."""
    if not ids:
        return
    other = state()
    if other.other is None:
        return
    ids = list(ids)
    table = embedded_table(name)
    with connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {table.table} SET embedding_next_model = '' WHERE id = ANY(%s)",  # noqa: S608
            [ids],
        )
    transaction.on_commit(lambda: _embed_other(name, ids, other.other or ""))


def _embed_other(name: str, ids: list[int], model_id: str) -> None:
    provider = provider_for(model_id)
    if provider is None:
        return
    try:
        embed_units(embedded_table(name), ids, provider, column="embedding_next")
    except (EmbeddingError, ProviderUnavailable) as exc:
        logger.warning("embedding %s units for %s failed: %s", name, model_id, exc)


def embed_units(
    table: EmbeddedTable, ids: Sequence[int], provider: EmbeddingProvider, *, column: str
) -> int:
    """Embed the given units of ``table`` with ``provider`` into ``column`` ("embedding" or
    "embedding_next") and its model column; units gone, without a current vector, or already
    embedded by this model are left alone. A unit written meanwhile (its row version changed
    since its text was read) is left alone too: the write has marked it, and a sweep embeds
    its new text. Returns how many were written."""
    model_column = f"{column}_model"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id, xmin::text FROM {table.table} WHERE id = ANY(%s) "  # noqa: S608
            f"AND embedding IS NOT NULL AND {model_column} <> %s",
            [list(ids), provider.model_id],
        )
        versions = dict(cursor.fetchall())
    if not versions:
        return 0
    texts = table.texts(list(versions))
    order = [unit for unit in versions if unit in texts]
    if not order:
        return 0
    vectors = provider.embed_documents([texts[unit] for unit in order])
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {table.table} AS t SET {column} = v.vector::vector, {model_column} = %s
            FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS v(id, version, vector)
            WHERE t.id = v.id AND t.xmin::text = v.version
            """,  # noqa: S608 - names are code
            [
                provider.model_id,
                order,
                [versions[unit] for unit in order],
                [vector_literal(vector) for vector in vectors],
            ],
        )
        return int(cursor.rowcount)


def current_index(table: str) -> str:
    """The name of ``table``'s HNSW index of the current generation."""
    current = Generation.objects.filter(role=Role.CURRENT).values_list("pk", flat=True).first()
    return schema.index_name(table, current or 1)


# --- status ----------------------------------------------------------------------------------


def _count(
    table: EmbeddedTable, current: str, other: str, account_id: int | None
) -> tuple[int, int, int]:
    """(units with a current vector, those embedded by ``current``, those whose other vector is
    ``other``'s), of one account's units when ``account_id`` is given."""
    mine = " AND account_id = %s" if account_id is not None else ""
    sql = (
        "SELECT count(*), count(*) FILTER (WHERE embedding_model = %s), "  # noqa: S608 - names are code
        "count(*) FILTER (WHERE embedding_next_model = %s) "
        f"FROM {table.table} WHERE embedding IS NOT NULL{mine}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [current, other, *([account_id] if account_id is not None else [])])
        total, on_current, on_other = cursor.fetchone()
    return int(total), int(on_current), int(on_other)


def _describe(generation: Generation | None) -> dict[str, Any] | None:
    if generation is None:
        return None
    return {
        "id": generation.pk,
        "role": generation.role,
        "status": generation.status,
        "provider": generation.provider,
        "model": generation.model,
        "model_id": generation.model_id,
        "dimensions": generation.dimensions,
        "auto_cutover": generation.auto_cutover,
        "configured": provider_for(generation.model_id) is not None,
        "error_code": generation.error_code,
        "error": generation.error,
        "created_at": generation.created_at,
        "built_at": generation.built_at,
        "cutover_at": generation.cutover_at,
    }


def generation_status(*, account_id: int | None = None) -> dict[str, Any]:
    """The generations and, per embedded table, how many units carry a vector of each: what a
    rollback or a cut-over would serve, and whatever still carries another model's vectors
    (``stale``). With ``account_id`` (the API), the counts are that account's units only
    (articles, the installation's, are left out); the generations are the installation's."""
    rows = {g.role: g for g in Generation.objects.exclude(role=Role.DROPPED)}
    if Role.CURRENT not in rows:
        try:
            with transaction.atomic():
                rows[Role.CURRENT] = _adopt_current()
        except IntegrityError:  # adopted meanwhile
            rows[Role.CURRENT] = Generation.objects.get(role=Role.CURRENT)
    current, other = rows[Role.CURRENT], rows.get(Role.NEXT) or rows.get(Role.PREVIOUS)
    spaces = []
    done_all = total_all = 0
    for table in embedded_tables():
        if account_id is not None and not table.account_owned:
            continue
        total, on_current, on_other = _count(
            table, current.model_id, other.model_id if other else "", account_id
        )
        entry: dict[str, Any] = {
            "space": table.name,
            "description": table.label,
            "units": total,
            "current": on_current,
            "stale": total - on_current,
        }
        if other is not None:
            entry["other"] = on_other
            entry["missing"] = total - on_other
            done_all += on_other
            total_all += total
        spaces.append(entry)
    progress = 1.0 if other is None or total_all == 0 else done_all / total_all
    return {
        "current": _describe(current),
        "next": _describe(rows.get(Role.NEXT)),
        "previous": _describe(rows.get(Role.PREVIOUS)),
        "next_configured": _next_configured(),
        "progress": round(progress, 4),
        "spaces": spaces,
    }


def _next_configured() -> dict[str, Any] | None:
    following = next_provider()
    if following is None:
        return None
    return {**_next_fields(), "model_id": following.model_id, "dimensions": following.dimensions}


# --- start, build ----------------------------------------------------------------------------


def _locked_generations() -> dict[str, Generation]:
    return {
        g.role: g
        for g in Generation.objects.select_for_update().exclude(role=Role.DROPPED).order_by("pk")
    }


def _ddl(statements: Sequence[str]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
        for statement in statements:
            cursor.execute(statement)


def _busy(exc: Exception) -> Conflict:
    return Conflict(
        "The embedded tables are busy (a long query or write holds them); nothing changed. "
        "Try again.",
        code="generation_busy",
        details={"reason": str(exc).splitlines()[0] if str(exc) else ""},
    )


def _lock_failed(exc: Exception) -> bool:
    return getattr(getattr(exc, "__cause__", None), "sqlstate", "") == "55P03"


def _configured_fields() -> dict[str, Any]:
    """The generation fields of the model ``EMBEDDING_*`` configures."""
    configured = settings_provider()
    provider = settings.EMBEDDING_PROVIDER
    return {
        "provider": provider,
        "model": configured.model_id.split(":", 1)[-1],
        "base_url": (settings.EMBEDDING_BASE_URL or "") if provider == "openai" else "",
        "dimensions": configured.dimensions,
        "model_id": configured.model_id,
    }


def _adopt_current() -> Generation:
    """A database with no generation recorded (restored from elsewhere): the vectors in
    ``embedding`` are taken as the configured model's."""
    return Generation.objects.create(role=Role.CURRENT, status=Status.READY, **_configured_fields())


def _sync_current(current: Generation) -> None:
    """The current generation describes the configured model (``EMBEDDING_*``) unless it is
    the next model's (a cut-over the settings have not caught up with)."""
    fields = _configured_fields()
    following = next_provider()
    if current.model_id == fields["model_id"] or (
        following is not None and current.model_id == following.model_id
    ):
        return
    for name, value in fields.items():
        setattr(current, name, value)
    current.save(update_fields=list(fields))


def generation_start(*, auto_cutover: bool = True, enqueue: bool = True) -> Generation:
    """Start building the next generation with the model ``EMBEDDING_NEXT_*`` configures, or
    resume a build of that model that stopped (failed, or its worker died). 409s:
    ``next_model_not_configured``, ``next_model_is_current``, ``previous_generation_kept``
    (drop it first), ``migration_in_progress`` (a build of another model), ``generation_busy``.
    ``enqueue=False``: no job is sent; the caller runs ``generation_build`` itself."""
    following = next_provider()
    if following is None:
        raise Conflict(
            "No next embedding model is configured: set EMBEDDING_NEXT_PROVIDER, "
            "EMBEDDING_NEXT_MODEL and the others, then restart.",
            code="next_model_not_configured",
        )
    if not following.dimensions:
        try:  # EMBEDDING_NEXT_DIMENSIONS unset: the model's width, from one answer
            following.embed_query("Engram embedding migration: the model's width")
        except EmbeddingError as exc:
            raise ProviderUnavailable(
                f"The next embedding model did not answer: {exc}", code="provider_unavailable"
            ) from exc
    with _generations_changed() as rows:
        current = rows.get(Role.CURRENT) or _adopt_current()
        _sync_current(current)
        if following.model_id == current.model_id:
            raise Conflict(
                f"The next model ({following.model_id}) is the current generation's.",
                code="next_model_is_current",
            )
        building = rows.get(Role.NEXT)
        if building is not None:
            if building.model_id != following.model_id:
                raise Conflict(
                    f"A migration to {building.model_id} is in progress: drop it first.",
                    code="migration_in_progress",
                    details={"generation": building.pk},
                )
            if building.status != Status.READY:
                building.status, building.error, building.error_code = Status.BUILDING, "", ""
                building.auto_cutover = auto_cutover
                building.save(update_fields=["status", "error", "error_code", "auto_cutover"])
                if enqueue:
                    _send_build(building)
            return building
        if Role.PREVIOUS in rows:
            previous = rows[Role.PREVIOUS]
            raise Conflict(
                f"The previous generation ({previous.model_id}) is kept for a rollback: "
                "drop it first (embeddings drop).",
                code="previous_generation_kept",
                details={"generation": previous.pk},
            )
        fields = _next_fields()
        generation = Generation.objects.create(
            role=Role.NEXT,
            status=Status.BUILDING,
            dimensions=following.dimensions,
            model_id=following.model_id,
            auto_cutover=auto_cutover,
            **fields,
        )
        _ddl(_reset_other_columns(following.dimensions))
        if enqueue:
            _send_build(generation)
    return generation


def _reset_other_columns(dimensions: int | None) -> list[str]:
    """Empty the other generation's columns (metadata only: the dropped column's data goes with
    the rows' next rewrite), typed for ``dimensions`` (None: untyped, nothing held)."""
    kind = f"vector({dimensions})" if dimensions else "vector"
    return [
        f"ALTER TABLE {table.table} DROP COLUMN embedding_next, "
        f"DROP COLUMN embedding_next_model, ADD COLUMN embedding_next {kind}, "
        "ADD COLUMN embedding_next_model varchar(200) NOT NULL DEFAULT ''"
        for table in embedded_tables()
    ]


def _send_build(generation: Generation) -> None:
    from core.queue import task_send_on_commit
    from core.tasks import embedding_generation_build

    task_send_on_commit(embedding_generation_build, generation.pk)


def _alive(generation_id: int) -> Generation | None:
    return Generation.objects.filter(
        pk=generation_id, role=Role.NEXT, status=Status.BUILDING
    ).first()


def generation_build(generation_id: int) -> str:
    """The build job: embed every unit with a current vector into the next generation's
    column, table by table in id order, recording the position after each batch (a rerun
    resumes there); sweep what writes left missing; build the HNSW indexes; cut over when
    the generation asks for it. Returns "built", "cut over", "gone" (dropped or already built)
    or "failed"."""
    generation = _alive(generation_id)
    if generation is None:
        return "gone"
    provider = provider_for(generation.model_id)
    if provider is None or provider.dimensions != generation.dimensions:
        _fail(generation, "next_model_not_configured", "The next model is no longer configured.")
        return "failed"
    try:
        for table in embedded_tables():
            if not _embed_table(generation, table, provider):
                return "gone"
        for _ in range(SWEEPS):
            if not sweep(generation, provider):
                break
        for table in embedded_tables():
            _build_index(generation, table)
    except (EmbeddingError, ProviderUnavailable) as exc:
        _fail(generation, "provider_unavailable", str(exc))
        return "failed"
    built = Generation.objects.filter(pk=generation.pk, role=Role.NEXT).update(
        status=Status.READY, built_at=timezone.now()
    )
    if not built:
        return "gone"
    generation.refresh_from_db()
    if generation.auto_cutover:
        generation_cutover()
        return "cut over"
    return "built"


def _fail(generation: Generation, code: str, message: str) -> None:
    logger.warning("embedding generation %s failed: %s", generation.pk, message)
    Generation.objects.filter(pk=generation.pk, role=Role.NEXT).update(
        status=Status.FAILED, error_code=code, error=message[:2000]
    )


def _embed_table(generation: Generation, table: EmbeddedTable, provider: EmbeddingProvider) -> bool:
    position = dict(generation.progress.get(table.name) or {})
    if position.get("finished"):
        return True
    after = int(position.get("after", 0))
    done = int(position.get("done", 0))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {table.table} WHERE embedding IS NOT NULL")  # noqa: S608
        total = int(cursor.fetchone()[0])
    while True:
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT id FROM {table.table} WHERE id > %s AND embedding IS NOT NULL "  # noqa: S608
                "ORDER BY id LIMIT %s",
                [after, BATCH],
            )
            ids = [row[0] for row in cursor.fetchall()]
        if not ids:
            break
        embed_units(table, ids, provider, column="embedding_next")
        after, done = ids[-1], done + len(ids)
        position = {"after": after, "done": min(done, total), "total": total}
        if not _record(generation, table, position):
            return False
    return _record(
        generation, table, {"after": after, "done": total, "total": total, "finished": True}
    )


def _record(generation: Generation, table: EmbeddedTable, position: dict[str, Any]) -> bool:
    """Write the build's position in ``table``; False when the generation was dropped or
    stopped meanwhile (the job ends)."""
    generation.progress = {**generation.progress, table.name: position}
    return bool(
        Generation.objects.filter(pk=generation.pk, role=Role.NEXT, status=Status.BUILDING).update(
            progress=generation.progress
        )
    )


def sweep(
    generation: Generation, provider: EmbeddingProvider, *, column: str = "embedding_next"
) -> int:
    """Embed the units whose vector in ``column`` is not ``generation``'s model's yet (written
    before the build reached them, or when the provider failed). Returns how many."""
    model_column = f"{column}_model"
    written_now = 0
    for table in embedded_tables():
        after = 0
        while True:
            with connection.cursor() as cursor:
                cursor.execute(
                    f"SELECT id FROM {table.table} WHERE id > %s AND embedding IS NOT NULL "  # noqa: S608
                    f"AND {model_column} <> %s ORDER BY id LIMIT %s",
                    [after, generation.model_id, BATCH],
                )
                ids = [row[0] for row in cursor.fetchall()]
            if not ids:
                break
            written_now += embed_units(table, ids, provider, column=column)
            after = ids[-1]  # units gone meanwhile are left to the next sweep
    return written_now


def index_sql(table: EmbeddedTable, name: str, column: str, *, concurrently: bool = True) -> str:
    """The statement that builds an HNSW index of ``table``'s ``column`` (cosine distance, the
    opclass every vector query uses), over its searchable rows."""
    where = f" WHERE {table.index_where}" if table.index_where else ""
    how = "CONCURRENTLY " if concurrently else ""
    return (
        f"CREATE INDEX {how}{name} ON {table.table} USING hnsw "
        f"({column} vector_cosine_ops) WITH (m = {schema.HNSW_M}, "
        f"ef_construction = {schema.HNSW_EF_CONSTRUCTION}){where}"
    )


def _build_index(generation: Generation, table: EmbeddedTable) -> None:
    if not table.indexed:
        return
    name = schema.index_name(table.table, generation.pk)
    with connection.cursor() as cursor:
        # An index a stopped build left invalid is built again.
        cursor.execute(
            "SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s",
            [name],
        )
        found = cursor.fetchone()
        if found is not None and found[0]:
            return
        if found is not None:
            cursor.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")
        # The graph is built in memory when it fits (far faster than on disk).
        cursor.execute("SET maintenance_work_mem = %s", [schema.INDEX_BUILD_MEMORY])
        try:
            cursor.execute(index_sql(table, name, "embedding_next"))
        finally:
            cursor.execute("RESET maintenance_work_mem")


# --- cut-over, rollback, drop ---------------------------------------------------------------


def _swap_columns() -> list[str]:
    statements = []
    for table in embedded_tables():
        t = table.table
        statements += [
            f"ALTER TABLE {t} RENAME COLUMN embedding TO embedding_swap",
            f"ALTER TABLE {t} RENAME COLUMN embedding_next TO embedding",
            f"ALTER TABLE {t} RENAME COLUMN embedding_swap TO embedding_next",
            f"ALTER TABLE {t} RENAME COLUMN embedding_model TO embedding_model_swap",
            f"ALTER TABLE {t} RENAME COLUMN embedding_next_model TO embedding_model",
            f"ALTER TABLE {t} RENAME COLUMN embedding_model_swap TO embedding_next_model",
            f"ALTER TABLE {t} ALTER COLUMN embedding_model SET DEFAULT ''",
            f"ALTER TABLE {t} ALTER COLUMN embedding_next_model SET DEFAULT ''",
        ]
    return statements


def _swap(becoming: Generation, leaving: Generation, *, becoming_role: str) -> None:
    """In the caller's transaction: the two columns change places and roles follow."""
    _ddl(_swap_columns())
    now = timezone.now()
    Generation.objects.filter(pk=leaving.pk).update(role=Role.DROPPED)  # frees its role
    Generation.objects.filter(pk=becoming.pk).update(
        role=Role.CURRENT, status=Status.READY, cutover_at=now
    )
    Generation.objects.filter(pk=leaving.pk).update(role=becoming_role, status=Status.READY)


def _catch_up(generation: Generation) -> None:
    """Before a swap, outside its transaction: embed what the incoming generation misses."""
    provider = provider_for(generation.model_id)
    if provider is not None:
        sweep(generation, provider)


@contextmanager
def _generations_changed() -> Iterator[dict[str, Generation]]:
    """The generations' rows, locked in a transaction whose DDL waits at most ``LOCK_TIMEOUT``
    for the embedded tables (else 409 ``generation_busy``, nothing changed). After it commits,
    this process reads the generations afresh; other processes within ``STATE_TTL_SECONDS``."""
    try:
        with transaction.atomic():
            yield _locked_generations()
    except Exception as exc:
        if _lock_failed(exc):
            raise _busy(exc) from exc
        raise
    forget_state()


def _swap_to(role: str, missing: Callable[[], Conflict]) -> Generation:
    """The generation of ``role`` (next, built; or previous) becomes current, the current one
    previous: every embedded table's two columns swap names, in one transaction. What it
    misses is embedded first, outside the transaction (``_catch_up``)."""
    incoming = Generation.objects.filter(role=role, status=Status.READY).first()
    if incoming is None:
        raise missing()
    _catch_up(incoming)
    with _generations_changed() as rows:
        incoming = rows.get(role)
        if incoming is None or incoming.status != Status.READY:
            raise missing()
        _swap(incoming, rows[Role.CURRENT], becoming_role=Role.PREVIOUS)
    logger.info("embedding generation %s (%s) is current", incoming.pk, incoming.model_id)
    return Generation.objects.get(pk=incoming.pk)


def generation_cutover() -> Generation:
    """Make the next generation (built) the current one; the current one becomes previous,
    kept for a rollback. 409 ``no_generation_to_cut_over`` (none built),
    ``generation_not_ready`` (still building) or ``generation_busy``."""
    following = Generation.objects.filter(role=Role.NEXT).first()
    if following is not None and following.status != Status.READY:
        raise Conflict(
            f"The next generation is {following.status}, not ready.",
            code="generation_not_ready",
            details={"generation": following.pk, "status": following.status},
        )
    return _swap_to(
        Role.NEXT,
        lambda: Conflict("No next generation to cut over to.", code="no_generation_to_cut_over"),
    )


def generation_rollback() -> Generation:
    """Make the previous generation current again, in one action: the generation that was
    current becomes previous, kept in turn (a cut-over of that one undoes the rollback... by
    another rollback). 409 ``no_previous_generation`` or ``generation_busy``."""
    return _swap_to(
        Role.PREVIOUS,
        lambda: Conflict(
            "No previous generation is kept: it was dropped, or no cut-over happened.",
            code="no_previous_generation",
        ),
    )


def generation_drop() -> Generation:
    """Drop the other generation: the previous one (no rollback after this), or a next one
    still building or failed (the migration abandoned). Its column is emptied and its indexes
    dropped. 404 ``no_generation_to_drop``; 409 ``generation_busy``."""
    with _generations_changed() as rows:
        other = rows.get(Role.PREVIOUS) or rows.get(Role.NEXT)
        if other is None:
            raise NotFound("No previous or next generation to drop.", code="no_generation_to_drop")
        Generation.objects.filter(pk=other.pk).update(role=Role.DROPPED, dropped_at=timezone.now())
        _ddl(_reset_other_columns(None))  # drops the column's indexes with it
    return Generation.objects.get(pk=other.pk)
