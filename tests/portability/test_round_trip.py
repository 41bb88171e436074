"""Export and import of an account (docs/portability.md): the round trip over data of every
covered kind, the archive's checks (tampered, truncated, broken and future files: clear errors,
nothing written), idempotency, upgrades, vectors, and tenancy (an intruder with data)."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from content.models import DailySummary, Page
from content.selectors import backlinks, broken_links
from core.actors import actor_for_account, actor_for_agent
from core.errors import Conflict, ValidationFailed
from core.models import Account, Agent, AuditEvent, Team
from core.portability import upgrades
from core.portability.services import account_export, account_import
from memory.knowledge.selectors import item_relationships, knowledge_search
from memory.long_term.selectors import long_term_search
from memory.models import (
    Conversation,
    KnowledgeItem,
    KnowledgeSource,
    MemoryContext,
    MemoryContextGrant,
    MemoryEntry,
    MemoryPool,
    MemoryPoolEvent,
    MemoryPoolGrant,
    PendingIndex,
    PoolLeaf,
    ShortTermEntry,
    ShortTermScope,
)
from rag.graph.models import GraphEdge, GraphNode
from rag.graph.nodes import node_search
from rag.graph.walks import neighbours
from rag.models import Chunk, Document, KnowledgeBase
from rag.search import chunk_search
from skills.models import (
    AgentSkill,
    AgentTrust,
    LearningProfile,
    Skill,
    SkillProposal,
    SkillUsage,
    SkillVersion,
)
from skills.selectors.catalog import skill_discover
from tests.portability.world import World, world_build

pytestmark = pytest.mark.django_db

MARKER = "ALPHA"
INTRUDER = "INTRUDER"
REF = re.compile(r"^(?P<kind>[\w.]+):(?P<id>\d+)$")
NAMED_BY_ID = re.compile(r"^(agent|conversation):(\d+)$")
KIND_OF = {"agent": "core.agent", "conversation": "memory.conversation"}
IN_CONTEXT = re.compile(r" \(context (\d+)\)$")
METADATA_IDS = {"skill_id": "skills.skill", "content_id": "content.page"}


@pytest.fixture
def world(django_capture_on_commit_callbacks: Any) -> World:
    world_build("intruder", INTRUDER, django_capture_on_commit_callbacks)
    return world_build("alpha", MARKER, django_capture_on_commit_callbacks)


def export(account: Account, out: Path, **options: Any) -> Path:
    account_export(actor=actor_for_account(account.pk), account=account, out=out, **options)
    return out


def files_of(path: Path) -> dict[str, bytes]:
    with tarfile.open(path, "r:gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def repack(path: Path, files: dict[str, bytes], out: Path) -> Path:
    with tarfile.open(out, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out


def normalised(path: Path, *, times: bool = False) -> dict[str, list[dict[str, Any]]]:
    """The archive's rows with ids, references, lineages, ids inside names and times replaced
    by their order of appearance: what must be equal between two exports of equal data."""
    files = files_of(path)
    manifest = json.loads(files["manifest.json"])
    rows = {
        entry["name"]: [json.loads(line) for line in files[entry["file"]].splitlines()]
        for entry in manifest["kinds"]
    }
    order = {kind: {row["id"]: n for n, row in enumerate(found, 1)} for kind, found in rows.items()}
    lineages: dict[str, int] = {}

    def norm(key: str, value: Any) -> Any:
        if isinstance(value, dict) and set(value) == {"ref"}:
            match = REF.match(value["ref"])
            assert match is not None
            return f"{match['kind']}#{order[match['kind']][int(match['id'])]}"
        if isinstance(value, list):
            return [norm(key, item) for item in value]
        if key == "lineage":
            return lineages.setdefault(value, len(lineages) + 1)
        if isinstance(value, str) and (match := NAMED_BY_ID.match(value)):
            return f"{match[1]}#{order[KIND_OF[match[1]]].get(int(match[2]))}"
        if key == "name" and isinstance(value, str) and (match := IN_CONTEXT.search(value)):
            return f"{value[: match.start()]} (context #{order['memory.context'][int(match[1])]})"
        if key == "metadata" and isinstance(value, dict):  # the owners' ids in the graph's
            return {k: norm(k, v) for k, v in value.items()}
        if key in METADATA_IDS and isinstance(value, int):
            return f"{METADATA_IDS[key]}#{order[METADATA_IDS[key]].get(value)}"
        return value

    return {
        kind: [
            {
                key: norm(key, value)
                for key, value in row.items()
                if key != "id" and (times or not key.endswith("_at"))
            }
            for row in found
        ]
        for kind, found in rows.items()
    }


def counts(account: Account) -> dict[str, int]:
    return {
        "teams": Team.objects.filter(account=account).count(),
        "agents": Agent.objects.filter(account=account).count(),
        "contexts": MemoryContext.objects.filter(account=account).count(),
        "grants": MemoryContextGrant.objects.filter(context__account=account).count(),
        "entries": MemoryEntry.objects.filter(account=account).count(),
        "conversations": Conversation.objects.filter(account=account).count(),
        "short_term": ShortTermEntry.objects.filter(account=account).count(),
        "knowledge_items": KnowledgeItem.objects.filter(account=account).count(),
        "knowledge_sources": KnowledgeSource.objects.filter(account=account).count(),
        "pages": Page.objects.filter(account=account).count(),
        "summaries": DailySummary.objects.filter(account=account).count(),
        "skills": Skill.objects.filter(account=account).count(),
        "skill_versions": SkillVersion.objects.filter(account=account).count(),
        "agent_skills": AgentSkill.objects.filter(account=account).count(),
        "pools": MemoryPool.objects.filter(account=account).count(),
        "pool_grants": MemoryPoolGrant.objects.filter(pool__account=account).count(),
        "pool_events": MemoryPoolEvent.objects.filter(account=account).count(),
        "pool_leaves": PoolLeaf.objects.filter(account=account).count(),
        "knowledge_bases": KnowledgeBase.objects.filter(account=account).count(),
        "documents": Document.objects.filter(account=account).count(),
        "indexed_documents": Document.objects.filter(account=account, status="indexed").count(),
        "chunks": Chunk.objects.filter(account=account).count(),
        "graph_nodes": GraphNode.objects.filter(account=account).count(),
        "graph_edges": GraphEdge.objects.filter(account=account).count(),
        "proposals": SkillProposal.objects.filter(account=account).count(),
        "usage": SkillUsage.objects.filter(account=account).count(),
        "profiles": LearningProfile.objects.filter(account=account).count(),
        "trust": AgentTrust.objects.filter(account=account).count(),
    }


def import_as(path: Path, slug: str, capture: Any) -> Any:
    with capture(execute=True):  # the index runs after the commit (Celery is eager in tests)
        return account_import(path=path, account_slug=slug)


def test_round_trip_export_import_export_is_equal(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    first = export(world.account, tmp_path / "a.tar.gz")
    report = import_as(first, "beta", django_capture_on_commit_callbacks)
    beta = report.account
    assert counts(beta) == counts(world.account)
    assert all(counts(beta).values())
    second = export(beta, tmp_path / "b.tar.gz")
    assert normalised(first) == normalised(second)
    # Lossless: the times travel too (created, updated, archived, accessed).
    assert normalised(first, times=True) == normalised(second, times=True)

    # Searches answer the same in both accounts, by keyword and by meaning.
    alice_b = Agent.objects.get(account=beta, name="alice")
    for query in ("when do deploys run?", "launch date", "tea or coffee"):
        in_a = long_term_search(actor=world.alice_actor, query=query, top_k=5)
        in_b = long_term_search(actor=actor_for_agent(alice_b), query=query, top_k=5)
        assert [h.entry.content for h in in_a.hits] == [h.entry.content for h in in_b.hits]
        assert in_b.hits
    for query in ("when is the launch", "June"):
        found_a = knowledge_search(actor=world.alice_actor, query=query)
        found_b = knowledge_search(actor=actor_for_agent(alice_b), query=query)
        assert [h.item.content for h in found_a.hits] == [h.item.content for h in found_b.hits]
        assert found_b.hits
    assert not KnowledgeItem.objects.filter(
        account=beta, is_current=True, embedding__isnull=True
    ).exists()
    # Skills rank the same, embedded and back in the graph.
    skills_a, skills_b = (
        skill_discover(actor=actor, description="release a service", statuses=["draft"])
        for actor in (world.alice_actor, actor_for_agent(alice_b))
    )
    assert [h.skill.name for h in skills_a] == [h.skill.name for h in skills_b]
    assert skills_b
    assert not Skill.objects.filter(account=beta, graph_node__isnull=True).exists()
    assert not Skill.objects.filter(account=beta, embedding__isnull=True).exists()
    # Wikilinks follow: backlinks and broken links answer the same.
    for title in ("Plan", "Launch"):
        page_a = Page.objects.get(account=world.account, title=title)
        page_b = Page.objects.get(account=beta, title=title)
        assert [p.title for p in backlinks(page=page_b)] == [
            p.title for p in backlinks(page=page_a)
        ]
        assert [i.title for i in broken_links(page=page_b)] == [
            i.title for i in broken_links(page=page_a)
        ]
    assert [p.title for p in backlinks(page=Page.objects.get(account=beta, title="Plan"))] == [
        "Launch"
    ]
    # Nothing waits for its index, and the agent's own memory follows its new id.
    assert not PendingIndex.objects.filter(context__account=beta).exists()
    assert MemoryContext.objects.get(owner=alice_b, is_agent_memory=True).name == (
        f"agent:{alice_b.pk}"
    )
    conversation = Conversation.objects.get(account=beta)
    assert (
        MemoryEntry.objects.filter(
            context_id=conversation.context_id, thread=f"conversation:{conversation.pk}"
        ).count()
        == 2
    )
    assert ShortTermScope.objects.get(agent=alice_b).entry_count == 1
    # Pools: the default pool took the archive's data, the index covers every leaf.
    default = MemoryPool.objects.get(account=beta, pool_id="default")
    assert default.data == {"note": f"{MARKER} shared note"}
    # The grant follows: bob of beta reads alice's notes of beta.
    bob_b = Agent.objects.get(account=beta, name="bob")
    assert MemoryContextGrant.objects.get(agent=bob_b).context.account_id == beta.pk
    _documents_and_graph_answer_the_same(world, beta, alice_b)


def _documents_and_graph_answer_the_same(world: World, beta: Account, alice_b: Agent) -> None:
    """Documents (hybrid search), the graph (alias search, neighbours), knowledge-item
    relationships and skills' learning answer the same in A and B, and B's answers are B's rows
    only (ids and scope ids, not just text)."""
    actor_a, actor_b = world.alice_actor, actor_for_agent(alice_b)
    beta_bases = set(KnowledgeBase.objects.filter(account=beta).values_list("pk", flat=True))
    beta_documents = set(Document.objects.filter(account=beta).values_list("pk", flat=True))
    beta_chunks = set(Chunk.objects.filter(account=beta).values_list("pk", flat=True))
    assert not Document.objects.filter(account=beta).exclude(status="indexed").exists()
    for query in ("how do I roll back a deploy", "what is an error budget"):
        in_a = chunk_search(actor=actor_a, query=query, mode="hybrid", top_k=5).hits
        in_b = chunk_search(actor=actor_b, query=query, mode="hybrid", top_k=5).hits
        assert in_b
        assert [(h.document_title, h.text) for h in in_a] == [
            (h.document_title, h.text) for h in in_b
        ]
        assert {h.knowledge_base_id for h in in_b} <= beta_bases
        assert {h.document_id for h in in_b} <= beta_documents
        assert {h.chunk_id for h in in_b} <= beta_chunks
    # The graph: a node found by its alias, and its neighbours by typed edges.
    found_a = node_search(actor=actor_a, query="Lind", entity_type="person")
    found_b = node_search(actor=actor_b, query="Lind", entity_type="person")
    assert [h.node.name for h in found_b] == [h.node.name for h in found_a]
    assert found_b[0].node.name == "Jonas Lind"
    assert {h.node.account_id for h in found_b} == {beta.pk}
    lind_a, lind_b = found_a[0].node, found_b[0].node
    assert lind_b.aliases == lind_a.aliases == ["Lind", "JL"]
    near_a, near_b = neighbours(node=lind_a), neighbours(node=lind_b)
    assert [(n.node.name, n.relation_type, n.hops) for n in near_b] == [
        (n.node.name, n.relation_type, n.hops) for n in near_a
    ]
    assert near_b and {n.node.account_id for n in near_b} == {beta.pk}
    leads = GraphEdge.objects.get(account=beta, relation_type="leads")
    assert (leads.weight, leads.metadata, leads.source_id) == (0.7, {"since": "2026"}, lind_b.pk)
    # A knowledge-item relationship is an edge between the items' nodes: it follows them.
    related_a = item_relationships(actor_a, "facts", "launch-owner")
    related_b = item_relationships(actor_b, "facts", "launch-owner")
    assert [(r.edge.relation_type, r.target.key, r.strength) for r in related_b] == [
        (r.edge.relation_type, r.target.key, r.strength) for r in related_a
    ]
    assert related_b and related_b[0].target.account_id == beta.pk
    # A node of a private source follows its context: its scope and the id in its name.
    conversation_b = Conversation.objects.get(account=beta)
    venue = KnowledgeItem.objects.get(account=beta, key="launch-venue", is_current=True)
    assert venue.graph_node is not None
    assert venue.graph_node.name == f"facts/launch-venue (context {conversation_b.context_id})"
    assert (venue.graph_node.derived_space, venue.graph_node.derived_scope_id) == (
        "memory_entries",
        conversation_b.context_id,
    )
    bob_b = actor_for_agent(Agent.objects.get(account=beta, name="bob"))
    for reader, sees in ((bob_b, False), (actor_b, True)):
        hits = node_search(actor=reader, query="launch-venue Lisbon", entity_type="knowledge_item")
        assert (venue.graph_node_id in {h.node.pk for h in hits}) is sees
    # One node per page, skill and item: the apps adopted the imported nodes, none doubled.
    for entity_type in ("page", "skill", "knowledge_item", "person", "project"):
        names_a, names_b = (
            sorted(
                IN_CONTEXT.sub(" (context)", name)
                for name in GraphNode.objects.filter(
                    account=account, entity_type=entity_type
                ).values_list("name", flat=True)
            )
            for account in (world.account, beta)
        )
        assert names_b == names_a
    assert Page.objects.filter(account=beta, node__isnull=True).count() == 0
    # A skill's dependency is a depends_on edge between the skills' nodes of B.
    verify, deploy = (
        Skill.objects.get(account=beta, name__endswith=name)
        for name in ("verify release", "deploy service")
    )
    depends = GraphEdge.objects.get(account=beta, relation_type="depends_on")
    assert (depends.source_id, depends.target_id) == (verify.graph_node_id, deploy.graph_node_id)
    assert depends.metadata == {"version": "^1.0.0"}
    # Skills' learning: proposals with their review, the profile and trust follow the agent.
    assert sorted(
        SkillProposal.objects.filter(account=beta).values_list("status", "decision_reason")
    ) == sorted(
        SkillProposal.objects.filter(account=world.account).values_list("status", "decision_reason")
    )
    profile_a = LearningProfile.objects.get(agent=world.alice, task_type="deploy")
    profile_b = LearningProfile.objects.get(agent=alice_b, task_type="deploy")
    assert (profile_b.success_rate, bytes(profile_b.window)) == (
        profile_a.success_rate,
        bytes(profile_a.window),
    )
    assert SkillUsage.objects.filter(account=beta, skill__account=beta).count() == 1


def test_export_never_holds_another_accounts_rows(world: World, tmp_path: Path) -> None:
    files = files_of(export(world.account, tmp_path / "a.tar.gz", with_vectors=True))
    assert any(MARKER.encode() in data for data in files.values())
    assert not any(INTRUDER.encode() in data for data in files.values())
    everything = b"".join(files.values())
    assert b"eng_" not in everything  # no API key, not even a prefix
    secret = world.key.split("_", 2)[2]  # eng_<prefix>_<secret>; the secret may hold "_" too
    assert world.key.encode() not in everything and secret.encode() not in everything
    assert f"{MARKER} key".encode() not in everything  # nor the key's row


def test_importing_never_touches_another_account(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    intruder = Account.objects.get(slug="intruder")
    before = counts(intruder), counts(world.account)
    import_as(
        export(world.account, tmp_path / "a.tar.gz"), "beta", django_capture_on_commit_callbacks
    )
    assert (counts(intruder), counts(world.account)) == before


def test_a_second_import_changes_nothing(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = export(world.account, tmp_path / "a.tar.gz")
    first = import_as(path, "beta", django_capture_on_commit_callbacks)
    after_first = counts(first.account)
    events = AuditEvent.objects.filter(account=first.account).count()
    again = import_as(path, "beta", django_capture_on_commit_callbacks)
    assert again.already_imported
    assert counts(first.account) == after_first
    assert AuditEvent.objects.filter(account=first.account).count() == events


def _refused(path: Path, slug: str = "gamma") -> ValidationFailed:
    with pytest.raises(ValidationFailed) as caught:
        account_import(path=path, account_slug=slug)
    assert not Account.objects.filter(slug=slug).exists()  # nothing written, not even the account
    return caught.value


def test_a_tampered_file_is_refused_naming_it(world: World, tmp_path: Path) -> None:
    files = files_of(export(world.account, tmp_path / "a.tar.gz"))
    files["memory.entry.jsonl"] = files["memory.entry.jsonl"].replace(b"Fridays", b"Mondays")
    error = _refused(repack(tmp_path / "a.tar.gz", files, tmp_path / "t.tar.gz"))
    assert error.code == "import_checksum_mismatch"
    assert error.details == {"file": "memory.entry.jsonl"}
    assert "memory.entry.jsonl" in error.message


def test_a_broken_line_is_refused_naming_the_file_and_line(world: World, tmp_path: Path) -> None:
    files = files_of(export(world.account, tmp_path / "a.tar.gz"))
    lines = files["memory.entry.jsonl"].splitlines(keepends=True)
    lines[1] = b"{not json\n"
    files["memory.entry.jsonl"] = b"".join(lines)
    error = _refused(repack(tmp_path / "a.tar.gz", files, tmp_path / "t.tar.gz"))
    assert error.details == {"file": "memory.entry.jsonl", "line": 2}
    assert error.message.startswith("memory.entry.jsonl line 2: not JSON")


def test_a_dangling_reference_is_refused(world: World, tmp_path: Path) -> None:
    files = files_of(export(world.account, tmp_path / "a.tar.gz"))
    files["memory.context_grant.jsonl"] = re.sub(
        rb'"core\.agent:\d+"', b'"core.agent:999999"', files["memory.context_grant.jsonl"]
    )
    error = _refused(repack(tmp_path / "a.tar.gz", files, tmp_path / "t.tar.gz"))
    assert error.details == {"file": "memory.context_grant.jsonl", "line": 1}
    assert "core.agent:999999" in error.message


def test_a_truncated_archive_is_refused(world: World, tmp_path: Path) -> None:
    path = export(world.account, tmp_path / "a.tar.gz")
    data = path.read_bytes()
    (tmp_path / "t.tar.gz").write_bytes(data[: len(data) // 2])
    error = _refused(tmp_path / "t.tar.gz")
    assert error.code in {"import_not_an_archive", "import_invalid", "import_missing_file"}


def test_a_newer_format_is_refused(world: World, tmp_path: Path) -> None:
    files = files_of(export(world.account, tmp_path / "a.tar.gz"))
    manifest = json.loads(files["manifest.json"])
    manifest["format_version"] = upgrades.FORMAT_VERSION + 1
    files["manifest.json"] = json.dumps(manifest).encode()
    error = _refused(repack(tmp_path / "a.tar.gz", files, tmp_path / "t.tar.gz"))
    assert error.code == "import_format_too_new"
    assert "upgrade Engram" in error.message


def test_an_older_format_is_upgraded(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Any,
) -> None:
    path = export(world.account, tmp_path / "a.tar.gz")  # format 1

    def upgrade(kind: str, row: dict[str, Any]) -> dict[str, Any]:
        if kind == "core.team":
            return {**row, "description": "upgraded from format 1"}
        return row

    monkeypatch.setattr(upgrades, "FORMAT_VERSION", 2)
    monkeypatch.setitem(upgrades.UPGRADES, 1, upgrade)
    beta = import_as(path, "beta", django_capture_on_commit_callbacks).account
    assert Team.objects.get(account=beta).description == "upgraded from format 1"


def test_vectors_travel_when_the_model_is_the_same(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    path = export(world.account, tmp_path / "a.tar.gz", with_vectors=True)
    manifest = json.loads(files_of(path)["manifest.json"])
    (entry,) = [kind for kind in manifest["kinds"] if kind["name"] == "memory.entry"]
    assert entry["vectors"]["field"] == "embedding"
    assert {m["dimensions"] for m in entry["vectors"]["models"]} == {384}
    # Without running the index: the vectors are stored as they came, only postings wait.
    beta = account_import(path=path, account_slug="beta").account
    current = MemoryEntry.objects.filter(account=beta, is_current=True, archived_at__isnull=True)
    assert all(e.embedding is not None for e in current)
    assert not PendingIndex.objects.filter(context__account=beta, embed=True).exists()
    (nodes,) = [kind for kind in manifest["kinds"] if kind["name"] == "rag.graph_node"]
    assert nodes["vectors"]["models"][0]["count"] == nodes["count"]
    assert not GraphNode.objects.filter(account=beta, embedding__isnull=True).exists()


def test_the_commands_export_and_import(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    out = io.StringIO()
    path = tmp_path / "a.tar.gz"
    call_command("export", "--account", "alpha", "--out", str(path), stdout=out)
    assert "memory.entry: " in out.getvalue()
    with django_capture_on_commit_callbacks(execute=True):
        call_command("import", str(path), "--account", "delta", stdout=out)
    assert counts(Account.objects.get(slug="delta")) == counts(world.account)
    call_command("import", str(path), "--account", "delta", stdout=out)
    assert "already" in out.getvalue()
    (tmp_path / "bad.tar.gz").write_bytes(gzip.compress(b"nonsense"))
    with pytest.raises(CommandError, match=r"not an Engram export archive|damaged"):
        call_command("import", str(tmp_path / "bad.tar.gz"), "--account", "eps")


def _names(files: dict[str, bytes], name: str, field: str = "name") -> list[Any]:
    return [json.loads(line)[field] for line in files[name].splitlines()]


def test_one_agents_share(
    world: World, tmp_path: Path, django_capture_on_commit_callbacks: Any
) -> None:
    bob = files_of(export(world.account, tmp_path / "b.tar.gz", agent_name="bob"))
    assert _names(bob, "core.agent.jsonl") == ["bob"]
    assert bob["memory.entry.jsonl"] == b""  # bob owns no memory
    path = export(world.account, tmp_path / "a.tar.gz", agent_name="alice")
    alice = files_of(path)
    assert _names(alice, "core.agent.jsonl") == ["alice"]
    assert _names(alice, "core.team.jsonl") == [f"{MARKER} ops"]
    assert alice["memory.context_grant.jsonl"] == b""  # the grant is bob's
    assert alice["skills.skill.jsonl"] == b""  # account-wide
    assert _names(alice, "memory.conversation.jsonl", "title") == [f"{MARKER} planning"]
    # Like an agent file: it imports into an account of its own.
    imported = import_as(path, "alice-copy", django_capture_on_commit_callbacks).account
    agent = Agent.objects.get(account=imported)
    assert agent.name == "alice"
    assert MemoryContext.objects.filter(account=imported, owner=agent).count() == 3
    assert ShortTermEntry.objects.filter(account=imported, agent=agent).count() == 1


def test_a_clash_with_what_the_account_holds_is_refused_whole(world: World, tmp_path: Path) -> None:
    """Into an account holding the same names (here, the source itself): 409, nothing written."""
    path = export(world.account, tmp_path / "a.tar.gz")
    before = counts(world.account)
    with pytest.raises(Conflict) as caught:
        account_import(path=path, account_slug="alpha")
    assert caught.value.code == "import_conflict"
    assert caught.value.details == {"file": "core.team.jsonl"}
    assert counts(world.account) == before


@pytest.mark.django_db(transaction=True)
def test_an_export_outside_a_transaction_reads_one_snapshot(tmp_path: Path) -> None:
    """The command's path: the export runs in its own read-only REPEATABLE READ transaction."""
    from core.services.accounts import account_create
    from core.services.agents import agent_create

    account = account_create(name="Solo", slug="solo")
    agent_create(actor=actor_for_account(account.pk), account=account, name="solo-agent")
    files = files_of(export(account, tmp_path / "s.tar.gz"))
    assert [json.loads(line)["name"] for line in files["core.agent.jsonl"].splitlines()] == [
        "solo-agent"
    ]


