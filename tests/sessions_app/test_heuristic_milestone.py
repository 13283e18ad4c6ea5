"""A life event that leaves something lasting (issue 21), read by its kind: a licence or a place at a school won, a
hobby taken up, a child born, a home bought, the speaker's or someone's in their life; an event that did not happen,
is only wished or planned, is the agent's, or is a place's is not. Rows are written here, not taken from a set."""

from __future__ import annotations

import pytest

from sessions_app.heuristic_durable import EVENT_REASON
from sessions_app.heuristic_gate import classify_turn
from sessions_app.heuristic_milestone import OTHER, SPEAKER, milestone_whose


@pytest.mark.parametrize(
    ("sentence", "whose"),
    [
        ("Finally passed my motorcycle licence test last Thursday!", SPEAKER),  # dated, exclaimed: still lasting
        ("Got my black belt after six years of Saturday classes.", SPEAKER),
        ("The conservatoire in Leipzig has accepted me for the organ course.", SPEAKER),  # the event names "me"
        ("We've adopted a greyhound from the track in Romford.", SPEAKER),
        ("I took up bouldering over the winter.", SPEAKER),
        ("Joined the village brass band on cornet.", SPEAKER),
        ("My older sister Ines had her second baby, a girl called Leonor.", OTHER),
        ("Tomasz's daughter Ola started university in Gdańsk.", OTHER),
        ("Halima and her husband bought a house outside Mombasa.", OTHER),
        ("我去年底考下了会计师证，考了三次。", SPEAKER),
        ("单位给我报了一个西班牙语的周末班。", SPEAKER),
        ("我表哥在县城开了一家修车铺。", OTHER),
        ("晓梅生了个儿子，七斤二两。", OTHER),
    ],
)
def test_a_life_event_that_leaves_something_lasting_is_read_by_its_kind(sentence: str, whose: str) -> None:
    assert milestone_whose(sentence) == whose


@pytest.mark.parametrize(
    "sentence",
    [
        "I didn't pass my theory test, again.",  # did not happen
        "I hope to get into the nursing programme next year.",  # wished
        "If I pass my finals I'll take the summer off.",  # a condition
        "We're going to adopt a cat once we move.",  # planned
        "You got into my head with that song.",  # the agent's
        "The café on the corner opened a second branch.",  # a place's, not a person's
        "Did your brother get into the academy?",  # a question
        "我没考上驾照，科目二挂了。",
        "我打算明年报一个日语班。",
        "楼下新开了一家面馆，味道一般。",
        "你考到驾照了吗？",
    ],
)
def test_an_event_that_did_not_happen_or_is_not_someones_in_the_speakers_life_is_not(sentence: str) -> None:
    assert milestone_whose(sentence) is None


def test_the_gate_writes_the_speakers_event_about_them_and_someone_elses_to_memory() -> None:
    own = classify_turn("Got my black belt after six years of Saturday classes. My knees hate me.")
    theirs = classify_turn("Tomasz's daughter Ola started university in Gdańsk. He cried at the station.")

    assert (own.decision, own.reason) == ("UPDATE_USER", EVENT_REASON)
    assert "black belt" in own.candidate_fact
    assert (theirs.decision, theirs.reason) == ("UPDATE_MEMORY", EVENT_REASON)
    assert theirs.candidate_fact.startswith("Tomasz's daughter Ola started university in Gdańsk")


def test_an_event_done_to_the_speaker_is_theirs_however_long_its_subject_and_a_chinese_move_without_a_subject() -> None:
    assert milestone_whose("Last spring the regional orchestra in Tromsø, after two auditions, took me on.") == SPEAKER
    assert milestone_whose("上个月正式搬进了学校后面的一套老公房。") == SPEAKER


@pytest.mark.parametrize(
    ("sentence", "whose"),
    [
        ("The county library has made me deputy manager from March.", SPEAKER),  # a post given
        ("We bought a second-hand Skoda Octavia off my cousin.", SPEAKER),  # a make and a model
        ("It made me laugh all afternoon.", None),  # no post
        ("I bought a Coke at the station.", None),  # a purchase that does not last
        ("I just got a call from Northwestern Mutual.", None),
    ],
)
def test_a_post_given_and_a_make_and_model_bought_are_events_and_a_passing_purchase_is_not(
    sentence: str, whose: str | None
) -> None:
    assert milestone_whose(sentence) == whose
