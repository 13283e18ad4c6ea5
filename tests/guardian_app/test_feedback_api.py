"""POST /api/v1/traces/{turn_id}/feedback and the /api/v1/learning/... endpoints; the seed's §7 acceptance list."""

from __future__ import annotations

import re
from http import HTTPStatus
from typing import Any

import pytest
from django.db import DatabaseError

from guardian_app.learning import feedback, ratelimit
from guardian_app.learning.failures import guardrail_error_count
from guardian_app.models import FeedbackIdempotency, LearningEvent, MemoryItem, Rule
from sessions_app.models import ConversationTurn
from tests.conftest import ApiClient
from tests.guardian_app.conftest import LEARNING_TOKEN

pytestmark = pytest.mark.django_db

GOOD_FACT = "The production database is PostgreSQL 15 on host db-2; backups run nightly at 02:00 UTC."


def post_feedback(turn_id: str, body: dict[str, Any] | str, *, token: str | None = LEARNING_TOKEN) -> Any:
    extra = {"HTTP_X_LEARNING_TOKEN": token} if token is not None else {}
    return ApiClient(None).post(f"/api/v1/traces/{turn_id}/feedback", body, **extra)


def up(user_id: str = "u1", **kw: Any) -> dict[str, Any]:
    return {"user_id": user_id, "feedback": "up", **kw}


def down(reason: str, user_id: str = "u1", **kw: Any) -> dict[str, Any]:
    return {"user_id": user_id, "feedback": "down", "reason": reason, **kw}


def nothing_stored(turn: ConversationTurn) -> bool:
    turn.refresh_from_db()
    return (
        turn.feedback_json is None
        and not FeedbackIdempotency.objects.exists()
        and not MemoryItem.objects.exists()
        and not Rule.objects.exists()
    )


# --- §7.1: no token, 403 ------------------------------------------------------------------------
def test_feedback_without_a_token_is_forbidden(learning, make_turn):
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, up(), token=None)
    assert response.status_code == HTTPStatus.FORBIDDEN
    assert response.json()["error"]["code"] == "forbidden"
    assert nothing_stored(turn)


def test_feedback_with_a_wrong_token_is_forbidden(learning, make_turn):
    turn = make_turn(fact=GOOD_FACT)
    for wrong in ("nope", LEARNING_TOKEN + "x", LEARNING_TOKEN[:-1], ""):
        assert post_feedback(turn.id, up(), token=wrong).status_code == HTTPStatus.FORBIDDEN
    assert nothing_stored(turn)


def test_without_a_configured_token_every_feedback_is_forbidden(learning, make_turn):
    learning.LEARNING_FEEDBACK_TOKEN = ""
    turn = make_turn(fact=GOOD_FACT)
    assert post_feedback(turn.id, up(), token="").status_code == HTTPStatus.FORBIDDEN
    assert post_feedback(turn.id, up(), token=LEARNING_TOKEN).status_code == HTTPStatus.FORBIDDEN
    assert "not configured" in post_feedback(turn.id, up()).json()["error"]["message"]
    assert nothing_stored(turn)


def test_the_token_is_checked_before_the_body_and_the_turn(learning):
    assert post_feedback("no-such-turn", "not json", token="wrong").status_code == HTTPStatus.FORBIDDEN


def test_the_token_is_compared_in_constant_time(learning, make_turn, monkeypatch):
    import hmac

    calls = []
    real = hmac.compare_digest
    monkeypatch.setattr(hmac, "compare_digest", lambda a, b: calls.append((a, b)) or real(a, b))
    post_feedback(make_turn().id, up(), token="guess")
    assert calls == [(b"guess", LEARNING_TOKEN.encode())]


