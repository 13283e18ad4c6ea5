"""The authorisation matrix: every operation of the served OpenAPI schema × {no key, unknown key, revoked key,
each wrong scope, valid key}, and the feedback endpoint × its learning token.

The operations come from the schema and the scope each one needs from the auth object ninja enforces for it, so
a new endpoint joins the matrix by existing: one without auth answers the "no key" case with something other
than 401 and fails, and one hidden from the schema fails ``test_every_routed_operation_is_in_the_schema``.
A refused request must also change nothing: no row appears or disappears anywhere.
"""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest
from django.apps import apps
from django.test import Client
from django.utils import timezone
from ninja.security import APIKeyHeader, HttpBearer

from reflection_site.api import ApiKey as ApiKeyAuth
from reflection_site.api import api
from reflection_site.models import ApiKey
from tests.conftest import ApiClient

pytestmark = pytest.mark.django_db

SCOPES: list[str] = list(ApiKey.Scope.values)
LEARNING_TOKEN = "matrix-learning-token"
SCHEMA: dict[str, Any] = Client().get("/api/openapi.json").json()
OPERATIONS: list[tuple[str, str, dict[str, Any]]] = [
    (method.upper(), path, operation)
    for path, methods in SCHEMA["paths"].items()
    for method, operation in methods.items()
]


def _enforced_auth() -> dict[str, list[Any]]:
    """operationId -> the auth objects ninja runs for it (what actually guards the view)."""
    found: dict[str, list[Any]] = {}
    for bound_router in api._get_bound_routers():
        for path_view in bound_router.path_operations.values():
            for operation in path_view.operations:
                op_id = operation.operation_id or api.get_openapi_operation_id(operation)
                found[op_id] = list(operation.auth_callbacks)
    return found


AUTH = _enforced_auth()
BOOKKEEPING = {"reflection_site.ApiKey", "guardian_app.LearningRateLimit", "axes.AccessAttempt", "axes.AccessLog"}


def required_scopes(operation_id: str) -> set[str] | None:
    """The scopes of which a key needs one, or None for the feedback endpoint (a learning token, not a key)."""
    callbacks = AUTH[operation_id]
    assert callbacks, f"{operation_id} has no auth at all"
    scopes: set[str] = set()
    for callback in callbacks:
        if isinstance(callback, ApiKeyAuth):
            scopes.add(callback.scope)
        elif isinstance(callback, HttpBearer) and hasattr(callback, "scopes"):  # guardian_app.api.audits.AnyScope
            scopes.update(callback.scopes)
        elif isinstance(callback, APIKeyHeader) and callback.param_name == "X-Learning-Token":
            return None
        else:
            raise AssertionError(f"{operation_id}: unknown auth {callback!r}; teach the matrix about it")
    return scopes


def _cases() -> list[Any]:
    cases = []
    for method, path, operation in OPERATIONS:
        op_id = operation["operationId"]
        scopes = required_scopes(op_id) if AUTH.get(op_id) else set()  # No auth: "no key" fails below.
        if scopes is None:
            kinds = ["no token", "wrong token", "api key instead of token", "valid token"]
        else:
            kinds = ["no key", "unknown key", "malformed header", "revoked key"]
            kinds += [f"wrong scope {s}" for s in SCOPES if s not in scopes]
            kinds += [f"valid key {s}" for s in sorted(scopes)]
        cases += [pytest.param(method, path, op_id, kind, id=f"{method} {path} | {kind}") for kind in kinds]
    return cases


def _url(path: str) -> str:
    # Any value will do: authentication runs before the path is resolved to a row.
    return re.sub(r"{[^}]+}", "USER.md", path)


def _row_counts() -> dict[str, int]:
    # The keys' own rows and the throttles' counters (a wrong learning token is counted: issue 18) aside.
    return {
        model._meta.label: model._default_manager.count()
        for model in apps.get_models()
        if not model._meta.proxy and model._meta.managed and model._meta.label not in BOOKKEEPING
    }


