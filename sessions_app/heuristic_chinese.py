"""The offline gate's Chinese rules, each a function of one clause that returns a ``Finding`` or None:
tools and environment (``tools_zh``), the agent's identity (``identity_zh``), its character and manner
(``soul_zh``) and durable facts about the user (``user_zh``). The phrase lists are in ``heuristic_rules``;
the order the rules run in is ``heuristic_gate``'s.
"""

from __future__ import annotations

import re

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_person import rewrite_zh
from sessions_app.heuristic_reading import Finding, finish_zh, write_finding
from sessions_app.heuristic_rules import NO_WRITE


def tools_zh(clause: str) -> Finding | None:
    strong = rules.STRONG_TOOL_RE.search(clause)
    weak = (rules.ZH_TOOL_VOCAB.search(clause) and rules.ZH_TOOL_STRUCTURE.search(clause)) or rules.ZH_TOOL_USE.match(
        clause
    )
    if not strong and not weak:
        return None
    reason = "names a command, address or path" if strong else "describes the tools or environment"
    return write_finding(
        "UPDATE_TOOLS", finish_zh(rewrite_zh(clause)), f"Tools and environment: {reason}.", 0.8 if strong else 0.65
    )


def identity_zh(clause: str) -> Finding | None:
    clause = rules.FUTURE_ZH.sub("", clause)
    if match := rules.NAME_ZH.match(clause):
        name = rules.ZH_NAME_TAIL.sub("", match.group("name")).strip("\"'「」“” ")
        if name and not name.startswith(("我", "用户")):
            return write_finding("UPDATE_IDENTITY", f"助手的名字是{name}。", "The agent's identity: its name.", 0.85)
    if match := rules.ATTRIBUTE_ZH.match(clause):
        value = rules.ZH_NAME_TAIL.sub("", match.group("value"))
        return write_finding(
            "UPDATE_IDENTITY", finish_zh(f"助手的{match.group('attr')}是{value}"), "The agent's identity.", 0.85
        )
    if match := rules.ROLE_ZH.match(clause):
        return write_finding(
            "UPDATE_IDENTITY",
            finish_zh(f"助手是{rewrite_zh(match.group('rest'))}"),
            "The agent's identity: its role.",
            0.75,
        )
    return None


def soul_zh(clause: str) -> Finding | None:
    if rules.STRONG_TOOL_RE.search(clause) or rules.WEAK_TOOL_RE.search(clause) or rules.ZH_TOOL_VOCAB.search(clause):
        return None
    if match := rules.ZH_COMPLAINT.match(clause):
        fact = f"用户觉得助手{match.group('what') or ''}{match.group('degree')}{match.group('adj')}"
        return write_finding("UPDATE_SOUL", finish_zh(fact), "The user's feedback on the agent's manner.", 0.65)
    if (when := _WHEN_I_ZH.match(clause) or _WHEN_YOU_ZH.match(clause)) and any(
        form.match(re.sub(r"^你(?!们)(?:就|也|都|还)?", "", clause[when.end() :])) for form in _WHEN_FORMS
    ):
        # A standing rule said with the case it is for: "我用中文问你的时候，你就用中文回答" (the case kept in the fact).
        return write_finding(
            "UPDATE_SOUL", finish_zh(rewrite_zh(clause)), "An instruction about the agent's character or manner.", 0.7
        )
    rest = rules.FUTURE_ZH.sub("", clause)
    open_instruction = rest != clause
    wished = re.match(r"^(?:我希望你|我想让你|我要你|我需要你|希望你|请你)", rest)
    if wished:
        rest, open_instruction = rules.FUTURE_ZH.sub("", rest[wished.end() :]), True
    if not rest or rest.startswith("我"):
        return None
    if not open_instruction and not any(form.match(rest) for form in rules.ZH_SOUL_FORMS):
        return None
    rest = re.sub(r"^你(?!们)", "", rest)
    rest = re.sub(rf"^(?:{rules.ZH_NEGATIVE})", "不要", rest)
    rest = re.sub(r"了$", "", rules.ZH_TAIL_RE.sub("", rest))
    subject = "助手" if re.match(rf"(?:{rules.ZH_MODALS})", rest) else "助手应当"
    return write_finding(
        "UPDATE_SOUL",
        finish_zh(subject + rewrite_zh(rest)),
        "An instruction about the agent's character or manner.",
        0.75,
    )


# The case a standing rule is for, said first: "我用中文问你的时候，", "每次我发语音的话，", "只要是工作上的事，".
_WHEN_I_ZH = re.compile(r"^(?:如果|要是|只要|每当|每次|当)?[^，。；,;？?]{1,20}?(?:的时候|时|的话)[，,]\s*(?=你)")
# The same case said of the agent first: "你回我消息的时候先说结论，再讲原因".
_WHEN_YOU_ZH = re.compile(r"^你(?!们)[^，。；,;？?]{1,16}?(?:的时候|时)[，,]?\s*")
# After such a case, an order or a register for what the agent says is a rule too: "先说结论，再讲原因", "用正式一点的语气"
# (said alone, "先说好" and "直接说吧" are not).
_WHEN_FORMS = (
    *rules.ZH_SOUL_FORMS,
    re.compile(r"^(?:先|直接|只)(?:说|讲|写|回|给|列)"),
    re.compile(r"^用[^，。；]{0,8}(?:语气|口吻|格式)"),
)


# Who a Chinese clause opens on when it names its subject; any other clause has left it out.
# Who a clause opens on; "那台电脑…" (a thing) and "这阵子…" (a time) are not someone.
_SUBJECT_ZH = re.compile(
    r"^(?:我|你|您|他|她|它|咱|大家|别人|有人|人家|谁|(?:这|那)(?!台|辆|部|只|件|本|款|张|阵子|段时间|几天|几年|些年|会儿)|哪|什么|怎么|"
    r"为什么|用户|助手)"
)


