"""Words of English and Chinese (Japanese, Korean) text, as every app reads them: one CJK character class, one
word split, one English stemmer, one stop-word list per language, one fingerprint. Django-free.

Decided (issue 20; the copies lived in the guardian, the learning guardrails, recall, chunking, the gate's
correction patterns and the dataset's scoring):

- **CJK** is kana, CJK extension A, the unified ideographs, the compatibility ideographs and Hangul
  (``CJK_RANGES``). Copies that left out kana and Hangul (the learning guardrails) or also the compatibility
  ideographs (retain, similarity) are drift: Japanese text there was read as Latin words.
- **A word** is a run of CJK characters, or a run of other letters and digits; punctuation and ``_`` split
  words, and a change of script does too (``vim部署`` is ``vim`` and ``部署``; the guardian's copy ran a Latin
  word on into the CJK after it). Option ``apostrophes=True`` keeps ``don't`` one word (the guardrails and the
  dataset read it so). ``fold`` is NFKC, case-folded, with the typographic apostrophe (U+2019) made ``'``.
  The full-text index is not folded here: it lower-cases (not case-folds) as the databases' tokenizers do.
- **One stemmer**, ``stem``: the possessive ``'s``, ``-ies`` → ``-y``, ``-ing``, ``-ed`` and a plural ``-s``
  (not ``-ss``, ``-us``, ``-is``), each only where a stem of three or four letters is left. The three copies
  (guardian: ``-ing``/``-ed``/``-es``/``-s``; dataset: the same with other lengths, ``likes`` → ``lik``;
  guardrails: ``'s``/``-ies``/``-s`` only) disagreed on ``uses``, ``likes``, ``cats``, ``stories``.
- **One stop-word list per language**: ``STOP_WORDS_EN`` (function words, the union of the four copies,
  contractions whole and as the pieces a split leaves) and ``STOP_CHARS_ZH`` (function characters). What
  callers add is named: ``roles=True`` adds ``ROLE_WORDS_EN`` (user, agent …: the guardian's and the dataset's
  lists, where every fact is about the user), ``questions=True`` adds what a search question is made of
  (recall: ``know``, ``tell``, ``before``, ``什么``, ``怎么``, ``哪`` …). ``reflection_site.privacy``'s list (words that are
  not a secret's value) is not a stop-word list.
- **One fingerprint**, ``fingerprint(text, salt=…, line=…)``: SHA-256 of the salt and ``normalize(text)``.
  Two normal forms stay, because both are stored (unique constraints, fact ids): plain text
  (``line=False``: the words joined by one space; memory items and rules) and a memory-file line
  (``line=True``: its list mark and a leading "The user" / "用户" do not count; the guardian's duplicate
  check, fact ids, opinions, reflect's pages). ``line=True`` keeps that copy's word split to the letter
  (apostrophes split, a Latin word runs on into CJK) so no stored fact id or opinion fingerprint changes.
  The plain form changes where the old CJK class did: Japanese mixing kana and kanji.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Kana (Hiragana, Katakana), CJK extension A, CJK unified ideographs, compatibility ideographs, Hangul.
CJK_RANGES = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
# A CJK run, or a run of other letters and digits (underscore and punctuation split words, as FTS5's unicode61 does).
WORD = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+")
# The same, with apostrophes kept inside a Latin word ("don't", "user's").
WORD_WITH_APOSTROPHES = re.compile(rf"[{CJK_RANGES}]+|[^\W_{CJK_RANGES}]+(?:'[^\W_{CJK_RANGES}]+)*")
# The memory-file line key's own split, kept to the letter (fact ids are hashes of it): a Latin word runs on
# into CJK characters that follow it.
_LINE_WORD = re.compile(rf"[{CJK_RANGES}]+|[^\W_]+")
_LIST_MARK = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
# "The user prefers X" is the line "Prefers X".
_LINE_SUBJECTS = (("the", "user"), ("user",), ("the", "agent"), ("用户",))


def fold(text: str | None) -> str:
    """NFKC (full-width letters, ligatures), case-folded, the typographic apostrophe made ``'``."""
    return unicodedata.normalize("NFKC", text or "").casefold().replace("\u2019", "'")


def is_cjk(text: str) -> bool:
    """Whether ``text`` starts with a CJK character (a character, or a run from ``words``)."""
    return CJK_CHAR.match(text) is not None


def count_cjk(text: str) -> int:
    return len(CJK_CHAR.findall(text))


def words(text: str | None, *, apostrophes: bool = False) -> list[str]:
    """The folded words of ``text``: CJK runs and runs of other letters and digits."""
    return (WORD_WITH_APOSTROPHES if apostrophes else WORD).findall(fold(text))


def bigrams(run: str) -> list[str]:
    """A CJK run as the words a search matches: its character pairs, or itself when it is one character."""
    return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]


def stem(word: str) -> str:
    """A light English stem of a folded word: ``users`` and ``user's`` → ``user``, ``stories`` → ``story``,
    ``deploying`` and ``deployed`` → ``deploy``; short words and ``-ss``/``-us``/``-is`` stay."""
    if word.endswith("'s"):
        word = word[:-2]
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 6 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 5 and word.endswith("ed"):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