def _send(client: Client, method: str, path: str, **headers: str) -> Any:
    url = _url(path)
    if method == "GET":
        return client.get(url, **headers)
    return client.generic(method, url, "{}", content_type="application/json", **headers)


@pytest.mark.parametrize(("method", "path", "operation_id", "kind"), _cases())
def test_authorization_matrix(
    method: str, path: str, operation_id: str, kind: str, make_key: Any, settings: Any
) -> None:
    settings.LEARNING_FEEDBACK_TOKEN = LEARNING_TOKEN
    headers: dict[str, str] = {}
    if kind.startswith(("wrong scope", "valid key")):
        headers["HTTP_AUTHORIZATION"] = f"Bearer {make_key(kind.rsplit(' ', 1)[-1])}"
    elif kind == "unknown key":
        raw = make_key(*SCOPES)
        headers["HTTP_AUTHORIZATION"] = f"Bearer {raw[:-4]}{'AAAA' if not raw.endswith('AAAA') else 'BBBB'}"
    elif kind == "revoked key":
        headers["HTTP_AUTHORIZATION"] = f"Bearer {make_key(*SCOPES)}"
        ApiKey.objects.update(revoked_at=timezone.now())
    elif kind == "malformed header":
        headers["HTTP_AUTHORIZATION"] = "Token rk_not_a_bearer"
    elif kind == "wrong token":
        headers["HTTP_X_LEARNING_TOKEN"] = LEARNING_TOKEN + "x"
    elif kind == "api key instead of token":
        headers["HTTP_AUTHORIZATION"] = f"Bearer {make_key(*SCOPES)}"
    elif kind == "valid token":
        headers["HTTP_X_LEARNING_TOKEN"] = LEARNING_TOKEN

    before = _row_counts()
    response = _send(ApiClient(None), method, path, **headers)

    if kind.startswith("valid"):
        assert response.status_code not in (HTTPStatus.UNAUTHORIZED, HTTPStatus.FORBIDDEN), response.content
        assert response.status_code < HTTPStatus.INTERNAL_SERVER_ERROR, response.content
        return
    expected = {
        "no key": HTTPStatus.UNAUTHORIZED,
        "unknown key": HTTPStatus.UNAUTHORIZED,
        "malformed header": HTTPStatus.UNAUTHORIZED,
        "revoked key": HTTPStatus.UNAUTHORIZED,
        "no token": HTTPStatus.FORBIDDEN,
        "wrong token": HTTPStatus.FORBIDDEN,
        "api key instead of token": HTTPStatus.FORBIDDEN,
    }.get(kind, HTTPStatus.FORBIDDEN)
    assert response.status_code == expected, f"{method} {path} with {kind}: {response.status_code} {response.content}"
    assert response.json()["error"]["code"] == ("unauthorized" if expected == HTTPStatus.UNAUTHORIZED else "forbidden")
    assert _row_counts() == before, "a refused request changed the database"


def test_every_operation_declares_its_security_in_the_schema() -> None:
    schemes = SCHEMA["components"]["securitySchemes"]
    for method, path, operation in OPERATIONS:
        security = operation.get("security")
        assert security, f"{method} {path} declares no security in the schema"
        for requirement in security:
            for name in requirement:
                assert name in schemes, f"{method} {path} names an undeclared security scheme {name}"


def test_every_routed_operation_is_in_the_schema() -> None:
    """An operation left out of the schema would escape the matrix and the fuzzer."""
    in_schema = {op["operationId"] for _, _, op in OPERATIONS}
    assert set(AUTH) == in_schema


def test_the_matrix_covers_every_operation_and_scope() -> None:
    cases = _cases()
    assert len({c.values[2] for c in cases}) == len(OPERATIONS) >= 50
    assert sum(1 for c in cases if c.values[3].startswith("wrong scope")) >= len(OPERATIONS) * 2


