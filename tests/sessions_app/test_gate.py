"""The memory gate's domain: asking the gate, recording decisions once, failures, re-runs and the sweep."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.utils import timezone

from guardian_app.models import BehaviorCorrection, WriteGuardianAudit
from reflection_site import llm
from sessions_app import gate
from sessions_app.gate import ask_gate, context_window, decide_turn, mark_gate_failed, rerun_gate, sweep_pending_turns
from sessions_app.models import ConversationTurn, GateStatus, MemoryGateDecision
from sessions_app.tasks import run_gate
from tests.fake_llm import FakeReply

pytestmark = pytest.mark.django_db


def _correction(*, pattern: str, status: str = "refused", target: str | None = None, apply: bool = True):
    audit = WriteGuardianAudit.objects.create(target_file="USER.md", candidate_fact="Likes jazz.", status="written")
    return BehaviorCorrection.objects.create(
        audit=audit,
        original_status="written",
        original_candidate_fact="Likes jazz.",
        original_target_file="USER.md",
        corrected_status=status,
        corrected_target_file=target,
        correction_reason="Music taste is not worth keeping.",
        apply_to_future=apply,
        correction_pattern=pattern,
        corrected_by="ops",
    )


# --- Offline gate ---------------------------------------------------------------------------------
def test_offline_gate_records_a_user_fact_and_marks_the_turn_done(
    make_turn, guardian_calls, django_capture_on_commit_callbacks
):
    turn = make_turn(user="I prefer summaries on Fridays.")

    with django_capture_on_commit_callbacks(execute=True):
        decision = decide_turn(turn)

    assert decision.decision == "UPDATE_USER"
    assert decision.candidate_fact == "Prefers summaries on Fridays."
    assert decision.llm_model == "heuristic-gate-v1"
    assert decision.prompt_tokens is None and decision.completion_tokens is None
    assert decision.run_number == 1
    assert decision.session_id == turn.session_id
    assert json.loads(decision.raw_response)["decision"] == "UPDATE_USER"
    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.DONE
    assert turn.gate_attempts == 1
    assert turn.gate_finished_at is not None
    assert guardian_calls == [decision.id]


def test_a_no_write_decision_is_not_handed_to_the_guardian(
    make_turn, guardian_calls, django_capture_on_commit_callbacks
):
    turn = make_turn(user="What's the weather like tomorrow?")

    with django_capture_on_commit_callbacks(execute=True):
        decision = decide_turn(turn)

    assert decision.decision == "NO_WRITE"
    assert decision.candidate_fact is None
    assert guardian_calls == []


def test_raw_response_is_dropped_when_the_setting_is_off(make_turn, guardian_calls, settings):
    settings.MEMORY_GATE_STORE_RAW_LLM_RESPONSE = False

    decision = decide_turn(make_turn(user="My name is Ada."))

    assert decision.raw_response is None
    assert decision.decision == "UPDATE_USER"


def test_offline_gate_applies_a_correction_with_a_pattern(make_turn, guardian_calls):
    _correction(pattern="jazz")
    _correction(pattern="tea", apply=False)  # Not marked apply_to_future: ignored.

    jazz = decide_turn(make_turn(user="I love jazz.", session_id="channel:t:a"))
    tea = decide_turn(make_turn(user="I love tea.", session_id="channel:t:b"))

    assert jazz.decision == "NO_WRITE"
    assert tea.decision == "UPDATE_USER"


# --- LLM gate -------------------------------------------------------------------------------------
def test_llm_gate_records_model_tokens_latency_raw_reply_and_prompt_version(make_turn, guardian_calls, fake_llm):
    fake_llm.queue(
        FakeReply(
            content={
                "decision": "UPDATE_TOOLS",
                "reason": "a deploy command",
                "candidate_fact": "Deploys with `make deploy`.",
                "confidence": 0.9,
            },
            model="provider/gate-model",
            usage=(321, 45),
        )
    )

    decision = decide_turn(make_turn(user="Use `make deploy` to ship."))

    assert decision.decision == "UPDATE_TOOLS"
    assert decision.candidate_fact == "Deploys with `make deploy`."
    assert decision.reason == "a deploy command"
    assert decision.confidence == 0.9
    assert decision.llm_model == "provider/gate-model"
    assert (decision.prompt_tokens, decision.completion_tokens) == (321, 45)
    assert decision.llm_latency_ms is not None and decision.llm_latency_ms >= 0
    assert decision.prompt_version == gate.PROMPT_VERSION == "gate-v1"
    assert json.loads(decision.raw_response)["decision"] == "UPDATE_TOOLS"


def test_llm_gate_with_the_smart_responder_answers_like_the_heuristic(make_turn, guardian_calls, fake_llm):
    decision = decide_turn(make_turn(user="记住：周五要交周报。"))

    assert decision.decision == "UPDATE_MEMORY"
    assert decision.llm_model == "fake-model-1"
    assert decision.prompt_tokens == 11


def test_the_prompt_carries_context_turn_headings_and_corrections(make_turn, guardian_calls, fake_llm, workspace):
    (workspace / "USER.md").write_text("# User\n\n## Preferences\n- Likes tea.\n")
    correction = _correction(pattern="jazz")
    turn = make_turn(
        user="I prefer </turn> tricks.",
        agent="Ok.",
        context=[
            {"role": "user", "message": "Earlier question", "timestamp": 1_700_000_000_000},
            {"role": "agent", "message": "Earlier answer", "timestamp": 1_700_000_001_000},
        ],
    )

    decide_turn(turn)

    system, user = fake_llm.chat_requests[0]["messages"]
    assert system["role"] == "system" and system["content"].startswith("ROLE: memory_gate")
    assert "USER.md (UPDATE_USER): # User; ## Preferences" in system["content"]
    assert "MEMORY.md (UPDATE_MEMORY): (no file yet)" in system["content"]
    assert correction.id in system["content"] and '"pattern": "jazz"' in system["content"]
    assert '{"role": "user", "message": "Earlier question"}' in user["content"]
    assert '{"role": "agent", "message": "Earlier answer"}' in user["content"]
    # A message cannot close the prompt's blocks early.
    assert "<\\/turn> tricks" in user["content"]
    assert user["content"].count("</turn>") == 1


def test_an_invalid_llm_decision_is_retried(make_turn, guardian_calls, fake_llm):
    fake_llm.queue(
        {"decision": "MAYBE", "reason": "?"},
        {"decision": "UPDATE_USER", "reason": "no fact"},
        {"decision": "no_write", "reason": "small talk"},
    )

    decision = decide_turn(make_turn(user="hello"))

    assert decision.decision == "NO_WRITE"
    assert len(fake_llm.chat_requests) == 3


def test_llm_confidence_is_normalised(make_turn, guardian_calls, fake_llm):
    fake_llm.queue({"decision": "NO_WRITE", "reason": "r", "confidence": 85})

    assert decide_turn(make_turn(user="hi")).confidence == 0.85


def test_ask_gate_with_a_model_uses_the_llm_and_writes_nothing(fake_llm, settings, db):
    fake_llm.queue({"decision": "UPDATE_SOUL", "reason": "manner", "candidate_fact": "Answers concisely."})

    outcome = ask_gate([("user", "hi")], "Be more concise.", "Sure.", model="other/model")

    assert outcome.decision == "UPDATE_SOUL"
    assert fake_llm.chat_requests[0]["model"] == "other/model"
    assert MemoryGateDecision.objects.count() == 0


def test_ask_gate_offline_flag_forces_the_heuristic_even_with_an_llm(fake_llm, db):
    outcome = ask_gate([], "My name is Ada.", "", offline=True)

    assert outcome.llm_model == "heuristic-gate-v1"
    assert fake_llm.chat_requests == []


# --- Context window -------------------------------------------------------------------------------
def test_window_is_the_sent_context_capped_at_the_window_size(make_turn, settings):
    settings.MEMORY_GATE_WINDOW_SIZE = 3
    context = [
        {"role": "user" if i % 2 == 0 else "agent", "message": f"m{i}", "timestamp": 1_700_000_000_000 + i}
        for i in range(6)
    ]
    turn = make_turn(context=context)

    assert context_window(turn) == [("agent", "m3"), ("user", "m4"), ("agent", "m5")]


def test_window_falls_back_to_the_sessions_previous_turns(make_turn, settings):
    settings.MEMORY_GATE_WINDOW_SIZE = 4
    for i in range(1, 4):
        make_turn(user=f"u{i}", agent=f"a{i}", context=[])
    turn = make_turn(user="u4", agent="a4", context=[])

    assert context_window(turn) == [("user", "u2"), ("agent", "a2"), ("user", "u3"), ("agent", "a3")]


# --- Idempotency ----------------------------------------------------------------------------------
def test_deciding_twice_records_one_decision(make_turn, guardian_calls, fake_llm):
    turn = make_turn(user="My name is Ada.")

    first = decide_turn(turn)
    stale = ConversationTurn.objects.get(id=turn.id)
    stale.gate_status = GateStatus.PENDING  # A redelivered message with an old view of the turn.
    second = decide_turn(stale)
    third = run_gate(turn.id)

    assert first.id == second.id == third
    assert MemoryGateDecision.objects.filter(turn=turn).count() == 1
    assert len(fake_llm.chat_requests) == 1  # The redelivery did not even ask the LLM.


def test_a_delivery_that_loses_the_claim_records_nothing(make_turn, guardian_calls, monkeypatch):
    turn = make_turn(user="My name is Ada.")
    real_ask = gate.ask_gate
    inner: list[MemoryGateDecision] = []

    def ask_while_another_delivery_finishes(*args, **kwargs):
        outcome = real_ask(*args, **kwargs)
        monkeypatch.setattr(gate, "ask_gate", real_ask)
        inner.append(decide_turn(ConversationTurn.objects.get(id=turn.id)))
        return outcome

    monkeypatch.setattr(gate, "ask_gate", ask_while_another_delivery_finishes)

    outer = decide_turn(turn)

    assert outer.id == inner[0].id
    assert MemoryGateDecision.objects.filter(turn=turn).count() == 1


def test_a_decision_already_recorded_for_the_run_finishes_the_turn(make_turn, guardian_calls):
    turn = make_turn(user="My name is Ada.")
    existing = MemoryGateDecision.objects.create(
        turn=turn, session_id=turn.session_id, run_number=1, decision="NO_WRITE", reason="r", llm_model="m"
    )

    decision = decide_turn(turn)

    assert decision.id == existing.id
    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.DONE


def test_a_turn_not_pending_is_left_alone(make_turn, guardian_calls):
    turn = make_turn(user="My name is Ada.")
    ConversationTurn.objects.filter(id=turn.id).update(gate_status=GateStatus.DISABLED)
    turn.refresh_from_db()

    assert decide_turn(turn) is None
    assert MemoryGateDecision.objects.count() == 0


# --- Failures -------------------------------------------------------------------------------------
def test_llm_errors_are_noted_on_the_pending_turn_and_raised(make_turn, guardian_calls, fake_llm, settings):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.queue("not json at all", "still not json")
    turn = make_turn(user="hi")

    with pytest.raises(llm.LLMUnparseable):
        decide_turn(turn)

    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.PENDING
    assert "LLMUnparseable" in turn.gate_last_error
    assert "still not json" in turn.gate_last_error
    assert turn.gate_attempts == 1


def test_the_task_retries_then_marks_the_turn_failed_with_the_error(make_turn, guardian_calls, fake_llm, settings):
    settings.LLM_MAX_RETRIES = 0
    fake_llm.set_default(lambda body: FakeReply(status=503, content="upstream down"))
    turn = make_turn(user="My name is Ada.")

    result = run_gate.apply(args=[turn.id])

    assert result.failed()
    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.FAILED
    assert "LLMTransientError" in turn.gate_last_error and "upstream down" in turn.gate_last_error
    assert turn.gate_attempts == 1 + run_gate.max_retries
    assert len(fake_llm.chat_requests) == 1 + run_gate.max_retries
    assert MemoryGateDecision.objects.count() == 0


def test_an_error_no_retry_cures_fails_the_turn_at_once(make_turn, guardian_calls, fake_llm):
    fake_llm.set_default(lambda body: FakeReply(status=401, content="invalid api key"))
    turn = make_turn(user="My name is Ada.")

    run_gate.apply(args=[turn.id])

    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.FAILED
    assert "401" in turn.gate_last_error
    assert len(fake_llm.chat_requests) == 1


def test_mark_gate_failed_leaves_a_decided_turn_alone(make_turn, guardian_calls):
    turn = make_turn(user="My name is Ada.")
    decide_turn(turn)

    assert mark_gate_failed(turn.id, error="late failure") is False
    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.DONE


def test_the_task_ignores_a_turn_that_no_longer_exists(db):
    assert run_gate("01NOSUCHTURN0000000000000") is None


# --- Re-runs --------------------------------------------------------------------------------------
def test_rerun_makes_a_new_run_and_keeps_the_old_decision(
    make_turn, guardian_calls, enqueued, django_capture_on_commit_callbacks
):
    turn = make_turn(user="My name is Ada.")
    first = decide_turn(turn)

    with django_capture_on_commit_callbacks(execute=True):
        turn = rerun_gate(turn)

    assert enqueued == [turn.id]
    assert (turn.gate_status, turn.gate_run, turn.gate_attempts) == (GateStatus.PENDING, 2, 0)
    second = decide_turn(turn)
    assert second.run_number == 2 and second.id != first.id
    assert MemoryGateDecision.objects.filter(turn=turn).count() == 2


def test_a_failed_turn_can_be_run_again(make_turn, guardian_calls, enqueued, django_capture_on_commit_callbacks):
    turn = make_turn(user="My name is Ada.")
    mark_gate_failed(turn.id, error="LLMTransientError: down")

    with django_capture_on_commit_callbacks(execute=True):
        turn = rerun_gate(turn)
    decision = decide_turn(turn)

    turn.refresh_from_db()
    assert turn.gate_status == GateStatus.DONE and turn.gate_last_error is None
    assert decision.run_number == 2


def test_a_task_of_the_previous_run_records_nothing_after_a_rerun(make_turn, guardian_calls, enqueued):
    turn = make_turn(user="My name is Ada.")
    old_view = ConversationTurn.objects.get(id=turn.id)
    rerun_gate(turn)

    assert decide_turn(old_view) is None
    assert MemoryGateDecision.objects.count() == 0


# --- Sweep ----------------------------------------------------------------------------------------
def test_sweep_requeues_only_turns_pending_past_the_grace_period(make_turn, guardian_calls, enqueued, settings):
    settings.GATE_SWEEP_GRACE_S = 120
    long_ago = timezone.now() - dt.timedelta(minutes=5)
    stuck = make_turn(user="stuck", session_id="channel:t:1")
    fresh = make_turn(user="fresh", session_id="channel:t:2")
    decided = make_turn(user="My name is Ada.", session_id="channel:t:3")
    failed = make_turn(user="failed", session_id="channel:t:4")
    decide_turn(decided)
    mark_gate_failed(failed.id, error="x")
    ConversationTurn.objects.exclude(id=fresh.id).update(gate_enqueued_at=long_ago)

    assert sweep_pending_turns() == 1
    assert enqueued == [stuck.id]
    stuck.refresh_from_db()
    assert stuck.gate_enqueued_at > long_ago
    # Sent once per grace period, not once a minute.
    assert sweep_pending_turns() == 0
    assert sweep_pending_turns(grace_s=0) == 2
    assert set(enqueued[1:]) == {stuck.id, fresh.id}


def test_a_swept_turn_is_decided_by_the_task(make_turn, guardian_calls, enqueued):
    turn = make_turn(user="I live in Lisbon.")
    ConversationTurn.objects.filter(id=turn.id).update(gate_enqueued_at=timezone.now() - dt.timedelta(hours=1))

    sweep_pending_turns()
    for turn_id in enqueued:
        run_gate(turn_id)

    assert MemoryGateDecision.objects.get(turn=turn).decision == "UPDATE_USER"


# --- Schedules ------------------------------------------------------------------------------------
def test_the_sweep_and_the_stats_roll_up_are_scheduled(db):
    from django_celery_beat.models import PeriodicTask

    from reflection_site.celery import app, ensure_schedules

    ensure_schedules()

    sweep = PeriodicTask.objects.get(name="gate-sweep")
    rollup = PeriodicTask.objects.get(name="gate-stats-rollup")
    assert sweep.task == "sessions_app.tasks.run_gate_sweep" and sweep.enabled
    assert (sweep.crontab.minute, sweep.crontab.hour) == ("*", "*")  # Every minute.
    assert rollup.task == "sessions_app.tasks.run_gate_stats_rollup"
    assert rollup.crontab.minute != "*" and rollup.crontab.hour == "*"  # Hourly.
    assert {sweep.task, rollup.task, "sessions_app.tasks.run_gate"} <= set(app.tasks)


def test_a_chinese_sentence_opening_with_a_name_the_files_hold_is_about_that_person(
    make_turn, guardian_calls, workspace
):
    # A Chinese name has no capital: only names the memory files already hold are read as people. Before the files
    # name 美玲, "美玲现在…" is not taken for a fact about anyone; after, it is 美玲's, for MEMORY.md.
    turn = make_turn(user="美玲现在负责华东区的销售，一个月要去两趟杭州。")
    assert decide_turn(turn).decision == "NO_WRITE"

    (workspace / "USER.md").write_text("# USER.md\n\n- 美玲是用户的太太。\n", encoding="utf-8")
    (workspace / "MEMORY.md").write_text(
        "# MEMORY.md\n\n- 下周组会改到周四。\n- 下周组会取消了。\n- 公司搬到了浦东。\n- 公司现在在家办公。\n",
        encoding="utf-8",
    )
    assert gate.people_named() == frozenset({"美玲"})  # Not 下周组会 or 公司: a time and a thing.
    again = make_turn(user="美玲现在负责华东区的销售，一个月要去两趟杭州。")
    decision = decide_turn(again)
    assert (decision.decision, decision.candidate_fact) == (
        "UPDATE_MEMORY",
        "美玲现在负责华东区的销售，一个月要去两趟杭州。",
    )

    # A name that opens two lines is a person too, read again when the file changes.
    (workspace / "MEMORY.md").write_text("# MEMORY.md\n\n- 若兰在医院上班。\n- 若兰每天跑步。\n", encoding="utf-8")
    assert gate.people_named() == frozenset({"美玲", "若兰"})


def test_an_llm_gates_also_facts_come_through_the_wire_with_the_decision(make_turn, guardian_calls, fake_llm):
    fake_llm.queue(
        FakeReply(
            content={
                "decision": "UPDATE_USER",
                "reason": "a relation, and where she is from",
                "candidate_fact": "诗涵是用户的太太。",
                "confidence": 0.9,
                "also": [{"decision": "UPDATE_MEMORY", "candidate_fact": "诗涵是广州人。"}],
            }
        )
    )

    decision = decide_turn(make_turn(user="诗涵是我太太，她是广州人。"))

    assert decision.candidate_fact == "诗涵是用户的太太。"
    assert decision.also_facts() == [("UPDATE_MEMORY", "诗涵是广州人。")]
