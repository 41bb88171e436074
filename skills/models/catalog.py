"""Skills (a search space of the one engine, and nodes of the knowledge graph), their versions
and their assignment to agents.

A skill's dependencies are ``depends_on`` edges between skill nodes of the account's knowledge
graph (``rag.graph.models.GraphEdge``), not a table here: the graph is where skills meet pages,
agents and documents, and its traversal finds chains and cycles.
"""

from __future__ import annotations

from typing import ClassVar

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from pgvector.django import VectorField

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet, EmbeddedManager
from rag.spaces import AbstractKeywordPosting, AbstractKeywordTerm
from skills.categories import CATEGORIES, Category


class SkillScope(models.Model):
    """One account's skills as a scope of the ``skills`` search space (``skills.spaces``): its
    row holds their BM25 corpus statistics and its lock serialises their index changes."""

    account = models.OneToOneField(Account, on_delete=models.CASCADE, related_name="+")
    skill_count = models.PositiveIntegerField(default=0, editable=False)
    total_terms = models.PositiveBigIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[SkillScope]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    def __str__(self) -> str:
        return f"skills of account {self.account_id}"


class Skill(TimeStampedModel):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        ACTIVE = "active", "Active"
        DEPRECATED = "deprecated", "Deprecated"
        ARCHIVED = "archived", "Archived"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    scope = models.ForeignKey(
        SkillScope, on_delete=models.CASCADE, related_name="+", editable=False
    )
    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=200, editable=False)
    description = models.TextField(blank=True)
    category = models.CharField(max_length=30, choices=Category.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    execution_context = models.JSONField(
        default=dict, blank=True, help_text="What running the skill needs: tools, inputs, limits."
    )
    procedure = models.TextField(blank=True, help_text="The active version's content.")
    # Not stored: the version a change of this instance's execution context became, waiting
    # for review (``skills.services.catalog.skill_update``); None when nothing waits.
    pending_version: SkillVersion | None = None
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    # The knowledge graph node standing for the skill (dependencies are its depends_on edges).
    graph_node = models.OneToOneField(
        "rag.GraphNode",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )
    effectiveness_score = models.FloatField(
        default=0.5, help_text="Smoothed success of its uses, decayed while unused (0..1)."
    )
    health_score = models.FloatField(
        default=1.0, help_text="Outcomes, recency and open conflicts (0..1); docs/skills.md."
    )
    usage_count = models.PositiveIntegerField(default=0, editable=False)
    success_count = models.PositiveIntegerField(default=0, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    # The current embedding generation's vector and model id; the other generation's beside
    # them (core.embeddings.generations: a migration to another model, or a rollback).
    embedding = VectorField(null=True, blank=True)
    embedding_model = models.CharField(max_length=200, blank=True, editable=False)
    embedding_next = VectorField(null=True, blank=True, editable=False)
    embedding_next_model = models.CharField(
        max_length=200, blank=True, default="", db_default="", editable=False
    )
    # sha256 of the text the embedding was computed from: re-embedding finds changed skills.
    embedding_checksum = models.CharField(max_length=64, blank=True, editable=False)
    keyword_length = models.PositiveIntegerField(default=0, editable=False)

    objects: ClassVar[AccountScopedQuerySet[Skill]] = EmbeddedManager()

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["account", "slug"], name="skill_unique_slug"),
            models.UniqueConstraint("account", Lower("name"), name="skill_unique_name"),
            models.CheckConstraint(
                condition=Q(category__in=CATEGORIES), name="skill_category_valid"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["draft", "active", "deprecated", "archived"]),
                name="skill_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(effectiveness_score__gte=0, effectiveness_score__lte=1),
                name="skill_effectiveness_0_1",
            ),
            models.CheckConstraint(
                condition=Q(health_score__gte=0, health_score__lte=1), name="skill_health_0_1"
            ),
        ]
        indexes = [
            models.Index(fields=["account", "category", "status"], name="skill_category_status"),
        ]

    def __str__(self) -> str:
        return self.name


