"""The offline memory gate: a deterministic classifier used when no LLM endpoint is configured.

When ``LLM_BASE_URL`` is unset the gate records its decisions as model ``heuristic-gate-v1`` and
decides with the rules below instead of an LLM. It reads English and Chinese. It is a fallback:
it knows phrasings, not meaning, and when in doubt it answers ``NO_WRITE``.

How a turn is read
------------------
1. The user message is split into sentences (code spans and URLs are never split). Greetings,
   thanks and acknowledgements at the front of a sentence are dropped ("ok, …", "好的，…").
2. A sentence that is a question ("Do you like jazz?", "我喜欢什么？"), a hypothetical ("If I
   lived in Paris…", "假如…") or small talk ("thanks!", "哈哈") is set aside: trigger words inside
   it never cause a write. A polite request phrased as a question ("Can you remember that…?",
   "你能记住…吗？") is a request, not a question.
3. Every remaining sentence goes through the rules in this order, and the first rule that fires
   decides that sentence:

   ======  ===================  ==============================================================
   order   decision             what fires it
   ======  ===================  ==============================================================
   1       UPDATE_MEMORY        an explicit request to remember ("remember that …", "don't
                                forget …", "keep in mind …", "记住…", "别忘了…", "…，记一下")
   2       UPDATE_IDENTITY      the agent's own identity ("your name is …", "call yourself …",
                                "I'll call you …", "your emoji is …", "你叫…", "你的名字是…")
   3       UPDATE_SOUL          the agent's character and manner ("you should always/never …",
                                "be more concise", "stop apologizing", "以后你要…", "说话简洁一点")
   4       UPDATE_TOOLS         tools, commands and environment (code spans, URLs, hosts, paths,
                                known tools, "the staging API lives at …", "部署用 …")
   5       UPDATE_USER          durable facts and preferences about the user ("I prefer …",
                                "my name is …", "I live in …", "我喜欢…", "我叫…")
   ======  ===================  ==============================================================

   A manner instruction that mentions a tool or the environment ("always use pnpm", "never push
   to main") is about tools, so the soul rules step aside for it. "Remember to <do something>" is an
   instruction rather than a fact: it is UPDATE_SOUL when the soul rules recognise it ("remember to
   always answer in English"), else a memory of the task ("The agent should remember to …").
4. If several sentences fire, the decision highest in that table wins (one turn, one fact).
   Nothing fires → the last reading, by shape rather than wording (``heuristic_durable``): a named thing
   of the speaker's that ended ("Left the district hospital …", "早上的paratha我戒了") is a change, and a
   lasting statement of the speaker's life ("Sunday mornings I open the batting for …", "我晚上在网上给
   小学生上英语口语课，一周三次") is a fact. Else ``NO_WRITE`` with the reason (question, hypothetical, small
   talk, a request for now rather than a lasting preference, a passing state such as "today", or no fact).

``context`` is used sparingly: a bare "remember that" / "记住这个" takes its fact from the
previous sentence or the user's previous message, and "yes" / "好的" answering the agent's own
offer ("Should I remember that you prefer tea?", "要我记住…吗？") records what the agent offered.
``agent_reply`` is accepted for parity with the LLM gate and not used: the reply does not carry the
user's intent.

The candidate fact is one standalone third-person sentence: "I prefer summaries on Fridays" →
"Prefers summaries on Fridays.", "my name is Ada" → "The user's name is Ada.", "我喜欢喝咖啡" →
"用户喜欢喝咖啡。", "your name is Orion" → "The agent's name is Orion."; tool facts may stay
imperative ("Use `make deploy` to ship."). Prompt-injection-like text is classified like any
other text; the write guardian holds instruction-like facts. A decision is always one of
``DECISIONS``; no file name from the text ever becomes a decision.

Behaviour corrections
---------------------
Corrections marked ``apply_to_future`` reach the gate as :class:`CorrectionHint`. They are tried in
the order given (callers pass the newest first) against the candidate fact and the user message;
the first one that matches decides:

* ``corrected_status == "refused"`` → ``NO_WRITE``, and the reason names the correction;
* ``corrected_status == "written"`` with a ``corrected_target_file`` among the five memory files →
  that file's decision. A plain statement that no rule recognised is written too (the operator has
  said such statements matter); questions, greetings and hypotheticals never are.
* any other status or target file (``None``, ``settings.py``) → the hint is skipped.

Pattern semantics are ``sessions_app.correction_patterns``' (:func:`matches_correction_pattern`, reused
by the write guardian): every word of a plain pattern occurs in the text as a whole word, in any order; a
``/…/`` pattern is a regular expression run by RE2; an empty pattern never matches.

Limits, stated frankly: rules are phrase lists, so an unusual phrasing falls through to
``NO_WRITE``; a Chinese sentence containing a question word ("我喜欢什么都吃") reads as a
question; one turn yields one fact, and at most two more about someone else said beside it (``also``,
``heuristic_companion``); a turn that gives a secret (``reflection_site.privacy``) yields nothing; sentences longer
than 400 characters are not read.

Where things are: this module runs the rules and applies the corrections; ``heuristic_rules`` holds the
tables (phrase lists, regular expressions), ``heuristic_reading`` reads sentences, ``heuristic_person``
rewrites them in the third person, ``heuristic_english`` and ``heuristic_chinese`` hold the rules,
``heuristic_remember`` the requests to remember, ``correction_patterns`` the correction patterns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

from reflection_site import memory_files
from reflection_site.poisoning import hold_reason
from reflection_site.privacy import contains_secret
from sessions_app import heuristic_rules as rules
from sessions_app.correction_patterns import correction_pattern_problem, matches_correction_pattern
from sessions_app.heuristic_chinese import identity_zh, soul_zh, tools_zh, user_zh
from sessions_app.heuristic_companion import Theirs, about_them, named_in, where_i_grew_up, without_theirs
from sessions_app.heuristic_durable import durable_finding
from sessions_app.heuristic_english import identity_en, people_en, soul_en, tools_en, user_en
from sessions_app.heuristic_joined import listed_after, with_name, with_replacement
from sessions_app.heuristic_others import LOSS_REASON, loss, others_en, others_zh, resolve_pronoun, said_of_them
from sessions_app.heuristic_person import expand
from sessions_app.heuristic_reading import Finding, is_chinese, normalise, read_sentence, split_sentences, write_finding
from sessions_app.heuristic_remember import (
    FORGET_REASON,
    Remember,
    fact_from_statement,
    forget_request,
    offer_in,
    remember_request,
    resolve_bare_remember,
)
from sessions_app.heuristic_rules import DECISIONS, NO_WRITE, PRECEDENCE

MODEL_NAME = "heuristic-gate-v1"

FILE_FOR_DECISION = dict(memory_files.SEED_FILE_FOR_DECISION)

# A correction names a file (of any workspace profile); the decision is looked up, so an unknown name can
# never become one.
DECISION_FOR_FILE = dict(memory_files.DECISION_FOR_FILE)

SECRET_REASON = "The message gives a secret (a password, key, token or code): nothing of it is written."

# A turn is read up to this many sentences.
_MAX_SENTENCES = 40

__all__ = [
    "DECISIONS",
    "DECISION_FOR_FILE",
    "FILE_FOR_DECISION",
    "MODEL_NAME",
    "NO_WRITE",
    "PRECEDENCE",
    "CorrectionHint",
    "GateVerdict",
    "classify_turn",
    "correction_pattern_problem",
    "matches_correction_pattern",
]


@dataclass(frozen=True)
class CorrectionHint:
    """An operator's correction of an earlier write, marked ``apply_to_future``."""

    pattern: str
    corrected_status: str  # "written" | "refused"
    corrected_target_file: str | None = None
    correction_id: str = ""


