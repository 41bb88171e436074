"""What a database error answers, on real PostgreSQL errors: an outage is 503
``store_unavailable``; a deadlock is retried, whole transaction, and answers 409
``concurrent_update`` only once the retries are spent; a statement timeout is 503
``query_timeout`` (docs/api.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from django.db import DatabaseError, OperationalError, connection, connections, transaction

from core import transactions
from core.errors import error_answer
from core.transactions import database_error_kind, retry_on_conflict, sqlstate_of

pytestmark = pytest.mark.django_db(transaction=True)


def _row_table() -> None:
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS test_conflict_rows (id int PRIMARY KEY, n int)")
        cursor.execute("TRUNCATE test_conflict_rows")
        cursor.execute("INSERT INTO test_conflict_rows VALUES (1, 0), (2, 0)")


def _bump(first: int, second: int, between: Callable[[], None]) -> None:
    """One transaction updating two rows, in the order given, ``between`` the two."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE test_conflict_rows SET n = n + 1 WHERE id = %s", [first])
        between()
        cursor.execute("UPDATE test_conflict_rows SET n = n + 1 WHERE id = %s", [second])


def _deadlock(wrap: Callable[[Callable[..., None]], Callable[..., None]]) -> list[BaseException]:
    """Two transactions that lock two rows in opposite orders, each waiting until the other
    holds its first row: PostgreSQL breaks the cycle by ending one of them (40P01)."""
    _row_table()
    both = threading.Barrier(2)
    errors: list[BaseException] = []
    first_round = {1: True, 2: True}

    def between(which: int) -> Callable[[], None]:
        def wait() -> None:
            if first_round[which]:  # only the first attempt meets the other one
                first_round[which] = False
                both.wait(timeout=10)

        return wait

    def run(which: int) -> None:
        try:
            order = (1, 2) if which == 1 else (2, 1)
            wrap(_bump)(*order, between(which))
        except BaseException as exc:
            errors.append(exc)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return errors


def test_a_deadlock_is_a_conflict_with_its_sqlstate() -> None:
    (error,) = _deadlock(lambda f: f)
    assert isinstance(error, OperationalError)
    assert sqlstate_of(error) == "40P01"
    assert transactions.is_retryable(error)
    answer = error_answer(error)
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (409, "concurrent_update")
    assert answer.headers["Retry-After"] == "1"


def test_a_deadlocked_transaction_runs_again_and_both_succeed() -> None:
    assert _deadlock(retry_on_conflict) == []
    with connection.cursor() as cursor:
        cursor.execute("SELECT n FROM test_conflict_rows ORDER BY id")
        assert [row[0] for row in cursor.fetchall()] == [2, 2]


def test_retries_are_bounded_then_the_conflict_is_answered(settings: Any) -> None:
    settings.DATABASE_CONFLICT_RETRIES = 2
    calls = []

    @retry_on_conflict
    def always_deadlocked() -> None:
        calls.append(1)
        with transaction.atomic():
            raise OperationalError("deadlock detected") from psycopg.errors.DeadlockDetected()

    with pytest.raises(OperationalError):
        always_deadlocked()
    assert len(calls) == 3
    # Inside a caller's transaction only the caller can run it again: once.
    calls.clear()
    with pytest.raises(OperationalError), transaction.atomic():
        always_deadlocked()
    assert len(calls) == 1


def test_a_statement_timeout_is_its_own_503() -> None:
    with (
        pytest.raises(OperationalError) as caught,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute("SET LOCAL statement_timeout = '20ms'")
        cursor.execute("SELECT pg_sleep(2)")
    assert sqlstate_of(caught.value) == "57014"
    answer = error_answer(caught.value)
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (503, "query_timeout")


def test_only_an_unreachable_server_is_store_unavailable(tmp_path: Any) -> None:
    with pytest.raises(psycopg.OperationalError) as caught:
        psycopg.connect(host=str(tmp_path), dbname="x", connect_timeout=2)
    assert database_error_kind(caught.value) == transactions.OUTAGE
    wrapped = OperationalError(str(caught.value))
    wrapped.__cause__ = caught.value
    answer = error_answer(wrapped)
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (503, "store_unavailable")
    assert answer.body["error"]["details"] == {"store": "database"}
    # A server shutting down (57P01) is an outage too; too many connections is overloaded.
    assert database_error_kind(psycopg.errors.AdminShutdown()) == transactions.OUTAGE
    assert database_error_kind(psycopg.errors.TooManyConnections()) == transactions.OVERLOADED
    # Any other database error is a bug: no 503 for it.
    assert database_error_kind(psycopg.errors.UndefinedTable()) is None


def _refusal(*statements: tuple[str, list[Any]]) -> DatabaseError:
    """The error the database (or its driver) raises for the last of ``statements``."""
    with (
        pytest.raises(DatabaseError) as caught,
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        for sql, params in statements:
            cursor.execute(sql, params)
    return caught.value


@pytest.mark.django_db
def test_a_value_or_constraint_the_database_refuses_is_the_callers_4xx() -> None:
    """A check missing in a service must not turn a bad request into a 500: the database's
    refusal of a value (class 22) is 400 ``invalid_value``, of a constraint no service named
    (class 23) 409 ``constraint_conflict``."""
    answer = error_answer(_refusal(("SELECT %s::text", ["a\x00b"])))
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (400, "invalid_value")
    assert answer.body["error"]["details"]["sqlstate"] in {None, "22021"}

    answer = error_answer(_refusal(("SELECT %s::int", [2**40])))
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (400, "invalid_value")

    answer = error_answer(
        _refusal(
            ("CREATE TEMP TABLE t_unique (v int UNIQUE)", []),
            ("INSERT INTO t_unique VALUES (1), (1)", []),
        )
    )
    assert answer is not None
    assert (answer.status, answer.body["error"]["code"]) == (409, "constraint_conflict")
