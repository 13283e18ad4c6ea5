"""The offline write guardian (``heuristic-guardian-v1``), used when no LLM is configured.

It answers what the LLM guardian answers, ``{action, reason, edits}``, by rules a person can predict:

1. refuse an empty fact, one that carries a secret or personal data, and one matching an operator's
   correction that says such facts are refused;
2. refuse a duplicate of a line already in the file (normalised fingerprint);
3. replace the line a fact supersedes: a new value for an attribute the file already states (home, employer,
   diet, editor, manager, schedule…) or its negation ("no longer", "不再") (``guardian_app.write.supersede``);
4. refuse a near-duplicate (word-set similarity ≥ ``GUARDIAN_NEAR_DUPLICATE_THRESHOLD``, or the fact's
   words all contained in one line) or a paraphrase (WordLlama similarity ≥ ``GUARDIAN_PARAPHRASE_THRESHOLD``
   naming nothing new, ``guardian_app.write.similarity``);
5. refuse a vague fact (fewer than two content words, a bare question, "something", "stuff" …) unless
   a correction says facts like it are written;
6. otherwise append ``- fact`` under the section heading that fits it best (an existing heading sharing
   its words, else the file's default section for the fact's kind), creating the heading if needed.

``instruction_like(text)`` is the memory-poisoning check the guardian runs before either guardian.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.conf import settings

from guardian_app.write.forget import is_forget_request
from guardian_app.write.list_items import dropped_item
from guardian_app.write.replaced_lines import kept_household, with_past_job
from guardian_app.write.similarity import find_paraphrase
from guardian_app.write.supersede import attribute, restated_line, superseded_lines
from reflection_site import memory_files
from reflection_site import text as text_
from reflection_site.poisoning import hold_reason

MODEL_NAME = "heuristic-guardian-v1"

# A list mark at the start of a line ("- ", "1. ", "- [ ] ").
_BULLET_RE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
# A name after the first word: a brand, a place or a language the fact is about.
_NAMED_THING = re.compile(r"(?<=\s)(?-i:[A-Z])[\w-]+")
# A verb of having or being and one thing: "Has a cat.", "Owns a bike.", "Is vegan." say what.
_STATE_AND_THING = re.compile(
    r"^(?:has|owns|is|speaks|plays|rides|drives|keeps)\s+(?:an?\s+)?(?!(?:one|fine|back|good|ok|okay|done|ready|busy|"
    r"tired|sure|right|away|out|sick|free|late|early|here|there|home)\b)[a-z-]{3,}\W*$",
    re.I,
)
_VAGUE_WORDS = frozenset(
    "something stuff things thing somewhat whatever anything everything someone somebody etc misc various".split()
)


@dataclass(frozen=True)
class GuardianCorrection:
    """An operator's correction as the guardian sees it (from ``BehaviorCorrection.objects.for_prompt()``)."""

    pattern: str
    corrected_status: str  # "written" | "refused"
    reason: str = ""
    correction_id: str = ""
    corrected_target_file: str | None = None


@dataclass(frozen=True)
class GuardianVerdict:
    action: str  # "write" | "refuse"
    reason: str
    edits: list[dict[str, Any]] = field(default_factory=list)
    correction_id: str | None = None

    def as_reply(self) -> dict[str, Any]:
        """The verdict in the LLM guardian's reply shape."""
        return {"action": self.action, "reason": self.reason, "edits": list(self.edits)}


# --- Text helpers --------------------------------------------------------------------------------
def one_line(fact: str) -> str:
    """A fact as one Markdown bullet's text: whitespace collapsed (a fact cannot start a heading)."""
    text = " ".join((fact or "").split())
    return _BULLET_RE.sub("", text, count=1).strip()


def tokens(text: str) -> list[str]:
    """Content words (stemmed, stop words and the user/agent role words dropped) and CJK character bigrams
    (``reflection_site.text.content_words``)."""
    return text_.content_words(text, roles=True)


