"""Typed, validated settings read from the environment once at start-up.

Every setting Engram reads lives here; docs/configuration.md documents each one. A bad value stops
the process at start-up with a message naming the variable, instead of failing on first use.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from core.redis_urls import CLUSTER_SCHEMES, is_sentinel, redis_url_check

BASE_DIR = Path(__file__).resolve().parent.parent


# A throttle rate: <requests>/<period> or none (see core.throttling).
_RATE = r"^(none|off|[1-9][0-9]*/(s|second|m|minute|h|hour|d|day))$"


#: The most read replicas DATABASE_REPLICA_URLS may name.
MAX_REPLICAS = 16


def database_url_problem(url: str) -> str | None:
    """What is wrong with a PostgreSQL URL, or None: a ``postgres://`` or ``postgresql://``
    scheme and a database name (``postgresql://user:password@host:5432/engram``, or
    ``postgresql://user:password@/engram?host=/socket/dir`` for a unix socket)."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        return "not a URL"
    if parts.scheme not in ("postgres", "postgresql"):
        return "the scheme must be postgres:// or postgresql://"
    if not parts.path.strip("/"):
        return "the URL names no database (postgresql://user:password@host:5432/<database>)"
    if not parts.hostname and "host=" not in parts.query:
        return "the URL names no host (a hostname, or ?host=/socket/dir)"
    return None


def _csv(value: object) -> object:
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class EngramEnv(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="", case_sensitive=True, extra="ignore")

    # --- runtime -----------------------------------------------------------------------------
    ENGRAM_ENV: Literal["development", "production", "test"] = "development"
    ENGRAM_DATA_DIR: Path = BASE_DIR / ".engram"
    DEBUG: bool = False
    SECRET_KEY: str | None = None
    ALLOWED_HOSTS: Annotated[list[str], NoDecode] = ["localhost", "127.0.0.1", "[::1]"]
    CSRF_TRUSTED_ORIGINS: Annotated[list[str], NoDecode] = []
    ENGRAM_HOST: str = "127.0.0.1"
    ENGRAM_PORT: int = Field(default=8000, ge=1, le=65535)
    WEB_CONCURRENCY: int = Field(default=2, ge=1, le=64)
    LOG_LEVEL: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    LOG_FORMAT: Literal["json", "console"] = "json"

    # --- services (unset: the embedded servers) ----------------------------------------------
    DATABASE_URL: str | None = None
    DATABASE_CONN_MAX_AGE: int = Field(default=60, ge=0)
    # Deadlocks and serialisation failures: how many more times a write runs (core/transactions.py).
    DATABASE_CONFLICT_RETRIES: int = Field(default=4, ge=0, le=20)
    # Read replicas (docs/operations.md, "Read replicas"): comma-separated PostgreSQL URLs that
    # searches read from; a replica that refuses a connection is skipped for RETRY seconds.
    DATABASE_REPLICA_URLS: Annotated[list[str], NoDecode] = []
    DATABASE_REPLICA_RETRY_SECONDS: int = Field(default=30, ge=1, le=3600)
    REDIS_URL: str | None = None
    CELERY_BROKER_URL: str | None = None
    CELERY_TASK_ALWAYS_EAGER: bool = False
    CELERY_WORKER_CONCURRENCY: int = Field(default=2, ge=1, le=64)
    # ./engram run: one worker per queue (interactive, ingestion, maintenance) instead of one
    # worker consuming all three (docs/operations.md, "Queues and workers").
    CELERY_WORKER_PER_QUEUE: bool = False
    # ./engram run: the longest pause before a process that died is started again (the pause
    # starts at 1 s and doubles with each failure).
    ENGRAM_RESTART_BACKOFF_MAX: float = Field(default=30.0, ge=1, le=600)

    # --- embeddings --------------------------------------------------------------------------
    EMBEDDING_PROVIDER: Literal["local", "openai"] = "local"
    EMBEDDING_MODEL: str = "all-MiniLM-L6-v2"
    EMBEDDING_BASE_URL: str | None = None
    EMBEDDING_API_KEY: str | None = None
    EMBEDDING_DIMENSIONS: int = Field(default=384, ge=1, le=16000)
    EMBEDDING_BATCH_TOKENS: int = Field(default=2048, ge=256, le=65536)
    EMBEDDING_TIMEOUT: float = Field(default=30.0, gt=0)
    EMBEDDING_REQUEST_DIMENSIONS: bool = False
    # The model an embedding migration moves to (docs/portability.md, "Changing the embedding
    # model"): configured beside the current one, because queries need the current model until
    # the cut-over. Unset (no provider and no model): no migration can start.
    EMBEDDING_NEXT_PROVIDER: Literal["local", "openai"] | None = None
    EMBEDDING_NEXT_MODEL: str | None = None
    EMBEDDING_NEXT_BASE_URL: str | None = None
    EMBEDDING_NEXT_API_KEY: str | None = None
    EMBEDDING_NEXT_DIMENSIONS: int | None = Field(default=None, ge=1, le=16000)

    # --- LLM ---------------------------------------------------------------------------------
    LLM_PROVIDER: Literal["offline", "openai"] = "offline"
    LLM_BASE_URL: str | None = None
    LLM_API_KEY: str | None = None
    LLM_MODEL: str = "gpt-4o-mini"
    LLM_TIMEOUT: float = Field(default=60.0, gt=0)
    LLM_MAX_RETRIES: int = Field(default=2, ge=0, le=10)

    # --- reranking -----------------------------------------------------------------------------
    RERANK_PROVIDER: Literal["none", "http", "llm"] = "none"
    RERANK_BASE_URL: str | None = None
    RERANK_MODEL: str = "BAAI/bge-reranker-v2-m3"
    RERANK_API_KEY: str | None = None
    RERANK_TIMEOUT: float = Field(default=30.0, gt=0)

    # --- HTTPS (production defaults apply when unset; see docs/configuration.md) -------------
    SECURE_SSL_REDIRECT: bool | None = None
    SECURE_HSTS_SECONDS: int | None = Field(default=None, ge=0)
    SECURE_HSTS_INCLUDE_SUBDOMAINS: bool | None = None
    SECURE_HSTS_PRELOAD: bool | None = None
    SECURE_PROXY_SSL_HEADER: bool | None = None

    # --- API ---------------------------------------------------------------------------------
    API_PAGE_SIZE: int = Field(default=50, ge=1, le=500)  # ?page_size= allows 500 at most
    # Per key; eight clients sharing one key at full speed stay inside both (docs/benchmarks-log.md,
    # "Message batches and mixed load").
    API_THROTTLE_READ: str = Field(default="6000/minute", pattern=_RATE)
    API_THROTTLE_WRITE: str = Field(default="3000/minute", pattern=_RATE)
    API_KEY_RETENTION_DAYS: int = Field(default=30, ge=1)
    JOB_RUN_RETENTION_DAYS: int = Field(default=30, ge=1)
    RAG_MAX_UPLOAD_BYTES: int = Field(default=20 * 1024 * 1024, ge=1024)
    PORTABILITY_MAX_IMPORT_BYTES: int = Field(default=2 * 1024**3, ge=1024)
    RAG_MAX_EXTRACTED_CHARS: int = Field(default=2_000_000, ge=1000)
    RAG_MAX_CHUNKS_PER_DOCUMENT: int = Field(default=5000, ge=1)
    RAG_MAX_PROCESSING_ATTEMPTS: int = Field(default=3, ge=1, le=100)
    # Entities of indexed documents' chunks become knowledge-graph nodes (docs/rag.md).
    RAG_GRAPH_EXTRACTION: bool = True
    # The Leiden seed of the communities job: the same graph gives the same communities.
    RAG_GRAPH_COMMUNITY_SEED: int = Field(default=42, ge=0, le=2_147_483_647)
    SEARCH_QUERY_RETENTION_DAYS: int = Field(default=90, ge=1)

    # --- memory tiers (docs/memory.md) ---------------------------------------------------------
    WORKING_MEMORY_DEFAULT_TTL: int = Field(default=300, ge=1)
    WORKING_MEMORY_MAX_TTL: int = Field(default=86_400, ge=1)
    WORKING_MEMORY_MAX_VALUE_BYTES: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    WORKING_MEMORY_MAX_KEYS: int = Field(default=1000, ge=1, le=100_000)
    WORKING_MEMORY_CONVERSATION_MAX_MESSAGES: int = Field(default=200, ge=1, le=10_000)
    SHORT_TERM_DEFAULT_TTL: int = Field(default=3600, ge=1)
    SHORT_TERM_MAX_TTL: int = Field(default=7 * 86_400, ge=1)
    SHORT_TERM_MAX_VALUE_BYTES: int = Field(default=256 * 1024, ge=1024, le=64 * 1024 * 1024)
    POOL_MAX_BYTES: int = Field(default=5 * 1024 * 1024, ge=1024, le=256 * 1024 * 1024)
    POOL_EVENT_RETENTION_DAYS: int = Field(default=7, ge=1)
    MEMORY_RECENCY_HALF_LIFE_DAYS: float = Field(default=30.0, gt=0, le=36_500)
    MEMORY_PROMOTION_MIN_ACCESSES: int = Field(default=3, ge=1, le=1_000_000)
    # Reads buffered before a flush is sent at once (docs/memory/long-term.md, "Reads and writes").
    MEMORY_ACCESS_BUFFER_MAX: int = Field(default=5000, ge=1, le=1_000_000)
    # Long-term entries read token by token when indexed, for graph search's late interaction
    # (memory/long_term/services/readings.py): about 400 bytes a token stored.
    MEMORY_ENTRY_READINGS: bool = True
    MEMORY_DEDUP_SIMILARITY: float = Field(default=0.92, gt=0, le=1)
    MEMORY_ROT_STALENESS: float = Field(default=0.9, gt=0, le=1)
    MEMORY_IMPORTANCE_HALF_LIFE_DAYS: float = Field(default=90.0, gt=0, le=36_500)
    # Review before change (docs/memory/review.md): how long a pending change waits for a decision
    # before it expires, and the importance drop from which a decay needs review.
    MEMORY_PENDING_CHANGE_TTL_DAYS: float = Field(default=14.0, gt=0, le=365)
    MEMORY_REVIEW_DECAY_THRESHOLD: float = Field(default=0.2, gt=0, le=1)
    # Rot across stores (docs/memory/rot.md): N days without change or use, by default.
    MAINTENANCE_ROT_DAYS: int = Field(default=90, ge=1, le=3650)
    # Memory tools (docs/memory/tools.md): searches one agent run may make, and how
    # long a run's counters live after its last use.
    MEMORY_RUN_MAX_SEARCHES: int = Field(default=10, ge=1, le=10_000)
    MEMORY_RUN_TTL_SECONDS: int = Field(default=86_400, ge=60, le=30 * 86_400)
    # Cluster maintenance (docs/memory/maintenance.md, "Cluster maintenance"): the scheduled run's
    # short-circuits, the grouping's similarity floor, the clustering's sizes and seed.
    MEMORY_MAINTENANCE_SKIP_IF_REPORT_TODAY: bool = True
    MEMORY_MAINTENANCE_MIN_NEW_MEMORIES: int = Field(default=10, ge=0, le=1_000_000)
    MEMORY_MAINTENANCE_MIN_SIMILARITY: float = Field(default=0.75, gt=0, le=1)
    MEMORY_MAINTENANCE_MIN_CLUSTER_SIZE: int = Field(default=2, ge=2, le=1000)
    MEMORY_MAINTENANCE_SEED: int = Field(default=42, ge=0, le=2**31 - 1)
    MEMORY_MAINTENANCE_UMAP_MIN_ENTRIES: int = Field(default=50, ge=10, le=1_000_000)
    MEMORY_MAINTENANCE_UMAP_SAMPLE: int = Field(default=5000, ge=100, le=1_000_000)
    MEMORY_MAINTENANCE_MAX_REWRITES: int = Field(default=500, ge=1, le=100_000)
    # Where numba keeps what it compiles (UMAP and its nearest neighbours, for cluster
    # maintenance): unset, ``<ENGRAM_DATA_DIR>/cache/numba``. numba reads the same variable.
    NUMBA_CACHE_DIR: Path | None = None
    SIDE_BY_SIDE_THREADS: int = Field(default=2, ge=0, le=16)

    # --- metrics ------------------------------------------------------------------------------
    # Set: /metrics needs "Authorization: Bearer <token>"; unset: loopback scrapers only.
    METRICS_TOKEN: str | None = None

    # --- admin sign-in -------------------------------------------------------------------------
    ADMIN_LOGIN_FAILURE_LIMIT: int = Field(default=5, ge=0, le=1000)
    ADMIN_LOGIN_COOLOFF_MINUTES: int = Field(default=30, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _split_lists(cls, data: object) -> object:
        if isinstance(data, dict):
            for key in ("ALLOWED_HOSTS", "CSRF_TRUSTED_ORIGINS", "DATABASE_REPLICA_URLS"):
                if key in data:
                    data[key] = _csv(data[key])
        return data

    @field_validator("REDIS_URL", "CELERY_BROKER_URL")
    @classmethod
    def _redis_url(cls, value: str | None, info: ValidationInfo) -> str | None:
        """``redis://``, ``rediss://``, ``unix://`` or ``sentinel://...?master_name=``
        (core/redis_urls.py); Redis Cluster is refused with the reason. A broker URL of another
        kind (``amqp://``) is kombu's business and passes as given."""
        if not value:
            return None
        name = info.field_name or "REDIS_URL"
        scheme = value.split("://", 1)[0].lower()
        if name == "REDIS_URL" or is_sentinel(value) or scheme in CLUSTER_SCHEMES:
            redis_url_check(value, name="")
        return value

    @field_validator("DATABASE_REPLICA_URLS")
    @classmethod
    def _replica_urls(cls, urls: list[str]) -> list[str]:
        if len(urls) > MAX_REPLICAS:
            raise ValueError(f"at most {MAX_REPLICAS} replicas")
        for number, url in enumerate(urls, 1):
            problem = database_url_problem(url)
            if problem:
                # The URL itself is not echoed: it may hold a password.
                raise ValueError(f"replica {number}: {problem}")
        return urls

    @model_validator(mode="after")
    def _check(self) -> EngramEnv:
        if self.ENGRAM_ENV == "production":
            missing = [
                name
                for name in ("SECRET_KEY", "DATABASE_URL", "REDIS_URL")
                if not getattr(self, name)
            ]
            if missing:
                raise ValueError(f"production requires {', '.join(missing)} to be set")
            if self.DEBUG:
                raise ValueError("DEBUG must be off in production")
        if self.EMBEDDING_PROVIDER == "openai" and not self.EMBEDDING_BASE_URL:
            raise ValueError("EMBEDDING_PROVIDER=openai needs EMBEDDING_BASE_URL")
        if self.EMBEDDING_PROVIDER == "local" and self.EMBEDDING_DIMENSIONS != 384:
            raise ValueError("the local embedding model has 384 dimensions")
        if self.EMBEDDING_NEXT_PROVIDER == "openai" and not self.EMBEDDING_NEXT_BASE_URL:
            raise ValueError("EMBEDDING_NEXT_PROVIDER=openai needs EMBEDDING_NEXT_BASE_URL")
        if self.EMBEDDING_NEXT_PROVIDER == "local" and self.EMBEDDING_NEXT_DIMENSIONS not in (
            None,
            384,
        ):
            raise ValueError("the local embedding model (EMBEDDING_NEXT_*) has 384 dimensions")
        if self.EMBEDDING_NEXT_PROVIDER == "openai" and not self.EMBEDDING_NEXT_MODEL:
            raise ValueError("EMBEDDING_NEXT_PROVIDER=openai needs EMBEDDING_NEXT_MODEL")
        if self.RERANK_PROVIDER == "http" and not self.RERANK_BASE_URL:
            raise ValueError("RERANK_PROVIDER=http needs RERANK_BASE_URL")
        if self.LLM_PROVIDER == "openai" and not self.LLM_BASE_URL:
            raise ValueError("LLM_PROVIDER=openai needs LLM_BASE_URL")
        if self.WORKING_MEMORY_DEFAULT_TTL > self.WORKING_MEMORY_MAX_TTL:
            raise ValueError("WORKING_MEMORY_DEFAULT_TTL must not exceed WORKING_MEMORY_MAX_TTL")
        if self.SHORT_TERM_DEFAULT_TTL > self.SHORT_TERM_MAX_TTL:
            raise ValueError("SHORT_TERM_DEFAULT_TTL must not exceed SHORT_TERM_MAX_TTL")
        return self

    def https(self, name: str) -> bool | int:
        """An HTTPS setting: as configured, else its production value in production (a clean
        ``manage.py check --deploy``) and off elsewhere."""
        value = getattr(self, name)
        if value is not None:
            return bool(value) if isinstance(value, bool) else int(value)
        production = self.ENGRAM_ENV == "production"
        if name == "SECURE_HSTS_SECONDS":
            return 31_536_000 if production else 0
        return production

    def secret_key(self) -> str:
        """The configured key, or (outside production) one generated once per data directory."""
        if self.SECRET_KEY:
            return self.SECRET_KEY
        from config.embedded.files import read_or_create_secret

        # Processes start together (xdist workers, the launcher's children): one value wins.
        return read_or_create_secret(self.ENGRAM_DATA_DIR / "secret_key", nbytes=50)


def load_env() -> EngramEnv:
    try:
        return EngramEnv()
    except ValidationError as exc:
        lines = [
            f"  {'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}"
            for err in exc.errors()
        ]
        raise SystemExit("Engram configuration is invalid:\n" + "\n".join(lines)) from None
