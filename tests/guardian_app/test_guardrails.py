"""The learning guardrails' domain: scoring, the memory guard, the rule guard, conflicts, shadow mode, fail-open."""

from __future__ import annotations

import pytest
from django.db import DatabaseError

from guardian_app.learning import actions, feedback
from guardian_app.learning.failures import guardrail_error_count
from guardian_app.learning.feedback import apply_feedback, idempotency_key
from guardian_app.learning.memory import check_memory_candidate
from guardian_app.learning.metrics import learning_metrics
from guardian_app.learning.rules import classify_rule, draft_rule
from guardian_app.learning.text import boilerplate_share, is_boilerplate, score_memory_candidate
from guardian_app.models import FeedbackIdempotency, LearningEvent, MemoryItem, Rule
from reflection_site.text import fingerprint
from sessions_app.models import ConversationTurn

pytestmark = pytest.mark.django_db

GOOD_FACT = "The production database is PostgreSQL 15 on host db-2; backups run nightly at 02:00 UTC."


def events(event_type: str | None = None) -> list[LearningEvent]:
    qs = LearningEvent.objects.order_by("created_at", "id")
    return list(qs.filter(event_type=event_type) if event_type else qs)


# --- Scoring -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "text",
    [
        GOOD_FACT,
        "User prefers summaries on Fridays and wants them in bullet points, at most five.",
        "Alice lives in Lyon and works as a nurse at the city hospital.",
        "The deploy script lives in scripts/deploy.sh and needs the STAGING_TOKEN variable set.",
        "用户的生产数据库是 PostgreSQL 15，部署在 db-2 主机上，每天凌晨两点备份。",
        "用户喜欢在周五收到每周总结，并且希望总结用要点列表的形式呈现出来，每条不超过二十个字。",
    ],
)
def test_specific_facts_score_above_the_threshold(text):
    assert score_memory_candidate(text).score >= 0.60


@pytest.mark.parametrize(
    "text",
    [
        "I think maybe something like that stuff could be kind of useful for things",
        "this is a fact about the thing that we talked about before in the chat",
        "good answer good answer good answer good answer good answer",
        "Could you remind me what we were talking about in the meeting earlier?",
        "!!!! ??? ---- *** wow wow wow ~~~~ ### yes yes yes !!!! ???",
    ],
)
def test_vague_repetitive_or_questioning_text_scores_below_the_threshold(text):
    assert score_memory_candidate(text).score < 0.60


def test_the_score_rewards_specificity():
    vague = score_memory_candidate("The user likes a certain kind of setup for the work they usually do at home.")
    specific = score_memory_candidate("The user works from Berlin on a ThinkPad X1 with Ubuntu 24.04 and two monitors.")
    assert specific.specificity > vague.specificity
    assert specific.score > vague.score


@pytest.mark.parametrize(
    "text",
    [
        "Thanks a lot, great job, that's perfect, hope this helps!!!",
        "OK, got it, thank you so much, sounds good, no problem at all",
        "谢谢你，非常感谢，回答得很好，很有帮助，太棒了，辛苦了，希望对你有帮助",
    ],
)
def test_boilerplate_in_english_and_chinese_is_recognised(text):
    assert is_boilerplate(text)


def test_a_fact_with_a_polite_word_is_not_boilerplate():
    assert not is_boilerplate("Thanks: the staging API lives at https://staging.example.com/api and needs a VPN.")


def test_the_blacklist_is_configurable(settings):
    text = "Synergy leverage paradigm shift going forward circle back"
    assert not is_boilerplate(text)
    settings.LEARNING_BOILERPLATE_PHRASES = ["synergy", "leverage", "paradigm shift", "going forward", "circle back"]
    assert boilerplate_share(text) == 1.0


def test_fingerprints_ignore_case_punctuation_spacing_and_width():
    assert fingerprint("Prefers  TEA, in the afternoon!") == fingerprint("prefers tea in the afternoon")
    assert fingerprint("ＡＢＣ　１２３") == fingerprint("abc 123")
    assert fingerprint("prefers tea") != fingerprint("prefers coffee")


