from __future__ import annotations

import base64
import io

import pytest

from rag.models import Chunk, Document, KnowledgeBase, SearchQuery, SearchResult
from rag.search import MODES

pytestmark = pytest.mark.django_db

KBS = "/api/v1/rag/knowledge-bases"


def code(response) -> str:
    return str(response.json()["error"]["code"])


@pytest.fixture
def api_kb(agent_client) -> dict:
    response = agent_client.client.post(
        KBS, {"name": "Docs", "chunk_size": 64, "chunk_overlap": 8}, format="json"
    )
    assert response.status_code == 201, response.json()
    return response.json()


@pytest.fixture
def upload(agent_client, api_kb, django_capture_on_commit_callbacks):
    def do(payload, *, fmt="json", kb_id=None, client=None):
        with django_capture_on_commit_callbacks(execute=True):
            return (client or agent_client.client).post(
                f"{KBS}/{kb_id or api_kb['id']}/documents", payload, format=fmt
            )

    return do


@pytest.mark.real_embeddings  # the default configuration's model id is recorded
def test_knowledge_base_crud_and_lifecycle(agent_client, api_kb) -> None:
    client = agent_client.client
    assert api_kb["embedding_model"] == "local:all-MiniLM-L6-v2"
    assert client.get(KBS).json()["results"][0]["id"] == api_kb["id"]
    patched = client.patch(f"{KBS}/{api_kb['id']}", {"description": "d"}, format="json")
    assert patched.status_code == 200 and patched.json()["description"] == "d"
    assert (
        client.post(f"{KBS}/{api_kb['id']}/status", {"status": "paused"}, format="json").json()[
            "status"
        ]
        == "paused"
    )
    bad = client.post(f"{KBS}/{api_kb['id']}/status", {"status": "indexing"}, format="json")
    assert bad.status_code == 409 and code(bad) == "invalid_transition"
    duplicate = client.post(KBS, {"name": "Docs"}, format="json")
    assert duplicate.status_code == 409 and code(duplicate) == "name_taken"
    invalid = client.post(KBS, {"name": "X", "chunk_size": 64, "chunk_overlap": 64}, format="json")
    assert invalid.status_code == 400 and code(invalid) == "invalid_chunking"
    assert client.delete(f"{KBS}/{api_kb['id']}").status_code == 204
    assert not KnowledgeBase.objects.filter(pk=api_kb["id"]).exists()


def test_upload_json_text_then_search_and_query(agent_client, upload) -> None:
    response = upload(
        {
            "title": "Runbook",
            "content_type": "text/markdown",
            "doc_type": "runbook",
            "tags": ["ops"],
            "text": "# Restarting\n\nRestart the worker with systemctl restart engram-worker.\n\n"
            "# Backups\n\nBack up the database volume nightly with pg_dump.",
        }
    )
    assert response.status_code == 201, response.json()
    doc = response.json()
    detail = agent_client.client.get(f"/api/v1/rag/documents/{doc['id']}").json()
    assert detail["status"] == "indexed" and detail["progress"] == 1.0

    found = agent_client.client.post(
        "/api/v1/rag/search", {"query": "how do I back up the database", "top_k": 3}, format="json"
    )
    assert found.status_code == 200, found.json()
    best = found.json()["results"][0]
    assert "pg_dump" in best["text"]
    assert best["heading_path"] == ["Backups"]
    assert set(best["explanation"]) == {"vector", "keyword", "graph", "fused_score", "rerank_score"}
    assert best["explanation"]["vector"]["rank"] is not None
    assert best["explanation"]["keyword"]["rank"] is not None

    answer = agent_client.client.post(
        "/api/v1/rag/query", {"query": "restart worker", "token_budget": 200}, format="json"
    )
    body = answer.json()
    assert body["sources"][0]["title"] == "Runbook"
    assert body["context"].startswith("[1] Runbook")
    assert body["token_count"] <= 200

    record = SearchQuery.objects.filter(account_id=agent_client.agent.account_id).first()
    assert record is not None and record.mode == "hybrid" and record.result_count >= 1
    assert set(record.stage_ms) >= {"embed", "vector", "keyword", "fusion"}
    assert SearchResult.objects.filter(query=record).count() == record.result_count
    analytics = agent_client.client.get("/api/v1/rag/analytics").json()
    assert analytics["modes"][0]["mode"] == "hybrid" and analytics["modes"][0]["queries"] == 2
    assert len(agent_client.client.get("/api/v1/rag/queries").json()["results"]) == 2


