"""Evaluation: run the current gate (or guardian) over the approved samples of a split and score it.

The point of the dataset: before switching to a fine-tuned or newly prompted gate, an operator runs
``manage.py dataset evaluate --model NAME`` and compares its accuracy, per-decision precision and recall
and confusion matrix with earlier runs (stored as ``EvaluationRun`` rows, charted in the admin).

* ``gate`` stage: every approved gate sample (positive, negative, annotated turn) of the split is put to
  ``sessions_app.gate.ask_gate`` (the offline heuristic gate, the configured LLM, or ``model``) with the
  sample's context window, user message and agent reply; the answer's decision is compared with the
  sample's correct decision.
* ``guardian`` stage: every approved ``write_guardian_decision`` sample is put to the guardian's checks,
  its prompt (or the offline heuristic guardian) and its edit checks, without a lock or a write; the
  outcome (``written`` or not, i.e. ``refused``) is compared with the sample's correct decision.

The samples' redacted text is used (never the raw text). A sample the model fails to answer (LLM error
after retries) counts as wrong, predicted ``ERROR``. The split is the exporter's (``split_of``), so
``--split validation`` evaluates exactly what a train export left out of training.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone

from dataset_app.errors import EvaluationUnavailable
from dataset_app.exporters.examples import GateCase, GuardianCase, gate_case, guardian_case
from dataset_app.exporters.split import split_of
from dataset_app.models import DatasetSample, EvaluationRun, JobStatus
from dataset_app.sample_types import GATE_SAMPLE_TYPES, GUARDIAN_SAMPLE_TYPES
from sessions_app.models import Decision

logger = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
ERROR_LABEL = "ERROR"
GUARDIAN_LABELS = ("written", "refused")


@dataclass(frozen=True)
class Prediction:
    label: str
    llm_model: str
    prompt_version: str


# --- Metrics ---------------------------------------------------------------------------------------


def confusion_matrix(pairs: Sequence[tuple[str, str]], labels: Sequence[str]) -> dict[str, Any]:
    """``{"labels": [...], "matrix": [[count of expected i predicted j]]}``; unknown labels are appended."""
    ordered = list(labels)
    for expected, predicted in pairs:
        for label in (expected, predicted):
            if label not in ordered:
                ordered.append(label)
    index = {label: i for i, label in enumerate(ordered)}
    matrix = [[0] * len(ordered) for _ in ordered]
    for expected, predicted in pairs:
        matrix[index[expected]][index[predicted]] += 1
    return {"labels": ordered, "matrix": matrix}


def per_label_metrics(
    pairs: Sequence[tuple[str, str]], labels: Sequence[str]
) -> dict[str, dict[str, float | int | None]]:
    """Precision, recall, F1 and support for each label that occurs as expected or predicted."""
    expected_n = Counter(e for e, _ in pairs)
    predicted_n = Counter(p for _, p in pairs)
    hits = Counter(e for e, p in pairs if e == p)
    out: dict[str, dict[str, float | int | None]] = {}
    for label in [*labels, *sorted((set(expected_n) | set(predicted_n)) - set(labels))]:
        if not expected_n[label] and not predicted_n[label]:
            continue
        precision = hits[label] / predicted_n[label] if predicted_n[label] else None
        recall = hits[label] / expected_n[label] if expected_n[label] else None
        f1 = (
            2 * precision * recall / (precision + recall)
            if precision is not None and recall is not None and precision + recall
            else (0.0 if precision is not None and recall is not None else None)
        )
        out[label] = {
            "precision": None if precision is None else round(precision, 4),
            "recall": None if recall is None else round(recall, 4),
            "f1": None if f1 is None else round(f1, 4),
            "support": expected_n[label],
        }
    return out


# --- Asking the models -----------------------------------------------------------------------------


def ask_gate_about(case: GateCase, *, model: str | None, offline: bool | None, corrections: Any) -> Prediction:
    from sessions_app.gate import ask_gate

    outcome = ask_gate(
        case.window, case.user_message, case.agent_reply, model=model, offline=offline, corrections=corrections
    )
    return Prediction(outcome.decision, outcome.llm_model, outcome.prompt_version)


def ask_guardian_about(case: GuardianCase, *, model: str | None, offline: bool | None, corrections: Any) -> Prediction:
    """The guardian's decision (``guardian.decide``, the one ``guard_write`` records) for a fact and a file's
    content, without a lock, a snapshot or a write."""
    from guardian_app.write import guardian, guardian_prompt, heuristic_guardian
    from reflection_site import llm

    fact, content = case.candidate_fact, case.current_content or None
    if guardian.precheck(fact) is not None:  # Refused or held before any model sees it.
        return Prediction("refused", "precheck", guardian_prompt.PROMPT_VERSION)
    use_llm = (model is not None or llm.is_configured()) if offline is None else not offline
    reply, used_model, version = None, heuristic_guardian.MODEL_NAME, ""
    if use_llm:
        messages = guardian_prompt.build_messages(fact, content, target_file=case.target_file, corrections=corrections)
        answer = llm.complete_json(messages, model=model, validate=guardian_prompt.validate_reply)
        reply, used_model, version = answer.data, answer.model, guardian_prompt.PROMPT_VERSION
    outcome = guardian.decide(fact, content, target_file=case.target_file, reply=reply, corrections=corrections)
    if outcome.status == "failed":  # Edits that do not apply: the write would have failed.
        return Prediction(ERROR_LABEL, used_model, version)
    return Prediction("written" if outcome.status == "written" else "refused", used_model, version)


def _corrections_for(stage: str) -> Any:
    if stage == EvaluationRun.Stage.GATE:
        from sessions_app.gate import prompt_corrections

        return prompt_corrections()
    from guardian_app.write.guardian_prompt import active_corrections

    return active_corrections()


# --- The run ---------------------------------------------------------------------------------------


def evaluation_samples(*, stage: str, split: str, train_split: float) -> Iterator[tuple[DatasetSample, Any]]:
    """Approved samples of the stage in the split, with their case (redacted text), in id order."""
    types = GATE_SAMPLE_TYPES if stage == EvaluationRun.Stage.GATE else GUARDIAN_SAMPLE_TYPES
    samples = DatasetSample.objects.approved().filter(sample_type__in=types).order_by("id")
    for sample in samples.iterator(chunk_size=500):
        if split != EvaluationRun.Split.ALL and split_of(sample.id, train_split) != split:
            continue
        content = sample.visible_content()
        if content is None:
            continue  # PII that could not be redacted never leaves the database.
        case = gate_case(content) if stage == EvaluationRun.Stage.GATE else guardian_case(content)
        if case is not None and case.decision:
            yield sample, case


@dataclass
class _Answers:
    """What the model answered over a run: (expected, predicted) pairs, errors, the models and prompt versions."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    errors: int = 0
    models: Counter = field(default_factory=Counter)
    versions: Counter = field(default_factory=Counter)


