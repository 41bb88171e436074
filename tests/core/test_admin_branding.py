"""The admin is Engram's: its header, title and index say Engram, never Django's words."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_admin_says_engram() -> None:
    client = Client()
    login = client.get("/admin/login/").content.decode()
    assert "Engram" in login and "Django administration" not in login
    user = UserFactory.create(is_staff=True, is_superuser=True)
    client.force_login(user)
    index = client.get("/admin/").content.decode()
    assert "<title>Engram administration | Engram admin</title>" in index
    assert "Django" not in index.split("<body", 1)[1].split("</header>", 1)[0]


def test_a_page_rendered_without_the_sites_context_still_says_engram(rf) -> None:
    from django.template.loader import render_to_string

    html = render_to_string("admin/base_site.html", {"title": "Somewhere"}, request=rf.get("/"))
    assert "<title>Somewhere | Engram admin</title>" in html
    assert ">Engram</a>" in html and "Django" not in html
