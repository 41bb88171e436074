"""The memory tiers' periodic clean-up jobs. Each deletes what has expired already (and is
invisible to every read since it expired), so a run can stop or repeat at any point: idempotent
by construction."""

from __future__ import annotations

from celery import shared_task

from core.embeddings.base import EmbeddingError
from core.jobs import PeriodicJob, job_run
from core.llm import LLMError
from core.queue import task_send
from memory import services
from memory.services import changes, consolidation, conversations, extractions, maintenance_jobs
from memory.services import cluster_maintenance as maintenance_services
from memory.services.long_term import access, pending

PERIODIC_JOBS = [
    PeriodicJob(
        name="memory.prune_short_term",
        task="memory.tasks.prune_short_term",
        description="Delete expired short-term memory entries.",
        every_seconds=600,
        expires_seconds=540,
    ),
    PeriodicJob(
        name="memory.prune_pools",
        task="memory.tasks.prune_pools",
        description="Delete expired memory pools (with their grants and events) and pool "
        "bulletin events older than POOL_EVENT_RETENTION_DAYS.",
        every_seconds=900,
        expires_seconds=840,
    ),
]


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def prune_short_term(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.prune_short_term", task_id=self.request.id or "") as run:
        run.counts = services.short_term_prune_expired(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=900, soft_time_limit=840, acks_late=True)
def prune_pools(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.prune_pools", task_id=self.request.id or "") as run:
        run.counts = services.pools_prune_expired(dry_run=dry_run)
    return run.counts


# --- consolidation (seed 000's schedule: decay 3:45, consolidation and rot 4:00, daily UTC) -----

PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.consolidate",
        task="memory.tasks.consolidate",
        description="Promote short-term entries read MEMORY_PROMOTION_MIN_ACCESSES times to "
        "long-term memory, delete expired short-term entries, merge near-duplicate long-term "
        "entries (MEMORY_DEDUP_SIMILARITY).",
        crontab="0 4 * * *",
        expires_seconds=3 * 3600,
    ),
    PeriodicJob(
        name="memory.rot",
        task="memory.tasks.rot",
        description="Archive long-term entries whose staleness reaches MEMORY_ROT_STALENESS.",
        crontab="0 4 * * *",
        expires_seconds=3 * 3600,
    ),
    PeriodicJob(
        name="memory.importance_decay",
        task="memory.tasks.importance_decay",
        description="Decay the importance of unused long-term entries "
        "(MEMORY_IMPORTANCE_HALF_LIFE_DAYS).",
        crontab="45 3 * * *",
        expires_seconds=3 * 3600,
    ),
]


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def consolidate(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.consolidate", task_id=self.request.id or "") as run:
        run.counts = consolidation.consolidate_all(
            jobs=(consolidation.PROMOTE, consolidation.PRUNE, consolidation.DEDUP),
            dry_run=dry_run,
        )
    return run.counts


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def rot(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.rot", task_id=self.request.id or "") as run:
        run.counts = consolidation.consolidate_all(jobs=(consolidation.ROT,), dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def importance_decay(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.importance_decay", task_id=self.request.id or "") as run:
        run.counts = consolidation.consolidation_decay(dry_run=dry_run)
    return run.counts


# --- review before change ------------------------------------------------------------------

PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.expire_pending_changes",
        task="memory.tasks.expire_pending_changes",
        description="Mark pending memory changes older than MEMORY_PENDING_CHANGE_TTL_DAYS "
        "expired (never applied).",
        every_seconds=3600,
        expires_seconds=3000,
    ),
]


# --- cluster maintenance (seed 004: every 30 minutes, short-circuited most of the time) --------

PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.cluster_maintenance",
        task="memory.tasks.cluster_maintenance",
        description="Cluster each account's long-term memories (UMAP + HDBSCAN) and rewrite "
        "each group of near-duplicates into one; skipped when a report exists for today or "
        "fewer than MEMORY_MAINTENANCE_MIN_NEW_MEMORIES memories were written since the last.",
        every_seconds=1800,
        expires_seconds=1500,
    ),
]


PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.recover_maintenance_jobs",
        task="memory.tasks.recover_maintenance_jobs",
        description="Re-send maintenance jobs still queued after 10 minutes (the broker was "
        "down when they were asked for); fail those a lost worker left running past their "
        "time limit.",
        every_seconds=600,
        expires_seconds=540,
    ),
]