def test_the_openapi_schema_shows_the_learning_token(api_client):
    schema = api_client.get("/api/openapi.json").json()
    assert schema["components"]["securitySchemes"]["LearningToken"] == {
        "type": "apiKey",
        "in": "header",
        "name": "X-Learning-Token",
        "description": "The shared secret LEARNING_FEEDBACK_TOKEN. Missing or wrong: 403; too many wrong ones from "
        "one address: 429.",
    }
    assert schema["paths"]["/api/v1/traces/{turn_id}/feedback"]["post"]["security"] == [{"LearningToken": []}]


# --- Validation ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "body",
    [
        {"feedback": "up"},
        {"user_id": "u1"},
        {"user_id": "u1", "feedback": "meh"},
        {"user_id": "", "feedback": "up"},
        {"user_id": "   ", "feedback": "up"},
        {"user_id": "u1", "feedback": "up", "reason": "x" * 4001},
        {"user_id": "u1", "feedback": "up", "project_id": "../etc"},
    ],
)
def test_a_bad_body_is_422_and_stores_nothing(learning, make_turn, body):
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "validation_error"
    assert nothing_stored(turn)


def test_a_nul_character_is_422_invalid_character_and_stores_nothing(learning, make_turn):
    # The NUL guard runs before validation (PostgreSQL text cannot hold U+0000), so its code is its own.
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, {"user_id": "u1\x00", "feedback": "up"})
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert response.json()["error"]["code"] == "invalid_character"
    assert nothing_stored(turn)


def test_an_unknown_turn_is_404(learning):
    response = post_feedback("01HZZZZZZZZZZZZZZZZZZZZZZZ", up())
    assert response.status_code == HTTPStatus.NOT_FOUND
    assert response.json()["error"]["code"] == "not_found"


@pytest.mark.parametrize(("value", "stored"), [("👍", "up"), ("👎🏽", "down"), ("UP", "up"), ("👍️", "up")])
def test_thumbs_emoji_are_accepted(learning, make_turn, value, stored):
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, {"user_id": "u1", "feedback": value, "reason": "Never use emoji in replies"})
    assert response.status_code == HTTPStatus.OK, response.content
    turn.refresh_from_db()
    assert turn.feedback_json["last"] == stored


# --- The answer ----------------------------------------------------------------------------------
def test_accepted_positive_feedback_answers_with_the_guardrails_decision(
    learning, make_turn, guardian_calls, django_capture_on_commit_callbacks
):
    turn = make_turn(fact=GOOD_FACT)
    with django_capture_on_commit_callbacks(execute=True):
        response = post_feedback(turn.id, up())
    assert response.status_code == HTTPStatus.OK
    body = response.json()
    item = MemoryItem.objects.get()
    assert body == {
        "ok": True,
        "deduplicated": False,
        "guardrails": {
            "accepted": True,
            "deduplicated": False,
            "reason": "mem_accept",
            "shadow_mode": False,
            "event_id": LearningEvent.objects.get(event_type="mem_accept").id,
            "item_id": item.id,
        },
    }
    assert guardian_calls == [("MEMORY.md", GOOD_FACT, "learning", item.id)]


def test_shadow_mode_is_the_default_and_applies_nothing(learning, make_turn, guardian_calls):
    learning.LEARNING_SHADOW_MODE = True
    body = post_feedback(make_turn(fact=GOOD_FACT).id, up()).json()
    assert body["guardrails"]["shadow_mode"] is True and body["guardrails"]["accepted"] is True
    assert not MemoryItem.objects.exists() and guardian_calls == []
    assert LearningEvent.objects.get().shadow


def test_the_kill_switch_stores_plain_feedback(learning, make_turn):
    learning.LEARNING_GUARDRAILS_ENABLED = False
    turn = make_turn(fact=GOOD_FACT)
    body = post_feedback(turn.id, up()).json()
    assert body["guardrails"]["reason"] == "guardrails_disabled"
    turn.refresh_from_db()
    assert turn.feedback_json["last"] == "up"
    assert LearningEvent.objects.get().reason == "guardrails_disabled" and not MemoryItem.objects.exists()
    assert post_feedback(turn.id, up()).json()["deduplicated"] is True


