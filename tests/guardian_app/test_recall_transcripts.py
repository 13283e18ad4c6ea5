"""Conversations as a recall source, indexed as they arrive (issue 22): after the gate records its decision on a
turn, one ``run_transcript_index`` task for a burst of decisions indexes the new turns; ingest's request does no
such work; the results say they come from a transcript, ``<session>#<turn>``."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import cache
from django.utils import timezone

from guardian_app.models import MemoryChunk
from guardian_app.recall.index import TRANSCRIPTS_PENDING_KEY, index_new_turns, index_workspace
from guardian_app.recall.recall import recall
from tests.conftest import turn_payload

pytestmark = pytest.mark.django_db

TASK = "guardian_app.tasks.run_transcript_index"


@pytest.fixture(autouse=True)
def _no_pending_mark() -> None:
    cache.delete(TRANSCRIPTS_PENDING_KEY)


def test_a_gate_decision_asks_once_for_a_burst_and_again_after_the_task_starts(
    make_decision: Callable[..., Any], sent_tasks: Any, django_capture_on_commit_callbacks: Any
):
    asked = sent_tasks.to(TASK)
    with django_capture_on_commit_callbacks(execute=True):
        make_decision("NO_WRITE", None)
        make_decision("UPDATE_USER", "Prefers tea.")
        make_decision("NO_WRITE", None)
    assert len(asked) == 1  # One task for the burst, not one a turn.
    from guardian_app.tasks import run_transcript_index

    summary = run_transcript_index()  # Clears the pending mark first, then indexes the three turns.
    assert "chunks +3" in summary
    with django_capture_on_commit_callbacks(execute=True):
        make_decision("NO_WRITE", None)
    assert len(asked) == 2


def test_ingest_does_not_ask_for_it(api_client: Any, sent_tasks: Any, django_capture_on_commit_callbacks: Any):
    asked = sent_tasks.to(TASK)
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client.post("/api/v1/turns", turn_payload())
    assert response.status_code == 201
    assert asked == []  # Ingest is a hot path: the turn waits for its gate decision.


def test_new_turns_are_indexed_without_reading_the_workspace(write_md: Callable[[str, str], Path]):
    from sessions_app.models import ConversationSession, ConversationTurn

    write_md("USER.md", "# User\n\n- Keeps the kayak at the Askim marina.\n")
    session = ConversationSession.objects.create(id="telegram:mara", channel_id="telegram")
    ConversationTurn.objects.create(
        session=session,
        turn_number=4,
        user_from="Mara",
        user_message_content="The spare kayak paddle is in the loft above the garage.",
        agent_message_content="Noted: the spare paddle is in the loft.",
    )
    report = index_new_turns()
    assert report.chunks_added == 1 and report.files_indexed == 0
    assert not MemoryChunk.objects.filter(source="memory").exists()  # The files wait for the full run.
    top = recall("where is the spare paddle?", now=timezone.now()).results[0]
    assert (top.origin, top.source) == ("transcript", "telegram:mara#4")
    assert index_new_turns().chunks_added == 0  # A delta: nothing twice.
    index_workspace()
    origins = {r.origin for r in recall("kayak", mode="keyword", now=timezone.now()).results}
    assert origins == {"memory", "transcript"}


def test_a_one_file_run_that_starts_over_indexes_everything_again(write_md: Callable[[str, str], Path], settings):
    """The first index run of a new install may be the one-file run after a write; starting over drops every
    chunk, so that run indexes the other files and the transcripts too instead of leaving them to the next
    full run. Found by the PostgreSQL end-to-end test, where the transcript vanished for a minute."""
    from sessions_app.models import ConversationSession, ConversationTurn

    write_md("USER.md", "# User\n\n- Keeps the kayak at the Askim marina.\n")
    write_md("TOOLS.md", "# Tools\n\n- The kayak trailer key hangs in the shed.\n")
    session = ConversationSession.objects.create(id="telegram:mara", channel_id="telegram")
    ConversationTurn.objects.create(session=session, turn_number=1, user_message_content="Where is the kayak?")
    assert index_new_turns().chunks_added == 1  # Transcripts first, as after a gate decision; no chunking meta yet.
    for run in range(2):
        if run:
            settings.RECALL_CHUNK_TOKENS = 64  # Changed chunking starts over the same way.
        index_workspace(paths=["USER.md"])
        paths = {r.path for r in recall("kayak", mode="keyword", now=timezone.now()).results}
        assert paths == {"USER.md", "TOOLS.md", "sessions/telegram:mara"}, run


def _one_file_and_one_turn(write_md: Callable[[str, str], Path]) -> None:
    from sessions_app.models import ConversationSession, ConversationTurn

    write_md("TOOLS.md", "# Tools\n\n- The kayak trailer key hangs in the shed.\n")
    session = ConversationSession.objects.create(id="telegram:mara", channel_id="telegram")
    ConversationTurn.objects.create(
        session=session,
        turn_number=2,
        user_message_content="Lent the kayak to Jon until May.",
        agent_message_content="Ok.",
    )
    index_workspace()


def test_the_cli_says_which_results_are_memory_files_and_which_transcripts(write_md):
    import io

    from django.core.management import call_command

    _one_file_and_one_turn(write_md)
    out = io.StringIO()
    call_command("memory", "recall", "kayak", "--mode", "keyword", "--no-index", stdout=out, stderr=io.StringIO())
    lines = {line.split()[2]: line.split()[3] for line in out.getvalue().splitlines()[1:-1]}
    assert lines == {"TOOLS.md#L3": "memory", "telegram:mara#2": "transcript"}


def test_the_admin_search_says_which_results_are_memory_files_and_which_transcripts(write_md, admin_client):
    from django.urls import reverse

    _one_file_and_one_turn(write_md)
    page = admin_client.get(reverse("admin:guardian_app_memorychunk_recall"), {"q": "kayak", "mode": "keyword"})
    html = page.content.decode()
    assert 'telegram:mara#2</a> <small class="origin">transcript</small>' in html
    assert 'TOOLS.md#L3</a> <small class="origin">memory file</small>' in html