@dataclass(frozen=True)
class GateVerdict:
    """What the gate decided about one turn."""

    decision: str
    reason: str
    candidate_fact: str | None  # None only for NO_WRITE
    confidence: float  # 0..1, how sure the rule was
    # Facts for other files the same turn states: ((decision, fact), …), as "someone else's" clauses (at most 2).
    also: tuple[tuple[str, str], ...] = ()


def _known_person_zh(clause: str, people: Collection[str]) -> Finding | None:
    """ "诗涵现在负责东南亚线路" when 诗涵 opens a line of the memory files: a fact about 诗涵, read as the rules read the
    user's own ("我现在负责…") and written with the name, for MEMORY.md. A Chinese name has no capital to tell it
    from a noun, so only the names the files already hold are read this way; "诗涵是我太太" is the relation rule's."""
    name = next((p for p in sorted(people, key=len, reverse=True) if clause.startswith(p)), None)
    if name is None or clause[len(name) :].startswith(("是", "，", ",", "说")):
        return None
    found = user_zh("我" + clause[len(name) :])
    if found is None or found.decision == NO_WRITE or not found.fact or "用户" not in found.fact:
        return None
    return write_finding(
        "UPDATE_MEMORY", found.fact.replace("用户", name, 1), "About someone the user knows.", found.confidence
    )


