"""A negative feedback's reason as a rule: its type, priority, confidence, subject and stance, and the active
rules it conflicts with.

The rule guard (``feedback``) accepts a reason only if, in this order:
  ``reason_too_short``  the reason has fewer than 10 characters;
  ``unclassified``      no keyword of ``RULE_KEYWORDS`` matches (safety wins whenever one of its
                        keywords is present; otherwise routing or style by the number of keywords
                        matched, a tie going to routing);
  ``duplicate``         a rule of the project has the same fingerprint (type + normalised text);
  ``project_cap``       the project already has ``LEARNING_RULE_MAX_PER_PROJECT`` active rules;
  ``rule_conflict``     an active rule of the same type is about the same subject (at least two thirds
                        of the smaller rule's subject words are shared) with the opposite stance ("don't use emoji" / "use more
                        emoji", "shorter" / "more detailed", "reply in English" / "reply in Chinese")
                        and the newcomer does not outrank it. Outranking is ``(priority, confidence)``
                        strictly greater. A newcomer that outranks every conflicting rule is accepted
                        and suppresses them (``conflict_with`` set both ways, a ``rule_suppress`` event
                        with reason ``conflict`` each); one that does not is refused (``rule_conflict``).
Priority: safety 90, routing 60, style 40; +10 for a strong word (never, always, must, 绝不, 必须 …),
−10 for a soft one (prefer, maybe, if possible, 最好, 尽量 …). Confidence: 0.5, +0.1 per extra keyword
matched (at most +0.2), +0.1 strong, −0.1 soft, +0.05 for a reason of 40 characters or more, within
[0.1, 0.95].
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from guardian_app.learning import DEFAULT_PROJECT
from guardian_app.learning.text import collapse, find_phrases
from guardian_app.models import Rule
from reflection_site.text import CJK_CHAR, STOP_CHARS_ZH, STOP_WORDS_EN, bigrams, fingerprint, is_cjk, normalize, stem

MIN_RULE_REASON_CHARS = 10
CONFLICT_OVERLAP = 2 / 3


RULE_KEYWORDS: dict[str, tuple[str, ...]] = {
    "safety": (
        "unsafe", "safety", "safe", "dangerous", "danger", "harm", "harmful", "illegal", "password", "passwords",
        "secret", "secrets", "credential", "credentials", "api key", "api keys", "token", "tokens", "private",
        "privacy", "personal data", "personal information", "pii", "leak", "leaked", "leaks", "confidential",
        "security", "malware", "exploit", "self harm", "suicide", "medical advice", "legal advice", "delete",
        "deleted", "rm rf", "drop table", "destructive", "irreversible", "payment", "bank", "consent", "expose",
        "exposed", "phishing", "violence", "weapon", "weapons",
        "安全", "危险", "有害", "违法", "非法", "密码", "密钥", "口令", "隐私", "个人信息", "泄露", "泄漏", "机密",
        "敏感", "删除", "删库", "不可逆", "转账", "银行卡", "身份证", "恶意", "攻击", "自残", "暴力", "医疗建议",
        "法律建议",
    ),
    "routing": (
        "route", "routing", "routed", "channel", "channels", "escalate", "escalation", "forward", "forwarded",
        "redirect", "hand off", "handoff", "hand over", "delegate", "assign", "assigned", "transfer", "send it to",
        "send to", "should go to", "ping", "notify", "wrong person", "wrong team", "wrong channel", "wrong place",
        "support team", "on call", "ticket", "queue", "tool", "tools", "department", "dm", "direct message",
        "email", "thread", "team", "send", "sent", "belongs in", "post it in", "ops", "admin", "human",
        "转给", "转交", "转发", "转到", "路由", "频道", "群里", "私信", "升级", "上报", "交给", "分配", "派给",
        "工单", "值班", "队列", "工具", "调用", "通知", "邮件", "部门", "负责人",
    ),
    "style": (
        "tone", "formal", "informal", "casual", "polite", "rude", "friendly", "verbose", "wordy", "long", "longer",
        "short", "shorter", "concise", "brief", "succinct", "detailed", "detail", "bullet", "bullets",
        "bullet points", "list", "markdown", "format", "formatting", "emoji", "emojis", "language", "english",
        "chinese", "jargon", "simple", "simpler", "plain", "style", "wording", "caps", "exclamation", "headings",
        "paragraph", "paragraphs", "summary", "summarize", "explain", "explanation", "code block", "spelling",
        "grammar", "professional", "chatty", "lengthy", "terse",
        "语气", "口吻", "正式", "随意", "礼貌", "客气", "啰嗦", "冗长", "太长", "太短", "简短", "简洁", "精简",
        "详细", "格式", "列表", "要点", "表情", "中文", "英文", "语言", "术语", "通俗", "风格", "措辞", "段落",
        "标题", "总结", "解释", "口语",
    ),
}  # fmt: skip
RULE_BASE_PRIORITY = {"safety": 90, "routing": 60, "style": 40}
STRONG_WORDS = (
    "never", "always", "must", "must not", "under no circumstances", "absolutely", "do not ever", "at all times",
    "绝不", "绝对", "必须", "务必", "永远", "一定", "禁止", "千万",
)  # fmt: skip
SOFT_WORDS = (
    "prefer", "preferably", "maybe", "perhaps", "try to", "could you", "would be nice", "if possible", "ideally",
    "a bit", "slightly", "a little",
    "最好", "尽量", "可以的话", "也许", "建议", "稍微", "有点",
)  # fmt: skip
NEGATIONS = (
    "don't", "dont", "do not", "never", "stop", "avoid", "no", "not", "without", "less", "fewer", "quit",
    "shouldn't", "should not", "mustn't", "must not", "can't", "cannot", "won't", "refrain",
    "不要", "别", "禁止", "不能", "不许", "不准", "勿", "停止", "避免", "少", "不用", "不必", "无需", "不应该",
    "不该", "绝不", "千万不要",
)  # fmt: skip
# Words that place a rule on an axis with two opposite ends: (axis, end). A Chinese complaint ("太长",
# "啰嗦") already says which way the user wants it, so a negation beside it does not flip it again.
AXES: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("short", "shorter", "brief", "briefer", "briefly", "concise", "succinct", "terse", "compact"),
                    ("length", 1)),
    **dict.fromkeys(("long", "longer", "detailed", "verbose", "elaborate", "thorough", "lengthy", "wordy"),
                    ("length", -1)),
    **dict.fromkeys(("formal", "professional", "polite"), ("formality", 1)),
    **dict.fromkeys(("casual", "informal", "relaxed", "chatty"), ("formality", -1)),
    **dict.fromkeys(("english",), ("language", 1)),
    **dict.fromkeys(("chinese", "mandarin"), ("language", -1)),
    **dict.fromkeys(("简短", "简洁", "精简", "简要", "短一点"), ("length", 1)),
    **dict.fromkeys(("详细", "长一点", "展开", "具体"), ("length", -1)),
    **dict.fromkeys(("正式", "专业", "礼貌", "客气"), ("formality", 1)),
    **dict.fromkeys(("随意", "口语", "轻松", "随和"), ("formality", -1)),
    **dict.fromkeys(("英文", "英语"), ("language", 1)),
    **dict.fromkeys(("中文", "汉语", "普通话"), ("language", -1)),
}  # fmt: skip
COMPLAINTS: dict[str, tuple[str, int]] = {
    **dict.fromkeys(("太长", "太啰嗦", "啰嗦", "冗长", "太详细", "太多"), ("length", 1)),
    **dict.fromkeys(("太短", "太简单", "太简略"), ("length", -1)),
    **dict.fromkeys(("太正式",), ("formality", -1)),
    **dict.fromkeys(("太随意",), ("formality", 1)),
}  # fmt: skip
_INTENSIFIERS = frozenset({"too", "overly", "excessively"})
GENERIC_EN = frozenset(
    """use using used add adding make making give giving put keep write writing reply replies replying answer
    answers answering respond response responses message messages please be more start always never again ever
    much many every time times when you your me us it them stop avoid less fewer without don't dont do not
    should must shouldn't mustn't can't cannot won't refrain quit no prefer preferably maybe perhaps try could
    would nice possible ideally bit slightly little way like""".split()
)
GENERIC_ZH = (
    "使用", "回复", "回答", "请", "要", "多", "再", "一点", "一些", "以后", "总是", "每次", "时候", "应该", "需要",
    "用", "说", "话", "给", "把", "你", "我", "的", "了", "得", "太", "更", "点",
)  # fmt: skip


def classify_rule(reason: str) -> tuple[str | None, dict[str, list[str]]]:
    """``(rule_type, keywords matched per type)``; safety whenever it matches, else routing or style."""
    norm = normalize(reason)
    hits = {kind: sorted(set(find_phrases(norm, words))) for kind, words in RULE_KEYWORDS.items()}
    if hits["safety"]:
        return "safety", hits
    if not hits["routing"] and not hits["style"]:
        return None, hits
    return ("routing" if len(hits["routing"]) >= len(hits["style"]) else "style"), hits


def rule_subject(reason: str) -> tuple[frozenset[str], int]:
    """``(subject words, stance)``: what the rule is about, and +1 (do / this end) or −1 (don't / that end)."""
    norm = normalize(reason)
    polarity = -1 if find_phrases(norm, NEGATIONS) else 1
    words: set[str] = set()
    axis: tuple[str, int] | None = None
    complaint = False
    runs = norm.split(" ")
    for i, run in enumerate(runs):
        if is_cjk(run):
            for phrase, where in (*COMPLAINTS.items(), *AXES.items()):
                if phrase in run and CJK_CHAR.match(phrase):
                    if axis is None:
                        axis, complaint = where, phrase in COMPLAINTS
                    run = run.replace(phrase, " ")
            for phrase in sorted((*NEGATIONS, *STRONG_WORDS, *SOFT_WORDS, *GENERIC_ZH), key=len, reverse=True):
                if CJK_CHAR.match(phrase):
                    run = run.replace(phrase, " ")
            for piece in run.split():
                pieces = [c for c in piece if c not in STOP_CHARS_ZH] if len(piece) == 1 else bigrams(piece)
                words.update(pieces)
            continue
        if run in AXES:
            where = AXES[run]
            if i > 0 and runs[i - 1] in _INTENSIFIERS:  # "too long" asks for the other end.
                where, flipped = (where[0], -where[1]), True
            else:
                flipped = False
            if axis is None:
                axis, complaint = where, flipped
            continue
        if run in STOP_WORDS_EN or run in GENERIC_EN or run in _INTENSIFIERS:
            continue
        words.add(stem(run))
    if axis is None:
        return frozenset(words), polarity
    words.add(f"~{axis[0]}")
    return frozenset(words), axis[1] if complaint else polarity * axis[1]


@dataclass(frozen=True)
class RuleDraft:
    rule_type: str | None
    priority: int
    confidence: float
    subject: str
    stance: int
    fingerprint: str
    keywords: dict[str, list[str]]


def draft_rule(reason: str) -> RuleDraft:
    """Type, priority, confidence, subject and stance of the rule a negative feedback's reason states."""
    text = collapse(reason)
    rule_type, hits = classify_rule(text)
    norm = normalize(text)
    strong = bool(find_phrases(norm, STRONG_WORDS))
    soft = bool(find_phrases(norm, SOFT_WORDS))
    priority = RULE_BASE_PRIORITY.get(rule_type or "", 50) + (10 if strong else 0) - (10 if soft else 0)
    matched = len(hits.get(rule_type or "", [])) if rule_type else 0
    confidence = 0.5 + 0.1 * min(2, max(0, matched - 1)) + (0.1 if strong else 0) - (0.1 if soft else 0)
    confidence += 0.05 if len(text) >= 40 else 0
    subject, stance = rule_subject(text)
    return RuleDraft(
        rule_type=rule_type,
        priority=max(0, min(100, priority)),
        confidence=round(max(0.1, min(0.95, confidence)), 2),
        subject=" ".join(sorted(subject)),
        stance=stance,
        fingerprint=fingerprint(text, salt=f"{rule_type}:"),
        keywords={k: v for k, v in hits.items() if v},
    )


def subject_overlap(a: Iterable[str], b: Iterable[str]) -> float:
    """Shared subject words over the smaller subject's (1.0 when one subject contains the other)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / min(len(sa), len(sb)) if sa and sb else 0.0


def find_conflicts(draft: RuleDraft, *, project_id: str = DEFAULT_PROJECT) -> list[Rule]:
    """Active rules of the same type about the same subject with the opposite stance, strongest first."""
    if not draft.subject:
        return []
    candidates = Rule.objects.filter(
        project_id=project_id, rule_type=draft.rule_type, status=Rule.Status.ACTIVE
    ).exclude(stance=draft.stance)
    subject = draft.subject.split()
    found = [
        r
        for r in candidates.only("id", "subject", "priority", "confidence", "stance", "content")
        if subject_overlap(subject, r.subject.split()) >= CONFLICT_OVERLAP
    ]
    return sorted(found, key=lambda r: (r.priority, r.confidence), reverse=True)


def outranks(draft: RuleDraft, rule: Rule) -> bool:
    return (draft.priority, draft.confidence) > (rule.priority, rule.confidence)
