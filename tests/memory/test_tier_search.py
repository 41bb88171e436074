"""The search across tiers goes through indexes: an old short-term entry behind thousands of
newer ones and a key deep in a large pool are found; the short-term and pool indexes kept by
every write equal a rebuild from scratch; access rules and expiry hold inside the query."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from core.actors import Actor, actor_for_agent
from memory.context.selectors.router import RouterFilters
from memory.context.selectors.search import memory_search
from memory.models import (
    MemoryPool,
    PoolLeaf,
    PoolLeafPosting,
    PoolLeafTerm,
    PoolScope,
    ShortTermEntry,
    ShortTermPosting,
    ShortTermScope,
    ShortTermTerm,
)
from memory.pools import data_services as pool_data
from memory.pools import leaves as pool_index
from memory.pools import services as pool_services
from memory.short_term import services as st
from memory.tier_index import rebuild_pool_index, rebuild_short_term_index
from rag import keyword
from tests.conftest import AuthedAgent
from tests.factories import AgentFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def me() -> Actor:
    return actor_for_agent(AgentFactory.create())


def search(actor: Actor, query: str, **kw: Any) -> list[Any]:
    return memory_search(actor=actor, query=query, **kw).results


# --- finding what is old or deep -------------------------------------------------------------


def test_an_old_short_term_entry_behind_thousands_of_newer_ones_is_found(me: Actor) -> None:
    st.short_term_put(actor=me, session_id="s0", key="vault-code", value="the vault code is 4711")
    for start in range(0, 3000, 1000):
        st.short_term_put_batch(
            actor=me,
            session_id=f"s{start}",
            entries=[
                {"key": f"note-{i}", "value": f"the code review of module {i} is done"}
                for i in range(start, start + 1000)
            ],
        )
    hits = search(me, "vault code", tiers=["short_term"], top_k=3)
    assert hits and hits[0].key == "vault-code" and hits[0].tier == "short_term"
    assert hits[0].content == "the vault code is 4711"


def test_a_key_deep_in_a_large_pool_is_found_as_its_value(me: Actor) -> None:
    data: dict[str, Any] = {f"k{i}": {"status": "open", "owner": f"agent {i}"} for i in range(3000)}
    data["projects"] = {"apollo": {"launch": {"window": "the launch window opens at dawn"}}}
    pool_services.pool_create(actor=me, pool_id="big", data=data)
    (hit,) = search(me, "launch window dawn", tiers=["shared"], top_k=1)
    assert (hit.pool_id, hit.path) == ("big", "projects.apollo.launch.window")
    assert hit.content == "the launch window opens at dawn"
    # Written later, by path, and found by its path's words too.
    pool = MemoryPool.objects.get(pool_id="big")
    pool_data.pool_data_write(actor=me, pool=pool, path="k17.escalation_contact", value="Rui")
    (found,) = search(me, "escalation contact", tiers=["shared"], top_k=1)
    assert (found.path, found.content) == ("k17.escalation_contact", "Rui")


def test_expired_short_term_entries_are_not_found(me: Actor, clock: Any) -> None:
    st.short_term_put(actor=me, session_id="s1", key="fleeting", value="a fleeting thought", ttl=5)
    assert search(me, "fleeting thought", tiers=["short_term"])
    clock.advance(seconds=10)
    assert search(me, "fleeting thought", tiers=["short_term"]) == []


def test_pool_hits_follow_the_access_rules(
    agent_client: AuthedAgent, make_agent_client: Callable[..., AuthedAgent]
) -> None:
    owner = actor_for_agent(agent_client.agent)
    teammate = actor_for_agent(AgentFactory.create(account=agent_client.agent.account))
    intruder = actor_for_agent(AgentFactory.create())
    pool_services.pool_create(actor=owner, pool_id="private", data={"plan": "secret heron plan"})
    pool_services.pool_create(
        actor=intruder, pool_id="theirs", data={"plan": "secret heron plan"}, public_read=True
    )
    assert [h.pool_id for h in search(owner, "heron plan", tiers=["shared"])] == ["private"]
    assert search(teammate, "heron plan", tiers=["shared"]) == []
    pool = MemoryPool.objects.get(pool_id="private")
    assert teammate.agent is not None
    pool_services.pool_grant_set(actor=owner, pool=pool, agent_id=teammate.agent.pk, level="read")
    assert [h.pool_id for h in search(teammate, "heron plan", tiers=["shared"])] == ["private"]
    assert [h.pool_id for h in search(intruder, "heron plan", tiers=["shared"])] == ["theirs"]
    hits = search(owner, "heron plan", tiers=["shared"], filters=RouterFilters(pool_ids=("x",)))
    assert hits == []


def test_a_tier_holding_no_query_term_is_not_searched(me: Actor) -> None:
    """A tier whose corpus holds none of the query's terms (an account without pools: every
    context assembly asks) answers nothing without its access filter or its BM25 statement;
    once a pool holds a term, both run and the pool is found."""
    from django.test.utils import CaptureQueriesContext

    def statements(query: str) -> list[str]:
        with CaptureQueriesContext(connection) as captured:
            search(me, query, tiers=["shared"])
        return [q["sql"] for q in captured.captured_queries]

    quiet = statements("heron plan")
    assert not any("memory_memorypool" in sql for sql in quiet), quiet
    assert len(quiet) == 1  # the corpus statistics only
    pool_services.pool_create(actor=me, pool_id="mine", data={"plan": "the heron plan"})
    assert len(statements("heron plan")) > 1
    assert [h.pool_id for h in search(me, "heron plan", tiers=["shared"])] == ["mine"]
    assert search(me, "osprey", tiers=["shared"]) == []


def test_pools_hidden_among_many_readable_ones_stay_hidden(
    agent_client: AuthedAgent, clock: Any
) -> None:
    """Most pools readable, a few not (private, expired): the filter names the few, and
    none of them is found."""
    owner = actor_for_agent(agent_client.agent)
    teammate = actor_for_agent(AgentFactory.create(account=agent_client.agent.account))
    for n in range(4):
        pool_services.pool_create(
            actor=owner, pool_id=f"open{n}", data={"plan": f"heron plan {n}"}, public_read=True
        )
    pool_services.pool_create(actor=owner, pool_id="private", data={"plan": "heron plan x"})
    pool_services.pool_create(
        actor=owner,
        pool_id="brief",
        data={"plan": "heron plan y"},
        public_read=True,
        retention_policy={"ttl_seconds": 5},
    )
    found = {h.pool_id for h in search(teammate, "heron plan", tiers=["shared"], top_k=20)}
    assert found == {"open0", "open1", "open2", "open3", "brief"}
    clock.advance(seconds=10)
    found = {h.pool_id for h in search(teammate, "heron plan", tiers=["shared"], top_k=20)}
    assert found == {"open0", "open1", "open2", "open3"}
    found = {h.pool_id for h in search(owner, "heron plan", tiers=["shared"], top_k=20)}
    assert found == {"open0", "open1", "open2", "open3", "private"}


def test_many_expired_short_term_entries_are_left_out_through_their_rows(
    me: Actor, clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past EXPIRED_BY_ID expired entries (the clean-up has not run), expiry is checked on each
    entry's row instead of by id: still never found."""
    from memory.context.selectors import search as search_module

    monkeypatch.setattr(search_module, "EXPIRED_BY_ID", 1)
    for key in ("a", "b"):
        st.short_term_put(actor=me, session_id="s1", key=key, value=f"fleeting {key}", ttl=5)
    st.short_term_put(actor=me, session_id="s1", key="c", value="fleeting c", ttl=600)
    clock.advance(seconds=10)
    assert [h.key for h in search(me, "fleeting", tiers=["short_term"])] == ["c"]


