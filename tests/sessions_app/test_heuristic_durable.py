"""The offline gate's last reading (issue 21): a lasting statement about the speaker's life that no phrase rule
knows is read by its shape (whose, how lasting, not the moment, specific) and written; the moment, a wish, a liking,
an instruction, a request to remember and a number or code are not. Rows are written here, not taken from a set."""

from __future__ import annotations

import pytest

from sessions_app.heuristic_durable import REASON, is_durable
from sessions_app.heuristic_ended import ended_things, speaker_ended
from sessions_app.heuristic_gate import classify_turn


@pytest.mark.parametrize(
    "sentence",
    [
        "Weekday evenings I coach the under-twelves at the rowing club on the Ouse.",  # how often
        "Lunch for me is rice and dal at the canteen, most days of the week.",
        "We keep three goats behind the house, Moti, Gauri and Chhoti.",  # a routine of the household
        "I'm one of two vets for the whole of Nyeri county.",  # a state
        "My uncle drives a matatu between Thika and Nairobi.",
        "I've played the tabla for twelve years, since I was a boy in Kathmandu.",  # how long
        "I'm red-green colour-blind.",
        "我每个礼拜二晚上去社区中心教老人用智能手机，一次两个小时。",
        "我在镇上的茶厂做质检，已经八年了。",
        "我们家养了两只鹦鹉，一只叫豆豆，一只叫米粒。",
        "我的本科是在昆明读的，学的是植物保护。",
    ],
)
def test_a_lasting_statement_no_phrase_rule_knows_is_read_by_its_shape(sentence: str) -> None:
    assert is_durable(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm so tired today, the bus was forty minutes late.",  # the moment
        "Just got back from the market with a bag of oranges.",
        "I've always wanted to see the Northern Lights in Tromsø.",  # a wish
        "Cauliflower is the one vegetable I can never finish, every single time.",  # a liking, judged
        "Don't message me before ten on weekdays, I'm usually asleep.",  # an instruction
        "Remember that I run the Saturday clinic every week.",  # a request to remember: the remember rules'
        "If there's cake in the house it's gone by evening, every time.",  # a condition
        "My passport number is PA4471902, I use it every year.",  # a number
        "Everything went fine.",  # nothing of the speaker's, nothing specific
        "今天好冷，我在家待了一整天。",
        "我刚把快递拿回来，一大箱。",
        "寿司我一个礼拜不吃就馋得慌。",
        "周末我爸妈过来吃饭，你记得买点水果。",
        "我的银行卡号是 6222020200112233，每个月都用。",
    ],
)
def test_the_moment_a_wish_a_liking_an_instruction_or_a_number_is_not(sentence: str) -> None:
    assert not is_durable(sentence)


def test_the_gate_writes_such_a_statement_only_where_no_rule_found_anything_and_says_it_was_read_by_its_shape() -> None:
    verdict = classify_turn("Weekday evenings I coach the under-twelves at the rowing club on the Ouse.")

    assert verdict.decision == "UPDATE_USER"
    assert verdict.reason == REASON
    assert (
        verdict.candidate_fact == "Weekday evenings the user coaches the under-twelves at the rowing club on the Ouse."
    )

    ruled = classify_turn("I live in York. Weekday evenings I coach the under-twelves at the rowing club.")
    assert ruled.reason != REASON and "York" in (ruled.candidate_fact or "")


def test_a_statement_someone_else_makes_of_their_own_life_is_theirs_downstream_and_a_kin_fact_goes_to_memory() -> None:
    verdict = classify_turn("My father still opens his cloth shop in the old bazaar at nine every morning.")

    assert verdict.decision == "UPDATE_MEMORY"
    assert verdict.candidate_fact.startswith("The user's father still opens")


@pytest.mark.parametrize(
    ("sentence", "things"),
    [
        ("Left the district hospital at the end of last month.", ["district hospital"]),
        ("I'm done with tape-ball on Sundays.", ["tape-ball"]),
        ("Sold my Honda CD 70 to a colleague.", ["Honda CD 70"]),
        ("I've swapped the Huawei for a Garmin.", ["Huawei"]),
        ("The dry needling certificate is off.", ["dry needling certificate"]),
        ("早上的paratha我戒了，体检说胆固醇偏高。", ["paratha"]),
        ("网上的英语口语课我不教了。", ["英语口语课"]),
        ("Quit my job.", []),  # a kind alone is no key
        ("Left it at home.", []),
    ],
)
def test_what_a_sentence_says_has_ended_is_named_by_a_key_specific_enough_to_find_a_line(sentence, things) -> None:
    assert ended_things(sentence) == things


def test_an_ending_of_the_speakers_own_is_a_change_the_gate_writes_where_no_rule_read_it() -> None:
    assert speaker_ended("Left the district hospital at the end of last month.")
    assert not speaker_ended("Marisol left the plant last week.")  # someone else's: the rules' to read
    verdict = classify_turn("The dry needling certificate is off. The exam centre has shut.")
    assert verdict.decision == "UPDATE_USER" and verdict.candidate_fact == "The dry needling certificate is off."