def test_documents_are_searchable_once_their_ingestion_ran(world: World, tmp_path: Path) -> None:
    """The import commits each document pending with its bytes and no chunks; the ingestion
    queued after the commit makes its chunks, and then it is found."""
    from rag.tasks import process_documents

    beta = account_import(
        path=export(world.account, tmp_path / "a.tar.gz"), account_slug="beta"
    ).account  # the callbacks after the commit are not run here
    documents = Document.objects.filter(account=beta)
    assert {d.status for d in documents} == {"pending"}
    assert {bytes(d.original) for d in documents} == {
        bytes(d.original) for d in Document.objects.filter(account=world.account)
    }
    assert not Chunk.objects.filter(account=beta).exists()
    alice_b = actor_for_agent(Agent.objects.get(account=beta, name="alice"))
    assert not chunk_search(actor=alice_b, query="roll back a deploy", mode="hybrid").hits
    process_documents.delay(sorted(d.pk for d in documents))
    assert set(Document.objects.filter(account=beta).values_list("status", flat=True)) == {
        "indexed"
    }
    assert chunk_search(actor=alice_b, query="roll back a deploy", mode="hybrid").hits
    # The knowledge base keeps its chunking settings, and embeds with this installation's model.
    kb_a = KnowledgeBase.objects.get(account=world.account)
    kb_b = KnowledgeBase.objects.get(account=beta)
    assert (kb_b.chunk_size, kb_b.chunk_overlap, kb_b.chunking_strategy) == (
        kb_a.chunk_size,
        kb_a.chunk_overlap,
        kb_a.chunking_strategy,
    )


def test_a_document_whose_bytes_were_changed_is_refused(world: World, tmp_path: Path) -> None:
    """Even with the archive's checksums made to match, a document's bytes must match its own
    size and SHA-256: nothing is written."""
    files = files_of(export(world.account, tmp_path / "a.tar.gz"))
    rows = [json.loads(line) for line in files["rag.document.jsonl"].splitlines()]
    rows[0]["original"] = base64.b64encode(b"something else entirely").decode()
    data = b"".join((json.dumps(row, sort_keys=True) + "\n").encode() for row in rows)
    files["rag.document.jsonl"] = data
    manifest = json.loads(files["manifest.json"])
    for entry in manifest["kinds"]:
        if entry["name"] == "rag.document":
            entry["sha256"] = hashlib.sha256(data).hexdigest()
    files["manifest.json"] = json.dumps(manifest).encode()
    error = _refused(repack(tmp_path / "a.tar.gz", files, tmp_path / "t.tar.gz"))
    assert error.code == "import_invalid"
    assert error.details == {"file": "rag.document.jsonl"}
    assert "checksum" in error.message