def test_upload_files_multipart_batch_and_base64(agent_client, upload) -> None:
    files = [
        io.BytesIO(b"Plain text about redis streams."),
        io.BytesIO(
            b"<html><head><title>Page</title></head>"
            b"<body><h1>Hello</h1><p>HTML body</p></body></html>"
        ),
    ]
    files[0].name, files[1].name = "notes.txt", "page.html"
    multipart = upload({"file": files, "doc_type": "note"}, fmt="multipart")
    assert multipart.status_code == 201, multipart.json()
    assert {d["content_type"] for d in multipart.json()} == {"text/plain", "text/html"}
    assert all(d["doc_type"] == "note" for d in multipart.json())

    batch = upload(
        {
            "documents": [
                {"text": "First doc.", "title": "one"},
                {
                    "content_base64": base64.b64encode(
                        b'{"title": "J", "body": "json body"}'
                    ).decode(),
                    "filename": "x.json",
                },
            ]
        }
    )
    assert batch.status_code == 201 and len(batch.json()) == 2
    assert Document.objects.filter(status="indexed").count() == 4


@pytest.mark.parametrize(
    ("payload", "status", "error"),
    [
        (
            {"content_base64": base64.b64encode(b"MZ\x90\x00").decode(), "filename": "tool.exe"},
            415,
            "unsupported_file_type",
        ),
        ({"text": "   \n  "}, 400, "empty_file"),
        (
            {"content_base64": base64.b64encode(b"caf\xe9 \xff").decode(), "filename": "a.txt"},
            400,
            "undecodable_file",
        ),
        ({"content_base64": "@@@not base64", "filename": "a.txt"}, 400, "invalid_base64"),
        ({"title": "no content"}, 400, "validation_error"),
        ({"documents": []}, 400, "validation_error"),
    ],
)
def test_bad_uploads_are_4xx_and_store_nothing(upload, payload, status, error) -> None:
    response = upload(payload)
    assert response.status_code == status, response.json()
    assert code(response) == error
    assert Document.objects.count() == 0


def test_a_bad_file_in_a_batch_stores_none(upload) -> None:
    response = upload({"documents": [{"text": "fine"}, {"text": "  "}]})
    assert response.status_code == 400
    assert Document.objects.count() == 0


def test_oversize_upload_is_413(upload, settings) -> None:
    settings.RAG_MAX_UPLOAD_BYTES = 100
    response = upload({"text": "x" * 101})
    assert response.status_code == 413 and code(response) == "upload_too_large"
    assert Document.objects.count() == 0


@pytest.mark.parametrize(
    ("payload", "error"),
    [
        ({"query": "x", "mode": "psychic"}, "validation_error"),
        ({"query": "x", "fusion": "magic"}, "validation_error"),
        ({"query": "x", "top_k": 0}, "validation_error"),
        (
            {"query": "x", "filters": {"date_from": "2024-02-01", "date_to": "2024-01-01"}},
            "validation_error",
        ),
        ({"query": "x", "filters": {"tags_any": "notalist"}}, "validation_error"),
        ({"query": "x", "weights": {"semantic": 1}}, "unknown_field"),
        ({"query": "   "}, "validation_error"),
    ],
)
def test_invalid_search_requests_are_400(agent_client, payload, error) -> None:
    response = agent_client.client.post("/api/v1/rag/search", payload, format="json")
    assert response.status_code == 400, response.json()
    assert code(response) == error


def test_unknown_knowledge_base_is_404(agent_client) -> None:
    response = agent_client.client.post(
        "/api/v1/rag/search",
        {"query": "x", "filters": {"knowledge_base_ids": [999999]}},
        format="json",
    )
    assert response.status_code == 404 and code(response) == "knowledge_base_not_found"
    assert (
        agent_client.client.post(
            f"{KBS}/999999/documents", {"text": "x"}, format="json"
        ).status_code
        == 404
    )


