"""Decay (seed 002 §4.5, seed 004 P1-001): half-life with an activity boost, expiry, archiving, caps."""

from __future__ import annotations

import datetime as dt
import math

import pytest
from django.utils import timezone

from guardian_app.learning.decay import decay_learning, decay_value, requeue_unwritten_items
from guardian_app.models import LearningEvent, MemoryItem, Rule

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 6, 1, 3, 0, tzinfo=dt.UTC)


def item(age_days: float, *, score: float = 0.8, hits: int = 0, last_hit_days: float | None = None, **kw) -> MemoryItem:
    created = NOW - dt.timedelta(days=age_days)
    last_hit = NOW - dt.timedelta(days=last_hit_days) if last_hit_days is not None else None
    expires = (last_hit or created) + dt.timedelta(days=90)
    return MemoryItem.objects.create(
        content=f"fact {MemoryItem.objects.count()}", fingerprint=f"{MemoryItem.objects.count():064d}",
        quality_score=score, score=score, hit_count=hits, last_hit_at=last_hit, created_at=created,
        expires_at=kw.pop("expires_at", expires), **kw,
    )  # fmt: skip


def rule(age_days: float, *, confidence: float = 0.6, hits: int = 0, last_hit_days: float | None = None, **kw) -> Rule:
    n = Rule.objects.count()
    return Rule.objects.create(
        rule_type=kw.pop("rule_type", "style"), content=f"rule {n}", fingerprint=f"{n:064d}",
        base_confidence=confidence, confidence=confidence, hit_count=hits,
        last_hit_at=NOW - dt.timedelta(days=last_hit_days) if last_hit_days is not None else None,
        created_at=NOW - dt.timedelta(days=age_days), **kw,
    )  # fmt: skip


@pytest.fixture
def applied(learning):
    return learning


# --- The arithmetic (seed 004's test cases) -------------------------------------------------------
def test_a_new_item_keeps_its_score():
    assert decay_value(0.8, age_days=0, half_life_days=30) == pytest.approx(0.8)


def test_a_thirty_day_old_item_has_half_its_score():
    assert decay_value(0.8, age_days=30, half_life_days=30) == pytest.approx(0.4)


def test_a_sixty_day_old_item_has_a_quarter_of_its_score():
    assert decay_value(0.8, age_days=60, half_life_days=30) == pytest.approx(0.2)


def test_the_activity_boost_is_one_plus_a_tenth_of_ln_one_plus_hits():
    boost = 1 + 0.1 * math.log(1 + 10)
    assert decay_value(0.5, age_days=30, hit_count=10, half_life_days=30) == pytest.approx(0.25 * boost)
    assert decay_value(0.5, age_days=0, hit_count=10, half_life_days=30) == pytest.approx(0.5 * boost)


def test_an_active_item_ranks_above_an_idle_one_of_the_same_age():
    busy = decay_value(0.6, age_days=45, hit_count=10)
    idle = decay_value(0.6, age_days=45, hit_count=0)
    assert busy > idle
    assert decay_value(0.6, age_days=45, hit_count=100) > busy


def test_the_half_life_is_the_setting(settings):
    settings.LEARNING_DECAY_HALF_LIFE_DAYS = 10
    assert decay_value(0.8, age_days=10) == pytest.approx(0.4)


def test_the_boost_never_lifts_a_value_above_one():
    assert decay_value(0.95, age_days=0, hit_count=1000) == 1.0


# --- The job -----------------------------------------------------------------------------------
def test_decay_recomputes_scores_and_confidences_from_their_base(applied):
    fresh, month, busy = item(0), item(30), item(30, hits=10, last_hit_days=1)
    old_rule = rule(60, confidence=0.6, last_hit_days=2)
    report = decay_learning(now=NOW)
    assert report.memory_items_decayed == 2 and report.rules_decayed == 1  # the fresh item did not change
    scores = {i.id: i.score for i in MemoryItem.objects.all()}
    assert scores[fresh.id] == pytest.approx(0.8)
    assert scores[month.id] == pytest.approx(0.4)
    assert scores[busy.id] == pytest.approx(0.4 * (1 + 0.1 * math.log(11)), abs=1e-4)
    assert Rule.objects.get().confidence == pytest.approx(0.15)
    decay_learning(now=NOW)  # running twice in a day decays nothing twice
    assert MemoryItem.objects.get(id=month.id).score == pytest.approx(0.4)
    assert old_rule.base_confidence == 0.6


