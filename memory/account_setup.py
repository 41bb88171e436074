"""What memory makes for a new account (``core.services.accounts.account_setup``)."""

from __future__ import annotations

from memory.pools.services import pool_default_ensure


def account_setup(*, account_id: int) -> None:
    """Every account has a ``default`` pool, shared and public to its agents."""
    pool_default_ensure(account_id)
