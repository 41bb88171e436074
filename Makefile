# The first two targets are the README's two commands; both install everything they need.
UV ?= $(shell command -v uv 2>/dev/null || echo $(HOME)/.local/bin/uv)
PYTEST_ARGS ?=

.PHONY: run test lint typecheck bootstrap-uv sync

run: sync  ## Run Engram on its embedded defaults (PostgreSQL+pgvector, Valkey, web, worker, beat)
	$(UV) run --frozen python -m config.launcher

test: sync  ## Run the full test suite (starts its own embedded servers unless DATABASE_URL/REDIS_URL are set)
	$(UV) run --frozen pytest $(PYTEST_ARGS)

lint: sync
	$(UV) run --frozen ruff check .
	$(UV) run --frozen ruff format --check .

typecheck: sync
	$(UV) run --frozen mypy .

sync: bootstrap-uv
	$(UV) sync --frozen

bootstrap-uv:
	@test -x "$(UV)" || python3 -m pip install --user --quiet "uv>=0.5"
