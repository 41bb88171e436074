"""content: pages and articles, wikilinks, backlinks, unlinked mentions and related pages
(docs/content.md). Its layers are the usual modules (``models``, ``services/``, ``selectors``,
``apis``, ``urls``, ``admin``, ``admin_forms``, ``tasks``, ``mcp``).

Its algorithm modules:

- ``wikilinks``: parsing ``[[links]]`` out of a page's text;
- ``rendering``: a page's text rendered with its links resolved;
- ``digest``: the daily summary of what changed."""