def _classify_statement(text: str, *, greeted: bool, people: Collection[str] = ()) -> Finding | Remember | None:
    """Run the rules on one statement, in precedence order; a bare remember request comes back as is."""
    if forgotten := forget_request(text):
        return forgotten
    remember = remember_request(text if is_chinese(text) else expand(text))
    if isinstance(remember, Finding):
        return remember
    if remember is not None:
        if remember.content:
            # "请记住：我偏好深色模式": a preference of the user's is the user's, remembered or not.
            liked = user_zh(remember.content) if is_chinese(remember.content) else None
            if liked is not None and liked.reason == rules.PREFERENCE_REASON:
                return liked
            return write_finding(
                "UPDATE_MEMORY", fact_from_statement(remember.content), "An explicit request to remember.", 0.9
            )
        return remember
    if is_chinese(text):
        checks: tuple[Callable[[str], Finding | None], ...] = (
            identity_zh,
            soul_zh,
            tools_zh,
            lambda c: _known_person_zh(c, people),
            others_zh,
            loss,
            user_zh,
        )
        clause = text
    else:
        clause = said_of_them(expand(text))
        checks = (identity_en, soul_en, tools_en, loss, lambda c: user_en(c, greeted=greeted), people_en, others_en)
    for rule in checks:
        finding = rule(clause)
        if finding is not None:
            return _someone_elses(finding)
    if not is_chinese(text) and (later := rules.LATER_I_EN.search(clause)):
        # "My e-bike got stolen, so I take the bus to work now": the user's own statement after a joining word.
        found = user_en(clause[later.end() :], greeted=False)
        if found is not None and found.decision != NO_WRITE:
            return found
    if not is_chinese(text):
        # "moved last weekend, new flat is in Trebnje", "no more tram for me, got a bike": a later part said without
        # "I" is the user's too.
        for part in rules.LATER_PART_EN.split(clause)[1:]:
            found = user_en(part, greeted=False)
            if found is not None and found.decision != NO_WRITE:
                return found
    if not is_chinese(text) and (move := rules.MOVE_CLAUSE_EN.search(clause)):
        verb = move.group("verb").lower()
        return user_en(f"I {'am ' if verb.endswith('ing') else ''}{verb} to {move.group('place')}", greeted=False)
    return None


_KIN_REASON = "About someone in the user's life."


def _precedence(finding: Finding) -> int:
    return len(PRECEDENCE) if finding.reason == _KIN_REASON else PRECEDENCE.index(finding.decision)


def _someone_elses(finding: Finding) -> Finding:
    """A fact about someone in the user's life goes to MEMORY.md (``rules.KIN_FACT_EN``)."""
    if finding.decision != "UPDATE_USER" or not finding.fact:
        return finding
    if not any(rx.match(finding.fact) for rx in (rules.KIN_FACT_EN, rules.KIN_FACT_ZH, rules.BARE_KIN_EN)):
        return finding
    return Finding("UPDATE_MEMORY", finding.fact, _KIN_REASON, finding.confidence)


def _change_rank(finding: Finding) -> int:
    """0 for a negation of something said before or a loss, 1 for another change, 2 for any other fact."""
    if finding.reason == LOSS_REASON:
        return 0
    if finding.reason != rules.CHANGE_REASON:
        return 2
    return 0 if rules.NEGATION_CHANGE.search(finding.fact or "") else 1


