"""Issue 18, item 2: a NUL character is refused by content, whatever the Content-Type says (422), and the API
refuses every body that is not ``application/json`` (415); nothing is stored either way.

Before, only ``application/json`` bodies were inspected: a turn or a correction holding ``\\u0000`` sent as
``text/plain``, without a Content-Type, as ``application/vnd.api+json`` or form-encoded answered 201 and was
stored on SQLite (500 on PostgreSQL: tests/integration/test_nul_postgres.py).
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import pytest
from django.urls import reverse

from guardian_app.models import BehaviorCorrection, WriteGuardianAudit
from sessions_app.models import ConversationTurn
from tests.conftest import turn_payload

pytestmark = pytest.mark.django_db

CONTENT_TYPES = [
    "text/plain",
    "",  # no Content-Type at all
    "application/vnd.api+json",
    "application/x-www-form-urlencoded",
    "application/json",
    "application/json; charset=utf-8",
    "multipart/form-data; boundary=x",
]


def send(client: Any, url: str, body: bytes, content_type: str, key: str) -> Any:
    """POST ``body`` as it is; an empty ``content_type`` sends none (WSGI's CONTENT_TYPE is empty, as for a
    request without the header)."""
    response = client.generic("POST", url, body, content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.wsgi_request.META["CONTENT_TYPE"] == content_type
    return response


def nul_bodies(payload: dict[str, Any], field_path: tuple[str, ...]) -> list[bytes]:
    """The payload with U+0000 in one text field: as a JSON escape, as a raw byte, and escaped twice over."""
    escaped = json.dumps(payload)
    value = payload
    for key in field_path[:-1]:
        value = value[key]
    original = value[field_path[-1]]
    value[field_path[-1]] = original + "\x00 hidden"
    as_escape = json.dumps(payload).encode()  # "...\u0000 hidden"
    value[field_path[-1]] = original
    assert "\\u0000" in as_escape.decode() and escaped.encode() != as_escape
    raw = as_escape.replace(b"\\u0000", b"\x00")
    upper = as_escape.replace(b"\\u0000", b"\\U0000")
    return [as_escape, raw, upper]


@pytest.fixture
def key(make_key: Any) -> str:
    return make_key("ingest", "read", "operate", "annotate")


@pytest.fixture
def written_audit(db: None) -> WriteGuardianAudit:
    return WriteGuardianAudit.objects.create(
        target_file="USER.md", candidate_fact="Prefers tea.", status=WriteGuardianAudit.Status.WRITTEN
    )


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_a_turn_holding_nul_is_422_under_every_content_type(client, key, content_type):
    url = "/api/v1/turns"
    for body in nul_bodies(turn_payload(user="I prefer tea."), ("user_message", "content")):
        response = send(client, url, body, content_type, key)
        if content_type.startswith("multipart/"):
            # Not read for NUL (its files are binary), and not a body the API accepts.
            assert response.status_code == HTTPStatus.UNSUPPORTED_MEDIA_TYPE, response.content
        else:
            assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, (content_type, body, response.content)
            assert response.json()["error"]["code"] == "invalid_character"
    assert not ConversationTurn.objects.exists()


def test_form_encoded_nul_is_422(client, key):
    body = b"user_message=I+prefer%00tea&session=x"
    response = send(client, "/api/v1/turns", body, "application/x-www-form-urlencoded", key)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "invalid_character"


@pytest.mark.parametrize("content_type", CONTENT_TYPES)
def test_a_correction_holding_nul_is_422_under_every_content_type(client, key, written_audit, content_type):
    url = reverse("api:correct_audit", args=[written_audit.id])
    payload = {"status": "refused", "reason": "Not a fact worth keeping.", "corrected_by": "alice"}
    for body in nul_bodies(payload, ("reason",)):
        response = send(client, url, body, content_type, key)
        expected = (
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE
            if content_type.startswith("multipart/")
            else HTTPStatus.UNPROCESSABLE_ENTITY
        )
        assert response.status_code == expected, (content_type, body, response.content)
    assert not BehaviorCorrection.objects.exists()


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "",
        "application/vnd.api+json",
        "application/x-www-form-urlencoded",
        "text/json",
        "multipart/form-data; boundary=x",
    ],
)
def test_a_body_that_is_not_json_is_415_and_stores_nothing(client, key, content_type):
    body = json.dumps(turn_payload(user="I prefer tea.")).encode()
    response = send(client, "/api/v1/turns", body, content_type, key)
    assert response.status_code == HTTPStatus.UNSUPPORTED_MEDIA_TYPE, response.content
    error = response.json()["error"]
    assert error["code"] == "unsupported_media_type" and "application/json" in error["message"]
    assert not ConversationTurn.objects.exists()


@pytest.mark.parametrize("content_type", ["application/json", "application/json; charset=utf-8", "Application/JSON"])
def test_a_json_body_is_accepted(client, key, content_type):
    body = json.dumps(turn_payload(user="I prefer tea.")).encode()
    response = send(client, "/api/v1/turns", body, content_type, key)
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert ConversationTurn.objects.count() == 1


def test_an_escaped_backslash_before_u0000_is_text_not_nul(client, key):
    """``"\\\\u0000"`` in JSON is a backslash followed by the text u0000: stored as written."""
    payload = turn_payload(user="The escape \\u0000 means NUL in JSON.")
    response = send(client, "/api/v1/turns", json.dumps(payload).encode(), "application/json", key)
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert ConversationTurn.objects.get().user_message_content == "The escape \\u0000 means NUL in JSON."


def test_a_request_without_a_body_needs_no_content_type(client, key, written_audit):
    response = client.get("/api/v1/guardian/audits", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == HTTPStatus.OK
    response = client.generic("POST", "/api/v1/turns", b"", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY  # The schema's answer, not a 415.


def test_admin_forms_outside_the_api_are_not_415(admin_client):
    """Form posts (the admin) are not the API's: they keep their own encodings; NUL in them is still 422."""
    url = reverse("admin:guardian_app_behaviorcorrection_changelist")
    response = admin_client.post(url, {"action": "", "select_across": "0"})
    assert response.status_code != HTTPStatus.UNSUPPORTED_MEDIA_TYPE
    response = admin_client.post(url, "q=a%00b", content_type="application/x-www-form-urlencoded")
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
