"""``engram_client.langgraph.EngramStore``, LangGraph's long-term memory store on Engram, against
a live server (pytest-django's live server, as the client's own tests): items put, read,
changed and deleted; search by meaning within a namespace prefix, with filters and pages;
namespaces listed; the async path; tenancy from the API key; and a compiled LangGraph graph
whose node remembers and recalls through ``store``."""

from __future__ import annotations

import asyncio
import operator
import re
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, Item, PutOp

from tests.clients.conftest import CLIENT, api_key
from tests.factories import AgentFactory

from engram_client import AsyncEngram, Engram, NotFoundError  # isort: skip
from engram_client.langgraph import EngramStore  # isort: skip

pytestmark = [pytest.mark.django_db(transaction=True)]


@pytest.fixture
def store(client: Engram) -> EngramStore:
    return EngramStore(client)


def test_put_get_update_and_delete(store: EngramStore, client: Engram) -> None:
    assert isinstance(store, BaseStore)
    namespace = ("users", "ada lovelace", "préférences")  # any label, kept exactly
    assert store.get(namespace, "style") is None
    store.put(namespace, "style", {"answers": "short", "examples": True})
    item = store.get(namespace, "style")
    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (
        namespace,
        "style",
        {"answers": "short", "examples": True},
    )
    assert item.created_at == item.updated_at

    store.put(namespace, "style", {"answers": "long"})
    changed = store.get(namespace, "style")
    assert changed is not None and changed.value == {"answers": "long"}
    assert changed.created_at == item.created_at and changed.updated_at > item.updated_at
    # One entry lineage with two versions in the store's context.
    context_id = store._context_id
    assert context_id is not None
    (entry,) = list(client.memories.long_term.contexts.entries(context_id))
    assert entry["version"] == 2
    assert [v["version"] for v in client.memories.long_term.versions(entry["id"])] == [2, 1]
    # The new version keeps its lookup key and namespace tags: found by key and by prefix.
    (hit,) = store.search(("users",), query="long answers")
    assert (hit.namespace, hit.key, hit.value) == (namespace, "style", {"answers": "long"})

    # The same key in another namespace, and a key Engram's names would refuse, are their own.
    store.put(("users", "ada lovelace"), "style", {"answers": "medium"})
    store.put(namespace, "weird / key ☃", {"ok": 1})
    assert store.get(namespace, "weird / key ☃").value == {"ok": 1}  # type: ignore[union-attr]
    assert store.get(namespace, "style").value == {"answers": "long"}  # type: ignore[union-attr]

    store.delete(namespace, "style")
    assert store.get(namespace, "style") is None
    with pytest.raises(NotFoundError):  # really deleted, every version
        client.memories.long_term.retrieve(entry["id"])
    assert store.get(("users", "ada lovelace"), "style") is not None
    store.delete(namespace, "style")  # deleting what is gone is a no-op, as in LangGraph


def test_search_by_meaning_filter_and_pages(store: EngramStore) -> None:
    facts = {
        "harbour": {"text": "The ferry to the harbour leaves at seven every morning.", "n": 1},
        "cake": {"text": "Ada's favourite cake is lemon drizzle with poppy seeds.", "n": 2},
        "deploy": {"text": "Deployments are frozen on Fridays after noon.", "n": 3},
    }
    for key, value in facts.items():
        store.put(("memories", "ada"), key, value)
    store.put(("memories", "bob"), "cake", {"text": "Bob bakes chocolate cake.", "n": 4})
    store.put(("other",), "cake", {"text": "Carrot cake recipe.", "n": 5})

    hits = store.search(("memories", "ada"), query="what dessert does Ada like?", limit=3)
    assert hits[0].key == "cake" and hits[0].namespace == ("memories", "ada")
    assert hits[0].score is not None and hits[0].score >= hits[-1].score  # type: ignore[operator]
    assert {h.namespace for h in hits} == {("memories", "ada")}

    under = store.search(("memories",), query="cake", limit=10)
    assert {h.namespace for h in under} == {("memories", "ada"), ("memories", "bob")}
    assert ("other",) not in {h.namespace for h in store.search(("memories",), query="carrot")}

    # filter: exact, on the values (applied in the client), with or without a query.
    assert [h.key for h in store.search(("memories",), filter={"n": 3})] == ["deploy"]
    big = store.search(("memories",), query="cake", filter={"n": {"$gte": 4}})
    assert [(h.namespace, h.key) for h in big] == [(("memories", "bob"), "cake")]
    assert store.search(("memories",), filter={"n": 99}) == []

    # Without a query: newest first, limit and offset honoured.
    listed = store.search(("memories",), limit=10)
    assert [h.value["n"] for h in listed] == [4, 3, 2, 1]
    assert all(h.score is None for h in listed)
    assert [h.value["n"] for h in store.search(("memories",), limit=2, offset=1)] == [3, 2]
    assert len(store.search((), limit=10)) == 5
    ranked = store.search(("memories", "ada"), query="ferry harbour", limit=1, offset=1)
    assert len(ranked) == 1 and ranked[0].key != "harbour"


