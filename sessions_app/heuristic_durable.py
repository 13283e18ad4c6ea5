"""The offline gate's last reading: a statement about the speaker's life that no phrase rule knows, read by its shape.

The phrase rules (``heuristic_english``, ``heuristic_chinese``) know wordings ("I live in …", "我在…工作"). A person
says the same things in many other ways: "Sunday mornings I open the batting for a cricket side", "Breakfast is a
paratha and an omelette, every single day", "我晚上在网上给小学生上英语口语课，一周三次". This reading does not look for
a wording. It asks four questions of a sentence the rules left, and writes it (in the third person) only when every
answer is yes:

1. **Whose is it?** The speaker's: a first-person word (I, my, we, our; 我, 我们, 我家) is in it.
2. **Is it lasting?** It has a mark of habit, state or life story, of the kinds grammar books list, not of a
   wording: how often (every, usually, on Sundays, twice a week; 每天, 一周三次, 平时, 周末), how long (for ten years,
   since 2019, grew up; 十几年了, 从小, 老家), or a present-tense state or routine of the speaker's own (I'm a …, I
   keep …, I get around on …, my father runs …; 我是…, 我在…教…, 我养…, 我们说…). A verb of thinking, wishing or
   feeling (I think, I hope, I need, I feel) is not a routine.
3. **Is it not the moment?** Nothing ties it to now or to just now (today, tonight, just, right now, yesterday; 今天,
   刚, 昨晚, 终于, 这会儿), and it is not an exclamation about what is happening.
4. **Is it specific?** It names something: a proper noun, a number, or enough words (eight in English, twelve
   characters in Chinese) to be more than a mood.

A life event that leaves something lasting ("Passed my driving test!", "My brother got into medical school") is read
first, by its kind (``heuristic_milestone``), with its own reason; the moment ("this week", "!") does not stop it.

Where it stands: after every phrase rule, and only when none of them found a fact in the turn. It is a fallback and
says so in its reason ("read by its shape"); its confidence is lower than a rule's. Whose the fact is, where it goes
and whether it may be written are decided as for any other fact (the gate's speaker, ``_someone_elses``, the write
guardian's checks).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sessions_app.heuristic_ended import speaker_ended, with_what_it_was
from sessions_app.heuristic_milestone import SPEAKER, milestone_whose
from sessions_app.heuristic_reading import Finding, is_chinese, write_finding
from sessions_app.heuristic_rules import CHANGE_REASON, KIN_EN

REASON = "A lasting statement about the speaker's life, read by its shape (no phrase rule knew its wording)."
EVENT_REASON = "A life event that leaves something lasting, read by its kind (no phrase rule knew its wording)."
CONFIDENCE = 0.5

# --- English ----------------------------------------------------------------------------------------------------------
_FIRST_PERSON_EN = re.compile(r"\b(?:I|I'm|I've|I'd|(?i:my|me|we|we're|we've|our|us))\b")
_WEEKDAY = r"(?:mon|tues|wednes|thurs|fri|satur|sun)day"
_HOW_OFTEN_EN = re.compile(
    r"\b(?:every|each)\s+(?:single\s+)?(?:day|morning|evening|night|week|weekend|month|year|summer|winter|spring|autumn|fall|season|term|holiday|Christmas|Easter|"
    rf"{_WEEKDAY})\b|\bevery\s+(?:other|second|third|fourth)\s+\w+|"
    r"\b(?:always|usually|normally|generally|typically|mostly|regularly|often|never|seldom|rarely)\b|"
    r"\b(?:daily|weekly|nightly|monthly|yearly|annually)\b|"
    rf"\b(?:on|most)\s+(?:{_WEEKDAY}s|weekends|days|mornings|evenings|nights|afternoons)\b|"
    rf"\b{_WEEKDAY}s?\s+(?:mornings|evenings|nights|afternoons)\b|\b{_WEEKDAY}s\b|"
    r"\b(?:at|on|over)\s+(?:the\s+)?weekends?\b|\bweekends\b|"
    r"\b(?:once|twice|three times|four times|five times|\d+\s+times)\s+(?:a|per|each|every)\s+\w+|"
    r"\b(?:\d+|two|three|four|five|six|seven)\s+(?:days|mornings|evenings|nights|afternoons|shifts)\s+(?:a|per|each)\s+"
    r"(?:week|month|fortnight)\b|"
    r"\b(?:in\s+the|of\s+an?)\s+(?:mornings|evenings)\b|\bnights\b",
    re.I,
)
_HOW_LONG_EN = re.compile(
    r"\bfor\s+(?:(?:about|almost|nearly|over|more than|the (?:last|past))\s+)?(?:\w+\s+)?(?:years|decades|months)\b|"
    r"\b(?:since|ever since)\s+(?:\d{4}|I was|childhood|school|college|university|uni|then)\b|"
    r"\b(?:grew up|was born|born and raised|all my life|my whole life|as a (?:kid|child|boy|girl))\b|"
    r"\b\w+-year-old\b|\b(?:years|decades)\s+(?:old|now)\b|\bI(?:'ve| have)\s+(?:been|lived|worked|had|kept|"
    r"played|taught|known)\b",
    re.I,
)
# A state or a routine of the speaker's own: "I'm a …", "I keep …", "my father runs …", "we speak …".
_STATE_EN = re.compile(
    r"\b(?:I'm|I am)\s+(?:a|an|one of)\s+\w+|\b(?:I'm|I am)\s+(?:[\w-]+\s+)?[\w-]+-(?:blind|handed|intolerant|free)\b|"
    r"\b(?:I|[Ww]e)\s+(?!(?:think|guess|hope|wish|want|need|feel|mean|know|bet|suppose|see|hear|wonder|agree|"
    r"understand|remember|forget|believe|doubt|promise|swear|say|tell|ask|must|can|could|will|would|should|"
    r"might|may|shall|just|really|also|still|finally|even|actually|did|had|was|were|got|went|made|took|came|"
    r"saw|said|told|thought|felt|left|bought|found|gave|ate|drank|ran|won|lost|met|sat|heard|knew|let|put|"
    r"am|are|have|do|don't|can't|won't|didn't|love|like|hate|enjoy|prefer)\b)[a-z]+(?<!ed)(?<!ing)\b|"
    r"\b(?i:my)\s+(?:[\w-]+\s+){0,2}(?:is|are|runs|works|lives|keeps|teaches|owns|has|opens|drives|goes|"
    r"comes|speaks|plays|makes|sells)\b|"
    r"^(?:[A-Z][\w-]*\s+){1,3}(?:is|are)\s+(?:a|an|my|our)\b|"
    # Kin, a name, and what they do, in the present: "My husband Gjorche repairs espresso machines".
    rf"\b(?i:my|our)\s+(?i:{KIN_EN})\s+(?:[A-Z][\w-]+\s+)?(?:also\s+|still\s+)?[a-z]{{3,}}(?<!ss)(?<!us)(?<!is)s\b",
)
_MOMENT_EN = re.compile(
    r"\b(?:today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|week|weekend)|last (?:night|week)|"
    r"right now|at the moment|just now|a (?:minute|moment|second) ago|so far today|"
    r"(?:I|I'm|I've|we|we've)\s+just)\b",
    re.I,
)
_PROPER_OR_NUMBER_EN = re.compile(
    r"(?<!^)(?<![.!?]\s)\b(?!I\b|I'm\b|I've\b|I'd\b)[A-Z][a-z\u00c0-\u024f]+|\d|"
    r"\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|hundred)\b|"
    r"\b[a-z]+-[a-z]+\b"  # A compound names a thing too: "tape-ball", "colour-blind".
)


# Not a fact of a life: an instruction ("Don't message me before ten"), a wish or a plan ("I've always wanted to …").
_NOT_A_STATE_EN = re.compile(
    r"^(?:don't|do not|never|please|only|just|send|call|text|message|tell|let|make|give|bring|keep|stop|use|remind|"
    r"ask|wake|check|write|answer|reply)\b|\b(?:want|wanted|wish|hope|hoping|would love|I'd love|dream of|plan to|"
    r"planning|thinking about|going to|gonna)\b|"
    # A liking said by comparing or judging: the preference rules' and the paraphrase checks' to read, not this one's.
    r"\b(?:beats?|rather|prefer|over \w+ for me|the one (?:\w+ )?(?:thing|food|vegetable|dessert|drink|dish)|best|worst|"
    r"favou?rite|happily|can't stand|hate|love|adore|anything else|better|worse|every (?:single )?time|each time|"
    r"is (?:what|all) (?:I|we)|nothing (?:beats|compares|comes close))\b|"
    # Said to the agent, or a request to keep something: the remember rules' and the instruction checks' to read.
    r"\b(?:you|your|yours|imagine|pretend|suppose|remember|note|jot|save|store|memori[sz]e|profile|memory)\b|"
    r"^(?:if|whenever|unless)\b|"  # A condition, not a state.
    r"^(?-i:[A-Z][a-z]+),\s+(?!(?:I|we|my|our)\b)",  # An answer without its verb: "Raspberry, still, every time …".
    re.I,
)


def _durable_en(sentence: str) -> bool:
    if not _FIRST_PERSON_EN.search(sentence) or _MOMENT_EN.search(sentence) or sentence.rstrip().endswith("!"):
        return False
    if _NOT_A_STATE_EN.search(sentence):
        return False
    if not (_HOW_OFTEN_EN.search(sentence) or _HOW_LONG_EN.search(sentence) or _STATE_EN.search(sentence)):
        return False
    return bool(_PROPER_OR_NUMBER_EN.search(sentence)) or len(sentence.split()) >= 8


# --- Chinese ----------------------------------------------------------------------------------------------------------
_FIRST_PERSON_ZH = re.compile(r"我|咱")
_HOW_OFTEN_ZH = re.compile(
    r"每(?:天|日|晚|早|周|星期|礼拜|个|月|年|次|逢|回)|[一二两三四五六七八九十几\d]+(?:个)?(?:周|星期|礼拜|月|天)[一二两三四五六七八九十几\d]+次|"
    r"一(?:周|星期|礼拜|个月|年)|天天|平时|平常|一般|经常|常常|总是|老是|一直|向来|从来|周末|"
    r"(?:周|星期|礼拜)[一二三四五六日天](?:、[一二三四五六日天])*"
)
_HOW_LONG_ZH = re.compile(
    r"[一二两三四五六七八九十几多\d]+年(?:了|多)|十几年|几十年|多年|好多年|从小|小时候|老家|出生|长大|"
    r"是在[^，。；]{1,20}读的|毕业|读的(?:硕士|博士|本科|大学)|(?:硕士|博士|本科|大学)是在"
)
_STATE_ZH = re.compile(
    r"我(?:们)?(?:家)?(?:是(?!不是)|在[^，。；]{1,20}(?:工作|上班|教|读|做|当|负责|管|带|开|住|上课|上学|学)|"
    r"[^，。；]{0,12}?(?<!没)(?<!不)(?:住|养|(?<!没)有(?!点|些|事|空)|会说|会讲|用|开|骑|负责|管|教|带|种|弹|练|学|说|讲|吃|喝|穿|戴|跑步|"
    r"游泳|踢|上课|上班|上学)(?!了一|过)|"
    r"[^，。；]{0,12}?(?:种|养)了[一两二三四五六七八九十几\d]+(?:排|盆|棵|株|亩|只|条|头|匹|箱)|"  # Grown, raised: "种了一排海椒".
    r"的[^，。；]{1,12}(?:是|在|叫))"
)
_MOMENT_ZH = re.compile(
    r"今天|今晚|今早|今儿|刚刚|刚才|刚|昨天|昨晚|明天|明早|后天|这会儿|待会|马上|终于|现在就|此刻|[！!]$"
)
# A number other than a lone 一 ("同一个酒店", "一天都没吃" name no amount).
_SPECIFIC_ZH = re.compile(
    r"[A-Za-z]|\d|(?:[二两三四五六七八九十百千几]|一[二两三四五六七八九十百千几])[一二两三四五六七八九十百千几]*"
    r"(?:个|只|年|次|天|公里|分钟|小时|岁)"
)


# An instruction to the agent (别…, 不要…, 请…, 你…), a hedge or a plan (可能, 打算).
_NOT_A_STATE_ZH = re.compile(
    r"别|不要|请|你|您|记得|可能|也许|大概|临时|打算|想要|"
    r"最(?:喜欢|爱|好吃|好喝|好看|讨厌|想|棒|香|美|舒服|合适)|不腻|馋|离不开|咽不下去|受不了|越.+越|爱吃|喜欢|讨厌|不碰|吃不惯|好用|好吃|好看|不错|很棒|比.{1,8}(?:好|强)|"  # A liking.
    r"比不了|比不上|没法比|谁也|不是一回事|"
    r"帮我|给我|替我|记住|记下|存进|写进|记忆"  # Said to the agent, or a request to keep something.
)
# A number, code or identifier ("护照号码是 WC9821906", "the key-safe code is 2848*"): the privacy checks' to judge,
# never this reading's to write.
_IDENTIFIER = re.compile(
    r"(?=[A-Za-z*#-]*\d)(?=[\d*#-]*[A-Za-z])[A-Za-z0-9*#-]{6,}|\d{5,}|号码|密码|账号|卡号|证号|编号|"
    r"\b(?:number|code|password|passcode|pin|account)\b",
    re.I,
)


def _durable_zh(sentence: str) -> bool:
    if not _FIRST_PERSON_ZH.search(sentence) or _MOMENT_ZH.search(sentence) or _NOT_A_STATE_ZH.search(sentence):
        return False
    if not (_HOW_OFTEN_ZH.search(sentence) or _HOW_LONG_ZH.search(sentence) or _STATE_ZH.search(sentence)):
        return False
    return bool(_SPECIFIC_ZH.search(sentence)) or len(re.findall(r"[\u4e00-\u9fff]", sentence)) >= 12


def is_durable(sentence: str) -> bool:
    """Whether ``sentence`` (a statement the phrase rules left) reads as a lasting fact of the speaker's life."""
    if _IDENTIFIER.search(sentence):
        return False
    return _durable_zh(sentence) if is_chinese(sentence) else _durable_en(sentence)


