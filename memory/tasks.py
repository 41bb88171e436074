"""The memory tiers' Celery tasks and periodic jobs (``core.jobs.periodic_job``: each job
declared once, on its body, under the task names beat rows carry, ``memory.tasks.<function>``).
The clean-up jobs delete what has expired already (and is invisible to every read since it
expired), so a run can stop or repeat at any point: idempotent by construction."""

from __future__ import annotations

from core.embeddings.base import EmbeddingError
from core.jobs import periodic_job
from core.llm import LLMError
from core.models import JobRun
from core.queue import INGESTION, INTERACTIVE, MAINTENANCE, queued_task, task_send
from memory.conversations import services as conversations
from memory.conversations.extraction import services as extractions
from memory.long_term.services import access, graph_links, pending, readings
from memory.maintenance.services import changes, consolidation
from memory.maintenance.services import cluster_maintenance as maintenance_services
from memory.maintenance.services import jobs as maintenance_jobs
from memory.pools import services as pool_services
from memory.short_term import services as short_term_services


@periodic_job(
    description="Delete expired short-term memory entries.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=600,
    soft_time_limit=540,
)
def prune_short_term(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return short_term_services.short_term_prune_expired(dry_run=dry_run)


@periodic_job(
    description="Delete expired memory pools (with their grants and events) and pool "
    "bulletin events older than POOL_EVENT_RETENTION_DAYS.",
    every_seconds=900,
    expires_seconds=840,
    time_limit=900,
    soft_time_limit=840,
)
def prune_pools(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return pool_services.pools_prune_expired(dry_run=dry_run)


# --- consolidation (seed 000's schedule: decay 3:45, consolidation and rot 4:00, daily UTC) -----


@periodic_job(
    description="Promote short-term entries read MEMORY_PROMOTION_MIN_ACCESSES times to "
    "long-term memory, delete expired short-term entries, merge near-duplicate long-term "
    "entries (MEMORY_DEDUP_SIMILARITY).",
    crontab="0 4 * * *",
    expires_seconds=3 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def consolidate(_run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return consolidation.consolidate_all(
        jobs=(consolidation.PROMOTE, consolidation.PRUNE, consolidation.DEDUP),
        dry_run=dry_run,
    )


@periodic_job(
    description="Archive long-term entries whose staleness reaches MEMORY_ROT_STALENESS.",
    crontab="0 4 * * *",
    expires_seconds=3 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def rot(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return consolidation.consolidate_all(jobs=(consolidation.ROT,), dry_run=dry_run)


@periodic_job(
    description="Decay the importance of unused long-term entries "
    "(MEMORY_IMPORTANCE_HALF_LIFE_DAYS).",
    crontab="45 3 * * *",
    expires_seconds=3 * 3600,
    time_limit=3600,
    soft_time_limit=3300,
)
def importance_decay(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return consolidation.consolidation_decay(dry_run=dry_run)


# --- cluster maintenance (seed 004: every 30 minutes, short-circuited most of the time) --------


@queued_task(
    queue=MAINTENANCE,
    bind=True,
    time_limit=maintenance_jobs.TIME_LIMIT,
    soft_time_limit=maintenance_jobs.SOFT_TIME_LIMIT,
    acks_late=True,
    max_retries=maintenance_jobs.MAX_RETRIES,
)
def maintenance_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """Cluster maintenance asked for through the API, MCP or the admin
    (``memory.maintenance.services.jobs``): claimed by compare-and-set, so a message delivered
    twice runs it once; back in the queue, with backoff, while a provider or store is down."""
    outcome = maintenance_jobs.maintenance_job_run(
        job_id=job_id,
        claim=self.request.id or f"local-{job_id}",
        # Run eagerly (CELERY_TASK_ALWAYS_EAGER) there is no queue to go back to.
        retries_left=not self.request.is_eager
        and self.request.retries < maintenance_jobs.MAX_RETRIES,
    )
    if outcome == "retry":
        raise self.retry(countdown=60 * 2**self.request.retries)
    return outcome


@periodic_job(
    description="Re-send maintenance jobs still queued after 10 minutes (the broker was "
    "down when they were asked for); fail those a lost worker left running past their "
    "time limit.",
    every_seconds=600,
    expires_seconds=540,
    time_limit=300,
    soft_time_limit=240,
)
def recover_maintenance_jobs(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return maintenance_jobs.maintenance_jobs_recover(dry_run=dry_run)


@periodic_job(
    description="Mark pending memory changes older than MEMORY_PENDING_CHANGE_TTL_DAYS "
    "expired (never applied).",
    every_seconds=3600,
    expires_seconds=3000,
    time_limit=600,
    soft_time_limit=540,
)
def expire_pending_changes(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return changes.pending_changes_expire(dry_run=dry_run)


@periodic_job(
    description="Cluster each account's long-term memories (UMAP + HDBSCAN) and rewrite "
    "each group of near-duplicates into one; skipped when a report exists for today or "
    "fewer than MEMORY_MAINTENANCE_MIN_NEW_MEMORIES memories were written since the last.",
    every_seconds=1800,
    expires_seconds=1500,
    time_limit=3 * 3600,
    soft_time_limit=3 * 3600 - 300,
)
def cluster_maintenance(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return maintenance_services.maintenance_run_all(dry_run=dry_run)


# --- conversations ---------------------------------------------------------------------------


@queued_task(
    queue=INTERACTIVE,
    time_limit=600,
    soft_time_limit=540,
    acks_late=True,
    autoretry_for=(EmbeddingError, LLMError),
    retry_backoff=True,
    max_retries=5,
)
def conversation_follow_up(conversation_id: int) -> dict[str, int]:
    """After a batch of messages commits: the rolling summary, when one is due, and the
    extraction of the new messages (claimed by compare-and-set: a repeated run extracts
    nothing)."""
    return conversations.conversation_follow_up_run(conversation_id=conversation_id)


@periodic_job(
    description="Write the rolling summaries that are due (summary_every messages after "
    "the last summary) and that an append could not queue (broker down).",
    every_seconds=900,
    expires_seconds=840,
    time_limit=3600,
    soft_time_limit=3300,
)
def summarize_conversations(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return conversations.summaries_due_run(dry_run=dry_run)


@periodic_job(
    description="Extract knowledge from the conversation messages not extracted yet "
    "(after Conversation.extracted_through) that an append could not queue (broker down).",
    every_seconds=900,
    expires_seconds=840,
    time_limit=3600,
    soft_time_limit=3300,
)
def extract_conversations(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    return extractions.extractions_due_run(dry_run=dry_run)


# --- reads and indexes that follow the request (docs/memory/long-term.md, conversations.md) -------


@periodic_job(
    description="Apply the buffered reads of long-term entries (access counts, last access, "
    "the access log); also sent when MEMORY_ACCESS_BUFFER_MAX reads are buffered.",
    every_seconds=access.FLUSH_EVERY_SECONDS,
    # Behind a busy worker's queue a late flush still helps; two in a row are harmless.
    expires_seconds=3 * access.FLUSH_EVERY_SECONDS,
    time_limit=access.FLUSH_TIME_LIMIT_SECONDS,
    soft_time_limit=access.FLUSH_TIME_LIMIT_SECONDS - 20,
)
def flush_accesses(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    if dry_run:
        return {"buffered": access.buffer_length(), "dry_run": 1}
    else:
        return access.access_flush()


@queued_task(
    queue=INTERACTIVE,
    time_limit=pending.TASK_TIME_LIMIT_SECONDS,
    soft_time_limit=pending.TASK_SOFT_TIME_LIMIT_SECONDS,
    acks_late=True,
    autoretry_for=(EmbeddingError,),
    retry_backoff=True,
    max_retries=5,
)
def index_pending(context_id: int) -> dict[str, int]:
    """Index a context's waiting messages (claimed rows: a repeated or concurrent run takes
    only what no live run holds); when the run's budget ends first, another run follows."""
    pending.index_started(context_id)
    counts = pending.pending_index_run(context_id=context_id)
    if counts["more"]:
        task_send(index_pending, context_id)
    return counts


@queued_task(queue=INGESTION, time_limit=600, soft_time_limit=540, acks_late=True)
def link_entries(entry_ids: list[int], context_id: int) -> dict[str, int]:
    """Bring one write's entries' links to the knowledge graph up to date: new entries linked
    (graph search finds them through the entities they name from then on), earlier versions,
    archived and deleted entries unlinked."""
    outcome = graph_links.entries_link(entry_ids=entry_ids, context_id=context_id)
    return {"entries": outcome.units, "nodes_created": outcome.nodes_created}


@queued_task(queue=INGESTION, time_limit=600, soft_time_limit=540, acks_late=True)
def forget_context_links(context_ids: list[int]) -> dict[str, int]:
    """Drop the graph mentions of deleted contexts' entries, refreshing the nodes they named."""
    return {"nodes": graph_links.contexts_unlink(context_ids)}


@periodic_job(
    job="memory.link_pending",
    description="Bring the graph links of the long-term entries whose link task was not sent "
    "(broker down) up to date: linked when live, unlinked when replaced, archived or deleted; "
    "2,000 entries a run.",
    every_seconds=120,
    expires_seconds=110,
    time_limit=600,
    soft_time_limit=540,
)
def link_pending(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    if dry_run:
        return {"left": graph_links.pending_links_count(), "dry_run": 1}
    return graph_links.pending_links_run()


@periodic_job(
    job="memory.index_pending",
    description="Index the conversation messages waiting for their BM25 postings and "
    "embedding whose task was not sent (broker down) or died.",
    every_seconds=60,
    expires_seconds=55,
    time_limit=300,
    soft_time_limit=270,
)
def index_pending_sweep(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    contexts = pending.pending_contexts()
    sent = 0 if dry_run else sum(task_send(index_pending, pk) for pk in contexts)
    return {"contexts": len(contexts), "sent": sent} | ({"dry_run": 1} if dry_run else {})


@periodic_job(
    description="Read, token by token, the long-term entries that have no reading yet "
    "(written before readings existed or while the local model could not run), for graph "
    "search's late interaction; 2,000 a run.",
    every_seconds=300,
    expires_seconds=290,
    time_limit=600,
    soft_time_limit=540,
)
def fill_readings(run: JobRun, dry_run: bool = False) -> dict[str, int]:
    if dry_run:
        return {"left": readings.readings_missing(), "dry_run": 1}
    else:
        return readings.readings_fill()