def test_namespaces_listed_with_prefix_suffix_and_depth(store: EngramStore) -> None:
    for namespace in [
        ("users", "ada", "prefs"),
        ("users", "ada", "facts"),
        ("users", "bob", "prefs"),
        ("teams", "ops"),
    ]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces() == [
        ("teams", "ops"),
        ("users", "ada", "facts"),
        ("users", "ada", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(prefix=("users",), max_depth=2) == [
        ("users", "ada"),
        ("users", "bob"),
    ]
    assert store.list_namespaces(suffix=("prefs",)) == [
        ("users", "ada", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(prefix=("users", "*", "prefs")) == [
        ("users", "ada", "prefs"),
        ("users", "bob", "prefs"),
    ]
    assert store.list_namespaces(max_depth=1, limit=1, offset=1) == [("users",)]
    store.delete(("teams", "ops"), "k")
    assert ("teams", "ops") not in store.list_namespaces()


def test_the_async_path(live_server: Any, agent: Any) -> None:
    secret = api_key(agent)

    async def run() -> None:
        with Engram(base_url=live_server.url, api_key=secret) as sync:
            async with AsyncEngram(base_url=live_server.url, api_key=secret) as client:
                for store in (EngramStore(sync, async_client=client), EngramStore(sync)):
                    await store.aput(("notes",), "tide", {"text": "High tide is at 14:10."})
                    item = await store.aget(("notes",), "tide")
                    assert item is not None and item.value["text"].startswith("High tide")
                    hits = await store.asearch(("notes",), query="when is high tide?")
                    assert hits[0].key == "tide"
                    assert await store.alist_namespaces() == [("notes",)]
                    await store.adelete(("notes",), "tide")
                    assert await store.aget(("notes",), "tide") is None

    asyncio.run(run())


def test_tenancy_comes_from_the_api_key(live_server: Any, store: EngramStore) -> None:
    store.put(("secrets",), "vault", {"code": "4521"})
    stranger = AgentFactory.create()  # another agent, in another account
    assert stranger.account_id != store.client.agents.me()["account"]["id"]
    with Engram(base_url=live_server.url, api_key=api_key(stranger)) as other:
        theirs = EngramStore(other)
        assert theirs.get(("secrets",), "vault") is None
        assert theirs.search(("secrets",), query="vault code") == []
        assert theirs.list_namespaces() == []
        # Naming the first store's context does not help: it is another account's.
        intruder = EngramStore(other, context_id=store._context_id)
        with pytest.raises(NotFoundError) as caught:
            intruder.search(("secrets",), query="vault code")
        assert caught.value.code == "context_not_found"
    assert store.get(("secrets",), "vault") is not None


def test_the_text_engram_embeds_follows_langgraphs_index() -> None:
    store = EngramStore(Engram(base_url="http://127.0.0.1:9", api_key="eng_unused"))
    value = {"title": "Tides", "body": {"text": "High tide at noon"}, "n": 1}
    whole = store._content(PutOp(("a",), "k", value), value)
    assert whole == '{"body": {"text": "High tide at noon"}, "n": 1, "title": "Tides"}'
    assert store._content(PutOp(("a",), "k", value, index=["title", "body.text"]), value) == (
        "Tides\nHigh tide at noon"
    )
    assert store._content(PutOp(("a",), "k", value, index=False), value) == "k"
    fields = EngramStore(store.client, index_fields=["body.text"])
    assert fields._content(PutOp(("a",), "k", value), value) == "High tide at noon"


class State(TypedDict):
    user: str
    said: str
    replies: Annotated[list[str], operator.add]


def test_a_langgraph_graph_remembers_through_the_store(store: EngramStore) -> None:
    def remember(state: State, *, store: BaseStore) -> dict[str, Any]:
        store.put(("users", state["user"]), "latest", {"said": state["said"]})
        return {}

    def recall(state: State, *, store: BaseStore) -> dict[str, Any]:
        hits = store.search(("users", state["user"]), query=state["said"], limit=1)
        return {"replies": [f"you said: {hits[0].value['said']}" if hits else "nothing yet"]}

    builder = StateGraph(State)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    graph = builder.compile(store=store)

    out = graph.invoke({"user": "ada", "said": "I moved to Lisbon in May", "replies": []})
    assert out["replies"] == ["you said: I moved to Lisbon in May"]
    assert store.get(("users", "ada"), "latest").value == {  # type: ignore[union-attr]
        "said": "I moved to Lisbon in May"
    }


def test_the_readme_example_runs_as_written(
    live_server: Any, agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (CLIENT / "README.md").read_text()
    section = readme.split("## LangGraph store", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    monkeypatch.setenv("ENGRAM_URL", live_server.url)
    monkeypatch.setenv("ENGRAM_API_KEY", api_key(agent))
    scope: dict[str, Any] = {}
    exec(compile(block, "README.md", "exec"), scope)  # noqa: S102 - the README's own code
    store = scope["store"]
    assert store.get(("users", "ada"), "prefs") is None
    assert store.list_namespaces() == []
