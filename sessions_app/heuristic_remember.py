"""Explicit requests to remember ("remember that …", "记住…", "…，记一下") and what a bare one ("remember
that", "记住这个") points at: the sentence before it, the agent's offer to remember ("Should I remember that
you prefer tea?"), or the user's previous message. The phrase lists are in ``heuristic_rules``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_english import mentions_tools, soul_main_en
from sessions_app.heuristic_person import AGENT, AGENT_IT, USER, rewrite, rewrite_zh
from sessions_app.heuristic_reading import (
    Finding,
    finish_en,
    finish_zh,
    is_chinese,
    normalise,
    read_sentence,
    split_sentences,
)
from sessions_app.heuristic_rules import NO_WRITE


@dataclass(frozen=True)
class Remember:
    """A request to remember; ``content`` None means a bare "remember that" whose fact is elsewhere."""

    content: str | None


def remember_request(clause: str) -> Remember | Finding | None:
    """Recognise a request to remember. "Remember to <do something>" is an instruction, so it comes
    back as a finding: the soul rule's when it is about manner, else a memory of the task."""
    if is_chinese(clause):
        if match := rules.REMEMBER_TAIL_ZH.match(clause):
            return Remember(match.group("content"))
        if match := rules.REMEMBER_ZH.match(clause):
            rest = re.sub(r"^[\s，,：:。]*(?:一下|下来|了)?[\s，,：:。]*", "", match.group("rest"))
            return Remember(None if rules.BARE_ZH.match(rest) else rest)
        return None
    if match := rules.REMEMBER_EN.match(clause):
        verb = match.group("verb").lower()
        rest = re.sub(r"^[\s:,\-\u2013\u2014]+", "", match.group("rest")).strip()
        rest = re.sub(r"[\s,]+(?:please|thanks|ok|okay)\s*[.!]*$", "", rest, flags=re.I)
        if re.match(r"to\s", rest, re.I):
            inner = rest[3:].strip()
            if verb == "remind me":
                fact = finish_en(f"The user wants to be reminded to {rewrite(inner)}")
                return Finding("UPDATE_MEMORY", fact, "An explicit request to be reminded.", 0.85)
            instruction = soul_main_en(inner, open_imperative=False)
            if instruction and not mentions_tools(inner):
                return Finding("UPDATE_SOUL", finish_en(instruction), "An instruction about the agent's manner.", 0.75)
            fact = finish_en(f"The agent should remember to {rewrite(inner, second=AGENT_IT)}")
            return Finding("UPDATE_MEMORY", fact, "An explicit request to remember a task.", 0.85)
        rest = re.sub(
            r"^(?:(?:this|that)\s*[:,\-\u2013\u2014]+\s*|the fact that\s+|that\s+|about\s+)", "", rest, flags=re.I
        )
        if verb == "remind me" and rest:
            fact = finish_en(f"The user wants to be reminded about {rewrite(rest)}")
            return Finding("UPDATE_MEMORY", fact, "An explicit request to be reminded.", 0.85)
        return Remember(None if rules.BARE_EN.match(rest.rstrip(".!")) else rest)
    if match := rules.REMEMBER_TAIL_EN.match(clause):
        return Remember(match.group("content"))
    return None


def fact_from_statement(text: str) -> str:
    """A fact in full ("The user is allergic to peanuts."), for MEMORY.md and for corrections."""
    if is_chinese(text):
        return finish_zh(rewrite_zh(text))
    return finish_en(rewrite(text))


def fact_from_agent(text: str) -> str:
    """The agent's own words, "you prefer tea", seen from outside: "The user prefers tea."."""
    if is_chinese(text):
        return finish_zh(rewrite_zh(text, first="助手", second="用户"))
    return finish_en(rewrite(text, first=AGENT, second=USER))


# --- What a bare request points at ------------------------------------------------------------------------------------
def _last(context: Sequence[tuple[str, str]], role: str) -> str | None:
    for speaker, message in reversed(context):
        if speaker == role and message and message.strip():
            return normalise(message)
    return None


