"""Audits export from the admin (CSV/JSON/XLSX); behaviour corrections import from a spreadsheet, dry run first,
each row through the same checks as the correction form (issue 24)."""

from __future__ import annotations

import csv
import io
import re
from http import HTTPStatus

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from guardian_app.admin.resources import WriteGuardianAuditResource
from guardian_app.models import BehaviorCorrection, WriteGuardianAudit

pytestmark = pytest.mark.django_db

AUDITS = reverse("admin:guardian_app_writeguardianaudit_changelist")
CORRECTIONS = reverse("admin:guardian_app_behaviorcorrection_changelist")


def test_audits_export_in_csv_json_and_xlsx(admin_client, write, user_md):
    written = write("Prefers green tea in the afternoon.")
    refused = write("The user's e-mail is alice@example.com")
    assert (written.status, refused.status) == ("written", "refused")
    chosen = {
        f"writeguardianauditresource_{f.column_name}": "on" for f in WriteGuardianAuditResource().get_export_fields()
    }

    assert AUDITS + "export/" in admin_client.get(AUDITS).content.decode()
    response = admin_client.post(AUDITS + "export/?status__exact=written", {"format": "0", **chosen})

    assert response.status_code == HTTPStatus.OK
    rows = list(csv.DictReader(io.StringIO(response.content.decode("utf-8-sig"))))
    assert [(r["id"], r["status"], r["target_file"]) for r in rows] == [(written.id, "written", "USER.md")]
    everything = admin_client.post(AUDITS + "export/", {"format": "1", **chosen}).content.decode()
    assert "alice@example.com" not in everything and refused.id in everything  # refused values are redacted
    assert admin_client.post(AUDITS + "export/", {"format": "2", **chosen}).content[:2] == b"PK"


def _import(client, text: str):
    upload = SimpleUploadedFile("corrections.csv", text.encode(), content_type="text/csv")
    return client.post(CORRECTIONS + "import/", {"import_file": upload, "format": "0", "resource": "0"})


def _hidden(html: str) -> dict[str, str]:
    return dict(re.findall(r'<input type="hidden" name="([^"]+)" value="([^"]*)"', html))


def test_corrections_import_is_a_dry_run_then_a_confirmed_import(admin_client, admin_user, write, user_md):
    audit = write("Prefers green tea in the afternoon.")
    sheet = (
        "audit,corrected_status,correction_reason,corrected_candidate_fact,corrected_target_file,apply_to_future\n"
        f"{audit.id},refused,Small talk is not a fact.,,,true\n"
    )

    preview = _import(admin_client, sheet)

    assert preview.status_code == HTTPStatus.OK
    assert not BehaviorCorrection.objects.exists()  # the dry run saved nothing
    assert "Confirm import" in preview.content.decode() or "confirm" in preview.content.decode().lower()
    confirmed = admin_client.post(CORRECTIONS + "process_import/", _hidden(preview.content.decode()))
    assert confirmed.status_code in (HTTPStatus.OK, HTTPStatus.FOUND)
    correction = BehaviorCorrection.objects.get()
    assert (correction.audit_id, correction.corrected_status, correction.apply_to_future) == (audit.id, "refused", True)
    assert correction.original_status == "written" and correction.corrected_by == admin_user.get_username()
    assert correction.correction_pattern  # derived from the fact, as the form does


@pytest.mark.parametrize(
    ("row", "why"),
    [
        ("{id},maybe,Not sure.,,,false", "status must be"),
        ("{id},written,Wrong file.,,bank/entities/Peter.md,false", "one of reflect&#x27;s bank pages"),
        ("{id},refused,,,,false", "Give a reason for the correction."),
        ("nope,refused,A reason.,,,false", "WriteGuardianAudit matching query does not exist"),
    ],
)
def test_an_invalid_row_is_shown_and_nothing_is_imported(admin_client, write, user_md, row, why):
    audit = write("Prefers green tea in the afternoon.")
    sheet = (
        "audit,corrected_status,correction_reason,corrected_candidate_fact,corrected_target_file,apply_to_future\n"
        + row.format(id=audit.id)
        + "\n"
    )

    preview = _import(admin_client, sheet)

    html = preview.content.decode()
    assert preview.status_code == HTTPStatus.OK
    assert why in html, html[-3000:]
    assert "process_import" not in html  # nothing to confirm
    assert not BehaviorCorrection.objects.exists()
    assert WriteGuardianAudit.objects.get(id=audit.id).status == "written"
