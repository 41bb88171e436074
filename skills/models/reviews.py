"""What people review: skill proposals (an explicit state machine) and detected conflicts."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower

from core.models import Account, Agent, TimeStampedModel
from core.querysets import AccountScopedQuerySet
from skills.categories import CATEGORIES, Category
from skills.models.catalog import Skill


class SkillProposal(TimeStampedModel):
    """A proposed new skill. Transitions (``skills.services.proposals.TRANSITIONS``):

    draft -> submitted | expired; submitted -> under_review | approved | rejected | expired;
    under_review -> approved | rejected | expired; approved -> created. Rejected, expired and
    created are final. A proposal is *open* until it is final: one open proposal per skill name
    per account (case-insensitive).
    """

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        SUBMITTED = "submitted", "Submitted"
        UNDER_REVIEW = "under_review", "Under review"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        EXPIRED = "expired", "Expired"
        CREATED = "created", "Created"

    OPEN_STATUSES: ClassVar[tuple[str, ...]] = ("draft", "submitted", "under_review", "approved")
    REVIEWABLE_STATUSES: ClassVar[tuple[str, ...]] = ("submitted", "under_review")

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    category = models.CharField(max_length=30, choices=Category.choices)
    confidence = models.FloatField(
        default=0.0, help_text="How sure the research is of the category (0..1)."
    )
    procedure = models.TextField(blank=True, help_text="The drafted procedure.")
    tags = ArrayField(models.CharField(max_length=100), default=list, blank=True)
    execution_context = models.JSONField(default=dict, blank=True)
    dependencies = ArrayField(
        models.CharField(max_length=200),
        default=list,
        blank=True,
        help_text="Names of the skills this one depends on.",
    )
    research = models.JSONField(
        default=dict,
        blank=True,
        editable=False,
        help_text="What search found: related skills, documents and pages.",
    )
    drafted_by = models.CharField(
        max_length=200, blank=True, editable=False, help_text="LLM model id, or offline."
    )
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DRAFT)
    proposed_by_agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, editable=False, related_name="+"
    )
    proposed_by_user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )
    proposed_by = models.CharField(max_length=300, blank=True, editable=False)
    reviewer = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )
    reviewed_at = models.DateTimeField(null=True, blank=True, editable=False)
    decision_reason = models.TextField(blank=True, editable=False)
    submitted_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True, editable=False)
    # A sub-proposal for a dependency the approved parent was missing.
    parent = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="sub_proposals",
    )
    skill = models.ForeignKey(
        Skill,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="proposals",
    )

    objects: ClassVar[AccountScopedQuerySet[SkillProposal]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "skill proposal"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                "account",
                Lower("name"),
                name="skill_proposal_one_open",
                condition=Q(status__in=["draft", "submitted", "under_review", "approved"]),
            ),
            models.CheckConstraint(
                condition=Q(category__in=CATEGORIES), name="skill_proposal_category_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=1),
                name="skill_proposal_confidence_0_1",
            ),
            models.CheckConstraint(
                condition=Q(
                    status__in=[
                        "draft",
                        "submitted",
                        "under_review",
                        "approved",
                        "rejected",
                        "expired",
                        "created",
                    ]
                ),
                name="skill_proposal_status_valid",
            ),
        ]
        indexes = [
            models.Index(
                fields=["expires_at"],
                name="skill_proposal_expiry",
                condition=Q(status__in=["draft", "submitted", "under_review"]),
            ),
            models.Index(fields=["account", "status"], name="skill_proposal_status"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES


class SkillConflict(TimeStampedModel):
    """A problem between skills found by the daily scan (``skills.services.conflicts``)."""

    class ConflictType(models.TextChoices):
        OVERLAP = "overlap", "Overlap (similar active skills)"
        CONTRADICTION = "contradiction", "Contradiction"
        DEPENDENCY = "dependency", "Dependency (missing or cyclic)"
        VERSION_MISMATCH = "version_mismatch", "Version mismatch"
        NAMING = "naming", "Naming (near-duplicate names)"

    class Severity(models.TextChoices):
        LOW = "low", "Low"
        MEDIUM = "medium", "Medium"
        HIGH = "high", "High"
        CRITICAL = "critical", "Critical"

    class Status(models.TextChoices):
        DETECTED = "detected", "Detected"
        ACKNOWLEDGED = "acknowledged", "Acknowledged"
        RESOLVED = "resolved", "Resolved"
        DISMISSED = "dismissed", "Dismissed"

    SEVERITY_WEIGHTS: ClassVar[dict[str, int]] = {"low": 1, "medium": 2, "high": 4, "critical": 8}
    OPEN_STATUSES: ClassVar[tuple[str, ...]] = ("detected", "acknowledged")

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    conflict_type = models.CharField(max_length=20, choices=ConflictType.choices)
    severity = models.CharField(max_length=10, choices=Severity.choices)
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.DETECTED)
    skill = models.ForeignKey(Skill, on_delete=models.CASCADE, related_name="conflicts")
    other_skill = models.ForeignKey(
        Skill, on_delete=models.CASCADE, null=True, blank=True, related_name="+"
    )
    # Identifies the same problem across scans: type, skills, and what else it is about.
    fingerprint = models.CharField(max_length=300, editable=False)
    description = models.TextField(blank=True)
    details = models.JSONField(default=dict, blank=True, editable=False)
    priority = models.FloatField(default=0.0, editable=False)
    last_seen_at = models.DateTimeField(null=True, blank=True, editable=False)
    acknowledged_at = models.DateTimeField(null=True, blank=True, editable=False)
    resolved_at = models.DateTimeField(null=True, blank=True, editable=False)
    resolution = models.TextField(blank=True, editable=False)
    resolved_by = models.CharField(max_length=300, blank=True, editable=False)
    # The proposal auto-repair opened for it (a missing dependency).
    proposal = models.ForeignKey(
        SkillProposal,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        editable=False,
        related_name="+",
    )

    objects: ClassVar[AccountScopedQuerySet[SkillConflict]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "skill conflict"
        ordering = ["-priority", "-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "fingerprint"],
                name="skill_conflict_one_open",
                condition=Q(status__in=["detected", "acknowledged"]),
            ),
            models.CheckConstraint(
                condition=Q(
                    conflict_type__in=[
                        "overlap",
                        "contradiction",
                        "dependency",
                        "version_mismatch",
                        "naming",
                    ]
                ),
                name="skill_conflict_type_valid",
            ),
            models.CheckConstraint(
                condition=Q(severity__in=["low", "medium", "high", "critical"]),
                name="skill_conflict_severity_valid",
            ),
        ]
        indexes = [
            models.Index(fields=["account", "status", "-priority"], name="skill_conflict_open")
        ]

    def __str__(self) -> str:
        return f"{self.conflict_type}: {self.description[:80]}"

    @property
    def weight(self) -> int:
        return self.SEVERITY_WEIGHTS[self.severity]
