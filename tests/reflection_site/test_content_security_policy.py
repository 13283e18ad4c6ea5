"""Content-Security-Policy on the admin and the API docs (issue 18): scripts and styles from our own origin only,
an inline element only with the request's nonce (or, for Django's change list, its hash), and every admin page
and the docs still complete under it: each page's scripts and styles are checked against the header it came with.
The e2e suite loads the same pages in Chromium and fails on any CSP violation it reports."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser
from http import HTTPStatus
from typing import Any

import pytest
from django.contrib import admin
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


def policy(response: Any) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    directives: dict[str, list[str]] = {}
    for part in header.split(";"):
        name, *values = part.split()
        directives[name] = values
    return directives


class Elements(HTMLParser):
    """The scripts, styles, stylesheets and inline handlers of a page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict[str, Any]] = []
        self.styles: list[dict[str, Any]] = []
        self.stylesheets: list[str] = []
        self.handlers: list[str] = []
        self._open: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        self.handlers += [f"{tag} {name}" for name in found if name.startswith("on")]
        self.handlers += [
            f"{tag} {name}" for name, value in found.items() if value.strip().lower().startswith("javascript:")
        ]
        if tag in ("script", "style"):
            self._open = {"attrs": found, "text": ""}
            (self.scripts if tag == "script" else self.styles).append(self._open)
        elif tag == "link" and "stylesheet" in found.get("rel", ""):
            self.stylesheets.append(found.get("href", ""))

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style"):
            self._open = None


def _same_origin(url: str) -> bool:
    return url.startswith("/") and not url.startswith("//")


def _sha256(text: str) -> str:
    return f"'sha256-{base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()}'"


def assert_page_runs_under_its_policy(response: Any) -> dict[str, list[str]]:
    """Every script and style of the page is one its own Content-Security-Policy allows."""
    directives = policy(response)
    page = Elements()
    page.feed(response.content.decode())
    nonces = {
        value[len("'nonce-") : -1]
        for value in directives["script-src"] + directives["style-src"]
        if value.startswith("'nonce-")
    }
    assert len(nonces) <= 1
    nonce = next(iter(nonces), None)
    for script in page.scripts:
        attrs = script["attrs"]
        if "src" in attrs:
            assert _same_origin(attrs["src"]), attrs["src"]
        elif attrs.get("type") == "application/json":
            continue  # data, never run
        else:
            assert nonce and attrs.get("nonce") == nonce, f"an inline script without the nonce: {script['text'][:80]}"
    for style in page.styles:
        allowed = (nonce and style["attrs"].get("nonce") == nonce) or _sha256(style["text"]) in directives["style-src"]
        assert allowed, f"an inline style neither nonced nor hashed: {style['text'][:80]}"
    assert all(_same_origin(href) for href in page.stylesheets), page.stylesheets
    assert page.handlers == [], page.handlers
    return directives


def test_the_policy_allows_our_origin_only():
    response = Client().get(reverse("admin:login"))
    directives = policy(response)
    assert directives["default-src"] == ["'self'"]
    # The login page uses no nonce, so none is sent: only files of ours run, and a hashed Django style applies.
    assert directives["script-src"] == ["'self'"]
    assert directives["style-src"][0] == "'self'" and all(v.startswith("'sha256-") for v in directives["style-src"][1:])
    assert directives["style-src-attr"] == ["'unsafe-inline'"]
    assert directives["img-src"] == ["'self'", "data:"] and directives["font-src"] == ["'self'"]
    assert directives["object-src"] == ["'none'"] and directives["frame-ancestors"] == ["'none'"]
    assert directives["base-uri"] == ["'self'"] and directives["form-action"] == ["'self'"]
    header = response["Content-Security-Policy"]
    for forbidden in ("'unsafe-eval'", "http:", "https:", "*", "cdn"):
        assert forbidden not in header, forbidden