def _ask_all(
    run: EvaluationRun,
    *,
    stage: str,
    split: str,
    train_split: float,
    model: str | None,
    offline: bool | None,
    progress: Progress | None,
) -> _Answers:
    """Ask the model about every sample of the stage in the split; an LLM error is a wrong answer (``ERROR``)."""
    from reflection_site import llm

    ask = ask_gate_about if stage == EvaluationRun.Stage.GATE else ask_guardian_about
    corrections = _corrections_for(stage)
    cases = list(evaluation_samples(stage=stage, split=split, train_split=train_split))
    answers = _Answers()
    if progress:
        progress(0, len(cases))
    for done, (sample, case) in enumerate(cases, start=1):
        try:
            prediction = ask(case, model=model, offline=offline, corrections=corrections)
        except llm.LLMError as exc:
            logger.warning("evaluation %s: sample %s not answered: %s", run.id, sample.id, exc)
            answers.errors += 1
            prediction = Prediction(ERROR_LABEL, "", "")
        else:
            answers.models[prediction.llm_model] += 1
            answers.versions[prediction.prompt_version] += 1
        answers.pairs.append((case.decision, prediction.label))
        if progress:
            progress(done, len(cases))
    return answers


def _record_figures(run: EvaluationRun, answers: _Answers, *, stage: str, model: str | None, started: float) -> None:
    pairs, errors = answers.pairs, answers.errors
    labels = list(Decision.values) if stage == EvaluationRun.Stage.GATE else list(GUARDIAN_LABELS)
    correct = sum(1 for expected, predicted in pairs if expected == predicted)
    run.status = JobStatus.COMPLETED
    run.sample_count = len(pairs)
    run.correct_count = correct
    run.error_count = errors
    run.accuracy = round(correct / len(pairs), 4) if pairs else None
    run.metrics = per_label_metrics(pairs, labels)
    run.confusion = confusion_matrix(pairs, [*labels, *([ERROR_LABEL] if errors else [])])
    run.llm_model = answers.models.most_common(1)[0][0] if answers.models else (model or "")
    run.prompt_version = answers.versions.most_common(1)[0][0] if answers.versions else ""
    run.duration_ms = int((time.perf_counter() - started) * 1000)
    run.finished_at = timezone.now()
    run.error = None
    run.save()


