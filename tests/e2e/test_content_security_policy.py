"""The admin and the API docs work in Chromium under the Content-Security-Policy (issue 18): pages that use our
nonced styles, celery-beat's nonced script, Django's change list and the Swagger UI (ninja's bundled files) load
with no CSP violation and no script error, and a run of wrong admin passwords ends on the lockout page."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.urls import reverse

from tests.e2e.conftest import login


class Console:
    """CSP violations and script errors a page reports."""

    def __init__(self, page: Any) -> None:
        self.problems: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))

    def _console(self, message: Any) -> None:
        text = message.text
        if message.location.get("url", "").endswith("/favicon.ico"):
            return  # the browser asks for it on its own; no page of ours links it
        if message.type == "error" or "Content Security Policy" in text or "Content-Security-Policy" in text:
            self.problems.append(f"{message.type}: {text} ({message.location.get('url', '')})")


def test_admin_pages_and_api_docs_run_without_a_csp_violation(page, shot, live_server, admin_user, workspace):
    (workspace / "USER.md").write_text("## Preferences\n\n- Prefers tea.\n")
    console = Console(page)
    login(page, live_server.url, "admin", "password")
    urls = [
        "/admin/",
        "/admin/guardian_app/writeguardianaudit/",
        "/admin/guardian_app/learningevent/",
        "/admin/sessions_app/memorygatedecision/",
        "/admin/guardian_app/memorychunk/recall/?q=tea",
        reverse("admin:guardian_app_file_history", args=["USER.md"]),
        "/admin/django_celery_beat/periodictask/add/",
        "/admin/auth/user/add/",
    ]
    for url in urls:
        response = page.goto(f"{live_server.url}{url}")
        assert response.status == 200, url
        assert "default-src 'self'" in response.headers["content-security-policy"]
        page.wait_for_load_state("load")
    shot("admin pages")

    # The admin's own JavaScript ran: the nav sidebar filter and the calendar/clock widgets are built by script.
    page.goto(f"{live_server.url}/admin/django_celery_beat/periodictask/add/")
    assert page.locator("#nav-sidebar").count() == 1
    assert page.locator("select#id_task, select[name=regtask]").count() >= 1

    page.goto(f"{live_server.url}/api/docs")
    page.wait_for_selector(".swagger-ui .info .title", timeout=20_000)  # Swagger UI rendered by its script
    assert "Reflection API" in page.locator(".swagger-ui .info .title").inner_text()
    assert page.locator(".opblock").count() >= 20  # every operation, from our own openapi.json
    shot("swagger")

    assert console.problems == []


def test_wrong_admin_passwords_end_on_the_lockout_page(page, shot, live_server, settings):
    settings.AXES_FAILURE_LIMIT = 3
    User.objects.create_superuser("olga", "olga@example.com", "olga-pass-123")
    console = Console(page)
    for attempt in range(3):
        page.goto(f"{live_server.url}/admin/login/")
        page.fill("#id_username", "olga")
        page.fill("#id_password", f"wrong-{attempt}")
        page.click("input[type=submit]")
        page.wait_for_load_state("load")
    assert "Sign-in paused" in page.locator("body").inner_text()
    assert re.search(r"axes_reset_username olga", page.locator("body").inner_text())
    shot("lockout page")
    assert [p for p in console.problems if "429" not in p] == []  # the 429 itself is logged as a failed load
