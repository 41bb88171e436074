"""content's embedded tables for index generations (``core.embeddings.generations``): pages and
articles, searched by exact comparison (no HNSW index)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from core.embeddings.generations import EmbeddedTable, register


def _texts(model_name: str) -> Callable[[Sequence[int]], dict[int, str]]:
    def texts(ids: Sequence[int]) -> dict[int, str]:
        from django.apps import apps

        from content.services.links import embedding_text

        model = apps.get_model("content", model_name)
        return {item.pk: embedding_text(item) for item in model.objects.filter(pk__in=list(ids))}

    return texts


def register_tables() -> None:
    register(EmbeddedTable("pages", "content_page", "pages", _texts("Page"), indexed=False))
    register(
        EmbeddedTable(
            "articles",
            "content_article",
            "articles",
            _texts("Article"),
            indexed=False,
            account_owned=False,
        )
    )