# A field or a group said first: "古典音乐里", "水果当中", "运动方面".
_TOPIC_ZH = re.compile(r"^[\u4e00-\u9fff]{1,8}?(?:里|中|当中|之中|方面)[，,]?(?=我)")


# What a doctor or a test found, said as the speaker's own: "医生说我缺维生素D" is "我缺维生素D".
_FOUND_BY_ZH = re.compile(r"^(?:医生|大夫|体检|检查|化验|验血|报告)(?:结果)?(?:说|发现|查出(?:来)?|显示)(?:了)?我")


def user_zh(clause: str) -> Finding | None:
    """A durable fact of the speaker's. Chinese often leaves the subject out ("最近开始攀岩了", "现在用的是…"):
    a clause that names no one first, and has no 我 later in its first part ("家里我说了算" is said of the
    household), is the speaker's own and is read as "我…"."""
    clause = _FOUND_BY_ZH.sub("我", clause, count=1)
    found = _user_zh(clause)
    if found is None and (topic := _TOPIC_ZH.match(clause)):
        # "古典音乐里我最喜欢的还是贝多芬": the field named first, then the speaker's statement; the fact keeps both.
        inner = _user_zh(clause[topic.end() :])
        if inner is not None and inner.decision != NO_WRITE:
            return write_finding(inner.decision, finish_zh(rewrite_zh(clause)), inner.reason, inner.confidence)
    first, *later = re.split(r"[，,；;]|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])", clause)
    subjectless = not _SUBJECT_ZH.match(clause) and "我" not in first
    if found is None and subjectless:
        found = _user_zh("我" + clause)
    # "以前喜欢喝咖啡，现在改喝茶了", "博物馆的合同到期了，我现在在图书馆上班": the statement is in a later part (its own
    # 我, or none); the fact keeps the whole sentence.
    for part in later if found is None else ():
        # A later part without a subject goes on with the speaker: "急诊科那边我辞了，现在在…教书".
        chained = subjectless or re.search(r"(?<![对给跟和让帮把被替向])我(?!的)", first) is not None
        said = part if part.startswith("我") else ("我" + part if chained and not _SUBJECT_ZH.match(part) else "")
        inner = _user_zh(said) if said else None
        if inner is not None and inner.decision != NO_WRITE:
            whole = "我" + clause if subjectless and said != part else clause
            return write_finding(inner.decision, finish_zh(rewrite_zh(whole)), inner.reason, inner.confidence)
    return found


def _either(match: re.Match[str], name: str) -> str:
    return next(
        (
            match.group(key)
            for key in (name, f"{name}2", f"{name}3", f"{name}4")
            if key in match.re.groupindex and match.group(key)
        ),
        "",
    )


# A verb of one character said in two, as the rules read it: "阿拉伯语课我先停了" → "我暂停了阿拉伯语课".
_ONE_CHARACTER_VERB = {"停": "暂停"}


def _given_up_in_order(match: re.Match[str]) -> str:
    """ "瑜伽我不练了" → "我不再练瑜伽了"; a thing that opens with its verb keeps one: "跳绳我不跳了" → "我不再跳绳了"."""
    verb, thing = _either(match, "verb"), _either(match, "thing")
    return f"我不再{'' if thing.startswith(verb) else verb}{thing}了"


def _user_zh(clause: str) -> Finding | None:
    clause = rules.WE_HOUSEHOLD_ZH.sub("我", clause)
    # The thing given up said first, in the usual order: "瑜伽我不练了" → "我不再练瑜伽了", "日语课我放弃了" →
    # "我放弃了日语课" (so the fact opens on its subject, whoever speaks).
    clause = rules.GIVEN_UP_FIRST_ZH.sub(_given_up_in_order, clause, count=1)
    clause = rules.DISLIKED_FIRST_ZH.sub(lambda m: f"我不{m.group('verb')}{m.group('thing')}", clause, count=1)
    clause = rules.DROPPED_FIRST_ZH.sub(
        lambda m: (
            f"我{_ONE_CHARACTER_VERB.get(_either(m, 'verb'), _either(m, 'verb')) or '暂停'}了{_either(m, 'thing')}"
        ),
        clause,
        count=1,
    )
    if match := rules.CALL_ME_ZH.match(clause):
        name = rules.ZH_NAME_TAIL.sub("", match.group("name"))
        return write_finding("UPDATE_USER", f"用户希望被称为{name}。", "How the user wants to be addressed.", 0.85)
    for label, pattern, confidence in rules.USER_RULES_ZH:
        if match := pattern.match(clause):
            if "object" in pattern.groupindex and (
                not match.group("object").strip() or rules.ZH_REACTION.match(match.group("object"))
            ):
                return Finding(NO_WRITE, None, "A reaction to this conversation, not a lasting preference.", 0.7)
            # The first clause says whether it is passing: "我周六上午去上陶艺课，今天做了一个碗" is a habit.
            first = re.split(r"[，,；;]", clause, maxsplit=1)[0]
            if rules.TRANSIENT_ZH.search(first) and not re.search(rules.ZH_MOVE_OR_JOB, clause):
                return Finding(NO_WRITE, None, "A passing state, not a durable fact about the user.", 0.7)
            if label == rules.CHANGE_LABEL:
                clause = rules.ZH_OLD_VALUE_DROPPED.sub(r"\g<new>", clause)
            return write_finding("UPDATE_USER", finish_zh(rewrite_zh(clause)), f"About the user: {label}.", confidence)
    return None
