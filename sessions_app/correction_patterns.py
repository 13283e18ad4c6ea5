"""Behaviour correction patterns: whether a correction's ``correction_pattern`` matches a text (the offline
gate's corrections, the write guardian's), and whether a pattern can be saved at all.

A pattern is plain text that matches when every word of it occurs in the text as a whole word, case-insensitive,
punctuation ignored, in any order; every run of CJK characters in it must occur in the text as a substring.
Words and CJK runs are ``reflection_site.text``'s (``words``: NFKC, case-folded). A pattern wrapped in
slashes, ``/…/``, is a case-insensitive regular expression searched anywhere in the text by RE2 (google-re2),
which runs in time linear in the text whatever the pattern, so ``/(a+)+$/`` cannot stall the gate; RE2 has no
look-arounds or back-references. A pattern RE2 refuses is refused when saved (:func:`correction_pattern_problem`);
one stored before that never matches and is logged. An empty pattern never matches.
"""

from __future__ import annotations

import logging
from functools import lru_cache

import re2

from reflection_site.text import fold, is_cjk, words

logger = logging.getLogger(__name__)


def _regex_body(pattern: str) -> str | None:
    """The regular expression of a ``/…/`` pattern; None for a plain-text pattern."""
    if len(pattern) > 2 and pattern.startswith("/") and pattern.endswith("/"):
        return pattern[1:-1]
    return None


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.case_sensitive = False
_RE2_OPTIONS.log_errors = False  # A refused pattern is reported by us, once, not by RE2 on stderr each time.


@lru_cache(maxsize=512)
def _compiled(body: str) -> tuple[re2._Regexp | None, str | None]:
    """The RE2 program for a regex, or None and why RE2 refuses it (each refused pattern is logged once)."""
    try:
        return re2.compile(body, _RE2_OPTIONS), None
    except re2.error as exc:
        problem = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        logger.warning("correction pattern /%s/ is disabled: RE2 refuses it (%s)", body[:200], problem)
        return None, problem


def correction_pattern_problem(pattern: str | None) -> str | None:
    """Why a correction pattern cannot be used (a message for the operator), or None when it can."""
    pattern = (pattern or "").strip()
    body = _regex_body(pattern)
    if body is None:
        return None if words(pattern) else "it has no word or CJK character to match"
    _, problem = _compiled(body)
    if problem is not None:
        return (
            f"/{body}/ is not a regular expression RE2 accepts ({problem}); patterns run on RE2, which has no "
            "look-arounds or back-references: use plain words, or a simpler /regex/"
        )
    return None


def matches_correction_pattern(pattern: str, text: str) -> bool:
    """Whether a behaviour correction's ``correction_pattern`` matches ``text``.

    Plain text matches when every word of the pattern occurs in the text as a whole word (case and
    punctuation ignored, any order) and every CJK run of the pattern occurs in the text as a
    substring. ``/regex/`` is searched case-insensitively by RE2, in time linear in the text; a regex RE2
    refuses (stored before patterns were checked on save) never matches and is logged once.
    """
    pattern = (pattern or "").strip()
    body = _regex_body(pattern)
    if body is not None:
        program, _ = _compiled(body)
        return program is not None and program.search(text or "") is not None
    wanted = words(pattern)
    if not wanted:
        return False
    folded = fold(text)
    found = set(words(text))
    for token in wanted:
        if is_cjk(token):
            if token not in folded:
                return False
        elif token not in found:
            return False
    return True
