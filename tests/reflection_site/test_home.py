"""The landing page at / (the admin's "View site", a 404 before): links to the admin, the API docs and /healthz."""

from __future__ import annotations

import re
from http import HTTPStatus

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


def test_view_site_leads_to_a_page_that_links_admin_docs_and_health(admin_client):
    index = admin_client.get("/admin/").content.decode()
    view_site = re.search(r'<a href="([^"]+)">View site</a>', index)
    assert view_site and view_site.group(1) == "/"

    page = Client().get("/")

    assert page.status_code == HTTPStatus.OK
    links = set(re.findall(r'href="([^"]+)"', page.content.decode()))
    assert {"/admin/", "/api/docs", "/healthz", "/home.css"} <= links
    for link in links:
        assert Client().get(link).status_code in (HTTPStatus.OK, HTTPStatus.FOUND), link
    assert "style-src" in page.headers.get("Content-Security-Policy", "style-src")
    assert "<style" not in page.content.decode() and "style=" not in page.content.decode()


def test_the_landing_page_is_read_only():
    assert Client().post("/").status_code == HTTPStatus.METHOD_NOT_ALLOWED
