"""The import's compact id sets and maps answer exactly as a set and a dict do, whatever order
the ids arrive in; ids in ascending order (as exports write them) take 8 bytes each."""

from __future__ import annotations

import random
import sys

import pytest

from core.portability.idmaps import IdMap, IdSet


@pytest.mark.parametrize("order", ["ascending", "shuffled", "descending"])
def test_they_answer_as_a_set_and_a_dict_do(order: str) -> None:
    rng = random.Random(38)
    keys = sorted(rng.sample(range(1, 10**12), 2_000))
    if order == "shuffled":
        rng.shuffle(keys)
    elif order == "descending":
        keys.reverse()
    ids, mapped, plain = IdSet(), IdMap(), {}
    for number, key in enumerate(keys):
        ids.add(key)
        ids.add(key)  # again: no duplicate
        mapped[key] = plain[key] = number + 1
    mapped[keys[0]] = plain[keys[0]] = -5  # a key written twice keeps its last value
    assert len(ids) == len(mapped) == len(keys)
    assert sorted(ids) == sorted(keys)
    assert dict(mapped.items()) == plain
    absent = [k + 1 for k in keys[:200] if k + 1 not in plain] + [0, -3, 10**13]
    for key in keys:
        assert key in ids and key in mapped and mapped[key] == plain[key]
    for key in absent:
        assert key not in ids and key not in mapped and mapped.get(key) is None
        with pytest.raises(KeyError):
            mapped[key]
    assert "7" not in ids and "7" not in mapped and True not in IdSet()


def test_ascending_ids_are_stored_compactly() -> None:
    ids, mapped = IdSet(), IdMap()
    for key in range(1, 100_001):
        ids.add(key * 3)
        mapped[key * 3] = key
    assert not ids._others and not mapped._others
    assert sys.getsizeof(ids._sorted) < 9 * 100_000
    assert sys.getsizeof(mapped._keys) + sys.getsizeof(mapped._values) < 17 * 100_000