def offer_in(context: Sequence[tuple[str, str]]) -> str | None:
    """What the agent last offered to remember, as a fact; None if its last message made no such offer."""
    last_agent = _last(context, "agent")
    if last_agent is None:
        return None
    tail = last_agent[-600:]  # An offer closes the agent's message; a long reply is not searched whole.
    match = rules.OFFER_EN.search(tail) or rules.OFFER_ZH.search(tail)
    if match is None:
        return None
    content = match.group("content").strip()
    if rules.BARE_EN.match(content) or rules.BARE_ZH.match(content):
        return None
    return fact_from_agent(content)


def _previous_user_statement(context: Sequence[tuple[str, str]]) -> str | None:
    last_user = _last(context, "user")
    if last_user is None:
        return None
    statements = [r.text for r in map(read_sentence, split_sentences(last_user)) if r.kind == "statement"]
    return statements[-1] if statements else None


def resolve_bare_remember(previous: str | None, context: Sequence[tuple[str, str]]) -> Finding:
    """ "Remember that." points at something said just before: this message, the agent's offer, or the user's last turn."""
    if previous:
        return Finding(
            "UPDATE_MEMORY", fact_from_statement(previous), "An explicit request to remember what was just said.", 0.85
        )
    if offer := offer_in(context):
        return Finding("UPDATE_MEMORY", offer, "The user asked to remember what the agent offered to remember.", 0.8)
    if statement := _previous_user_statement(context):
        return Finding(
            "UPDATE_MEMORY",
            fact_from_statement(statement),
            "An explicit request to remember the user's last message.",
            0.7,
        )
    return Finding(NO_WRITE, None, "A request to remember with nothing to remember.", 0.6)


# A request to forget something of the user's: "For privacy reasons, please delete my phone number from your
# notes.", "请把我的手机号从记忆里删掉。". The guardian takes back the lines that state it (``guardian_app.write.takeback``).
_FORGET_EN = re.compile(
    r"^(?:[^,]{1,40},\s*)?(?:please\s+|kindly\s+)?(?:forget|remove|delete|erase|drop|wipe)\s+(?:my|our|(?:the|that)\s+"
    # "the address I gave you": a personal detail the user gave, not any thing ("delete the file I sent you").
    r"(?=(?:[\w-]+\s+){0,2}?(?:address|number|phone|email|e-mail|birthday|details|info|information)\s+I\s))\s*"
    r"(?P<what>[\w' -]{2,40}?)(?:\s+I\s+(?:gave|told|sent|shared with|mentioned to)(?:\s+you)?(?:\s+(?:about|earlier|before))?)?"
    r"(?:\s+(?:from|out of)\s+(?:your\s+)?(?:memory|memories|records?|notes|files?))?"
    # A reason after it: "…, I don't live there any more and don't want it kept."
    r"(?:\s+(?:immediately|now|please|for good|right away))?(?:\s*[,;\u2014\u2013]\s*(?:I|we)\b[^.!?]*)?\s*[.!]*$",
    re.I,
)
_FORGET_ZH = re.compile(
    r"^(?:[^，,]{1,12}[，,])?(?:请|麻烦)?(?:你)?(?:(?:把|将)我的(?P<what>[\u4e00-\u9fff]{1,8}?)(?:从(?:你的)?(?:记忆|记录|笔记|文件)"
    r"(?:里|中)?)?(?:删掉|删除|忘掉|忘了|去掉|抹掉)|(?:忘掉|忘记|删掉|删除)我的(?P<what2>[\u4e00-\u9fff]{1,8}?))(?:吧|了|。|！|$)"
)


FORGET_REASON = "A request to forget something of the user's."


def forget_request(clause: str) -> Finding | None:
    """ "Please remove my home address from your memory." → "Asked the agent to forget their home address."."""
    if match := _FORGET_EN.match(clause):
        fact = f"Asked the agent to forget their {match.group('what').strip()}."
    elif match := _FORGET_ZH.match(clause):
        fact = f"用户要求忘掉自己的{match.group('what') or match.group('what2')}。"
    else:
        return None
    return Finding("UPDATE_USER", fact, FORGET_REASON, 0.8)
