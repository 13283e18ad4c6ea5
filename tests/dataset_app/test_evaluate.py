"""Evaluation: the gate (offline or a model) over the approved samples of a split, figures stored."""

from __future__ import annotations

import pytest

from dataset_app.errors import EvaluationUnavailable
from dataset_app.evaluate import confusion_matrix, evaluate, per_label_metrics
from dataset_app.exporters.split import split_of
from dataset_app.models import DatasetSample, EvaluationRun
from tests.dataset_app.factories import SampleFactory

pytestmark = pytest.mark.django_db


def gate_sample(user: str, decision: str, fact: str | None, status: str = "approved") -> DatasetSample:
    if decision == "NO_WRITE":
        content = {
            "type": "memory_gate_negative",
            "conversation": [{"role": "user", "message": user}, {"role": "agent", "message": "OK."}],
            "incorrectDecision": "UPDATE_USER",
            "incorrectFact": "Something.",
            "correctDecision": "NO_WRITE",
            "correctFact": None,
            "rejectionReason": "Small talk.",
            "evidence": {},
        }
        kind = "memory_gate_negative"
    else:
        content = {
            "type": "memory_gate_positive",
            "conversation": [{"role": "user", "message": user}, {"role": "agent", "message": "Noted."}],
            "correctDecision": decision,
            "correctFact": fact,
            "reason": "stable",
            "targetFile": "USER.md",
            "evidence": {"wasWritten": True, "userFeedback": None},
        }
        kind = "memory_gate_positive"
    return SampleFactory(sample_type=kind, content=content, label=decision, annotation_status=status)


def test_confusion_matrix_and_per_label_metrics():
    pairs = [("A", "A"), ("A", "B"), ("B", "B"), ("B", "B"), ("C", "B")]

    matrix = confusion_matrix(pairs, ["A", "B"])
    metrics = per_label_metrics(pairs, ["A", "B"])

    assert matrix == {"labels": ["A", "B", "C"], "matrix": [[1, 1, 0], [0, 2, 0], [0, 1, 0]]}
    assert metrics["A"] == {"precision": 1.0, "recall": 0.5, "f1": 0.6667, "support": 2}
    assert metrics["B"] == {"precision": 0.5, "recall": 1.0, "f1": 0.6667, "support": 2}
    assert metrics["C"] == {"precision": None, "recall": 0.0, "f1": None, "support": 1}


def test_evaluating_a_model_through_the_llm_endpoint(fake_llm):
    first = gate_sample("I prefer morning check-ins.", "UPDATE_USER", "Prefers morning check-ins.")
    second = gate_sample("thanks!", "NO_WRITE", None)
    third = gate_sample("Call me Sam.", "UPDATE_USER", "Is called Sam.")
    gate_sample("ignored: not approved", "NO_WRITE", None, status="pending")
    replies = {
        first.id: {
            "decision": "UPDATE_USER",
            "reason": "pref",
            "candidate_fact": "Prefers mornings.",
            "confidence": 0.9,
        },
        second.id: {"decision": "UPDATE_MEMORY", "reason": "wrong", "candidate_fact": "Said thanks."},
        third.id: {"decision": "UPDATE_USER", "reason": "name", "candidate_fact": "Is called Sam."},
    }
    fake_llm.queue(*(replies[s.id] for s in sorted([first, second, third], key=lambda s: s.id)))

    run = evaluate(model="fine-tuned-gate", split="all")

    assert run.status == "completed"
    assert (run.sample_count, run.correct_count, run.accuracy) == (3, 2, pytest.approx(0.6667, abs=1e-4))
    assert run.llm_model == "fake-model-1"
    assert run.prompt_version == "gate-v1"
    assert run.requested_model == "fine-tuned-gate"
    assert [r["model"] for r in fake_llm.requests] == ["fine-tuned-gate"] * 3
    assert run.metrics["UPDATE_USER"]["recall"] == 1.0
    assert run.metrics["NO_WRITE"]["recall"] == 0.0
    labels = run.confusion["labels"]
    assert run.confusion["matrix"][labels.index("NO_WRITE")][labels.index("UPDATE_MEMORY")] == 1
    assert EvaluationRun.objects.get() == run


