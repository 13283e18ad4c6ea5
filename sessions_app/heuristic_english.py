"""The offline gate's English rules, each a function of one clause that returns a ``Finding`` or None:
tools and environment (``tools_en``), the agent's identity (``identity_en``), its character and manner
(``soul_en``) and durable facts about the user (``user_en``). The phrase lists are in ``heuristic_rules``;
the order the rules run in is ``heuristic_gate``'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from sessions_app import heuristic_rules as rules
from sessions_app.heuristic_person import AGENT_IT, expand, is_household, rewrite
from sessions_app.heuristic_reading import Finding, finish_en, write_finding
from sessions_app.heuristic_rules import NO_WRITE
from sessions_app.heuristic_said import said_plainly


# --- Tools and environment --------------------------------------------------------------------------------------------
def mentions_tools(text: str) -> bool:
    """Whether ``text`` names a command, an address, a path, a known tool or the environment."""
    return bool(
        rules.STRONG_TOOL_RE.search(text) or rules.WEAK_TOOL_RE.search(text) or rules.ZH_TOOL_VOCAB.search(text)
    )


def tools_en(clause: str) -> Finding | None:
    strong = rules.STRONG_TOOL_RE.search(clause)
    if not strong and not (rules.WEAK_TOOL_RE.search(clause) and any(p.search(clause) for p in rules.TOOL_STRUCTURES)):
        return None
    reason = "names a command, address or path" if strong else "describes the tools or environment"
    return write_finding(
        "UPDATE_TOOLS", finish_en(rewrite(clause)), f"Tools and environment: {reason}.", 0.8 if strong else 0.65
    )


# --- Identity ---------------------------------------------------------------------------------------------------------
def _clean_name(name: str) -> str:
    name = re.split(r"\s*[,;]\s*|\s+and\s+|\s+(?:from now on|going forward)\b", name.strip(), maxsplit=1)[0]
    return name.strip(" \"'.!`*").strip()


def identity_en(clause: str) -> Finding | None:
    future = bool(rules.FUTURE_LEAD_EN.match(clause))
    clause = rules.FUTURE_TAIL_EN.sub("", rules.FUTURE_LEAD_EN.sub("", clause)).strip()
    name: str | None = None
    if match := rules.NAME_INTRO_EN.match(clause):
        name = _clean_name(match.group("name"))
    elif (match := rules.CALL_YOU_EN.match(clause)) and re.match(r"[\"'A-Z]|[^\x00-\x7f]", match.group("name")):
        name = _clean_name(match.group("name"))
    elif (match := rules.YOU_ARE_NAME_EN.match(clause)) and (future or " now " in clause):
        name = _clean_name(match.group("name"))
    if name:
        return write_finding("UPDATE_IDENTITY", f"The agent's name is {name}.", "The agent's identity: its name.", 0.85)
    if match := rules.ATTRIBUTE_EN.match(clause):
        attr = match.group("attr").lower()
        verb = "are" if match.group("verb").lower() == "are" or attr == "pronouns" else "is"
        value = rewrite(match.group("value"), second=None)
        return write_finding(
            "UPDATE_IDENTITY",
            finish_en(f"The agent's {attr} {verb} {value}"),
            f"The agent's identity: its {attr}.",
            0.85,
        )
    if match := rules.ROLE_EN.match(clause):
        det = {"my": "the user's"}.get(match.group("det").lower(), match.group("det").lower())
        tail = rewrite(match.group("tail"), second=AGENT_IT)
        fact = finish_en(f"The agent is {det} {match.group('role')}{tail}")
        return write_finding("UPDATE_IDENTITY", fact, "The agent's identity: its role.", 0.75)
    return None


# --- Soul: character and manner ---------------------------------------------------------------------------------------
# Each rule's pattern and how its match is written as an instruction to the agent.
_SOUL_RULES: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], str]], ...] = (
    (
        re.compile(
            r"^(?:you (?P<modal>should|must|need to|have to|ought to|are to|shall)|I (?:want|need|would like|expect) "
            r"you to|make sure (?:that )?you)\s+(?P<rest>.+)$",
            re.I,
        ),
        lambda m: (
            f"The agent {'must' if (m.group('modal') or '').lower() == 'must' else 'should'} "
            f"{rewrite(m.group('rest'), second=AGENT_IT)}"
        ),
    ),
    (
        re.compile(r"^(?:make sure to|try to|try not to|remember to)\s+.+$", re.I),
        lambda m: f"The agent should {rewrite(m.group(0), second=AGENT_IT)}",
    ),
    (
        re.compile(
            r"^I (?:(?:would prefer|prefer|like|love|hate|dislike|do not like|don't like|cannot stand|can't stand|"
            r"appreciate) (?:it )?(?:if|when)|would rather) you\b.+$",
            re.I,
        ),
        lambda m: rewrite(m.group(0)),
    ),
    (
        re.compile(r"^(?P<adv>always|never)\s+(?!mind\b)(?P<rest>\w.*)$", re.I),
        lambda m: f"The agent should {m.group('adv').lower()} {rewrite(m.group('rest'), second=AGENT_IT)}",
    ),
    (
        re.compile(rf"^(?:don't|do not|never)\s+(?:ever\s+)?(?P<rest>(?:{rules.NEG_VERBS})\b.*)$", re.I),
        lambda m: f"The agent should not {rewrite(m.group('rest'), second=AGENT_IT)}",
    ),
    (
        re.compile(r"^(?:be|stay|sound|act)\s+(?!right back\b|back\b|there\b|quiet\b)\w.*$", re.I),
        lambda m: f"The agent should {rewrite(m.group(0), second=AGENT_IT)}",
    ),
    (
        re.compile(r"^(?:stop|quit|avoid)\s+\w+ing\b.*$", re.I),
        lambda m: f"The agent should {rewrite(m.group(0), second=AGENT_IT)}",
    ),
    (
        re.compile(rf"^(?:keep|make)\s+(?:all\s+)?(?:your|the)\s+(?:{rules.OUTPUT_NOUNS})\b.*$", re.I),
        lambda m: f"The agent should {rewrite(m.group(0), second=AGENT_IT)}",
    ),
    (
        re.compile(
            rf"^(?:answer|reply|respond|speak|talk|write|communicate)(?:\s+to me)?(?:\s+only)?\s+(?:in (?:{rules.LANGUAGES}|"
            r"bullet points|full sentences|short sentences|one paragraph|lowercase|markdown|a [\w-]+ tone)\b|more\b|"
            r"less\b|briefly|concisely|formally|informally|casually|politely|directly|plainly|simply|like\b|as if\b)",
            re.I,
        ),
        lambda m: f"The agent should {rewrite(m.string, second=AGENT_IT)}",
    ),
    (
        re.compile(
            r"^use\s+(?:fewer|less|more|no|plain|simple|simpler|short|shorter|british|american|metric|imperial|"
            r"formal|informal|bullet|numbered|emojis?|headings|headers|tables|markdown|examples|analogies|humou?r|"
            r"a [\w-]+ tone)\b",
            re.I,
        ),
        lambda m: f"The agent should {rewrite(m.string, second=AGENT_IT)}",
    ),
    (
        re.compile(
            rf"^(?:your|the)\s+(?:{rules.OUTPUT_NOUNS})\s+(?:should|must|need to|needs to|have to|has to|could|can|are|is)\b",
            re.I,
        ),
        lambda m: rewrite(m.string),
    ),
    (
        re.compile(r"^you are\s+(?:way |far |a bit |a little |much |just )?(?:too|overly)\s+(?P<adj>[\w-]+)", re.I),
        lambda m: f"The user finds the agent too {m.group('adj')}",
    ),
    (
        re.compile(
            r"^you\s+(?:talk|write|apologi[sz]e|ramble|explain|hedge|repeat yourself|use \w+|ask)\s.*too much\b.*$",
            re.I,
        ),
        lambda m: f"The user finds that {rewrite(m.group(0))}",
    ),
)


def _lower_first(text: str) -> str:
    """ "Be more concise" inside "The agent should be more concise"; "I" and acronyms keep their case."""
    first_word = text.split(" ", 1)[0]
    if first_word != "I" and not first_word.isupper() and text[:1].isupper():
        return text[0].lower() + text[1:]
    return text


def soul_main_en(clause: str, *, open_imperative: bool) -> str | None:
    clause = _lower_first(clause)
    for pattern, build in _SOUL_RULES:
        if match := pattern.match(clause):
            return build(match)
    if not open_imperative:
        return None
    # After "from now on" or a condition, any imperative is an instruction about manner.
    words = clause.split()
    if words and words[0].lower() == "you" and len(words) > 1:
        verb = "be" if words[1].lower() in ("are", "is") else words[1]
        return f"The agent should {verb} {rewrite(' '.join(words[2:]), second=AGENT_IT)}".rstrip()
    if (
        words
        and words[0].lower() not in rules.NOT_A_VERB
        and words[0].isalpha()
        and not words[0].lower().endswith("ing")
    ):
        return f"The agent should {rewrite(clause, second=AGENT_IT)}"
    return None


def soul_en(clause: str) -> Finding | None:
    if mentions_tools(clause) or re.fullmatch(
        r"(?:don't|do not)\s+(?:ask|worry|laugh|judge|panic)[.!]*", clause.strip(), re.I
    ):
        return None  # "Don't ask.", "Don't laugh.": an idiom in a story, no rule for the agent.
    future = bool(rules.FUTURE_LEAD_EN.match(clause))
    clause = rules.FUTURE_TAIL_EN.sub("", rules.FUTURE_LEAD_EN.sub("", clause)).strip()
    clause = re.sub(r"^(?:please|pls|kindly)\s+", "", clause, flags=re.I)
    fact: str | None = None
    if condition := rules.CONDITION_EN.match(clause):
        main = soul_main_en(condition.group("main"), open_imperative=True)
        if main and not re.match(r"^I\b", condition.group("main")):
            cond = rewrite(condition.group("cond"))
            fact = f"{condition.group('conj').capitalize()} {cond}, {main[0].lower()}{main[1:]}"
    if fact is None:
        fact = soul_main_en(clause, open_imperative=future)
    if fact is None and (banned := _NONE_OF_EN.match(clause)):
        what, case = banned.group("what") or banned.group("what2"), banned.group("case") or banned.group("case2") or ""
        fact = f"The agent should use no {what}{rewrite(case).rstrip()}"
    if not fact:
        return None
    return write_finding("UPDATE_SOUL", finish_en(fact), "An instruction about the agent's character or manner.", 0.75)


# "No emojis when you write to me, please.", "No jargon in your answers.": a rule for the agent said without a verb,
# known by its "please" or by naming the agent's writing (not "No more madal on Fridays", "No luck today").
_WRITING_EN = (
    r"emojis?|emoticons?|smileys?|jargon|bullet points?|bullets|lists|markdown|headings|headers|tables|exclamation marks?|"
    r"small talk|apologies|disclaimers|caveats|abbreviations|acronyms|slang|swearing|hashtags"
)
_NONE_OF_EN = re.compile(
    rf"^no (?:(?P<what>{_WRITING_EN})(?P<case>\s+(?:when|while|in|for|with)\s+(?:you|your)\b[^.!?]*?)?(?:,?\s*please)?|"
    r"(?P<what2>[a-z][\w -]{1,30}?)(?P<case2>\s+(?:when you (?:write|reply|answer|message|text|talk|explain)|in your "
    r"(?:answers|replies|messages|writing|emails))\b[^.!?]*?)(?:,?\s*please)?)[.!]?$",
    re.I,
)


# --- Durable facts about the user -------------------------------------------------------------------------------------
def _user_fact_en(clause: str) -> str:
    rewritten = rewrite(clause)
    if rewritten.lower().startswith("the user ") and not rewritten.lower().startswith("the user's"):
        rewritten = rewritten[len("the user ") :]
    return finish_en(rewritten)


def _said_without_i(clause: str) -> str:
    """The user's statement said without "I" (or "my"), with it put back."""
    # "Got a MacBook Air to replace it", "Bought a used Fiat", "Dropped the Italian course", "Moved to Oslo": the
    # user's, said without "I".
    clause = re.sub(
        r"^(?=(?:just |finally |recently )?(?:(?:got|bought|adopted|rescued|sold|dropped|quit|gave up|took up|joined) "
        r"(?:a|an|my|our|the) |(?:moved|relocated|switched) (?:back )?to |moved (?:in with|into|back in with) |"
        r"handed in (?:my|the) notice\b|signed (?:on )?with (?-i:[A-Z])|traded in (?:my|the|a|an) |"
        r"started (?-i:[A-Z])[a-z]+ (?:on|in|at|with|classes|lessons)\b|(?:started|joined) (?:at|with) |"
        # "Started my ward placement at Komfo Anokye", "picked up weekend shifts at …", "signed for a flat in …".
        r"started (?:my|a|the) (?:[\w-]+ ){0,3}?(?:at|with) (?-i:[A-Z])|picked up (?:[\w-]+ ){0,3}?(?:shifts?|hours|work) |"
        r"signed (?:for|a lease on) (?:a|an|the) |"
        r"(?:gave up|quit) (?!it\b|that\b|this\b)[a-z]+|stopped [a-z]+ing\b|switched jobs\b))",
        "I ",
        clause,
        flags=re.I,
    )
    clause = said_plainly(clause)
    # "I think I'm lactose intolerant", "I guess I'm a morning person": the hedge says how sure, not what.
    clause = re.sub(
        r"^I (?:think|guess|believe|reckon|suppose|would say|'d say|have to say) (?:that )?(?=(?:I|my)\b)",
        "",
        clause,
        flags=re.I,
    )
    # "no more driving to work, …": a habit that ended, said without "I".
    clause = re.sub(
        r"^no more (?!(?:wedding|morning|evening|building|ceiling|clothing|thing|nothing|something|anything|"
        r"everything|spring|string|king|ring|wing|sibling|pudding|darling|meeting|icing|ping)s?\b)([a-z]+ing\b[^,.;!?]*)",
        r"I am not \1 anymore",
        clause,
        flags=re.I,
    )
    # "I've been learning German": learning it still.
    clause = re.sub(r"^I have been (?=(?:learning|studying)\b)", "I am ", clause, flags=re.I)
    # "I'm back in Malang": home again.
    clause = re.sub(rf"^I am (?:now )?back (?:home )?in (?=(?-i:{rules.UPPER}))", "I live in ", clause, flags=re.I)
    # "Been vegetarian for 10 years", "Not a coffee person anymore": the user's, said without "I".
    clause = re.sub(r"^been\s+", "I have been ", clause, flags=re.I)
    # "not learning japanese anymore", "new flat is in Trebnje": the user's, without "I" or "my".
    clause = re.sub(r"^not (?=[a-z]+ing\b[^.]*\b(?:anymore|any more|any longer)\b)", "I am not ", clause, flags=re.I)
    clause = re.sub(
        r"^(?=new (?:flat|place|house|apartment|home|job|address|phone|laptop|car|bike) is\b)",
        "my ",
        clause,
        flags=re.I,
    )
    clause = re.sub(
        r"^(living|based|working|staying)(?= (?:in|at|from|for) )",
        lambda m: f"I am {m.group(1).lower()}",
        clause,
        flags=re.I,
    )
    clause = re.sub(
        r"^not (?=(?:a|an|much of a) [\w-]+ (?:person|fan|drinker|eater)\b)", "I am not ", clause, flags=re.I
    )
    # "gym mon wed fri before work", "yoga tue/thu": a place or a class on days named, said without a verb.
    clause = re.sub(
        rf"^(?:(?P<gym>gym)|(?P<act>[a-z]+))(?= (?:on )?{rules.DAY_LIST_EN})",
        lambda m: "I go to the gym" if m.group("gym") else f"I go to {m.group('act')}",
        clause,
        flags=re.I,
    )
    # "My favorite food most definitely Fettuccine Alfredo", "my fav band: Wilco": the "is" left out.
    return re.sub(
        r"^((?:my|our) (?:fav|favou?rite) [\w-]+?(?: (?!(?:is|was|are|were)\b)[\w-]+)??)(?:\s*:\s*| (?=(?:most |quite )?(?:definitely|probably|"
        r"hands down|by far|for sure|honestly|always|totally|absolutely|easily)\b))",
        r"\1 is ",
        clause,
        flags=re.I,
    )