# --- §7.2: the same idempotency key twice, one write -------------------------------------------
def test_a_repeated_feedback_is_deduplicated_and_written_once(
    learning, make_turn, guardian_calls, django_capture_on_commit_callbacks
):
    turn = make_turn(fact=GOOD_FACT)
    with django_capture_on_commit_callbacks(execute=True):
        first = post_feedback(turn.id, up())
        again = post_feedback(turn.id, up(reason="really good"))
    assert (first.status_code, again.status_code) == (HTTPStatus.OK, HTTPStatus.OK)
    assert first.json()["deduplicated"] is False
    assert again.json()["ok"] is True and again.json()["deduplicated"] is True
    assert again.json()["guardrails"]["deduplicated"] is True
    assert FeedbackIdempotency.objects.count() == 1
    assert MemoryItem.objects.count() == 1 and len(guardian_calls) == 1
    assert LearningEvent.objects.count() == 1
    turn.refresh_from_db()
    assert len(turn.feedback_json["events"]) == 1


def test_the_idempotency_key_is_a_unique_constraint(learning, make_turn):
    from django.db import IntegrityError, transaction

    turn = make_turn()
    key = feedback.idempotency_key(turn.id, "u1", "up")
    FeedbackIdempotency.objects.create(idem_key=key, trace_id=turn.id, user_id="u1", feedback="up")
    with pytest.raises(IntegrityError), transaction.atomic():
        FeedbackIdempotency.objects.create(idem_key=key, trace_id=turn.id, user_id="u1", feedback="up")


def test_feedback_claimed_by_a_concurrent_request_is_deduplicated(learning, make_turn):
    """The loser of a race finds the key taken when it inserts: the unique key, not a prior read, decides."""
    turn = make_turn(fact=GOOD_FACT)
    FeedbackIdempotency.objects.create(
        idem_key=feedback.idempotency_key(turn.id, "u1", "up"), trace_id=turn.id, user_id="u1", feedback="up"
    )
    body = post_feedback(turn.id, up()).json()
    assert body["deduplicated"] is True
    assert not MemoryItem.objects.exists()


# --- §7.3: junk feedback learns nothing ----------------------------------------------------------
@pytest.mark.parametrize(
    ("user", "agent"),
    [
        ("thanks!", "You're welcome!"),
        ("ok", "Great, let me know if you need anything else."),
        ("Thank you so much, that is perfect, hope this helps, bye!", "Happy to help!"),
        ("谢谢你，非常感谢，回答得很好，很有帮助，太棒了，辛苦了，希望对你有帮助", "不客气！"),
    ],
)
def test_junk_positive_feedback_writes_no_memory(learning, make_turn, guardian_calls, user, agent):
    body = post_feedback(make_turn(user=user, agent=agent).id, up()).json()
    assert body["ok"] is True and body["guardrails"]["accepted"] is False
    assert body["guardrails"]["reason"] in {"too_short", "boilerplate", "low_score"}
    assert not MemoryItem.objects.exists() and guardian_calls == []
    assert LearningEvent.objects.get().event_type == "mem_reject"


@pytest.mark.parametrize("reason", [None, "bad", "no!!", "wrong wrong wrong wrong", "不好"])
def test_junk_negative_feedback_writes_no_rule(learning, make_turn, reason):
    body = post_feedback(make_turn().id, {"user_id": "u1", "feedback": "down", "reason": reason}).json()
    assert body["guardrails"]["accepted"] is False
    assert body["guardrails"]["reason"] in {"reason_too_short", "unclassified"}
    assert not Rule.objects.exists()
    assert LearningEvent.objects.get().event_type == "rule_reject"


