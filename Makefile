# Conveniences over ./engram, which installs everything it needs on a fresh machine.
.PHONY: run test lint typecheck check

run:
	./engram run

test:
	./engram test

lint:
	uv run --frozen ruff check .
	uv run --frozen ruff format --check .

typecheck:
	uv run --frozen mypy .

check: lint typecheck test
