"""Issue 17 item 2: "Memory changes today" on the admin index and `memory report` show the same gate figures,
from one computation, and they add up; the day's rollbacks are counted from the rollback records, and a fact
counted as rolled back is not in its file."""

from __future__ import annotations

import datetime as dt
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from guardian_app.models import Rollback, WriteGuardianAudit
from guardian_app.reflect.reports import daily_report
from guardian_app.write.rollback import rollback_write
from guardian_app.write.session_rollback import rollback_session
from sessions_app.models import ConversationTurn, MemoryGateDecision

pytestmark = pytest.mark.django_db
FIGURES = re.compile(
    r"Turns:?\s*(?:</th><td>)?\s*(\d+)\s*(?:<span class=\"quiet\">)?\(gate: (\d+) to write, (\d+) nothing to remember(?:, (\d+) not decided yet)?\)"
)


@pytest.fixture
def day_of_turns(make_turn, write):
    """Turns of today: two decided to write, one nothing, one re-run (NO_WRITE, then UPDATE), one undecided; a
    turn of yesterday decided today; two writes, one rolled back."""
    make_turn(fact="Prefers green tea in the afternoon.", decision="UPDATE_USER")
    make_turn(decision="NO_WRITE")
    rerun = make_turn(decision="NO_WRITE")
    MemoryGateDecision.objects.create(
        turn=rerun, session=rerun.session, run_number=2, decision="UPDATE_MEMORY", reason="re-run",
        candidate_fact="The deploy runs from the repository root.", llm_model="test",
    )  # fmt: skip
    make_turn(fact=None, decision="UPDATE_MEMORY")  # No decision: gate pending.
    old = make_turn(decision="NO_WRITE")
    ConversationTurn.objects.filter(id=old.id).update(created_at=timezone.now() - dt.timedelta(days=2))
    kept = write("Likes long walks on Sundays.", session_id="s1")
    undone = write("Enjoys chess problems in the evening.", session_id="s1")
    rollback_write(undone, reason="wrong", requested_by="olga")
    return {"kept": kept, "undone": undone}


def test_the_admin_index_and_memory_report_show_the_same_gate_figures_and_they_add_up(admin_client, day_of_turns):
    report = daily_report(timezone.localdate())
    gate = report.gate
    # Four turns of make_turn today (the re-run counted once, by its latest decision) and the two writes' turns.
    assert gate == {"turns": 6, "write": 4, "no_write": 1, "undecided": 1}
    assert gate["write"] + gate["no_write"] + gate["undecided"] == gate["turns"] == report.turns

    out = StringIO()
    call_command("memory", "report", stdout=out)
    cli = FIGURES.search(out.getvalue())
    page = admin_client.get(reverse("admin:index")).content.decode()
    admin = FIGURES.search(" ".join(page.split()).replace("> ", ">").replace(" <", "<"))
    assert cli is not None and admin is not None, page[page.find("daily-report") : page.find("daily-report") + 600]
    assert cli.groups() == admin.groups() == ("6", "4", "1", "1")


def test_the_days_rolled_back_count_comes_from_the_rollback_records_and_those_facts_are_gone(day_of_turns, user_md):
    write_kept = day_of_turns["kept"]
    result = rollback_session("s1", reason="bad session", requested_by="olga")
    assert result.applied
    report = daily_report(timezone.localdate())
    assert report.counts.rolled_back == Rollback.objects.count() == 2
    rolled = [h for h in report.highlights if h.kind == "rolled_back"]
    assert {h.ref for h in rolled} == {write_kept.id, day_of_turns["undone"].id}
    text = user_md.read_text() if user_md.exists() else ""
    for audit in WriteGuardianAudit.objects.filter(status=WriteGuardianAudit.Status.ROLLED_BACK):
        assert audit.candidate_fact not in text