def evaluate(
    *,
    stage: str = "gate",
    model: str | None = None,
    split: str = "validation",
    train_split: float | None = None,
    offline: bool | None = None,
    created_by: str = "system",
    progress: Progress | None = None,
    run: EvaluationRun | None = None,
) -> EvaluationRun:
    """Evaluate the current gate or guardian (or ``model``) and store the run.

    1. Record a running ``EvaluationRun`` (or use ``run``, created by the API).
    2. Ask the model about each approved sample of the split; an LLM error counts as a wrong answer.
    3. Store accuracy, per-label precision/recall/F1 and the confusion matrix, and mark it completed.
    A failure of the whole run (no gate, database error) marks it failed and re-raises.
    Raises EvaluationUnavailable for an unknown stage or split.
    """
    if stage not in EvaluationRun.Stage.values:
        raise EvaluationUnavailable(f"Unknown stage {stage!r}; use gate or guardian.", status=422, code="invalid_stage")
    if split not in EvaluationRun.Split.values:
        raise EvaluationUnavailable(
            f"Unknown split {split!r}; use train, validation or all.", status=422, code="invalid_split"
        )
    train_split = settings.DATASET_TRAIN_SPLIT if train_split is None else train_split
    if run is None:
        run = EvaluationRun.objects.create(
            stage=stage,
            requested_model=model or "",
            split=split,
            train_split=train_split,
            created_by=created_by,
            status=JobStatus.RUNNING,
        )
    else:
        EvaluationRun.objects.filter(id=run.id).update(status=JobStatus.RUNNING)
    started = time.perf_counter()
    try:
        answers = _ask_all(
            run, stage=stage, split=split, train_split=train_split, model=model, offline=offline, progress=progress
        )
    except BaseException as exc:
        EvaluationRun.objects.filter(id=run.id).update(
            status=JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}", finished_at=timezone.now()
        )
        raise
    _record_figures(run, answers, stage=stage, model=model, started=started)
    return run


def empty_split_hint(run: EvaluationRun) -> str:
    """Why a run found no sample: none approved for the stage, or all of them on the other side of the split."""
    everywhere = sum(1 for _ in evaluation_samples(stage=run.stage, split="all", train_split=run.train_split))
    if not everywhere:
        return f"No approved {run.stage} samples yet. Approve some (dataset review) and try again."
    return (
        f"No approved {run.stage} sample falls in the {run.split} split, but {everywhere} approved sample(s) "
        f"fall in the other one. Each sample goes to train or validation by a hash of its id "
        f"(DATASET_TRAIN_SPLIT={run.train_split:g}, the same split as exports), so a handful of samples may all "
        f"land on one side. Use --split all to evaluate on every approved sample."
    )