def test_filters_narrow_results(agent_client, upload) -> None:
    upload(
        {
            "text": "Deploy guide for the payment service.",
            "doc_type": "guide",
            "tags": ["payments", "deploy"],
            "document_date": "2024-01-10",
            "lifecycle_state": "published",
        }
    )
    upload(
        {
            "text": "Deploy notes for the payment service, draft.",
            "doc_type": "note",
            "tags": ["payments"],
            "document_date": "2024-03-01",
            "lifecycle_state": "draft",
        }
    )

    def titles(filters, mode="hybrid"):
        body = agent_client.client.post(
            "/api/v1/rag/search",
            {"query": "deploy payment service", "mode": mode, "filters": filters},
            format="json",
        ).json()
        return sorted(r["text"] for r in body["results"])

    for mode in MODES:
        assert len(titles({}, mode)) == 2
        assert titles({"doc_types": ["guide"]}, mode) == ["Deploy guide for the payment service."]
        assert titles({"tags_all": ["payments", "deploy"]}, mode) == [
            "Deploy guide for the payment service."
        ]
        assert len(titles({"tags_any": ["deploy", "payments"]}, mode)) == 2
        assert titles({"date_from": "2024-02-01"}, mode) == [
            "Deploy notes for the payment service, draft."
        ]
        assert titles({"lifecycle_states": ["published"]}, mode) == [
            "Deploy guide for the payment service."
        ]


def test_knowledge_base_ids_at_the_top_level_scope_the_search(agent_client, upload) -> None:
    """As in graph retrieval and agentic queries, ``knowledge_base_ids`` may be given beside the
    query: the same as ``filters.knowledge_base_ids``."""
    client = agent_client.client
    upload({"text": "Tide tables for the harbour pilots."})
    other = client.post(KBS, {"name": "other"}, format="json").json()
    upload({"text": "Tide gauges for the river pilots."}, kb_id=other["id"])

    def texts(body):
        response = client.post(
            "/api/v1/rag/search", {"query": "tide pilots", **body}, format="json"
        )
        assert response.status_code == 200, response.json()
        return [r["text"] for r in response.json()["results"]]

    for mode in MODES:
        top = texts({"mode": mode, "knowledge_base_ids": [other["id"]]})
        assert top == ["Tide gauges for the river pilots."]
        assert top == texts({"mode": mode, "filters": {"knowledge_base_ids": [other["id"]]}})
        assert top == texts(
            {"mode": mode, "knowledge_base_ids": [other["id"]],
             "filters": {"knowledge_base_ids": [other["id"]], "doc_types": []}}
        )  # fmt: skip
    both = client.post(
        "/api/v1/rag/search",
        {"query": "tide", "knowledge_base_ids": [other["id"]],
         "filters": {"knowledge_base_ids": [other["id"] + 1]}},
        format="json",
    )  # fmt: skip
    assert both.status_code == 400 and code(both) == "validation_error"
    assert "knowledge_base_ids" in both.json()["error"]["details"]
    unknown = client.post(
        "/api/v1/rag/search", {"query": "tide", "knowledge_base_ids": [999999]}, format="json"
    )
    assert unknown.status_code == 404 and code(unknown) == "knowledge_base_not_found"
    query = client.post(
        "/api/v1/rag/query", {"query": "tide pilots", "knowledge_base_ids": [other["id"]]},
        format="json",
    ).json()  # fmt: skip
    assert [s["document_id"] for s in query["sources"]] == [
        d["id"] for d in client.get(f"{KBS}/{other['id']}/documents").json()["results"]
    ]


def test_threshold_drops_weak_matches(agent_client, upload) -> None:
    upload({"text": "PostgreSQL vacuum and autovacuum tuning."})
    upload({"text": "A recipe for banana bread with walnuts."})
    body = agent_client.client.post(
        "/api/v1/rag/search",
        {"query": "autovacuum tuning in postgres", "threshold": 0.4},
        format="json",
    ).json()
    assert [r["text"] for r in body["results"]] == ["PostgreSQL vacuum and autovacuum tuning."]
    assert body["results"][0]["explanation"]["vector"]["score"] >= 0.4


def test_document_lifecycle_endpoints(agent_client, upload) -> None:
    doc = upload({"text": "Reprocess me."}).json()
    listed = agent_client.client.get(
        f"{KBS}/{doc['knowledge_base_id']}/documents?status=indexed"
    ).json()
    assert [d["id"] for d in listed["results"]] == [doc["id"]]
    bad = agent_client.client.get(f"{KBS}/{doc['knowledge_base_id']}/documents?status=weird")
    assert bad.status_code == 400
    again = agent_client.client.post(
        f"/api/v1/rag/documents/{doc['id']}/reprocess", {}, format="json"
    )
    assert again.status_code == 202 and again.json()["status"] == "pending"
    assert agent_client.client.delete(f"/api/v1/rag/documents/{doc['id']}").status_code == 204
    assert not Chunk.objects.filter(document_id=doc["id"]).exists()


