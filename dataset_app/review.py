"""A sample as a person reviews it: the conversation as chat bubbles, the decision, the fact, the diff.

The text is redacted unless the viewer may see it raw (``dataset_app.view_raw_datasetsample``) and asked
to; a sample whose PII could not be redacted shows no text at all without that permission. ``content_for`` decides
what is shown (``DatasetSample.visible_content``) for the review page (``present``) and the terminal's
``dataset review`` (``describe``) alike.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dataset_app.models import DatasetSample, SampleType
from reflection_site.privacy import redact


@dataclass(frozen=True)
class Bubble:
    role: str  # user | agent
    text: str
    current: bool = False  # the turn being judged (the earlier ones are context)


@dataclass
class SampleView:
    bubbles: list[Bubble] = field(default_factory=list)
    rows: list[tuple[str, str]] = field(default_factory=list)  # (label, value): decision, fact, reason …
    diff: list[tuple[str, str]] = field(default_factory=list)  # (css class, line)
    file_name: str = ""
    file_content: str | None = None
    raw: bool = False
    withheld: bool = False


def _text(value: Any, raw: bool) -> str:
    text = "" if value is None else str(value)
    return text if raw else redact(text)


def _bubbles(messages: list[dict[str, Any]], *, current_from: int) -> list[Bubble]:
    return [
        Bubble(
            role="user" if m.get("role") == "user" else "agent",
            text=str(m.get("message") or ""),
            current=i >= current_from,
        )
        for i, m in enumerate(messages or [])
    ]


def _diff_lines(diff: str) -> list[tuple[str, str]]:
    lines = []
    for line in diff.splitlines():
        if line.startswith(("+++", "---")):
            css = "meta"
        elif line.startswith("@@"):
            css = "hunk"
        elif line.startswith("+"):
            css = "add"
        elif line.startswith("-"):
            css = "del"
        else:
            css = "ctx"
        lines.append((css, line))
    return lines


def content_for(sample: DatasetSample, *, raw: bool) -> tuple[dict[str, Any] | None, bool]:
    """(content to show, withheld): raw only when asked and allowed (the caller checks the permission)."""
    if raw:
        return sample.content, False
    visible = sample.visible_content()
    return (visible, False) if visible is not None else (None, True)


def present(sample: DatasetSample, *, raw: bool = False) -> SampleView:
    """Everything the review page and the change form show about one sample."""
    content, withheld = content_for(sample, raw=raw)
    view = SampleView(raw=raw, withheld=withheld)
    if content is None:
        return view
    kind = content.get("type")
    if kind in (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE):
        conversation = content.get("conversation") or []
        view.bubbles = _bubbles(conversation, current_from=max(0, len(conversation) - 2))
        if kind == SampleType.MEMORY_GATE_POSITIVE:
            view.rows = [
                ("Gate decision", str(content.get("correctDecision") or "")),
                ("Fact", str(content.get("correctFact") or "")),
                ("Reason", str(content.get("reason") or "")),
                ("Evidence", _evidence(content.get("evidence") or {})),
            ]
        else:
            view.rows = [
                ("Gate said", f"{content.get('incorrectDecision')}: {content.get('incorrectFact') or ''}"),
                ("Correct decision", str(content.get("correctDecision") or "")),
                ("Correct fact", str(content.get("correctFact") or "—")),
                ("Why", str(content.get("rejectionReason") or "")),
            ]
    elif kind == SampleType.WRITE_GUARDIAN_DECISION:
        correction = content.get("userCorrection") or {}
        view.rows = [
            ("Candidate fact", str(content.get("candidateFact") or "")),
            ("Target file", str(content.get("targetFile") or "")),
            ("Guardian decision", f"{content.get('decision')}: {content.get('reason') or ''}"),
        ]
        if correction:
            view.rows.append(
                ("Corrected to", f"{correction.get('correctedDecision')}: {correction.get('reason') or ''}")
            )
        view.file_name = str(content.get("targetFile") or "")
        view.file_content = str(content.get("currentFileContent") or "")
        view.diff = _diff_lines(str(content.get("diff") or ""))
    elif kind == SampleType.ANNOTATED_TURN:
        context = content.get("context") or []
        gate = content.get("memoryGate") or {}
        given = gate.get("input") or {}
        messages = [*context, {"role": "user", "message": given.get("userMessage")}]
        if given.get("agentReply"):
            messages.append({"role": "agent", "message": given.get("agentReply")})
        view.bubbles = _bubbles(messages, current_from=len(context))
        output = gate.get("output") or {}
        view.rows = [
            ("Gate output", f"{output.get('decision')}: {output.get('candidateFact') or '—'}"),
            ("Gate label", str(gate.get("label") or "")),
        ]
        corrected = gate.get("correctedOutput")
        if corrected:
            view.rows.append(
                ("Corrected output", f"{corrected.get('decision')}: {corrected.get('candidateFact') or '—'}")
            )
        guardian = content.get("writeGuardian")
        if guardian:
            g_out = guardian.get("output") or {}
            view.rows.append(
                ("Guardian", f"{g_out.get('status')} ({guardian.get('label')}): {g_out.get('reason') or ''}")
            )
            view.diff = _diff_lines(str(g_out.get("diff") or ""))
            view.file_name = str((guardian.get("input") or {}).get("targetFile") or "")
        feedback = content.get("feedback")
        if feedback:
            events = feedback.get("events") or []
            view.rows.append(("Feedback", f"last {feedback.get('last')}, {len(events)} event(s)"))
    if not view.diff and sample.audit_id and kind != SampleType.WRITE_GUARDIAN_DECISION:
        audit = sample.audit
        if audit is not None and audit.diff:
            view.diff = _diff_lines(_text(audit.diff, raw))
            view.file_name = view.file_name or audit.target_file
    return view


def _evidence(evidence: dict[str, Any]) -> str:
    parts = ["written and not rolled back" if evidence.get("wasWritten") else "confirmed by a correction"]
    if evidence.get("userFeedback"):
        parts.append(f"user feedback: {evidence['userFeedback']}")
    return "; ".join(parts)


def describe(content: dict[str, Any]) -> list[str]:
    """A sample's content as lines for a terminal (``dataset review``): the conversation, then the decision and
    its correction. Give it ``content_for``'s content, as the review page is given."""
    lines: list[str] = []
    kind = content.get("type")

    def say(messages: list[dict[str, Any]]) -> None:
        for m in messages or []:
            who = "USER " if m.get("role") == "user" else "AGENT"
            lines.append(f"  {who} │ {m.get('message', '')}")

    if kind in (SampleType.MEMORY_GATE_POSITIVE, SampleType.MEMORY_GATE_NEGATIVE):
        say(content.get("conversation") or [])
        if kind == SampleType.MEMORY_GATE_POSITIVE:
            lines.append(f"  gate decision: {content.get('correctDecision')}  fact: {content.get('correctFact')}")
            lines.append(f"  reason: {content.get('reason')}")
        else:
            lines.append(f"  gate said: {content.get('incorrectDecision')}  fact: {content.get('incorrectFact')}")
            lines.append(f"  correct:   {content.get('correctDecision')}  fact: {content.get('correctFact') or '-'}")
            lines.append(f"  why: {content.get('rejectionReason')}")
    elif kind == SampleType.WRITE_GUARDIAN_DECISION:
        lines.append(f"  fact → {content.get('targetFile')}: {content.get('candidateFact')}")
        lines.append(f"  guardian: {content.get('decision')}  ({content.get('reason')})")
        correction = content.get("userCorrection")
        if correction:
            lines.append(f"  corrected to: {correction.get('correctedDecision')}  ({correction.get('reason')})")
        if content.get("diff"):
            lines.extend("  " + line for line in str(content["diff"]).splitlines()[:20])
    elif kind == SampleType.ANNOTATED_TURN:
        say(content.get("context") or [])
        gate = content.get("memoryGate") or {}
        given = gate.get("input") or {}
        say(
            [
                {"role": "user", "message": given.get("userMessage")},
                {"role": "agent", "message": given.get("agentReply")},
            ]
        )
        out = gate.get("output") or {}
        lines.append(
            f"  gate: {out.get('decision')}  fact: {out.get('candidateFact') or '-'}  label: {gate.get('label')}"
        )
        if gate.get("correctedOutput"):
            c = gate["correctedOutput"]
            lines.append(
                f"  corrected: {c.get('decision')}  fact: {c.get('candidateFact') or '-'}  ({c.get('reason')})"
            )
        guardian = content.get("writeGuardian")
        if guardian:
            lines.append(f"  guardian: {(guardian.get('output') or {}).get('status')}  label: {guardian.get('label')}")
        feedback = content.get("feedback")
        if feedback:
            lines.append(f"  feedback: {feedback.get('last')} ({len(feedback.get('events') or [])} event(s))")
    return lines
