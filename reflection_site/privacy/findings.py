"""What every detector reports, a ``Finding`` of one kind, how overlapping findings merge, and the small span
tests the detectors share (word starts, labelled numbers)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PII_KINDS: frozenset[str] = frozenset({"email", "phone", "card", "ip", "iban"})
SECRET_KINDS: frozenset[str] = frozenset({"private_key", "jwt", "secret", "national_id"})

PLACEHOLDERS: dict[str, str] = {
    "email": "[EMAIL]",
    "phone": "[PHONE]",
    "card": "[CARD]",
    "ip": "[IP]",
    "iban": "[IBAN]",
    "private_key": "[PRIVATE_KEY]",
    "jwt": "[JWT]",
    "secret": "[SECRET]",
    "national_id": "[NATIONAL_ID]",
}

# When two findings overlap, the merged span takes the most sensitive kind: a secret must never be
# reported (or let through by contains_secret) as mere PII because a phone regex touched it too.
_SEVERITY: dict[str, int] = {
    "private_key": 0,
    "jwt": 1,
    "secret": 2,
    "national_id": 3,
    "card": 4,
    "iban": 5,
    "email": 6,
    "phone": 7,
    "ip": 8,
}


@dataclass(frozen=True)
class Finding:
    """One span of ``text[start:end]`` holding PII or a secret of ``kind``."""

    kind: str
    start: int
    end: int

    @property
    def placeholder(self) -> str:
        return PLACEHOLDERS[self.kind]


DIGIT = re.compile(r"\d")
KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")
ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def starts_word(text: str, start: int, word_chars: frozenset[str] = ALNUM) -> bool:
    """True if ``text[start]`` begins a word: nothing of ``word_chars`` stands right before it."""
    return start == 0 or text[start - 1] not in word_chars


# "Order no. 2024011500012345", "订单号 13800138000": a labelled number is an identifier, not PII.
_NUMBER_LABEL = re.compile(
    r"(?i:order|invoice|tracking|ticket|isbn|serial|ref(?:erence)?|订单|单号|编号|运单|快递|序列号|工单|发票)"
    r"\s*(?i:no\.?|number|num|id|号码?|#)?\s*[:：#]?\s*$"
)
NON_DIGITS = re.compile(r"\D", re.ASCII)


def labelled_number(text: str, start: int) -> bool:
    """True if the number at ``start`` follows a label such as "order no." or "订单号"."""
    return _NUMBER_LABEL.search(text, max(0, start - 30), start) is not None


def merge(findings: Sequence[Finding]) -> list[Finding]:
    """``findings`` sorted, empty ones dropped and overlapping ones merged into one span of the most sensitive kind."""
    merged: list[Finding] = []
    for finding in sorted(findings, key=lambda f: (f.start, -f.end)):
        if finding.start >= finding.end:
            continue
        if merged and finding.start < merged[-1].end:
            last = merged[-1]
            kind = min(last.kind, finding.kind, key=_SEVERITY.__getitem__)
            merged[-1] = Finding(kind, last.start, max(last.end, finding.end))
        else:
            merged.append(finding)
    return merged