def test_read_only_key_can_search_but_not_upload(make_agent_client, agent_client, upload) -> None:
    reader = make_agent_client(scopes=("read",), agent=agent_client.agent)
    assert (
        reader.client.post("/api/v1/rag/search", {"query": "x"}, format="json").status_code == 200
    )
    kb_id = agent_client.client.get(KBS).json()["results"][0]["id"]
    denied = reader.client.post(f"{KBS}/{kb_id}/documents", {"text": "x"}, format="json")
    assert denied.status_code == 403 and code(denied) == "insufficient_scope"


# --- tenancy: every endpoint ------------------------------------------------------------------


def test_other_accounts_see_nothing(agent_client, other_agent_client, upload) -> None:
    doc = upload({"text": "Secret roadmap: launch the moon base in Q3."}).json()
    kb_id = doc["knowledge_base_id"]
    other = other_agent_client.client
    assert other.get(KBS).json()["results"] == []
    for method, url, payload in [
        ("get", f"{KBS}/{kb_id}", None),
        ("patch", f"{KBS}/{kb_id}", {"name": "stolen"}),
        ("delete", f"{KBS}/{kb_id}", None),
        ("post", f"{KBS}/{kb_id}/status", {"status": "paused"}),
        ("get", f"{KBS}/{kb_id}/documents", None),
        ("post", f"{KBS}/{kb_id}/documents", {"text": "injected"}),
        ("get", f"/api/v1/rag/documents/{doc['id']}", None),
        ("delete", f"/api/v1/rag/documents/{doc['id']}", None),
        ("post", f"/api/v1/rag/documents/{doc['id']}/reprocess", {}),
    ]:
        response = getattr(other, method)(url, payload, format="json")
        assert response.status_code == 404, (method, url, response.status_code)
    for mode in MODES:
        found = other.post(
            "/api/v1/rag/search", {"query": "moon base roadmap", "mode": mode}, format="json"
        ).json()
        assert found["results"] == []
    scoped = other.post(
        "/api/v1/rag/search",
        {"query": "moon", "filters": {"knowledge_base_ids": [kb_id]}},
        format="json",
    )
    assert scoped.status_code == 404
    assert (
        other.post("/api/v1/rag/query", {"query": "moon base"}, format="json").json()["sources"]
        == []
    )
    assert other.get("/api/v1/rag/queries").json()["results"][0]["query_text"] == "moon base"
    assert all(
        q["query_text"] != "Secret" for q in other.get("/api/v1/rag/queries").json()["results"]
    )
    assert Document.objects.get(pk=doc["id"]).title != "stolen"
    assert KnowledgeBase.objects.filter(pk=kb_id).exists()


def test_search_query_count_is_bounded(agent_client, upload, django_assert_max_num_queries) -> None:
    for i in range(5):
        upload({"text": f"Document number {i} about search performance."})
    with django_assert_max_num_queries(14):
        response = agent_client.client.post(
            "/api/v1/rag/search", {"query": "search performance", "top_k": 5}, format="json"
        )
    assert len(response.json()["results"]) == 5


def test_a_batch_upload_is_processed_as_one_batch_task(upload, monkeypatch) -> None:
    from rag import tasks

    sent: list[list[int]] = []
    real = tasks.process_documents.delay

    def record(document_ids):
        sent.append(list(document_ids))
        return real(document_ids)

    monkeypatch.setattr(tasks.process_documents, "delay", record)
    monkeypatch.setattr(
        tasks.process_document, "delay", lambda *a: pytest.fail("per-document task")
    )
    response = upload({"documents": [{"text": "One."}, {"text": "Two."}, {"text": "Three."}]})
    assert response.status_code == 201
    ids = [d["id"] for d in response.json()]
    assert sent == [ids]
    assert set(Document.objects.filter(pk__in=ids).values_list("status", flat=True)) == {"indexed"}