@pytest.mark.real_embeddings  # a ranking
def test_hits_of_every_tier_rank_on_one_scale(me: Actor) -> None:
    """The same text in two tiers gets the same keyword score: one idf for every corpus."""
    texts = {"tide": "spring tide at the harbour", "other": "harbour cranes"}
    st.short_term_put_batch(
        actor=me, session_id="s1", entries=[{"key": k, "value": v} for k, v in texts.items()]
    )
    pool_services.pool_create(actor=me, pool_id="p", data=texts)
    hits = search(me, "spring tide harbour", tiers=["short_term", "shared"], top_k=5)
    assert [h.key for h in hits] == ["tide", "tide", "other", "other"]
    assert {h.tier for h in hits[:2]} == {"short_term", "shared"}
    # Equal texts in corpora of equal shape: equal scores, whatever the tier.
    assert hits[0].keyword_score == pytest.approx(hits[1].keyword_score)
    assert hits[2].keyword_score == pytest.approx(hits[3].keyword_score)
    assert hits[3].relevance < hits[0].relevance <= 1


# --- the indexes stay exact ------------------------------------------------------------------


def _state(posting: Any, term: Any, scope: Any, scope_field: str, key: int) -> tuple[Any, ...]:
    df = dict(term.objects.filter(**{scope_field: key}).values_list("term", "df"))
    postings = Counter(
        (row[0], row[1])
        for row in posting.objects.filter(**{scope_field: key}).values_list("term", "tf")
    )
    stats = scope.objects.filter(**{scope_field: key}).values_list(flat=False).first()
    return df, postings, stats


