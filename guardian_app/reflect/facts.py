"""The facts reflect works from: what was recalled from a period, each with a stable id and its source.

``collect_facts(since, until)`` reads, in this order:

1. ``## Retain`` bullets of the daily logs (``memory/YYYY-MM-DD.md``) from the recall index: typed facts
   (``W``, ``B``, ``O(c=…)``, ``S``) with their ``@entities`` and confidence;
2. other passages of the daily logs that name an ``@entity`` (kind unknown);
3. the facts the write guardian wrote in the period (gate decisions, retries, learning; ``written``
   audits of the five files, not those rolled back since), attributed to the line of the file that
   holds them now. Their entities are the ``@tags`` they carry, the known entities they name, and the
   names in them (capitalised words inside a sentence: "Lives in Lisbon", "works at Acme Corp"; not a
   language or nationality adjective, "British English"), a guessed name only once at least
   ``REFLECT_NEW_ENTITY_MIN_EVIDENCE`` facts of the run name it (default 2); a fact
   of USER.md is also about the user (``REFLECT_USER_ENTITY``, default ``User``). One that states a
   preference ("prefers", "likes", "dislikes", "喜欢" …) is an opinion, as seed 001's ``O`` bullets are.

Daily logs are selected by their day: ``since`` counts from the start of its day, so ``--since 1d``
includes yesterday's log. Bank pages are never read back (reflect wrote them).

A fact that carries a secret or personal data, or reads as an instruction to the agent, is left out
and reported (the write guardian would refuse or hold it too). A fact's id is a hash of its file and
normalised text: the same fact read twice, by two runs or a resumed one, has the same id.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from guardian_app.models import MemoryChunk, WriteGuardianAudit
from guardian_app.recall.retain import entity_key, mentioned_entities
from guardian_app.write.heuristic_guardian import fingerprint, instruction_like, one_line
from reflection_site import memory_files

AUDIT_SOURCES = ("gate", "retry", "learning")
_LINE_REF = re.compile(r"#L(\d+)")


@dataclass(frozen=True)
class Fact:
    id: str
    kind: str | None  # world | experience | opinion | observation | None (untyped)
    content: str
    entities: tuple[str, ...]
    confidence: float | None
    source: str  # memory/2025-11-27.md#L12, USER.md#L7
    date: dt.date
    origin: str  # retain | log | audit

    @property
    def entity_keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(entity_key(e) for e in self.entities))

    @property
    def path(self) -> str:
        return self.source.split("#", 1)[0].split(" ", 1)[0]

    @property
    def line(self) -> int:
        match = _LINE_REF.search(self.source)
        return int(match.group(1)) if match else 0

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["entities"] = list(self.entities)
        data["date"] = self.date.isoformat()
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fact:
        return cls(
            id=data["id"],
            kind=data.get("kind"),
            content=data["content"],
            entities=tuple(data.get("entities") or ()),
            confidence=data.get("confidence"),
            source=data["source"],
            date=dt.date.fromisoformat(data["date"]),
            origin=data.get("origin", "retain"),
        )


def fact_id(path: str, content: str) -> str:
    """Stable id of a fact: its file and normalised text (line numbers move when a log is edited)."""
    return hashlib.sha256(f"{path}\n{fingerprint(content)}".encode()).hexdigest()[:16]


def exclusion_reason(text: str) -> str | None:
    """Why a fact is kept out of reflect's pages, or None (the write guardian's own rules)."""
    from reflection_site.privacy import contains_pii, contains_secret

    if contains_secret(text):
        return "carries a secret"
    if contains_pii(text):
        return "carries personal data"
    why = instruction_like(text)
    if why is not None:
        return f"reads as an instruction ({why})"
    return None


@dataclass
class Collected:
    facts: list[Fact] = field(default_factory=list)
    excluded: list[dict[str, str]] = field(default_factory=list)
    known_entities: list[str] = field(default_factory=list)


def start_of_day(moment: dt.datetime) -> dt.datetime:
    local = timezone.localtime(moment)
    return local.replace(hour=0, minute=0, second=0, microsecond=0)


def _local_date(moment: dt.datetime) -> dt.date:
    return timezone.localtime(moment).date()


def known_entity_names(extra_pages: list[str] | None = None) -> list[str]:
    """Every entity named anywhere in the index (``@Name`` tags and bank/entities pages), by key, once."""
    names: dict[str, str] = {}
    for entities in MemoryChunk.objects.exclude(entity_keys="").values_list("entities", flat=True).iterator():
        for name in entities or []:
            names.setdefault(entity_key(name), name)
    for page in extra_pages or []:
        names.setdefault(entity_key(page), page)
    return sorted(names.values(), key=lambda n: entity_key(n))


def entities_in_text(text: str, known: list[str]) -> list[str]:
    """``@tags`` in the text, then known entity names it mentions as words (three characters or more)."""
    found = {entity_key(n): n for n in mentioned_entities(text)}
    folded = text.casefold()
    for name in known:
        key = entity_key(name)
        if key in found or len(key) < 3:
            continue
        words = re.escape(name.casefold()).replace(r"\-", r"[-\s]").replace(r"\ ", r"[-\s]")
        if re.search(rf"(?<![\w@]){words}(?!\w)", folded):
            found[key] = name
    return list(found.values())


# Capitalised words that are not names: days, months, languages and nationality adjectives (an adjective of a
# name, "British English", "a Canadian accent", is not an entity), and words a sentence often starts with.
_NOT_NAMES = frozenset(
    """monday tuesday wednesday thursday friday saturday sunday mondays tuesdays wednesdays thursdays fridays
    saturdays sundays january february march april may june july august september october november december
    english chinese french german spanish italian japanese korean portuguese russian dutch arabic hindi
    mandarin cantonese bengali urdu persian farsi turkish greek hebrew polish swedish norwegian danish finnish
    czech hungarian romanian ukrainian vietnamese thai indonesian malay tagalog swahili latin catalan
    british american canadian australian european asian african scottish welsh irish cornish kiwi
    mexican brazilian argentinian argentine chilean colombian peruvian cuban
    indian pakistani bangladeshi nepali sri taiwanese singaporean malaysian filipino
    belgian swiss austrian portugese israeli egyptian moroccan nigerian kenyan ethiopian
    latino latina hispanic western eastern northern southern nordic scandinavian anglo continental
    i i'm i've i'd a an the this that these those my our your his her their it its he she we they you
    user agent assistant ok okay yes no please thanks""".split()
)
_CAPITALISED_RUN = re.compile(r"\b[A-Z][\w'’-]*[a-z0-9][\w'’-]*(?:[ ][A-Z][\w'’-]*[a-z0-9][\w'’-]*)*")


def names_in_text(text: str) -> list[str]:
    """Proper names inside sentences: runs of capitalised words not at a sentence start ("Acme Corp").

    Conservative on purpose: a sentence's first word is skipped (it is capitalised anyway), as are days,
    months, languages and all-capitals acronyms.
    """
    found: dict[str, str] = {}
    for match in _CAPITALISED_RUN.finditer(text):
        words = match.group().split()
        before = text[: match.start()].rstrip()
        if not before or before[-1] in ".!?:;\"'“(\n-•*":
            words = words[1:]  # "Visited The Castle": the sentence's first word is no name.
        words = [re.sub(r"['’]s$", "", w) for w in words if w.casefold() not in _NOT_NAMES]
        while words and words[0].casefold() in {"the", "a", "an"}:
            words = words[1:]
        name = " ".join(words)
        if len(name) >= 3 and not name.isupper():
            found.setdefault(entity_key(name), name)
    return list(found.values())


def _locate(path: str, content: str, cache: dict[str, list[str] | None]) -> str:
    """``USER.md#L7``: the line of ``path`` that holds the fact now; the bare path when it is not found."""
    from guardian_app.errors import GuardianError
    from guardian_app.write import workspace

    if path not in cache:
        try:
            text = workspace.read_file(path)
        except GuardianError:  # A link or a FIFO in place of the file: cite the bare path.
            text = None
        cache[path] = text.splitlines() if text is not None else None
    lines = cache[path] or []
    needle = fingerprint(content)
    for number, line in enumerate(lines, start=1):
        if needle and needle in fingerprint(line):
            return f"{path}#L{number}"
    return path