@pytest.mark.django_db(transaction=True)
def test_a_search_whose_hit_is_replaced_before_it_is_logged_still_succeeds(agent_client) -> None:
    """The query log names chunks that re-indexing may replace at any moment (found by
    schemathesis: a reprocess between a search and its log's commit made the search a 500)."""
    from core.actors import actor_for_agent
    from rag import services
    from rag.search import SearchHit, SearchOutcome

    actor = actor_for_agent(agent_client.agent)
    gone = SearchHit(chunk_id=987_654_321, score=0.5, document_id=987_654_321)
    outcome = SearchOutcome(
        hits=[gone], mode="hybrid", fusion="weighted", knowledge_base_ids=[], stage_ms={}
    )
    record = services.search_query_record(
        actor=actor,
        query="q",
        mode="hybrid",
        top_k=10,
        threshold=None,
        filters={},
        outcome=outcome,
        latency_ms=1.0,
    )
    assert SearchResult.objects.get(query=record).chunk_id == 987_654_321
    log = agent_client.client.get("/api/v1/rag/queries")
    assert log.status_code == 200 and log.json()["results"][0]["result_count"] == 1


def test_extracted_text_over_the_limit_is_413_and_stores_nothing(upload, settings) -> None:
    """The limit counts extracted text, not bytes: markup does not count, characters do."""
    settings.RAG_MAX_EXTRACTED_CHARS = 1000
    too_long = upload({"text": "word " * 201, "content_type": "text/markdown"})
    assert too_long.status_code == 413, too_long.json()
    assert code(too_long) == "document_too_large"
    assert too_long.json()["error"]["details"] == {"characters": 1004, "limit": 1000}
    in_a_batch = upload({"documents": [{"text": "fine"}, {"text": "x" * 1001}]})
    assert in_a_batch.status_code == 413 and code(in_a_batch) == "document_too_large"
    assert Document.objects.count() == 0

    markup = "<div class='wrapper'><span class='decoration'></span></div>" * 100
    html = f"<html><body>{markup}<p>{'short text ' * 50}</p></body></html>"
    assert len(html) > 5000
    accepted = upload(
        {"content_base64": base64.b64encode(html.encode()).decode(), "filename": "page.html"}
    )
    assert accepted.status_code == 201, accepted.json()
    assert Document.objects.get(pk=accepted.json()["id"]).status == Document.Status.INDEXED


def test_a_pdf_upload_is_extracted_by_the_worker_not_the_request(
    agent_client, api_kb, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    import pypdf

    from tests.rag.test_extraction import build_pdf

    extracted: list[int] = []
    real = pypdf.PageObject.extract_text

    def counting(self, *args, **kwargs):
        extracted.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(pypdf.PageObject, "extract_text", counting)
    pdf = build_pdf(["Vacuum reclaims dead tuples.", "Analyze refreshes statistics."], title="PG")
    with django_capture_on_commit_callbacks(execute=False) as queued:
        response = agent_client.client.post(
            f"{KBS}/{api_kb['id']}/documents",
            {"content_base64": base64.b64encode(pdf).decode(), "filename": "pg.pdf"},
            format="json",
        )
    assert response.status_code == 201, response.json()
    assert response.json()["status"] == "pending"
    assert response.json()["title"] == "PG"  # read from the metadata, not the pages
    assert extracted == []  # the request opened the PDF and counted its pages, no more

    for send in queued:  # the worker's turn (eager tasks)
        send()
    assert len(extracted) == 2
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == Document.Status.INDEXED, document.error
    text = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
    assert "Vacuum reclaims dead tuples." in text and "Analyze refreshes statistics." in text


def test_a_pdf_without_text_is_accepted_then_fails_in_the_worker(upload) -> None:
    import pypdf

    writer = pypdf.PdfWriter()
    writer.add_blank_page(width=200, height=200)
    out = io.BytesIO()
    writer.write(out)
    response = upload(
        {"content_base64": base64.b64encode(out.getvalue()).decode(), "filename": "scan.pdf"}
    )
    assert response.status_code == 201, response.json()
    document = Document.objects.get(pk=response.json()["id"])
    assert document.status == Document.Status.FAILED
    assert document.error == "The file contains no text."


@pytest.mark.parametrize(
    ("data", "reason"),
    [(b"GIF89a not a pdf", "not_pdf"), (b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog", "corrupt")],
)
def test_a_pdf_that_does_not_open_is_refused_at_upload(upload, data, reason) -> None:
    response = upload({"content_base64": base64.b64encode(data).decode(), "filename": "a.pdf"})
    assert response.status_code == 400 and code(response) == "invalid_pdf"
    assert response.json()["error"]["details"] == {"reason": reason}
    assert Document.objects.count() == 0
