"""National id numbers, treated as secrets: Chinese resident identity numbers, US social security numbers (only
beside a word that names one) and UK National Insurance numbers."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterator

from reflection_site.privacy.findings import Finding, labelled_number

# Chinese resident identity number (GB 11643-1999): 6-digit region, 8-digit birth date, 3-digit sequence,
# check character; people paste it whole or grouped 6-8-4.
_CN_ID = re.compile(r"(?<![A-Za-z0-9])(\d{6})[ ]?(\d{8})[ ]?(\d{3}[\dXx])(?![A-Za-z0-9])", re.ASCII)
# Province-level codes of GB/T 2260 (the first two digits), Taiwan 71, Hong Kong 81, Macau 82, and 83 of the
# residence permits issued to Taiwan residents.
CN_PROVINCES: frozenset[str] = frozenset(
    "11 12 13 14 15 21 22 23 31 32 33 34 35 36 37 41 42 43 44 45 46 50 51 52 53 54 61 62 63 64 65 71 81 82 83".split()
)
_CN_WEIGHTS: tuple[int, ...] = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CN_CHECK = "10X98765432"  # ISO 7064 MOD 11-2: the check character for each remainder of the weighted sum


def cn_id_check_char(first17: str) -> str:
    """The ISO 7064 MOD 11-2 check character of the first 17 digits of a Chinese resident identity number."""
    return _CN_CHECK[sum(int(digit) * weight for digit, weight in zip(first17, _CN_WEIGHTS, strict=True)) % 11]


def _cn_birth_date_ok(digits: str) -> bool:
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:])
    try:
        born = dt.date(year, month, day)
    except ValueError:
        return False
    return dt.date(1900, 1, 1) <= born <= dt.datetime.now(dt.UTC).date()


def _cn_id_ok(region: str, birth: str, tail: str) -> bool:
    number = region + birth + tail.upper()
    return region[:2] in CN_PROVINCES and _cn_birth_date_ok(birth) and cn_id_check_char(number[:17]) == number[17]


# US social security number: area-group-serial. Nine digits are too common to take on their own (order and
# account numbers, timestamps), so a number counts only near a word that names it.
_SSN = re.compile(r"(?<![A-Za-z0-9-])(\d{3})([- ]?)(\d{2})\2(\d{4})(?![A-Za-z0-9]|-\d)", re.ASCII)
_SSN_CONTEXT = re.compile(
    r"(?i:\bssns?\b|\bss\s?#|\bsocial[\s-]+security\b|\bsoc\.?\s?sec\b|\btaxpayer\s+id)|社会安全号|社会保障号|社安号"
)
# Numbers the SSA has voided after they were printed on sample cards and used by thousands of people.
_SSN_VOIDED: frozenset[str] = frozenset({"078051120", "219099999"})


def _ssn_ok(area: str, group: str, serial: str) -> bool:
    # Never issued: area 000, 666 and 900-999 (ITINs), group 00, serial 0000.
    return (
        area not in {"000", "666"}
        and area[0] != "9"
        and group != "00"
        and serial != "0000"
        and area + group + serial not in _SSN_VOIDED
    )


def _ssn_context(text: str, start: int, end: int) -> bool:
    return _SSN_CONTEXT.search(text, max(0, start - 40), start) is not None or (
        _SSN_CONTEXT.search(text[end : end + 25]) is not None
    )


# UK National Insurance number: two prefix letters, six digits, suffix A-D (HMRC's NIM39110). The first letter
# is never D, F, I, Q, U or V, the second never D, F, I, O, Q, U or V, and BG, GB, KN, NK, NT, TN and ZZ are
# not allocated.
_UK_NINO = re.compile(
    r"(?<![A-Za-z0-9])([A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z])[ ]?(\d{2})[ ]?(\d{2})[ ]?(\d{2})[ ]?([A-D])(?![A-Za-z0-9])",
    re.ASCII,
)
_UK_NINO_UNALLOCATED: frozenset[str] = frozenset({"BG", "GB", "KN", "NK", "NT", "TN", "ZZ"})


# Substrings of _SSN_CONTEXT in lower case: without one of them in the text no number can be an SSN.
SSN_TRIGGERS: tuple[str, ...] = ("ssn", "ss#", "ss #", "social", "soc", "taxpayer", "社会", "社安")


def cn_id_findings(text: str, start: int, end: int) -> Iterator[Finding]:
    """Valid Chinese resident identity numbers in ``text[start:end]``, labelled numbers left out."""
    for match in _CN_ID.finditer(text, start, end):
        if _cn_id_ok(*match.groups()) and not labelled_number(text, match.start()):
            yield Finding("national_id", match.start(), match.end())


def ssn_findings(text: str, start: int, end: int) -> Iterator[Finding]:
    """Valid US social security numbers in ``text[start:end]`` beside a word that names one."""
    for match in _SSN.finditer(text, start, end):
        area, _, group, serial = match.groups()
        if _ssn_ok(area, group, serial) and _ssn_context(text, match.start(), match.end()):
            yield Finding("national_id", match.start(), match.end())


def nino_findings(text: str) -> Iterator[Finding]:
    """UK National Insurance numbers with an allocated prefix."""
    for match in _UK_NINO.finditer(text):
        if match.group(1) not in _UK_NINO_UNALLOCATED:
            yield Finding("national_id", match.start(), match.end())
