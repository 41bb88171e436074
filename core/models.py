"""Tenancy and plumbing every app shares: accounts, teams, members, agents, keys, job runs."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.querysets import AccountScopedQuerySet


class TimeStampedModel(models.Model):
    created_at = models.DateTimeField(default=timezone.now, editable=False, db_index=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class Account(TimeStampedModel):
    """A tenant. Every piece of domain data belongs to exactly one account."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Team(TimeStampedModel):
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="teams")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)

    objects: ClassVar[AccountScopedQuerySet[Team]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["account", "name"], name="team_unique_name_per_account")
        ]

    def __str__(self) -> str:
        return self.name


class Membership(TimeStampedModel):
    """A person's role in an account. Owners can do everything the other roles can."""

    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        REVIEWER = "reviewer", "Reviewer"
        AUTHOR = "author", "Author"
        OPERATOR = "operator", "Operator"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices)

    objects: ClassVar[AccountScopedQuerySet[Membership]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["user", "account", "role"], name="membership_unique_role"
            )
        ]

    def __str__(self) -> str:
        return f"{self.user} is {self.role} of {self.account}"


class Agent(TimeStampedModel):
    """An AI agent that calls the API with its own keys."""

    class Status(models.TextChoices):
        ACTIVE = "active", "Active"
        DISABLED = "disabled", "Disabled"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="agents")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.ACTIVE)
    metadata = models.JSONField(default=dict, blank=True)
    teams = models.ManyToManyField(Team, blank=True, related_name="agents")

    objects: ClassVar[AccountScopedQuerySet[Agent]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["account", "name"], name="agent_unique_name_per_account"
            )
        ]

    def __str__(self) -> str:
        return self.name

    # DRF treats the authenticated principal as ``request.user``; an agent is always authenticated.
    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def is_active(self) -> bool:
        return self.status == self.Status.ACTIVE


class ApiKeyQuerySet(models.QuerySet["ApiKey"]):
    def usable(self) -> ApiKeyQuerySet:
        now = timezone.now()
        return self.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )


class ApiKey(TimeStampedModel):
    """An agent's credential: ``eng_<prefix>_<secret>``; only the prefix and a hash are stored."""

    class Scope(models.TextChoices):
        READ = "read", "Read"
        WRITE = "write", "Write"
        ADMIN = "admin", "Admin"

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True)
    prefix = models.CharField(max_length=16, unique=True, editable=False)
    hashed_secret = models.CharField(max_length=128, editable=False)
    scopes = ArrayField(models.CharField(max_length=10, choices=Scope.choices), default=list)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = ApiKeyQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        verbose_name = "API key"
        constraints = [
            models.CheckConstraint(
                condition=Q(scopes__contained_by=["read", "write", "admin"]) & ~Q(scopes=[]),
                name="apikey_scopes_valid",
            )
        ]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.agent})"

    def has_scope(self, scope: str) -> bool:
        return scope in self.scopes or self.Scope.ADMIN in self.scopes

    @property
    def is_usable(self) -> bool:
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or self.expires_at > timezone.now()


