"""``/`` is a page for people, linking the admin, the API docs and the MCP endpoint; the admin's
"View site" leads there."""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.django_db


def test_the_root_links_the_admin_the_api_docs_and_mcp(client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    page = response.content.decode()
    links = dict(re.findall(r'<a id="([\w-]+)" href="([^"]+)"', page))
    assert links == {
        "admin": "/admin/",
        "api-docs": "/api/docs/",
        "mcp": "/mcp",
        "readyz": "/readyz",
    }
    assert "http://testserver/mcp" in page
    for href in ("/admin/", "/api/docs/", "/readyz"):
        assert client.get(href, follow=True).status_code == 200, href


def test_the_admins_view_site_link_leads_to_it(admin_client) -> None:
    page = admin_client.get("/admin/").content.decode()
    view_site = re.search(r'<a href="([^"]+)">View site</a>', page)
    assert view_site is not None
    assert admin_client.get(view_site.group(1)).status_code == 200
