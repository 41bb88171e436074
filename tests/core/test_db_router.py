"""The read-replica settings and the router's statement check, without a replica (the router
against a real replica: tests/core/test_db_replicas.py)."""

from __future__ import annotations

import pytest

from config.env import EngramEnv, load_env
from core.db_router import statement_writes


@pytest.mark.parametrize(
    ("sql", "writes"),
    [
        ("SELECT 1", False),
        ("  select id FROM x FOR UPDATE", False),
        ("WITH t AS (SELECT 1) SELECT * FROM t", False),
        ("WITH t AS (DELETE FROM x RETURNING id) SELECT * FROM t", True),
        ("SAVEPOINT s1", False),
        ("INSERT INTO x VALUES (1)", True),
        ("UPDATE x SET a = 1", True),
        ("DELETE FROM x", True),
        ("COPY x FROM STDIN", True),
        ("CREATE TABLE y (a int)", True),
        ("", True),
    ],
)
def test_statements_that_may_write_are_told_apart(sql: str, writes: bool) -> None:
    assert statement_writes(sql) is writes


def test_replica_urls_are_comma_separated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(
        "DATABASE_REPLICA_URLS",
        "postgresql://u:p@replica-a:5432/engram, postgres://u@/engram?host=/run/pg ,",
    )
    assert EngramEnv().DATABASE_REPLICA_URLS == [
        "postgresql://u:p@replica-a:5432/engram",
        "postgres://u@/engram?host=/run/pg",
    ]
    monkeypatch.delenv("DATABASE_REPLICA_URLS")
    assert EngramEnv().DATABASE_REPLICA_URLS == []


@pytest.mark.parametrize(
    ("urls", "problem"),
    [
        ("mysql://u:secret@db/engram", "replica 1: the scheme must be postgres://"),
        ("postgresql://u@a/engram,postgresql://u:secret@b:5432", "replica 2: the URL names no"),
        ("postgresql://u:secret@b:port/engram", "replica 1: not a URL"),
        ("postgresql:///engram", "replica 1: the URL names no host"),
        (",".join(["postgresql://h/engram"] * 17), "at most 16 replicas"),
    ],
)
def test_bad_replica_urls_stop_start_up_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, urls: str, problem: str
) -> None:
    monkeypatch.setenv("DATABASE_REPLICA_URLS", urls)
    with pytest.raises(SystemExit) as exc:
        load_env()
    message = str(exc.value)
    assert "DATABASE_REPLICA_URLS" in message and problem in message
    assert "secret" not in message  # a password in a URL is never echoed
