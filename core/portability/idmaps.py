"""Compact sets and maps of row ids for an import, whose size grows with the archive: the ids
each kind declares (``archive.archive_check``) and the new id of each source row
(``kinds.ImportScope``).

A Python ``set`` or ``dict`` of ints costs about 60 to 100 bytes an id, so a million rows held
tens of megabytes per kind. Exports write each kind's rows in id order, so ids arrive ascending:
they are appended to a machine array (8 bytes an id) and found by bisection. An id that arrives
out of order goes to a small ordinary set or dict beside the array, so any order is still
answered correctly; only memory depends on the order.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator


class IdSet:
    """A set of ids: ``add``, ``in`` and ``len``."""

    __slots__ = ("_others", "_sorted")

    def __init__(self) -> None:
        self._sorted = array("q")
        self._others: set[int] = set()

    def _in_sorted(self, value: int) -> bool:
        index = bisect_left(self._sorted, value)
        return index < len(self._sorted) and self._sorted[index] == value

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        return self._in_sorted(value) or value in self._others

    def add(self, value: int) -> None:
        if not self._sorted or value > self._sorted[-1]:
            self._sorted.append(value)
        elif not self._in_sorted(value):
            self._others.add(value)

    def __len__(self) -> int:
        return len(self._sorted) + len(self._others)

    def __iter__(self) -> Iterator[int]:
        yield from self._sorted
        yield from self._others


class IdMap:
    """A map from a source row's id to its new id: ``m[k] = v``, ``m[k]``, ``get``, ``in``."""

    __slots__ = ("_keys", "_others", "_values")

    def __init__(self) -> None:
        self._keys = array("q")
        self._values = array("q")
        self._others: dict[int, int] = {}

    def _index(self, key: int) -> int | None:
        index = bisect_left(self._keys, key)
        return index if index < len(self._keys) and self._keys[index] == key else None

    def __setitem__(self, key: int, value: int) -> None:
        if not self._keys or key > self._keys[-1]:
            self._keys.append(key)
            self._values.append(value)
            return
        index = self._index(key)
        if index is None:
            self._others[key] = value
        else:
            self._values[index] = value

    def __getitem__(self, key: int) -> int:
        index = self._index(key)
        if index is not None:
            return self._values[index]
        return self._others[key]

    def get(self, key: int, default: int | None = None) -> int | None:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return isinstance(key, int) and (self._index(key) is not None or key in self._others)

    def __len__(self) -> int:
        return len(self._keys) + len(self._others)

    def items(self) -> Iterator[tuple[int, int]]:
        yield from zip(self._keys, self._values, strict=True)
        yield from self._others.items()