# --- §7.4: conflicts resolved by priority, audited -----------------------------------------------
def test_conflicting_rules_are_resolved_by_priority_and_audited(learning, make_turn, api_client):
    assert post_feedback(make_turn().id, down("Use more emoji in replies", "u1")).json()["guardrails"]["accepted"]
    stronger = post_feedback(make_turn().id, down("Never use emoji in replies", "u2")).json()["guardrails"]
    weaker = post_feedback(make_turn().id, down("Use emoji in replies, they're fun", "u3")).json()["guardrails"]
    assert stronger["accepted"] is True and weaker == {**weaker, "accepted": False, "reason": "rule_conflict"}

    active = api_client.get("/api/v1/learning/rules", {"status": "active"}).json()["items"]
    assert [r["content"] for r in active] == ["Never use emoji in replies"]
    suppressed = api_client.get("/api/v1/learning/rules", {"status": "suppressed"}).json()["items"]
    assert suppressed[0]["conflict_with"] == active[0]["id"]

    audit = api_client.get("/api/v1/learning/events").json()["items"]
    assert [(e["event_type"], e["reason"], e["user_id"]) for e in audit] == [
        ("rule_conflict", "lower_priority", "u3"),
        ("rule_accept", "superseded_conflict", "u2"),
        ("rule_suppress", "conflict", "u2"),
        ("rule_accept", "accepted", "u1"),
    ]
    assert all(e["source"] == "api_feedback" for e in audit)


# --- Stability: fail open, never block ingest ----------------------------------------------------
def test_a_database_error_in_the_guardrails_still_acknowledges_the_feedback(learning, make_turn, monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("database is locked")

    monkeypatch.setattr(MemoryItem.objects, "create", broken)
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, up())
    assert response.status_code == HTTPStatus.OK
    assert response.json()["guardrails"]["reason"] == "guardrails_error"
    turn.refresh_from_db()
    assert turn.feedback_json["last"] == "up"
    assert LearningEvent.objects.get(event_type="guardrail_error").reason == "memory_guard"


def test_an_unreachable_redis_fails_open_and_is_counted(learning, make_turn, unused_port):
    learning.REDIS_URL = f"redis://127.0.0.1:{unused_port}/0"
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    turn = make_turn(fact=GOOD_FACT)
    codes = [post_feedback(turn.id, up(f"user-{i % 2}")).status_code for i in range(4)]
    assert codes == [HTTPStatus.OK] * 4  # no limit enforced, and no 5xx
    assert ratelimit.fail_open_count("redis", policy="feedback") == 4
    assert guardrail_error_count("ratelimit") == 4
    assert LearningEvent.objects.filter(event_type="guardrail_error", reason="ratelimit").count() == 1  # throttled