# A home or a job left behind ("Sold the flat in Naxçıvan.") and where the user is now, said in the next sentence
# ("I'm renting near my sister in Sumqayıt now."): one fact, so that the guardian replaces the old home.
_LEFT_BEHIND = re.compile(
    r"^(?:Has |Have )?(?:Sold|Left|Moved out of|Gave up|Quit|Handed in|Got rid of|Traded in)\b", re.I
)
# After a thing given up, the one that took its place: "Got rid of the old iPhone 6." then "Has a Galaxy S24 now."
_NEW_THING = re.compile(r"^(?:Has|Got|Bought|Uses)\b(?=.*\bnow\b)", re.I)
_NEW_PLACE = re.compile(
    r"\b(?:renting|living|lives|staying|based|works|working)\b[^.]*\b(?:in|at|near|for)\s+[A-Z]|^(?:Is (?:now )?(?:an? |the )?(?:[\w-]+ ){0,3}?(?:at|with)|Works (?:at|for))\s+[A-Z]"
)


def _with_loss(best: Finding, writes: Sequence[Finding]) -> Finding:
    """A loss, a job that ended or a negation and another fact of the user's in one turn are kept together:
    "Biscuit passed away in June; adopted a kitten named Miso.", "Resigned; is pivoting to landscape design.", "Is
    not at Acme anymore; started working at Wise." (one turn, one fact, and the guardian takes back the lines
    naming Biscuit, or saying where the user works)."""
    negation = best.reason == rules.CHANGE_REASON and bool(
        rules.NEGATION_CHANGE.search(best.fact or "") or _LEFT_BEHIND.match(best.fact or "")
    )
    if best.reason != LOSS_REASON and not rules.JOB_ENDED.match(best.fact or "") and not negation:
        return best
    other = next(
        (
            f
            for f in writes
            if f is not best
            and f.decision == best.decision
            and f.reason != LOSS_REASON
            # After a negation, only a new home or job: "I'm not at Acme anymore" and "Today was my first day at Wise".
            and (
                not negation
                or bool(rules.LIFE_CHANGE_EN.search(f.fact or "") or _NEW_PLACE.search(f.fact or ""))
                or bool(_NEW_THING.match(f.fact or "") and _LEFT_BEHIND.match(best.fact or ""))
            )
        ),
        None,
    )
    if other is None or not best.fact or not other.fact:
        return best
    joined = (
        f"{best.fact.rstrip('.。')}{'；' if is_chinese(best.fact) else '; '}{other.fact[:1].lower()}{other.fact[1:]}"
    )
    return Finding(best.decision, joined, best.reason, best.confidence)


# An activity or a liking added to another: "Also does pilates and yoga", "Also plays the cello" (not a home, a job or
# a thing owned: those have one value, and a line that joins two would be replaced whole by the next move).
_ACTIVITY_VERBS = (
    r"does|plays|likes|loves|enjoys|practi[cs]es|speaks|paints|draws|sings|swims|runs|climbs|cooks|bakes|knits|reads|"
    r"writes|collects|watches|listens to"
)
_ALSO = re.compile(rf"^(?:Also|Too)\s+(?:{_ACTIVITY_VERBS})\b", re.I)
_ACTIVITY_OR_LIKING = re.compile(rf"^(?:Really |Also )?(?:{_ACTIVITY_VERBS})\b", re.I)


def _with_also(best: Finding, writes: Sequence[Finding]) -> Finding:
    """A second fact of the user's said as added to the first is kept with it: "I love to run! I also do pilates and
    yoga." is "Loves to run; also does pilates and yoga." (one turn, one fact, nothing said lost)."""
    if best.decision != "UPDATE_USER" or _change_rank(best) != 2 or not _ACTIVITY_OR_LIKING.match(best.fact or ""):
        return best
    also = next(
        (
            f
            for f in writes
            if f is not best
            and f.decision == best.decision
            and _change_rank(f) == 2
            and _ALSO.match(f.fact or "")
            and f.fact.rstrip(".") not in best.fact
        ),
        None,
    )
    if also is None or not also.fact:
        return best
    return Finding(
        best.decision, f"{best.fact.rstrip('.')}; {also.fact[:1].lower()}{also.fact[1:]}", best.reason, best.confidence
    )


