"""What a turn says beside the fact the offline gate keeps (issue 21): the name a child or an animal was given, and
what took the place of a thing given up, are joined to the fact instead of lost. Rows are written here."""

from __future__ import annotations

import pytest

from sessions_app.heuristic_gate import classify_turn
from sessions_app.heuristic_joined import with_name, with_replacement
from sessions_app.heuristic_remember import fact_from_statement


@pytest.mark.parametrize(
    ("message", "name"),
    [
        ("We got a collie pup on Saturday, we've called him Skipper.", "Skipper"),
        ("My brother Idris had his second baby, a girl. They've named her Seren.", "Seren"),
        ("Our neighbour had twins last month, Ada and Rhys.", "Ada and Rhys"),
        ("我们领养了一只小猫，取名豆包。", "豆包"),
    ],
)
def test_the_name_given_after_a_child_or_an_animal_is_kept(message: str, name: str) -> None:
    assert name in classify_turn(message).candidate_fact


def test_a_name_is_joined_only_to_a_child_or_an_animal_and_only_once() -> None:
    assert with_name("Lives on Baker Street.", "I live on Baker Street, called the best street in town.") == (
        "Lives on Baker Street."
    )
    fact = "The user's daughter started at a school called Oakfield."
    assert with_name(fact, "My daughter started at a school called Oakfield.") == fact


def test_what_took_the_place_of_a_thing_given_up_is_joined_to_it() -> None:
    verdict = classify_turn(
        "Sold the old Corsa to my nephew. The hills here are brutal, so we've bought a used Dacia Duster."
    )

    assert "Corsa" in verdict.candidate_fact and "Dacia Duster" in verdict.candidate_fact
    # Nothing given up: nothing joined; nothing got in its place: nothing joined.
    assert with_replacement("Lives in Leeds.", ["We've bought a used Dacia Duster."], fact_from_statement) == (
        "Lives in Leeds."
    )
    assert with_replacement("Sold the old Corsa.", ["The hills here are brutal."], fact_from_statement) == (
        "Sold the old Corsa."
    )


def test_what_stands_in_a_given_up_things_place_now_is_joined_when_nothing_was_got() -> None:
    assert classify_turn(
        "Gave up the espresso, it wrecked my sleep. It's mint tea now, a pot every afternoon."
    ).candidate_fact == ("Gave up the espresso, it wrecked their sleep; it's mint tea now.")
    # What was got is preferred to a remark about how things are now.
    verdict = classify_turn("Sold the Fiesta. It's all gravel tracks now, so we've bought an old Lada Niva.")
    assert "Lada Niva" in verdict.candidate_fact and "gravel" not in verdict.candidate_fact


@pytest.mark.parametrize(
    ("message", "fact"),
    [
        # An introduction and a fact in one turn: the fact is the turn's, the name is written beside it.
        (
            "Hi, I'm Oskar. I'm a ferry mechanic at the harbour in Tallinn.",
            "Is a ferry mechanic at the harbour in Tallinn.",
        ),
        ("Hello, I'm Amara. I bake bread for the whole village every morning, six days a week.", None),
    ],
)
def test_a_name_given_beside_a_fact_is_written_beside_it_not_instead_of_it(message: str, fact: str | None) -> None:
    verdict = classify_turn(message)
    assert verdict.reason != "The user introduced themselves."
    if fact is not None:
        assert verdict.candidate_fact == fact
    assert verdict.also[0][1].startswith("The user's name is ")


def test_an_introduction_alone_is_still_the_name() -> None:
    verdict = classify_turn("Hi, I'm Oskar.")
    assert (verdict.candidate_fact, verdict.also) == ("The user's name is Oskar.", ())