# --- Memory guard: the seed's five conditions, in order ----------------------------------------
def test_memory_conditions_are_checked_in_the_seed_order(settings, make_turn):
    assert check_memory_candidate("Thanks, great!").reason == "too_short"  # also boilerplate: length comes first
    assert check_memory_candidate("Thank you so much, that is perfect, hope this helps, bye!").reason == "boilerplate"
    assert check_memory_candidate("I think maybe something like that stuff could be useful for things").reason == (
        "low_score"
    )
    MemoryItem.objects.create(content=GOOD_FACT, fingerprint=fingerprint(GOOD_FACT), status="suppressed")
    duplicate = check_memory_candidate(GOOD_FACT.upper())
    assert duplicate.reason == "duplicate"
    settings.LEARNING_MEM_MAX_PER_PROJECT = 1
    other = "The staging cluster runs Kubernetes 1.29 on three nodes in eu-west-1."
    assert check_memory_candidate(other).accepted  # the suppressed item does not count against the cap
    MemoryItem.objects.create(content="x", fingerprint="f" * 64)
    assert check_memory_candidate(other).reason == "project_cap"
    assert check_memory_candidate(other, project_id="elsewhere").accepted


def test_the_score_threshold_is_the_setting(settings):
    text = "User prefers summaries on Fridays and wants them in bullet points, at most five."
    assert check_memory_candidate(text).accepted
    settings.LEARNING_MIN_MEM_SCORE = 0.99
    assert check_memory_candidate(text).reason == "low_score"


def test_positive_feedback_learns_the_gates_candidate_and_hands_it_to_the_guardian(
    learning, make_turn, guardian_calls, django_capture_on_commit_callbacks
):
    turn = make_turn(fact=GOOD_FACT)
    with django_capture_on_commit_callbacks(execute=True):
        outcome = apply_feedback(turn, user_id="u1", feedback="up")
    assert outcome.accepted and outcome.reason == "mem_accept" and not outcome.shadow_mode
    item = MemoryItem.objects.get()
    assert (item.content, item.status, item.origin, item.trace_id) == (GOOD_FACT, "active", "gate", turn.id)
    assert item.quality_score == item.score >= 0.6
    assert item.expires_at is not None
    assert guardian_calls == [("MEMORY.md", GOOD_FACT, "learning", item.id)]
    (event,) = events("mem_accept")
    assert (event.ref_id, event.trace_id, event.user_id, event.source) == (item.id, turn.id, "u1", "api_feedback")
    assert event.payload_json["origin"] == "gate"


def test_without_a_gate_candidate_the_fact_is_distilled_from_the_turn(learning, make_turn, guardian_calls):
    turn = make_turn(
        user="How do I restart the staging server?",
        agent="Run `systemctl restart reflection` on staging-2; it comes back in about 30 seconds.",
        decision="NO_WRITE",
    )
    outcome = apply_feedback(turn, user_id="u1", feedback="up")
    assert outcome.accepted, outcome
    item = MemoryItem.objects.get()
    assert item.origin == "distilled"
    assert "systemctl restart reflection" in item.content and "staging server" in item.content


def test_a_stated_preference_is_distilled_by_the_offline_gate(learning, make_turn):
    turn = make_turn(user="I prefer my weekly reports on Fridays before 10:00, as a PDF with charts.", agent="Noted.")
    assert apply_feedback(turn, user_id="u1", feedback="up").accepted
    assert MemoryItem.objects.get().content.startswith("Prefers my weekly reports") or "Fridays" in (
        MemoryItem.objects.get().content
    )


def test_junk_positive_feedback_learns_nothing(learning, make_turn, guardian_calls):
    turn = make_turn(user="thanks!", agent="You're welcome!")
    outcome = apply_feedback(turn, user_id="u1", feedback="up")
    assert not outcome.accepted and outcome.reason == "too_short"
    assert not MemoryItem.objects.exists() and guardian_calls == []
    (event,) = events("mem_reject")
    assert event.reason == "too_short" and event.payload_json["candidate"]


def test_the_same_fact_from_another_turn_is_a_duplicate(learning, make_turn, guardian_calls):
    apply_feedback(make_turn(fact=GOOD_FACT), user_id="u1", feedback="up")
    outcome = apply_feedback(make_turn(fact=GOOD_FACT + "  "), user_id="u2", feedback="up")
    assert outcome.reason == "duplicate"
    assert MemoryItem.objects.count() == 1
    assert events("mem_reject")[0].ref_id == MemoryItem.objects.get().id


# --- Idempotency and the feedback on the turn ---------------------------------------------------
def test_the_idempotency_key_is_the_seeds_sha256():
    import hashlib

    assert idempotency_key("T1", "u1", "up") == hashlib.sha256(b"T1u1up").hexdigest()