def _short_term_state(agent_id: int) -> tuple[Any, ...]:
    return _state(ShortTermPosting, ShortTermTerm, ShortTermScope, "agent_id", agent_id)


def _pool_state(account_id: int) -> tuple[Any, ...]:
    leaves = sorted(PoolLeaf.objects.filter(account_id=account_id).values_list("pool_id", "path"))
    return (
        leaves,
        *_state(PoolLeafPosting, PoolLeafTerm, PoolScope, "account_id", account_id),
    )


def test_the_short_term_index_equals_a_rebuild_after_every_kind_of_write(
    me: Actor, clock: Any
) -> None:
    assert me.agent is not None
    st.short_term_put_batch(
        actor=me,
        session_id="s1",
        entries=[{"key": f"k{i}", "value": f"value {i} of the batch"} for i in range(20)],
    )
    st.short_term_put(actor=me, session_id="s1", key="k3", value={"replaced": "by json"})
    st.short_term_remove(actor=me, session_id="s1", key="k4")
    st.short_term_put(actor=me, session_id="s2", key="short", value="gone soon", ttl=1)
    clock.advance(seconds=5)
    st.short_term_put(actor=me, session_id="s2", key="short", value="back again")
    st.short_term_put(actor=me, session_id="s2", key="expiring", value="will be pruned", ttl=1)
    clock.advance(seconds=5)
    st.short_term_prune_expired()
    kept = _short_term_state(me.agent.pk)
    rebuild_short_term_index(agent_id=me.agent.pk)
    assert _short_term_state(me.agent.pk) == kept
    assert kept[2][1] == ShortTermEntry.objects.filter(agent=me.agent).count()


def test_the_pool_index_equals_a_rebuild_after_every_kind_of_write(me: Actor) -> None:
    assert me.agent is not None
    pool = pool_services.pool_create(
        actor=me, pool_id="p1", data={"a": {"b": 1, "c": [1, 2]}, "d": "text", "e": {}}
    )
    for path, value, mode in (
        ("a.b", "now a string", "write"),
        ("a.c", None, "delete"),
        ("a.new.deep", {"x": "y"}, "write"),
        ("d", {"sub": "d was a scalar"}, "write"),
        ("a", {"merged": True, "b": None}, "merge"),
        ("", {"fresh": {"start": "here"}}, "write"),
        ("fresh.start", None, "delete"),
        ("weird", {"has space": 1}, "write"),
    ):
        pool_data.pool_data_write(actor=me, pool=pool, path=path, value=value, mode=mode)
    other = pool_services.pool_create(actor=me, pool_id="p2", data={"x": "to be deleted"})
    pool_services.pool_delete(actor=me, pool=other)
    kept = _pool_state(me.agent.account_id)
    rebuild_pool_index(account_id=me.agent.account_id)
    assert _pool_state(me.agent.account_id) == kept
    assert [path for _, path in kept[0]] == ["fresh", "weird"]


