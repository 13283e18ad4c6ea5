"""The facts reflect reads: names found in the guardian's facts, so that a day of conversations (no daily
logs, no @tags) still gives entity pages; the user's facts are about the user."""

from __future__ import annotations

import datetime as dt

import pytest

from guardian_app.reflect.facts import collect_facts, names_in_text
from guardian_app.reflect.reflect import reflect


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("Lives in Lisbon near the river.", ["Lisbon"]),
        ("Works at Acme Corp on the Atlas project.", ["Acme Corp", "Atlas"]),
        ("My name is Ada.", ["Ada"]),
        ("Visited The Castle with Peter and Andy's sister.", ["Castle", "Peter", "Andy"]),
        ("I met O'Brien in New York.", ["O'Brien", "New York"]),
        ("Prefers summaries on Fridays.", []),
        ("Prefers replies in English.", []),
        ("Uses the API at NASA daily.", []),
        ("Deploy with `make deploy ENV=staging`.", []),
        ("Peter prefers tea.", []),  # A sentence's first word is skipped (a known @Peter is found anyway).
    ],
)
def test_names_in_text(text, names):
    assert names_in_text(text) == names


@pytest.mark.django_db
def test_a_day_of_conversations_gives_entity_pages(write, workspace):
    from django.utils import timezone

    write("Lives in Lisbon near the river.", file="USER.md")
    write("Works at Acme Corp on the Atlas project.", file="USER.md")
    write("The Atlas launch moved to March.", file="MEMORY.md")
    write("Acme Corp opened an office in Lisbon.", file="MEMORY.md")
    write("Prefers British English spelling in documents.", file="USER.md")  # an adjective, no entity
    write("Met Dana at the conference.", file="MEMORY.md")  # one mention: no evidence of an entity yet

    run = reflect(since="1d")

    pages = sorted(p.name for p in (workspace / "bank/entities").iterdir())
    assert pages == ["Acme-Corp.md", "Atlas.md", "Lisbon.md", "User.md"]
    atlas = (workspace / "bank/entities/Atlas.md").read_text()
    assert "The Atlas launch moved to March. — `MEMORY.md#L" in atlas and "Acme Corp on the Atlas project" in atlas
    user = (workspace / "bank/entities/User.md").read_text()
    assert "Lives in Lisbon" in user and "Atlas launch" not in user
    assert run.facts_count == 6
    assert len(collect_facts(run.since, timezone.now()).facts) == 6


@pytest.mark.django_db
def test_the_user_entity_can_be_turned_off(write, workspace, settings):
    settings.REFLECT_USER_ENTITY = ""
    write("Prefers green tea in the afternoon.", file="USER.md")

    run = reflect(since="1d")

    assert run.facts_count == 1 and run.entities_count == 0 and not (workspace / "bank/entities").exists()


@pytest.mark.parametrize(
    ("text", "preference"),
    [
        ("Prefers green tea in the afternoon.", True),
        ("Likes dark mode.", True),
        ("Dislikes long meetings.", True),
        ("Would rather get a call than a text.", True),
        ("喜欢简洁的回复", True),
        ("Lives in Lisbon.", False),
        ("Is likely to travel in May.", False),
    ],
)
def test_preferences_are_opinions(text, preference):
    from guardian_app.reflect.facts import is_preference

    assert is_preference(text) is preference


@pytest.mark.django_db
def test_a_preference_the_guardian_wrote_becomes_an_opinion_about_the_user(write, workspace):
    from guardian_app.models import Opinion

    write("Prefers green tea in the afternoon.", file="USER.md")

    run = reflect(since="1d")

    opinion = Opinion.objects.get()
    assert (opinion.entity, opinion.statement, opinion.confidence) == (
        "User",
        "Prefers green tea in the afternoon.",
        0.6,
    )
    assert run.opinions_created == 1
    assert "Prefers green tea in the afternoon. — c=0.60" in (workspace / "bank/opinions.md").read_text()


# A small labelled table of facts and the names a person would call entities in them (issue 23: "British"
# from "British English" was a page). Language and nationality adjectives, days and months are no names.
NAMES_TABLE = [
    ("Prefers British English spelling.", []),
    ("Speaks fluent Canadian French with a Quebec accent.", ["Quebec"]),
    ("Likes Italian food and Japanese whisky.", []),
    ("Works at Acme Corp on the Atlas project.", ["Acme Corp", "Atlas"]),
    ("Moved to Lisbon in March.", ["Lisbon"]),
    ("Has a call with Dana Lee every Monday.", ["Dana Lee"]),
    ("Reads the Financial Times on Sundays.", ["Financial Times"]),
    ("Prefers American football to European football.", []),
    ("Writes Mandarin and Cantonese.", []),
    ("Visited the Louvre with Sam.", ["Louvre", "Sam"]),
]


@pytest.mark.parametrize(("text", "names"), NAMES_TABLE)
def test_names_in_facts_against_a_labelled_table(text, names):
    from guardian_app.reflect.facts import names_in_text

    assert names_in_text(text) == names


@pytest.mark.django_db
def test_a_name_guessed_once_is_not_an_entity_until_a_second_fact_names_it(write, settings):
    from django.utils import timezone

    write("Had lunch with Priya near the office.", file="MEMORY.md")
    since = timezone.now() - dt.timedelta(days=1)
    assert [f.entities for f in collect_facts(since, timezone.now()).facts] == [()]

    write("Priya recommended a book on Rust.", file="MEMORY.md")
    assert all("Priya" in f.entities for f in collect_facts(since, timezone.now()).facts)

    settings.REFLECT_NEW_ENTITY_MIN_EVIDENCE = 3
    assert all(f.entities == () for f in collect_facts(since, timezone.now()).facts)
