"""The recall API: ranked, attributed facts from the memory index, and the agent's report of what it used."""

from __future__ import annotations

from django.http import HttpRequest
from ninja import Query, Router

from guardian_app.api.audits import AnyScope
from guardian_app.api.schemas_recall import HitsIn, HitsOut, RecallOut, RecallParams
from guardian_app.recall.recall import RecallAnswer, recall, record_hits
from reflection_site.api import ApiKey, ErrorOut

router = Router(tags=["recall"], auth=ApiKey("read"))

_ERRORS = {401: ErrorOut, 403: ErrorOut, 422: ErrorOut}


@router.get("/recall", response={200: RecallOut, **_ERRORS}, url_name="recall")
def recall_memory(request: HttpRequest, params: Query[RecallParams]) -> RecallAnswer:
    """The best facts for `q` from the memory files, each with its file and lines; keyword-only without embeddings."""
    return recall(
        params.q,
        k=params.k,
        since=params.since,
        until=params.until,
        kind=params.kind,
        entity=params.entity,
        file=params.file,
        mode=params.mode,
    )


# Reporting a hit changes ranking and decay: a write, so the agent's `ingest` key (or an operator's), never `read`.
@router.post(
    "/recall/hits", auth=AnyScope("ingest", "operate"), response={200: HitsOut, **_ERRORS}, url_name="recall_hits"
)
def report_hits(request: HttpRequest, payload: HitsIn) -> dict[str, int]:
    """The agent used these results: their hit counts rise, and so does their rank (seed 004's activity boost)."""
    return {"updated": record_hits(payload.ids)}