# --- Stop words ------------------------------------------------------------------------------------
STOP_WORDS_EN = frozenset(
    """a about again all also am an and any are aren't as at be because been being both but by can can't could
    d did didn't do does doesn't doing don't done down each few for from had has have having he her here hers
    herself him himself his how i i'm if in into is isn't it it's its itself just let let's ll m may me might
    mine more most must my myself no nor not of off on once only onto or other our ours ourselves out over own
    per re really s same shall she should so some such t than that the their theirs them themselves then there
    these they this those to too under until up us ve very via was wasn't we were weren't what when where which
    while who whom whose why will with won't would yes you you're your yours yourself yourselves""".split()
)
# Who a fact is about when every fact is about the user: the guardian's and the dataset's lists drop them.
ROLE_WORDS_EN = frozenset("user users user's agent agent's assistant".split())
# What a search question is made of besides function words ("tell me what we decided before the move").
QUESTION_WORDS_EN = frozenset(
    "above after before below between during else ever every further know now please tell through".split()
)
STOP_CHARS_ZH = frozenset("的了是在和也就都而及与着或我你他她它们这那吗呢吧啊把被给个")
QUESTION_CHARS_ZH = frozenset("么什哪怎谁有过还跟呀")
QUESTION_WORDS_ZH = frozenset(
    "什么 我们 你们 他们 关于 怎么 哪些 是否 知道 一下 这个 那个 哪个 有没 没有 的 了 吗 呢 吧 是".split()
)


def stop_words(*, roles: bool = False, questions: bool = False) -> frozenset[str]:
    """English stop words and Chinese stop characters (and, for questions, Chinese question words)."""
    found = STOP_WORDS_EN | STOP_CHARS_ZH
    if roles:
        found |= ROLE_WORDS_EN
    if questions:
        found |= QUESTION_WORDS_EN | QUESTION_CHARS_ZH | QUESTION_WORDS_ZH
    return found


def stop_chars_zh(*, questions: bool = False) -> frozenset[str]:
    """The characters that make a CJK bigram a function word's (``我去``, ``做了``)."""
    return STOP_CHARS_ZH | QUESTION_CHARS_ZH if questions else STOP_CHARS_ZH


def content_words(text: str | None, *, roles: bool = False) -> list[str]:
    """What ``text`` is about, in order: Latin words stemmed, stop words dropped; CJK runs as bigrams of
    their characters once the function characters are out (``我喜欢咖啡`` → ``喜欢``, ``欢咖``, ``咖啡``)."""
    stops = stop_words(roles=roles)
    out: list[str] = []
    for word in words(text, apostrophes=True):
        if is_cjk(word):
            out.extend(bigrams("".join(c for c in word if c not in STOP_CHARS_ZH)))
        elif word not in stops:
            out.append(stem(word))
    return out


# --- Fingerprints ----------------------------------------------------------------------------------
def normalize(text: str | None, *, line: bool = False) -> str:
    """What duplicates share: the folded words joined by one space (case, width, punctuation and spacing do
    not count). ``line=True`` reads a memory-file line: its list mark and a leading "The user", "User",
    "The agent" or "用户" do not count either, so "- The user prefers tea." is "prefers tea"."""
    if not line:
        return " ".join(words(text, apostrophes=True))
    one_line = _LIST_MARK.sub("", " ".join((text or "").split()), count=1).strip()
    found = _LINE_WORD.findall(fold(one_line))
    for subject in _LINE_SUBJECTS:
        if tuple(found[: len(subject)]) == subject:
            found = found[len(subject) :]
            break
    return " ".join(found)


def fingerprint(text: str | None, *, salt: str = "", line: bool = False) -> str:
    """SHA-256 (hex) of ``salt`` and the normal form of ``text``; the salt keeps kinds apart (a rule's type)."""
    return hashlib.sha256((salt + normalize(text, line=line)).encode()).hexdigest()


# What follows a name, not part of it: "晓雯不练瑜伽" is 晓雯's.
_AFTER_NAME_ZH = re.compile(r"[不在的是已每最现也还都就又很去要会想说做当住有没和跟把被从对给暂停刚今昨明以]")


def leading_chinese_name(text: str) -> str | None:
    """The Chinese name ``text`` may open with ("思琪暂停了尤克里里" → 思琪): two to four characters before the first
    word that follows a name; never 用户. Whether it is a name is for the caller to know (the file's other lines)."""
    found = re.match(r"[\u4e00-\u9fff]{2,4}", text)
    if found is None or found.group().startswith("用户"):
        return None
    cut = _AFTER_NAME_ZH.search(found.group(), 1)
    name = found.group()[: cut.start()] if cut else found.group()
    return name if len(name) >= 2 else None


def chinese_name(fact: str, lines: list[str]) -> str | None:
    """The Chinese name ``fact`` opens with (``leading_chinese_name``) when lines of a file open with it too."""
    name = leading_chinese_name(_LIST_MARK.sub("", fact).strip())
    return name if name and any(_LIST_MARK.sub("", line).strip().startswith(name) for line in lines) else None