_VERBS_AFTER_DO = (
    r"speak|like|love|know|have|want|need|think|care|eat|drink|live|work|use|enjoy|prefer|remember|miss|feel|believe|"
    r"mean|hope|wish|agree|understand|play|read|cook|run|swim|cycle|drive|own|hate|mind|get|go|come|see|watch|listen"
)


# Moved by an employer: "The ministry has moved me to the district office in Bang Ban" is "I moved to …" (not
# "moved me to tears").
_MOVED_ME = re.compile(
    r"^(?:the\s+|my\s+|our\s+)?[\w'-]+(?:\s+[\w'-]+){0,3}?\s+(?:has\s+|have\s+|had\s+|just\s+)*"
    r"(?P<verb>moved|transferred|posted|relocated|seconded|reassigned)\s+me\s+to\b(?!\s+tears\b)",
    re.I,
)


def user_en(clause: str, *, greeted: bool) -> Finding | None:
    clause = rules.WE_HOUSEHOLD_EN.sub("I ", rules.FUTURE_LEAD_EN.sub("", expand(clause)))
    # "I do speak Spanish": the emphatic do says nothing; "I do yoga" is what the user does.
    clause = re.sub(rf"^I do (?=(?:{_VERBS_AFTER_DO})\b)", "I ", clause)
    clause = _MOVED_ME.sub("I moved to", clause, count=1)
    clause = _said_without_i(clause)
    if match := rules.CALL_ME_EN.match(clause):
        return write_finding(
            "UPDATE_USER",
            f"Prefers to be called {_clean_name(match.group('name'))}.",
            "How the user wants to be addressed.",
            0.85,
        )
    if (greeted and (match := rules.INTRO_EN.match(clause))) or (match := rules.INTRO_ASIDE_EN.match(clause)):
        return write_finding("UPDATE_USER", f"The user's name is {match.group('name')}.", rules.INTRO_REASON, 0.75)
    if rules.ONE_OFF_EN.match(clause):
        return Finding(NO_WRITE, None, "A request for now, not a lasting preference.", 0.7)
    matched: tuple[str, float] | None = None
    if (match := rules.MY_EN.match(clause)) and any(
        is_household(word) if match.group("det").lower() == "our" else word in rules.MY_DURABLE | rules.EVENT_NOUNS
        for word in {w.lower().removesuffix("'s") for w in match.group("np").split()}
    ):
        matched = ("a fact about the user's life", 0.75)
    else:
        for label, pattern, confidence in rules.USER_RULES_EN:
            if match := pattern.match(clause):
                if "object" in pattern.groupindex and (
                    not match.group("object").strip(" .!") or rules.REACTION_OBJECT.match(match.group("object"))
                ):
                    return Finding(NO_WRITE, None, "A reaction to this conversation, not a lasting preference.", 0.7)
                matched = (label, confidence)
                break
    if matched is None or len(clause.split()) < 3:
        return None  # "I moved." names no new value: the sentence after it does ("My new address is …").
    if match and "pronoun" in match.re.groupindex and match.group("pronoun"):  # "It is a cat named Keijo."
        clause = "I have " + clause[match.end("be") :]
    if match and "where" in match.re.groupindex:  # "Today was my first day at Acme." → "I started working at Acme."
        clause = f"I started working at {match.group('where')}"
    if rules.VAGUE_EN.match(clause):
        return Finding(NO_WRITE, None, "Small talk about an unnamed activity, not a fact.", 0.6)
    if rules.CHANGE_NOT_EN.match(clause):
        return Finding(NO_WRITE, None, "About this conversation, not a change in the user's life.", 0.6)
    if matched[0] == rules.USER_RULES_EN[0][0] and mentions_tools(clause):
        # "I switched from vim to Emacs": a change of tool goes where the tool facts are, so it can replace them.
        return write_finding("UPDATE_TOOLS", finish_en(rewrite(clause)), "A change of the user's tools.", matched[1])
    if (
        rules.TRANSIENT_EN.search(clause)
        and not rules.LIFE_CHANGE_EN.search(clause)
        and not rules.LEARNING_EN.match(clause)  # "I'm learning Korean right now": for months, not for today.
        and not re.search(r"\b(?:moved|switched|changed)\s+from\s+.+\s+to\b", clause, re.I)  # A switch stays.
    ):
        # "I moved to Bristol today" stays true after today; "I'm tired today" does not.
        return Finding(NO_WRITE, None, "A passing state, not a durable fact about the user.", 0.7)
    if re.match(r"^we\s", clause, re.I):  # "we adopted a puppy": the household's, written as the user's.
        clause = "I " + clause[3:]
    return write_finding("UPDATE_USER", _user_fact_en(clause), f"About the user: {matched[0]}.", matched[1])


# --- Who holds a role -------------------------------------------------------------------------------------------------
def people_en(clause: str) -> Finding | None:
    """ "Victor is the lead on the payments team.": a named person's role, for MEMORY.md (the guardian keys it
    by the role, so "Jeremy is now the lead." replaces it)."""
    if not rules.PERSON_ROLE_EN.match(clause):
        return None
    if re.search(r"\bmy\b", clause, re.I):  # "Tom is my boss": a fact about the user's life.
        return write_finding("UPDATE_USER", finish_en(rewrite(clause)), "About the user: who holds a role.", 0.7)
    return write_finding("UPDATE_MEMORY", finish_en(rewrite(clause)), "Who holds a role.", 0.65)