class JobRun(models.Model):
    """One run of a maintenance job: operators read these in the admin."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    job = models.CharField(max_length=200, db_index=True)
    task_id = models.CharField(max_length=255, blank=True)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.RUNNING)
    started_at = models.DateTimeField(default=timezone.now, db_index=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-started_at"]

    def __str__(self) -> str:
        return f"{self.job} at {self.started_at:%Y-%m-%d %H:%M} ({self.status})"

    @property
    def duration_seconds(self) -> float | None:
        if self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class PeriodicJobDefault(models.Model):
    """The schedule Engram last wrote for a periodic job, to tell operator edits from defaults."""

    name = models.CharField(max_length=200, unique=True)
    fingerprint = models.CharField(max_length=500)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return self.name


class AuditEvent(models.Model):
    """Who did which write: every service that changes data records one.

    ``account`` is empty for installation-wide operations. The actor is an agent, a person, or
    neither (a command-line tool or the system); both references survive their deletion as the
    recorded ``actor_label``.
    """

    account = models.ForeignKey(
        Account, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    agent = models.ForeignKey(
        Agent, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    actor_label = models.CharField(max_length=300)
    action = models.CharField(max_length=100, help_text="e.g. rag.knowledge_base.update")
    target_type = models.CharField(max_length=100, blank=True)
    target_id = models.CharField(max_length=100, blank=True)
    changes = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    objects: ClassVar[AccountScopedQuerySet[AuditEvent]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "-created_at"], name="core_audit_account_time"),
            models.Index(fields=["target_type", "target_id"], name="core_audit_target"),
        ]

    def __str__(self) -> str:
        return f"{self.actor_label}: {self.action} {self.target_type} {self.target_id}"


def _portability_upload_to(job: PortabilityJob, filename: str) -> str:
    return f"portability/{job.account_id}/{job.kind}-{job.pk or 'new'}-{filename}"


class PortabilityJob(models.Model):
    """An account export or import asked for over the API or in the admin, run by a Celery
    worker (``core.portability.jobs``; docs/portability.md, "Over the API"):

        queued --claim--> running --> succeeded (export: the archive; import: counts)
                            \\------> failed (error_code, error, error_details: file, line)

    ``progress`` (0..1) moves as each kind is written (export) or checked and loaded
    (import); the worker writes it on a connection of its own, so it is visible while the
    run's own transaction is still open."""

    class Kind(models.TextChoices):
        EXPORT = "export", "Export"
        IMPORT = "import", "Import"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    account = models.ForeignKey(Account, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    # Who asked: an agent (its key), or a person or tool (``actor`` names them).
    agent = models.ForeignKey(
        Agent, on_delete=models.SET_NULL, null=True, blank=True, related_name="+"
    )
    actor = models.CharField(max_length=200, blank=True)
    with_vectors = models.BooleanField(default=False)
    # Export only: one agent's share (its name), like an agent file.
    agent_name = models.CharField(max_length=200, blank=True)
    # Export: the archive written; import: the archive uploaded.
    archive = models.FileField(upload_to=_portability_upload_to, max_length=500, blank=True)
    size_bytes = models.BigIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    progress = models.FloatField(default=0.0)
    digest = models.CharField(max_length=64, blank=True)
    counts = models.JSONField(default=dict, blank=True)
    already_imported = models.BooleanField(default=False)
    error_code = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    error_details = models.JSONField(default=dict, blank=True)
    claim = models.CharField(max_length=255, blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar[AccountScopedQuerySet[PortabilityJob]] = AccountScopedQuerySet.as_manager()  # type: ignore[assignment]

    class Meta:
        verbose_name = "export or import job"
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["account", "kind", "-created_at"], name="core_port_job_acct")
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running", "succeeded", "failed"]),
                name="core_port_job_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind__in=["export", "import"]), name="core_port_job_kind_valid"
            ),
            models.CheckConstraint(
                condition=Q(progress__gte=0) & Q(progress__lte=1),
                name="core_port_job_progress_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display().lower()} job {self.pk} ({self.get_status_display()})"


class EmbeddingGeneration(models.Model):
    """One embedding model's vectors across every embedded space: an *index generation*
    (``core.embeddings.generations``; docs/portability.md, "Changing the embedding model").

    Each embedded table has two vector columns. ``embedding`` holds the *current* generation's
    vectors, the ones every search reads; ``embedding_next`` holds the other one: the *next*
    generation while it is built, or the *previous* one after a cut-over, kept for a rollback
    until it is dropped. Each column has its own type (``vector(dimensions)``) and its own HNSW
    index, named after the generation. A cut-over or a rollback swaps the two columns' names in
    one transaction::

        next (building --> ready) --cut-over--> current --cut-over--> previous --drop--> dropped
                                                 ^--------rollback---------/

    ``progress`` is the build's position per space: ``{space: {"total", "done", "after"}}``,
    ``after`` being the last unit id embedded, so a build resumes where it stopped."""

    class Role(models.TextChoices):
        CURRENT = "current", "Current"
        NEXT = "next", "Next"
        PREVIOUS = "previous", "Previous"
        DROPPED = "dropped", "Dropped"

    class Status(models.TextChoices):
        BUILDING = "building", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    role = models.CharField(max_length=10, choices=Role.choices)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.READY)
    provider = models.CharField(max_length=20)
    model = models.CharField(max_length=200)
    base_url = models.CharField(max_length=500, blank=True)
    dimensions = models.PositiveIntegerField()
    # The id written beside each vector of this generation (``EmbeddingProvider.model_id``).
    model_id = models.CharField(max_length=200)
    auto_cutover = models.BooleanField(default=True)
    progress = models.JSONField(default=dict, blank=True)
    task_id = models.CharField(max_length=255, blank=True)
    error_code = models.CharField(max_length=100, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    built_at = models.DateTimeField(null=True, blank=True)
    cutover_at = models.DateTimeField(null=True, blank=True)
    dropped_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["role"],
                condition=~Q(role="dropped"),
                name="core_embgen_one_per_role",
            ),
            models.CheckConstraint(
                condition=Q(role__in=["current", "next", "previous", "dropped"]),
                name="core_embgen_role_valid",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["building", "ready", "failed"]),
                name="core_embgen_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"generation {self.pk}: {self.model_id} ({self.dimensions}d, {self.role})"

    @property
    def index_suffix(self) -> str:
        """The suffix of this generation's HNSW index names (``<table>_vec_g<id>``)."""
        return f"vec_g{self.pk}"