def test_a_failing_rate_limit_table_fails_open(learning, make_turn, monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("no such table: learning_rate_limits")

    monkeypatch.setattr(ratelimit, "_hit_database", broken)
    assert post_feedback(make_turn().id, up()).status_code == HTTPStatus.OK
    assert ratelimit.fail_open_count("database", policy="feedback") == 1
    assert ratelimit.fail_open_count("database") == 2  # the per-address limit failed open too


def test_ingest_is_untouched_when_the_guardrails_fail(learning, make_turn, monkeypatch, api_client):
    from tests.conftest import turn_payload

    monkeypatch.setattr(feedback, "_memory_guard", lambda *a: 1 / 0)
    monkeypatch.setattr(ratelimit, "_hit_database", lambda *a, **kw: 1 / 0)
    assert api_client.post("/api/v1/turns", turn_payload()).status_code == HTTPStatus.CREATED
    turn = ConversationTurn.objects.get()
    assert post_feedback(turn.id, up()).status_code == HTTPStatus.OK
    assert api_client.post("/api/v1/turns", turn_payload(user="second")).status_code == HTTPStatus.CREATED


# --- Rate limit ----------------------------------------------------------------------------------
def test_the_per_user_rate_limit_answers_429_with_retry_after(learning, make_turn):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 2
    turns = [make_turn(fact=f"{GOOD_FACT} Replica {i} is on db-{i + 3}.") for i in range(4)]
    first, second, third = (post_feedback(t.id, up("alice")) for t in turns[:3])
    assert (first.status_code, second.status_code) == (HTTPStatus.OK, HTTPStatus.OK)
    assert third.status_code == HTTPStatus.TOO_MANY_REQUESTS
    assert third.json()["error"]["code"] == "rate_limited"
    retry_after = int(third["Retry-After"])
    assert 1 <= retry_after <= 60
    assert third["RateLimit-Policy"] == '"feedback";q=2;w=60'
    assert re.fullmatch(r'"feedback";r=0;t=\d+', third["RateLimit"])
    assert first["RateLimit"].startswith('"feedback";r=1;') and second["RateLimit"].startswith('"feedback";r=0;')
    assert post_feedback(turns[3].id, up("bob")).status_code == HTTPStatus.OK  # per user
    event = LearningEvent.objects.get(event_type="rate_limited")
    assert (event.user_id, event.trace_id, event.payload_json["limit_per_min"]) == ("alice", turns[2].id, 2)
    turns[2].refresh_from_db()
    assert turns[2].feedback_json is None  # a refused request stores nothing


def test_rate_limited_requests_are_counted_in_the_metrics(learning, make_turn, api_client):
    learning.LEARNING_RATE_LIMIT_PER_MIN = 1
    turn = make_turn()
    post_feedback(turn.id, down("Never use emoji in replies"))
    post_feedback(turn.id, up())
    metrics = api_client.get("/api/v1/learning/metrics", {"window": "1d"}).json()
    assert (metrics["rate_limited"], metrics["accepted"]) == (1, 1)


# --- The agent's endpoints -----------------------------------------------------------------------
def test_rules_come_highest_priority_first(learning, make_turn, client_for):
    for reason in ("Use bullet points for lists", "Never share passwords in chat", "Send deploy questions to #ops"):
        post_feedback(make_turn().id, down(reason))
    items = client_for("read").get("/api/v1/learning/rules", {"status": "active"}).json()["items"]
    assert [(r["rule_type"], r["priority"]) for r in items] == [("safety", 100), ("routing", 60), ("style", 40)]


def test_the_learning_endpoints_need_an_api_key_and_the_right_scope(learning, make_turn, anon_client, client_for):
    post_feedback(make_turn(fact=GOOD_FACT).id, up())
    item = MemoryItem.objects.get()
    assert anon_client.get("/api/v1/learning/memory-items").status_code == HTTPStatus.UNAUTHORIZED
    assert client_for("ingest").get("/api/v1/learning/rules").status_code == HTTPStatus.FORBIDDEN
    reader = client_for("read")
    assert reader.get("/api/v1/learning/memory-items").json()["items"][0]["id"] == item.id
    assert reader.post(f"/api/v1/learning/memory-items/{item.id}/suppress").status_code == HTTPStatus.FORBIDDEN
    assert reader.post("/api/v1/learning/decay").status_code == HTTPStatus.FORBIDDEN


def test_a_hit_is_recorded_and_postpones_expiry(learning, make_turn, client_for):
    post_feedback(make_turn(fact=GOOD_FACT).id, up())
    item = MemoryItem.objects.get()
    agent = client_for("ingest")  # A hit is a write: the agent's key, not a read-only one.
    assert client_for("read").post(f"/api/v1/learning/memory-items/{item.id}/hit").status_code == HTTPStatus.FORBIDDEN
    body = agent.post(f"/api/v1/learning/memory-items/{item.id}/hit").json()
    assert (body["kind"], body["id"], body["hit_count"]) == ("memory-items", item.id, 1)
    assert agent.post(f"/api/v1/learning/memory-items/{item.id}/hit").json()["hit_count"] == 2
    refreshed = MemoryItem.objects.get()
    assert refreshed.last_hit_at is not None and refreshed.expires_at > item.expires_at
    assert agent.post("/api/v1/learning/rules/nope/hit").status_code == HTTPStatus.NOT_FOUND
    assert agent.post(f"/api/v1/learning/widgets/{item.id}/hit").status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_operators_suppress_archive_and_reactivate_over_the_api(learning, make_turn, client_for):
    post_feedback(make_turn().id, down("Never use emoji in replies"))
    rule = Rule.objects.get()
    operator = client_for("operate")
    body = operator.post(f"/api/v1/learning/rules/{rule.id}/archive", {"note": "obsolete"}).json()
    assert body == {"kind": "rules", "id": rule.id, "status": "archived", "changed": True}
    assert operator.post(f"/api/v1/learning/rules/{rule.id}/archive").json()["changed"] is False
    assert operator.post(f"/api/v1/learning/rules/{rule.id}/reactivate").json()["status"] == "active"
    assert operator.post(f"/api/v1/learning/rules/{rule.id}/explode").status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    archive = LearningEvent.objects.get(event_type="rule_archive")
    assert archive.source == "operator" and archive.payload_json["note"] == "obsolete"


def test_metrics_report_counts_in_a_window(learning, make_turn, client_for):
    post_feedback(make_turn(fact=GOOD_FACT).id, up())
    post_feedback(make_turn(user="ok", agent="ok").id, up())
    reader = client_for("read")
    body = reader.get("/api/v1/learning/metrics", {"window": "7d"}).json()
    assert (body["window"], body["accepted"], body["rejected"], body["expired"]) == ("7d", 1, 1, 0)
    assert body["hit_rate"] == 0.0 and body["active"] == {"memory_items": 1, "rules": 0}
    assert body["shadow_mode"] is False and body["guardrails_enabled"] is True
    for bad in ("7", "7y", "0h", "9999d"):
        assert reader.get("/api/v1/learning/metrics", {"window": bad}).status_code == HTTPStatus.UNPROCESSABLE_ENTITY


def test_the_decay_can_be_run_by_an_operator(learning, client_for):
    body = client_for("operate").post("/api/v1/learning/decay").json()
    assert body["enabled"] is True and body["memory_items_expired"] == 0
    assert LearningEvent.objects.get().event_type == "decay_run"


@pytest.fixture
def unused_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_concurrent_request_that_learned_the_same_fact_first_makes_a_duplicate(learning, make_turn, monkeypatch):
    """The fingerprint check passed, then another request inserted the same fact: the unique key decides."""
    from guardian_app.learning.memory import MemoryCheck
    from reflection_site.text import fingerprint

    winner = MemoryItem.objects.create(content=GOOD_FACT, fingerprint=fingerprint(GOOD_FACT))
    monkeypatch.setattr(
        feedback,
        "check_memory_in_database",
        lambda screened, project_id: MemoryCheck(True, "accepted", screened.fingerprint, screened.quality),
    )
    turn = make_turn(fact=GOOD_FACT)
    body = post_feedback(turn.id, up()).json()
    assert body["guardrails"]["reason"] == "duplicate" and body["guardrails"]["accepted"] is False
    assert MemoryItem.objects.count() == 1
    event = LearningEvent.objects.get()
    assert (event.event_type, event.reason, event.ref_id) == ("mem_reject", "duplicate", winner.id)
    turn.refresh_from_db()
    assert turn.feedback_json["last"] == "up"
    assert guardrail_error_count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_dead_broker_does_not_fail_the_feedback(learning, make_turn, sent_tasks):
    sent_tasks.error = ConnectionRefusedError("broker down")
    turn = make_turn(fact=GOOD_FACT)
    response = post_feedback(turn.id, up())
    assert response.status_code == HTTPStatus.OK
    assert response.json()["guardrails"]["reason"] == "mem_accept"
    assert MemoryItem.objects.get().status == "active"  # the decay job hands it over again later
