"""Keyword recall: the FTS query builder (and hostile input), English and Chinese, filters, the answer shape."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from pathlib import Path

import pytest
from django.utils import timezone

from guardian_app.recall.fulltext import fts5_query, keyword_search
from guardian_app.recall.index import index_workspace
from guardian_app.recall.query import InvalidRecallQuery, parse_time, query_terms
from guardian_app.recall.recall import recall

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 2, 20, 12, 0, tzinfo=dt.UTC)

TOOLS = """\
# Tools

## Servers
- The staging server is db-2.internal, PostgreSQL 15, reachable over the VPN only.
- Production runs on three Hetzner machines behind HAProxy.
- 预发布服务器部署在东京，每周一凌晨三点自动备份。

## Commands
- Deploy with `make deploy ENV=staging`; it runs the migrations first.
"""

LOG_EARLY = """\
# 2026-01-10

## Retain
- B @warelay: I fixed the reconnect loop by wrapping connection.update in try/catch.
- O(c=0.7) @Peter: Prefers tabs over spaces in Go code.
"""

LOG_LATE = """\
# 2026-02-18

## Retain
- W @staging: The staging server moved to db-3.internal after the disk failure.
- O(c=0.95) @Peter: Prefers short replies on WhatsApp (under 1500 characters).
- S A calm week; mostly reviews.
"""

HOSTILE = [
    '"',
    '""',
    "'",
    "*",
    "NEAR(staging server, 2)",
    "staging AND",
    "OR OR OR",
    "NOT",
    "-staging",
    "^staging",
    "text:staging",
    "search_text : staging",
    "{search_text}: staging",
    "(staging",
    "staging)",
    'staging" OR "1"="1',
    "'; DROP TABLE memory_index_chunks; --",
    "\x00staging",
    "staging\x00server",
    "\\",
    "%",
    "_",
    "staging*",
    "a" * 5000,
    "🙂 staging 🙂",
    "ＳＴＡＧＩＮＧ",
    "::",
    "&|!<->",
    "staging & server | !prod",
]


@pytest.fixture
def recall_notes(write_md: Callable[[str, str], Path]) -> None:
    write_md("TOOLS.md", TOOLS)
    write_md("USER.md", "# User\n\n- Prefers summaries on Fridays.\n- Lives in Vienna with @Anna.\n")
    write_md("memory/2026-01-10.md", LOG_EARLY)
    write_md("memory/2026-02-18.md", LOG_LATE)
    index_workspace()


def sources(answer) -> list[str]:
    return [r.source for r in answer.results]


# --- The query builder -----------------------------------------------------------------------------------------
def test_query_terms_drop_question_words_and_keep_the_subject():
    assert query_terms("What did we decide about the staging server?") == ["decide", "staging", "server"]
    assert query_terms("the and or") == ["the", "and", "or"]  # Nothing but stop words: keep them.
    assert query_terms("db-2.internal") == ["db", "2", "internal"]


def test_chinese_queries_become_bigrams():
    assert query_terms("东京") == ["东京"]
    # Bigrams holding a function character ("署在", "在哪", "哪里") are dropped: they match across words.
    assert query_terms("服务器部署在哪里") == ["服务", "务器", "器部", "部署"]
    assert query_terms("猫") == ["猫"]
    assert "什么" not in query_terms("备份是什么时候")


def test_fts5_query_quotes_every_term():
    assert fts5_query(["staging", "server"]) == '"staging" AND "server"'
    assert fts5_query(["a", 'b"c'], "OR") == '"a" OR "b""c"'
    with pytest.raises(ValueError):
        fts5_query(["a"], "NEAR")


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_input_never_reaches_the_fts_syntax(recall_notes, query):
    terms = query_terms(query)
    assert all(term.isalnum() for term in terms)  # Only letters and digits survive.
    answer = recall(query, mode="keyword", now=NOW)  # Never an FTS syntax error.
    assert isinstance(answer.results, list)
    if "staging" in query.lower() or "ＳＴＡＧＩＮＧ" in query:
        assert answer.results, query


def test_operators_in_the_query_are_words_not_syntax(recall_notes):
    answer = recall("staging NOT server", mode="keyword", now=NOW)
    assert answer.terms == ["staging", "server"]  # "not" is a stop word, never an operator.
    assert answer.results


# --- English and Chinese --------------------------------------------------------------------------------------
def test_english_query_finds_the_fact_with_its_line(recall_notes):
    answer = recall("Which PostgreSQL version does the staging server use?", mode="keyword", now=NOW)
    assert sources(answer)[0] == "TOOLS.md#L4"
    assert answer.operator == "OR"  # No chunk has every word; the one with most of them ranks first.
    assert answer.mode == "keyword" and answer.note


def test_stemming_matches_other_forms_of_a_word(recall_notes):
    assert recall("deploying", mode="keyword", now=NOW).results[0].source == "TOOLS.md#L9"
    assert recall("fixing reconnects", mode="keyword", now=NOW).results[0].source == "memory/2026-01-10.md#L4"


def test_chinese_query_finds_the_chinese_fact(recall_notes):
    answer = recall("东京的服务器", mode="keyword", now=NOW)
    assert answer.results[0].source == "TOOLS.md#L6"
    assert recall("备份", mode="keyword", now=NOW).results[0].source == "TOOLS.md#L6"
    assert recall("京", mode="keyword", now=NOW).results[0].source == "TOOLS.md#L6"  # One character.


def test_terms_are_ored_so_k_fills_with_the_best_partial_matches(recall_notes):
    found, operator = keyword_search(query_terms("staging"), filters=_no_filters(), limit=10)
    assert operator == "AND" and found  # One term.
    both, operator = keyword_search(query_terms("staging vpn"), filters=_no_filters(), limit=10)
    staging_only, _ = keyword_search(query_terms("staging"), filters=_no_filters(), limit=10)
    assert operator == "OR" and set(staging_only) <= set(both)  # Not just the chunks that have both words.
    assert keyword_search(query_terms("kubernetes helm"), filters=_no_filters(), limit=10) == ({}, "OR")


def _no_filters():
    from guardian_app.recall.rows import Filters

    return Filters()


# --- Filters --------------------------------------------------------------------------------------------------
def test_since_and_until_filter_by_the_source_date(recall_notes):
    recent = recall("Prefers", since="30d", file="memory/", mode="keyword", now=NOW)
    assert {r.path for r in recent.results} == {"memory/2026-02-18.md"}
    older = recall("Prefers", until="2026-01-10", file="memory/", mode="keyword", now=NOW)
    assert {r.path for r in older.results} == {"memory/2026-01-10.md"}  # A bare until date includes that day.
    window = recall("Prefers", since="2026-01-11", until="2026-02-17", file="memory/", mode="keyword", now=NOW)
    assert window.results == []


def test_kind_entity_and_file_filters(recall_notes):
    opinions = recall("Prefers", kind="opinion", mode="keyword", now=NOW)
    assert {r.kind for r in opinions.results} == {"opinion"} and len(opinions.results) == 2
    peter = recall("prefers", entity="peter", mode="keyword", now=NOW)
    assert {tuple(r.entities) for r in peter.results} == {("Peter",)}
    anna = recall("Vienna", entity="@Anna", mode="keyword", now=NOW)
    assert sources(anna) == ["USER.md#L4"]
    only_user = recall("Prefers", file="USER.md", mode="keyword", now=NOW)
    assert {r.path for r in only_user.results} == {"USER.md"}
    assert recall("Prefers", file="memory%", mode="keyword", now=NOW).results == []  # LIKE wildcards are literal.


def test_parse_time_accepts_relative_and_iso_and_refuses_the_rest():
    assert parse_time("30d", now=NOW) == NOW - dt.timedelta(days=30)
    assert parse_time("12h", now=NOW) == NOW - dt.timedelta(hours=12)
    assert parse_time("2w", now=NOW) == NOW - dt.timedelta(days=14)
    assert parse_time("2026-02-01", now=NOW) == timezone.make_aware(dt.datetime(2026, 2, 1))
    assert parse_time("2026-02-01", now=NOW, end_of_day=True) == timezone.make_aware(dt.datetime(2026, 2, 2))
    assert parse_time("2026-02-01T10:00:00Z", now=NOW) == dt.datetime(2026, 2, 1, 10, tzinfo=dt.UTC)
    for bad in ("yesterday", "30x", "2026-13-01", "-3d"):
        with pytest.raises(InvalidRecallQuery):
            parse_time(bad, now=NOW)


def test_bad_arguments_are_refused(recall_notes):
    for kwargs in ({"k": 0}, {"k": 101}, {"kind": "rumour"}, {"mode": "semantic"}, {"since": "soon"}):
        with pytest.raises(InvalidRecallQuery):
            recall("staging", **kwargs)


# --- The answer -----------------------------------------------------------------------------------------------
def test_results_carry_kind_timestamp_entities_content_score_parts_and_source(recall_notes):
    answer = recall("short replies WhatsApp", mode="keyword", now=NOW)
    top = answer.as_dict()["results"][0]
    assert top["source"] == "memory/2026-02-18.md#L5"
    assert top["kind"] == "opinion" and top["entities"] == ["Peter"] and top["confidence"] == 0.95
    assert top["content"] == "Prefers short replies on WhatsApp (under 1500 characters)."
    assert top["timestamp"].startswith("2026-02-18")
    assert set(top["score_parts"]) == {"vector", "keyword", "decay"}
    assert top["score_parts"]["vector"] is None and top["score_parts"]["keyword"] == 1.0
    assert top["score"] == pytest.approx(top["score_parts"]["keyword"] * top["score_parts"]["decay"])


def test_k_limits_the_results_and_they_are_ranked(recall_notes):
    answer = recall("staging server", k=2, mode="keyword", now=NOW)
    assert len(answer.results) == 2
    scores = [r.score for r in answer.results]
    assert scores == sorted(scores, reverse=True)


def test_long_content_is_cut_to_the_snippet_length(write_md, settings):
    settings.RECALL_SNIPPET_MAX_CHARS = 40
    write_md("MEMORY.md", "# M\n\n" + "The archive holds " + "many words " * 30 + "\n")
    index_workspace()
    content = recall("archive", mode="keyword").results[0].content
    assert len(content) == 40 and content.endswith("…")


def test_an_empty_index_and_an_empty_query_answer_nothing(db):
    assert recall("anything", mode="keyword").results == []
    answer = recall("?!", mode="keyword")
    assert answer.results == [] and answer.terms == []


# --- Conversations as a source (seed 003's "sessions") -------------------------------------------------------------
def _turn(session_id: str, number: int, user: str, agent: str = "Noted.", **kw: object) -> None:
    from sessions_app.models import ConversationSession, ConversationTurn

    session, _ = ConversationSession.objects.get_or_create(id=session_id, defaults={"channel_id": "telegram"})
    ConversationTurn.objects.create(
        session=session,
        turn_number=number,
        user_from="Mara",
        user_message_content=user,
        agent_message_content=agent,
        **kw,
    )


def test_stored_turns_are_recalled_with_their_session_and_turn(recall_notes):
    _turn("telegram:mara", 1, "Hi there")
    _turn("telegram:mara", 2, "I parked the camper van at the Askim marina, berth 14.")
    report = index_workspace()
    assert report.chunks_added == 2
    answer = recall("where is the camper van parked?", now=timezone.now())
    top = answer.results[0]
    assert top.origin == "transcript" and top.source == "telegram:mara#2"
    assert top.as_dict()["origin"] == "transcript" and "Mara: I parked the camper van" in top.content
    assert top.heading.startswith("Mara and agent, ")
    files = recall("staging", mode="keyword", now=NOW).results
    assert files and all(r.origin == "memory" for r in files)


def test_turns_are_indexed_as_a_delta_and_vanish_with_their_session(recall_notes):
    from guardian_app.models import MemoryChunk
    from guardian_app.recall.storage import read_meta, write_meta
    from guardian_app.recall.transcripts import SESSIONS_META_KEY
    from sessions_app.models import ConversationSession

    _turn("telegram:mara", 1, "The kayak needs a new paddle.")
    index_workspace()
    assert index_workspace().chunks_added == 0  # Nothing new: no chunk twice.
    _turn("telegram:mara", 2, "Ordered the paddle from Naturkompaniet.")
    assert index_workspace().chunks_added == 1
    assert MemoryChunk.objects.filter(source="sessions").count() == 2
    ConversationSession.objects.filter(id="telegram:mara").delete()  # Retention.
    write_meta(SESSIONS_META_KEY, {**read_meta(SESSIONS_META_KEY), "prunedAt": "2000-01-01T00:00:00+00:00"})
    assert index_workspace().chunks_removed == 2
    assert not recall("paddle", mode="keyword", now=NOW).results


def test_a_turn_committed_late_with_an_earlier_time_is_still_indexed(recall_notes):
    _turn("telegram:mara", 1, "First message about the sauna.")
    index_workspace()
    _turn("telegram:mara", 2, "The sauna heater is a Harvia.", created_at=timezone.now() - dt.timedelta(minutes=2))
    assert index_workspace().chunks_added == 1
    assert recall("Harvia sauna heater", mode="keyword", now=NOW).results[0].source == "telegram:mara#2"