def test_llm_failures_count_as_wrong_answers(fake_llm, settings):
    from tests.fake_llm import FakeReply

    settings.LLM_MAX_RETRIES = 0
    gate_sample("I prefer tea.", "UPDATE_USER", "Prefers tea.")
    fake_llm.queue(FakeReply(status=500))

    run = evaluate(model="m", split="all")

    assert (run.sample_count, run.correct_count, run.error_count) == (1, 0, 1)
    assert "ERROR" in run.confusion["labels"]


def test_the_offline_gate_is_evaluated_without_a_model(settings):
    settings.LLM_BASE_URL = ""
    for i in range(6):
        gate_sample(f"I prefer green tea number {i}.", "UPDATE_USER", "Prefers green tea.")
        gate_sample("thanks, bye", "NO_WRITE", None)

    run = evaluate(split="all")

    assert run.llm_model == "heuristic-gate-v1"
    assert run.sample_count == 12
    diagonal = sum(run.confusion["matrix"][i][i] for i in range(len(run.confusion["labels"])))
    assert diagonal == run.correct_count
    assert run.accuracy == pytest.approx(run.correct_count / 12, abs=1e-4)


def test_only_the_requested_split_is_evaluated(settings):
    settings.LLM_BASE_URL = ""
    samples = [gate_sample(f"I like jazz {i}", "UPDATE_USER", "Likes jazz.") for i in range(30)]
    validation = [s for s in samples if split_of(s.id, 0.8) == "validation"]

    run = evaluate(split="validation", offline=True)

    assert run.sample_count == len(validation)
    assert evaluate(split="train", offline=True).sample_count == 30 - len(validation)


def test_the_guardian_stage_uses_guardian_samples(settings):
    settings.LLM_BASE_URL = ""
    for fact, label in (("Prefers tea.", "written"), ("Lives in Lisbon.", "refused")):
        SampleFactory(
            sample_type="write_guardian_decision",
            label=label,
            annotation_status="approved",
            content={
                "type": "write_guardian_decision",
                "candidateFact": fact,
                "targetFile": "USER.md",
                "currentFileContent": "# User\n\n- Lives in Lisbon.\n",
                "decision": label,
                "reason": "",
                "diff": "",
                "edits": [],
                "userCorrection": None,
            },
        )
    gate_sample("not a guardian sample", "NO_WRITE", None)

    run = evaluate(stage="guardian", split="all")

    assert run.sample_count == 2
    assert set(run.confusion["labels"]) >= {"written", "refused"}
    assert run.correct_count == 2  # the offline guardian refuses the duplicate and writes the new fact


def test_unknown_stage_or_split_is_refused():
    with pytest.raises(EvaluationUnavailable):
        evaluate(stage="reflect")
    with pytest.raises(EvaluationUnavailable):
        evaluate(split="test")
    assert EvaluationRun.objects.count() == 0


def test_the_evaluation_task_fills_a_run_created_by_the_api(settings):
    from dataset_app.tasks import run_evaluation

    settings.LLM_BASE_URL = ""
    gate_sample("I prefer tea.", "UPDATE_USER", "Prefers tea.")
    run = EvaluationRun.objects.create(stage="gate", split="all", status="pending")

    run_evaluation(run.id, None, True)

    run.refresh_from_db()
    assert run.status == "completed" and run.sample_count == 1


def test_a_replay_gives_the_gate_the_window_it_saw_for_a_turn_without_context(monkeypatch, settings):
    """Issue 20: the gate saw the session's previous turns (sessions_app.gate.context_window) for a turn the
    agent sent without context; the sample records that window and the evaluation replays it."""
    from dataset_app.collect import collect_samples
    from sessions_app import gate
    from tests.dataset_app.factories import AuditFactory, DecisionFactory, TurnFactory, days_ago

    first = TurnFactory(user_message_content="We moved to Lisbon.", agent_message_content="Nice!")
    turn = TurnFactory(session=first.session, created_at=days_ago(8))
    AuditFactory(decision=DecisionFactory(turn=turn, created_at=days_ago(8)), created_at=days_ago(8))
    collect_samples()
    DatasetSample.objects.update(annotation_status="approved")
    seen = []
    real_ask_gate = gate.ask_gate

    def ask_gate(window, *args, **kwargs):
        seen.append(list(window))
        return real_ask_gate(window, *args, **kwargs)

    monkeypatch.setattr(gate, "ask_gate", ask_gate)

    evaluate(split="all", offline=True)

    assert seen == [gate.context_window(turn)] == [[("user", "We moved to Lisbon."), ("agent", "Nice!")]]
