"""Behaviour corrections: an operator marks an audit as wrong and gives the right outcome.

With ``apply_to_future`` the correction's ``correction_pattern`` (the operator's, or one derived from the
fact) is included in the gate and guardian prompts from then on, and the offline gate and guardian honour
it: a fact matching a ``refused`` pattern is refused. Corrections are what the dataset learns from.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from guardian_app.errors import InvalidCorrection, UnknownFile
from guardian_app.models import BehaviorCorrection, Rollback, WriteGuardianAudit
from guardian_app.write import attribution, paths
from guardian_app.write.guardian import retry_write
from guardian_app.write.rollback import rollback_write
from reflection_site.text import CJK_RANGES, fold
from sessions_app.heuristic_gate import correction_pattern_problem
from sessions_app.speakers import speaker_of

CORRECTED_STATUSES = ("written", "refused")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]{{2,}}")
_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
# Words that say how a fact is phrased rather than what it is about.
_GENERIC = frozenset(
    """the a an and or but of to in on at for with by from as is are was were be been it its this that
    user user's users agent agent's assistant they their them he she his her i me my we our you your
    likes like prefers prefer wants want loves love hates hate enjoys enjoy needs need uses use has have
    had always never usually often sometimes really very should would could will can must not no does do
    remember remembers note notes""".split()
)


def derive_pattern(text: str, *, max_words: int = 3) -> str:
    """A pattern for ``sessions_app.heuristic_gate.matches_correction_pattern`` from a fact: its most
    specific words (all must occur in a later fact for it to match), or its CJK runs."""
    cjk = _CJK_RUN.findall(text or "")
    if cjk:
        return " ".join(sorted(cjk, key=len, reverse=True)[:2])
    words: list[str] = []
    for word in _WORD.findall(fold(text)):
        word = word.strip("'-")
        if len(word) < 3 or word in _GENERIC or word in words:
            continue
        words.append(word)
    # The longest words are usually the most specific; keep the fact's order among them.
    chosen = set(sorted(words, key=len, reverse=True)[:max_words])
    return " ".join(w for w in words if w in chosen)


def _target_file(target_file: str) -> str:
    """The memory file a correction names; InvalidCorrection (422) for a bank page or an unknown name."""
    try:
        name = paths.canonical_name(target_file)
    except UnknownFile as exc:
        raise InvalidCorrection(exc.message, details={"field": "target_file"}) from exc
    if name.startswith(("bank/", "memory/")):
        raise InvalidCorrection(
            f"target_file {name!r} is a daily log or one of reflect's bank pages, which reflect writes from its "
            "own facts; "
            "a correction names a memory file.",
            details={"field": "target_file"},
        )
    return name


def correct_audit(
    audit: WriteGuardianAudit,
    *,
    status: str,
    reason: str,
    corrected_by: str,
    candidate_fact: str | None = None,
    target_file: str | None = None,
    apply_to_future: bool = False,
    pattern: str | None = None,
    about: str | None = None,
) -> BehaviorCorrection:
    """Record the right outcome for ``audit``; with ``apply_to_future`` its pattern steers later runs.

    ``about`` re-attributes the fact: a person's name, or ``"owner"`` for the workspace's owner (issue 21: whose
    fact it is). The corrected fact and file follow from it (``attribution.reattribute``: the owner's facts in
    USER.md, another person's in MEMORY.md with the person named) unless ``candidate_fact``/``target_file`` say
    otherwise; ``apply_correction`` then makes it real.

    Raises InvalidCorrection (422): a status other than written/refused, no reason, no pattern derivable,
    a pattern that can never match or that RE2 refuses (``/(?=x)/``), a target file that is not a memory
    file (a bank page is reflect's, written from its own facts, and the database refuses it as a target),
    a re-attribution with an empty name.
    """
    if about is not None:
        candidate_fact, target_file = _reattributed(audit, about, candidate_fact, target_file)
    status = (status or "").strip().lower()
    if status not in CORRECTED_STATUSES:
        raise InvalidCorrection(f"status must be 'written' or 'refused', not {status!r}.")
    reason = (reason or "").strip()
    if not reason:
        raise InvalidCorrection("Give a reason for the correction.")
    corrected_by = (corrected_by or "").strip()
    if not corrected_by:
        raise InvalidCorrection("Say who made the correction (corrected_by).")
    name = _target_file(target_file) if target_file else None
    fact = (candidate_fact or "").strip() or None
    pattern = (pattern or "").strip() or None
    if apply_to_future and pattern is None:
        pattern = derive_pattern(audit.candidate_fact) or derive_pattern(fact or "") or None
        if pattern is None:
            raise InvalidCorrection("No pattern can be derived from this fact; give correction_pattern.")
    problem = correction_pattern_problem(pattern) if pattern is not None else None
    if problem is not None:
        raise InvalidCorrection(
            f"correction_pattern cannot be used: {problem}.", details={"field": "correction_pattern"}
        )
    original_status = audit.status
    if original_status == WriteGuardianAudit.Status.ROLLED_BACK:
        rollback = Rollback.objects.filter(audit=audit).first()
        original_status = rollback.previous_status if rollback else WriteGuardianAudit.Status.WRITTEN
    with transaction.atomic():
        return BehaviorCorrection.objects.create(
            audit=audit,
            original_status=original_status,
            original_candidate_fact=audit.candidate_fact,
            original_target_file=audit.target_file,
            corrected_status=status,
            corrected_candidate_fact=fact,
            corrected_target_file=name,
            correction_reason=reason,
            apply_to_future=apply_to_future,
            correction_pattern=pattern,
            corrected_by=corrected_by,
        )


def _reattributed(audit: WriteGuardianAudit, about: str, fact: str | None, target_file: str | None) -> tuple[str, str]:
    """The corrected fact and file of a re-attribution (``correct_audit``'s ``about``); with the status
    ``refused`` they are a label only (applying it rolls the write back and writes nothing)."""
    if not about.strip():
        raise InvalidCorrection("Say whose fact it is (a name, or 'owner').", details={"field": "about"})
    said_by = speaker_of(audit.decision.turn).name if audit.decision_id else None
    file_for, fact_for = attribution.reattribute(audit.candidate_fact or "", said_by=said_by, about=about)
    return (fact or "").strip() or fact_for, target_file or file_for


@dataclass
class AppliedCorrection:
    rollback: Rollback | None  # the wrong write undone
    written: WriteGuardianAudit | None  # the corrected fact's audited write

    @property
    def changed_nothing(self) -> bool:
        return self.rollback is None and self.written is None


def apply_correction(
    audit: WriteGuardianAudit, correction: BehaviorCorrection, *, requested_by: str
) -> AppliedCorrection:
    """The correction made real, as audited writes: 1. the wrong write rolled back (a refusal, another file or
    another fact); 2. the corrected fact written (``retry_write``) where the correction says it belongs.

    Raises what ``rollback_write`` raises (a conflict with later changes: nothing is applied then).
    """
    target = correction.corrected_target_file or audit.target_file
    fact = correction.corrected_candidate_fact or audit.candidate_fact
    wrong_write = audit.status == WriteGuardianAudit.Status.WRITTEN and (
        correction.corrected_status == "refused" or target != audit.target_file or fact != audit.candidate_fact
    )
    rollback = (
        rollback_write(audit, reason=f"correction {correction.id}", requested_by=requested_by) if wrong_write else None
    )
    written = None
    if correction.corrected_status == "written" and (wrong_write or audit.status != WriteGuardianAudit.Status.WRITTEN):
        written = retry_write(audit, candidate_fact=fact, target_file=target, requested_by=requested_by)
    return AppliedCorrection(rollback, written)