def test_a_repeat_is_deduplicated_and_writes_nothing(learning, make_turn, guardian_calls):
    turn = make_turn(fact=GOOD_FACT)
    first = apply_feedback(turn, user_id="u1", feedback="up")
    counts = (LearningEvent.objects.count(), MemoryItem.objects.count(), FeedbackIdempotency.objects.count())
    feedback_json = ConversationTurn.objects.get(id=turn.id).feedback_json
    again = apply_feedback(turn, user_id="u1", feedback="up", reason="once more")
    assert first.accepted and again.deduplicated and not again.accepted and again.reason == "duplicate_feedback"
    assert (LearningEvent.objects.count(), MemoryItem.objects.count(), FeedbackIdempotency.objects.count()) == counts
    assert ConversationTurn.objects.get(id=turn.id).feedback_json == feedback_json


def test_feedback_is_stored_on_the_turn_in_the_agreed_format(learning, make_turn):
    turn = make_turn(fact=GOOD_FACT)
    apply_feedback(turn, user_id="u1", feedback="up")
    apply_feedback(turn, user_id="u2", feedback="down", reason="Too long, keep replies under five lines please")
    data = ConversationTurn.objects.get(id=turn.id).feedback_json
    assert data["last"] == "down"
    assert [(e["user_id"], e["feedback"], e["reason"]) for e in data["events"]] == [
        ("u1", "up", None),
        ("u2", "down", "Too long, keep replies under five lines please"),
    ]
    assert all(e["at"].startswith("20") for e in data["events"])


def test_changing_ones_mind_is_new_feedback_not_a_repeat(learning, make_turn):
    turn = make_turn(fact=GOOD_FACT)
    apply_feedback(turn, user_id="u1", feedback="up")
    outcome = apply_feedback(turn, user_id="u1", feedback="down", reason="Wrong: the database moved to db-3 last week")
    assert not outcome.deduplicated
    assert FeedbackIdempotency.objects.count() == 2


# --- Rule guard ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reason", "rule_type"),
    [
        ("Never paste my password into the chat", "safety"),
        ("You leaked my API key in the channel!", "safety"),
        ("不要在回复里泄露用户的个人信息", "safety"),
        ("This should go to the support team, not me", "routing"),
        ("这种问题请转给值班的运维同学", "routing"),
        ("Too long, keep the replies concise", "style"),
        ("语气太随意了，请正式一点", "style"),
        ("Please don't use emoji in replies", "style"),
    ],
)
def test_rules_are_classified_in_both_languages(reason, rule_type):
    assert classify_rule(reason)[0] == rule_type


def test_safety_wins_over_any_other_type():
    assert classify_rule("Don't format passwords as a bullet list in markdown")[0] == "safety"


def test_priority_and_confidence_follow_the_documented_rules():
    style, strong_style, soft_style = (
        draft_rule("Use bullet points for lists"),
        draft_rule("Never use emoji in replies"),
        draft_rule("Maybe a bit more concise next time"),
    )
    assert (style.priority, strong_style.priority, soft_style.priority) == (40, 50, 30)
    assert draft_rule("Never share passwords in chat").priority == 100
    assert draft_rule("Send deploy questions to the ops channel").priority == 60
    assert strong_style.confidence > style.confidence > soft_style.confidence


def test_negative_feedback_with_a_short_or_unclassifiable_reason_learns_nothing(learning, make_turn):
    turn = make_turn()
    assert apply_feedback(turn, user_id="u1", feedback="down", reason="bad").reason == "reason_too_short"
    assert apply_feedback(turn, user_id="u2", feedback="down").reason == "reason_too_short"
    assert (
        apply_feedback(turn, user_id="u3", feedback="down", reason="wrong wrong wrong wrong").reason == "unclassified"
    )
    assert not Rule.objects.exists()
    assert [e.reason for e in events("rule_reject")] == ["reason_too_short", "reason_too_short", "unclassified"]


def test_negative_feedback_with_a_reason_becomes_an_active_rule(learning, make_turn):
    turn = make_turn()
    outcome = apply_feedback(turn, user_id="u1", feedback="down", reason="Please don't use emoji in replies")
    assert outcome.accepted and outcome.reason == "rule_accept"
    rule = Rule.objects.get()
    assert (rule.rule_type, rule.status, rule.stance, rule.subject) == ("style", "active", -1, "emoji")
    assert (rule.priority, rule.confidence, rule.base_confidence) == (40, 0.5, 0.5)
    assert events("rule_accept")[0].ref_id == rule.id


def test_the_same_rule_twice_is_a_duplicate(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Please don't use emoji in replies")
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="please DON'T use emoji in replies!")
    assert outcome.reason == "duplicate" and Rule.objects.count() == 1


