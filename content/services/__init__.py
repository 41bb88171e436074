"""Every write of pages and articles (``pages``) and their place in the knowledge graph
(``links``)."""

from content.services.links import (
    LinkReport,
    article_sync,
    links_extract,
    page_embed,
    page_embed_current,
    page_sync,
    pending_sync_sweep,
)
from content.services.pages import (
    MAX_CONTENT_CHARS,
    MAX_TITLE_CHARS,
    PAGE_UPDATABLE_FIELDS,
    Rename,
    article_delete,
    article_save,
    page_create,
    page_delete,
    page_link_mention,
    page_rename,
    page_update,
    page_write,
)

__all__ = [
    "MAX_CONTENT_CHARS",
    "MAX_TITLE_CHARS",
    "PAGE_UPDATABLE_FIELDS",
    "LinkReport",
    "Rename",
    "article_delete",
    "article_save",
    "article_sync",
    "links_extract",
    "page_create",
    "page_delete",
    "page_embed",
    "page_embed_current",
    "page_link_mention",
    "page_rename",
    "page_sync",
    "page_update",
    "page_write",
    "pending_sync_sweep",
]
