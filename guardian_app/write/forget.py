"""A request to forget: "Asked the agent to forget their home address." takes back the lines that state the home
address ("The user's home address is …"), and "用户要求忘掉自己的住址。" those that state 住址. ``is_forget_request``
says whether a fact is one (the guardian refuses one that finds nothing to take back); ``forgotten_lines`` finds
the lines (``guardian_app.write.takeback`` asks it with the other kinds of taking back).
"""

from __future__ import annotations

import re

from reflection_site.text import content_words

_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_FORGET_EN = re.compile(
    r"^asked (?:the agent )?to (?:forget|remove|delete|erase|drop) (?:their|the user's) (?P<what>.+?)\W*$", re.I
)
_FORGET_ZH = re.compile(
    r"^用户要求(?:助手)?(?:忘掉|忘记|删掉|删除|去掉)(?:自己|他|她)?的(?P<what>[\u4e00-\u9fff\w ]{1,12}?)\W*$"
)


def is_forget_request(fact: str) -> bool:
    return bool(_FORGET_EN.match(fact.strip()) or _FORGET_ZH.match(fact.strip()))


_OLD = frozenset({"old", "previous", "former", "earlier"})
_KINDS = frozenset({"street", "postal", "mailing", "physical"})


def forgotten_lines(fact: str, lines: list[str]) -> list[str]:
    match = _FORGET_EN.match(fact.strip()) or _FORGET_ZH.match(fact.strip())
    if match is None:
        return []
    named = set(content_words(match.group("what")))
    old = named & _OLD
    if not named - _OLD - _KINDS:
        return []

    def states(line: str) -> bool:
        words = set(content_words(line))
        return (named - _OLD) <= words or (named - _OLD - _KINDS <= words and bool(named & _KINDS - words))

    found = [line for line in lines if states(line) and not is_forget_request(_BULLET.sub("", line))]
    return found[:-1] if old and len(found) > 1 else found  # "my old address": the newest one stays.