class SkillPosting(AbstractKeywordPosting):
    """One (term, skill) pair of the skills' BM25 index (see ``rag.spaces``)."""

    pk = models.CompositePrimaryKey("scope_id", "term", "skill_id")
    scope = models.ForeignKey(
        SkillScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )
    skill = models.ForeignKey(Skill, on_delete=models.DO_NOTHING, related_name="+")
    skill_length = models.PositiveIntegerField()

    class Meta:
        indexes = [
            models.Index(
                "scope",
                "term",
                models.F("impact").desc(),
                name="skill_posting_impact",
                include=["skill", "tf", "skill_length"],
            ),
        ]

    def __str__(self) -> str:
        return f"{self.term} in skill {self.skill_id}"


class SkillTerm(AbstractKeywordTerm):
    pk = models.CompositePrimaryKey("scope_id", "term")
    scope = models.ForeignKey(
        SkillScope, on_delete=models.DO_NOTHING, related_name="+", db_index=False
    )


class SkillVersion(models.Model):
    """A version of a skill's procedure. Active versions are the variants usage is routed
    between, each with its traffic share (the shares of a skill's active versions sum to 1)."""

    class ChangeType(models.TextChoices):
        MAJOR = "major", "Major"
        MINOR = "minor", "Minor"
        PATCH = "patch", "Patch"
        HOTFIX = "hotfix", "Hotfix"
        EXPERIMENTAL = "experimental", "Experimental"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="versions")
    version = models.CharField(max_length=50)
    # The parsed version, for ordering.
    major = models.PositiveIntegerField(editable=False)
    minor = models.PositiveIntegerField(editable=False)
    patch = models.PositiveIntegerField(editable=False)
    prerelease = models.CharField(max_length=50, blank=True, editable=False)
    change_type = models.CharField(max_length=12, choices=ChangeType.choices)
    content = models.TextField(blank=True, help_text="The procedure of this version.")
    # What running this version needs (the skill's ``execution_context`` is its primary
    # variant's): a change to it goes live through a reviewer, as a change of procedure does.
    execution_context = models.JSONField(
        default=dict, blank=True, help_text="What running this version needs (JSON)."
    )
    notes = models.TextField(blank=True)
    is_active = models.BooleanField(default=False)
    traffic_share = models.FloatField(default=0.0)
    success_count = models.PositiveIntegerField(default=0, editable=False)
    failure_count = models.PositiveIntegerField(default=0, editable=False)
    total_duration_ms = models.PositiveBigIntegerField(default=0, editable=False)
    created_by = models.CharField(max_length=300, blank=True, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    activated_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[SkillVersion]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["skill", "-major", "-minor", "-patch", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["skill", "version"], name="skill_version_unique"),
            models.CheckConstraint(
                condition=Q(traffic_share__gte=0, traffic_share__lte=1),
                name="skill_version_share_0_1",
            ),
            models.CheckConstraint(
                condition=Q(is_active=True) | Q(traffic_share=0),
                name="skill_version_inactive_no_traffic",
            ),
            models.CheckConstraint(
                condition=Q(change_type__in=["major", "minor", "patch", "hotfix", "experimental"]),
                name="skill_version_change_type_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["skill"], name="skill_version_active", condition=Q(is_active=True)
            ),
        ]

    def __str__(self) -> str:
        return f"{self.skill_id} v{self.version}"

    @property
    def outcomes(self) -> int:
        return self.success_count + self.failure_count

    @property
    def success_rate(self) -> float | None:
        return self.success_count / self.outcomes if self.outcomes else None


class AgentSkill(TimeStampedModel):
    """An agent's assignment to a skill: how proficient it is, and whether it uses it now."""

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    agent = models.ForeignKey(Agent, on_delete=models.DO_NOTHING, related_name="+")
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="assignments")
    proficiency = models.FloatField(default=0.5)
    is_active = models.BooleanField(default=True)
    usage_count = models.PositiveIntegerField(default=0, editable=False)
    success_count = models.PositiveIntegerField(default=0, editable=False)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)

    objects: ClassVar[AccountScopedQuerySet[AgentSkill]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "agent skill"
        ordering = ["skill", "-proficiency", "agent"]
        constraints = [
            models.UniqueConstraint(fields=["agent", "skill"], name="agent_skill_unique"),
            models.CheckConstraint(
                condition=Q(proficiency__gte=0, proficiency__lte=1),
                name="agent_skill_proficiency_0_1",
            ),
        ]
        indexes = [models.Index(fields=["skill", "is_active"], name="agent_skill_by_skill")]

    def __str__(self) -> str:
        return f"{self.agent_id} has {self.skill_id}"
