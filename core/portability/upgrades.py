"""Upgrade hooks between format versions: ``UPGRADES[v]`` turns a row of format ``v`` into a
row of format ``v + 1`` (``(kind, row) -> row``). An archive of an older version is upgraded
row by row as it is read; one of a newer version than ``FORMAT_VERSION`` is refused.

Version 1 is the first: the table is empty until a version 2 changes a kind's rows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

FORMAT_VERSION = 1
FORMAT_NAME = "engram-account-export"

Row = dict[str, Any]
Upgrade = Callable[[str, Row], Row]

UPGRADES: dict[int, Upgrade] = {}


def row_upgrade(kind: str, row: Row, *, from_version: int) -> Row:
    """``row`` of ``kind`` written by format ``from_version``, as the current format reads it
    (each hook in turn, from ``from_version`` up to ``FORMAT_VERSION``)."""
    for version in range(from_version, FORMAT_VERSION):
        row = UPGRADES[version](kind, row)
    return row