def test_items_not_hit_for_long_expire_and_rules_are_archived(applied):
    stale, recently_hit, young = item(120), item(120, last_hit_days=5), item(10)
    stale_rule, used_rule = rule(100), rule(100, last_hit_days=3)
    report = decay_learning(now=NOW)
    assert (report.memory_items_expired, report.rules_archived) == (1, 1)
    statuses = dict(MemoryItem.objects.values_list("id", "status"))
    assert statuses == {stale.id: "expired", recently_hit.id: "active", young.id: "active"}
    assert dict(Rule.objects.values_list("id", "status")) == {stale_rule.id: "archived", used_rule.id: "active"}
    expired = LearningEvent.objects.get(event_type="mem_expire")
    assert (expired.ref_id, expired.reason, expired.source) == (stale.id, "stale", "system")
    assert LearningEvent.objects.get(event_type="rule_archive").ref_id == stale_rule.id


def test_a_project_over_its_cap_drops_the_lowest_scored_least_hit_oldest_first(applied):
    applied.LEARNING_MEM_MAX_PER_PROJECT = 2
    keep_best = item(1, score=0.9)
    keep_hit = item(1, score=0.7, hits=3, last_hit_days=1)
    drop_low = item(1, score=0.62)
    drop_unhit = item(1, score=0.7)
    other_project = item(1, score=0.61, project_id="other")
    report = decay_learning(now=NOW)
    assert report.memory_items_over_cap == 2
    active = set(MemoryItem.objects.filter(status="active").values_list("id", flat=True))
    assert active == {keep_best.id, keep_hit.id, other_project.id}
    assert {e.ref_id for e in LearningEvent.objects.filter(reason="project_cap")} == {drop_low.id, drop_unhit.id}


def test_rules_over_the_cap_go_lowest_priority_first(applied):
    applied.LEARNING_RULE_MAX_PER_PROJECT = 1
    safety = rule(1, rule_type="safety", priority=90, confidence=0.5)
    style = rule(1, priority=40, confidence=0.9)
    assert decay_learning(now=NOW).rules_over_cap == 1
    assert dict(Rule.objects.values_list("id", "status")) == {safety.id: "active", style.id: "archived"}


def test_the_run_is_reported_as_a_learning_event(applied):
    item(120)
    decay_learning(now=NOW)
    run = LearningEvent.objects.get(event_type="decay_run")
    assert run.source == "system" and run.payload_json["memory_items_expired"] == 1


def test_in_shadow_mode_decay_records_and_changes_nothing(applied):
    applied.LEARNING_SHADOW_MODE = True
    stale = item(120)
    report = decay_learning(now=NOW)
    assert report.shadow and report.memory_items_expired == 1
    stale.refresh_from_db()
    assert (stale.status, stale.score) == ("active", 0.8)
    assert LearningEvent.objects.get(event_type="mem_expire").shadow


def test_with_the_guardrails_off_decay_does_nothing(applied):
    applied.LEARNING_GUARDRAILS_ENABLED = False
    item(120)
    assert not decay_learning(now=NOW).enabled
    assert not LearningEvent.objects.exists() and MemoryItem.objects.get().status == "active"


def test_facts_that_never_reached_the_guardian_are_handed_over_again(applied, guardian_calls):
    from guardian_app.models import WriteGuardianAudit

    lost = item(1)
    written = item(1)
    WriteGuardianAudit.objects.create(
        source="learning", source_ref=written.id, target_file="MEMORY.md", candidate_fact="x", status="written"
    )
    item(1, status="suppressed")
    assert requeue_unwritten_items(now=timezone.now()) == 1
    assert guardian_calls == [("MEMORY.md", lost.content, "learning", lost.id)]


def test_the_daily_task_runs_the_decay_and_is_scheduled_at_three(applied):
    from guardian_app.schedules import SCHEDULES
    from guardian_app.tasks import run_learning_decay

    assert SCHEDULES["learning-decay"] == ("guardian_app.tasks.run_learning_decay", "0 3 * * *")
    item(400)
    summary = run_learning_decay()
    assert summary["memory_items_expired"] == 1