def durable_finding(sentences: list[str], fact_of: Callable[[str], str]) -> Finding | None:
    """The lasting statements among ``sentences`` as one fact about the user (``fact_of`` puts one in the third
    person), or None."""
    sentences = [with_what_it_was(s, sentences[i - 1] if i else None) for i, s in enumerate(sentences)]
    if ended := next((s for s in sentences if speaker_ended(s)), None):
        # "Left the district hospital …", "早上的paratha我戒了": a named thing of theirs ended, a change.
        return write_finding("UPDATE_USER", fact_of(ended), CHANGE_REASON, CONFIDENCE)
    events = [(s, whose) for s in sentences if (whose := milestone_whose(s))]
    if events:
        # "Passed my driving test!", "My little brother got into medical school": a life event, the speaker's or
        # someone's in their life; beside it, a lasting statement of the same person's.
        whose = events[0][1]
        kept = [s for s, w in events if w == whose] + (
            [s for s in sentences if is_durable(s)] if whose == SPEAKER else []
        )
        decision, reason = ("UPDATE_USER" if whose == SPEAKER else "UPDATE_MEMORY"), EVENT_REASON
    else:
        kept, decision, reason = [s for s in sentences if is_durable(s)], "UPDATE_USER", REASON
    kept = list(dict.fromkeys(kept))[:2]
    if not kept:
        return None
    return write_finding(decision, " ".join(fact_of(s) for s in kept), reason, CONFIDENCE)