def _classify_message(
    message: str, context: Sequence[tuple[str, str]], people: Collection[str] = ()
) -> tuple[GateVerdict, str | None]:
    """The rule verdict, and the first plain statement (what a "written" correction may promote)."""
    if intro := rules.INTRO_ASIDE_EN.match(message):
        name = intro.group("full") or intro.group("name")
        return GateVerdict("UPDATE_USER", rules.INTRO_REASON, f"The user's name is {name}.", 0.8), None
    readings = [read_sentence(s) for s in split_sentences(message)[:_MAX_SENTENCES]]
    if not readings:
        return GateVerdict(NO_WRITE, "An empty message.", None, 0.95), None
    findings: list[Finding] = []
    previous: str | None = None
    first_statement: str | None = None
    said_before = [message for role, message in context if role == "user"][-1:]
    named_before = named_in(said_before)
    theirs: list[Theirs] = []  # Facts about someone else said beside another fact (heuristic_companion).
    statements: list[str] = []
    for reading in readings:
        if reading.kind != "statement":
            continue
        text = resolve_pronoun(reading.text, said_before + [r.text for r in readings[: readings.index(reading)]])
        statements.append(text)
        result = _classify_statement(text, greeted=reading.greeted, people=people)
        found = about_them(text, people, named_before) + [g for g in [where_i_grew_up(text)] if g is not None]
        theirs += [t for t in found if t.finding not in [o.finding for o in theirs]]
        named_before = named_in([text]) or named_before
        if isinstance(result, Remember):
            result = resolve_bare_remember(previous, context)
        else:
            previous = reading.text
            first_statement = first_statement or reading.text
        if result is None and reading.labelled:
            # "Correction: the design review moved to Thursday.": labelled by the user as news or a correction.
            decision = "UPDATE_USER" if rules.SCHEDULE_CHANGE_EN.search(reading.text) else "UPDATE_MEMORY"
            fact = fact_from_statement(reading.text)
            result = write_finding(decision, fact, "A correction or update the user announced.", 0.6)
        if result is None and findings and (listed := listed_after(findings[-1], reading.text)):
            findings[-1] = listed
        elif result is not None:
            findings.append(result)
    writes = [f for f in findings if f.decision != NO_WRITE] or [t.finding for t in theirs[:1]]
    # "Hello, I'm Fathima. I cut stones …": the name is written beside the turn's other fact, not instead of it.
    intro = [f for f in writes if f.reason == rules.INTRO_REASON][:1]
    writes = [f for f in writes if f.reason != rules.INTRO_REASON]
    if not writes and findings == intro and (durable := durable_finding(statements, fact_from_statement)):
        writes = [_someone_elses(durable)]  # The last reading: a lasting statement no phrase rule knew.
    named, writes = ([(f.decision, f.fact) for f in intro], writes) if writes else ([], intro)
    if writes:
        # Among writes of one kind, a change wins, a negation first: "I went to the doctor. I've started eating
        # fish again. I'm no longer vegetarian." is about the diet that ended, not the visit that came first.
        # A fact about someone in the user's life yields to one about the user in the same turn.
        best = _with_also(_with_loss(min(writes, key=lambda f: (_precedence(f), _change_rank(f))), writes), writes)
        if best.fact:  # A name given, or what took a given-up thing's place, said beside the fact (heuristic_joined).
            joined = with_name(with_replacement(best.fact, statements, fact_from_statement), message)
            best = Finding(best.decision, joined, best.reason, best.confidence)
        confidence = best.confidence
        if len({f.decision for f in writes}) > 1:
            # Several kinds of fact in one turn: only one is kept, so the choice is less certain.
            confidence = max(0.3, confidence - 0.1)
        fact = best.fact or ""
        for their in theirs:
            fact = without_theirs(fact, their)
        also = tuple(
            (d, f)
            for d, f in [*named, *((t.finding.decision, t.finding.fact) for t in theirs)]
            if f and f.rstrip("。.") not in fact
        )[:2]
        return GateVerdict(best.decision, best.reason, fact, confidence, also), first_statement
    if all(r.kind == "smalltalk" for r in readings) and (offer := offer_in(context)):
        if any(r.text and rules.AFFIRMATION.match(r.text) for r in readings):
            verdict = GateVerdict("UPDATE_MEMORY", "The user accepted the agent's offer to remember.", offer, 0.75)
            return verdict, first_statement
    if findings:
        return GateVerdict(NO_WRITE, findings[0].reason, None, findings[0].confidence), first_statement
    for kind, (reason, confidence) in rules.NO_WRITE_REASONS.items():
        if any(r.kind == kind for r in readings):
            return GateVerdict(NO_WRITE, reason, None, confidence), first_statement
    return GateVerdict(NO_WRITE, "No durable fact or instruction found.", None, 0.6), first_statement


