"""An operator in a real browser: signs in through the login form, uploads a document, watches
it reach "Indexed", and never sees another account's documents."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from django.urls import reverse

from core import services
from core.actors import actor_for_account
from core.models import AuditEvent
from rag import services as rag_services
from rag.models import Chunk, Document
from tests.e2e.admin_browser import AdminBrowser
from tests.factories import AccountFactory, UserFactory

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_an_operator_uploads_a_document_and_sees_only_their_account(
    admin: AdminBrowser, browser: Any, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    orchard = AccountFactory.create(name="Orchard", slug="orchard")
    bramble = AccountFactory.create(name="Bramble", slug="bramble")
    rag_services.knowledge_base_create(actor=actor_for_account(orchard.pk), name="Orchard handbook")
    other_kb = rag_services.knowledge_base_create(
        actor=actor_for_account(bramble.pk), name="Bramble vault"
    )
    # Committed at once (a transactional test): processed eagerly on commit.
    secret = rag_services.document_create(
        actor=actor_for_account(bramble.pk),
        kb=other_kb,
        data=b"# Plans\n\nBramble secret plans.",
        filename="plans.md",
        title="Bramble secret plans",
    )
    operator = UserFactory.create(username="olive", is_staff=True)
    services.membership_grant(account=orchard, user=operator, role="operator")

    admin.sign_in("olive", PASSWORD)

    admin.go(reverse("admin:rag_document_add"))
    choices = Select(browser.find_element(By.ID, "id_knowledge_base"))
    assert [o.text for o in choices.options if o.get_attribute("value")] == ["Orchard handbook"]
    choices.select_by_visible_text("Orchard handbook")
    upload = tmp_path / "harvest.md"
    upload.write_text("# Harvest\n\nApples are picked in September.\n\n## Storage\n\nKeep cool.")
    browser.find_element(By.ID, "id_upload").send_keys(str(upload))
    browser.find_element(By.ID, "id_title").send_keys("Harvest notes")
    admin.submit(browser.find_element(By.NAME, "_save"))
    errors = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".errornote, .errorlist")]
    messages = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".messagelist li")]
    assert "was added successfully" in browser.page_source, (browser.current_url, errors, messages)

    # Once the pipeline has indexed the new document, its row in the list says so.
    deadline = time.monotonic() + 120
    indexed = Document.objects.filter(title="Harvest notes", status=Document.Status.INDEXED)
    while not indexed.exists():
        assert time.monotonic() < deadline, Document.objects.values("title", "status", "error")
        time.sleep(0.05)
    admin.go(reverse("admin:rag_document_changelist"))
    rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")]
    harvest = [r for r in rows if "Harvest notes" in r]
    assert harvest and "Indexed" in harvest[0], rows
    page = browser.page_source
    assert "Bramble" not in page and "Orchard handbook" in page

    # Another account's document: as absent as a missing one.
    admin.go(reverse("admin:rag_document_change", args=[secret.pk]))
    assert "Page not found" in browser.page_source
    assert "Bramble" not in browser.page_source

    document = Document.objects.get(title="Harvest notes")
    assert document.status == Document.Status.INDEXED and document.account_id == orchard.pk
    assert Chunk.objects.filter(document=document).exists()
    assert AuditEvent.objects.filter(action="rag.document.create", user=operator).exists()