@shared_task(
    bind=True,
    time_limit=maintenance_jobs.TIME_LIMIT,
    soft_time_limit=maintenance_jobs.SOFT_TIME_LIMIT,
    acks_late=True,
    max_retries=maintenance_jobs.MAX_RETRIES,
)
def maintenance_job(self, job_id: int) -> str:  # type: ignore[no-untyped-def]
    """Cluster maintenance asked for through the API, MCP or the admin
    (``memory.services.maintenance_jobs``): claimed by compare-and-set, so a message delivered
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


@shared_task(bind=True, time_limit=300, soft_time_limit=240, acks_late=True)
def recover_maintenance_jobs(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.recover_maintenance_jobs", task_id=self.request.id or "") as run:
        run.counts = maintenance_jobs.maintenance_jobs_recover(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=600, soft_time_limit=540, acks_late=True)
def expire_pending_changes(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.expire_pending_changes", task_id=self.request.id or "") as run:
        run.counts = changes.pending_changes_expire(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=3 * 3600, soft_time_limit=3 * 3600 - 300, acks_late=True)
def cluster_maintenance(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.cluster_maintenance", task_id=self.request.id or "") as run:
        run.counts = maintenance_services.maintenance_run_all(dry_run=dry_run)
    return run.counts


# --- conversations ---------------------------------------------------------------------------

PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.summarize_conversations",
        task="memory.tasks.summarize_conversations",
        description="Write the rolling summaries that are due (summary_every messages after "
        "the last summary) and that an append could not queue (broker down).",
        every_seconds=900,
        expires_seconds=840,
    ),
    PeriodicJob(
        name="memory.extract_conversations",
        task="memory.tasks.extract_conversations",
        description="Extract knowledge from the conversation messages not extracted yet "
        "(after Conversation.extracted_through) that an append could not queue (broker down).",
        every_seconds=900,
        expires_seconds=840,
    ),
]


@shared_task(
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


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def summarize_conversations(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.summarize_conversations", task_id=self.request.id or "") as run:
        run.counts = conversations.summaries_due_run(dry_run=dry_run)
    return run.counts


@shared_task(bind=True, time_limit=3600, soft_time_limit=3300, acks_late=True)
def extract_conversations(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.extract_conversations", task_id=self.request.id or "") as run:
        run.counts = extractions.extractions_due_run(dry_run=dry_run)
    return run.counts


# --- reads and indexes that follow the request (docs/memory.md) ------------------------------

PERIODIC_JOBS += [
    PeriodicJob(
        name="memory.flush_accesses",
        task="memory.tasks.flush_accesses",
        description="Apply the buffered reads of long-term entries (access counts, last access, "
        "the access log); also sent when MEMORY_ACCESS_BUFFER_MAX reads are buffered.",
        every_seconds=access.FLUSH_EVERY_SECONDS,
        # Behind a busy worker's queue a late flush still helps; two in a row are harmless.
        expires_seconds=3 * access.FLUSH_EVERY_SECONDS,
    ),
    PeriodicJob(
        name="memory.index_pending",
        task="memory.tasks.index_pending_sweep",
        description="Index the conversation messages waiting for their BM25 postings and "
        "embedding whose task was not sent (broker down) or died.",
        every_seconds=60,
        expires_seconds=55,
    ),
]


@shared_task(
    bind=True,
    time_limit=access.FLUSH_TIME_LIMIT_SECONDS,
    soft_time_limit=access.FLUSH_TIME_LIMIT_SECONDS - 20,
    acks_late=True,
)
def flush_accesses(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.flush_accesses", task_id=self.request.id or "") as run:
        if dry_run:
            run.counts = {"buffered": access.buffer_length(), "dry_run": 1}
        else:
            run.counts = access.access_flush()
    return run.counts


@shared_task(
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


@shared_task(bind=True, time_limit=300, soft_time_limit=270, acks_late=True)
def index_pending_sweep(self, dry_run: bool = False) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with job_run("memory.index_pending", task_id=self.request.id or "") as run:
        contexts = pending.pending_contexts()
        sent = 0 if dry_run else sum(task_send(index_pending, pk) for pk in contexts)
        run.counts = {"contexts": len(contexts), "sent": sent} | ({"dry_run": 1} if dry_run else {})
    return run.counts