def test_a_lower_priority_conflicting_rule_is_refused_and_audited(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    old = Rule.objects.get()
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Use more emoji, it feels friendlier")
    assert not outcome.accepted and outcome.reason == "rule_conflict"
    assert Rule.objects.count() == 1 and Rule.objects.get().status == "active"
    (event,) = events("rule_conflict")
    assert event.reason == "lower_priority" and event.ref_id == old.id
    assert event.payload_json["conflict_with"][0]["id"] == old.id


def test_an_equal_priority_conflicting_rule_does_not_displace_the_incumbent(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Reply in English")
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Reply in Chinese")
    assert outcome.reason == "rule_conflict"


def test_a_higher_priority_conflicting_rule_suppresses_the_old_one(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Use more emoji in replies")
    old = Rule.objects.get()
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Never use emoji in replies")
    assert outcome.accepted
    new = Rule.objects.get(id=outcome.item_id)
    old.refresh_from_db()
    assert (old.status, old.conflict_with) == ("suppressed", new.id)
    assert (new.status, new.conflict_with) == ("active", old.id)
    (suppress,) = events("rule_suppress")
    assert (suppress.reason, suppress.ref_id, suppress.payload_json["superseded_by"]) == ("conflict", old.id, new.id)
    assert events("rule_accept")[-1].reason == "superseded_conflict"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("Replies are too long, keep them shorter", "Give more detailed answers please"),
        ("Don't make replies too long", "Write longer, more thorough replies"),
        ("不要用表情符号", "多用表情符号"),
        ("回答太长了，简短一点", "请回答得详细一些"),
    ],
)
def test_opposite_instructions_on_the_same_subject_conflict(first, second):
    a, b = draft_rule(first), draft_rule(second)
    assert a.rule_type == b.rule_type and a.subject == b.subject and a.stance != b.stance


def test_rules_on_different_subjects_do_not_conflict(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Use bullet points for lists")
    assert outcome.accepted and Rule.objects.filter(status="active").count() == 2


def test_the_rule_cap_refuses_new_rules(learning, make_turn):
    learning.LEARNING_RULE_MAX_PER_PROJECT = 1
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    outcome = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Use bullet points for lists")
    assert outcome.reason == "project_cap"


# --- Shadow mode and the kill switch -------------------------------------------------------------
def test_shadow_mode_records_every_decision_and_applies_none(learning, make_turn, guardian_calls):
    learning.LEARNING_SHADOW_MODE = True
    apply_feedback(make_turn(), user_id="u0", feedback="down", reason="Use more emoji in replies")
    assert not Rule.objects.exists()
    Rule.objects.create(
        rule_type="style", content="Use more emoji in replies", subject="emoji", stance=1, priority=40, fingerprint="x"
    )
    up = apply_feedback(make_turn(fact=GOOD_FACT), user_id="u1", feedback="up")
    down = apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Never use emoji in replies")
    junk = apply_feedback(make_turn(user="ok", agent="ok"), user_id="u3", feedback="up")
    assert (up.accepted, up.shadow_mode, down.accepted, junk.reason) == (True, True, True, "too_short")
    assert not MemoryItem.objects.exists() and guardian_calls == []
    assert list(Rule.objects.values_list("status", flat=True)) == ["active"]  # nothing suppressed
    assert all(e.shadow for e in events())
    assert {e.event_type for e in events()} == {"rule_accept", "mem_accept", "mem_reject"}
    assert events("rule_accept")[-1].payload_json["would_suppress"][0]["priority"] == 40


def test_the_kill_switch_stores_the_feedback_once_and_learns_nothing(learning, make_turn, guardian_calls):
    learning.LEARNING_GUARDRAILS_ENABLED = False
    turn = make_turn(fact=GOOD_FACT)
    outcome = apply_feedback(turn, user_id="u1", feedback="up")
    again = apply_feedback(turn, user_id="u1", feedback="up")
    down = apply_feedback(turn, user_id="u1", feedback="down", reason="Never use emoji in replies")

    assert outcome.reason == "guardrails_disabled" and not outcome.accepted
    assert again.deduplicated and down.reason == "guardrails_disabled"
    stored = ConversationTurn.objects.get(id=turn.id).feedback_json
    assert [e["feedback"] for e in stored["events"]] == ["up", "down"] and stored["last"] == "down"
    assert FeedbackIdempotency.objects.count() == 2
    assert [(e.event_type, e.reason) for e in LearningEvent.objects.order_by("created_at", "id")] == [
        ("mem_reject", "guardrails_disabled"),
        ("rule_reject", "guardrails_disabled"),
    ]
    assert not MemoryItem.objects.exists() and not Rule.objects.exists() and guardian_calls == []


# --- Fail open -----------------------------------------------------------------------------------
def test_a_database_error_in_the_memory_guard_fails_open(learning, make_turn, monkeypatch, guardian_calls):
    def broken(*args, **kwargs):
        raise DatabaseError("disk I/O error")

    monkeypatch.setattr(MemoryItem.objects, "create", broken)
    turn = make_turn(fact=GOOD_FACT)
    outcome = apply_feedback(turn, user_id="u1", feedback="up")
    assert (outcome.accepted, outcome.reason) == (False, "guardrails_error")
    assert ConversationTurn.objects.get(id=turn.id).feedback_json["last"] == "up"  # still acknowledged and stored
    assert guardrail_error_count("memory_guard") == 1
    (event,) = events("guardrail_error")
    assert event.reason == "memory_guard" and "disk I/O error" in event.payload_json["error"]
    assert not events("mem_accept") and guardian_calls == []


def test_an_error_in_the_rule_guard_fails_open(learning, make_turn, monkeypatch):
    monkeypatch.setattr(feedback, "draft_rule", lambda reason: 1 / 0)
    outcome = apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    assert outcome.reason == "guardrails_error"
    assert guardrail_error_count("rule_guard") == 1


def test_a_failing_idempotency_table_fails_open_and_keeps_the_feedback(learning, make_turn, monkeypatch):
    def broken(*args, **kwargs):
        raise DatabaseError("no such table: feedback_idempotency")

    monkeypatch.setattr(FeedbackIdempotency.objects, "create", broken)
    turn = make_turn(fact=GOOD_FACT)
    outcome = apply_feedback(turn, user_id="u1", feedback="up")
    assert outcome.reason == "guardrails_error"
    assert ConversationTurn.objects.get(id=turn.id).feedback_json["events"][0]["user_id"] == "u1"
    assert guardrail_error_count("idempotency") == 1


def test_when_the_database_cannot_record_the_error_it_is_still_counted(learning, make_turn, monkeypatch):
    monkeypatch.setattr(feedback, "draft_rule", lambda reason: 1 / 0)
    monkeypatch.setattr(LearningEvent.objects, "create", lambda **kw: (_ for _ in ()).throw(DatabaseError("down")))
    outcome = apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    assert outcome.reason == "guardrails_error"
    assert guardrail_error_count() == 1


# --- Operator actions ----------------------------------------------------------------------------
def test_operator_actions_change_status_and_are_audited(learning, make_turn):
    apply_feedback(make_turn(fact=GOOD_FACT), user_id="u1", feedback="up")
    item = MemoryItem.objects.get()
    assert actions.change_status(item, "suppress", actor="admin:ops")
    assert not actions.change_status(item, "suppress", actor="admin:ops")  # already suppressed
    assert actions.change_status(item, "reactivate", actor="admin:ops")
    assert actions.change_status(item, "archive", actor="admin:ops")
    assert MemoryItem.objects.get().status == "expired"
    assert [(e.event_type, e.source) for e in events()][1:] == [
        ("mem_suppress", "operator"),
        ("mem_reactivate", "operator"),
        ("mem_expire", "operator"),
    ]


def test_reactivating_a_suppressed_rule_suppresses_the_rule_that_displaced_it(learning, make_turn):
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Use more emoji in replies")
    apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Never use emoji in replies")
    old = Rule.objects.get(status="suppressed")
    actions.change_status(old, "reactivate", actor="admin:ops")
    assert dict(Rule.objects.values_list("content", "status")) == {
        "Use more emoji in replies": "active",
        "Never use emoji in replies": "suppressed",
    }
    assert events("rule_suppress")[-1].reason == "operator_reactivated"


def test_metrics_count_decisions_and_the_hit_rate(learning, make_turn):
    import datetime as dt

    from django.utils import timezone

    apply_feedback(make_turn(fact=GOOD_FACT), user_id="u1", feedback="up")
    apply_feedback(make_turn(user="ok", agent="ok"), user_id="u1", feedback="up")
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Use more emoji in replies")
    apply_feedback(make_turn(), user_id="u1", feedback="down", reason="Never use emoji in replies")
    apply_feedback(make_turn(), user_id="u2", feedback="down", reason="Use more emoji please, always")
    actions.record_hit("memory-items", MemoryItem.objects.get().id)
    now = timezone.now()
    metrics = learning_metrics(since=now - dt.timedelta(days=7), until=now + dt.timedelta(seconds=1))
    assert (metrics["accepted"], metrics["rejected"], metrics["conflict"]) == (3, 1, 2)
    assert metrics["active"] == {"memory_items": 1, "rules": 1}
    assert metrics["hit_rate"] == 0.5
    assert metrics["daily"][0]["accepted"] == 3
    assert metrics["shadow"]["accepted"] == 0
