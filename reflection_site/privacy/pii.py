"""PII with validation: e-mail, phones (E.164 and common national formats, Chinese mobiles), cards (Luhn),
IPv4/IPv6 (``ipaddress``) and IBANs (registry length and mod-97 checksum)."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator

from reflection_site.privacy.findings import ALNUM, NON_DIGITS, Finding, labelled_number, starts_word
from reflection_site.privacy.national_ids import SSN_TRIGGERS, cn_id_findings, ssn_findings

_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]+@(?P<domain>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24})"
    r"(?![A-Za-z0-9-])",
    re.ASCII,
)
_RETINA_SUFFIX = re.compile(r"\d(?:\.\d+)?x\.", re.ASCII)  # icon@2x.png is a file name

# Phones, cards and IPv4 addresses are searched only inside runs of digits and separators at least
# seven long, found by this one cheap scan: most text has none, and then nothing else runs.
_NUMBERISH = re.compile(r"[\d+(][\d ().+-]{5,}\d", re.ASCII)
_OCTET = r"(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)"
_IPV4 = re.compile(rf"(?<![A-Za-z0-9_.]){_OCTET}(?:\.{_OCTET}){{3}}(?![A-Za-z0-9_]|\.\d)", re.ASCII)
# "version 1.2.3.4", "Chrome/120.0.0.0" and "1.2.3.4-beta" are versions, not addresses.
_VERSION_BEFORE = re.compile(r"(?:(?<![A-Za-z])(?i:version|ver\.?|release|build)|版本号?)\s*[:：]?\s*$|[A-Za-z]/$")
_VERSION_AFTER = re.compile(r"[-+_~][A-Za-z]")
_IPV6 = re.compile(
    r"(?<![A-Za-z0-9:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|\d{1,3}(?:\.\d{1,3}){3})?(?![A-Za-z0-9:])",
    re.ASCII,
)
_HEX_GROUP = re.compile(r"[0-9A-Fa-f]{1,4}")

_PHONE = re.compile(
    "|".join(
        (
            # International (E.164 with separators): +86 138 0013 8000, +1 (415) 555-2671, +44 20 7946 0958
            r"(?<![A-Za-z0-9+])\+\d{1,3}(?:[ .-]?\(\d{1,4}\))?(?:[ .-]?\d{1,5}){1,6}(?![A-Za-z0-9])",
            # Chinese mobile: 13800138000, 138-0013-8000, 138 0013 8000
            r"(?<![A-Za-z0-9])1[3-9]\d(?:\d{8}|[ -]\d{4}[ -]\d{4})(?![A-Za-z0-9])",
            # North American: (415) 555-2671, 415-555-2671, 415.555.2671 (area and exchange start 2-9)
            r"(?<![A-Za-z0-9])(?:\([2-9]\d{2}\)[ ]?|[2-9]\d{2}[-. ])[2-9]\d{2}[-. ]\d{4}(?![A-Za-z0-9])",
            # National with trunk 0: 010-12345678, 0755-1234567, 020 7946 0958, 07700 900123
            r"(?<![A-Za-z0-9])0\d{1,4}[ -]\d{3,4}[ -]?\d{3,4}(?![A-Za-z0-9])",
        )
    ),
    re.ASCII,
)
_CARD = re.compile(
    r"(?<![A-Za-z0-9+])(?:\d{4}(?:[ -]\d{4}){3}(?:[ -]?\d{3})?|\d{4}[ -]\d{6}[ -]\d{4,5}|\d{13,19})(?![A-Za-z0-9])",
    re.ASCII,
)

# Lengths from the SWIFT IBAN registry; the length check and the mod-97 checksum together make an
# accidental match in prose vanishingly rare.
_IBAN_LENGTHS: dict[str, int] = {
    entry[:2]: int(entry[2:])
    for entry in (
        "AD24 AE23 AL28 AT20 AZ28 BA20 BE16 BG22 BH22 BR29 BY28 CH21 CR22 CY28 CZ24 DE22 DK18 DO28 EE20 "
        "EG29 ES24 FI18 FO18 FR27 GB22 GE22 GI23 GL18 GR27 GT28 HR21 HU28 IE22 IL23 IQ23 IS26 IT27 JO30 "
        "KW30 KZ20 LB28 LC32 LI21 LT20 LU20 LV21 MC27 MD24 ME22 MK19 MR27 MT31 MU30 NL18 NO15 PK24 PL28 "
        "PS29 PT25 QA29 RO24 RS22 SA24 SC31 SE24 SI19 SK24 SM27 ST25 SV28 TL23 TN24 TR26 UA29 VA22 VG24 XK20"
    ).split()
}
_IBAN_START = re.compile(r"[A-Z]{2}\d{2}(?=[ ]?[A-Z0-9])", re.ASCII)
_IBAN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")


def _luhn_ok(digits: str) -> bool:
    total = 0
    for index, char in enumerate(reversed(digits)):
        value = int(char)
        if index % 2:
            value = value * 2 - 9 if value > 4 else value * 2
        total += value
    return total % 10 == 0


def _iban_ok(iban: str) -> bool:
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(char, 36)) for char in rearranged)) % 97 == 1


def email_findings(text: str) -> Iterator[Finding]:
    """E-mail addresses, file names such as ``icon@2x.png`` left out."""
    if "@" not in text:
        return
    for match in _EMAIL.finditer(text):
        if not _RETINA_SUFFIX.match(match.group("domain")):
            yield Finding("email", match.start(), match.end())


def ipv6_findings(text: str) -> Iterator[Finding]:
    """IPv6 addresses of three groups or more that ``ipaddress`` accepts."""
    if "::" not in text and text.count(":") < 7:
        return
    for match in _IPV6.finditer(text):
        candidate = match.group()
        # Three groups at least: "x[1::2]" and "a::b" are code, not addresses.
        if len(_HEX_GROUP.findall(candidate)) < 3:
            continue
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:  # times (12:30:45), MAC addresses, C++ scopes
            continue
        yield Finding("ip", match.start(), match.end())


def _phone_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    digits = NON_DIGITS.sub("", text[start:end])
    # An international match may swallow a following number; drop trailing groups until the E.164
    # limit of 15 digits holds.
    while len(digits) > 15:
        cut = max(text.rfind(sep, start, end) for sep in " .-")
        if cut <= start:
            return None
        end = cut
        digits = NON_DIGITS.sub("", text[start:end])
    if len(digits) < 7 or labelled_number(text, start):
        return None
    return start, end


def number_findings(text: str, lowered: str) -> Iterator[Finding]:
    """Phones, cards, IPv4 addresses, Chinese ids and SSNs, each searched only inside a run of digits and
    separators."""
    ssn_possible = any(trigger in lowered for trigger in SSN_TRIGGERS)
    for run in _NUMBERISH.finditer(text):
        # One character past the run lets the patterns' trailing boundary checks see what follows.
        window = (run.start(), min(len(text), run.end() + 1))
        digits = len(NON_DIGITS.sub("", run.group()))
        if "." in run.group():
            for match in _IPV4.finditer(text, *window):
                before = text[max(0, match.start() - 12) : match.start()]
                if not (_VERSION_BEFORE.search(before) or _VERSION_AFTER.match(text, match.end())):
                    yield Finding("ip", match.start(), match.end())
        if digits >= 13:
            for match in _CARD.finditer(text, *window):
                number = NON_DIGITS.sub("", match.group())
                # Issuer ranges start 2-6 (Mastercard 2-series, Amex, Visa, Mastercard, Discover/UnionPay).
                if number[0] in "23456" and _luhn_ok(number) and not labelled_number(text, match.start()):
                    yield Finding("card", match.start(), match.end())
        if digits >= 17:
            # Two past the run: its check character may be an X, and what follows the X must be seen too.
            yield from cn_id_findings(text, run.start(), min(len(text), run.end() + 2))
        if digits >= 9 and ssn_possible:
            yield from ssn_findings(text, *window)
        if digits >= 7:
            for match in _PHONE.finditer(text, *window):
                span = _phone_span(text, match.start(), match.end())
                if span is not None:
                    yield Finding("phone", *span)


def iban_findings(text: str) -> Iterator[Finding]:
    """IBANs, grouped or not, of their country's registry length and with a valid mod-97 checksum."""
    for match in _IBAN_START.finditer(text):
        length = _IBAN_LENGTHS.get(match.group()[:2])
        if length is None or not starts_word(text, match.start()):
            continue
        chars: list[str] = []
        pos = match.start()
        while pos < len(text) and len(chars) < length:
            char = text[pos]
            if char in _IBAN_CHARS:
                chars.append(char)
            elif not (char == " " and pos + 1 < len(text) and text[pos + 1] in _IBAN_CHARS):
                break
            pos += 1
        if len(chars) == length and (pos == len(text) or text[pos] not in ALNUM) and _iban_ok("".join(chars)):
            yield Finding("iban", match.start(), pos)
