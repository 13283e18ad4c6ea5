"""Issue 18, item 3: a correction pattern cannot stall the gate. ``/regex/`` patterns run on RE2 (linear in
the text whatever the pattern): with Python's ``re``, ``/(a+)+$/`` took 1.2 s at 24 characters and ~2 minutes
at 31; here the gate decides turns of thousands of such characters (the module's timeout is the hang guard,
not a speed assertion). A pattern RE2 refuses is a 422 when saved; one stored before that is disabled (never
matches), logged and shown as disabled in the admin, and the turn is still decided.

Also item 4b: a correction naming a bank page (or any non-memory file) is a 422, not a 500.
"""

from __future__ import annotations

import logging
from http import HTTPStatus

import pytest
from django.urls import reverse

from guardian_app.models import BehaviorCorrection, WriteGuardianAudit
from sessions_app.correction_patterns import correction_pattern_problem, matches_correction_pattern
from sessions_app.gate import decide_turn
from sessions_app.models import GateStatus

pytestmark = [pytest.mark.django_db, pytest.mark.timeout(120)]

# Catastrophic for a backtracking engine, each with a text that makes it backtrack (no match at the end).
CATASTROPHIC = [
    ("/(a+)+$/", "a" * 5000 + "!"),
    ("/(a|aa)+$/", "a" * 5000 + "!"),
    ("/(a|a?)+$/", "a" * 5000 + "!"),
    ("/(\\w+\\s?)+$/", "word " * 2000 + "!"),
    ("/^(([a-z])+.)+[A-Z]([a-z])+$/", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!" * 50),
    ("/(.*a){12}/", "a" * 3000),
]
REFUSED_BY_RE2 = ["/(?=tea)/", "/(tea)\\1/", "/(?<!green )tea/", "/(unclosed/", "/a{2000}/"]


@pytest.fixture
def audit(db: None) -> WriteGuardianAudit:
    return WriteGuardianAudit.objects.create(target_file="USER.md", candidate_fact="Likes jazz.", status="written")


def _stored_correction(audit: WriteGuardianAudit, pattern: str, status: str = "refused") -> BehaviorCorrection:
    """A correction stored as an older release did: without the pattern check."""
    return BehaviorCorrection.objects.create(
        audit=audit,
        original_status="written",
        original_candidate_fact=audit.candidate_fact,
        original_target_file="USER.md",
        corrected_status=status,
        correction_reason="Not worth keeping.",
        apply_to_future=True,
        correction_pattern=pattern,
        corrected_by="ops",
    )


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_catastrophic_patterns_match_in_linear_time(pattern, text):
    assert correction_pattern_problem(pattern) is None
    matches_correction_pattern(pattern, text)  # Returns at once (RE2); with re, longer than the universe's age.
    assert matches_correction_pattern("/(a+)+$/", "aaaa") is True
    assert matches_correction_pattern("/(a+)+$/", "aaab") is False


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
def test_the_gate_decides_a_turn_under_a_catastrophic_correction(make_turn, audit, pattern, text):
    _stored_correction(audit, pattern)
    turn = make_turn(user=f"I prefer tea. {text}")
    decision = decide_turn(turn)
    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.DONE and decision is not None


def test_regex_patterns_keep_their_meaning():
    assert matches_correction_pattern("/green\\s+tea/", "She likes GREEN   tea a lot") is True
    assert matches_correction_pattern("/^likes/", "He likes tea") is False
    assert matches_correction_pattern("/茶$/", "我喜欢喝茶") is True
    assert matches_correction_pattern("green tea", "Tea, green, please") is True  # Plain words, any order.


@pytest.mark.parametrize("pattern", REFUSED_BY_RE2)
def test_a_pattern_re2_refuses_is_422_when_saved(client_for, audit, pattern):
    url = reverse("api:correct_audit", args=[audit.id])
    body = {"status": "refused", "reason": "Not worth keeping.", "apply_to_future": True, "correction_pattern": pattern}
    response = client_for("annotate").post(url, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, response.content
    error = response.json()["error"]
    assert error["code"] == "invalid_correction" and "RE2" in error["message"], error
    assert not BehaviorCorrection.objects.exists()


def test_a_pattern_with_nothing_to_match_is_422(client_for, audit):
    url = reverse("api:correct_audit", args=[audit.id])
    body = {"status": "refused", "reason": "Not worth keeping.", "apply_to_future": True, "correction_pattern": "!?"}
    response = client_for("annotate").post(url, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY
    assert "no word" in response.json()["error"]["message"]


def test_a_catastrophic_but_valid_pattern_is_saved_and_applied(client_for, audit, make_turn):
    url = reverse("api:correct_audit", args=[audit.id])
    body = {
        "status": "refused",
        "reason": "No tea facts.",
        "apply_to_future": True,
        "correction_pattern": "/(t+e+a+)+$/",
    }
    response = client_for("annotate").post(url, body)
    assert response.status_code == HTTPStatus.CREATED, response.content
    decision = decide_turn(make_turn(user="I prefer tea"))
    assert decision.decision == "NO_WRITE" and BehaviorCorrection.objects.get().id in decision.reason


@pytest.mark.parametrize("pattern", REFUSED_BY_RE2)
def test_a_stored_bad_pattern_is_disabled_logged_and_shown_and_the_turn_is_decided(
    make_turn, audit, admin_client, caplog, pattern
):
    from sessions_app import correction_patterns

    correction_patterns._compiled.cache_clear()  # Logged once per pattern and process: start this test afresh.
    correction = _stored_correction(audit, pattern.replace("tea", "summaries"))
    turn = make_turn(user="I prefer summaries on Fridays.")

    with caplog.at_level(logging.WARNING, logger="sessions_app.correction_patterns"):
        decision = decide_turn(turn)

    assert decision.decision == "UPDATE_USER"  # The correction, disabled, did not turn it into NO_WRITE.
    assert correction.id not in decision.reason
    assert any("is disabled: RE2 refuses it" in r.getMessage() for r in caplog.records)
    page = admin_client.get(reverse("admin:guardian_app_behaviorcorrection_changelist"))
    assert page.status_code == HTTPStatus.OK and "disabled:" in page.content.decode()


@pytest.mark.parametrize(
    "target",
    [
        "bank/world.md",
        "memory/2025-11-27.md",
        "bank/entities/Peter.md",
        "bank/opinions.md",
        "settings.py",
        "../USER.md",
    ],
)
def test_a_correction_naming_a_bank_page_or_another_file_is_422(client_for, audit, target):
    url = reverse("api:correct_audit", args=[audit.id])
    body = {"status": "written", "reason": "Belongs elsewhere.", "target_file": target}
    response = client_for("annotate").post(url, body)
    assert response.status_code == HTTPStatus.UNPROCESSABLE_ENTITY, response.content
    error = response.json()["error"]
    # The schema enumerates the profile's memory files, so the request is refused before the server's own check.
    assert error["code"] == "validation_error" and error["details"][0]["loc"][-1] == "target_file", error
    assert not BehaviorCorrection.objects.exists()


def test_a_correction_naming_a_memory_file_is_saved(client_for, audit):
    url = reverse("api:correct_audit", args=[audit.id])
    body = {"status": "written", "reason": "Belongs in MEMORY.md.", "target_file": "MEMORY.md"}
    response = client_for("annotate").post(url, body)
    assert response.status_code == HTTPStatus.CREATED, response.content
    assert BehaviorCorrection.objects.get().corrected_target_file == "MEMORY.md"