# --- Reads do not write (issue 18) ----------------------------------------------------------------------------
def _database_state() -> dict[str, list[dict[str, Any]]]:
    """Every row of every table but the keys' own (authentication stamps ``last_used_at`` at most once a minute)."""
    return {
        model._meta.label: list(model._default_manager.order_by("pk").values())
        for model in apps.get_models()
        if not model._meta.proxy and model._meta.managed and model._meta.label not in BOOKKEEPING
    }


@pytest.fixture
def hand_edited_user_md(workspace: Any) -> Any:
    """USER.md with a recorded version, then changed by hand (not yet recorded)."""
    from guardian_app.write.history import check_drift

    path = workspace / "USER.md"
    path.write_text("## Preferences\n\n- Prefers tea.\n")
    assert check_drift(["USER.md"])
    path.write_text("## Preferences\n\n- Prefers tea.\n- Typed by hand.\n")
    return path


def test_no_get_operation_writes_to_the_database(make_key: Any, hand_edited_user_md: Any) -> None:
    """Every GET of the schema, with a key of every scope, leaves every row as it was: a read never records a
    hand edit, a hit or anything else."""
    client = ApiClient(make_key(*SCOPES))
    before = _database_state()
    answered = 0
    for method, path, _ in OPERATIONS:
        if method != "GET":
            continue
        response = client.get(_url(path))
        assert response.status_code < HTTPStatus.INTERNAL_SERVER_ERROR, (path, response.content)
        answered += response.status_code == HTTPStatus.OK
        assert _database_state() == before, f"GET {path} wrote to the database"
    assert answered >= 10


def test_reading_a_file_history_records_no_hand_edit(make_key: Any, hand_edited_user_md: Any) -> None:
    from guardian_app.models import FileVersion
    from guardian_app.write.history import check_drift

    reader = ApiClient(make_key("read"))
    versions = FileVersion.objects.count()
    history = reader.get("/api/v1/guardian/files/USER.md/history")
    assert history.status_code == HTTPStatus.OK
    assert len(history.json()["items"]) == 1 and history.json()["items"][0]["kind"] != "hand_edit"
    assert FileVersion.objects.count() == versions
    assert reader.get("/api/v1/guardian/files/USER.md").json()["changed_by_hand"] is True

    check_drift()  # The drift check records it.
    assert FileVersion.objects.count() == versions + 1
    assert reader.get("/api/v1/guardian/files/USER.md").json()["changed_by_hand"] is False


@pytest.mark.parametrize("scope", [s for s in SCOPES if s not in {"ingest", "operate"}])
def test_keys_that_may_only_read_cannot_report_hits(make_key: Any, scope: str) -> None:
    """A hit changes ranking (recall) and postpones decay and expiry (learning): the agent's ``ingest`` key or
    an operator's may report one, a ``read`` or ``annotate`` key may not."""
    from guardian_app.models import MemoryItem

    item = MemoryItem.objects.create(content="Prefers tea.", fingerprint="f" * 64, quality_score=0.9, score=0.9)
    client = ApiClient(make_key(scope))
    assert client.post(f"/api/v1/learning/memory-items/{item.id}/hit").status_code == HTTPStatus.FORBIDDEN
    assert client.post("/api/v1/recall/hits", {"ids": [1]}).status_code == HTTPStatus.FORBIDDEN
    item.refresh_from_db()
    assert (item.hit_count, item.last_hit_at) == (0, None)

    for writer in ("ingest", "operate"):
        answer = ApiClient(make_key(writer)).post(f"/api/v1/learning/memory-items/{item.id}/hit")
        assert answer.status_code == HTTPStatus.OK
    item.refresh_from_db()
    assert item.hit_count == 2


def test_hit_operations_declare_write_scopes_in_the_matrix() -> None:
    hits = [op_id for op_id in AUTH if op_id.endswith(("record_hit", "report_hits"))]
    assert len(hits) == 2, sorted(AUTH)
    for op_id in hits:
        assert required_scopes(op_id) == {"ingest", "operate"}, op_id
