"""Work a request leaves for a worker: entries waiting for their index, and the reads a flush
has applied.

A conversation's messages are stored at once and indexed after the commit
(``memory.long_term.services.pending``): each waits here until a worker has written its BM25
postings and its embedding. Reads are buffered in Redis and applied by a flush
(``memory.long_term.services.access``): each (claim, context) it applied is marked here, in the
transaction that applied it, so a flush that died before deleting its claim from Redis is never
applied twice. Entries whose links to the knowledge graph could not be brought up to date after
their write (the broker down, the write too large to link in its own process) wait here for the
``memory.link_pending`` job (``memory.long_term.services.graph_links``).
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from memory.long_term.models import MemoryContext, MemoryEntry


class PendingIndex(models.Model):
    """An entry whose index is to be (re)computed: its BM25 postings (``keyword``), its
    embedding (``embed``). ``indexed``: it has postings now, which a re-index removes first.
    A worker claims rows (``claim``, ``claimed_at``), computes outside any transaction, and
    writes only the rows still holding its claim: a row queued again meanwhile (a new
    neighbour changed its text) lost the claim and is done by the next run. After
    ``PENDING_INDEX_MAX_ATTEMPTS`` failed embeddings a row is ``failed`` (``failed_at``,
    ``error``) until an operator retries it."""

    # The database cascades from both (the migration declares the constraints ON DELETE CASCADE).
    entry = models.OneToOneField(
        MemoryEntry,
        on_delete=models.DO_NOTHING,
        primary_key=True,
        related_name="+",
        db_constraint=False,
    )
    context = models.ForeignKey(
        MemoryContext,
        on_delete=models.DO_NOTHING,
        related_name="+",
        db_index=False,
        db_constraint=False,
    )
    keyword = models.BooleanField(default=True)
    embed = models.BooleanField(default=True)
    indexed = models.BooleanField(default=False)
    queued_at = models.DateTimeField()
    claim = models.CharField(max_length=64, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    failed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "entry waiting for its index"
        verbose_name_plural = "entries waiting for their index"
        indexes = [
            models.Index(
                fields=["context", "entry"],
                name="ltm_pending_index_todo",
                condition=Q(failed_at__isnull=True),
            ),
        ]

    def __str__(self) -> str:
        return f"entry {self.entry_id}"


class PendingGraphLink(models.Model):
    """An entry whose links to the knowledge graph are to be brought up to date
    (``graph_links.entries_link``: linked when it is live, unlinked when it is an earlier
    version, archived or deleted). No foreign key: a deleted entry's row stays until its links
    are gone. ``queued_at``: the latest time it was queued; a run deletes only the rows it
    read, so an entry queued again meanwhile is linked again."""

    entry_id = models.BigIntegerField(primary_key=True)
    context_id = models.BigIntegerField()
    queued_at = models.DateTimeField()

    class Meta:
        verbose_name = "entry waiting for its graph links"
        verbose_name_plural = "entries waiting for their graph links"
        indexes = [models.Index(fields=["queued_at"], name="ltm_pending_link_queued")]

    def __str__(self) -> str:
        return f"entry {self.entry_id}"


class AccessFlush(models.Model):
    """One claim of buffered reads, applied to one context."""

    pk = models.CompositePrimaryKey("token", "context_id")
    token = models.CharField(max_length=64)
    context_id = models.BigIntegerField()
    applied_at = models.DateTimeField(db_index=True)

    def __str__(self) -> str:
        return f"{self.token} {self.context_id}"
