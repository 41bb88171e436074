"""An installation operator, in a real browser, migrates the embeddings to another model from
the admin: the page shows the configured next model and what each space holds, a build (run by
the worker, eagerly here) ends ready with its progress bar full, and the cut-over, the rollback
and the drop are one button each (core.embeddings.admin)."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from core.models import EmbeddingGeneration
from tests.core.test_embedding_generations import (  # noqa: F401 - the fixtures
    _schema_restored,
    wide_model,
)
from tests.e2e.admin_browser import AdminBrowser, screenshot
from tests.factories import UserFactory
from tests.support.openai_standin import OpenAIStandIn

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

PASSWORD = "correct horse battery staple"


def test_an_operator_builds_cuts_over_rolls_back_and_drops(
    admin: AdminBrowser,
    browser: Any,
    wide_model: OpenAIStandIn,  # noqa: F811 - the imported fixture
) -> None:
    from selenium.webdriver.common.by import By

    UserFactory.create(username="root", is_staff=True, is_superuser=True)
    admin.sign_in("root", PASSWORD)
    page = reverse("admin:core_embeddinggeneration_changelist")
    admin.go(page)
    box = admin.find(By.ID, "embedding-generations")
    assert "openai:wide-embedder" in box.text and "document chunks" in box.text

    def press(label: str) -> str:
        buttons = admin.find(By.ID, "generation-actions").find_elements(By.TAG_NAME, "input")
        (button,) = [b for b in buttons if b.get_attribute("value").startswith(label)]
        admin.submit(button)
        return str(admin.find(By.CSS_SELECTOR, "ul.messagelist").text)

    assert "build of the next generation started" in press("Build only")
    building = EmbeddingGeneration.objects.get(role="next")
    assert building.status == "ready"  # the eager worker built it on commit
    progress = admin.find(By.ID, "generation-progress")
    assert float(progress.get_attribute("value")) == 1.0
    screenshot(browser, "admin-embedding-generations")
    assert "is current" in press("Cut over now")
    assert EmbeddingGeneration.objects.get(role="current").model_id == "openai:wide-embedder"
    assert "current again" in press("Roll back to")
    assert EmbeddingGeneration.objects.get(role="previous").model_id == "openai:wide-embedder"
    assert "dropped" in press("Drop openai:wide-embedder")
    assert not EmbeddingGeneration.objects.filter(role__in=["next", "previous"]).exists()