_PREFERENCE = re.compile(
    r"\b(?:prefer(?:s|red|ring)?|likes?|liked|loves?|loved|enjoys?|enjoyed|hates?|hated|dislikes?|disliked|"
    r"favou?rite|would rather|can't stand|cannot stand)\b|喜欢|偏好|讨厌|更爱",
    re.IGNORECASE,
)


def is_preference(text: str) -> bool:
    """Whether a fact states a preference or a judgement (an opinion in seed 001's terms)."""
    return _PREFERENCE.search(text) is not None


def _audit_entities(content: str, target_file: str, known: list[str]) -> tuple[list[str], list[str]]:
    """(entities, guessed): tagged or known names and the user, then names guessed from capitalisation."""
    names = {entity_key(n): n for n in entities_in_text(content, known)}
    user = settings.REFLECT_USER_ENTITY
    if target_file == "USER.md" and user:
        names.setdefault(entity_key(user), user)
    guessed = [n for n in names_in_text(content) if entity_key(n) not in names]
    return list(names.values()), guessed


def _keep_well_evidenced(facts: list[Fact], guesses: dict[str, list[str]], minimum: int) -> None:
    """A name guessed from capitalisation becomes an entity only if at least ``minimum`` facts of the run name it
    (``REFLECT_NEW_ENTITY_MIN_EVIDENCE``): one capitalised word in one sentence is no evidence of an entity. A
    fact names it when the name stands in it as words, at a sentence's start too ("Priya recommended …"), and
    not as part of a longer name taken already ("Corp" inside "Acme Corp")."""
    candidates = {entity_key(n): n for names in guesses.values() for n in names}
    texts = [fact.content for fact in facts]  # accepted names are blanked out of these, longest first
    for key, name in sorted(candidates.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        words = re.compile(rf"(?<![\w@]){re.escape(name)}(?!\w)")
        naming = [i for i, text in enumerate(texts) if words.search(text)]
        if len(naming) < minimum:
            continue
        for i in naming:
            texts[i] = words.sub(" ", texts[i])
            if key not in facts[i].entity_keys:
                facts[i] = dataclasses.replace(facts[i], entities=(*facts[i].entities, name))


def collect_facts(since: dt.datetime, until: dt.datetime, *, known_pages: list[str] | None = None) -> Collected:
    """The period's facts (see the module docstring), oldest first, each once; at most REFLECT_MAX_FACTS."""
    out = Collected()
    seen: set[str] = set()
    known = known_entity_names(known_pages)
    out.known_entities = known

    def add(fact: Fact) -> None:
        if fact.id in seen:
            return
        seen.add(fact.id)
        why = exclusion_reason(fact.content)
        if why is not None:
            out.excluded.append({"source": fact.source, "reason": why, "content": fact.content[:200]})
            return
        out.facts.append(fact)

    chunks = (
        MemoryChunk.objects.filter(path__startswith="memory/", timestamp__gte=start_of_day(since), timestamp__lt=until)
        .filter(Q(kind__isnull=False) | ~Q(entity_keys=""))
        .order_by("timestamp", "path", "start_line")
        .only("path", "start_line", "end_line", "kind", "entities", "confidence", "content", "text", "timestamp")
    )
    for chunk in chunks.iterator():
        content = one_line(chunk.content or chunk.text)
        if not content:
            continue
        add(
            Fact(
                id=fact_id(chunk.path, content),
                kind=chunk.kind,
                content=content,
                entities=tuple(chunk.entities or ()),
                confidence=chunk.confidence,
                source=chunk.source_ref,
                date=_local_date(chunk.timestamp),
                origin="retain" if chunk.kind else "log",
            )
        )

    files: dict[str, list[str] | None] = {}
    audits = (
        WriteGuardianAudit.objects.filter(
            status=WriteGuardianAudit.Status.WRITTEN,
            source__in=AUDIT_SOURCES,
            target_file__in=memory_files.ALL_FILES,  # any profile's (AGENTS.md too), not reflect's pages
            created_at__gte=since,
            created_at__lt=until,
        )
        .order_by("created_at", "id")
        .only("id", "target_file", "candidate_fact", "created_at")
    )
    guesses: dict[str, list[str]] = {}
    for audit in audits.iterator():
        content = one_line(audit.candidate_fact)
        if not content:
            continue
        entities, guessed = _audit_entities(content, audit.target_file, known)
        if guessed:
            guesses[fact_id(audit.target_file, content)] = guessed
        add(
            Fact(
                id=fact_id(audit.target_file, content),
                kind="opinion" if is_preference(content) else None,
                content=content,
                entities=tuple(entities),
                confidence=None,
                source=_locate(audit.target_file, content, files),
                date=_local_date(audit.created_at),
                origin="audit",
            )
        )
    _keep_well_evidenced(out.facts, guesses, int(settings.REFLECT_NEW_ENTITY_MIN_EVIDENCE))
    limit = int(settings.REFLECT_MAX_FACTS)
    if len(out.facts) > limit:
        out.excluded.append({"source": "", "reason": f"over REFLECT_MAX_FACTS={limit}; oldest left out", "content": ""})
        out.facts = out.facts[-limit:]
    return out
