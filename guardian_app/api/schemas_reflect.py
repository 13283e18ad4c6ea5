"""Request and response shapes of the reflect API: opinions with their evidence, the change reports, reflect runs."""

import datetime as dt
import re
from typing import Any

from ninja import Field, Schema
from pydantic import field_validator

from guardian_app.models import Opinion, OpinionEvidence, ReflectRun
from guardian_app.reflect.page_writes import run_audits


class EvidenceOut(Schema):
    fact_id: str = Field(..., description="Stable id of the fact (a hash of its file and text).")
    source: str = Field(..., examples=["memory/2025-11-27.md#L12"])
    content: str
    fact_date: dt.datetime
    strength: float
    confidence_before: float
    confidence_after: float


class OpinionOut(Schema):
    id: str
    entity: str
    statement: str
    confidence: float = Field(..., ge=0, le=1)
    last_updated: dt.datetime
    created_at: dt.datetime
    supporting_count: int
    contradicting_count: int
    source: str = Field(..., description="Where the opinion was first stated.")
    supporting: list[EvidenceOut]
    contradicting: list[EvidenceOut]

    @staticmethod
    def resolve_supporting(obj: Opinion) -> list[OpinionEvidence]:
        return [e for e in obj.evidence.all() if e.stance == OpinionEvidence.Stance.SUPPORTS]

    @staticmethod
    def resolve_contradicting(obj: Opinion) -> list[OpinionEvidence]:
        return [e for e in obj.evidence.all() if e.stance == OpinionEvidence.Stance.CONTRADICTS]


class OpinionFilter(Schema):
    entity: str | None = Field(None, max_length=255, description="An entity (Peter, @Peter, the-castle).")
    min_confidence: float | None = Field(None, ge=0, le=1)


class ReportParams(Schema):
    date: dt.date | None = Field(None, description="YYYY-MM-DD in the server's time zone (default: today).")

    @field_validator("date", mode="before")
    @classmethod
    def _iso_date(cls, value: Any) -> Any:
        # pydantic would read "0" or "1700000000" as a Unix time: a typo must not become another day's report.
        if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
            raise ValueError("use YYYY-MM-DD")
        return value


class CountsOut(Schema):
    created: int
    merged: int
    skipped: int
    held: int
    refused: int
    failed: int
    rolled_back: int


class SessionReportOut(Schema):
    session: str
    turns: int
    counts: CountsOut
    highlights: list[str]


class HighlightOut(Schema):
    kind: str
    text: str
    pivotal: bool
    ref: str


class DailyReportOut(Schema):
    date: dt.date
    pivotal: bool = Field(..., description="Rollbacks, facts held for review, failures or large opinion moves.")
    counts: CountsOut
    turns: int
    gate: dict[str, int]
    sessions: list[SessionReportOut]
    highlights: list[HighlightOut]
    reflect_runs: list[dict[str, Any]]
    markdown: str


class ReflectIn(Schema):
    since: str | None = Field(None, max_length=40, description="30d, 12h, 1w or an ISO date; default: the last run.")
    until: str | None = Field(None, max_length=40, description="As `since`; default now.")
    dry_run: bool = False


class ReflectRunOut(Schema):
    id: str
    status: str
    stage: str
    since: dt.datetime
    until: dt.datetime
    dry_run: bool
    requested_by: str
    facts_count: int
    entities_count: int
    pages_written: int
    pages_unchanged: int
    pages_refused: int
    opinions_created: int
    opinions_updated: int
    memory_proposals: int
    skill_drafts: int
    llm_model: str
    error: str
    stats: dict[str, Any]
    audit_ids: list[str]
    created_at: dt.datetime
    started_at: dt.datetime | None
    finished_at: dt.datetime | None

    @staticmethod
    def resolve_audit_ids(obj: ReflectRun) -> list[str]:
        return [a.id for a in run_audits(obj)]