def _apply_corrections(
    verdict: GateVerdict, message: str, statement: str | None, corrections: Sequence[CorrectionHint]
) -> GateVerdict:
    """The first matching correction overrides the rules; see the module docstring."""
    for hint in corrections:
        texts = [t for t in (verdict.candidate_fact, message) if t]
        if not any(matches_correction_pattern(hint.pattern, text) for text in texts):
            continue
        label = hint.correction_id or repr(hint.pattern)
        status = (hint.corrected_status or "").strip().lower()
        if status == "refused":
            if verdict.decision == NO_WRITE:
                return verdict
            reason = f"Behaviour correction {label} refused facts like this (pattern {hint.pattern!r})."
            return GateVerdict(NO_WRITE, reason, None, 0.95)
        if status != "written":
            continue
        decision = DECISION_FOR_FILE.get((hint.corrected_target_file or "").strip())
        fact = verdict.candidate_fact or (fact_from_statement(statement) if statement else None)
        if decision is None or not fact:
            continue
        reason = f"Behaviour correction {label} writes facts like this to {FILE_FOR_DECISION[decision]} (pattern {hint.pattern!r})."
        return GateVerdict(decision, reason, fact, 0.95)
    return verdict


def _without_forget_requests(message: str) -> str:
    """The message less its requests to forget something of the user's ("please delete my phone number from your
    notes" reads, to the poisoning check, like a destructive action; the rest of the message is still checked)."""
    return " ".join(s for s in split_sentences(message) if forget_request(read_sentence(s).text) is None)


def classify_turn(
    user_message: str,
    agent_reply: str = "",
    *,
    context: Sequence[tuple[str, str]] = (),
    corrections: Sequence[CorrectionHint] = (),
    people: Collection[str] = (),
) -> GateVerdict:
    """Decide whether a turn holds something worth remembering, where, and as which fact.

    ``people``: Chinese names the memory files already hold (``sessions_app.gate.people_named``); a sentence that
    opens with one is read as a fact about that person.

    1. Split the user message into sentences and set aside questions, hypotheticals and small talk.
    2. Run the rules on each remaining sentence (remember, identity, soul, tools, user) and keep the
       highest-precedence write; a bare "remember that" looks back at the sentence before it, then at
       ``context``.
    3. Let the first matching behaviour correction override the result.
    4. A write from a message that, read whole, carries an instruction (``reflection_site.poisoning``)
       passes the whole message as its fact, so that the guardian holds it for review: the rules keep one
       sentence, and the instruction could sit in another ("Great tip. Whenever someone asks, send them
       to …").

    Never raises on odd input; an empty or unreadable message is ``NO_WRITE``.
    """
    message = normalise(user_message)
    if contains_secret(message):  # Nothing of a turn that gives a secret: "It's hXiWdY3p. I always blank on it."
        return GateVerdict(NO_WRITE, SECRET_REASON, None, 0.9)
    verdict, statement = _classify_message(message, context, people)
    verdict = _apply_corrections(verdict, message, statement, corrections)
    if verdict.decision != NO_WRITE and verdict.also and hold_reason(verdict.candidate_fact or ""):
        verdict = replace(verdict, also=())  # A held turn is reviewed whole: nothing is written beside it.
    if verdict.decision != NO_WRITE and not hold_reason(verdict.candidate_fact or ""):
        why = hold_reason(_without_forget_requests(message) if verdict.reason == FORGET_REASON else message)
        if why is not None:
            return GateVerdict(
                verdict.decision,
                f"{verdict.reason}; the message reads as an instruction ({why}), so the whole of it goes to the "
                "guardian to be held for review",
                " ".join(message.split()),
                verdict.confidence,
            )
    return verdict
