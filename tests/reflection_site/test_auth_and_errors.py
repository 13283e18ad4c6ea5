from __future__ import annotations

import json
from http import HTTPStatus

import pytest
from django.core.management import call_command

from reflection_site.models import ApiKey
from sessions_app.models import ConversationSession, ConversationTurn
from tests.conftest import ApiClient, turn_payload

pytestmark = pytest.mark.django_db


def test_no_key_is_401(anon_client):
    response = anon_client.get("/api/v1/sessions")
    assert response.status_code == HTTPStatus.UNAUTHORIZED
    assert response.json()["error"]["code"] == "unauthorized"


def test_a_wrong_key_is_401(make_key):
    make_key("read")
    response = ApiClient("rk_deadbeef_wrong").get("/api/v1/sessions")
    assert response.status_code == HTTPStatus.UNAUTHORIZED


def test_a_key_without_the_scope_is_403(client_for):
    response = client_for("read").post("/api/v1/turns", turn_payload())
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["error"] == {"code": "forbidden", "message": "This API key lacks the 'ingest' scope."}
    assert ConversationTurn.objects.count() == 0
    assert client_for("ingest").get("/api/v1/sessions").status_code == HTTPStatus.FORBIDDEN


def test_a_revoked_key_is_401(client_for):
    client = client_for("read")
    assert client.get("/api/v1/sessions").status_code == HTTPStatus.OK
    call_command("apikey", "revoke", ApiKey.objects.get().name)
    assert client.get("/api/v1/sessions").status_code == HTTPStatus.UNAUTHORIZED


def test_apikey_create_prints_the_key_last_and_stores_only_a_hash(capsys):
    call_command("apikey", "create", "agent-1", "--scope", "ingest", "--scope", "read")
    out = capsys.readouterr().out.strip().splitlines()
    raw = out[-1]
    key = ApiKey.objects.get(name="agent-1")
    assert key.scopes == ["ingest", "read"]
    assert raw not in json.dumps([key.key_hash, key.prefix, key.name])
    assert key.key_hash == ApiKey.hash_key(raw)
    assert ApiClient(raw).get("/api/v1/sessions").status_code == HTTPStatus.OK
    call_command("apikey", "list")
    assert raw not in capsys.readouterr().out


def test_validation_errors_use_the_error_shape_and_store_nothing(api_client):
    payload = turn_payload()
    del payload["user_message"]
    response = api_client.post("/api/v1/turns", payload)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    error = response.json()["error"]
    assert error["code"] == "validation_error"
    assert "user_message" in error["message"]
    assert error["details"][0]["loc"][-1] == "user_message"
    assert ConversationSession.objects.count() == 0


@pytest.mark.parametrize(
    "mutate",
    [
        lambda p: p["context"].append({"role": "system", "message": "x", "timestamp": 1}),
        lambda p: p.update(turn_number=0),
        lambda p: p["session"].update(id="a/b"),
        lambda p: p["session"].update(id=""),
        lambda p: p["user_message"].update(content=""),
        lambda p: p["context"][0].update(timestamp="yesterday"),
    ],
)
def test_bad_fields_are_422(api_client, mutate):
    payload = turn_payload()
    mutate(payload)
    response = api_client.post("/api/v1/turns", payload)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, response.content
    assert ConversationTurn.objects.count() == 0


def test_malformed_json_is_a_4xx_in_the_error_shape(api_client):
    response = api_client.post("/api/v1/turns", "{not json", content_type="application/json")
    assert 400 <= response.status_code < 500
    assert "error" in response.json()


def test_a_body_over_the_limit_is_413_and_stores_nothing(api_client, settings):
    settings.MAX_REQUEST_BYTES = 2_000
    response = api_client.post("/api/v1/turns", turn_payload(user="x" * 5_000))
    assert response.status_code == HTTPStatus.REQUEST_ENTITY_TOO_LARGE
    assert response.json()["error"]["code"] == "payload_too_large"
    assert ConversationTurn.objects.count() == 0


def test_a_message_over_the_limit_is_422_and_stores_nothing(api_client, settings):
    settings.MAX_MESSAGE_CHARS = 100
    response = api_client.post("/api/v1/turns", turn_payload(user="y" * 101))
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "message_too_long"
    assert ConversationSession.objects.count() == 0


def test_openapi_docs_are_served(api_client):
    schema = api_client.get("/api/openapi.json").json()
    assert "/api/v1/turns" in schema["paths"]
    assert api_client.get("/api/docs").status_code == HTTPStatus.OK


def test_apikey_list_shows_when_a_key_was_last_used_to_the_minute(capsys):
    import datetime as dt

    from django.utils import timezone

    call_command("apikey", "create", "agent-2", "--scope", "read")
    raw = capsys.readouterr().out.strip().splitlines()[-1]
    call_command("apikey", "list")
    assert capsys.readouterr().out.splitlines()[1].rstrip().endswith("never")

    earlier = timezone.now() - dt.timedelta(seconds=61)
    ApiKey.objects.filter(name="agent-2").update(last_used_at=earlier)
    assert ApiClient(raw).get("/api/v1/sessions").status_code == HTTPStatus.OK
    call_command("apikey", "list")

    out = capsys.readouterr().out.splitlines()
    assert "LAST USED (to the minute)" in out[0]
    stamped = ApiKey.objects.get(name="agent-2").last_used_at
    assert stamped > earlier + dt.timedelta(seconds=60)
    assert out[1].rstrip().endswith(timezone.localtime(stamped).strftime("%Y-%m-%d %H:%M"))