def fingerprint(text: str) -> str:
    """The normalised line: case, width, punctuation, bullet marks, whitespace and a leading "The user" do not
    matter (``reflection_site.text.normalize(line=True)``)."""
    return text_.normalize(text, line=True)


def _lines_of_content(content: str) -> Iterable[str]:
    for line in (content or "").splitlines():
        if not line.strip() or memory_files.is_heading(line):
            continue
        yield _BULLET_RE.sub("", line).strip()


@lru_cache(maxsize=50_000)
def _signature(line: str) -> tuple[str, frozenset[str]]:
    """A line's fingerprint and word set, cached: the same file's lines are checked on every write."""
    return fingerprint(line), frozenset(tokens(line))


def find_duplicate(fact: str, content: str, *, threshold: float | None = None) -> tuple[str, str] | None:
    """(kind, line) of the line in ``content`` that ``fact`` duplicates, or None.

    kind is "duplicate" (same fingerprint) or "near-duplicate" (word-set similarity at least the
    threshold, or every content word of the fact already in one line).
    """
    limit = settings.GUARDIAN_NEAR_DUPLICATE_THRESHOLD if threshold is None else threshold
    fact_print = fingerprint(fact)
    fact_tokens = set(tokens(fact))
    for line in _lines_of_content(content):
        line_print, line_tokens = _signature(line)
        if line_print == fact_print and fact_print:
            return "duplicate", line
        if not fact_tokens or not line_tokens:
            continue
        overlap = len(fact_tokens & line_tokens)
        if overlap / len(fact_tokens | line_tokens) >= limit:
            return "near-duplicate", line
        if len(fact_tokens) >= 2 and fact_tokens <= line_tokens:
            return "near-duplicate", line
    return None


# "红霞是红霞。", "Ana is Ana.": a greeting from someone who gives the name they are already known by.
_SAID_OF_ITSELF = re.compile(r"^(?P<n>[^\s，。,.]{1,40}?)\s*(?:是|叫|就是|is|is called|'s name is)\s*(?P=n)\W*$", re.I)


def vague_reason(fact: str) -> str | None:
    """Why the fact is too vague to remember, or None."""
    text = one_line(fact)
    words = tokens(text)
    cjk = text_.count_cjk(text)
    if text.endswith(("?", "？")):
        return "a question, not a fact"
    if _SAID_OF_ITSELF.match(text):
        return "says only that a name is that name"
    if cjk and len(re.findall(r"[A-Za-z]{2,}", text)) < 3:  # Chinese; "美玲 is allergic to shellfish." is English.
        if cjk < 4:
            return "too short to stand on its own"
    elif len(words) < 2 and not (_NAMED_THING.search(text) or (len(words) == 1 and _STATE_AND_THING.match(text))):
        return "too vague: fewer than two content words"
    raw_words = set(text_.words(text))
    if raw_words & _VAGUE_WORDS and len(words) < 4:
        return "too vague: says 'something' rather than what"
    return None


# --- Memory poisoning ----------------------------------------------------------------------------
def instruction_like(text: str) -> str | None:
    """Why ``text`` reads as an instruction to the agent rather than a fact, or None.

    Memory poisoning (injecting instructions into an agent's long-term memory so that they run in
    later conversations) is a published attack: such facts are held for a person, never written.
    The classes it recognises are in ``reflection_site.poisoning``.
    """
    return hold_reason(text)