def test_a_page_with_a_nonced_element_gets_a_fresh_nonce_each_time(admin_client):
    url = reverse("admin:django_celery_beat_periodictask_add")
    first, second = (policy(admin_client.get(url)) for _ in range(2))
    assert first["script-src"][0] == "'self'" and first["script-src"][1].startswith("'nonce-")
    assert len(first["script-src"][1]) >= len("'nonce-'") + 16
    assert first["script-src"][1] != second["script-src"][1]
    assert "'unsafe-inline'" not in first["script-src"] + first["style-src"]


def test_the_login_page_runs_under_the_policy():
    response = Client().get(reverse("admin:login"))
    assert response.status_code == HTTPStatus.OK
    assert_page_runs_under_its_policy(response)


def _admin_pages() -> list[str]:
    names = ["admin:index", "admin:password_change"]
    for model in admin.site._registry:
        names.append(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")
    return names


@pytest.mark.parametrize("name", _admin_pages())
def test_every_admin_list_runs_under_the_policy(name, admin_client):
    response = admin_client.get(reverse(name))
    assert response.status_code == HTTPStatus.OK
    assert_page_runs_under_its_policy(response)


@pytest.mark.parametrize(
    "model",
    [
        m
        for m, a in admin.site._registry.items()
        if a.has_add_permission.__func__ is admin.ModelAdmin.has_add_permission
    ],
)
def test_every_admin_add_form_runs_under_the_policy(model, admin_client, rf):
    response = admin_client.get(reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_add"))
    assert response.status_code in (HTTPStatus.OK, HTTPStatus.FORBIDDEN)
    if response.status_code == HTTPStatus.OK:
        assert_page_runs_under_its_policy(response)


def test_the_periodic_task_form_keeps_its_script_under_the_nonce(admin_client):
    response = admin_client.get(reverse("admin:django_celery_beat_periodictask_add"))
    assert response.status_code == HTTPStatus.OK
    assert 'id="periodic-task-overrides" nonce="' in response.content.decode()
    assert_page_runs_under_its_policy(response)


def test_our_pages_with_inline_styles_carry_the_nonce(admin_client, workspace):
    (workspace / "USER.md").write_text("## Preferences\n\n- Prefers tea.\n")
    pages = [
        reverse("admin:guardian_app_file_history", args=["USER.md"]),
        reverse("admin:guardian_app_memorychunk_changelist") + "recall/?q=tea",
        reverse("admin:guardian_app_learningevent_changelist"),
        reverse("admin:sessions_app_memorygatedecision_changelist"),
    ]
    for url in pages:
        response = admin_client.get(url)
        assert response.status_code == HTTPStatus.OK, url
        directives = assert_page_runs_under_its_policy(response)
        nonced = [v[len("'nonce-") : -1] for v in directives["style-src"] if v.startswith("'nonce-")]
        assert len(nonced) == 1, url  # the page's own <style> needed it
        assert f'<style nonce="{nonced[0]}">' in response.content.decode(), url


def test_the_diff_styles_are_a_stylesheet_of_ours(admin_client):
    from guardian_app.admin.rendering import DIFF_STYLE

    assert "<style" not in DIFF_STYLE and 'href="/static/guardian_app/diff.css"' in DIFF_STYLE
    css = Client().get("/static/guardian_app/diff.css")
    assert css.status_code == HTTPStatus.OK


def test_the_api_docs_serve_swagger_from_our_origin():
    response = Client().get("/api/docs")
    assert response.status_code == HTTPStatus.OK
    body = response.content.decode()
    assert "cdn." not in body and "jsdelivr" not in body
    assert_page_runs_under_its_policy(response)
    for asset in re.findall(r'(?:src|href)="(/static/ninja/[^"]+)"', body):
        assert Client().get(asset).status_code == HTTPStatus.OK, asset
    assert len(re.findall(r'src="/static/ninja/', body)) == 2


def test_the_api_answers_carry_the_policy_too(api_client):
    response = api_client.get("/api/v1/sessions")
    assert response.status_code == HTTPStatus.OK
    assert "default-src 'self'" in response["Content-Security-Policy"]
