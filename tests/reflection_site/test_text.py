"""The shared text helpers, and the decisions that made the drifted copies one (reflection_site.text)."""

from __future__ import annotations

import hashlib

import pytest

from reflection_site import text


@pytest.mark.parametrize("char", ["か", "カ", "㐀", "中", "豈", "한"])
def test_kana_extension_a_unified_compatibility_and_hangul_are_cjk(char):
    assert text.is_cjk(char)
    assert text.count_cjk(f"a{char}b") == 1


@pytest.mark.parametrize("char", ["a", "é", "Я", "1", "，", "。", "ｱ"])  # half-width kana is NFKC's to fold
def test_latin_cyrillic_digits_and_punctuation_are_not(char):
    assert not text.is_cjk(char)


def test_a_word_is_a_cjk_run_or_a_run_of_other_letters_and_digits():
    assert text.words("用vim部署, snake_case 2026年") == ["用", "vim", "部署", "snake", "case", "2026", "年"]
    assert text.words("漢字かな交じり文") == ["漢字かな交じり文"]  # Japanese is one run, not kana "words"


def test_apostrophes_stay_inside_words_only_when_asked():
    assert text.words("Don’t use the user's VIM") == ["don", "t", "use", "the", "user", "s", "vim"]
    assert text.words("Don’t use the user's VIM", apostrophes=True) == ["don't", "use", "the", "user's", "vim"]


def test_fold_is_nfkc_and_casefold():
    assert text.fold("ＳＴＡＧＩＮＧ Straße") == "staging strasse"
    assert text.fold(None) == ""


def test_bigrams_of_a_cjk_run():
    assert text.bigrams("咖啡店") == ["咖啡", "啡店"]
    assert text.bigrams("茶") == ["茶"]
    assert text.bigrams("") == []


@pytest.mark.parametrize(
    ("word", "stem"),
    [
        ("users", "user"),
        ("user's", "user"),
        ("likes", "like"),  # the dataset's copy made it "lik"
        ("uses", "use"),  # the guardian's kept "uses"
        ("cats", "cat"),
        ("stories", "story"),  # the guardian's made it "stori"
        ("deploying", "deploy"),  # the guardrails' copy stemmed no -ing
        ("deployed", "deploy"),
        ("prefers", "prefer"),
        ("class", "class"),
        ("status", "status"),
        ("analysis", "analysis"),
        ("bus", "bus"),
        ("red", "red"),
        ("sing", "sing"),
        ("ties", "tie"),
    ],
)
def test_one_light_english_stemmer(word, stem):
    assert text.stem(word) == stem


def test_one_stop_word_list_per_language_with_named_additions():
    plain = text.stop_words()
    assert {"the", "don't", "t", "ve", "itself", "的", "了"} <= plain
    assert not {"user", "agent", "know", "before", "什么", "么"} & plain
    assert {"user", "users", "agent", "assistant"} <= text.stop_words(roles=True)
    questions = text.stop_words(questions=True)
    assert {"know", "tell", "please", "before", "什么", "怎么", "么", "哪"} <= questions
    assert "user" not in questions
    assert text.stop_chars_zh() == text.STOP_CHARS_ZH
    assert {"什", "哪"} <= text.stop_chars_zh(questions=True)


def test_content_words_drop_stop_words_and_function_characters():
    assert text.content_words("The user's servers are running in Tokyo") == ["user", "server", "runn", "tokyo"]
    assert text.content_words("The user's servers are running in Tokyo", roles=True) == ["server", "runn", "tokyo"]
    assert text.content_words("我喜欢咖啡") == ["喜欢", "欢咖", "咖啡"]
    assert text.content_words("我的") == []


def test_the_plain_normal_form_ignores_case_width_punctuation_and_spacing():
    assert text.normalize("  Don’t   USE  emoji!! ") == "don't use emoji"
    assert text.normalize("Ｄｏｎ'ｔ use EMOJI.") == "don't use emoji"
    assert text.normalize("こんにちは世界") == "こんにちは世界"  # the guardrails' copy made it two words


def test_the_line_normal_form_drops_the_list_mark_and_the_leading_subject():
    assert text.normalize("- The user prefers tea.", line=True) == "prefers tea"
    assert text.normalize("1. [x] User prefers tea", line=True) == "prefers tea"
    assert text.normalize("用户 喜欢茶", line=True) == "喜欢茶"
    assert text.normalize("The agent's tools", line=True) == "s tools"  # kept to the letter: fact ids hash it
    assert text.normalize("用户用vim部署", line=True) == "用户用 vim部署"  # likewise


def test_fingerprint_is_sha256_of_salt_and_normal_form():
    assert text.fingerprint("Don't use emoji!") == hashlib.sha256(b"don't use emoji").hexdigest()
    assert text.fingerprint("x", salt="style:") == hashlib.sha256(b"style:x").hexdigest()
    assert text.fingerprint("- The user prefers tea", line=True) == text.fingerprint("Prefers TEA.", line=True)
    assert text.fingerprint("Prefers tea") != text.fingerprint("Prefers tea", salt="routing:")


@pytest.mark.parametrize("module", ["text", "cli", "charts", "prompts", "decay"])
def test_the_shared_helpers_are_django_free(module):
    import ast
    from pathlib import Path

    import reflection_site

    tree = ast.parse((Path(reflection_site.__file__).parent / f"{module}.py").read_text(encoding="utf-8"))
    imported = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    imported += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [name for name in imported if name.split(".")[0] == "django"]