# --- Sections ------------------------------------------------------------------------------------
# file -> [(section, words that point to it)], the first being the file's default section.
_SECTIONS: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    "USER.md": [
        ("Notes", ()),
        (
            "Preferences",
            (
                "prefer",
                "like",
                "love",
                "enjoy",
                "hate",
                "dislike",
                "favourite",
                "favorite",
                "want",
                "rather",
                "喜欢",
                "偏好",
                "讨厌",
                "爱",
            ),
        ),
        (
            "Schedule",
            (
                "monday",
                "tuesday",
                "wednesday",
                "thursday",
                "friday",
                "saturday",
                "sunday",
                "daily",
                "weekly",
                "every",
                "morning",
                "evening",
                "am",
                "pm",
                "每天",
                "每周",
                "周一",
                "周五",
                "早上",
                "晚上",
            ),
        ),
        (
            "Profile",
            (
                "name",
                "called",
                "live",
                "lives",
                "born",
                "age",
                "work",
                "works",
                "job",
                "engineer",
                "from",
                "speak",
                "speaks",
                "family",
                "wife",
                "husband",
                "daughter",
                "son",
                "叫",
                "住",
                "工作",
                "名字",
            ),
        ),
    ],
    "MEMORY.md": [
        ("Notes", ()),
        (
            "Projects",
            (
                "project",
                "repo",
                "repository",
                "release",
                "deadline",
                "milestone",
                "launch",
                "migration",
                "项目",
                "发布",
            ),
        ),
        ("Decisions", ("decided", "decision", "agreed", "chose", "决定")),
        ("Events", ("meeting", "trip", "appointment", "birthday", "anniversary", "会议", "生日")),
    ],
    "SOUL.md": [
        ("Guidelines", ()),
        (
            "Tone",
            ("tone", "concise", "brief", "formal", "casual", "friendly", "polite", "emoji", "verbose", "简洁", "语气"),
        ),
        ("Boundaries", ("never", "avoid", "don't", "dont", "must not", "不要", "禁止")),
    ],
    "IDENTITY.md": [("Identity", ())],
    "TOOLS.md": [
        ("Tools", ()),
        ("Commands", ("command", "run", "make", "script", "cli", "命令")),
        (
            "Services",
            ("api", "url", "http", "https", "endpoint", "server", "service", "host", "staging", "production", "服务"),
        ),
    ],
}


def headings(content: str) -> list[str]:
    found = (memory_files.parse_heading(line) for line in (content or "").splitlines())
    return [heading[1] for heading in found if heading is not None]


def _cue_matches(cue: str, words: set[str], folded: str) -> bool:
    if not cue.isascii():
        return cue in folded
    if " " in cue or "'" in cue:
        return cue in folded
    # "prefer" matches prefers, preferred; "like" likes, liked.
    return any(w == cue or (w.startswith(cue) and len(w) - len(cue) <= 3 and len(cue) > 2) for w in words)


def choose_section(fact: str, content: str, target_file: str) -> str:
    """The heading to append under: an existing heading sharing words with the fact, else the file's
    section for the fact's kind (existing or to be created)."""
    fact_tokens = set(tokens(fact))
    fact_words = set(text_.words(fact))
    existing = headings(content)
    best, best_score = None, 0
    for heading in existing:
        score = len(fact_tokens & set(tokens(heading)))
        if score > best_score:
            best, best_score = heading, score
    if best is not None:
        return best
    sections = _SECTIONS.get(target_file) or [("Notes", ())]
    folded = text_.fold(fact)
    chosen = sections[0][0]
    for section, cues in sections[1:]:
        if any(_cue_matches(cue, fact_words, folded) for cue in cues):
            chosen = section
            break
    for heading in existing:  # Reuse the file's spelling of the heading.
        if text_.fold(heading) == text_.fold(chosen):
            return heading
    return chosen


# --- The verdict ---------------------------------------------------------------------------------
def _replacing(text: str, content: str, target_file: str, correction_id: str | None) -> GuardianVerdict | None:
    """The write that replaces what ``text`` makes stale in ``content``, or takes one item out of a list line, or
    None when it replaces nothing."""
    stale = [line for line in superseded_lines(text, content) if content.count(line) == 1]
    if stale:
        household = "".join(f"\n- {line}" for line in kept_household(stale) if line not in content)
        edits = [{"op": "replace", "find": stale[0], "text": f"- {with_past_job(text, stale)}{household}"}]
        edits += [{"op": "delete", "find": line} for line in stale[1:]]
        shown = "; ".join(_BULLET_RE.sub("", line).strip()[:120] for line in stale)
        return GuardianVerdict(
            "write",
            f"supersedes what the file said before ({shown}); the old line is replaced, its text kept in history",
            edits,
            correction_id=correction_id,
        )
    if (dropped := dropped_item(text, content)) is not None and content.count(dropped[0]) == 1:
        # "No longer climbs." and "Loves to cook, go rock climbing, watch Netflix and travel.": the item goes, the rest
        # of the list stays, and the negation is written beside it.
        edits = [
            {"op": "replace", "find": dropped[0], "text": dropped[1]},
            {"op": "append", "section": choose_section(text, content, target_file), "text": f"- {text}"},
        ]
        return GuardianVerdict(
            "write",
            f"takes one item out of a list the file states ({_BULLET_RE.sub('', dropped[0]).strip()[:120]}); the "
            "rest of the list stays",
            edits,
            correction_id=correction_id,
        )
    return None