@pytest.mark.parametrize(
    ("message", "decision", "fact"),
    [
        # v19's classes (read after its first reading), each with look-alikes that stay as they were.
        (
            "No emojis when you write to me, please.",
            "UPDATE_SOUL",
            "The agent should use no emojis when the agent writes to the user.",
        ),
        (
            "No long paragraphs when you explain things.",
            "UPDATE_SOUL",
            "The agent should use no long paragraphs when the agent explains things.",
        ),
        ("No sugar in my tea, please.", "NO_WRITE", None),
        ("No rain this week.", "NO_WRITE", None),
        ("你回我消息的时候先说结论，再讲原因。", "UPDATE_SOUL", "助手回用户消息的时候先说结论，再讲原因。"),
        ("你开车的时候小心点。", "NO_WRITE", None),
        ("先说好，周末我不去。", "NO_WRITE", None),
        (
            "My mother's still in Ilam, and at sixty-eight she still picks her own tea every spring.",
            "UPDATE_MEMORY",
            "The user's mother's still in Ilam, and at sixty-eight she still picks her own tea every spring.",
        ),
        (
            "I've left the mill. Since the first of the month I'm with Khanal-Giri, a coffee company.",
            "UPDATE_USER",
            "Has left the mill; is with Khanal-Giri, a coffee company since the first of the month.",
        ),
        (
            "The Redmi went into a washing tank. I've replaced it with a Samsung Galaxy A55.",
            "UPDATE_USER",
            "The user replaced the Redmi with a Samsung Galaxy A55.",
        ),
    ],
)
def test_v19_classes(message: str, decision: str, fact: str | None) -> None:
    verdict = classify_turn(message)
    assert (verdict.decision, verdict.candidate_fact) == (decision, fact)


@pytest.mark.parametrize(
    ("sentence", "things"),
    [
        ("茶叶电商那边的稿子我不写了。", ["茶叶电商"]),  # the last part that is not a kind ("稿子") or a time
        ("旅行社的工作我辞了，自己开了个网店。", ["旅行社"]),
        ("网店交给我表妹管了。", ["网店"]),  # handed on, said of no one first
        ("No more madal on Fridays.", ["madal"]),
        ("用户戒了奶茶。", ["奶茶"]),  # the person is no thing; the thing after the verb is (verb first)
    ],
)
def test_what_ended_is_read_in_chinese_topics_and_in_no_more(sentence: str, things: list[str]) -> None:
    assert ended_things(sentence) == things


@pytest.mark.parametrize(
    ("message", "decision", "fact"),
    [
        # v20's classes (read after its first reading), each with look-alikes.
        (
            "Work first, since you'll ask anyway: I'm a dentist at the state polyclinic in Shamlugh.",
            "UPDATE_USER",
            "Is a dentist at the state polyclinic in Shamlugh.",
        ),
        ("Quick one: I think it'll rain.", "NO_WRITE", None),
        ("测量的合同一到期我就没再续。", "UPDATE_USER", "测量的合同一到期用户就没再续。"),
        ("说明书翻译的活停了。", "UPDATE_USER", "说明书翻译的活停了。"),
        ("雨停了。", "NO_WRITE", None),
        ("他的店停了。", "NO_WRITE", None),
        ("RIP the Niva: it died on the road to Tatev.", "UPDATE_USER", "RIP the Niva: it died on the road to Tatev."),
    ],
)
def test_v20_classes(message: str, decision: str, fact: str | None) -> None:
    verdict = classify_turn(message)
    assert (verdict.decision, verdict.candidate_fact) == (decision, fact)


@pytest.mark.parametrize(
    "sentence",
    ["Sad pop is what I put on while I clean the instruments every evening.", "松树林的味道我每天都闻，谁也比不了。"],
)
def test_a_liking_said_as_what_one_puts_on_or_as_beyond_compare_is_not_a_routine(sentence: str) -> None:
    assert not is_durable(sentence)


@pytest.mark.parametrize(
    "sentence",
    [
        "My husband Tomás repairs fishing boats for half the harbour in Vigo.",  # kin, a name, a present routine
        "单位让我每周三下午去社区医院给老人量血压，一共二十几个老人，最大的九十一岁。",  # 最 of an age, not a liking
        "我在院子里种了一排辣椒，还有两棵柿子树。",  # grown: a lasting state
    ],
)
def test_kin_at_their_routine_an_age_with_zui_and_what_is_grown_are_lasting(sentence: str) -> None:
    assert is_durable(sentence)


def test_a_liking_with_zui_is_still_not_this_readings() -> None:
    assert not is_durable("我最喜欢每天早上去河边跑步，一跑就是十公里。")
