"""The recall API's schemas: the query's parameters, a ranked result with its source, the hits report."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from ninja import Field, Schema

from guardian_app.recall.query import MAX_QUERY_CHARS
from guardian_app.recall.recall import MAX_K


class RecallParams(Schema):
    q: str = Field(..., min_length=1, max_length=MAX_QUERY_CHARS, description="What to recall, in plain words.")
    k: int | None = Field(None, ge=1, le=MAX_K, description="How many results (default RECALL_DEFAULT_K, 25).")
    since: str | None = Field(None, max_length=40, description="30d, 12h, 2w, 6m, 1y, or an ISO date/time.")
    until: str | None = Field(None, max_length=40, description="As `since`; a bare date includes that day.")
    kind: Literal["world", "experience", "opinion", "observation"] | None = None
    entity: str | None = Field(None, max_length=200, description="An entity such as Peter (from @Peter tags).")
    file: str | None = Field(None, max_length=512, description="A path (USER.md), or a folder ending in / (memory/).")
    mode: Literal["auto", "keyword", "hybrid"] = "auto"


class ScorePartsOut(Schema):
    vector: float | None = Field(..., description="Cosine similarity in [0, 1]; null when keyword-only.")
    keyword: float = Field(..., description="Keyword score divided by the best keyword score of the query.")
    decay: float = Field(
        ...,
        description="The bounded boost: (1 + 0.1·2^(-age_days/half_life)) × (1 + 0.1·ln(1 + hits)); durable files "
        "count as age 0, and a time-scoped question has no recency part.",
    )


class RecallHitOut(Schema):
    id: int = Field(..., description="Report it to POST /recall/hits when the agent uses this result.")
    kind: str | None = Field(..., description="world | experience | opinion | observation (typed facts), else null.")
    timestamp: dt.datetime
    entities: list[str]
    confidence: float | None
    content: str
    source: str = Field(
        ...,
        examples=["memory/2026-02-03.md#L12-L14", "channel:telegram:42#17"],
        description="file#lines or session#turn",
    )
    origin: Literal["memory", "transcript"] = Field(..., description="A workspace file, or a stored conversation turn.")
    path: str
    start_line: int
    end_line: int
    heading: str
    score: float
    score_parts: ScorePartsOut
    hits: int


class RecallOut(Schema):
    query: str
    mode: Literal["keyword", "hybrid"]
    note: str | None = Field(..., description="Why the answer is keyword-only, when it is.")
    terms: list[str]
    operator: Literal["AND", "OR"]
    filters: dict[str, Any]
    time_scope: dict[str, Any] | None = Field(
        None,
        description="The window a time expression in the question asked about ({start, end, phrase}); its "
        "daily logs and turns rank first.",
    )
    took_ms: float
    results: list[RecallHitOut]


class HitsIn(Schema):
    ids: list[Annotated[int, Field(ge=1, le=2**63 - 1)]] = Field(
        ..., min_length=1, max_length=MAX_K, description="Ids of the results the agent used."
    )


class HitsOut(Schema):
    updated: int