def review_fact(
    fact: str,
    content: str | None,
    *,
    target_file: str,
    corrections: Sequence[GuardianCorrection] = (),
) -> GuardianVerdict:
    """Decide, without an LLM, whether ``fact`` goes into ``target_file`` (whose text is ``content``)."""
    from reflection_site.privacy import contains_pii, contains_secret
    from sessions_app.heuristic_gate import matches_correction_pattern

    text = one_line(fact)
    content = content or ""
    if not text:
        return GuardianVerdict("refuse", "empty fact")
    if contains_secret(text):
        return GuardianVerdict(
            "refuse", "the fact carries a secret (a key, token or password); secrets are never written"
        )
    if contains_pii(text):
        return GuardianVerdict("refuse", "the fact carries personal data (an e-mail, phone, card, IP or IBAN)")
    allowed_by: GuardianCorrection | None = None
    for correction in corrections:
        if not correction.pattern or not matches_correction_pattern(correction.pattern, text):
            continue
        if correction.corrected_status == "refused":
            why = f": {correction.reason}" if correction.reason else ""
            return GuardianVerdict(
                "refuse",
                f"matches operator correction {correction.correction_id or correction.pattern!r}{why}",
                correction_id=correction.correction_id or None,
            )
        if correction.corrected_status == "written" and allowed_by is None:
            allowed_by = correction
    duplicate = find_duplicate(text, content)
    if duplicate is not None and duplicate[0] == "duplicate":
        return GuardianVerdict("refuse", f"duplicate of an existing line: {duplicate[1][:200]}")
    # A new value for an attribute the file states (home, employer, diet, editor, manager, schedule…) or a
    # negation of it replaces the old line; the old value stays in the file's history.
    restated = restated_line(text, content)
    if restated is not None:
        return GuardianVerdict("refuse", f"the file already says this in other words: {restated.strip()[:200]}")
    replacing = _replacing(text, content, target_file, allowed_by.correction_id if allowed_by else None)
    if replacing is not None:
        return replacing
    if is_forget_request(text):
        return GuardianVerdict("refuse", "a request to forget, and no line of the file states what it names")
    if duplicate is not None:
        kind, line = duplicate
        return GuardianVerdict("refuse", f"{kind} of an existing line: {line[:200]}")
    paraphrased = find_paraphrase(text, _lines_of_content(content))
    if paraphrased is not None:
        return GuardianVerdict(
            "refuse", f"a paraphrase of an existing line (WordLlama similarity): {paraphrased[:200]}"
        )
    vague = vague_reason(text)
    if vague is not None and attribute(text) is not None:
        vague = None  # "Is vegetarian.": one word, but the value of an attribute (diet, home, employer…).
    if vague is not None and allowed_by is None:
        return GuardianVerdict("refuse", vague)
    section = choose_section(text, content, target_file)
    reason = f"new fact appended under '{section}'"
    if vague is not None and allowed_by is not None:
        reason += f" (operator correction {allowed_by.correction_id or allowed_by.pattern!r} allows it)"
    return GuardianVerdict(
        "write",
        reason,
        [{"op": "append", "section": section, "text": f"- {text}"}],
        correction_id=allowed_by.correction_id if allowed_by else None,
    )
