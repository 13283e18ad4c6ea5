"""National id numbers never leave the database in the dataset: not through GET /api/v1/dataset/samples, nor in
any export format made without ``include_pii``, whether the sample was collected with privacy filtering on or
off; ``include_pii`` (raw) keeps them, as it keeps every other value (issue 18)."""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import Any

import pytest
from django.urls import reverse

from dataset_app.collect import collect_samples
from dataset_app.exporters.registry import format_names
from dataset_app.exports import create_export, run_export
from dataset_app.models import DatasetSample
from tests.dataset_app.factories import written_decision

pytestmark = pytest.mark.django_db

CN_ID = "110105198001010016"
CN_ID_X = "11010519491231002X"
SSN = "536-22-1048"
NINO = "AB 12 34 56 C"
IDS = (CN_ID, CN_ID_X, SSN, NINO)


@pytest.fixture
def id_samples(db: None) -> int:
    """Samples whose turns, facts and context hold national ids of each kind, and a clean one."""
    written_decision(
        days=13, user=f"我的身份证号是{CN_ID}，帮我记住。", fact=f"用户的身份证号是{CN_ID}。"
    )  # fmt: skip
    written_decision(days=12, user=f"My SSN is {SSN}, file the form.", fact=f"The user's SSN is {SSN}.")
    written_decision(
        days=11, user=f"NI number {NINO}; my wife's id is {CN_ID_X}", fact=f"The user's NI number is {NINO}."
    )
    written_decision(days=10, user="I prefer morning check-ins.", fact="Prefers morning check-ins.")
    collect_samples()
    count = DatasetSample.objects.count()
    assert count >= 4
    return count


def _leaks(text: str) -> list[str]:
    # A Chinese id also leaks through its birth-date digits; an SSN through its serial.
    pieces = [*IDS, CN_ID[6:14], CN_ID_X[6:14], SSN.replace("-", ""), NINO.replace(" ", "")]
    return [piece for piece in pieces if piece in text]


def test_stored_samples_are_flagged_and_their_redacted_copy_holds_no_id(id_samples):
    flagged = DatasetSample.objects.filter(contains_pii=True)
    assert flagged.count() >= 3
    for sample in flagged:
        assert _leaks(json.dumps(sample.pii_redacted_content, ensure_ascii=False)) == []
        assert "[NATIONAL_ID]" in json.dumps(sample.pii_redacted_content, ensure_ascii=False)


def test_the_samples_api_serves_no_national_id(id_samples, client_for):
    reader = client_for("read")
    listed = reader.get(reverse("api:list_samples"), {"limit": 100})
    assert listed.status_code == HTTPStatus.OK
    body = listed.content.decode()
    assert len(listed.json()["items"]) == id_samples
    assert _leaks(body) == [] and _leaks(json.dumps(listed.json(), ensure_ascii=False)) == []
    assert "[NATIONAL_ID]" in json.dumps(listed.json(), ensure_ascii=False)
    for sample in DatasetSample.objects.all():
        one = reader.get(reverse("api:get_sample", args=[sample.id]))
        assert one.status_code == HTTPStatus.OK
        assert _leaks(json.dumps(one.json(), ensure_ascii=False)) == []


def _exported_text(fmt: str, **options: Any) -> str:
    row = run_export(create_export(export_format=fmt, name=f"ids-{fmt}-{len(options)}", **options).id)
    assert row is not None and row.status == "completed", row and row.error
    assert row.total_samples > 0
    from pathlib import Path

    return "".join(Path(f["path"]).read_text(encoding="utf-8") for f in row.files)


@pytest.mark.parametrize("fmt", sorted(format_names()))
def test_no_export_format_carries_a_national_id(id_samples, fmt):
    text = _exported_text(fmt)
    assert _leaks(text) == [], fmt
    # JSON formats may escape the placeholder's brackets; the word survives either way.
    assert "NATIONAL_ID" in text, fmt


@pytest.mark.parametrize("fmt", sorted(format_names()))
def test_samples_collected_without_privacy_filtering_are_redacted_on_the_way_out(id_samples, fmt):
    DatasetSample.objects.update(privacy_checked=False, contains_pii=False, pii_redacted_content=None)
    assert _leaks(_exported_text(fmt)) == [], fmt


def test_include_pii_keeps_the_ids_in_the_raw_export(id_samples):
    assert set(IDS) <= set(_leaks(_exported_text("raw", include_pii=True)))


@pytest.mark.parametrize("fmt", ["openai", "raw", "csv"])
def test_a_downloaded_export_carries_no_national_id(id_samples, client_for, fmt):
    operator = client_for("operate")
    export = run_export(create_export(export_format=fmt, name=f"dl-{fmt}").id)
    response = operator.get(reverse("api:download_export", args=[export.id]), {"split": "all"})
    assert response.status_code == HTTPStatus.OK
    assert _leaks(b"".join(response.streaming_content).decode()) == []


def test_the_daily_conversation_export_carries_no_national_id_in_the_turns(id_samples, settings):
    """The JSONL conversation export (storage.jsonlExport), without JSONL_EXPORT_INCLUDE_PII: the turns' text and
    context are redacted on the way out. (Its decisions and audits are redacted when recorded, which the factory
    rows here skip; the security probe runs the whole pipeline and reads the export too.)"""
    from django.utils import timezone

    from dataset_app.exporters.conversations import export_conversations
    from sessions_app.models import ConversationTurn

    settings.JSONL_EXPORT_INCLUDE_PII = False
    days = {timezone.localtime(t.created_at).date() for t in ConversationTurn.objects.all()}
    exported = [export_conversations(day) for day in sorted(days)]
    records = [json.loads(line) for r in exported for line in r.path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == ConversationTurn.objects.count() >= 4
    turns_text = json.dumps(
        [[r["user_message"], r["agent_reply"], r["context"], r["feedback"]] for r in records], ensure_ascii=False
    )
    assert _leaks(turns_text) == []
    assert "NATIONAL_ID" in turns_text