def test_deleting_an_account_takes_its_indexes_with_it(me: Actor) -> None:
    assert me.agent is not None
    st.short_term_put(actor=me, session_id="s", key="k", value="v")
    pool_services.pool_create(actor=me, pool_id="p", data={"a": "b"})
    me.agent.account.delete()
    with connection.cursor() as cursor:
        for table in ("memory_shorttermposting", "memory_poolleaf", "memory_poolleafposting"):
            cursor.execute(f"SELECT count(*) FROM {table}")  # noqa: S608
            assert cursor.fetchone()[0] == 0, table


# --- the pure parts --------------------------------------------------------------------------


def test_leaves_are_the_values_a_dot_path_reads() -> None:
    data = {"a": {"b": 1, "c": [1, 2], "d": {}}, "x y": {"z": 1}, "s": "text"}
    assert dict(pool_index.leaves({"a": data["a"], "s": "t"})) == {
        "a.b": 1,
        "a.c": [1, 2],
        "a.d": {},
        "s": "t",
    }
    # A key no dot path can name: its object is one leaf, as deep as a client can read.
    assert list(pool_index.leaves(data)) == [("", data)]
    assert pool_index.leaf_text("customer.email_domain", "acme.com") == (
        "customer email domain\nacme.com"
    )


def test_a_write_changes_only_its_region() -> None:
    before = {"a": {"b": 1, "c": 2}, "big": {f"k{i}": i for i in range(100)}}
    after = {"a": {"b": 1, "c": 3}, "big": before["big"]}
    removed, added = pool_index.region_changes(
        pool_index.region(before, "a.c"), pool_index.region(after, "a.c")
    )
    assert removed == ["a.c"] and list(added) == ["a.c"]
    # A scalar ancestor replaced by an object, an object emptied by a delete.
    removed, added = pool_index.region_changes(
        pool_index.region({"a": 5}, "a.b"), pool_index.region({"a": {"b": 1}}, "a.b")
    )
    assert removed == ["a"] and list(added) == ["a.b"]
    removed, added = pool_index.region_changes(
        pool_index.region({"a": {"b": 1}}, "a.b"), pool_index.region({"a": {}}, "a.b")
    )
    assert removed == ["a.b"] and list(added) == ["a"]


def test_in_memory_bm25_matches_the_index(me: Actor) -> None:
    """Working memory's BM25 (in memory) and the index's give the same scores."""
    assert me.agent is not None
    texts = ["spring tide harbour", "harbour cranes and tide", "nothing", "tide tide tide"]
    st.short_term_put_batch(
        actor=me,
        session_id="s",
        entries=[{"key": f"k{i}", "value": text} for i, text in enumerate(texts)],
    )
    from memory.spaces import SHORT_TERM_ENTRIES, short_term_text

    indexed = keyword.keyword_search(
        space=SHORT_TERM_ENTRIES, scope_ids=[me.agent.pk], query="tide harbour", limit=10
    )
    by_key = dict(ShortTermEntry.objects.values_list("pk", "key"))
    in_memory = keyword.bm25_rank(
        query="tide harbour", texts=[short_term_text(f"k{i}", t) for i, t in enumerate(texts)]
    )
    assert [(by_key[h.unit_id], round(h.score, 6)) for h in indexed] == [
        (f"k{h.unit_id}", round(h.score, 6)) for h in in_memory
    ]
