"""Pages (an account's wikilinked markdown) and knowledge-base articles (global: every account
reads them, staff write them). Each is a node of the knowledge graph (``rag``); its
``[[wikilinks]]`` are the node's outgoing ``references`` edges (``content.services.links``)."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector, SearchVectorField
from django.db import models
from django.db.models import Q
from pgvector.django import VectorField

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager, NextGenerationDeferred


class Status(models.TextChoices):
    DRAFT = "draft", "Draft"
    PUBLISHED = "published", "Published"


class WrittenContent(TimeStampedModel):
    """What pages and articles share: markdown with a title, a slug, aliases and an embedding of
    the whole text (for related pages), refreshed when the text changes."""

    title = models.CharField(max_length=300)
    slug = models.CharField(max_length=300, editable=False)
    content = models.TextField(blank=True)
    aliases = ArrayField(models.CharField(max_length=300), default=list, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    # Wikilinks match titles and aliases as ``content.wikilinks.normalise_title`` compares them.
    title_key = models.CharField(max_length=300, editable=False)
    alias_keys = ArrayField(
        models.CharField(max_length=300), default=list, blank=True, editable=False
    )
    # The current embedding generation's vector and model id; the other generation's beside
    # them (core.embeddings.generations: a migration to another model, or a rollback).
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    embedding_next = VectorField(null=True, blank=True, editable=False)
    embedding_next_model = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
    # The checksum of the title and text the embedding was computed from ("" when none was).
    embedded_checksum = models.CharField(max_length=64, blank=True, editable=False)
    # When a write scheduled the sync (node, links, embedding) that has not finished since: set
    # in the write's transaction, cleared by the sync. A sync whose task was never queued (the
    # broker was down) is run by the sweep (content.sync_pending).
    sync_pending_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return self.title


class PageManager(EmbeddedManager["Page"]):
    """Pages without ``words``: the database's search data, never read by Python."""

    def get_queryset(self) -> AccountScopedQuerySet[Page]:
        return super().get_queryset().defer("words")  # type: ignore[return-value]


class Page(WrittenContent):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The person who wrote the page (empty when an agent did).",
    )
    author_agent = models.ForeignKey(
        Agent,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        help_text="The agent that wrote the page (empty when a person did).",
    )
    # The page's node in the account's knowledge graph, made by the link sync.
    node = models.OneToOneField(
        "rag.GraphNode", on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )

    # The text's words as unlinked mentions search them (``content.selectors``): whole words,
    # any case. Stored, not only an index expression: a phrase match is rechecked on each page
    # the index finds, which re-parsed its whole text (a third of a millisecond for an
    # abstract; a hub has hundreds of candidates: docs/benchmarks-log.md, "Pages and links").
    words = models.GeneratedField(
        expression=SearchVector("content", config="simple"),
        output_field=SearchVectorField(),
        db_persist=True,
    )

    objects: ClassVar[AccountScopedQuerySet[Page]] = PageManager()

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "slug"], name="content_page_unique_slug"),
            models.CheckConstraint(condition=~Q(slug=""), name="content_page_slug_not_empty"),
        ]
        indexes = [
            models.Index(fields=["account", "-updated_at", "-id"], name="content_page_recent"),
            models.Index(fields=["account", "-created_at", "-id"], name="content_page_created"),
            # Unlinked mentions: whole words of the text, case-insensitive (content.selectors).
            GinIndex(fields=["words"], name="content_page_words"),
            models.Index(fields=["account", "title_key"], name="content_page_title"),
            GinIndex(fields=["alias_keys"], name="content_page_aliases"),
            # The sweep's query: the few pages whose sync has not run (almost always none).
            models.Index(
                fields=["sync_pending_at"],
                name="content_page_sync_pending",
                condition=Q(sync_pending_at__isnull=False),
            ),
        ]


class Article(WrittenContent):
    """A knowledge-base article: global, not an account's. Every account reads the published
    ones; only staff write them (in the admin)."""

    author = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
    )

    objects: ClassVar[models.Manager[Article]] = NextGenerationDeferred()

    class Meta:
        ordering = ["-updated_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["slug"], name="content_article_unique_slug"),
            models.CheckConstraint(condition=~Q(slug=""), name="content_article_slug_not_empty"),
        ]
        indexes = [
            models.Index(fields=["-created_at", "-id"], name="content_article_created"),
            models.Index(fields=["title_key"], name="content_article_title"),
            GinIndex(fields=["alias_keys"], name="content_article_aliases"),
            models.Index(
                fields=["sync_pending_at"],
                name="content_article_sync_pending",
                condition=Q(sync_pending_at__isnull=False),
            ),
        ]


class DailySummary(models.Model):
    """Which page summarises an account's day (``content.services.summaries``): one per account
    and day, so the job rewrites that page when it runs again. A page an author deleted leaves
    the row with no page: that day's summary is not written again."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    page = models.OneToOneField(
        Page, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "daily summaries"
        ordering = ["-day", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "day"], name="content_summary_unique_day")
        ]

    def __str__(self) -> str:
        return f"summary of {self.day} (account {self.account_id})"
